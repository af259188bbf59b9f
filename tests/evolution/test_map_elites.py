"""MAP-Elites: the archive fills and its elites improve, seed-chain genomes, Iso+LineDD's lineage nodes decoded as
the evaluator decodes their shipped form and written once each, rejected candidates counted, the archive's shape
fixed for a run, and bad settings refused by name."""

from __future__ import annotations

import math

import numpy as np
import pytest

from workbench.evolution import EvaluationResult, GenomeDecoder, NoiseTable, ParameterSpace, lineage
from workbench.evolution.lineage import LineChild
from workbench.evolution.map_elites import MapElites, MapElitesConfig

TABLE = NoiseTable.shared(2**16, seed=5)


def make(seed=0, **changes):
    settings = dict(population_size=32, initial_population=32, sigma=0.05, cells=8, descriptor_bounds=[[-0.5, 0.5]] * 2)
    config = MapElitesConfig(**dict(settings, **changes)).validated()
    return MapElites(config, ParameterSpace(TABLE, np.full(6, 0.1, np.float32)), seed=seed)


def evaluate(strategy, requests, spoil=None):
    """Objective: minus the squared norm of the weights; descriptor: the first two weights (the linear-projection
    problem of the CMA-ME paper, unclipped). spoil(k) may return (return, descriptor) to replace member k's."""
    decoder = GenomeDecoder(strategy.space)
    for key, weights in strategy.bases().items():  # line children's dense bases, as the trainer hands them over
        decoder.add_base(key, weights)
    results = []
    for k, request in enumerate(requests):
        theta = decoder.decode(request.genome).astype(np.float64)
        value, descriptor = -float(theta @ theta), theta[:2]
        if spoil is not None and spoil(k) is not None:
            value, descriptor = spoil(k)
        results.append(EvaluationResult([value] * request.episodes, np.tile(descriptor, (request.episodes, 1))))
    return results


def run(strategy, generations):
    while strategy.generation < generations:
        strategy.tell(evaluate(strategy, strategy.ask()))
    return strategy


def test_the_archive_fills_and_its_elites_improve():
    strategy = run(make(), 30)
    history = strategy.history
    assert [r.generation for r in history] == list(range(30))
    coverage = [r.extras["coverage"] for r in history]
    qd = [r.extras["qd_score"] for r in history]
    assert coverage[-1] > 2 * coverage[0] and coverage == sorted(coverage)  # cells are never lost
    objectives = strategy.archive.objective[strategy.archive.occupied]
    assert qd[-1] == pytest.approx(objectives.sum()) and history[-1].extras["archive_size"] == objectives.size
    assert sum(r.extras["new_cells"] for r in history) == strategy.archive.size
    assert history[-1].elite == pytest.approx(objectives.max()) and history[-1].elite >= history[0].elite
    archive = strategy.archive
    for cell in archive.occupied_cells():  # every elite sits in the cell of its own descriptor
        assert archive.index_of(archive.descriptor[cell][None])[0] == cell


def test_children_are_seed_chains_one_mutation_longer_than_an_archive_elite():
    strategy = run(make(seed=3), 2)
    elites = {g for g in strategy.archive.genomes if g is not None}
    for request in strategy.ask():
        genome = request.genome
        assert request.behaviour and request.phase == "population" and not genome.has_base
        assert genome.parent in elites and genome.mutations[-1][1] == pytest.approx(0.05)


def test_non_finite_returns_and_descriptors_are_left_out_and_counted():
    strategy = make()
    requests = strategy.ask()
    spoiled = {0: (math.nan, np.zeros(2)), 1: (1.0, np.array([math.inf, 0.0])), 2: (1.0, np.array([math.nan, 0.0]))}
    strategy.tell(evaluate(strategy, requests, spoil=spoiled.get))
    record = strategy.history[-1]
    assert record.extras["rejected"] == 3 and strategy.archive.rejected == 3
    assert all(g not in strategy.archive.genomes for g in [requests[k].genome for k in spoiled])


def test_a_descriptor_of_another_dimension_is_refused_naming_both():
    strategy = make()
    requests = strategy.ask()
    results = [EvaluationResult([0.0], np.zeros((1, 3))) for _ in requests]
    with pytest.raises(ValueError, match="descriptors have 3 dimensions; the archive's descriptor_bounds declare 2"):
        strategy.tell(results)
    assert strategy.ask() == requests  # nothing consumed


def test_the_archive_shape_is_fixed_and_the_rest_changes_live():
    strategy = run(make(), 2)
    for change in (dict(cells=9), dict(archive="cvt"), dict(descriptor_bounds=[[0, 1], [0, 1]]), dict(qd_score_offset=-1.0)):
        with pytest.raises(ValueError, match="cannot change during a run: the archive's shape is fixed"):
            strategy.set(**change)
    strategy.set(sigma=0.2, population_size=5)  # from the next generation on
    assert len(strategy.ask()) == 32
    run(strategy, 3)
    requests = strategy.ask()
    assert len(requests) == 5 and all(r.genome.mutations[-1][1] == pytest.approx(0.2) for r in requests)
    run(strategy, 4)
    assert strategy.history[-1].hyperparameters["population_size"] == 5 and strategy.history[-1].evaluations == 5


