"""Quality-diversity archives: the best genome found for every cell of a descriptor space.

A descriptor is a vector of d numbers that says what kind of behaviour an episode showed (the proportion of time
each foot touched the ground, the final position, ...), inside declared bounds. An archive divides that space
into cells and keeps, per cell, one elite: its genome (a seed chain or a lineage node: never a dense weight
vector), its fitness ("objective"), its descriptor, the cell's threshold and the generation it entered.

  GridArchive(dims, bounds)          a regular grid, dims[i] cells along dimension i
  CVTArchive(centroids, bounds)      a centroidal Voronoi tessellation: the cell of the nearest centroid
                                     (cvt_centroids() computes centroids by k-means over uniform samples)

Insertion follows pyribs 0.12 (`ribs.archives.GridArchive.add`; tests/evolution/test_archive.py checks it
insertion by insertion):
- a batch is compared with the archive as it was before the batch: a candidate can enter when its objective
  exceeds its cell's threshold (an empty cell's threshold is `threshold_min`, -inf by default); status 2 (a new
  cell) or 1 (improves an occupied one), else 0; among the candidates of one cell that can enter, the highest
  objective does (the first of equals);
- the status value: objective minus the cell's threshold, where an empty cell counts as 0 with the default
  threshold_min (CMA-ME's improvement) and as threshold_min otherwise (CMA-MAE);
- thresholds: the elite's objective with the default learning rate 1; with a learning rate alpha < 1 (CMA-MAE;
  threshold_min must then be finite), the cell's threshold t becomes (1 - alpha)^k t + (1 - (1 - alpha)^k) m for
  the k candidates of the batch that could enter it, of mean objective m (Fontaine & Nikolaidis 2023);
- descriptors outside the bounds go to the nearest edge cell (a grid clips them; a CVT archive's nearest centroid
  is the nearest cell anyway), as pyribs does.
Where pyribs raises on a non-finite objective or descriptor, an archive here leaves that candidate out (status 0,
value NaN), counts it (`rejected`) and reports it in the AddResult: one NaN return must not stop a run.

QD-score = the sum over elites of (objective - qd_score_offset), so an offset below the lowest possible
objective makes every elite count positively; coverage = elites / cells.

State: state_dict() / from_state() (numpy arrays and JSON-able values, no pickle); a state whose kind, cell
count, dimensions or bounds differ from the archive it is loaded into is refused, naming both.
"""

from __future__ import annotations

import abc
import dataclasses
import hashlib
import math
import os
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import numpy as np

from workbench.checks import check_int, check_real

STATUS_NOT_ADDED, STATUS_IMPROVED, STATUS_NEW = 0, 1, 2


@dataclasses.dataclass(frozen=True)
class AddResult:
    """What add() did with each candidate of a batch.

    status: int32 [k], 0 not added, 1 improved an occupied cell, 2 found an empty one (pyribs's AddStatus: each
      candidate against the archive as it was before the batch, so two candidates of one empty cell are both 2).
    value: float64 [k], the objective minus the cell's threshold (see the module docstring); NaN when rejected.
    cells: int64 [k], each candidate's cell (-1 when rejected).
    rejected: candidates left out because their objective or descriptor was not finite.
    filled, replaced: cells the batch filled (empty before) and cells whose elite it replaced.
    """

    status: np.ndarray
    value: np.ndarray
    cells: np.ndarray
    rejected: int
    filled: int = 0
    replaced: int = 0


def _checked_bounds(bounds: Any, dimensions: int | None = None) -> np.ndarray:
    """bounds as float64 [d, 2] of finite (low, high) pairs with low < high."""
    try:
        array = np.array(bounds, np.float64)
    except (TypeError, ValueError) as error:
        raise ValueError(f"bounds must be a sequence of (low, high) pairs, got {bounds!r:.120}") from error
    if array.ndim != 2 or array.shape[1] != 2 or array.shape[0] == 0:
        raise ValueError(f"bounds must be [d, 2] (one (low, high) pair per descriptor dimension), got shape {array.shape}")
    if dimensions is not None and array.shape[0] != dimensions:
        raise ValueError(f"bounds has {array.shape[0]} (low, high) pairs for {dimensions} descriptor dimensions")
    if not np.isfinite(array).all() or not (array[:, 0] < array[:, 1]).all():
        raise ValueError(f"bounds must be finite with low < high in every dimension, got {array.tolist()}")
    return array


