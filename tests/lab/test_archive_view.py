"""The archive view's data: pixels map to the cells a descriptor falls in (grid, CVT, a projection of more
dimensions), each update carries every cell's fitness, generation and descriptor, and a click on a cell replays
its elite (an empty cell says so)."""

import numpy as np
import pytest

from workbench.evolution import EvaluationResult, GenomeDecoder, NoiseTable, ParameterSpace
from workbench.evolution.map_elites import MapElites, MapElitesConfig
from workbench.lab.archive_view import RESOLUTION, ArchiveView

TABLE = NoiseTable.shared(2**16, seed=6)


def trained(dimensions=2, generations=8, **settings):
    config = dict(population_size=24, initial_population=24, sigma=0.05, cells=6, descriptor_bounds=[[-0.5, 0.5]] * dimensions)
    strategy = MapElites(
        MapElitesConfig(**dict(config, **settings)).validated(), ParameterSpace(TABLE, np.full(8, 0.1, np.float32))
    )
    while strategy.generation < generations:
        requests = strategy.ask()
        decoder = GenomeDecoder(strategy.space)
        for key, weights in strategy.bases().items():
            decoder.add_base(key, weights)
        results = []
        for request in requests:
            theta = decoder.decode(request.genome).astype(np.float64)
            results.append(EvaluationResult([-float(theta @ theta)], theta[None, :dimensions]))
        strategy.tell(results)
    return strategy


def arrays(view):
    canvas = view.canvas
    raster = np.frombuffer(canvas.raster, np.int32).reshape(canvas.height, canvas.width)
    fitness = np.frombuffer(canvas.fitness, np.float32)
    generation = np.frombuffer(canvas.generation, np.int32)
    descriptor = np.frombuffer(canvas.descriptor, np.float32).reshape(-1, canvas.dimensions)
    return raster, fitness, generation, descriptor


def pixel_of(view, point):
    """The raster pixel (row, column) a descriptor's two shown dimensions fall in."""
    archive, (a, b) = view.archive, view.dims
    raster = arrays(view)[0]
    low, high = archive.bounds[[a, b], 0], archive.bounds[[a, b], 1]
    column, up = ((np.asarray(point)[[a, b]] - low) / (high - low) * np.array([raster.shape[1], raster.shape[0]])).astype(int)
    return raster.shape[0] - 1 - min(up, raster.shape[0] - 1), min(column, raster.shape[1] - 1)


def test_a_grid_archive_is_drawn_cell_by_cell_with_every_cells_figures():
    strategy = trained()
    view = ArchiveView(strategy)
    raster, fitness, generation, descriptor = arrays(view)
    archive = strategy.archive
    assert raster.shape == (6, 6) and sorted(raster.ravel()) == list(range(36))
    for cell in archive.occupied_cells():
        row, column = pixel_of(view, archive.descriptor[cell])
        assert raster[row, column] == cell
        assert fitness[cell] == np.float32(archive.objective[cell]) and generation[cell] == archive.entered[cell]
        assert np.array_equal(descriptor[cell], archive.descriptor[cell].astype(np.float32))
    assert np.isnan(fitness[~archive.occupied]).all() and (generation[~archive.occupied] == -1).all()


def test_a_cvt_archive_is_rasterised_into_its_voronoi_cells():
    strategy = trained(archive="cvt", cells=40)
    view = ArchiveView(strategy)
    raster = arrays(view)[0]
    assert raster.shape == (RESOLUTION, RESOLUTION) and set(np.unique(raster)) <= set(range(40))
    cells = strategy.archive.occupied_cells()
    hits = [raster[pixel_of(view, strategy.archive.descriptor[cell])] == cell for cell in cells]
    assert len(cells) > 5 and np.mean(hits) >= 0.9  # an elite near a cell's edge may share its pixel with a neighbour


def test_more_dimensions_are_projected_onto_two_showing_the_best_elite_of_each_pixel():
    strategy = trained(dimensions=3, cells=4)
    view = ArchiveView(strategy, dims=(2, 0))
    raster, fitness, _, _ = arrays(view)
    archive = strategy.archive
    assert raster.shape == (4, 4) and view.canvas.axis_labels == ["descriptor 2", "descriptor 0"]
    coordinates = archive.grid_index(archive.occupied_cells())
    for cell, (i0, _, i2) in zip(archive.occupied_cells(), coordinates):
        shown = raster[3 - i0, i2]  # x: dimension 2, y: dimension 0 upward
        assert shown >= 0 and fitness[shown] >= fitness[cell]
    assert (raster >= 0).sum() == len({(c[2], c[0]) for c in coordinates})
    before = view.canvas.raster
    for _ in range(3):
        strategy.tell([EvaluationResult([1.0 + k], np.full((1, 3), 0.45)) for k, _ in enumerate(strategy.ask())])
    view.update()
    assert view.canvas.raster != before  # a projection follows the archive


def test_a_click_replays_the_cells_elite_and_an_empty_cell_says_so():
    strategy = trained(variation="iso_line", line_sigma=0.5)
    picked = []
    view = ArchiveView(strategy, on_select=lambda cell, genome, bases: picked.append((cell, genome, bases)))
    empty = int(np.flatnonzero(~strategy.archive.occupied)[0])
    view.canvas.selected = empty
    assert view.canvas.message == f"cell {empty} is empty: no elite has entered it yet" and not picked
    assert view.canvas.selected == -1
    cell = int(strategy.archive.occupied_cells()[-1])
    view.canvas.selected = cell  # what the browser sends on a click
    ((chosen, genome, bases),) = picked
    decoder = GenomeDecoder(strategy.space)
    for key, weights in bases.items():
        decoder.add_base(key, weights)
    assert chosen == cell and np.array_equal(decoder.decode(genome), strategy.decoder.decode(strategy.archive.genomes[cell]))
    assert view.canvas.message.startswith(f"cell {cell}: fitness") and view.canvas.selected == -1
    with pytest.raises(ValueError, match="needs the Trainer"):
        ArchiveView(strategy).select(cell)


def test_a_run_without_an_archive_and_bad_dimensions_are_refused():
    from workbench.evolution import GAConfig, GeneticAlgorithm

    ga = GeneticAlgorithm(
        GAConfig(population_size=4, truncation=2, elite_candidates=2), ParameterSpace(TABLE, np.ones(3, np.float32))
    )
    with pytest.raises(ValueError, match="needs a quality-diversity run"):
        ArchiveView(ga)
    strategy = trained(generations=1)
    for dims, match in (((0, 0), "two different"), ((0, 2), r"dims\[1\]")):
        with pytest.raises(ValueError, match=match):
            ArchiveView(strategy, dims=dims)
