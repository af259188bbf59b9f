"""Observation normalisation: the statistics' arithmetic, the in-graph normalisation against numpy, the states an
evaluation collects (in-graph MuJoCo and numpy Gymnasium paths) against a plain loop, independence of the layout,
sampled fractions, and exact resume through the trainer."""

import numpy as np
import pytest
import tensorflow as tf

from workbench.envs import make_batch
from workbench.envs.rng import episode_seed
from workbench.evaluation import Evaluator, RunSpec
from workbench.evolution import EvaluationRequest, Genome, GenomeDecoder, NoiseTable, base_key
from workbench.models import MLPModel
from workbench.models.observation_normalization import ObservationNormalization, ObservationStatistics, preserving_map
from workbench.training import RunConfig, Trainer

TABLE = NoiseTable.shared(2**20, seed=8)


def episodes_of(states):
    return [(len(s), np.sum(s, axis=0), np.sum(np.square(s), axis=0)) for s in states]


def test_statistics_merge_to_the_mean_and_variance_of_every_state(rng):
    states = [rng.normal(3.0, 2.0, size=(n, 4)) for n in (5, 17, 1)]
    statistics = ObservationStatistics.empty(4).merged(episodes_of(states[:2])).merged(episodes_of(states[2:]))
    everything = np.concatenate(states)
    mean, std = statistics.mean_and_std(1e-2)
    np.testing.assert_allclose(mean, everything.mean(0), rtol=1e-6)
    np.testing.assert_allclose(std, everything.std(0), rtol=1e-5)
    assert statistics.count == 23
    constant = ObservationStatistics.empty(2).merged(episodes_of([np.ones((3, 2))]))
    np.testing.assert_allclose(constant.mean_and_std(1e-2)[1], 0.1)  # the variance floor
    identity = ObservationStatistics.empty(3).mean_and_std()
    assert identity[0].tolist() == [0, 0, 0] and identity[1].tolist() == [1, 1, 1]
    assert ObservationStatistics.from_state(statistics.state(), 4) == statistics
    with pytest.raises(ValueError, match="size 4"):
        ObservationStatistics.from_state(statistics.state(), 5)
    with pytest.raises(ValueError, match="corrupt"):
        ObservationStatistics.from_state({"count": 1}, 4)
    with pytest.raises(ValueError, match="negative"):
        ObservationStatistics(1, [0.0], [-1.0])


@pytest.mark.parametrize(
    "options, name",
    [
        (dict(fraction=0.0), "fraction"),
        (dict(fraction=1.5), "fraction"),
        (dict(clip=0.0), "clip"),
        (dict(variance_floor=0.0), "variance_floor"),
        (dict(frac=1.0), "unknown"),
        (dict(preserve_policy="yes"), "preserve_policy"),
        ("yes", "observation_normalization"),
    ],
)
def test_bad_options_are_named(options, name):
    with pytest.raises(ValueError, match=name):
        ObservationNormalization.from_options(options)
    with pytest.raises(ValueError, match=name):
        RunConfig(env="HalfCheetah-v5", model="linear", algorithm="ars", observation_normalization=options).build()


def test_the_model_normalises_and_clips_inside_the_graph(rng):
    model = MLPModel(
        3,
        2,
        hidden_sizes=(),
        slots=1,
        action_range=([-9, -9], [9, 9]),
        observation_normalization=ObservationNormalization(clip=2.0),
    )
    model.set_slot(0, np.array([1, 0, 0, 1, 0, 0, 0, 0], np.float32))  # identity on the first two inputs
    states = rng.normal(5, 3, size=(50, 3))
    statistics = ObservationStatistics.empty(3).merged(episodes_of([states]))
    model.set_observation_statistics(statistics)
    x = rng.normal(5, 6, size=(10, 3)).astype(np.float32)
    mean, std = statistics.mean_and_std()
    expected = np.clip((x - mean) / std, -2, 2)[:, :2]
    np.testing.assert_allclose(model.act(x, np.zeros(10, np.int32)).numpy(), expected, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="size 3"):
        model.set_observation_statistics(ObservationStatistics.empty(4))
    with pytest.raises(ValueError, match="observation_normalization"):
        MLPModel(3, 2, hidden_sizes=()).set_observation_statistics(None)


