"""What the quality-diversity strategies (MAP-Elites, CMA-ME, CMA-MAE) share: the archive's settings, the archive,
its figures in the generation records and the checks on the descriptors told.

  ArchiveSettings   the config fields that shape the archive: archive ("grid" or "cvt"), cells, descriptor_bounds
                    (a run fills them from its descriptor's declaration) and qd_score_offset; fixed for a run
  make_archive      the empty archive a config declares (CMA-MAE's: with an archive learning rate)
  ArchiveSearch     the Strategy base: self.archive (what the records, the archive view and cell replays read),
                    the records' extras (qd_score, coverage, archive_size, new_cells, improved_cells, rejected), the
                    elite (the archive's best), cell_genome(cell) for replays; a subclass says how a genome ships
                    to the evaluator (_shipped: the genome evaluators decode and the dense bases it needs)

Every request asks for a behaviour per episode (behaviour=True); a member's descriptor is the mean of its episodes'
behaviours and its objective the mean return. Candidates with a non-finite objective (a NaN return) or descriptor
are left out of the archive, counted, and reported in the record (`rejected`); a descriptor with another number
of dimensions than the bounds is refused (ValueError naming both).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, ClassVar

import numpy as np

from workbench.checks import check_int, check_real
from workbench.evolution.archive import AddResult, Archive, CVTArchive, GridArchive, cvt_centroids
from workbench.evolution.genome import Genome
from workbench.evolution.hyperparameters import hyperparameter
from workbench.evolution.strategy import Strategy, fitness_summary

ARCHIVES = ("grid", "cvt")
CVT_SEED = 0  # the k-means seed of a CVT archive's centroids: fixed, so the bounds and cells alone decide them
MAX_GRID_CELLS = 10_000_000


@dataclasses.dataclass(frozen=True)
class ArchiveSettings:
    """The archive's shape: fixed for a run (set() refuses to change it)."""

    archive: str = hyperparameter("grid", "archive", 'the cells: "grid" (a regular grid) or "cvt" (centroidal Voronoi)')
    cells: int = hyperparameter(32, "cells", "grid: cells per descriptor dimension; cvt: cells in all", scale="int")
    descriptor_bounds: list | None = hyperparameter(
        None, "descriptor bounds", "(low, high) per descriptor dimension; None = the run's descriptor declares them"
    )
    qd_score_offset: float = hyperparameter(
        0.0, "QD-score offset", "subtracted from every elite's objective in the QD-score (below the lowest return)"
    )

    def __post_init__(self) -> None:
        if isinstance(self.descriptor_bounds, (list, tuple)):  # one form however given: JSON's, lists of pairs
            pairs = [list(p) if isinstance(p, (list, tuple)) else p for p in self.descriptor_bounds]
            object.__setattr__(self, "descriptor_bounds", pairs)

    def _validated_archive(self) -> None:
        if self.archive not in ARCHIVES:
            raise ValueError(f"archive must be one of {ARCHIVES}, got {self.archive!r}")
        check_int("cells", self.cells, 1)
        if self.descriptor_bounds is not None:
            pairs = self.descriptor_bounds
            if not isinstance(pairs, list) or not pairs or any(not isinstance(p, list) or len(p) != 2 for p in pairs):
                raise ValueError(
                    f"descriptor_bounds must be (low, high) pairs, one per descriptor dimension, got {self.descriptor_bounds!r}"
                )
            for k, (low, high) in enumerate(pairs):
                check_real(f"descriptor_bounds[{k}] low", low)
                check_real(f"descriptor_bounds[{k}] high", high)
                if not low < high:
                    raise ValueError(f"descriptor_bounds[{k}] must have low < high, got ({low}, {high})")
            if self.archive == "grid" and self.cells ** len(pairs) > MAX_GRID_CELLS:
                raise ValueError(
                    f"cells: {self.cells} per dimension over {len(pairs)} dimensions is above {MAX_GRID_CELLS:,} cells"
                )
        check_real("qd_score_offset", self.qd_score_offset)

    @property
    def total_cells(self) -> int | None:
        """The archive's cells in all (None while the bounds are not known)."""
        if self.descriptor_bounds is None:
            return None
        return self.cells ** len(self.descriptor_bounds) if self.archive == "grid" else self.cells


