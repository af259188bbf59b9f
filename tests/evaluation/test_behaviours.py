"""Behaviours with declared descriptor bounds: the built-in ones' bounds per environment, a user's own registered
with its bounds and carried into worker processes (Ray actors) by worker_setup, and bad declarations refused."""

import numpy as np
import pytest

from workbench.evaluation import EvaluatorLayout, RunSpec
from workbench.evaluation.behaviour import (
    BEHAVIOURS,
    Behaviour,
    behaviour_bounds,
    behaviour_function,
    register_behaviour,
    registered_behaviour,
    unregister_behaviour,
)
from workbench.evaluation.factory import worker_setup


def final_height(env, index):
    return env.physics_state([index])[0][0, 1:2]


def test_the_built_in_behaviours_declare_their_bounds_per_environment():
    assert behaviour_bounds("feet_contact", "Walker2d-v5") == [[0.0, 1.0]] * 2
    assert behaviour_bounds("feet_contact", "ant") == [[0.0, 1.0]] * 4
    assert behaviour_bounds("feet_contact", "Swimmer-v5") is None  # no feet
    assert behaviour_bounds("final_position", "Ant-v5") == [[-30.0, 30.0]] * 2
    assert behaviour_bounds("final_position", "Hopper-v5") is None
    assert behaviour_bounds("final_ram", "pong") == [[0.0, 255.0]] * 128
    assert behaviour_bounds("player_position", "montezuma_revenge") == [[0.0, 160.0], [128.0, 256.0]]
    assert behaviour_bounds("player_position", "pong") is None
    assert behaviour_bounds("final_observation", "CartPole-v1") is None and behaviour_bounds(None, "pong") is None
    assert registered_behaviour("feet_contact") is None  # built in: every process has it


def test_a_users_behaviour_is_registered_with_its_bounds_and_reaches_worker_processes():
    behaviour = register_behaviour(Behaviour("final-height", final_height, lambda env: [[0.0, 2.0]], "the torso's z"))
    try:
        assert behaviour_function("final-height") is behaviour and behaviour_bounds("final-height", "hopper") == [[0, 2]]
        with pytest.raises(ValueError, match="'final-height' is registered already"):
            register_behaviour(behaviour)
        setup = worker_setup(RunSpec("Hopper-v5", "linear"), EvaluatorLayout(behaviour="final-height"))
        unregister_behaviour("final-height")  # as in a fresh worker process
        setup()
        assert BEHAVIOURS["final-height"] is behaviour
        assert worker_setup(RunSpec("Hopper-v5", "linear"), EvaluatorLayout(behaviour="feet_contact")) is None
    finally:
        BEHAVIOURS.pop("final-height", None)


def test_bad_behaviour_declarations_are_refused_by_name():
    with pytest.raises(ValueError, match="bounds must be at least one finite"):
        register_behaviour(Behaviour("bad", final_height, [[1.0, 0.0]]))
    with pytest.raises(ValueError, match="must be callable"):
        register_behaviour(Behaviour("bad", "not a function"))
    with pytest.raises(TypeError, match="takes a Behaviour"):
        register_behaviour(final_height)
    register_behaviour(Behaviour("bad-bounds", final_height, lambda env: [[0.0, np.inf]]))
    try:
        with pytest.raises(ValueError, match="the bounds behaviour 'bad-bounds' declares for hopper"):
            behaviour_bounds("bad-bounds", "hopper")
    finally:
        unregister_behaviour("bad-bounds")
    with pytest.raises(ValueError, match="behaviour must be one of"):
        behaviour_function("feet-contact")


def torso_height(env, slots):
    """Walker2d's torso height after each step: the first observation (qpos[1])."""
    return np.asarray(env.observation(slots))[:, :1]


