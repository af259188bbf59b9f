"""Warm starts (RunConfig.init_from, train --init-from): a new run of a strategy with a center starts from another
run's elite and observation statistics; what would make the weights compute another policy is refused by name;
a resumed run continues from its own checkpoint without the source."""

import shutil

import numpy as np
import pytest

from workbench.cli import build_parser, run_config_from
from workbench.evolution import NoiseTable
from workbench.training import RunConfig, Trainer
from workbench.training.elites import load_elite
from workbench.training.warm_start import inherited_fields, load_warm_start

TABLE = NoiseTable.shared(2**20, seed=8)
SMALL = dict(max_episode_frames=20, slots=4, subpopulations=1, noise_size=TABLE.size, noise_seed=TABLE.seed)


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    """Two generations of ARS (linear policy, ARS's normalisation: every state, no clip) on Hopper-v5."""
    run_dir = str(tmp_path_factory.mktemp("warm") / "ars")
    config = RunConfig.from_preset(
        "paper", "ars", env="Hopper-v5", **SMALL, hyperparameters=dict(directions=2, top_directions=1, center_episodes=1)
    )
    with_trainer(Trainer.from_config(config, run_dir=run_dir), lambda trainer: trainer.run(generations=2))
    return run_dir


def with_trainer(trainer, action):
    try:
        return action(trainer)
    finally:
        trainer.close()


def es_config(source, **fields):
    values = dict(SMALL, env="Hopper-v5", hyperparameters=dict(population_size=4), **inherited_fields(source), init_from=source)
    return RunConfig.from_preset("pc", "es", **dict(values, **fields))


def test_a_run_starts_from_another_runs_elite_and_statistics_and_resumes_without_it(source, tmp_path):
    elite = load_elite(source)
    weights = elite.decoder().decode(elite.genome)
    statistics = elite.spec.observation_statistics
    assert statistics.count > 0
    copy = str(tmp_path / "source")
    shutil.copytree(source, copy)
    run_dir = str(tmp_path / "es")
    trainer = Trainer.from_config(es_config(copy), run_dir=run_dir)

    def first_generation(trainer):
        np.testing.assert_array_equal(trainer.strategy.center, weights)
        assert trainer.observation_statistics == statistics
        trainer.run(generations=1)
        assert trainer.observation_statistics.count > statistics.count  # its own states merged into them
        return trainer.strategy.center.copy(), trainer.observation_statistics

    center, merged = with_trainer(trainer, first_generation)
    shutil.rmtree(copy)  # a resumed run does not need the source
    assert RunConfig.from_run_dir(run_dir).init_from == copy
    resumed = Trainer.resume_from(run_dir)

    def resumes(trainer):
        np.testing.assert_array_equal(trainer.strategy.center, center)
        assert trainer.observation_statistics == merged
        trainer.run(generations=1)
        assert trainer.strategy.generation == 2

    with_trainer(resumed, resumes)


@pytest.mark.parametrize("algorithm", ["ns-es", "pgpe"])
def test_other_strategies_with_a_center_start_there_too(source, algorithm):
    elite = load_elite(source)
    weights = elite.decoder().decode(elite.genome)
    small = dict(population_size=4, **({"meta_population_size": 2} if algorithm == "ns-es" else {}))
    config = RunConfig.from_preset(
        "pc", algorithm, env="Hopper-v5", **SMALL, hyperparameters=small, **inherited_fields(source), init_from=source
    )

    def starts(trainer):
        centers = trainer.strategy.centers if algorithm == "ns-es" else [trainer.strategy.center]
        for center in centers:
            np.testing.assert_array_equal(center, weights)
        assert trainer.observation_statistics == elite.spec.observation_statistics
        record = trainer.step()
        assert np.isfinite(record.max)

    with_trainer(Trainer.from_config(config), starts)


def test_a_warm_start_that_would_change_the_policy_is_refused_by_name(source, tmp_path):
    with pytest.raises(ValueError, match='init_from: algorithm "ga"'):
        Trainer.from_config(RunConfig.from_preset("pc", "ga", env="Hopper-v5", **SMALL, init_from=source))
    with pytest.raises(TypeError, match="init_from must be a string or None, got int"):
        es_config(source, init_from=5)
    refused = {
        "trained model 'linear'": es_config(source, model="mlp", model_options=dict(hidden_sizes=[8])),
        "clip None and variance floor 0.01, this run with 5.0": es_config(
            source, observation_normalization=dict(fraction=1.0, clip=5.0, variance_floor=0.01)
        ),
        "normalises observations and this run does not": es_config(source, observation_normalization=None),
        r"observes \(11,\) \(Hopper-v5\); this run's task observes \(17,\)": es_config(source, env="HalfCheetah-v5"),
    }
    with pytest.raises(ValueError, match="init_from .* is not a run directory"):
        es_config(source, init_from=str(tmp_path))  # refused as the run is resolved
    for message, config in refused.items():
        with pytest.raises(ValueError, match=message):
            Trainer.from_config(config)
    with pytest.raises(ValueError, match="not a run directory"):
        load_warm_start(str(tmp_path), "linear", {}, es_config(source).spec())


def test_the_cli_takes_over_the_sources_model_and_normalisation(source, tmp_path):
    args = build_parser().parse_args(
        ["train", "--preset", "pc", "--game", "Hopper-v5", "--algo", "es", "--init-from", source, "--out", str(tmp_path / "run")]
    )
    config = run_config_from(args)
    origin = RunConfig.from_run_dir(source)
    assert (config.init_from, config.model, config.observation_normalization) == (
        source,
        "linear",
        origin.observation_normalization,
    )