def make_archive(config: ArchiveSettings, learning_rate: float = 1.0, threshold_min: float = -math.inf) -> Archive:
    """The empty archive config declares (descriptor_bounds must be set); learning_rate and threshold_min: CMA-MAE's
    soft thresholds (workbench.evolution.archive)."""
    if config.descriptor_bounds is None:
        raise ValueError(
            "descriptor_bounds: quality diversity needs the descriptor space's bounds, one (low, high) pair per "
            "dimension (a run fills them from its descriptor's declaration)"
        )
    bounds = [tuple(map(float, pair)) for pair in config.descriptor_bounds]
    settings: dict[str, Any] = dict(
        qd_score_offset=config.qd_score_offset, learning_rate=learning_rate, threshold_min=threshold_min
    )
    if config.archive == "grid":
        return GridArchive([config.cells] * len(bounds), bounds, **settings)
    return CVTArchive(cvt_centroids(config.cells, bounds, seed=CVT_SEED), bounds, **settings)


class ArchiveSearch(Strategy):
    """The shared part of the quality-diversity strategies (see the module docstring)."""

    EXTRAS: ClassVar[tuple[str, ...]] = ("qd_score", "coverage", "archive_size", "new_cells", "improved_cells", "rejected")
    ACCEPTS_NONFINITE_BEHAVIOURS = True
    FIXED: ClassVar[tuple[str, ...]] = ("archive", "cells", "descriptor_bounds", "qd_score_offset")  # fixed for a run

    def __init__(self, config: Any, space: Any, seed: int = 0) -> None:
        super().__init__(config, space, seed)
        self.archive = make_archive(self.config)

    @property
    def phase(self) -> str:
        return "population"

    def _shipped(self, genome: Any) -> tuple[Genome, dict]:
        """(the genome evaluators decode to an archived genome's weights, the dense bases it needs)."""
        raise NotImplementedError

    def _check_results(self, results):
        expected = self.archive.dimensions
        for k, result in enumerate(results):
            if result.behaviours.shape[1] != expected:
                raise ValueError(
                    f"results[{k}] descriptors have {result.behaviours.shape[1]} dimensions; the archive's "
                    f"descriptor_bounds declare {expected}"
                )

    @staticmethod
    def _candidates(results, means) -> tuple[np.ndarray, np.ndarray]:
        """(objectives [k], descriptors [k, d]) of the told members: a NaN return stays NaN (rejected, not the
        worst elite)."""
        descriptors = np.stack([r.behaviours.mean(axis=0) for r in results])
        return np.where(np.isneginf(means), np.nan, means), descriptors

    def _archive_extras(self, added: AddResult) -> dict[str, Any]:
        """The records' archive figures after this generation's insertion into self.archive."""
        statistics = self.archive.statistics()
        return dict(
            qd_score=statistics["qd_score"],
            coverage=statistics["coverage"],
            archive_size=statistics["archive_size"],
            new_cells=added.filled,
            improved_cells=added.replaced,
            rejected=added.rejected,
        )

    def _record_archive_generation(self, requests, means, added: AddResult, **extras: Any) -> None:
        """The generation's record: the members' fitness, the archive's best as the elite, the archive's figures
        after `added` (the insertion into self.archive) and the strategy's own extras."""
        best = self.archive.best()
        self._record_generation(
            fitness_summary(means),
            None if best is None else best["objective"],
            self.elite,
            sum(r.episodes for r in requests),
            **self._archive_extras(added),
            **extras,
        )

    # -- what evaluators and users read ---------------------------------------------------
    @property
    def elite(self) -> Genome | None:
        """The archive's best elite as evaluators decode it (None before the first generation, or while every
        candidate was rejected)."""
        best = self.archive.best()
        return None if best is None else self._shipped(best["genome"])[0]

    def _best_bases(self) -> dict:
        best = self.archive.best()
        return {} if best is None else self._shipped(best["genome"])[1]

    def elite_bases(self) -> dict:
        """bases() and the dense bases of the archive's best elite."""
        return {**self.bases(), **self._best_bases()}

    def cell_genome(self, cell: int) -> tuple[Genome, dict]:
        """The genome of `cell`'s elite as an evaluator decodes it, and the dense bases it needs (a replay of the
        cell); ValueError naming the cell when it is empty."""
        return self._shipped(self.archive.elite(cell)["genome"])

    def _validate(self, config):
        config = super()._validate(config)
        current = vars(self).get("config")  # None while the base class validates the first config
        if current is not None:
            changed = [name for name in self.FIXED if getattr(config, name) != getattr(current, name)]
            if changed:
                raise ValueError(f"{', '.join(changed)} cannot change during a run: the archive's shape is fixed")
        return config
