"""Continuous-control evaluation: diverged policies (NaN weights or actions) get the worst fitness and the run goes on;
training-time action noise is seeded per episode, independent of the layout, refused for discrete actions, and never
used by scores; fused steps (policy and simulations in one graph call) give the per-step results to the bit; a round
smaller than the slots is shared out evenly between the sub-populations."""

import dataclasses
import time

import numpy as np
import pytest
import tensorflow as tf

from workbench.evaluation import Evaluator, RunSpec
from workbench.evaluation.jobs import JobQueue
from workbench.evolution import EvaluationRequest, Genome, NoiseTable, base_key
from workbench.models import MLPModel
from workbench.training import RunConfig, Trainer

TABLE = NoiseTable.shared(2**20, seed=8)


def test_a_diverged_policy_gets_the_worst_fitness_and_the_run_goes_on():
    spec = RunSpec("HalfCheetah-v5", "linear", max_episode_frames=20, noise_size=TABLE.size, noise_seed=TABLE.seed)
    with Evaluator.from_spec(spec, subpopulations=1, slots=3) as evaluator:
        n = evaluator.space.num_parameters
        good, bad = np.zeros(n, np.float32), np.full(n, np.nan, np.float32)
        bases = {base_key(w): w for w in (good, bad)}
        requests = [EvaluationRequest(Genome(key), 2, "perturbation") for key in bases]
        with pytest.warns(RuntimeWarning, match="weights are not finite"):
            results = evaluator.evaluate(requests, seed=1, bases=bases)
        assert np.isfinite(results[0].returns).all() and np.isnan(results[1].returns).all()
        again = evaluator.evaluate(requests[:1], seed=1, bases=bases)  # the evaluator still works
        np.testing.assert_array_equal(again[0].returns, results[0].returns)


class NaNActions(MLPModel):
    """A policy whose actions are NaN once its first weight is negative (a stand-in for overflowing weights)."""

    def act(self, observations, slots, perturbations=None):
        actions = super().act(observations, slots, perturbations)
        first = tf.gather(self.kernels[0][:, 0, 0], slots)[:, None]
        return tf.where(first < 0, actions * np.nan, actions)


def test_nan_actions_end_the_episode_with_the_worst_fitness():
    def model(shape, actions, slots, **options):
        return NaNActions(shape[0], 6, hidden_sizes=(), slots=slots, action_range=([-1] * 6, [1] * 6), **options)

    with Evaluator("HalfCheetah-v5", model, subpopulations=1, slots=4, max_episode_frames=15, noise=TABLE) as evaluator:
        n = evaluator.space.num_parameters
        fine, diverging = np.full(n, 0.01, np.float32), np.full(n, -0.01, np.float32)
        bases = {base_key(w): w for w in (fine, diverging)}
        requests = [EvaluationRequest(Genome(key), 2, "perturbation") for key in bases]
        with pytest.warns(RuntimeWarning, match="actions are not finite"):
            results = evaluator.evaluate(requests, seed=1, bases=bases)
        assert np.isfinite(results[0].returns).all() and results[0].steps.tolist() == [15, 15]
        assert np.isnan(results[1].returns).all()


def policy_requests(space):
    rng = np.random.default_rng(3)
    center = (0.2 * rng.standard_normal(space.num_parameters)).astype(np.float32)
    key = base_key(center)
    return [EvaluationRequest(Genome(key), 2, "perturbation")], {key: center}


def test_action_noise_is_seeded_per_episode_and_independent_of_the_layout():
    spec = RunSpec("HalfCheetah-v5", "linear", max_episode_frames=40, noise_size=TABLE.size, noise_seed=TABLE.seed)
    returns = {}
    for noise, subpopulations, slots in ((0.0, 1, 2), (0.1, 1, 2), (0.1, 2, 3)):
        with Evaluator.from_spec(spec, subpopulations=subpopulations, slots=slots, action_noise=noise) as evaluator:
            requests, bases = policy_requests(evaluator.space)
            returns[noise, subpopulations] = evaluator.evaluate(requests, seed=2, bases=bases)[0].returns.tolist()
    assert returns[0.1, 1] == returns[0.1, 2]  # the same noise whatever the layout
    assert returns[0.1, 1] != returns[0.0, 1]  # and it changes what happens
    with pytest.raises(ValueError, match="action_noise"):
        Evaluator("CartPole-v1", "mlp", action_noise=0.1, noise=TABLE)
    with pytest.raises(ValueError, match="action_noise"):
        Evaluator.from_spec(spec, action_noise=-1.0)


