"""NS-ES and NSR-ES: novelty, the archive, the meta-population, exploration without reward, exact resume."""

import dataclasses

import numpy as np
import pytest

from workbench.evolution import GenomeDecoder, NoiseTable, ParameterSpace
from workbench.evolution.novelty import NoveltyConfig, NoveltySearchES, novelty
from workbench.evolution.strategy import EvaluationResult

TABLE = NoiseTable.shared(2**16, seed=3)


def make(config, dims=6, seed=0):
    return NoveltySearchES(config, ParameterSpace(TABLE, np.full(dims, 0.1, np.float32)), seed=seed)


def run(strategy, reward, generations, decoder=None):
    """The behaviour of a genome is its first two weights (a point on a plane); reward(theta) its return."""
    decoder = decoder or GenomeDecoder(strategy.space)
    while strategy.generation < generations:
        for key, weights in strategy.bases().items():
            decoder.add_base(key, weights)
        results = []
        for request in strategy.ask():
            theta = decoder.decode(request.genome)
            results.append(
                EvaluationResult([reward(theta)] * request.episodes, np.repeat(theta[None, :2], request.episodes, axis=0))
            )
        strategy.tell(results)
    return strategy


def test_novelty_is_the_mean_distance_to_the_k_nearest(rng):
    archive = rng.standard_normal((30, 3))
    points = rng.standard_normal((7, 3))
    brute = [np.sort(np.linalg.norm(archive - p, axis=1))[:10].mean() for p in points]
    np.testing.assert_allclose(novelty(points, archive, 10), brute, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(novelty(points, archive[:4], 10), [np.linalg.norm(archive[:4] - p, axis=1).mean() for p in points])
    assert (novelty(points, np.zeros((0, 3)), 10) == 0).all()
    with pytest.raises(ValueError, match="dimensions"):
        novelty(points, archive[:, :2], 10)


def test_first_round_evaluates_every_center_then_generations_alternate():
    ns = make(NoveltyConfig.ns_es(population_size=4, meta_population_size=3, center_episodes=2))
    first = ns.ask()
    assert [r.phase for r in first] == ["center"] * 3 and all(r.behaviour and r.episodes == 2 for r in first)
    run(ns, lambda theta: 0.0, 1)
    assert ns.archive.shape == (4, 2)  # three centers, then the updated one
    assert ns.phase == "perturbation" and [r.phase for r in ns.ask()] == ["perturbation"] * 4
    record = ns.history[-1]
    assert record.extras["archive_size"] == 4 and 0 <= record.extras["center"] < 3 and record.extras["novelty_mean"] > 0


def test_novelty_search_explores_without_any_reward():
    ns = run(
        make(NoveltyConfig.ns_es(population_size=20, sigma=0.05, learning_rate=0.05, meta_population_size=2)),
        lambda theta: 0.0,
        40,
    )
    spread = np.ptp(ns.archive, axis=0).max()
    start = np.ptp(ns.archive[:2], axis=0).max()
    assert spread > 10 * start and spread > 1.0, (start, spread)
    assert len(set(h.extras["center"] for h in ns.history)) == 2  # both centers were chosen


def test_reward_weight_one_climbs_the_reward_like_es():
    target = np.array([1.0, -1.0, 0.5, 0.5, -0.5, 1.0])
    reward = lambda theta: -float(np.sum((theta - target) ** 2))  # noqa: E731
    ns = run(
        make(NoveltyConfig(population_size=20, sigma=0.05, learning_rate=0.05, meta_population_size=1, reward_weight=1.0)),
        reward,
        60,
    )
    assert ns.history[-1].extras["center_return"] > -0.1 and ns.history[0].extras["center_return"] < -3


def test_behaviours_are_required_and_checked():
    ns = make(NoveltyConfig.nsr_es(population_size=4, meta_population_size=2))
    with pytest.raises(ValueError, match="needs behaviours"):
        ns.tell([[0.0], [0.0]])
    with pytest.raises(ValueError, match="behaviours must be"):
        ns.tell([EvaluationResult([0.0], np.zeros(2)), EvaluationResult([0.0], np.zeros((1, 2)))])
    with pytest.raises(ValueError, match="finite"):
        ns.tell([EvaluationResult([0.0], [[np.nan, 0]]), EvaluationResult([0.0], [[0, 0]])])
    ns.tell([EvaluationResult([0.0], [[0.0, 1.0]]), EvaluationResult([0.0], [[1.0, 0.0]])])
    with pytest.raises(ValueError, match="dimensions"):
        ns.tell([EvaluationResult([0.0], [[0.0, 1.0, 2.0]])] * 4)


def test_nsr_es_ranks_rewards_minus_the_survival_bonus(rng):
    """NSR-ES with survival_bonus b takes the same steps as NSR-ES told the returns minus b per step."""
    config = NoveltyConfig.nsr_es(population_size=6, sigma=0.1, learning_rate=0.05, meta_population_size=2)
    shifted, plain = make(dataclasses.replace(config, survival_bonus=1.5)), make(config)
    for _ in range(5):
        requests = shifted.ask()
        assert [r.genome for r in requests] == [r.genome for r in plain.ask()]
        returns, steps = rng.normal(50, 5, len(requests)), rng.integers(1, 40, len(requests))
        behaviours = rng.normal(size=(len(requests), 1, 2))
        shifted.tell([EvaluationResult([v], b, steps=[n]) for v, b, n in zip(returns, behaviours, steps)])
        told = returns - 1.5 * steps if requests[0].phase == "perturbation" else returns  # centers: unshifted
        plain.tell([EvaluationResult([v], b) for v, b in zip(told, behaviours)])
        for a, b in zip(shifted.centers, plain.centers):
            np.testing.assert_array_equal(a, b)
    assert shifted.generation == plain.generation >= 2


@pytest.mark.parametrize(
    "changes,match",
    [
        (dict(meta_population_size=0), "meta_population_size"),
        (dict(k_nearest=0), "k_nearest"),
        (dict(reward_weight=1.5), "reward_weight"),
        (dict(center_episodes=0), "center_episodes"),
    ],
)
def test_invalid_configurations_are_refused(changes, match):
    with pytest.raises(ValueError, match=match):
        make(NoveltyConfig(**changes))


def test_meta_population_size_is_fixed_during_a_run_but_weights_can_change():
    ns = make(NoveltyConfig.tutorial())
    with pytest.raises(ValueError, match="cannot change"):
        ns.set(meta_population_size=4)
    ns.set(reward_weight=0.5, k_nearest=3)
    run(ns, lambda theta: 0.0, 1)
    assert ns.config.reward_weight == 0.5
    assert ns.hyperparameters.trail == [{"generation": 1, "reward_weight": 0.5, "k_nearest": 3}]
