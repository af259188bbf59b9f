"""The Strategy contract, for every algorithm of the registry (workbench.evolution.ALGORITHMS) and the toy
algorithm of tests/support/toy_algorithm.py (registered while it runs):
ask/tell round trip, typed records, reproducibility, exact resume after a checkpoint in every phase,
foreign and corrupt state refused, and the audit of live set()."""

import dataclasses
import json

import numpy as np
import pytest

from support.toy_algorithm import NAME as TOY
from support.toy_algorithm import toy_registered
from workbench.evolution import (
    EvaluationRequest,
    EvaluationResult,
    GenerationRecord,
    Genome,
    GenomeDecoder,
    NoiseTable,
    ParameterSpace,
    Strategy,
)
from workbench.evolution.distribution_search import DistributionSearch
from workbench.evolution.genome import base_shapes
from workbench.training import ALGORITHMS, load_checkpoint, save_checkpoint

TABLE = NoiseTable.shared(2**16, seed=3)
SMALL = {  # a few members each, so that three generations take milliseconds
    "GeneticAlgorithm": dict(  # self-adapted sigma: its draws are part of what a resume must continue exactly
        population_size=8, truncation=2, sigma=0.1, elite_candidates=2, elite_episodes=2, sigma_adaptation=0.3
    ),
    "EvolutionStrategy": dict(population_size=8, sigma=0.1, learning_rate=0.05),
    "NoveltySearchES": dict(population_size=6, sigma=0.1, learning_rate=0.05, meta_population_size=2),
    "AugmentedRandomSearch": dict(directions=4, top_directions=2, step_size=0.05, noise=0.1, center_episodes=1),
    "PGPE": dict(population_size=8, max_speed=0.1, center_episodes=1),
    "CMAES": dict(population_size=6, sigma_init=0.1, center_episodes=1),
    "SepCMAES": dict(population_size=6, sigma_init=0.1, noise_handling=True),  # its re-plays resume exactly too
    "SNES": dict(population_size=6, sigma_init=0.1, center_episodes=1),
    "CEM": dict(population_size=8, sigma_init=0.1),
    "CRFMNES": dict(population_size=6, sigma_init=0.1, center_episodes=1),
    "XNES": dict(population_size=6, sigma_init=0.1),
    "MapElites": dict(population_size=6, initial_population=6, sigma=0.1, cells=4, descriptor_bounds=((-1, 1), (-1, 1))),
    "CMAME": dict(emitters=2, population_size=5, sigma_init=0.1, cells=4, descriptor_bounds=((-1, 1), (-1, 1))),
}


TUNABLE = dict(
    ars="noise",
    pgpe="max_speed",
    **dict.fromkeys(("cma-es", "sep-cma-es", "snes", "cem", "cr-fm-nes", "xnes", "cma-me", "cma-mae"), "population_size"),
)


def make(algorithm, seed=0, dims=6):
    spec = ALGORITHMS[algorithm]
    small = SMALL.get(spec.strategy.kind, {})  # an algorithm without an entry runs with its defaults
    config = spec.config_for({k: v for k, v in small.items() if k not in spec.defaults})
    return spec.strategy(config, ParameterSpace(TABLE, np.full(dims, 0.1, np.float32)), seed=seed)


def results_for(strategy, requests):
    """A noisy sphere as the return; the first two weights as the behaviour."""
    decoder = GenomeDecoder(strategy.space)
    for key, weights in strategy.bases().items():
        decoder.add_base(key, weights)
    results = []
    for request in requests:
        theta = decoder.decode(request.genome)
        value = -float(np.sum(np.square(theta, dtype=np.float64))) + float(np.sin(theta.sum() * 1e3))
        results.append(EvaluationResult([value] * request.episodes, np.repeat(theta[None, :2], request.episodes, 0)))
    return results


def one_round(strategy):
    strategy.tell(results_for(strategy, strategy.ask()))


def run(strategy, generations):
    while strategy.generation < generations:
        one_round(strategy)
    return strategy


