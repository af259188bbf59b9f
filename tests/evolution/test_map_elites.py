"""MAP-Elites: the archive fills and its elites improve, seed-chain genomes, rejected candidates counted, the
archive's shape fixed for a run, and bad settings refused by name."""

from __future__ import annotations

import math

import numpy as np
import pytest

from workbench.evolution import EvaluationResult, GenomeDecoder, NoiseTable, ParameterSpace
from workbench.evolution.map_elites import MapElites, MapElitesConfig

TABLE = NoiseTable.shared(2**16, seed=5)


def make(seed=0, **changes):
    settings = dict(batch_size=32, initial_population=32, sigma=0.05, cells=8, descriptor_bounds=[[-0.5, 0.5]] * 2)
    config = MapElitesConfig(**dict(settings, **changes)).validated()
    return MapElites(config, ParameterSpace(TABLE, np.full(6, 0.1, np.float32)), seed=seed)


def evaluate(strategy, requests, spoil=None):
    """Objective: minus the squared norm of the weights; descriptor: the first two weights (the linear-projection
    problem of the CMA-ME paper, unclipped). spoil(k) may return (return, descriptor) to replace member k's."""
    decoder = GenomeDecoder(strategy.space)
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
    strategy.set(sigma=0.2, batch_size=5)  # from the next generation on
    assert len(strategy.ask()) == 32
    run(strategy, 3)
    requests = strategy.ask()
    assert len(requests) == 5 and all(r.genome.mutations[-1][1] == pytest.approx(0.2) for r in requests)
    run(strategy, 4)
    assert strategy.history[-1].hyperparameters["batch_size"] == 5 and strategy.history[-1].evaluations == 5


def test_a_cvt_archive_runs_and_every_setting_is_checked_by_name():
    strategy = run(make(archive="cvt", cells=50), 5)
    assert strategy.archive.kind == "cvt" and strategy.archive.cells == 50 and strategy.archive.size > 5
    with pytest.raises(ValueError, match="descriptor_bounds: MAP-Elites needs the descriptor space's bounds"):
        make(descriptor_bounds=None)
    for changes, match in (
        (dict(batch_size=0), "batch_size"),
        (dict(sigma=0.0), "sigma"),
        (dict(archive="hexagon"), "archive must be one of"),
        (dict(cells=0), "cells"),
        (dict(descriptor_bounds=[[0, 1, 2]]), "descriptor_bounds must be"),
        (dict(descriptor_bounds=[[1, 0]]), r"descriptor_bounds\[0\] must have low < high"),
        (dict(descriptor_bounds=[[0, math.inf]]), r"descriptor_bounds\[0\] high"),
        (dict(cells=1000, descriptor_bounds=[[0, 1]] * 3), "above 10 million cells"),
    ):
        with pytest.raises(ValueError, match=match):
            make(**changes)