@pytest.mark.parametrize("hidden_sizes", [(), (5,)])
def test_the_preserving_map_keeps_a_networks_outputs_under_new_statistics(rng, hidden_sizes):
    model = MLPModel(
        4,
        2,
        hidden_sizes=hidden_sizes,
        slots=1,
        action_range=([-99, -99], [99, 99]),
        observation_normalization=ObservationNormalization(clip=None),
    )
    weights = rng.normal(0, 1, model.num_parameters)
    before = ObservationStatistics.empty(4).merged(episodes_of([rng.normal(2, 3, size=(40, 4))]))
    after = before.merged(episodes_of([rng.normal(-1, 0.5, size=(30, 4))]))  # mean and std both move
    x = rng.normal(1, 4, size=(16, 4)).astype(np.float32)

    def outputs(statistics, parameters):
        model.set_observation_statistics(statistics)
        model.set_slot(0, np.asarray(parameters, np.float32))
        return model.act(x, np.zeros(len(x), np.int32)).numpy()

    mapped = preserving_map(model.kernel_shapes, before.mean_and_std(), after.mean_and_std())(weights)
    np.testing.assert_allclose(outputs(after, mapped), outputs(before, weights), rtol=1e-4, atol=1e-4)
    assert np.abs(outputs(after, weights) - outputs(before, weights)).max() > 0.1  # unmapped, the policy moves
    with pytest.raises(ValueError, match=r"before mean must be \[4\]"):
        preserving_map(model.kernel_shapes, (np.zeros(3), np.ones(3)), after.mean_and_std())
    with pytest.raises(ValueError, match="positive"):
        preserving_map(model.kernel_shapes, (np.zeros(4), np.zeros(4)), after.mean_and_std())
    with pytest.raises(ValueError, match="parameters must be"):
        preserving_map(model.kernel_shapes, before.mean_and_std(), after.mean_and_std())(weights[:-1])


def requests_for(space, count, episodes=2):
    rng = np.random.default_rng(1)
    center = (0.3 * rng.standard_normal(space.num_parameters)).astype(np.float32)
    key = base_key(center)
    requests = [
        EvaluationRequest(Genome(key, ((space.sample_offset(rng), 0.1),)), episodes, "perturbation") for _ in range(count)
    ]
    return requests, {key: center}


@pytest.mark.parametrize("env", ["HalfCheetah-v5", "CartPole-v1"])
def test_collected_states_equal_a_plain_loop_and_do_not_depend_on_the_layout(env):
    spec = RunSpec(
        env, "linear", max_episode_frames=60, noise_size=TABLE.size, noise_seed=TABLE.seed, observation_normalization=True
    )
    outcomes = []
    for subpopulations, slots in ((1, 2), (2, 5)):
        with Evaluator.from_spec(spec, subpopulations=subpopulations, slots=slots) as evaluator:
            if not outcomes:
                requests, bases = requests_for(evaluator.space, 3)
                size = evaluator.models[0].input_shape[0]
                statistics = ObservationStatistics.empty(size).merged([(10, np.arange(size) * 1.0, np.full(size, 50.0))])
            evaluator.set_observation_statistics(statistics)
            results = evaluator.evaluate(requests, seed=4, bases=bases)
            outcomes.append(results)
    for a, b in zip(*outcomes):
        for x, y in zip(a.observation_sums, b.observation_sums):
            np.testing.assert_array_equal(x, y)
        np.testing.assert_array_equal(a.returns, b.returns)
    # a plain loop: the same policy on a one-environment batch, observations normalised in numpy
    batch = make_batch(env, 1, max_episode_frames=60)
    model = spec.with_observation_statistics(statistics).build_model(batch, 1)
    decoder = GenomeDecoder(model_space := spec.space(model))
    for key, weights in bases.items():
        decoder.add_base(key, weights)
    for r, request in enumerate(requests):
        model.set_slot(0, decoder.decode(request.genome))
        for e in range(request.episodes):
            observation = batch.reset([0], [episode_seed(4, r, e)])
            seen, total, done = [], 0.0, False
            while not done:
                seen.append(np.asarray(observation[0], np.float64))
                action = model.act(tf.constant(observation, tf.float32), np.zeros(1, np.int32)).numpy()
                reward, (done,) = batch.step([0], action)
                observation = batch.observation([0])
                total += float(reward[0])
            counts, sums, squares = outcomes[0][r].observation_sums
            assert counts[e] == len(seen) == outcomes[0][r].steps[e]
            np.testing.assert_allclose(sums[e], np.sum(seen, axis=0), rtol=1e-12, atol=1e-9)
            np.testing.assert_allclose(squares[e], np.sum(np.square(seen), axis=0), rtol=1e-12, atol=1e-9)
            assert outcomes[0][r].returns[e] == pytest.approx(total, rel=1e-6)
    assert model_space.num_parameters == decoder.num_parameters