def test_a_trainer_explores_with_action_noise_and_scores_without_it(tmp_path):
    from workbench.training.scoring import scoring_seed

    config = RunConfig(
        env="HalfCheetah-v5",
        model="linear",
        algorithm="ars",
        max_episode_frames=30,
        slots=4,
        subpopulations=1,
        noise_size=TABLE.size,
        noise_seed=TABLE.seed,
        action_noise=0.05,
        hyperparameters=dict(directions=2, top_directions=1, center_episodes=1),
    )
    trainer = Trainer.from_config(config, run_dir=str(tmp_path))
    trainer.run(generations=1)
    assert trainer.evaluator.subpopulations[0].action_noise.scale == 0.05
    snapshot = trainer.snapshot()
    score = trainer.evaluate_elite(episodes=1)
    test = [EvaluationRequest(snapshot.elite, 1, "test")]
    seed = scoring_seed(config.seed, 0)
    outcomes = {}
    for noise in (0.0, 0.05):
        test_spec = trainer.evaluator.spec.with_max_episode_frames(None)  # tests run to the task's own limit
        with Evaluator.from_spec(test_spec, subpopulations=1, slots=1, action_noise=noise) as evaluator:
            outcomes[noise] = evaluator.evaluate(test, seed=seed, bases=snapshot.bases, request_ids=[0])[0].returns[0]
    trainer.close()
    assert score.returns[0] == outcomes[0.0] != outcomes[0.05]  # scores play the policy without the noise
    assert RunConfig.from_json(config.to_json()).action_noise == 0.05


ALL_SMALL = {  # one tiny generation of every algorithm
    "ga": dict(population_size=4, truncation=2, elite_candidates=1, elite_episodes=1),
    "random": dict(population_size=4, elite_candidates=1, elite_episodes=1),
    "es": dict(population_size=4),
    "ns-es": dict(population_size=4, meta_population_size=2),
    "nsr-es": dict(population_size=4, meta_population_size=2),
    "ars": dict(directions=2, top_directions=1),
    "pgpe": dict(population_size=4),
}


@pytest.mark.slow
@pytest.mark.parametrize("algorithm", sorted(ALL_SMALL))
def test_every_algorithm_runs_on_mujoco_with_its_preset(algorithm):
    config = RunConfig.from_preset(
        "tutorial",
        algorithm,
        env="Hopper-v5",
        max_episode_frames=30,
        slots=4,
        subpopulations=1,
        noise_size=TABLE.size,
        noise_seed=TABLE.seed,
        model_options=dict(hidden_sizes=[8]) if algorithm not in ("ars", "pgpe") else {},
        hyperparameters=ALL_SMALL[algorithm],
    )
    trainer = Trainer.from_config(config)
    try:
        records = trainer.run(generations=2)
        assert len(records) == 2 and all(np.isfinite(r.max) for r in records)
        assert trainer.observation_statistics is not None  # the presets normalise observations
        if algorithm in ("ars", "pgpe"):  # every state (the ES family samples 1 % of the episodes)
            assert trainer.observation_statistics.count == sum(r.frames for r in records)
    finally:
        trainer.close()


@pytest.mark.slow
@pytest.mark.parametrize(
    "task", ["HalfCheetah-v5", "Walker2d-v5", "Ant-v5", "Humanoid-v5", "Swimmer-v5", "InvertedPendulum-v5", "HumanoidTrap-v5"]
)
def test_ars_runs_on_every_mujoco_task(task):
    config = RunConfig.from_preset(
        "paper",
        "ars",
        env=task,
        max_episode_frames=20,
        slots=4,
        subpopulations=1,
        noise_size=TABLE.size,
        noise_seed=TABLE.seed,
        hyperparameters=dict(directions=2, top_directions=1),
    )
    trainer = Trainer.from_config(config)
    try:
        record = trainer.step()
        assert np.isfinite(record.max) and record.evaluations == 5  # 2 directions x 2, and the policy itself
    finally:
        trainer.close()


def test_the_frame_painter_renders_off_the_stepping_thread_and_keeps_only_the_newest_state():
    import threading
    import time

    from workbench.evaluation.frame_stream import FramePainter

    delivered, started = [], threading.Event()

    def slow_render(qpos, qvel):
        started.set()
        time.sleep(0.2)
        return qpos[None]

    painter = FramePainter(slow_render, delivered.append)
    try:
        begin = time.monotonic()
        for k in range(5):
            painter.submit({"step": k}, (np.array([k]), np.array([0])))
            started.wait(5)
        assert time.monotonic() - begin < 0.1  # submitting never waits for the renderer
        deadline = time.monotonic() + 5
        while (not delivered or delivered[-1]["step"] != 4) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert delivered[0]["step"] == 0 and delivered[-1]["step"] == 4 and len(delivered) == 2  # 1-3 were dropped
        assert delivered[-1]["frame"].tolist() == [4]
    finally:
        painter.close()