class Archive(abc.ABC):
    """The storage, insertion and statistics every archive shares; subclasses map descriptors to cells.

    cells: the number of cells. bounds: [d, 2] (low, high) per descriptor dimension. learning_rate (default 1)
    and threshold_min (default -inf): CMA-MAE's soft archive (threshold_min must be finite when learning_rate <
    1, and -inf when it is 1, as pyribs requires). qd_score_offset: subtracted from every elite's objective in the
    QD-score.
    """

    kind: ClassVar[str]

    def __init__(
        self,
        cells: int,
        bounds: Any,
        *,
        learning_rate: float = 1.0,
        threshold_min: float = -math.inf,
        qd_score_offset: float = 0.0,
    ) -> None:
        self.cells = check_int("cells", cells, 1)
        self.bounds = _checked_bounds(bounds)
        self.dimensions = self.bounds.shape[0]
        self.learning_rate = check_real("learning_rate", learning_rate, 0.0, 1.0)
        if isinstance(threshold_min, bool) or not isinstance(threshold_min, (int, float, np.floating, np.integer)):
            raise ValueError(f"threshold_min must be a number or -inf, got {threshold_min!r}")
        self.threshold_min = float(threshold_min)
        if math.isnan(self.threshold_min) or self.threshold_min == math.inf:
            raise ValueError(f"threshold_min must be finite or -inf, got {threshold_min!r}")
        if self.learning_rate == 0.0:
            raise ValueError("learning_rate must be in (0, 1], got 0 (the thresholds would never move)")
        if self.learning_rate < 1.0 and self.threshold_min == -math.inf:
            raise ValueError(f"learning_rate {self.learning_rate} < 1 (CMA-MAE) needs a finite threshold_min")
        if self.learning_rate == 1.0 and self.threshold_min != -math.inf:
            raise ValueError("a finite threshold_min needs a learning_rate below 1 (CMA-MAE); with 1 it must be -inf")
        self.qd_score_offset = check_real("qd_score_offset", qd_score_offset)
        self.clear()

    def clear(self) -> None:
        """Empties every cell."""
        self.occupied = np.zeros(self.cells, bool)
        self.objective = np.zeros(self.cells, np.float64)
        self.threshold = np.full(self.cells, self.threshold_min, np.float64)
        self.descriptor = np.zeros((self.cells, self.dimensions), np.float64)
        self.entered = np.full(self.cells, -1, np.int64)  # the generation the cell's elite entered
        self.genomes: list[Any] = [None] * self.cells
        self.objective_sum = 0.0
        self.best_objective: float | None = None  # the highest objective ever inserted (pyribs's obj_max)
        self.best_cell: int | None = None
        self.rejected = 0  # candidates refused for non-finite objectives or descriptors, over the archive's life

    # -- cells ----------------------------------------------------------------------------
    @abc.abstractmethod
    def index_of(self, descriptors: Any) -> np.ndarray:
        """The cell of each row of descriptors [k, d] (finite values; see the module docstring for those outside
        the bounds): int64 [k]."""

    def _checked_descriptors(self, descriptors: Any, name: str = "descriptors") -> np.ndarray:
        array = np.asarray(descriptors, np.float64)
        if array.ndim != 2 or array.shape[1] != self.dimensions:
            raise ValueError(f"{name} must be [k, {self.dimensions}] (one row per candidate), got shape {array.shape}")
        return array

    # -- insertion ------------------------------------------------------------------------
    def add(self, genomes: Sequence[Any], objectives: Any, descriptors: Any, generation: int = 0) -> AddResult:
        """Inserts a batch of candidates (see the module docstring); genomes are kept as given."""
        objectives = np.asarray(objectives, np.float64)
        descriptors = self._checked_descriptors(descriptors)
        k = len(genomes)
        if objectives.shape != (k,) or descriptors.shape[0] != k:
            raise ValueError(
                f"add needs one objective and one descriptor row per genome: {k} genomes, objectives of shape "
                f"{objectives.shape}, descriptors of shape {descriptors.shape}"
            )
        generation = check_int("generation", generation, 0)
        status = np.zeros(k, np.int32)
        value = np.full(k, np.nan)
        cells = np.full(k, -1, np.int64)
        finite = np.isfinite(objectives) & np.isfinite(descriptors).all(axis=1)
        rejected = int(k - finite.sum())
        self.rejected += rejected
        rows = np.flatnonzero(finite)
        if rows.size == 0:
            return AddResult(status, value, cells, rejected)
        index = self.index_of(descriptors[rows])
        cells[rows] = index
        objective = objectives[rows]
        occupied = self.occupied[index]
        current = np.where(occupied, self.threshold[index], self.threshold_min)
        can_enter = objective > current
        status[rows[can_enter & ~occupied]] = STATUS_NEW
        status[rows[can_enter & occupied]] = STATUS_IMPROVED
        baseline = np.where(~occupied & can_enter, 0.0 if self.threshold_min == -math.inf else self.threshold_min, current)
        value[rows] = objective - baseline
        if not can_enter.any():
            return AddResult(status, value, cells, rejected)
        entering = np.flatnonzero(can_enter)
        index, objective, current = index[entering], objective[entering], current[entering]
        if self.threshold_min == -math.inf:
            new_threshold = objective
        else:  # CMA-MAE's batch rule over the candidates of each cell that could enter it
            unique, inverse, counts = np.unique(index, return_inverse=True, return_counts=True)
            sums = np.zeros(unique.size)
            np.add.at(sums, inverse, objective)
            ratio = (1.0 - self.learning_rate) ** counts[inverse]
            new_threshold = ratio * current + (sums[inverse] / counts[inverse]) * (1 - ratio)
        # per cell, the candidate with the highest objective (the first of equals)
        order = np.lexsort((np.arange(index.size), -objective, index))
        first = np.ones(order.size, bool)
        first[1:] = index[order[1:]] != index[order[:-1]]
        winners = order[first]
        gained, filled = 0.0, int((~self.occupied[index[winners]]).sum())
        for w in winners:
            cell, candidate = int(index[w]), int(rows[entering[w]])
            gained_here = objective[w] - (self.objective[cell] if self.occupied[cell] else 0.0)
            gained += gained_here
            self.occupied[cell] = True
            self.objective[cell] = objective[w]
            self.threshold[cell] = new_threshold[w]
            self.descriptor[cell] = descriptors[candidate]
            self.entered[cell] = generation
            self.genomes[cell] = genomes[candidate]
        self.objective_sum = float(self.objective_sum + gained)
        best = winners[np.argmax(objective[winners])]
        if self.best_objective is None or objective[best] > self.best_objective:
            self.best_objective, self.best_cell = float(objective[best]), int(index[best])
        return AddResult(status, value, cells, rejected, filled, winners.size - filled)

    # -- reading --------------------------------------------------------------------------
    @property
    def size(self) -> int:
        """The number of occupied cells (elites)."""
        return int(self.occupied.sum())

    @property
    def coverage(self) -> float:
        return self.size / self.cells

    @property
    def qd_score(self) -> float:
        return float(self.objective_sum - self.size * self.qd_score_offset)

    def occupied_cells(self) -> np.ndarray:
        """The occupied cells' indices, ascending."""
        return np.flatnonzero(self.occupied)

    def sample(self, rng: np.random.Generator, count: int) -> np.ndarray:
        """`count` occupied cells drawn uniformly with replacement (MAP-Elites's selection)."""
        cells = self.occupied_cells()
        if cells.size == 0:
            raise ValueError("cannot sample from an empty archive")
        return cells[rng.integers(cells.size, size=check_int("count", count, 0))]

    def elite(self, cell: int) -> dict:
        """The elite of `cell`: {"genome", "objective", "descriptor", "threshold", "generation"}; ValueError naming
        the cell when it is empty or out of range."""
        cell = check_int("cell", cell, 0, self.cells - 1)
        if not self.occupied[cell]:
            raise ValueError(f"cell {cell} is empty: no elite has entered it yet")
        return {
            "genome": self.genomes[cell],
            "objective": float(self.objective[cell]),
            "descriptor": self.descriptor[cell].copy(),
            "threshold": float(self.threshold[cell]),
            "generation": int(self.entered[cell]),
        }

    def best(self) -> dict | None:
        """The elite with the highest objective now in the archive (None when empty)."""
        cells = self.occupied_cells()
        if cells.size == 0:
            return None
        cell = int(cells[np.argmax(self.objective[cells])])
        return dict(self.elite(cell), cell=cell)

    def statistics(self) -> dict[str, float]:
        """The figures a generation record carries: qd_score, coverage, archive_size, archive_best."""
        best = self.best()
        return {
            "qd_score": self.qd_score,
            "coverage": self.coverage,
            "archive_size": self.size,
            "archive_best": math.nan if best is None else best["objective"],
        }

    # -- state ----------------------------------------------------------------------------
    def describe(self) -> dict:
        """What an archive's checkpoint must match: kind, cells, bounds and the kind's own geometry."""
        return {"kind": self.kind, "cells": self.cells, "bounds": self.bounds.tolist(), **self._geometry()}

    @abc.abstractmethod
    def _geometry(self) -> dict:
        """The kind's own shape (grid dims; CVT: the centroids' checksum)."""

    def state_dict(self, encode: Callable[[Any], Any] = lambda genome: genome) -> dict:
        """The archive as numpy arrays and JSON-able values; encode(genome) makes a genome JSON-able."""
        cells = self.occupied_cells()
        return {
            "describe": self.describe(),
            "settings": {
                "learning_rate": self.learning_rate,
                "threshold_min": self.threshold_min,
                "qd_score_offset": self.qd_score_offset,
            },
            "cells": cells.copy(),
            "objective": self.objective[cells].copy(),
            "threshold": self.threshold[cells].copy(),
            "descriptor": self.descriptor[cells].copy(),
            "entered": self.entered[cells].copy(),
            "genomes": [encode(self.genomes[c]) for c in cells],
            "objective_sum": self.objective_sum,
            "best_objective": self.best_objective,
            "best_cell": self.best_cell,
            "rejected": self.rejected,
        }

    def load_state(self, state: dict, decode: Callable[[Any], Any] = lambda data: data) -> None:
        """Restores state_dict() output into this (empty or not) archive; ValueError when its geometry differs,
        naming both, or when the state is corrupt."""
        try:
            saved = state["describe"]
            if saved != self.describe():
                raise ValueError(
                    f"the checkpoint's archive {_summary(saved)} does not match this run's {_summary(self.describe())}"
                )
            cells = np.asarray(state["cells"], np.int64)
            k = cells.size
            arrays = {
                name: np.asarray(state[name], np.float64 if name != "entered" else np.int64)
                for name in ("objective", "threshold", "descriptor", "entered")
            }
            shapes = {"objective": (k,), "threshold": (k,), "descriptor": (k, self.dimensions), "entered": (k,)}
            for name, array in arrays.items():
                if array.shape != shapes[name]:
                    raise ValueError(f"corrupt archive state: {name} has shape {array.shape}, expected {shapes[name]}")
            if cells.ndim != 1 or (k and (cells.min() < 0 or cells.max() >= self.cells)) or np.unique(cells).size != k:
                raise ValueError(f"corrupt archive state: cells must be distinct indices below {self.cells}")
            if len(state["genomes"]) != k:
                raise ValueError(f"corrupt archive state: {len(state['genomes'])} genomes for {k} cells")
            genomes = [decode(g) for g in state["genomes"]]
            settings = state["settings"]
            if settings != {
                "learning_rate": self.learning_rate,
                "threshold_min": self.threshold_min,
                "qd_score_offset": self.qd_score_offset,
            }:
                raise ValueError(f"the checkpoint's archive settings {settings} differ from this run's")
        except (KeyError, TypeError) as error:
            raise ValueError(f"corrupt archive state: {error!r}") from error
        self.clear()
        self.occupied[cells] = True
        self.objective[cells] = arrays["objective"]
        self.threshold[cells] = arrays["threshold"]
        self.descriptor[cells] = arrays["descriptor"]
        self.entered[cells] = arrays["entered"]
        for cell, genome in zip(cells, genomes):
            self.genomes[int(cell)] = genome
        self.objective_sum = float(state["objective_sum"])
        self.best_objective = None if state["best_objective"] is None else float(state["best_objective"])
        self.best_cell = None if state["best_cell"] is None else int(state["best_cell"])
        self.rejected = int(state["rejected"])


