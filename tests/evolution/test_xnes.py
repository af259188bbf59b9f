"""xNES: given the same draws and the same fitness values, the update equals the `cmaes` package's XNES to rounding
over many generations; it learns a rotated ellipsoid, which a diagonal covariance cannot; it refuses a space too
large for a full covariance."""

import numpy as np
import pytest

from support import InjectedDraws, module_available, requires_component
from workbench.evolution import XNES, CMAConfig, EvaluationResult, NoiseTable, ParameterSpace
from workbench.evolution.xnes import XNESUpdate


@pytest.mark.parametrize(("n", "population"), [(4, None), (9, 14)])
def test_the_update_equals_the_cmaes_packages_xnes(n, population):
    requires_component(module_available("cmaes"), "cmaes (pip install -e '.[dev]')")
    import cmaes

    rng = np.random.default_rng(n)
    scales = 10 ** rng.uniform(-1.5, 1.5, n)

    def f(x):
        return float(np.sum((scales * (x - 0.5)) ** 2))

    mean = rng.normal(size=n)
    reference = cmaes.XNES(mean=mean.copy(), sigma=0.8, population_size=population, seed=0)
    ours = XNESUpdate(mean, 0.8, population)
    assert ours.population_size == reference.population_size
    draws = InjectedDraws()
    reference._rng = draws  # its only draws: one z per ask()
    for generation in range(120):
        z = rng.normal(size=(ours.population_size, n))
        draws.rows.extend(z)
        solutions = [reference.ask() for _ in range(ours.population_size)]
        values = [f(x) for x in solutions]
        reference.tell(list(zip(solutions, values)))
        ours.tell(z, -np.array(values))
        assert np.allclose(ours.mean, reference._mean, rtol=1e-7, atol=1e-10), generation
        assert ours.sigma == pytest.approx(reference._sigma, rel=1e-7), generation
        assert np.allclose(ours.B, reference._B, rtol=1e-6, atol=1e-9), generation


def test_it_learns_a_rotated_ellipsoid():
    n = 6
    rotation, _ = np.linalg.qr(np.random.default_rng(0).normal(size=(n, n)))
    weights = 10.0 ** np.arange(n)

    def rotated_ellipsoid(x):
        return -((x @ rotation) ** 2 @ weights)

    space = ParameterSpace(NoiseTable.shared(2**16, seed=3), np.ones(n, np.float32))
    strategy = XNES(CMAConfig(sigma_init=1.0, initial="random"), space, seed=0)
    start = -rotated_ellipsoid(strategy.update.mean[None])[0]
    for _ in range(400):  # converged by then (a flat fitness restarts it later)
        requests = strategy.ask()
        values = rotated_ellipsoid(strategy.members())
        strategy.tell([EvaluationResult([v]) for v in values])
    assert -rotated_ellipsoid(strategy.update.mean[None])[0] < 1e-6 * start
    assert strategy.update.condition() > 1e3 and len(requests) == strategy.update.population_size


def test_a_space_too_large_for_a_full_covariance_is_refused():
    space = ParameterSpace(NoiseTable.shared(2**16, seed=3), np.ones(5001, np.float32))
    with pytest.raises(ValueError, match="XNES keeps a full 5001 x 5001 covariance.*use sep-cma-es"):
        XNES(CMAConfig(), space)
