"""OpenAI-ES through ask/tell: optima, the gradient estimate, mirrored sampling, exact resume, live hyperparameters."""

import dataclasses
import math

import numpy as np
import pytest

from workbench.evolution import GenomeDecoder, NoiseTable, ParameterSpace
from workbench.evolution.es import ESConfig, EvolutionStrategy, es_gradient
from workbench.evolution.strategy import EvaluationResult, centered_ranks

TABLE = NoiseTable.shared(2**16, seed=3)


def rastrigin(theta):
    x = np.asarray(theta, np.float64)
    return -float(10 * x.size + np.sum(x * x - 10 * np.cos(2 * np.pi * x)))


def run(strategy, objective, generations, decoder=None, schedule=None):
    decoder = decoder or GenomeDecoder(strategy.space)
    while strategy.generation < generations:
        for key, weights in strategy.bases().items():
            decoder.add_base(key, weights)
        decoder.retain_bases(strategy.bases())
        strategy.tell([[objective(decoder.decode(r.genome))] * r.episodes for r in strategy.ask()])
        if schedule:
            schedule(strategy)
    return strategy


def make(config, dims=10, scale=1.0, seed=0):
    return EvolutionStrategy(config, ParameterSpace(TABLE, np.full(dims, scale, np.float32)), seed=seed)


def test_es_reaches_the_sphere_optimum():
    es = make(ESConfig(population_size=100, sigma=0.1, learning_rate=0.05, l2_coefficient=0.0))
    sphere = lambda theta: -float(np.sum(np.square(theta, dtype=np.float64)))  # noqa: E731
    run(es, sphere, 150, schedule=lambda s: s.generation == 100 and s.set(learning_rate=0.01, sigma=0.02))
    assert sphere(es.center) > -1e-3, es.center


def test_es_reaches_the_rastrigin_optimum_in_10_dimensions():
    # A wide sigma smooths the local minima away; a narrower one then refines (set() between generations).
    es = make(ESConfig(population_size=200, sigma=1.0, learning_rate=0.1, l2_coefficient=0.0), scale=3.0, seed=1)
    start = rastrigin(es.center)
    run(es, rastrigin, 300, schedule=lambda s: s.generation == 200 and s.set(sigma=0.3, learning_rate=0.03))
    assert start < -100 and rastrigin(es.center) > -0.05, (start, rastrigin(es.center))
    assert np.abs(es.center).max() < 0.02


def test_gradient_estimate_correlates_with_the_true_gradient_on_a_quadratic(rng):
    dims = 50
    space = ParameterSpace(TABLE, np.ones(dims, np.float32))
    curvature = rng.uniform(0.5, 5.0, dims)
    theta = rng.standard_normal(dims).astype(np.float32)
    objective = lambda x: -float(np.sum(curvature * np.asarray(x, np.float64) ** 2))  # noqa: E731
    true_gradient = -2 * curvature * theta
    sigma, pairs = 0.01, 500
    indices = [space.sample_offset(rng) for _ in range(pairs)]
    fitness = np.array([[objective(space.perturb(theta, i, s)) for s in (sigma, -sigma)] for i in indices])
    estimate = es_gradient(space, indices, fitness, 0, 2 * pairs)
    cosine = estimate @ true_gradient / np.linalg.norm(estimate) / np.linalg.norm(true_gradient)
    assert cosine > 0.85, cosine
    random_cosine = rng.standard_normal(dims) @ true_gradient / np.sqrt(dims) / np.linalg.norm(true_gradient)
    assert abs(random_cosine) < 0.6


def test_low_rank_perturbations_also_follow_the_gradient(rng):
    from workbench.models import MLPModel

    model = MLPModel(8, 4, (16,), slots=1)
    space = ParameterSpace.for_model(model, TABLE)
    target = rng.standard_normal(space.num_parameters).astype(np.float32)
    theta = np.zeros(space.num_parameters, np.float32)
    objective = lambda x: -float(np.sum((np.asarray(x, np.float64) - target) ** 2))  # noqa: E731
    indices = [space.sample_offset(rng, 2) for _ in range(400)]
    fitness = np.array([[objective(space.perturb(theta, i, s, 2)) for s in (0.01, -0.01)] for i in indices])
    estimate = es_gradient(space, indices, fitness, 2, 800)
    assert estimate @ (target - theta) / np.linalg.norm(estimate) / np.linalg.norm(target - theta) > 0.3