def _summary(describe: dict) -> str:
    extra = ", ".join(f"{key} {value}" for key, value in describe.items() if key not in ("kind", "bounds", "cells"))
    return (
        f"({describe.get('kind')}, {describe.get('cells')} cells, bounds {describe.get('bounds')}{', ' + extra if extra else ''})"
    )


class GridArchive(Archive):
    """A regular grid: dims[i] equal intervals over bounds[i]; cells = prod(dims), numbered in C order (the last
    dimension fastest), as numpy.ravel_multi_index and pyribs number them."""

    kind = "grid"
    EPSILON = 1e-6  # pyribs's epsilon: added before flooring, so a value a rounding error below a boundary is inside

    def __init__(self, dims: Sequence[int], bounds: Any, **settings: Any) -> None:
        dims_list = list(dims) if isinstance(dims, (list, tuple, np.ndarray)) else None
        if not dims_list:
            raise ValueError(f"dims must be a non-empty sequence of cell counts, one per dimension, got {dims!r}")
        self.dims = np.array([check_int(f"dims[{i}]", d, 1) for i, d in enumerate(dims_list)], np.int64)
        bounds = _checked_bounds(bounds, len(self.dims))
        super().__init__(int(np.prod(self.dims)), bounds, **settings)

    def _geometry(self) -> dict:
        return {"dims": self.dims.tolist()}

    def index_of(self, descriptors: Any) -> np.ndarray:
        descriptors = self._checked_descriptors(descriptors)
        low, high = self.bounds[:, 0], self.bounds[:, 1]
        scaled = (self.dims * (descriptors - low) + self.EPSILON) / (high - low)
        grid = np.clip(scaled, 0, self.dims - 1).astype(np.int64)  # clipped before the cast: no integer overflow
        return np.ravel_multi_index(grid.T, self.dims).astype(np.int64)

    def grid_index(self, cells: Any) -> np.ndarray:
        """The grid coordinates [k, d] of cell numbers [k]."""
        return np.stack(np.unravel_index(np.asarray(cells, np.int64), self.dims), axis=-1)


