"""ARS and PGPE + ClipUp: their update rules against small numpy references written from the papers' formulas,
their genomes, the survival-bonus shift, diverged members, and their hyperparameter checks."""

import math

import numpy as np
import pytest

from workbench.evolution import (
    PGPE,
    ARSConfig,
    AugmentedRandomSearch,
    EvaluationResult,
    GenomeDecoder,
    NoiseTable,
    ParameterSpace,
    PGPEConfig,
)

TABLE = NoiseTable.shared(2**16, seed=5)
N = 7


def space():
    return ParameterSpace(TABLE, np.full(N, 0.1, np.float32))


def decode_all(strategy, requests):
    decoder = GenomeDecoder(strategy.space)
    for key, weights in strategy.bases().items():
        decoder.add_base(key, weights)
    return [decoder.decode(r.genome).astype(np.float64) for r in requests]


def objective(theta):
    return -float(np.sum((theta - 0.5) ** 2)) + float(np.cos(7 * theta).sum())


# -- ARS ------------------------------------------------------------------------------------------
def test_ars_members_are_the_policy_plus_and_minus_nu_delta():
    ars = AugmentedRandomSearch(ARSConfig(directions=3, top_directions=2, noise=0.05), space(), seed=1)
    requests = ars.ask()
    assert len(requests) == 6 and np.all(ars.center == 0)
    thetas = decode_all(ars, requests)
    for k, index in enumerate(ars.indices):
        delta = TABLE.slice(index, N).astype(np.float64)
        np.testing.assert_allclose(thetas[2 * k], 0.05 * delta, rtol=1e-6)
        np.testing.assert_allclose(thetas[2 * k + 1], -0.05 * delta, rtol=1e-6)


@pytest.mark.parametrize("top", [None, 2])
def test_ars_update_matches_the_papers_rule(top):
    config = ARSConfig(directions=4, top_directions=top, step_size=0.1, noise=0.05)
    ars = AugmentedRandomSearch(config, space(), seed=2)
    for _ in range(3):
        requests = ars.ask()
        thetas = decode_all(ars, requests)
        returns = np.array([objective(t) for t in thetas])
        before, indices = ars.center.astype(np.float64), list(ars.indices)
        ars.tell([[r] for r in returns])
        plus, minus = returns[0::2], returns[1::2]
        b = 4 if top is None else top
        order = np.argsort(-np.maximum(plus, minus), kind="stable")[:b]
        sigma_r = np.std(np.concatenate([plus[order], minus[order]]))
        step = sum((plus[k] - minus[k]) * TABLE.slice(indices[k], N).astype(np.float64) for k in order)
        expected = before + 0.1 / (b * sigma_r) * step
        np.testing.assert_allclose(ars.center, expected, rtol=1e-5, atol=1e-7)
        assert ars.history[-1].extras["reward_std"] == pytest.approx(sigma_r)


def test_ars_survival_bonus_shifts_training_returns_only():
    config = ARSConfig(directions=2, top_directions=1, step_size=0.1, noise=0.05, survival_bonus=1.0)
    ars = AugmentedRandomSearch(config, space(), seed=3)
    # true returns favour member 0; per-step shift makes the long-living member 1 the worst
    results = [
        EvaluationResult([10.0], steps=[2]),
        EvaluationResult([9.0], steps=[50]),
        EvaluationResult([1.0], steps=[1]),
        EvaluationResult([0.0], steps=[1]),
    ]
    ars.ask()
    indices = list(ars.indices)
    ars.tell(results)
    shifted = np.array([8.0, -41.0, 0.0, -1.0])
    plus, minus = shifted[0::2], shifted[1::2]
    k = int(np.argmax(np.maximum(plus, minus)))
    sigma_r = np.std([plus[k], minus[k]])
    expected = 0.1 / sigma_r * (plus[k] - minus[k]) * TABLE.slice(indices[k], N)
    np.testing.assert_allclose(ars.center, expected, rtol=1e-5)
    assert ars.history[-1].max == 10.0  # reported unshifted
    with pytest.raises(ValueError, match="steps"):
        ars.tell([EvaluationResult([1.0])] * 4)


def test_ars_diverged_members_count_as_the_lowest_return_and_a_flat_generation_keeps_the_policy():
    ars = AugmentedRandomSearch(ARSConfig(directions=2, top_directions=2, step_size=0.1, noise=0.05), space())
    ars.ask()
    ars.tell([[np.nan], [1.0], [2.0], [3.0]])
    assert np.isfinite(ars.center).all() and np.any(ars.center != 0)
    before = ars.center.copy()
    ars.ask()
    ars.tell([[5.0]] * 4)
    np.testing.assert_array_equal(ars.center, before)


@pytest.mark.parametrize(
    "changes, name",
    [
        (dict(directions=0), "directions"),
        (dict(directions=4, top_directions=5), "top_directions"),
        (dict(step_size=0.0), "step_size"),
        (dict(noise=-1.0), "noise"),
        (dict(survival_bonus=-1.0), "survival_bonus"),
    ],
)
def test_ars_bad_hyperparameters_are_named(changes, name):
    with pytest.raises(ValueError, match=name):
        AugmentedRandomSearch(ARSConfig(**changes), space())


