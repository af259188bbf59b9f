"""CR-FM-NES: given the same draws and the same fitness values, the update equals the authors' reference
implementation (the crfmnes package) to rounding over many generations; members travel as mirrored offsets on
a [mean, scales, direction] base and decode to the distribution's own samples; it learns a problem with one
dominant direction, which a diagonal covariance cannot; bad settings are named."""

import numpy as np
import pytest

from support import module_available, requires_component
from workbench.evolution import (
    CRFMNES,
    CMAConfig,
    CRFMNESConfig,
    EvaluationResult,
    GenomeDecoder,
    NoiseTable,
    ParameterSpace,
    SepCMAES,
)
from workbench.evolution.crfmnes import CRFMNESUpdate, crfmnes_population_size


def reference_run(n, lam, generations, seed):
    """(the reference's states per generation, the draws and evaluations we replay) on a random quadratic."""
    requires_component(module_available("crfmnes"), "crfmnes (pip install -e '.[dev]')")
    import crfmnes.alg as alg

    rng = np.random.default_rng(seed)
    scales = 10 ** rng.uniform(-2, 2, n)

    def f(x):
        return float(np.sum((scales * (x[:, 0] - 1)) ** 2))

    v = rng.normal(size=n) / np.sqrt(n)
    mean, sigma = rng.normal(size=n), 0.7
    draws = [rng.normal(size=(n, lam // 2)) for _ in range(generations)]
    reference = alg.CRFMNES(n, f, mean.reshape(n, 1).copy(), sigma, lam, v=v.reshape(n, 1).copy(), use_constraint_violation=False)
    feed = iter(draws)
    original = alg.np.random.randn
    alg.np.random.randn = lambda *shape: next(feed)  # its only draws: one_iteration's zhalf (d x lambda/2)
    try:
        states, evaluations = [], []
        for _ in range(generations):
            _, evals, _ = reference.one_iteration()
            evaluations.append(evals)
            states.append(
                {
                    "mean": reference.m[:, 0].copy(),
                    "sigma": reference.sigma,
                    "D": reference.D[:, 0].copy(),
                    "v": reference.v[:, 0].copy(),
                    "pc": reference.pc[:, 0].copy(),
                    "ps": reference.ps[:, 0].copy(),
                }
            )
    finally:
        alg.np.random.randn = original
    return mean, sigma, v, draws, evaluations, states


@pytest.mark.parametrize(("n", "lam"), [(10, 10), (3, 6), (25, 40)])  # n < 5: a negative c1, as the reference; 40: chunks
def test_the_update_equals_the_reference_implementation(n, lam):
    mean, sigma, v, draws, evaluations, states = reference_run(n, lam, 40, seed=n)
    update = CRFMNESUpdate(mean, sigma, lam, v)
    for generation, (zhalf, evals, state) in enumerate(zip(draws, evaluations, states)):
        z = np.concatenate([zhalf.T, -zhalf.T])  # the reference's mirrored columns, as rows
        update.tell(z, -np.asarray(evals))  # it minimises; we maximise
        for name in ("mean", "D", "v", "pc", "ps"):
            assert np.allclose(getattr(update, name), state[name], rtol=1e-8, atol=1e-12), (generation, name)
        assert update.sigma == pytest.approx(state["sigma"], rel=1e-8), generation
    assert update.generation == 40


def space(n=12, size=2**16):
    return ParameterSpace(NoiseTable.shared(size, seed=3), np.ones(n, np.float32))


def test_members_are_mirrored_offsets_that_decode_to_the_distributions_samples():
    strategy = CRFMNES(CRFMNESConfig(sigma_init=0.3, initial="zeros"), space(), seed=1)
    requests = strategy.ask()
    assert len(requests) == crfmnes_population_size(12) == 12  # 4 + floor(3 ln 12) = 11, made even
    base_key = requests[0].genome.init
    base = strategy.bases()[base_key]
    assert base.shape == (3, 12)
    offsets = [r.genome.mutations[0][0] for r in requests]
    signs = [r.genome.mutations[0][1] for r in requests]
    assert offsets[:6] == offsets[6:] and signs == [1.0] * 6 + [-1.0] * 6
    decoder = GenomeDecoder(strategy.space)
    decoder.add_base(base_key, base)
    decoded = np.stack([decoder.decode_full(r.genome) for r in requests])
    assert np.allclose(decoded, strategy.members(), rtol=1e-5, atol=1e-6)
    assert strategy.update.member_base()[2] @ strategy.update.member_base()[2] == pytest.approx(
        np.sqrt(1 + strategy.update.v @ strategy.update.v) - 1
    )


def run(strategy, objective, generations):
    for _ in range(generations):
        requests = strategy.ask()
        x = strategy.members()
        values = objective(x)
        strategy.tell([EvaluationResult([value]) for value in values] + [EvaluationResult([0.0])] * (len(requests) - len(x)))
    return strategy


def test_it_learns_one_dominant_direction_that_a_diagonal_cannot():
    n = 20
    direction = np.ones(n) / np.sqrt(n)

    def cigar(x):  # curvature 1 along the diagonal, 1e4 across it (rotated: no axis is special); optimum at 3
        x = x - 3.0
        along = x @ direction
        return -(along**2 + 1e4 * (np.sum(x * x, axis=1) - along**2))

    config = dict(sigma_init=1.0, initial="zeros")
    strategy = run(CRFMNES(CRFMNESConfig(**config), space(n), seed=0), cigar, 800)
    diagonal = run(SepCMAES(CMAConfig(**config), space(n), seed=0), cigar, 300)  # stuck at about 145 from gen 150 on
    assert -cigar(strategy.update.mean[None])[0] < 1e-4 < 100 < -cigar(diagonal.update.mean[None])[0]
    vbar = strategy.update.v / np.linalg.norm(strategy.update.v)
    assert abs(vbar @ direction) > 0.9 and np.linalg.norm(strategy.update.v) > 10  # it found the long axis


def test_bad_settings_are_named():
    with pytest.raises(ValueError, match="population_size of CR-FM-NES must be even"):
        CRFMNESConfig(population_size=9).validated()
    with pytest.raises(ValueError, match="sigma must be"):
        CRFMNESUpdate(np.zeros(3), 0.0)
    with pytest.raises(ValueError, match="v must be a finite non-zero vector"):
        CRFMNESUpdate(np.zeros(3), 1.0, v=np.zeros(3))
    assert CRFMNESUpdate(np.zeros(2001), 1.0).axes() is None  # a dense spectrum above 2,000 parameters: not drawn
