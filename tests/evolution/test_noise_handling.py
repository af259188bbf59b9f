"""Noise handling (UH-CMA-ES, workbench/evolution/noise_handling.py): its rank-change measure and smoothing equal
pycma's NoiseHandler on the same values, and in a strategy the re-played members raise sigma under noise only."""

import numpy as np
import pytest

cma = pytest.importorskip("cma")

from workbench.evolution import EvaluationResult, GenomeDecoder, NoiseTable, ParameterSpace  # noqa: E402
from workbench.evolution.noise_handling import UncertaintyHandler, rank_change, reevaluation_count, sigma_factor  # noqa: E402
from workbench.training import ALGORITHMS  # noqa: E402

TABLE = NoiseTable.shared(2**16, seed=3)


@pytest.mark.parametrize(
    "lam, replayed, noisy", [(14, [0, 1, 2], True), (14, [0, 1], False), (40, [0, 1, 5, 9], True), (6, [0, 3], True)]
)
def test_the_measure_and_its_smoothing_equal_pycmas_noise_handler(lam, replayed, noisy):
    rng = np.random.default_rng(lam)
    ours, reference = UncertaintyHandler(30), cma.NoiseHandler(30)
    assert ours.alpha == reference.alphasigma == sigma_factor(30)
    for _ in range(6):
        costs = rng.normal(size=lam)
        recosts = costs.copy()
        recosts[replayed] = rng.normal(size=len(replayed)) if noisy else costs[replayed] + 1e-9 * rng.normal(size=len(replayed))
        reference.fit, reference.fitre, reference.idx = list(costs), list(recosts), np.asarray(replayed)
        _, measures = reference.update_measure()
        assert rank_change(costs, recosts, replayed) == pytest.approx(float(np.mean(measures)), abs=1e-12)
        factor = ours.measure(costs, recosts, replayed)
        assert ours.noise_s == pytest.approx(reference.noiseS, abs=1e-12)
        assert factor == reference.treat()
    assert (ours.noise_s > 0) == noisy  # noise-free re-plays keep their ranks


def test_the_replay_count_is_two_plus_a_twentieth_of_lambda_rounded_at_random():
    rng = np.random.default_rng(0)
    counts = [reevaluation_count(14, rng) for _ in range(4000)]
    assert set(counts) == {2, 3}
    assert np.mean(counts) == pytest.approx(2.7, abs=0.03)
    assert reevaluation_count(2, rng) <= 2
    with pytest.raises(ValueError, match="re-played"):
        rank_change([1.0, 2.0], [1.0, 2.0], [])


def run_sep_cma(noise, noise_handling, generations=60, seed=0):
    """sep-CMA-ES on a sphere of 10 parameters whose returns carry Gaussian noise of the given size."""
    spec = ALGORITHMS["sep-cma-es"]
    config = spec.config_for(dict(population_size=14, sigma_init=0.1, initial="zeros", noise_handling=noise_handling))
    strategy = spec.strategy(config, ParameterSpace(TABLE, np.full(10, 0.1, np.float32)), seed=seed)
    rng = np.random.default_rng(seed)
    phases = []
    while strategy.generation < generations:
        requests = strategy.ask()
        phases.append([r.phase for r in requests])
        decoder = GenomeDecoder(strategy.space)
        for key, base in strategy.bases().items():
            decoder.add_base(key, base)
        results = []
        for request in requests:
            theta = decoder.decode(request.genome).astype(np.float64)
            value = -float(np.sum(np.square(theta - 1.0))) + noise * rng.normal()
            results.append(EvaluationResult([value] * request.episodes))
        strategy.tell(results)
    return strategy, phases


def test_replays_raise_sigma_where_noise_dominates_and_leave_a_noise_free_run_alone():
    plain, _ = run_sep_cma(noise=50.0, noise_handling=False)
    handled, phases = run_sep_cma(noise=50.0, noise_handling=True)
    assert all(p.count("replay") in (2, 3) and p[: p.index("replay")].count("population") == 14 for p in phases)
    assert handled.update.step_size > 3 * plain.update.step_size  # pure noise: sigma kept from shrinking
    assert all(r.extras["noise_measure"] > 0 for r in handled.history[5:])
    assert handled.history[0].evaluations == 14 + phases[0].count("replay")
    exact, _ = run_sep_cma(noise=0.0, noise_handling=True)  # re-plays repeat their returns: sigma never raised
    assert all(r.extras["noise_measure"] <= 0 for r in exact.history)
    assert "noise_measure" not in plain.history[0].extras


def test_noise_handling_can_be_switched_live_and_is_validated():
    spec = ALGORITHMS["sep-cma-es"]
    strategy = spec.strategy(spec.config_for(dict(population_size=8)), ParameterSpace(TABLE, np.full(6, 0.1, np.float32)))
    assert strategy.noise is None
    strategy.set(noise_handling=True)
    assert strategy.noise is None  # from the next generation on
    strategy.tell([EvaluationResult([0.0]) for _ in strategy.ask()])
    assert strategy.noise is not None and "replay" in [r.phase for r in strategy.ask()]
    with pytest.raises(ValueError, match="noise_handling"):
        strategy.set(noise_handling="yes")
