"""MAP-Elites (Mouret & Clune 2015): an archive of the best genome for every kind of behaviour, ask/tell.

The descriptor space (declared bounds, one (low, high) pair per dimension: `descriptor_bounds`, which a run fills
from its descriptor's declaration) is divided into cells by a grid archive (`cells` per dimension) or a CVT
archive (`cells` in all; centroids by k-means, fixed by the bounds and the cell count); workbench.evolution.archive
holds the elites. A generation is one "population" round:

  generation 0: initial_population random genomes (seed-chain initialisations, as the Deep GA's; again,
                batch_size of them, while every candidate so far was rejected and the archive is empty);
  later:        batch_size children, each of a parent drawn uniformly from the archive's elites: Gaussian
                variation, the parent plus sigma times a noise slice (a seed chain one mutation longer).

Every request asks for a behaviour per episode (behaviour=True); a member's descriptor is the mean of its
episodes' behaviours and its objective the mean return. Candidates with a non-finite objective (a NaN return)
or descriptor are left out of the archive, counted, and reported in the record (`rejected`); a descriptor with
another number of dimensions than the bounds is refused (ValueError naming both).

Records: the batch's fitness statistics; the elite is the archive's best; extras qd_score (objectives minus
qd_score_offset, summed), coverage, archive_size, new_cells (cells the generation filled), improved_cells (cells
whose elite it replaced), rejected. A cell's genome is a seed
chain: a few bytes per mutation, never a dense weight vector.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from workbench.checks import check_int, check_real
from workbench.evolution.archive import Archive, CVTArchive, GridArchive, cvt_centroids
from workbench.evolution.genome import Genome
from workbench.evolution.hyperparameters import hyperparameter
from workbench.evolution.space import ParameterSpace
from workbench.evolution.strategy import EvaluationRequest, Strategy, fitness_summary

ARCHIVES = ("grid", "cvt")
CVT_SEED = 0  # the k-means seed of a CVT archive's centroids: fixed, so the bounds and cells alone decide them


@dataclasses.dataclass(frozen=True)
class MapElitesConfig:
    """MAP-Elites hyperparameters. The archive's shape (archive, cells, descriptor_bounds, qd_score_offset) is
    fixed for a run: set() refuses to change it."""

    batch_size: int = hyperparameter(100, "batch size", "children per generation", scale="int", low=1, high=2000)
    initial_population: int = hyperparameter(
        100, "initial population", "random genomes in generation 0 (no slider: it counts when the run starts)", scale="int"
    )
    sigma: float = hyperparameter(
        0.005, "mutation power σ", "the noise scale of a child (Gaussian variation)", scale="log", low=1e-4, high=1.0
    )
    episodes_per_member: int = hyperparameter(1, "episodes per member", "episodes of each member", scale="int")
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

    def validated(self) -> MapElitesConfig:
        check_int("batch_size", self.batch_size, 1)
        check_int("initial_population", self.initial_population, 1)
        check_real("sigma", self.sigma, 0, low_open=True)
        check_int("episodes_per_member", self.episodes_per_member, 1)
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
        check_real("qd_score_offset", self.qd_score_offset)
        return self

    @classmethod
    def tutorial(cls) -> MapElitesConfig:
        return cls(batch_size=32, initial_population=64, sigma=0.05, cells=16)


def make_archive(config: MapElitesConfig) -> Archive:
    """The empty archive config declares (descriptor_bounds must be set)."""
    if config.descriptor_bounds is None:
        raise ValueError(
            "descriptor_bounds: MAP-Elites needs the descriptor space's bounds, one (low, high) pair per dimension "
            "(a run fills them from its descriptor's declaration)"
        )
    bounds = [tuple(map(float, pair)) for pair in config.descriptor_bounds]
    if config.archive == "grid":
        if config.cells ** len(bounds) > 10_000_000:
            raise ValueError(f"cells: {config.cells} per dimension over {len(bounds)} dimensions is above 10 million cells")
        return GridArchive([config.cells] * len(bounds), bounds, qd_score_offset=config.qd_score_offset)
    return CVTArchive(cvt_centroids(config.cells, bounds, seed=CVT_SEED), bounds, qd_score_offset=config.qd_score_offset)


class MapElites(Strategy):
    """MAP-Elites on a ParameterSpace; `seed` drives the initial genomes, the parents drawn and every mutation."""

    kind = "MapElites"
    config_class = MapElitesConfig
    EXTRAS = ("qd_score", "coverage", "archive_size", "new_cells", "improved_cells", "rejected")
    ACCEPTS_NONFINITE_BEHAVIOURS = True
    FIXED = ("archive", "cells", "descriptor_bounds", "qd_score_offset")  # the archive's shape: fixed for a run

    def __init__(self, config: MapElitesConfig, space: ParameterSpace, seed: int = 0) -> None:
        super().__init__(config, space, seed)
        self.archive = make_archive(self.config)
        self.batch: list[Genome] | None = None  # this generation's genomes, once asked

    @property
    def phase(self) -> str:
        return "population"

    # -- ask/tell -------------------------------------------------------------------------
    def _ask(self):
        config = self.config
        if self.batch is None:  # drawn once per generation and kept in the state until told
            if self.generation == 0 or self.archive.size == 0:
                count = config.initial_population if self.generation == 0 else config.batch_size
                self.batch = [Genome(self.space.sample_offset(self.rng)) for _ in range(count)]
            else:
                parents = self.archive.sample(self.rng, config.batch_size)
                self.batch = [
                    self.archive.genomes[int(cell)].child(self.space.sample_offset(self.rng), config.sigma) for cell in parents
                ]
        return [EvaluationRequest(g, config.episodes_per_member, "population", behaviour=True) for g in self.batch]

    def _check_results(self, results):
        expected = self.archive.dimensions
        for k, result in enumerate(results):
            if result.behaviours.shape[1] != expected:
                raise ValueError(
                    f"results[{k}] descriptors have {result.behaviours.shape[1]} dimensions; the archive's "
                    f"descriptor_bounds declare {expected}"
                )

    def _tell(self, requests, results, means):
        descriptors = np.stack([r.behaviours.mean(axis=0) for r in results])
        objectives = np.where(np.isneginf(means), np.nan, means)  # a NaN return: rejected, not the worst elite
        added = self.archive.add([r.genome for r in requests], objectives, descriptors, self.generation)
        best = self.archive.best()
        statistics = self.archive.statistics()
        self._record_generation(
            fitness_summary(means),
            None if best is None else best["objective"],
            None if best is None else best["genome"],
            sum(r.episodes for r in requests),
            qd_score=statistics["qd_score"],
            coverage=statistics["coverage"],
            archive_size=statistics["archive_size"],
            new_cells=added.filled,
            improved_cells=added.replaced,
            rejected=added.rejected,
        )
        self.batch = None
        self._start_next_generation()

    # -- what evaluators and users read ---------------------------------------------------
    @property
    def elite(self) -> Genome | None:
        """The archive's best elite (None before the first generation, or while every candidate was rejected)."""
        best = self.archive.best()
        return None if best is None else best["genome"]

    def _validate(self, config):
        config = super()._validate(config)
        current = vars(self).get("config")  # None while the base class validates the first config
        if current is not None:
            changed = [name for name in self.FIXED if getattr(config, name) != getattr(current, name)]
            if changed:
                raise ValueError(f"{', '.join(changed)} cannot change during a run: the archive's shape is fixed")
        return config

    # -- state ----------------------------------------------------------------------------
    def state_dict(self) -> dict:
        batch = None if self.batch is None else [g.to_json() for g in self.batch]
        return dict(self._common_state(), batch=batch, archive=self.archive.state_dict(encode=Genome.to_json))

    def _load(self, state):
        self.archive.load_state(state["archive"], decode=Genome.from_json)
        self.batch = None if state["batch"] is None else [Genome.from_json(g) for g in state["batch"]]