def checkpointed(strategy, directory):
    """The strategy as it comes back from a checkpoint on disk (JSON + npz)."""
    path = save_checkpoint(str(directory), strategy.generation, {"strategy": strategy.state_dict()})
    _, state = load_checkpoint(path)
    return type(strategy).from_state(state["strategy"], strategy.space)


@pytest.fixture(params=sorted(ALGORITHMS) + [TOY])
def algorithm(request):
    if request.param != TOY:
        yield request.param
        return
    with toy_registered() as name:
        yield name


def test_ask_tell_round_trip_and_typed_records(algorithm):
    strategy = make(algorithm)
    assert isinstance(strategy, Strategy) and strategy.history == []
    assert strategy.elite is None or isinstance(strategy.elite, Genome)  # ES centers are elites from the start
    requests = strategy.ask()
    assert requests == strategy.ask() and all(isinstance(r, EvaluationRequest) for r in requests)
    assert strategy.phase in {r.phase for r in requests}  # a round may also carry other roles (ES: its center)
    with pytest.raises(ValueError, match="one result per request"):
        strategy.tell([[0.0]] * (len(requests) + 1))
    assert strategy.ask() == requests  # a refused tell consumes nothing
    run(strategy, 3)
    assert [r.generation for r in strategy.history] == [0, 1, 2] and isinstance(strategy.elite, Genome)
    for record in strategy.history:
        assert isinstance(record, GenerationRecord) and record.evaluations > 0
        assert record.max >= record.median and set(record.extras) <= set(type(strategy).EXTRAS)
        assert record.hyperparameters == dataclasses.asdict(strategy.config)
        assert GenerationRecord.from_json(json.loads(json.dumps(record.to_json()))) == record
    bases = strategy.bases()
    n = strategy.space.num_parameters
    assert isinstance(bases, dict) and all(w.shape in base_shapes(n) for w in bases.values())


def test_same_seed_same_history_other_seed_another(algorithm):
    reference = run(make(algorithm, seed=4), 3).history
    assert run(make(algorithm, seed=4), 3).history == reference
    assert run(make(algorithm, seed=5), 3).history != reference
    for seed in (-1, 1.5, "4"):
        with pytest.raises(ValueError, match="seed must be an integer >= 0"):
            make(algorithm, seed=seed)


def test_resume_from_a_checkpoint_is_exact_in_every_phase(algorithm, tmp_path):
    reference = run(make(algorithm, seed=2), 3)
    rounds = 0
    counter = make(algorithm, seed=2)
    while counter.generation < 3:
        one_round(counter)
        rounds += 1
    phases = set()
    for stop_after in range(rounds):
        partial = make(algorithm, seed=2)
        for _ in range(stop_after):
            one_round(partial)
        phases.add(partial.phase)
        if stop_after % 2:
            partial.ask()  # asked but not told: the same requests come back after the resume
        resumed = checkpointed(partial, tmp_path / f"stop-{stop_after}")
        assert resumed.ask() == partial.ask()
        run(resumed, 3)
        assert resumed.history == reference.history, f"stopped after round {stop_after} ({partial.phase})"
        assert resumed.elite == reference.elite
    one_round_each = ("es", "ars", "pgpe", "cma-es", "sep-cma-es", "snes", "cem", "cr-fm-nes", "xnes")
    one_round_each += ("map-elites", "cma-me", "cma-mae")
    assert len(phases) >= (1 if algorithm in one_round_each else 2)  # every kind of round was a stopping point