def test_a_cvt_archive_runs_and_every_setting_is_checked_by_name():
    strategy = run(make(archive="cvt", cells=50), 5)
    assert strategy.archive.kind == "cvt" and strategy.archive.cells == 50 and strategy.archive.size > 5
    with pytest.raises(ValueError, match="descriptor_bounds: quality diversity needs the descriptor space's bounds"):
        make(descriptor_bounds=None)
    for changes, match in (
        (dict(population_size=0), "population_size"),
        (dict(sigma=0.0), "sigma"),
        (dict(archive="hexagon"), "archive must be one of"),
        (dict(cells=0), "cells"),
        (dict(descriptor_bounds=[[0, 1, 2]]), "descriptor_bounds must be"),
        (dict(descriptor_bounds=[[1, 0]]), r"descriptor_bounds\[0\] must have low < high"),
        (dict(descriptor_bounds=[[0, math.inf]]), r"descriptor_bounds\[0\] high"),
        (dict(cells=1000, descriptor_bounds=[[0, 1]] * 3), "above 10,000,000 cells"),
    ):
        with pytest.raises(ValueError, match=match):
            make(**changes)


def decoded_by_an_evaluator(strategy, genome, bases):
    decoder = GenomeDecoder(strategy.space)
    for key, weights in {**strategy.bases(), **bases}.items():
        decoder.add_base(key, weights)
    return decoder.decode(genome)


def test_iso_line_children_decode_as_the_evaluator_decodes_their_shipped_form():
    strategy = run(make(variation="iso_line", line_sigma=0.5), 6)
    requests = strategy.ask()
    assert all(isinstance(node, LineChild) for node in strategy.batch) and len(strategy.bases()) == len(requests)
    for node, request in zip(strategy.batch, requests):
        shipped = decoded_by_an_evaluator(strategy, request.genome, {})
        first, second = strategy.decoder.decode(node.first), strategy.decoder.decode(node.second)
        line = first + np.float32(node.alpha) * (second - first)
        assert np.array_equal(strategy.decoder.decode(node), shipped)  # bit for bit
        assert np.array_equal(strategy.decoder.decode(node), strategy.space.perturb(line, node.offset, node.sigma))
        assert request.genome.has_base and request.genome.mutations == ((node.offset, node.sigma, 0),)
    lines = [node for node in strategy.archive.genomes if isinstance(node, LineChild)]
    assert lines, "line children entered the archive"
    genome, bases = strategy.cell_genome(strategy.archive.genomes.index(lines[0]))
    assert np.array_equal(decoded_by_an_evaluator(strategy, genome, bases), strategy.decoder.decode(lines[0]))
    best = strategy.elite
    assert np.array_equal(
        decoded_by_an_evaluator(strategy, best, strategy.elite_bases()),
        strategy.decoder.decode(strategy.archive.best()["genome"]),
    )


def test_iso_line_fills_the_archive_further_than_gaussian_variation_alone():
    gaussian = run(make(seed=1), 25).archive.size
    iso_line = run(make(seed=1, variation="iso_line", line_sigma=0.5), 25).archive.size
    assert iso_line > gaussian, (iso_line, gaussian)


def test_a_lineage_is_written_once_per_node_and_resumes_exactly(tmp_path):
    from workbench.training import load_checkpoint, save_checkpoint

    strategy = run(make(seed=2, variation="iso_line", line_sigma=0.5), 8)
    strategy.ask()  # asked, not told: the batch is part of the state
    state = strategy.state_dict()
    live = lineage.ancestry([g for g in strategy.archive.genomes if g is not None] + strategy.batch)
    assert len(state["lineage"]["nodes"]) == len(live)  # shared ancestors once each
    path = save_checkpoint(str(tmp_path), strategy.generation, {"strategy": state})
    _, loaded = load_checkpoint(path)
    resumed = MapElites.from_state(loaded["strategy"], strategy.space)
    assert resumed.ask() == strategy.ask() and resumed.bases().keys() == strategy.bases().keys()
    run(strategy, 12)
    run(resumed, 12)
    assert resumed.history == strategy.history
    corrupt = dict(state, lineage=dict(state["lineage"], nodes=state["lineage"]["nodes"][::-1]))
    with pytest.raises(ValueError, match="corrupt lineage|parents come first"):
        MapElites.from_state(corrupt, strategy.space)
    corrupt = dict(state, batch=[len(state["lineage"]["nodes"])])
    with pytest.raises(ValueError, match="lineage index"):
        MapElites.from_state(corrupt, strategy.space)


def test_gaussian_children_of_line_children_and_back():
    strategy = run(make(seed=4, variation="iso_line", line_sigma=0.5), 5)
    strategy.set(variation="gaussian")
    run(strategy, 6)
    strategy.ask()
    nodes = strategy.batch
    mutated_lines = [n for n in nodes if isinstance(n, LineChild) and n.first is n.second and n.alpha == 0.0]
    assert mutated_lines, "a Gaussian child of a line child is a line child of its parent with itself"
    for node in mutated_lines:
        parent = strategy.decoder.decode(node.first)
        assert np.array_equal(strategy.decoder.decode(node), strategy.space.perturb(parent, node.offset, node.sigma))
    with pytest.raises(ValueError, match="variation must be one of"):
        strategy.set(variation="crossover")


def test_a_small_decoder_cache_decodes_the_same_weights():
    strategy = run(make(seed=5, variation="iso_line", line_sigma=0.5), 10)
    nodes = [g for g in strategy.archive.genomes if isinstance(g, LineChild)]
    tiny = lineage.LineageDecoder(strategy.space, cache_bytes=1)  # two nodes at most: ancestors decode again
    for node in nodes:
        assert np.array_equal(tiny.decode(node), strategy.decoder.decode(node))
    assert len(tiny._cache) <= 2
    with pytest.raises(TypeError, match="parent must be a Genome or a LineChild"):
        LineChild(nodes[0], "seed 7", 0.1, 3, 0.01)
    with pytest.raises(ValueError, match="alpha must be finite"):
        LineChild(nodes[0], nodes[0], math.nan, 3, 0.01)