def test_requests_are_mirrored_pairs_plus_the_center():
    es = make(ESConfig(population_size=6, sigma=0.1, center_episodes=2))
    requests = es.ask()
    assert [r.phase for r in requests] == ["perturbation"] * 6 + ["center"] and requests[-1].episodes == 2
    for plus, minus in zip(requests[0:6:2], requests[1:6:2]):
        (i, s, rank), (j, t, _) = plus.genome.mutations[0], minus.genome.mutations[0]
        assert i == j and s == -t == np.float32(0.1) and rank == 0
    assert {r.genome.init for r in requests} == set(es.bases())
    assert es.ask() == requests  # the same until tell()
    with pytest.raises(ValueError, match="one result per request"):
        es.tell([[0.0]])
    center = es.center.copy()
    es.tell([[math.nan]] + [[1.0]] * 5 + [EvaluationResult([3.0, 5.0])])
    assert es.history[-1].elite == 4.0 and es.history[-1].max == 1.0
    assert not np.array_equal(es.center, center) and es.generation == 1


def test_centered_ranks_share_ties_and_span_minus_half_to_half():
    np.testing.assert_array_equal(centered_ranks([3.0, 1.0, 2.0, 2.0, -math.inf]), [0.5, -0.25, 0.125, 0.125, -0.5])
    np.testing.assert_array_equal(centered_ranks(np.ones((2, 2))), np.zeros((2, 2)))  # no signal, no step


def test_live_hyperparameters_apply_next_generation():
    es = make(ESConfig(population_size=10))
    es.set(population_size=4, perturbation_rank=0, l2_coefficient=0.0)
    assert len(es.ask()) == 11
    run(es, rastrigin, 1)
    assert len(es.ask()) == 5 and es.hyperparameters.trail[0]["generation"] == 1
    with pytest.raises(ValueError, match="needs layer shapes"):
        es.set(perturbation_rank=2)  # this space is a flat vector
    with pytest.raises(ValueError, match="unknown"):
        es.set(truncation=3)


@pytest.mark.parametrize(
    "changes,match",
    [
        (dict(population_size=5), "even"),
        (dict(population_size=0), "population_size"),
        (dict(sigma=0.0), "sigma"),
        (dict(learning_rate=math.inf), "learning_rate"),
        (dict(l2_coefficient=-1.0), "l2_coefficient"),
        (dict(adam_beta1=1.0), "adam_beta1"),
        (dict(adam_epsilon=0), "adam_epsilon"),
        (dict(center_episodes=-1), "center_episodes"),
        (dict(episodes_per_member=0), "episodes_per_member"),
        (dict(perturbation_rank=True), "perturbation_rank"),
        (dict(survival_bonus=-1.0), "survival_bonus"),
    ],
)
def test_invalid_configurations_are_refused(changes, match):
    with pytest.raises(ValueError, match=match):
        make(ESConfig(**changes))


def test_the_survival_bonus_ranks_shifted_returns_and_records_the_true_ones(rng):
    """With survival_bonus b, a member's return minus b per step is what gets ranked: the update equals that of ES
    told the shifted returns; the records keep the returns as played."""
    config = ESConfig(population_size=8, sigma=0.1, learning_rate=0.05)
    shifted, plain = make(dataclasses.replace(config, survival_bonus=2.0)), make(config)
    for _ in range(3):
        requests = shifted.ask()
        assert [r.genome for r in requests] == [r.genome for r in plain.ask()]
        returns, steps = rng.normal(100, 10, len(requests)), rng.integers(1, 60, len(requests))
        returns[0] = np.nan  # a diverged member stays the worst after the shift
        shifted.tell([EvaluationResult([value], steps=[length]) for value, length in zip(returns, steps)])
        plain.tell([EvaluationResult([value - 2.0 * length]) for value, length in zip(returns, steps)])
        np.testing.assert_array_equal(shifted.center, plain.center)
        assert shifted.history[-1].max == pytest.approx(returns[1:-1].max())  # the center's own return left out
    with pytest.raises(ValueError, match="steps"):
        shifted.ask()
        shifted.tell([EvaluationResult([1.0])] * 9)


def test_a_corrupt_center_is_refused():  # the rest of the state contract: test_strategy_contract.py
    es = make(ESConfig.tutorial())
    state = es.state_dict()
    state["center"] = state["center"][:3]
    with pytest.raises(ValueError, match="center"):
        EvolutionStrategy.from_state(state, es.space)