def test_a_warm_start_searches_from_the_given_weights_before_the_first_round(algorithm, tmp_path):
    strategy = make(algorithm, seed=6)
    n = strategy.space.num_parameters
    weights = np.linspace(-0.3, 0.3, n, dtype=np.float32)
    if not ALGORITHMS[algorithm].has_center:  # seed chains from random initialisations
        with pytest.raises(ValueError, match="init_from"):
            strategy.start_from(weights)
        return
    for bad in (np.ones(n + 1), np.full(n, np.nan)):
        with pytest.raises(ValueError, match="weights must be"):
            strategy.start_from(bad)
    strategy.start_from(weights)
    decoder = GenomeDecoder(strategy.space)
    for key, base in strategy.bases().items():
        decoder.add_base(key, base)
    centers = [r.genome for r in strategy.ask() if r.phase == "center"]  # what the round plays of the center
    elite = [] if strategy.elite is None else [strategy.elite]  # quality diversity: no elite before the archive fills
    for genome in centers + elite:
        np.testing.assert_array_equal(decoder.decode(genome), weights)
    with pytest.raises(ValueError, match="started already"):
        strategy.start_from(weights)
    run(strategy, 2)
    with pytest.raises(ValueError, match="started already"):
        checkpointed(strategy, tmp_path).start_from(weights)
    if algorithm in ("es", "ars", "pgpe"):  # from the weights a cold start begins with, the same run
        cold = run(make(algorithm, seed=6), 2)
        twin = make(algorithm, seed=6)
        twin.start_from(twin.center.copy())
        assert run(twin, 2).history == cold.history


def test_map_policy_maps_the_search_mean_or_is_refused_naming_preserve_policy(algorithm):
    strategy = run(make(algorithm, seed=4), 1)
    if not isinstance(strategy, DistributionSearch):  # no single search mean to keep the same policy
        with pytest.raises(ValueError, match="preserve_policy"):
            strategy.map_policy(lambda weights: weights)
        return

    def decoded(genome):
        decoder = GenomeDecoder(strategy.space)
        for key, base in strategy.bases().items():
            decoder.add_base(key, base)
        return decoder.decode(genome)

    before = decoded(strategy.elite).astype(np.float64)
    strategy.map_policy(lambda weights: 2 * weights + 0.5)
    np.testing.assert_allclose(decoded(strategy.elite), 2 * before + 0.5, rtol=1e-6)
    requests = strategy.ask()  # the next round's members are drawn around the mapped mean
    members = np.stack([decoded(r.genome) for r in requests if r.phase == "population"])
    assert np.linalg.norm(members.mean(0) - (2 * before + 0.5)) < np.linalg.norm(members.mean(0) - before)
    with pytest.raises(ValueError, match="mapped mean"):
        strategy.map_policy(lambda weights: weights[:-1])


def test_foreign_and_corrupt_states_are_refused(algorithm):
    strategy = run(make(algorithm), 1)
    strategy_class = type(strategy)
    others = [a for a in ALGORITHMS if ALGORITHMS[a].strategy is not strategy_class]
    with pytest.raises(ValueError, match=f"not an? {strategy_class.kind} state"):
        strategy_class.from_state(make(others[0]).state_dict(), strategy.space)
    with pytest.raises(ValueError, match="another parameter space"):
        strategy_class.from_state(strategy.state_dict(), ParameterSpace(TABLE, np.ones(7, np.float32)))
    own_keys = set(strategy.state_dict()) - {"kind", "version", "space", "config"}
    for key in sorted(own_keys):
        state = strategy.state_dict()
        del state[key]
        with pytest.raises(ValueError, match="corrupt"):
            strategy_class.from_state(state, strategy.space)


def test_live_set_is_validated_applied_at_the_next_generation_and_audited(algorithm):
    strategy = run(make(algorithm), 1)
    one_round(strategy) if strategy.phase != make(algorithm).phase else None  # mid-generation where there is one
    name = TUNABLE.get(algorithm, "sigma")
    before = getattr(strategy.config, name)
    strategy.set(**{name: before * 2})
    assert getattr(strategy.config, name) == before and strategy.hyperparameters.pending == {name: before * 2}
    with pytest.raises(ValueError, match=name):
        strategy.set(**{name: -1.0})
    with pytest.raises(ValueError, match=rf"unknown \w+Config hyperparameters \['no_such_setting'\]; known: \[.*'{name}'"):
        strategy.set(no_such_setting=1)
    generation = strategy.generation
    run(strategy, generation + 2)
    assert getattr(strategy.config, name) == before * 2 and not strategy.hyperparameters.pending
    assert strategy.hyperparameters.trail == [{"generation": generation + 1, name: before * 2}]
    by_generation = {r.generation: r.hyperparameters[name] for r in strategy.history}
    assert by_generation[generation] == before and by_generation[generation + 1] == before * 2