# -- PGPE + ClipUp --------------------------------------------------------------------------------
def centered_ranks_reference(values):
    flat = values.ravel()
    ranks = np.empty(flat.size)
    for i, v in enumerate(flat):  # ties share the mean rank
        ranks[i] = np.sum(flat < v) + (np.sum(flat == v) - 1) / 2
    return (ranks / (flat.size - 1) - 0.5).reshape(values.shape)


def test_pgpe_members_are_mu_plus_minus_sigma_z_and_sigma_starts_from_the_radius():
    config = PGPEConfig(population_size=6, max_speed=0.2)
    pgpe = PGPE(config, space(), seed=1)
    np.testing.assert_allclose(np.linalg.norm(pgpe.stdev), 15 * 0.2, rtol=1e-6)
    thetas = decode_all(pgpe, pgpe.ask())
    for k, index in enumerate(pgpe.indices):
        epsilon = pgpe.stdev.astype(np.float64) * TABLE.slice(index, N)
        np.testing.assert_allclose(thetas[2 * k], epsilon, rtol=1e-6)
        np.testing.assert_allclose(thetas[2 * k + 1], -epsilon, rtol=1e-6)


def test_pgpe_clipup_update_matches_a_numpy_reference():
    config = PGPEConfig(population_size=8, max_speed=0.3, momentum=0.9, stdev_learning_rate=0.1, stdev_max_change=0.2)
    pgpe = PGPE(config, space(), seed=4)
    mu, sigma, velocity = np.zeros(N), pgpe.stdev.astype(np.float64), np.zeros(N)
    for _ in range(4):
        requests = pgpe.ask()
        returns = np.array([objective(t) for t in decode_all(pgpe, requests)])
        indices = list(pgpe.indices)
        pgpe.tell([[r] for r in returns])
        u = centered_ranks_reference(returns.reshape(-1, 2))
        g_mu, g_sigma = np.zeros(N), np.zeros(N)
        for k, index in enumerate(indices):
            eps = sigma * TABLE.slice(index, N)
            g_mu += (u[k, 0] - u[k, 1]) / 2 * eps
            g_sigma += (u[k, 0] + u[k, 1]) / 2 * (eps**2 - sigma**2) / sigma
        g_mu, g_sigma = g_mu / len(indices), g_sigma / len(indices)
        sigma = np.clip(sigma + 0.1 * g_sigma, 0.8 * sigma, 1.2 * sigma)
        velocity = 0.9 * velocity + (0.3 / 2) * g_mu / np.linalg.norm(g_mu)
        if np.linalg.norm(velocity) > 0.3:
            velocity *= 0.3 / np.linalg.norm(velocity)
        mu = mu + velocity
        np.testing.assert_allclose(pgpe.center, mu, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(pgpe.stdev, sigma, rtol=1e-5)
        assert np.linalg.norm(pgpe.optimizer.velocity) <= 0.3 * (1 + 1e-9)


def test_pgpe_learns_a_quadratic():
    pgpe = PGPE(PGPEConfig(population_size=20, max_speed=0.05), space(), seed=0)
    first = None
    for _ in range(60):
        requests = pgpe.ask()
        returns = [-float(np.sum((t - 0.5) ** 2)) for t in decode_all(pgpe, requests)]
        first = first if first is not None else -float(np.sum((pgpe.center - 0.5) ** 2))
        pgpe.tell([[r] for r in returns])
    assert -float(np.sum((pgpe.center - 0.5) ** 2)) > first / 4


def test_pgpe_scaled_base_refuses_low_rank_mutations():
    layered = ParameterSpace(TABLE, np.full(6, 0.1, np.float32), [(2, 2)])
    pgpe = PGPE(PGPEConfig(population_size=4), layered)
    decoder = GenomeDecoder(layered)
    ((key, base),) = pgpe.bases().items()
    decoder.add_base(key, base)
    with pytest.raises(ValueError, match="full-rank"):
        decoder.check(pgpe.elite.child(0, 0.1, 1))


@pytest.mark.parametrize(
    "changes, name",
    [
        (dict(population_size=5), "population_size"),
        (dict(max_speed=0.0), "max_speed"),
        (dict(momentum=1.0), "momentum"),
        (dict(stdev_max_change=1.0), "stdev_max_change"),
        (dict(initial="ones"), "initial"),
        (dict(radius_init=-1.0), "radius_init"),
    ],
)
def test_pgpe_bad_hyperparameters_are_named(changes, name):
    with pytest.raises(ValueError, match=name):
        PGPE(PGPEConfig(**changes), space())


def test_pgpe_step_size_and_radius_defaults_follow_max_speed():
    config = PGPEConfig(max_speed=0.02)
    assert config.step_size == 0.01 and math.isclose(config.radius, 0.3)
