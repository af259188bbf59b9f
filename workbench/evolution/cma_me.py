"""CMA-ME and CMA-MAE: quality diversity by CMA-ES emitters that climb the archive (Fontaine et al. 2020; Fontaine &
Nikolaidis 2023), ask/tell.

`emitters` CMA-ES searches (the `es`: "sep-cma-es", a diagonal covariance for any network, or "cma-es", the full
one, up to a few thousand parameters; the updates of cma_update.py) each draw population_size members a generation,
all played in one round. The members enter the archive together (as ribs' scheduler adds every emitter's solutions
in one batch); each emitter then ranks its own members by what the insertion said and updates:

  ranker          "2imp" (CMA-ME): the members that entered the archive first, new cells before improved ones, each
                  group by its improvement value (objective minus the cell's threshold; workbench.evolution.archive);
                  "imp" (CMA-MAE): by the improvement value alone. A rejected member (NaN return) ranks last.
  selection_rule  "filter" (CMA-ME): as many parents as members entered the archive (none: no update); "mu": half
                  the members. Both recombine with cma_update's parents weights, ln(k + 1/2) - ln i.
  restart_rule    "no_improvement" (CMA-ME): restart when no member entered the archive; "basic": only when the
                  distribution degenerates.

An emitter restarts at an elite drawn uniformly from the archive it climbs (sigma_init, an identity covariance) when
its rule says so or its distribution degenerates: the largest scale below 1e-12 of sigma_init or above 1e12 of it, a
condition number above 1e14, or the first and last ranking values within 1e-12 (pyribs's checks, after pycma's).

CMA-MAE: archive_learning_rate alpha < 1 makes the thresholds the emitters climb soft (threshold_min: an empty cell's
threshold, default qd_score_offset); a second archive with the usual thresholds (pyribs's result_archive) keeps the
best of each cell. `archive` is that one: what the records, the archive view and cell replays read.

Members and archived genomes: a member of the diagonal form is Genome(key, ((offset, 1),)) on its emitter's base
[2, n] of the generation (the mean and the per-parameter scales): 12 bytes and a key to ship, and the population ops
run it without building it; of the full form, a dense base per member (4 n bytes). An archived elite keeps its genome
and the base it decodes from (`bases_kept`); a base is shared by the members of one emitter and generation, and is
dropped when no archived elite names it any more. The archive thus holds at most one base per cell, 8 n bytes in the
diagonal form: a run whose cells times that exceeds MAX_BASE_BYTES is refused (map-elites, whose elites are seed
chains, is the algorithm for large networks with many cells).

Live set(): emitters (new ones start at archive elites; removed ones are the last), population_size (the same
distributions, new weights), sigma_init (from the next start or restart), the rules. The archive's shape, the `es`
and CMA-MAE's thresholds are fixed for a run.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from workbench.checks import check_int, check_real
from workbench.evolution.cma_update import CMAUpdate, CovarianceUpdate, DiagonalUpdate
from workbench.evolution.distribution_search import COLLAPSE, EXPLOSION, MAX_CONDITION, MAX_FULL_DIMENSION
from workbench.evolution.genome import Genome, GenomeDecoder, base_key
from workbench.evolution.hyperparameters import hyperparameter
from workbench.evolution.quality_diversity import ArchiveSearch, ArchiveSettings, make_archive
from workbench.evolution.space import ParameterSpace
from workbench.evolution.strategy import EvaluationRequest

ES_FORMS: dict[str, type[CMAUpdate]] = {"sep-cma-es": DiagonalUpdate, "cma-es": CovarianceUpdate}
RANKERS = ("2imp", "imp")
SELECTION_RULES = ("filter", "mu")
RESTART_RULES = ("no_improvement", "basic")
INITIAL_MEANS = ("zeros", "random")
MAX_BASE_BYTES = 4 * 2**30  # the archived elites' bases at most (one per cell)
FLAT_RANKING = 1e-12
CHUNK = 32  # members' draws read from the noise table at a time (the diagonal form streams them)


@dataclasses.dataclass(frozen=True)
class CMAMEConfig(ArchiveSettings):
    """CMA-ME's and CMA-MAE's hyperparameters (the defaults are CMA-ME's; the registry's "cma-mae" sets imp, mu, basic
    and an archive learning rate of 0.01)."""

    emitters: int = hyperparameter(5, "emitters", "CMA-ES emitters, population_size members each", scale="int", low=1, high=50)
    population_size: int | None = hyperparameter(
        None, "population size", "members per emitter and generation (None: 4 + 3 ln n)", scale="int", low=4, high=500
    )
    sigma_init: float = hyperparameter(
        0.05, "initial σ", "an emitter's step size when it starts or restarts", scale="log", low=1e-4, high=10.0
    )
    es: str = hyperparameter(
        "sep-cma-es", "emitter CMA-ES", '"sep-cma-es" (diagonal covariance) or "cma-es" (full, up to 5,000 parameters)'
    )
    initial: str = hyperparameter("zeros", "initial mean", '"zeros" or "random" (the network\'s initialisation)')
    ranker: str = hyperparameter("2imp", "ranker", '"2imp" (entered first, then improvement) or "imp" (improvement)')
    selection_rule: str = hyperparameter("filter", "selection", '"filter" (the members that entered) or "mu" (half)')
    restart_rule: str = hyperparameter("no_improvement", "restart rule", '"no_improvement" or "basic" (degenerate only)')
    archive_learning_rate: float = hyperparameter(
        1.0, "archive learning rate α", "1: CMA-ME's thresholds; below 1: CMA-MAE's soft ones", scale="log", low=1e-3, high=1.0
    )
    threshold_min: float | None = hyperparameter(
        None, "threshold min", "CMA-MAE: an empty cell's threshold (None: the QD-score offset)"
    )
    episodes_per_member: int = hyperparameter(1, "episodes per member", "episodes of each member", scale="int")

    def validated(self) -> CMAMEConfig:
        self._validated_archive()
        check_int("emitters", self.emitters, 1)
        if self.population_size is not None:
            check_int("population_size", self.population_size, 4)
        check_real("sigma_init", self.sigma_init, 0, low_open=True)
        for name, choices in (
            ("es", tuple(ES_FORMS)),
            ("initial", INITIAL_MEANS),
            ("ranker", RANKERS),
            ("selection_rule", SELECTION_RULES),
            ("restart_rule", RESTART_RULES),
        ):
            if getattr(self, name) not in choices:
                raise ValueError(f"{name} must be one of {choices}, got {getattr(self, name)!r}")
        check_real("archive_learning_rate", self.archive_learning_rate, 0, 1, low_open=True)
        if self.threshold_min is not None:
            check_real("threshold_min", self.threshold_min)
            if self.archive_learning_rate == 1:
                raise ValueError("threshold_min applies to CMA-MAE's soft thresholds: it needs an archive_learning_rate below 1")
        check_int("episodes_per_member", self.episodes_per_member, 1)
        return self

    @property
    def soft_threshold_min(self) -> float:
        """CMA-MAE's threshold of an empty cell: threshold_min, or the QD-score offset when it is None."""
        return self.qd_score_offset if self.threshold_min is None else float(self.threshold_min)

    @classmethod
    def tutorial(cls) -> CMAMEConfig:
        return cls(emitters=2, population_size=16, sigma_init=0.1, cells=16)