class CVTArchive(Archive):
    """A centroidal Voronoi tessellation: a descriptor's cell is its nearest centroid (squared Euclidean distance;
    the first of equals). centroids [cells, d]: from cvt_centroids(), or a user's own (pyribs's, for instance)."""

    kind = "cvt"

    def __init__(self, centroids: Any, bounds: Any, **settings: Any) -> None:
        centroids = np.array(centroids, np.float64)
        if centroids.ndim != 2 or centroids.shape[0] == 0 or not np.isfinite(centroids).all():
            raise ValueError(f"centroids must be a finite [cells, d] array, got shape {centroids.shape}")
        bounds = _checked_bounds(bounds, centroids.shape[1])
        self.centroids = centroids
        self.centroids.setflags(write=False)
        self._squared_norms = (centroids**2).sum(axis=1)
        super().__init__(centroids.shape[0], bounds, **settings)

    def _geometry(self) -> dict:
        return {"centroids_sha256": hashlib.sha256(np.ascontiguousarray(self.centroids).tobytes()).hexdigest()}

    def index_of(self, descriptors: Any) -> np.ndarray:
        """The nearest centroid of each row: ranked by |c|^2 - 2 x.c (one matrix product), then the best two
        compared by their exact squared distances, so a rounding error of the product cannot pick a farther one."""
        descriptors = self._checked_descriptors(descriptors)
        result = np.empty(descriptors.shape[0], np.int64)
        for start in range(0, descriptors.shape[0], 1024):  # bounded memory with many cells
            chunk = descriptors[start : start + 1024]
            approximate = self._squared_norms[None, :] - 2.0 * chunk @ self.centroids.T
            if self.cells == 1:
                result[start : start + len(chunk)] = 0
                continue
            two = np.argpartition(approximate, 1, axis=1)[:, :2]
            two.sort(axis=1)  # the lower index first: the first of equals wins
            exact = ((chunk[:, None, :] - self.centroids[two]) ** 2).sum(axis=2)
            result[start : start + len(chunk)] = two[np.arange(len(chunk)), np.argmin(exact, axis=1)]
        return result


