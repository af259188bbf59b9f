"""ArchiveView: a quality-diversity archive as a live heatmap in JupyterLab; hover a cell to read it, click to replay.

    view = ArchiveView(trainer)              # a Trainer whose strategy keeps an archive (MAP-Elites)
    view                                     # the heatmap; view.update() after generations (the dashboard calls it)
    view.select(cell)                        # what a click does: the cell's elite replayed in an AgentViewer

What the heatmap shows, per descriptor space:
  2 dimensions, grid      the grid's cells, one pixel each (x: the first dimension, y: the second, upward)
  2 dimensions, CVT       the Voronoi cells, rasterised once (RESOLUTION x RESOLUTION pixels, each the cell of its
                          centre)
  more dimensions         a projection onto two chosen dimensions (`dims`): each pixel shows the best elite whose
                          descriptor falls in it (the grid's own cells along those two dimensions; a CVT archive's
                          descriptors binned at RESOLUTION), so a click replays that elite
Colour: the elite's fitness (viridis, from the lowest to the highest elite now in the archive); grey: empty.
The browser receives typed arrays (the raster, then per cell its fitness, generation and descriptor) and draws
them on a canvas itself (workbench/lab/archive_view.js), so 10,000 cells update in a few milliseconds.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import anywidget
import ipywidgets as widgets
import numpy as np
import traitlets

from workbench.checks import check_int
from workbench.evolution.archive import Archive, GridArchive

RESOLUTION = 160  # pixels per side of a CVT archive's raster and of a CVT projection
_HERE = os.path.dirname(os.path.abspath(__file__))


class ArchiveCanvas(anywidget.AnyWidget):
    """The browser side: a canvas that paints the raster's cells by fitness, with a tooltip and clicks (`selected`)."""

    _esm = os.path.join(_HERE, "archive_view.js")
    _css = os.path.join(_HERE, "archive_view.css")
    width = traitlets.Int(1).tag(sync=True)
    height = traitlets.Int(1).tag(sync=True)
    raster = traitlets.Bytes(b"").tag(sync=True)  # int32 [height, width], row 0 at the top; -1: no cell
    fitness = traitlets.Bytes(b"").tag(sync=True)  # float32 [cells]; NaN: empty
    generation = traitlets.Bytes(b"").tag(sync=True)  # int32 [cells]: when the elite entered; -1: empty
    descriptor = traitlets.Bytes(b"").tag(sync=True)  # float32 [cells, d]
    dimensions = traitlets.Int(2).tag(sync=True)
    axis_labels = traitlets.List(traitlets.Unicode(), ["descriptor 0", "descriptor 1"]).tag(sync=True)
    selected = traitlets.Int(-1).tag(sync=True)  # the clicked cell (the kernel answers and sets it back to -1)
    message = traitlets.Unicode("").tag(sync=True)


