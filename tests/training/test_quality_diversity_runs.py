"""MAP-Elites runs on MuJoCo through RunConfig and the trainer: the feet-contact descriptor by default, its bounds
from the behaviour's declaration, the archive in the checkpoint (exact resume), and an archive refused by a run of
another shape."""

import numpy as np
import pytest

from workbench.training import RunConfig, Trainer

SMALL = dict(population_size=6, initial_population=8, sigma=0.1, cells=4, archive="grid")


def config(**changes):
    fields = dict(
        env="Hopper-v5", algorithm="map-elites", hyperparameters=SMALL, max_episode_frames=40, noise_size=2**18, slots=8
    )
    return RunConfig(**dict(fields, **changes))


def test_map_elites_fills_a_feet_contact_archive_and_resumes_exactly(tmp_path):
    run = config()
    assert run.behaviour_in_force() == "feet_contact" and run.algorithm_config().descriptor_bounds == [[0.0, 1.0]]
    strategy, evaluator = run.build()
    with Trainer(strategy, evaluator, config=run) as straight:
        records = straight.run(generations=4)
        archive = straight.strategy.archive
        assert archive.size == records[-1].extras["archive_size"] > 1
        assert ((archive.descriptor[archive.occupied] >= 0) & (archive.descriptor[archive.occupied] <= 1)).all()
    assert_resumes_exactly(run, tmp_path, records, archive)


def assert_resumes_exactly(run, tmp_path, records, archive):
    """Two generations, a checkpoint, two more after resuming: the records and archive of a straight run of 4."""
    strategy, evaluator = run.build()
    with Trainer(strategy, evaluator, run_dir=str(tmp_path / "run"), config=run) as first:
        first.run(generations=2)
    with Trainer.resume_from(str(tmp_path / "run")) as resumed:
        again = resumed.run(generations=2)
        assert np.array_equal(resumed.strategy.archive.objective, archive.objective)
    assert [r.to_json()["qd_score"] for r in again] == [r.to_json()["qd_score"] for r in records[2:]]


def test_an_archive_that_does_not_match_its_run_is_refused_naming_both(tmp_path):
    run = config()
    strategy, evaluator = run.build()
    with Trainer(strategy, evaluator, config=run) as trainer:
        trainer.run(generations=1)
        state = trainer.strategy.state_dict()
        space = trainer.strategy.space
    edited = dict(state, config=dict(state["config"], cells=5))  # the run's settings say 5 cells, its archive 4
    with pytest.raises(ValueError, match=r"checkpoint's archive \(grid, 4 cells.*this run's \(grid, 5 cells"):
        type(strategy).from_state(edited, space)
    edited = dict(state, config=dict(state["config"], descriptor_bounds=[[0.0, 2.0]]))
    with pytest.raises(ValueError, match=r"bounds \[\[0.0, 1.0\]\].*bounds \[\[0.0, 2.0\]\]"):
        type(strategy).from_state(edited, space)


def test_map_elites_on_montezumas_revenge_files_members_by_the_players_final_position_in_ram():
    run = RunConfig(
        env="montezuma_revenge",
        algorithm="map-elites",
        behaviour="player_position",
        hyperparameters=dict(population_size=4, initial_population=6, sigma=0.05, cells=8, archive="grid"),
        max_episode_frames=300,
        noise_size=2**22,
        slots=4,
    )
    assert run.algorithm_config().descriptor_bounds == [[0.0, 160.0], [128.0, 256.0]]
    strategy, evaluator = run.build()
    with Trainer(strategy, evaluator, config=run) as trainer:
        trainer.run(generations=2)
        archive = trainer.strategy.archive
        occupied = archive.descriptor[archive.occupied]
        assert archive.size >= 1 and (occupied[:, 0] >= 0).all() and (occupied[:, 1] >= 128).all()
    with pytest.raises(ValueError, match="descriptor_bounds: the behaviour 'player_position' declares no bounds on pong"):
        RunConfig(env="pong", algorithm="map-elites", behaviour="player_position").algorithm_config()


@pytest.mark.parametrize("algorithm", ["cma-me", "cma-mae"])
def test_cma_me_and_cma_mae_train_on_walker2d_feet_contact_and_resume_exactly(tmp_path, algorithm):
    settings = dict(emitters=2, population_size=5, sigma_init=0.1, cells=4, archive="grid", qd_score_offset=-100.0)
    run = config(env="Walker2d-v5", algorithm=algorithm, hyperparameters=settings)
    assert run.algorithm_config().descriptor_bounds == [[0.0, 1.0]] * 2
    strategy, evaluator = run.build()
    with Trainer(strategy, evaluator, config=run) as straight:
        records = straight.run(generations=4)
        archive = straight.strategy.archive
        assert archive.size == records[-1].extras["archive_size"] > 1 and records[-1].evaluations == 10
        cell = int(archive.occupied_cells()[0])
        genome, bases = straight.strategy.cell_genome(cell)
        assert genome.has_base and set(bases) == {genome.init}  # a replay ships its emitter's base
    assert_resumes_exactly(run, tmp_path, records, archive)