def centroid_cache_folder() -> str:
    """Where cvt_centroids keeps the centroids it computed: $WORKBENCH_CACHE/cvt, else ~/.cache/workbench/cvt."""
    root = os.environ.get("WORKBENCH_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "workbench")
    return os.path.join(root, "cvt")


def cvt_centroids(
    cells: int, bounds: Any, samples: int | None = None, iterations: int = 20, seed: int = 0, cache: bool = True
) -> np.ndarray:
    """`cells` centroids [cells, d] by Lloyd's k-means over `samples` points drawn uniformly in bounds (default
    100,000 as pyribs's, at least 10 per cell), starting from `cells` of those points: near-equal-volume cells.

    The work grows as samples x cells x iterations (10,000 cells: minutes on 2 cores), so with `cache` the result
    is kept in centroid_cache_folder() under a name made of every argument, and read from there next time (a
    file that does not hold [cells, d] finite values is computed again)."""
    cells = check_int("cells", cells, 1)
    bounds = _checked_bounds(bounds)
    samples = max(100_000, 10 * cells) if samples is None else check_int("samples", samples, cells)
    iterations = check_int("iterations", iterations, 0)
    seed = check_int("seed", seed, 0)
    path = None
    if cache:
        name = hashlib.sha256(repr((CENTROIDS_VERSION, cells, bounds.tolist(), samples, iterations, seed)).encode())
        path = os.path.join(centroid_cache_folder(), name.hexdigest()[:32] + ".npy")
        try:
            kept = np.load(path)
            if kept.shape == (cells, bounds.shape[0]) and np.isfinite(kept).all():
                return kept
        except (OSError, ValueError):
            pass
    centroids = _lloyd(cells, bounds, samples, iterations, seed)
    if path is not None:
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            temporary = f"{path}.{os.getpid()}.tmp.npy"
            np.save(temporary, centroids)
            os.replace(temporary, path)
        except OSError:
            pass  # a read-only home: computed again next time
    return centroids


CENTROIDS_VERSION = 1  # the k-means below; a change to it changes the cache's file names


def _lloyd(cells: int, bounds: np.ndarray, samples: int, iterations: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    points = rng.uniform(bounds[:, 0], bounds[:, 1], size=(samples, bounds.shape[0]))
    centroids = points[rng.choice(samples, size=cells, replace=False)].copy()
    for _ in range(iterations):
        nearest = np.empty(samples, np.int64)
        norms = (centroids**2).sum(axis=1)
        for start in range(0, samples, 4096):
            chunk = points[start : start + 4096]
            nearest[start : start + 4096] = np.argmin(norms[None, :] - 2 * chunk @ centroids.T, axis=1)
        counts = np.bincount(nearest, minlength=cells)
        sums = np.stack([np.bincount(nearest, weights=points[:, k], minlength=cells) for k in range(points.shape[1])], 1)
        filled = counts > 0
        centroids[filled] = sums[filled] / counts[filled, None]  # an empty cluster keeps its centroid
    return centroids
