"""The CMA-ES update against the `cmaes` package's CMA and SepCMA: the same draws and fitness values injected into
both, the mean, step size, covariance and evolution paths compared over many generations."""

import dataclasses
import math

import cmaes  # the reference (the test extra installs it)
import numpy as np
import pytest

from support import InjectedDraws
from workbench.evolution.cma_update import CovarianceUpdate, DiagonalUpdate, default_population_size, expected_norm


def rosenbrock(x):
    return float(np.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2))


def ellipsoid(x):
    n = x.size
    return float(np.sum(10 ** (6 * np.arange(n) / (n - 1)) * x**2))


def run_both(ours, reference, objective, generations, rng):
    """Injects the same draws into both and tells both the same values; yields after each generation. The reference's
    members are told to ours as its draws (draws_of): a full covariance's eigenvectors are defined up to their signs,
    which rounding decides, so equal draws give equal members only while both decompositions agree in sign."""
    draws = InjectedDraws()
    reference._rng = draws
    for _ in range(generations):
        z = rng.standard_normal((ours.population_size, ours.n))
        draws.rows.extend(z)
        solutions = [reference.ask() for _ in range(ours.population_size)]
        values = [objective(x) for x in solutions]
        reference.tell(list(zip(solutions, values)))
        ours.tell(ours.draws_of(np.array(solutions)), -np.array(values))  # cmaes minimises, ours maximises
        yield


def assert_same_state(ours, reference, generation):
    """Equal to rounding: rounding differences grow with C's condition (up to 1e15 here), so each quantity is
    compared at its own scale: the mean at the search distribution's (sigma times C's largest axis), the step size
    and paths relatively, C at its largest entry's."""
    message = f"generation {generation}"
    scale = reference._sigma * math.sqrt(float(np.abs(reference._C).max()))
    np.testing.assert_allclose(ours.mean, reference._mean, rtol=1e-9, atol=1e-5 * scale, err_msg=message)
    assert ours.sigma == pytest.approx(reference._sigma, rel=1e-6), message
    for mine, theirs in ((ours.p_s, reference._p_sigma), (ours.p_c, reference._pc)):
        np.testing.assert_allclose(mine, theirs, rtol=1e-5, atol=1e-6 * float(np.abs(theirs).max()), err_msg=message)
    np.testing.assert_allclose(ours.C, reference._C, rtol=1e-5, atol=1e-6 * float(np.abs(reference._C).max()), err_msg=message)


@pytest.mark.parametrize("n, objective", [(2, rosenbrock), (5, ellipsoid), (12, rosenbrock)])
def test_the_full_update_equals_cmaes_over_many_generations(n, objective):
    rng = np.random.default_rng(n)
    mean = rng.uniform(-2, 2, n)
    ours = CovarianceUpdate(mean, 0.7)
    reference = cmaes.CMA(mean=mean.copy(), sigma=0.7)
    assert ours.population_size == reference.population_size == default_population_size(n)
    np.testing.assert_allclose(ours.weights, reference._weights, rtol=1e-12)
    for name, theirs in (("c_1", "_c1"), ("c_mu", "_cmu"), ("c_c", "_cc"), ("c_s", "_c_sigma"), ("d_s", "_d_sigma")):
        assert getattr(ours, name) == pytest.approx(getattr(reference, theirs), rel=1e-12), name
    assert ours.mu_eff == pytest.approx(reference._mu_eff, rel=1e-12)
    assert ours.chi_n == pytest.approx(reference._chi_n, rel=1e-12)
    for generation, _ in enumerate(run_both(ours, reference, objective, 150, rng)):
        assert_same_state(ours, reference, generation)
    assert objective(ours.mean) < objective(mean) / 10  # it optimised: the comparison is not of a stalled run


@pytest.mark.parametrize("n, objective", [(3, ellipsoid), (40, rosenbrock)])
def test_the_diagonal_update_equals_cmaes_sepcma_with_its_rates(n, objective):
    rng = np.random.default_rng(100 + n)
    mean = rng.uniform(-2, 2, n)
    reference = cmaes.SepCMA(mean=mean.copy(), sigma=0.5)
    # cmaes's SepCMA scales c_mu by (n + 2) / 3 but keeps the full form's c_1 (ours splits Ros & Hansen's c_cov):
    # its rates are injected, the update's form is what is compared. Its weights are ln(mu + 1) - ln i, ours (the
    # tutorial's and pycma's) ln((lambda + 1) / 2) - ln i: the same for an odd lambda (7 and 15 here)
    assert reference.population_size % 2 == 1
    ours = DiagonalUpdate(mean, 0.5, learning_rates=dict(c_1=reference._c1, c_mu=reference._cmu))
    np.testing.assert_allclose(ours.weights[: ours.mu], reference._weights, rtol=1e-12)
    for name, theirs in (("c_c", "_cc"), ("c_s", "_c_sigma"), ("d_s", "_d_sigma")):
        assert getattr(ours, name) == pytest.approx(getattr(reference, theirs), rel=1e-12), name
    for generation, _ in enumerate(run_both(ours, reference, objective, 200, rng)):
        assert_same_state(ours, reference, generation)
    assert objective(ours.mean) < objective(mean) / 10