@dataclasses.dataclass
class Emitter:
    """One CMA-ES of CMA-ME: its update, the generation's noise offsets (None until drawn), its restarts."""

    update: CMAUpdate
    restarts: int = 0
    offsets: list[int] | None = None
    genomes: list[Genome] = dataclasses.field(default_factory=list)  # the generation's members, once drawn
    bases: dict[str, np.ndarray] = dataclasses.field(default_factory=dict)  # and the bases they decode from


class CMAME(ArchiveSearch):
    """CMA-ME / CMA-MAE on a ParameterSpace; `seed` drives the initial mean ("random"), every draw and the restarts."""

    kind = "CMAME"
    config_class = CMAMEConfig
    EXTRAS = ArchiveSearch.EXTRAS + ("step_size", "restarts")
    FIXED = ArchiveSearch.FIXED + ("es", "archive_learning_rate", "threshold_min")

    def __init__(self, config: CMAMEConfig, space: ParameterSpace, seed: int = 0) -> None:
        super().__init__(config, space, seed)
        config = self.config
        soft = config.archive_learning_rate < 1
        self.search_archive = (
            make_archive(config, config.archive_learning_rate, config.soft_threshold_min) if soft else self.archive
        )
        n = space.num_parameters
        random = config.initial == "random"
        self.initial_mean = space.initial(space.sample_offset(self.rng)).astype(np.float64) if random else np.zeros(n)
        self.emitters = [Emitter(self._new_update(self.initial_mean)) for _ in range(config.emitters)]
        self.bases_kept: dict[str, np.ndarray] = {}  # the bases archived elites decode from
        self.restarts = 0

    def _validate(self, config):
        config = super()._validate(config)
        n = self.space.num_parameters
        if n < 2:
            raise ValueError(f"{self.kind} needs at least 2 parameters, the space has {n}")
        if config.es == "cma-es" and n > MAX_FULL_DIMENSION:
            raise ValueError(
                f'es "cma-es" keeps a full {n} x {n} covariance per emitter: {n} parameters are more than its limit of '
                f'{MAX_FULL_DIMENSION:,}; use es "sep-cma-es" (a diagonal covariance)'
            )
        cells = config.total_cells
        per_base = (4 if config.es == "cma-es" else 8) * n
        if cells is not None and cells * per_base > MAX_BASE_BYTES:
            raise ValueError(
                f"cells: an archive of {cells:,} cells keeps up to one base of {per_base / 2**20:.1f} MiB per elite "
                f"({n:,} parameters), {cells * per_base / 2**30:.1f} GiB in all, above {MAX_BASE_BYTES / 2**30:.0f} "
                "GiB; use fewer cells, or map-elites (its elites are seed chains) for a network this large"
            )
        return config

    def start_from(self, weights: np.ndarray) -> None:
        """Every emitter starts at `weights` (before the first round; see Strategy.start_from), as pyribs's x0."""
        self.initial_mean = self._starting_weights(weights).astype(np.float64)
        self.emitters = [Emitter(self._new_update(self.initial_mean)) for _ in range(self.config.emitters)]

    def _new_update(self, mean: np.ndarray) -> CMAUpdate:
        return ES_FORMS[self.config.es](mean, self.config.sigma_init, self.config.population_size)

    # -- members --------------------------------------------------------------------------
    def _draw(self) -> None:
        """Each emitter's offsets and members for this generation, once (emitters in order)."""
        for emitter in self.emitters:
            if emitter.offsets is None:
                emitter.offsets = [self.space.sample_offset(self.rng) for _ in range(emitter.update.population_size)]
                self._ship(emitter)

    def _ship(self, emitter: Emitter) -> None:
        """emitter.genomes and emitter.bases from its offsets (module docstring)."""
        update, offsets = emitter.update, emitter.offsets
        assert offsets is not None
        if isinstance(update, DiagonalUpdate):
            base = np.stack([update.mean, update.scales()]).astype(np.float32)
            key = base_key(base)
            emitter.genomes = [Genome(key, ((offset, 1.0, 0),)) for offset in offsets]
            emitter.bases = {key: base}
        else:
            members = update.sample(self._draws(offsets)).astype(np.float32)
            keys = [base_key(member) for member in members]
            emitter.genomes = [Genome(key) for key in keys]
            emitter.bases = dict(zip(keys, members))

    def _draws(self, offsets, out: np.ndarray | None = None) -> np.ndarray:
        """The draws z at `offsets`, float64 [len(offsets), n] (into `out`)."""
        n = self.space.num_parameters
        z = np.empty((len(offsets), n)) if out is None else out[: len(offsets)]
        for row, offset in zip(z, offsets):
            row[:] = self.space.noise.slice(offset, n)
        return z

    def _ask(self):
        self._draw()
        episodes = self.config.episodes_per_member
        return [
            EvaluationRequest(genome, episodes, "population", behaviour=True)
            for emitter in self.emitters
            for genome in emitter.genomes
        ]

    def bases(self) -> dict:
        """The bases of this generation's members (one per emitter, or one per member in the full form)."""
        self._draw()
        return {key: base for emitter in self.emitters for key, base in emitter.bases.items()}

    def _shipped(self, genome: Genome) -> tuple[Genome, dict]:
        return genome, ({genome.init: self.bases_kept[genome.init]} if isinstance(genome.init, str) else {})

    # -- the update -----------------------------------------------------------------------
    def _tell(self, requests, results, means):
        objectives, descriptors = self._candidates(results, means)
        genomes = [genome for emitter in self.emitters for genome in emitter.genomes]
        searched = self.search_archive.add(genomes, objectives, descriptors, self.generation)
        shown = (
            searched
            if self.search_archive is self.archive
            else self.archive.add(genomes, objectives, descriptors, self.generation)
        )
        self._keep_bases()
        start = 0
        for emitter in self.emitters:
            size = emitter.update.population_size
            self._tell_emitter(emitter, searched.status[start : start + size], searched.value[start : start + size])
            start += size
        self._record_archive_generation(
            requests,
            means,
            shown,
            step_size=float(np.median([emitter.update.step_size for emitter in self.emitters])),
            restarts=self.restarts,
        )
        self._start_next_generation()

    def _keep_bases(self) -> None:
        """bases_kept: the bases the archives' elites decode from, those of this generation's entrants added."""
        round_bases = {key: base for emitter in self.emitters for key, base in emitter.bases.items()}
        kept: dict[str, np.ndarray] = {}
        for archive in {id(self.archive): self.archive, id(self.search_archive): self.search_archive}.values():
            for cell in archive.occupied_cells():
                key = archive.genomes[int(cell)].init
                if isinstance(key, str) and key not in kept:
                    base = self.bases_kept.get(key, round_bases.get(key))
                    assert base is not None, "an archived elite's base was lost"
                    kept[key] = base
        self.bases_kept = kept

    def _tell_emitter(self, emitter: Emitter, status: np.ndarray, value: np.ndarray) -> None:
        config, size = self.config, emitter.update.population_size
        value = np.where(np.isfinite(value), value, -np.inf)  # a rejected member ranks last
        if config.ranker == "2imp":
            order = np.lexsort((np.arange(size), -value, -status))  # status, then value, both descending
            ranking = np.stack([status.astype(np.float64), value], axis=1)[order]
        else:
            order = np.lexsort((np.arange(size), -value))
            ranking = value[order][:, None]
        entered = int((status > 0).sum())
        parents = entered if config.selection_rule == "filter" else size // 2
        if parents:
            self._update(emitter, order, parents)
        flat = bool(np.isfinite(ranking[[0, -1]]).all() and np.linalg.norm(ranking[0] - ranking[-1]) < FLAT_RANKING)
        scales = emitter.update.scales()
        degenerate = (
            not COLLAPSE * config.sigma_init <= float(scales.max()) <= EXPLOSION * config.sigma_init
            or emitter.update.condition() > MAX_CONDITION
        )
        if degenerate or flat or (config.restart_rule == "no_improvement" and entered == 0):
            self._restart(emitter)
        emitter.offsets, emitter.genomes, emitter.bases = None, [], {}

    def _update(self, emitter: Emitter, order: np.ndarray, parents: int) -> None:
        """The emitter's CMA update from its members ranked best first (`order`) with `parents` parents."""
        update, offsets = emitter.update, emitter.offsets
        assert offsets is not None
        if isinstance(update, DiagonalUpdate):  # stream the parents' draws
            weights = update.ranked_weights(parents)
            z_w, zz_w = np.zeros(update.n), np.zeros(update.n)
            buffer = np.empty((CHUNK, update.n))
            for start in range(0, parents, CHUNK):
                ranks = np.arange(start, min(parents, start + CHUNK))
                z = self._draws([offsets[order[r]] for r in ranks], buffer)
                # einsum's own loop, not BLAS: a few rows, and BLAS's threads stall when other work holds the cores
                z_w += np.einsum("k,kn->n", weights[ranks], z, optimize=False)
                zz_w += np.einsum("k,kn->n", weights[ranks], np.square(z), optimize=False)
            update.tell_sums(z_w, zz_w, parents)
        else:
            z = self._draws([offsets[k] for k in order])
            update.tell(z, -np.arange(len(order), dtype=np.float64), parents)

    def _restart(self, emitter: Emitter) -> None:
        """The emitter starts again (see _restart_mean) and counts it."""
        emitter.update = self._new_update(self._restart_mean())
        emitter.restarts += 1
        self.restarts += 1

    def _restart_mean(self) -> np.ndarray:
        """An elite drawn uniformly from the archive the emitters climb, float64 (the initial mean while it is empty)."""
        archive = self.search_archive
        if not archive.size:
            return self.initial_mean
        genome = archive.genomes[int(archive.sample(self.rng, 1)[0])]
        decoder = GenomeDecoder(self.space, cache_bytes=0)
        for key, base in self._shipped(genome)[1].items():
            decoder.add_base(key, base)
        return decoder.decode_full(genome).astype(np.float64)

    def _start_next_generation(self) -> None:
        before = self.config.population_size
        super()._start_next_generation()
        config = self.config
        if config.population_size != before:  # the same distributions, the new population's weights
            for emitter in self.emitters:
                state = emitter.update.state_dict()
                emitter.update = self._new_update(emitter.update.mean)
                emitter.update.load(state)
        del self.emitters[config.emitters :]
        while config.emitters > len(self.emitters):  # a new emitter starts where a restart would
            self.emitters.append(Emitter(self._new_update(self._restart_mean())))

    # -- state ----------------------------------------------------------------------------
    def state_dict(self) -> dict:
        """The common state, both archives (genomes as JSON), the bases their elites decode from and the emitters."""

        def encode(genome: Genome) -> dict:
            return genome.to_json()

        separate = self.search_archive is not self.archive
        return dict(
            self._common_state(),
            archive=self.archive.state_dict(encode),
            search_archive=self.search_archive.state_dict(encode) if separate else None,
            bases={key: base.copy() for key, base in self.bases_kept.items()},
            emitters=[
                dict(
                    update=emitter.update.state_dict(),
                    population=emitter.update.population_size,
                    restarts=emitter.restarts,
                    offsets=None if emitter.offsets is None else list(emitter.offsets),
                )
                for emitter in self.emitters
            ],
            initial_mean=self.initial_mean.copy(),
            restarts=self.restarts,
        )

    def _load(self, state):
        n = self.space.num_parameters
        kept = {}
        for key, base in state["bases"].items():
            base = np.array(base, np.float32)
            if base_key(base) != key:
                raise ValueError(f"corrupt {self.kind} state: a base does not match its key {key!r:.40}")
            kept[key] = base
        self.bases_kept = kept

        def decode(data: Any) -> Genome:
            genome = Genome.from_json(data)
            if genome.has_base and genome.init not in kept:
                raise ValueError(f"corrupt {self.kind} state: an elite names a base the state lacks ({genome.init!r:.40})")
            return genome

        self.archive.load_state(state["archive"], decode)
        if (state["search_archive"] is None) != (self.search_archive is self.archive):
            raise ValueError(f"corrupt {self.kind} state: its archives do not match archive_learning_rate")
        if state["search_archive"] is not None:
            self.search_archive.load_state(state["search_archive"], decode)
        self.initial_mean = np.array(state["initial_mean"], np.float64)
        if self.initial_mean.shape != (n,) or not np.isfinite(self.initial_mean).all():
            raise ValueError(f"corrupt {self.kind} state: initial_mean must be [{n}] finite values")
        self.restarts = int(state["restarts"])
        self.emitters = []
        for k, saved in enumerate(state["emitters"]):
            population = check_int(f"emitters[{k}] population", saved["population"], 4)
            update = ES_FORMS[self.config.es](np.zeros(n), self.config.sigma_init, population)
            try:
                update.load(saved["update"])
            except ValueError as error:
                raise ValueError(f"corrupt {self.kind} state: emitters[{k}]: {error}") from None
            emitter = Emitter(update, int(saved["restarts"]))
            if saved["offsets"] is not None:  # a checkpoint inside a round: the same members again
                offsets = [self.space.check_offset(int(o), name=f"emitters[{k}] offsets") for o in saved["offsets"]]
                if len(offsets) != population:
                    raise ValueError(f"corrupt {self.kind} state: emitters[{k}] has {len(offsets)} offsets for {population}")
                emitter.offsets = offsets
                self._ship(emitter)
            self.emitters.append(emitter)
        if not self.emitters:
            raise ValueError(f"corrupt {self.kind} state: no emitters")