def test_a_sampled_fraction_keeps_the_states_of_the_episodes_its_seeds_choose():
    options = ObservationNormalization(fraction=0.3)
    spec = RunSpec(
        "CartPole-v1",
        "linear",
        max_episode_frames=30,
        noise_size=TABLE.size,
        noise_seed=TABLE.seed,
        observation_normalization=options.to_json(),
    )
    with Evaluator.from_spec(spec, subpopulations=1, slots=4) as evaluator:
        requests, bases = requests_for(evaluator.space, 20, episodes=1)
        results = evaluator.evaluate(requests, seed=9, bases=bases)
    kept = [bool(r.observation_sums[0][0]) for r in results]
    assert kept == [options.sampled(episode_seed(9, r, 0)) for r in range(20)]
    assert 0 < sum(kept) < 20


def normalised_config(**changes):
    config = dict(
        env="CartPole-v1",
        model="linear",
        algorithm="ars",
        subpopulations=2,
        slots=4,
        max_episode_frames=80,
        noise_size=2**20,
        observation_normalization=True,
        hyperparameters=dict(directions=4, top_directions=2, step_size=0.05, noise=0.05, center_episodes=1),
    )
    config.update(changes)
    return RunConfig(**config)


def test_the_trainer_merges_each_generation_and_resumes_the_statistics_exactly(tmp_path):
    straight = Trainer.from_config(normalised_config())
    straight.run(generations=3)
    interrupted = Trainer.from_config(normalised_config(), run_dir=str(tmp_path))
    interrupted.run(generations=2)
    interrupted.close()
    resumed = Trainer.resume_from(str(tmp_path))
    assert resumed.observation_statistics == interrupted.observation_statistics
    resumed.run(generations=1)
    assert resumed.observation_statistics == straight.observation_statistics
    assert [r.max for r in resumed.history] == [r.max for r in straight.history]
    total_steps = straight.observation_statistics.count
    assert total_steps == sum(r.frames for r in straight.history)  # every state of every episode (fraction 1)
    assert resumed.evaluator.spec.observation_statistics == straight.evaluator.spec.observation_statistics


def test_preserve_policy_maps_the_search_mean_at_each_merge_and_resumes_exactly(tmp_path):
    def config(preserve):
        return normalised_config(
            algorithm="sep-cma-es",
            observation_normalization=dict(preserve_policy=preserve, clip=None),
            hyperparameters=dict(sigma_init=0.05, center_episodes=1),
        )

    plain, preserving = Trainer.from_config(config(False)), Trainer.from_config(config(True))
    before = plain.observation_statistics
    plain.run(generations=1)  # the same members and episodes in both runs, so the same states
    preserving.run(generations=1)
    after = plain.observation_statistics
    assert preserving.observation_statistics == after != before
    mapped = preserving_map(plain.strategy.space.layer_shapes, before.mean_and_std(0.01), after.mean_and_std(0.01))
    np.testing.assert_allclose(preserving.strategy.update.mean, mapped(plain.strategy.update.mean), rtol=1e-12)
    assert not np.allclose(preserving.strategy.update.mean, plain.strategy.update.mean)
    interrupted = Trainer.from_config(config(True), run_dir=str(tmp_path))
    interrupted.run(generations=2)
    interrupted.close()
    resumed = Trainer.resume_from(str(tmp_path))
    resumed.run(generations=2)
    preserving.run(generations=3)
    np.testing.assert_array_equal(resumed.strategy.update.mean, preserving.strategy.update.mean)
    assert [r.max for r in resumed.history] == [r.max for r in preserving.history]


def test_preserve_policy_is_refused_for_a_strategy_without_a_search_mean():
    with pytest.raises(ValueError, match="preserve_policy"):
        Trainer.from_config(normalised_config(observation_normalization=dict(preserve_policy=True)))


def test_normalisation_is_refused_where_it_does_not_apply():
    with pytest.raises(ValueError, match="vector observations"):
        RunConfig(env="pong", algorithm="es", observation_normalization=True).check()
    with pytest.raises(ValueError, match="vector observations"):
        RunConfig(env="pong", algorithm="ars").check()