def test_the_diagonal_rates_are_ros_and_hansens():
    n = 100
    update = DiagonalUpdate(np.zeros(n), 1.0)
    mu_eff = update.mu_eff
    c_cov = (n + 2) / 3 * (2 / (mu_eff * (n + math.sqrt(2)) ** 2) + (1 - 1 / mu_eff) * (2 * mu_eff - 1) / ((n + 2) ** 2 + mu_eff))
    assert update.c_1 + update.c_mu == pytest.approx(c_cov)
    assert update.c_1 == pytest.approx(c_cov / mu_eff)
    assert update.c_c == pytest.approx(4 / (n + 4))


def test_expected_norm_is_close_to_the_mean_norm_of_draws():
    draws = np.random.default_rng(0).standard_normal((20000, 30))
    assert expected_norm(30) == pytest.approx(np.linalg.norm(draws, axis=1).mean(), rel=2e-3)


def test_state_round_trip_continues_identically():
    rng = np.random.default_rng(5)
    for kind in (CovarianceUpdate, DiagonalUpdate):
        first = kind(np.ones(6), 0.3)
        for _ in range(5):
            z = rng.standard_normal((first.population_size, 6))
            first.tell(z, -np.array([ellipsoid(x) for x in first.sample(z)]))
        second = kind(np.zeros(6), 1.0)
        second.load(first.state_dict())
        z = rng.standard_normal((first.population_size, 6))
        values = -np.array([ellipsoid(x) for x in first.sample(z)])
        first.tell(z, values)
        second.tell(z, values)
        np.testing.assert_array_equal(first.mean, second.mean)
        np.testing.assert_array_equal(first.covariance(), second.covariance())
        assert first.sigma == second.sigma


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="mean must be a vector"):
        CovarianceUpdate(np.zeros(1), 1.0)
    with pytest.raises(ValueError, match="sigma must be"):
        CovarianceUpdate(np.zeros(3), 0.0)
    with pytest.raises(ValueError, match="population_size must be at least 4"):
        DiagonalUpdate(np.zeros(3), 1.0, population_size=3)
    with pytest.raises(ValueError, match="unknown learning rates"):
        DiagonalUpdate(np.zeros(3), 1.0, learning_rates=dict(c_one=0.1))
    update = CovarianceUpdate(np.zeros(3), 1.0)
    with pytest.raises(ValueError, match=r"draws must be \[7, 3\]"):
        update.tell(np.zeros((6, 3)), np.zeros(6))
    with pytest.raises(ValueError, match=r"fitness must be \[7\]"):
        update.tell(np.zeros((7, 3)), np.zeros(6))
    with pytest.raises(ValueError, match="non-finite"):
        update.load(dict(update.state_dict(), sigma=float("nan")))


@pytest.mark.parametrize("kind", [CovarianceUpdate, DiagonalUpdate])
def test_a_variable_number_of_parents_updates_as_a_population_of_twice_as_many_with_positive_weights(kind):
    """CMA-ME's "filter" selection recombines as many parents as entered the archive: tell(..., parents=k) must equal
    the same update state with 2k members (whose default positive weights are ln(k + 1/2) - ln i) told the best 2k,
    its negative weights (active CMA, full form) set to zero, generation after generation with k changing."""
    n, lam = 7, 16
    rng = np.random.default_rng(11)
    ours = kind(rng.uniform(-1, 1, n), 0.4, population_size=lam)
    for generation, parents in enumerate([2, 3, 8, 5, 2, 8, 6, 4]):  # 2k >= 4 members
        z = rng.standard_normal((lam, n))
        fitness = -np.array([ellipsoid(x) for x in ours.sample(z)])
        reference = kind(np.zeros(n), 1.0, population_size=2 * parents)
        reference.load(ours.state_dict())
        reference._use(dataclasses.replace(reference.recombination, weights=np.maximum(reference.weights, 0.0)))
        ranked = z[np.argsort(-fitness, kind="stable")]
        recombination = ours.parents_recombination(parents)
        assert recombination.mu == parents and recombination.weights[parents:].sum() == 0
        np.testing.assert_allclose(recombination.weights[:parents], reference.weights[:parents], rtol=1e-12)
        assert recombination.mu_eff == pytest.approx(reference.mu_eff, rel=1e-12)
        ours.tell(z, fitness, parents=parents)
        reference.tell(ranked[: 2 * parents], -np.arange(2 * parents, dtype=np.float64))
        message = f"generation {generation}, {parents} parents"
        np.testing.assert_allclose(ours.mean, reference.mean, rtol=1e-12, atol=1e-14, err_msg=message)
        np.testing.assert_allclose(ours.covariance(), reference.covariance(), rtol=1e-10, atol=1e-14, err_msg=message)
        assert ours.sigma == pytest.approx(reference.sigma, rel=1e-12), message
        assert ours.weights is ours._default.weights and ours.mu == lam // 2  # the default recombination is back
    ours.tell(z, fitness, parents=1)  # one parent: the mean moves to the best member
    assert ours.parents_recombination(1).weights[0] == 1.0
    with pytest.raises(ValueError, match=r"parents must be in \[1, 16\]"):
        ours.tell(z, fitness, parents=0)