def test_a_behaviour_measured_at_every_step_is_reduced_over_each_episode():
    from workbench.evolution import EvaluationRequest, Genome
    from workbench.training import RunConfig

    measured = {
        "steps-taken": Behaviour("steps-taken", step=lambda env, slots: np.ones((len(slots), 1)), reduce="sum"),
        **{
            f"height-{reduce}": Behaviour(f"height-{reduce}", step=torso_height, reduce=reduce, bounds=[[0.0, 2.0]])
            for reduce in ("mean", "min", "max")
        },
    }
    results = {}
    try:
        for name, behaviour in measured.items():
            register_behaviour(behaviour)
            assert behaviour_function(name) is behaviour
            run = RunConfig(env="Walker2d-v5", model="linear", behaviour=name, max_episode_frames=60, slots=3, noise_size=2**18)
            _, evaluator = run.build()
            with evaluator:
                requests = [EvaluationRequest(Genome(k), 4, "population", behaviour=True) for k in (11, 500, 9000)]
                results[name] = evaluator.evaluate(requests, seed=3)
    finally:
        for name in measured:
            BEHAVIOURS.pop(name, None)
    for k, counted in enumerate(results["steps-taken"]):
        np.testing.assert_array_equal(counted.behaviours[:, 0], counted.steps)  # one row per step, per episode
        low, mean, high = (results[f"height-{r}"][k].behaviours[:, 0] for r in ("min", "mean", "max"))
        assert (low <= mean).all() and (mean <= high).all() and (low < high).all()
        assert ((0.7 < low) & (high < 1.5)).all()  # a torso that starts at 1.25 m and falls


def test_a_step_behaviour_of_the_wrong_shape_is_refused_naming_it():
    from workbench.evaluation.behaviour import StepReduction

    reduction = StepReduction(Behaviour("flat", step=lambda env, slots: np.zeros(len(slots))), slots=4)
    with pytest.raises(ValueError, match=r"behaviour 'flat': its step function must return one row per slot, \[2, d\]"):
        reduction.update(None, np.array([0, 1]))
    reduction = StepReduction(Behaviour("words", step=lambda env, slots: [["high"]] * len(slots)), slots=4)
    with pytest.raises(ValueError, match="behaviour 'words': its step function must return numbers"):
        reduction.update(None, np.array([0, 1]))
    reduction = StepReduction(Behaviour("grows", step=lambda env, slots: np.zeros((len(slots), 1 + len(slots)))), slots=4)
    reduction.update(None, np.array([0]))
    with pytest.raises(ValueError, match=r"\[2, 2\], got shape \(2, 3\)"):
        reduction.update(None, np.array([0, 1]))
    for bad, match in (
        (Behaviour("both", final_height, step=torso_height), "give either function"),
        (Behaviour("neither"), "give either function"),
        (Behaviour("bad-reduce", step=torso_height, reduce="median"), "reduce must be one of"),
        (Behaviour("bad-step", step="height"), "step must be callable"),
    ):
        with pytest.raises(ValueError, match=match):
            register_behaviour(bad)


def test_a_descriptor_of_the_wrong_shape_is_named_and_a_non_finite_one_is_counted_by_the_archive():
    from workbench.evolution import EvaluationRequest, Genome
    from workbench.training import RunConfig, Trainer

    def matrix(env, index):
        return np.zeros((2, 2))

    def sometimes_nan(env, index):  # NaN for the episodes of odd slots: left out of the archive, not a crash
        return np.array([np.nan if index % 2 else 0.5])

    register_behaviour(Behaviour("matrix", matrix, [[0.0, 1.0]]), replace=True)
    register_behaviour(Behaviour("sometimes-nan", sometimes_nan, [[0.0, 1.0]]), replace=True)
    try:
        run = RunConfig(env="Hopper-v5", model="linear", behaviour="matrix", max_episode_frames=20, slots=4, noise_size=2**18)
        _, evaluator = run.build()
        with evaluator, pytest.raises(ValueError, match=r"behaviour 'matrix' must return a non-empty 1-D array \(request 0"):
            evaluator.evaluate([EvaluationRequest(Genome(3), 1, "population", behaviour=True)], seed=0)
        hyperparameters = dict(population_size=8, initial_population=8, sigma=0.1, cells=4, archive="grid")
        run = RunConfig(
            env="Hopper-v5",
            algorithm="map-elites",
            behaviour="sometimes-nan",
            hyperparameters=hyperparameters,
            max_episode_frames=20,
            slots=4,
            noise_size=2**18,
        )
        with Trainer.from_config(run) as trainer:
            records = trainer.run(generations=2)
        assert all(r.extras["rejected"] > 0 for r in records) and trainer.strategy.archive.size == 1
        run = RunConfig(
            env="Hopper-v5",
            algorithm="ns-es",
            behaviour="sometimes-nan",
            max_episode_frames=20,
            slots=4,
            noise_size=2**18,
            hyperparameters=dict(population_size=4, meta_population_size=1),
        )
        with Trainer.from_config(run) as trainer, pytest.raises(ValueError, match="behaviours must be finite"):
            trainer.run(generations=1)  # novelty search needs finite behaviours: refused by the strategy
    finally:
        BEHAVIOURS.pop("matrix", None)
        BEHAVIOURS.pop("sometimes-nan", None)