def test_a_listener_starts_the_painter_which_prepares_the_renderer_before_the_first_frame():
    """MuJoCo's render process takes about a second to start: it starts when a listener is set, not at the first
    frame, so that a short run still shows its gameplay."""
    import threading

    from workbench.envs.batch import RENDER_STATES, SCREEN
    from workbench.evaluation.frame_stream import FrameStream

    calls, prepared = [], threading.Event()

    class Batch:  # what FrameStream uses of a RENDER_STATES batch
        def supports(self, capability):
            return capability in (SCREEN, RENDER_STATES)

        def prepare_rendering(self):
            calls.append(("prepare", threading.current_thread().name))
            prepared.set()

        def render_states(self, qpos, qvel):
            calls.append(("render", threading.current_thread().name))
            return qpos[None]

        def step_info(self, slots):
            return {"x_velocity": np.array([1.5])}

        def physics_state(self, slots):
            return np.array([7.0]), np.array([0.0])

    stream = FrameStream(Batch(), interval=0.0)
    try:
        assert not stream.due() and calls == []  # nobody listens: nothing starts
        delivered = []
        stream.listener = delivered.append
        assert prepared.wait(5), "setting a listener did not prepare the renderer"
        assert calls == [("prepare", "workbench-frame-painter")]  # in the painter's thread, not the caller's
        assert stream.due()
        stream.send(0, {"step": 3})
        deadline = time.monotonic() + 5
        while not delivered and time.monotonic() < deadline:
            time.sleep(0.01)
        assert delivered[0]["step"] == 3 and delivered[0]["frame"].tolist() == [7.0]
        assert delivered[0]["info"] == {"x_velocity": 1.5}
        assert [kind for kind, _ in calls] == ["prepare", "render"]
    finally:
        stream.close()


@pytest.mark.parametrize("task", ["Hopper-v5", "HalfCheetah-v5"])
def test_fused_steps_give_the_per_step_results_to_the_bit(task):
    """Fused graph calls (many steps each) against one Python call per step: the same returns, steps, frames and
    observation statistics, also with a live episode cap that ends episodes inside what a call would run."""
    normalization = {"fraction": 1.0, "clip": None, "variance_floor": 0.01}  # ARS's, as the MuJoCo presets
    spec = RunSpec(task, "linear", max_episode_frames=120, noise_size=TABLE.size, noise_seed=TABLE.seed)
    spec = dataclasses.replace(spec, observation_normalization=normalization)
    results = {}
    for fused in (True, False):
        with Evaluator.from_spec(spec, subpopulations=2, slots=3) as evaluator:
            assert all(s.fused_steps for s in evaluator.subpopulations)
            for subpopulation in evaluator.subpopulations:
                subpopulation.fused_steps = fused
            rng = np.random.default_rng(5)
            centers = [(0.3 * rng.standard_normal(evaluator.space.num_parameters)).astype(np.float32) for _ in range(4)]
            bases = {base_key(w): w for w in centers}
            requests = [EvaluationRequest(Genome(key), 2, "perturbation") for key in bases]
            first = evaluator.evaluate(requests, seed=3, bases=bases)
            evaluator.set_episode_cap(57)
            capped = evaluator.evaluate(requests, seed=4, bases=bases)
            results[fused] = [
                (r.returns.tolist(), r.steps.tolist(), r.frames.tolist(), [np.asarray(s).tolist() for s in r.observation_sums])
                for r in first + capped
            ]
            assert max(max(r.steps) for r in capped) == 57 and all(r.observation_sums is not None for r in first)
    assert results[True] == results[False]


def test_fused_steps_are_refused_where_a_step_needs_python():
    spec = RunSpec("HalfCheetah-v5", "linear", max_episode_frames=20, noise_size=TABLE.size, noise_seed=TABLE.seed)
    with Evaluator.from_spec(spec, subpopulations=1, slots=2, action_noise=0.1) as evaluator:
        subpopulation = evaluator.subpopulations[0]
        assert not subpopulation.fused_steps
        with pytest.raises(ValueError, match="fused_steps needs"):
            subpopulation.fused_steps = True
        with pytest.raises(TypeError, match="fused_steps must be a bool"):
            subpopulation.fused_steps = 1


def test_a_round_smaller_than_the_slots_is_shared_out_evenly_between_the_lanes():
    requests = [EvaluationRequest(Genome(k), 1, "perturbation") for k in range(19)]
    jobs = JobQueue(requests, lanes=2)
    first, second = jobs.take(16), jobs.take(16)
    assert (len(first), len(second), len(jobs)) == (10, 9, 0)  # not 16 and 3
    assert jobs.take(4, running=8) == []
    large = JobQueue(requests * 10, lanes=2)  # 190 episodes: every free slot is filled
    assert len(large.take(16)) == 16 and len(large.take(3, running=13)) == 3
    assert len(JobQueue(requests).take(16)) == 16  # one lane takes what it has slots for
    spec = RunSpec("HalfCheetah-v5", "linear", max_episode_frames=30, noise_size=TABLE.size, noise_seed=TABLE.seed)
    with Evaluator.from_spec(spec, subpopulations=2, slots=16) as evaluator:
        requests, bases = policy_requests(evaluator.space)
        single = EvaluationRequest(requests[0].genome, 1, "perturbation")
        evaluator.evaluate([single] * 19, seed=1, bases=bases)
        most = sorted(max(s.occupancy_trace[1]) for s in evaluator.subpopulations)  # episodes each lane ran at once
        assert most == [9, 10]