class ArchiveView:
    """A live, clickable heatmap of an archive; see the module docstring.

    source: a Trainer whose strategy has an `archive` (and cell_genome(cell) for replays), or such a strategy.
    dims: the two descriptor dimensions shown (x, y). on_select(cell, genome, bases): what a click on an occupied
    cell does (default: replay the elite in an AgentViewer below the heatmap; needs a Trainer).
    """

    def __init__(
        self,
        source: Any,
        dims: tuple[int, int] = (0, 1),
        on_select: Callable[[int, Any, dict], Any] | None = None,
    ) -> None:
        strategy = getattr(source, "strategy", source)
        archive = getattr(strategy, "archive", None)
        if not isinstance(archive, Archive):
            raise ValueError(
                f"ArchiveView needs a quality-diversity run (a strategy with an archive: map-elites, cma-me, cma-mae), got "
                f"{type(strategy).__name__}"
            )
        self.trainer = source if source is not strategy else None
        self.strategy, self.archive = strategy, archive
        d = archive.dimensions
        if d < 2:
            raise ValueError(f"ArchiveView draws two descriptor dimensions; this archive has {d}")
        self.dims = tuple(check_int(f"dims[{k}]", value, 0, d - 1) for k, value in enumerate(dims))
        if len(self.dims) != 2 or self.dims[0] == self.dims[1]:
            raise ValueError(f"dims must be two different descriptor dimensions, got {dims!r}")
        self.on_select = on_select
        self.canvas = ArchiveCanvas(dimensions=d, axis_labels=[f"descriptor {k}" for k in self.dims])
        self.canvas.add_class("wb-archive-view")
        self.replay_area = widgets.Output()
        self.widget = widgets.VBox([self.canvas, self.replay_area])
        self._static_raster = self._fixed_raster()
        self.canvas.observe(self._on_click, names="selected")
        self.update()

    # -- the picture ----------------------------------------------------------------------
    def _fixed_raster(self) -> np.ndarray | None:
        """The raster of a two-dimensional archive (pixels -> cells, fixed for the run); None for a projection."""
        archive = self.archive
        if archive.dimensions != 2 or self.dims != (0, 1):
            return None
        if isinstance(archive, GridArchive):
            columns, rows = (int(v) for v in archive.dims)
            grid = np.arange(archive.cells, dtype=np.int32).reshape(columns, rows)  # [x cell, y cell]
            return np.ascontiguousarray(grid.T[::-1])  # rows from the top: y downward
        low, high = archive.bounds[:, 0], archive.bounds[:, 1]
        centres = (np.arange(RESOLUTION) + 0.5) / RESOLUTION
        xs, ys = np.meshgrid(low[0] + centres * (high[0] - low[0]), low[1] + centres[::-1] * (high[1] - low[1]))
        return archive.index_of(np.stack([xs.ravel(), ys.ravel()], axis=1)).astype(np.int32).reshape(RESOLUTION, RESOLUTION)

    def _projection(self, occupied: np.ndarray, objective: np.ndarray, descriptor: np.ndarray) -> np.ndarray:
        """Pixels -> the best elite whose descriptor falls in each (the two shown dimensions), -1 where none."""
        archive, (a, b) = self.archive, self.dims
        if isinstance(archive, GridArchive):
            columns, rows = int(archive.dims[a]), int(archive.dims[b])
            coordinates = archive.grid_index(occupied)
            x, y = coordinates[:, a], coordinates[:, b]
        else:
            columns = rows = RESOLUTION
            low, high = archive.bounds[[a, b], 0], archive.bounds[[a, b], 1]
            scaled = (descriptor[:, [a, b]] - low) / (high - low) * RESOLUTION
            x, y = (np.clip(scaled[:, k].astype(np.int64), 0, RESOLUTION - 1) for k in (0, 1))
        raster = np.full(columns * rows, -1, np.int32)
        pixel = x * rows + y
        order = np.lexsort((-objective, pixel))  # per pixel, the best first
        first = np.ones(order.size, bool)
        first[1:] = pixel[order[1:]] != pixel[order[:-1]]
        raster[pixel[order[first]]] = occupied[order[first]]
        return np.ascontiguousarray(raster.reshape(columns, rows).T[::-1])

    def update(self) -> None:
        """Sends the archive as it is now (cheap: a few arrays of the cell count; safe from another thread)."""
        archive = self.archive
        occupied_mask = archive.occupied.copy()
        objective = archive.objective.copy()
        entered = archive.entered.copy()
        descriptor = archive.descriptor.copy()
        fitness = np.where(occupied_mask, objective, np.nan).astype(np.float32)
        occupied = np.flatnonzero(occupied_mask)
        raster = self._static_raster
        if raster is None:
            raster = self._projection(occupied, objective[occupied], descriptor[occupied])
        with self.canvas.hold_sync():
            self.canvas.height, self.canvas.width = (int(v) for v in raster.shape)
            self.canvas.raster = raster.astype(np.int32).tobytes()
            self.canvas.fitness = fitness.tobytes()
            self.canvas.generation = np.where(occupied_mask, entered, -1).astype(np.int32).tobytes()
            self.canvas.descriptor = descriptor.astype(np.float32).tobytes()

    # -- clicks ---------------------------------------------------------------------------
    def _on_click(self, change) -> None:
        cell = int(change["new"])
        if cell < 0:
            return
        try:
            self.select(cell)
        finally:
            self.canvas.selected = -1  # so that a second click on the same cell is a change too

    def select(self, cell: int) -> Any:
        """What a click on `cell` does: on_select(cell, genome, bases), or the elite replayed in an AgentViewer below
        the heatmap; an empty cell says so in the view's message (and returns None)."""
        cell = check_int("cell", cell, 0, self.archive.cells - 1)
        if not self.archive.occupied[cell]:
            self.canvas.message = f"cell {cell} is empty: no elite has entered it yet"
            return None
        elite = self.archive.elite(cell)
        genome, bases = self.strategy.cell_genome(cell)
        self.canvas.message = (
            f"cell {cell}: fitness {elite['objective']:.4g}, entered in generation {elite['generation']}; replaying"
        )
        if self.on_select is not None:
            return self.on_select(cell, genome, bases)
        if self.trainer is None:
            raise ValueError("replaying a cell needs the Trainer (ArchiveView(trainer)) or an on_select callback")
        from workbench.lab.agent_viewer import AgentViewer

        viewer = AgentViewer.from_genome(genome, self.trainer.evaluator, bases, title=f"archive cell {cell}")
        self.replay_area.clear_output()
        with self.replay_area:
            from IPython.display import display

            display(viewer.widget)
        return viewer

    def _repr_mimebundle_(self, **kwargs):
        return self.widget._repr_mimebundle_(**kwargs)
