"""DistributionSearch: a strategy that samples its members from an adapted Gaussian, mean + A z.

The search distribution is a SearchDistribution (cma_update.py's CovarianceUpdate and DiagonalUpdate, snes.py's,
cem.py's, crfmnes.py's: the interface below) and z is a noise-table slice per member, so a member is its offset. How members
travel depends on A:

  diagonal A (sep-CMA-ES,   one base [2, n] per generation, the mean and the per-parameter scales; a member
  SNES, CEM)
                            is Genome(key, ((offset, 1),)): mean + scales * z. Ships 4 + 8 bytes and a 40-byte key;
                            decodes like any full-rank mutation (the population ops run it without building it).
  diagonal + rank one       one base [3, n] per generation, the mean, the scales sigma D and a direction w; a member is
  (CR-FM-NES)               Genome(key, ((offset, +-1),)): mean + scales * (z + (w . z) w), mirrored in pairs z, -z.
                            Ships as the diagonal form; decoding adds one dot product over n.
  full A (CMA-ES)           a dense base per member, mean + sigma B D z in float32 (n values), since A is n x n:
                            ships 4 n bytes, decodes for free. The full form refuses spaces above MAX_FULL_DIMENSION.

A generation is one round: the members ("population", episodes_per_member each) and, when center_episodes > 0,
the mean ("center", for reporting; not in the update). A member whose mean return is not finite ranks last and is
counted in the record (`nonfinite`); a generation where no member's return is finite stops with a ValueError.
The elite is the mean. The draws of the update are read back from the noise table at the members' offsets; the
diagonal form streams them in chunks (a million parameters times hundreds of members is not one matrix).

Step-size and covariance health: eigenvalues the update had to raise (the covariance lost positive definiteness
to rounding) are counted (`repairs`). When the distribution collapses (its largest standard deviation below
1e-12 of the initial sigma), explodes (above 1e12 of it), C's condition passes 1e14 or the best and worst
fitness stay within 1e-12 over 10 + 30 n / lambda generations (the `cmaes` package's stopping rules, relative to
sigma_init), the search restarts as pycma's restarts do (IPOP: the initial sigma and C = I, the population doubled, up to
max_population) and counts it (`restarts`). It restarts at the current mean (restart_from="mean", which keeps a
policy's progress) or at the initial one (restart_from="initial", pycma's IPOP from its x0).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Protocol

import numpy as np

from workbench.checks import check_int
from workbench.evolution.cma_update import ranking
from workbench.evolution.genome import Genome, base_key
from workbench.evolution.noise_handling import UncertaintyHandler, reevaluation_count
from workbench.evolution.space import ParameterSpace
from workbench.evolution.strategy import EvaluationRequest, Strategy, shifted_returns


class SearchDistribution(Protocol):
    """What DistributionSearch needs of a distribution's update. Separable ones (diagonal A) also have
    ranked_weights() [lambda] and tell_sums(z_w, zz_w): the update from sum_k w_k z_k and sum_k w_k z_k^2 over
    the members ranked best first, so that the draws can be streamed. One that streams the ranked draws itself
    has tell_ranked(draws, feasible) instead; member_base() gives a base other than [mean, scales]; mirrored =
    True draws members in pairs z, -z (CR-FM-NES)."""

    n: int
    population_size: int
    mean: np.ndarray  # float64 [n]
    repairs: int  # eigenvalues or variances the update had to raise to its floor, over the run

    @property
    def step_size(self) -> float:
        """The overall step size (CMA: sigma; per-parameter scales: their geometric mean)."""

    def scales(self) -> np.ndarray:
        """The per-parameter standard deviations, float64 [n]."""

    def condition(self) -> float:
        """The condition number of the covariance."""

    def sample(self, z: np.ndarray) -> np.ndarray:
        """Members mean + A z, float64 [lambda, n]."""

    def tell(self, z: np.ndarray, fitness: np.ndarray) -> None:
        """One generation's update from the draws [lambda, n] and fitness [lambda] (maximised)."""

    def state_dict(self) -> dict: ...

    def load(self, state: Mapping) -> None: ...


MAX_FULL_DIMENSION = 5_000  # a full covariance is n^2 float64 (200 MB at 5,000) and an eigendecomposition per update
COLLAPSE, EXPLOSION, MAX_CONDITION = 1e-12, 1e12, 1e14
FLAT_FITNESS = 1e-12  # the range of best and worst fitness over the stagnation window that counts as flat


class DistributionSearch(Strategy):
    """The shared part of the adapted-Gaussian strategies (see the module docstring).

    A subclass says how its distribution is made (_new_update(mean, population_size)) and whether its members
    are dense (`dense_members`). Its config has population_size (None = the update's default), sigma_init,
    initial ("zeros" or "random"), episodes_per_member, center_episodes and max_population.
    """

    dense_members: ClassVar[bool] = False
    STATE_VERSIONS = (1, 2, 3)  # 2: the mean the last generation played (version 1 kept none); 3: noise handling
    EXTRAS: ClassVar[tuple[str, ...]] = ("step_size", "scale_min", "scale_max", "condition", "nonfinite", "repairs", "restarts")
    START_ONLY = ("sigma_init", "initial")  # fields that mean something only before the first generation
    UPDATE_FIELDS: ClassVar[tuple[str, ...]] = ("population_size",)  # fields _new_update reads: a live change rebuilds

    def __init__(self, config: Any, space: ParameterSpace, seed: int = 0) -> None:
        super().__init__(config, space, seed)
        initial = space.initial(space.sample_offset(self.rng)) if self.config.initial == "random" else None
        self._start(np.zeros(space.num_parameters) if initial is None else initial, self.config.population_size)
        self.restarts = 0
        self._mean_before: np.ndarray | None = None  # float32: the newest record's elite (the mean it played)
        self.fitness_ranges: list[list[float]] = []  # [best, worst] per generation since the last restart
        self._stagnant = False
        self.noise = UncertaintyHandler(space.num_parameters) if self._noise_handling else None
        self.replays: int | None = None  # members the generation plays again (noise handling), once drawn

    @property
    def _noise_handling(self) -> bool:
        return bool(getattr(self.config, "noise_handling", False))

    def _validate(self, config):
        config = super()._validate(config)
        n = self.space.num_parameters
        if self.dense_members and n > MAX_FULL_DIMENSION:
            raise ValueError(
                f"{self.kind} keeps a full {n} x {n} covariance: {n} parameters are more than its limit of "
                f"{MAX_FULL_DIMENSION:,} ({8 * n * n / 2**30:.1f} GiB and an eigendecomposition per generation); "
                "use sep-cma-es (a diagonal covariance) for large networks"
            )
        if n < 2:
            raise ValueError(f"{self.kind} needs at least 2 parameters, the space has {n}")
        return config

    def _new_update(self, mean: np.ndarray, population_size: int | None) -> SearchDistribution:
        """A new distribution at `mean` (float64 [n]) with the initial step size and `population_size` members."""
        raise NotImplementedError

    def _start(self, mean: np.ndarray, population_size: int | None, restart: bool = False) -> None:
        if not restart:
            self.initial_mean = np.array(mean, np.float32)  # where a restart with restart_from="initial" begins
        self.update = self._new_update(np.asarray(mean, np.float64), population_size)
        self.offsets: list[int] | None = None
        self.center_fitness: float | None = None
        self._rekey()

    def start_from(self, weights: np.ndarray) -> None:
        """The mean starts at `weights` (before the first round; see Strategy.start_from)."""
        self._start(self._starting_weights(weights), self.config.population_size)

    def map_policy(self, transform: Callable[[np.ndarray], np.ndarray]) -> None:
        """The mean (and the initial mean a restart may return to) become transform(mean): the same policy under
        new observation statistics (Strategy.map_policy). The distribution's shape is kept."""
        mean = np.asarray(transform(self.update.mean), np.float64)
        initial = np.asarray(transform(self.initial_mean.astype(np.float64)), np.float32)
        for name, vector in (("mean", mean), ("initial mean", initial)):
            if vector.shape != self.update.mean.shape or not np.isfinite(vector).all():
                raise ValueError(f"map_policy: the mapped {name} must be [{self.update.n}] finite values, got {vector.shape}")
        self.update.mean, self.initial_mean = mean, initial
        self._rekey()
        if self.offsets is not None and self.dense_members:  # members drawn already: around the mapped mean
            self._densify()

    # -- members --------------------------------------------------------------------------
    def _rekey(self) -> None:
        mean = self.update.mean.astype(np.float32)
        self._center_key = base_key(mean)
        self._bases = {self._center_key: mean}
        if not self.dense_members:
            member_base = getattr(self.update, "member_base", None)  # CR-FM-NES: [mean, scales, direction]
            base = member_base() if member_base is not None else np.stack([self.update.mean, self.update.scales()])
            self._member_base = base.astype(np.float32)
            self._member_key = base_key(self._member_base)
            self._bases[self._member_key] = self._member_base

    def bases(self) -> dict:
        self._draw_members()
        return dict(self._bases)

    def axes(self) -> np.ndarray | None:
        """The search distribution's standard deviations along its principal axes, largest first (float64; the
        covariance spectrum's square roots), or None where the dimension does not allow them (CR-FM-NES above
        2,000 parameters)."""
        axes = getattr(self.update, "axes", None)
        return None if axes is None else axes()

    def elite_bases(self) -> dict:
        """bases() and the mean the last generation's members were drawn around: its record's elite."""
        bases = self.bases()
        if self._mean_before is not None:
            bases[base_key(self._mean_before)] = self._mean_before
        return bases

    @property
    def _mirrored(self) -> bool:
        """Members come in pairs z, -z (CR-FM-NES): one offset per pair, the second half the negated first."""
        return bool(getattr(self.update, "mirrored", False))

    def _draw_members(self) -> None:
        """This generation's offsets (and the full form's dense members), once per generation."""
        if self.offsets is None:
            count = self.update.population_size // (2 if self._mirrored else 1)
            self.offsets = [self.space.sample_offset(self.rng) for _ in range(count)]
            self.replays = reevaluation_count(self.update.population_size, self.rng) if self._noise_handling else None
            if self.dense_members:
                self._densify()

    def _member(self, k: int) -> tuple[int, float]:
        """Member k's (offset, sign)."""
        assert self.offsets is not None
        pairs = len(self.offsets)
        return (self.offsets[k], 1.0) if k < pairs else (self.offsets[k - pairs], -1.0)

    def _member_draws(self, members, out: np.ndarray | None = None) -> np.ndarray:
        """The draws z of members (indices into the generation), float64 [len(members), n] (into `out`)."""
        n = self.space.num_parameters
        drawn = [self._member(k) for k in members]
        z = np.empty((len(drawn), n)) if out is None else out[: len(drawn)]
        for row, (offset, sign) in zip(z, drawn):
            np.multiply(self.space.noise.slice(offset, n), sign, out=row)  # exact: the sign is +-1
        return z

    def _densify(self) -> None:
        assert self.offsets is not None
        members = self.update.sample(self._member_draws(range(self.update.population_size))).astype(np.float32)
        self._member_keys = [base_key(member) for member in members]
        self._bases.update(zip(self._member_keys, members))

    def members(self) -> np.ndarray:
        """This round's members in float64, [lambda, n]: the update's own samples (decoding their genomes gives the
        same members in float32). For objectives that need more precision than float32 weights (COCO's targets
        reach 1e-8)."""
        self._draw_members()
        return self.update.sample(self._member_draws(range(self.update.population_size)))

    def _ask(self):
        config = self.config
        self._draw_members()
        assert self.offsets is not None
        if self.dense_members:
            genomes = [Genome(key) for key in self._member_keys]
        else:
            genomes = [Genome(self._member_key, (self._member(k),)) for k in range(self.update.population_size)]
        requests = [EvaluationRequest(genome, config.episodes_per_member, "population") for genome in genomes]
        if config.center_episodes:
            requests.append(EvaluationRequest(Genome(self._center_key), config.center_episodes, "center"))
        for genome in genomes[: self.replays or 0]:  # noise handling: the first members again, on other episodes
            requests.append(EvaluationRequest(genome, config.episodes_per_member, "replay"))
        return requests

    @property
    def phase(self) -> str:
        return "population"

    @property
    def elite(self) -> Genome:
        return Genome(self._center_key)

    # -- the update -----------------------------------------------------------------------
    def _tell(self, requests, results, means):
        assert self.offsets is not None, "the offsets are drawn in _ask"
        lam = self.update.population_size
        bonus = getattr(self.config, "survival_bonus", 0.0)
        ranked = shifted_returns(results[:lam], bonus) if bonus else np.asarray(means[:lam], np.float64)
        fitness = np.asarray(means[:lam], np.float64)
        finite = np.isfinite(fitness)
        if not finite.any():
            raise ValueError(
                f"{self.kind} generation {self.generation}: no member's return is finite ({lam} members); "
                "the update has nothing to rank"
            )
        if self.config.center_episodes:
            self.center_fitness = float(means[lam])
        self._update(ranking(ranked), int(finite.sum()))
        measured = {}
        if self.noise is not None and self.replays:
            measured["noise_measure"] = self._measure_noise(ranked, results[lam + (1 if self.config.center_episodes else 0) :])
        self._remember_range(ranked[finite])
        self._restart_if_degenerate()
        self._record_generation(
            np.where(finite, fitness, -np.inf),
            self.center_fitness if self.config.center_episodes else None,
            self.elite_before,
            sum(r.episodes for r in requests),
            step_size=self.update.step_size,
            scale_min=float(self.scales.min()),
            scale_max=float(self.scales.max()),
            condition=self.condition,
            nonfinite=int((~finite).sum()),
            repairs=self.update.repairs,
            restarts=self.restarts,
            **measured,
        )
        self._start_next_generation()

    def _update(self, order: np.ndarray, feasible: int) -> None:
        """The update from the members ranked best first (`order`, indices into the generation's members);
        feasible: how many returns were finite."""
        assert self.offsets is not None
        self.elite_before = Genome(self._center_key)  # the mean the members were drawn around (and played)
        self._mean_before = self._bases[self._center_key]
        update: Any = self.update
        if hasattr(update, "tell_ranked"):  # streams the ranked draws itself (CR-FM-NES)
            buffers: dict[int, np.ndarray] = {}  # one per chunk size, reused: fresh pages cost more than the copy

            def draws(ranks):
                out = buffers.setdefault(len(ranks), np.empty((len(ranks), update.n)))
                return self._member_draws([order[r] for r in ranks], out)

            update.tell_ranked(draws, feasible)
            self.scales, self.condition = update.scales(), update.condition()
            return
        if hasattr(update, "tell_sums"):  # separable: stream the members with a weight
            weights = np.asarray(update.ranked_weights(), np.float64)
            used = np.flatnonzero(weights)
            z_w, zz_w = np.zeros(update.n), np.zeros(update.n)
            buffer, squares = np.empty((32, update.n)), np.empty((32, update.n))  # reused: fresh pages cost more
            for start in range(0, used.size, 32):
                rows = used[start : start + 32]
                z = self._member_draws([order[k] for k in rows], buffer)
                z_w += weights[rows] @ z
                zz_w += weights[rows] @ np.square(z, out=squares[: len(z)])
            update.tell_sums(z_w, zz_w)
        else:
            z = self._member_draws(order)
            self.update.tell(z, -np.arange(len(order), dtype=np.float64))  # already ranked: keep the order
        self.scales = self.update.scales()
        self.condition = self.update.condition()

    def _measure_noise(self, ranked: np.ndarray, replays) -> float:
        """Noise handling (noise_handling.py): the rank changes of the re-played members; sigma grows by the
        handler's factor while noise dominates. Returns the smoothed measure for the record."""
        assert self.noise is not None and self.replays
        bonus = getattr(self.config, "survival_bonus", 0.0)
        again = shifted_returns(replays, bonus) if bonus else np.array([np.mean(r.returns) for r in replays], np.float64)
        costs = np.where(np.isfinite(ranked), -ranked, np.inf)
        recosts = costs.copy()
        recosts[: self.replays] = np.where(np.isfinite(again), -again, np.inf)
        factor = self.noise.measure(costs, recosts, range(self.replays))
        if factor != 1.0:
            update: Any = self.update  # the CMA forms (the configs with noise_handling) have a sigma
            update.sigma *= factor
            self.scales = self.update.scales()
        return self.noise.noise_s

    def _remember_range(self, finite: np.ndarray) -> None:
        """The best and worst finite fitness of this generation, over the stagnation window (10 + 30 n / lambda)."""
        window = 10 + math.ceil(30 * self.update.n / self.update.population_size)
        self.fitness_ranges = (self.fitness_ranges + [[float(finite.max()), float(finite.min())]])[-window:]
        self._stagnant = len(self.fitness_ranges) == window and (np.ptp(np.asarray(self.fitness_ranges)) < FLAT_FITNESS)

    def _restart_if_degenerate(self) -> None:
        """IPOP restart when sigma collapsed or exploded, C's condition is too large or the fitness stayed flat over
        the stagnation window (module docstring)."""
        spread = float(self.scales.max())
        initial = self.config.sigma_init
        healthy = COLLAPSE * initial <= spread <= EXPLOSION * initial and self.condition <= MAX_CONDITION
        if healthy and not self._stagnant:
            self._rekey()
            return
        self.restarts += 1
        self.fitness_ranges, self._stagnant = [], False
        population = min(2 * self.update.population_size, self.config.max_population)
        repairs = self.update.repairs
        self._start(self.update.mean if self.config.restart_from == "mean" else self.initial_mean, population, restart=True)
        self.update.repairs = repairs
        self.scales, self.condition = self.update.scales(), self.update.condition()

    def _start_next_generation(self) -> None:
        before = {name: getattr(self.config, name) for name in self.UPDATE_FIELDS}
        super()._start_next_generation()
        self.offsets = None
        if self._noise_handling != (self.noise is not None):  # a live change of noise_handling
            self.noise = UncertaintyHandler(self.space.num_parameters) if self._noise_handling else None
        changed = {name for name, value in before.items() if getattr(self.config, name) != value}
        if changed:
            self._rebuild("population_size" in changed)

    def _rebuild(self, new_population: bool) -> None:
        """A live change of a field the update reads (population_size, learning rates): the same distribution and
        paths, the weights and rates of the new settings; the population is the config's when it changed, else
        the current one (a restart's larger population stays)."""
        state = self.update.state_dict()
        population = self.config.population_size if new_population else self.update.population_size
        self.update = self._new_update(self.update.mean, population)
        self.update.load(state)
        self._rekey()

    # -- hyperparameters ------------------------------------------------------------------
    def set(self, **changes: Any) -> None:
        started = [name for name in self.START_ONLY if name in changes and self._asked]
        if started:
            raise ValueError(f"{', '.join(started)} only apply before the first generation; the {self.kind} has started")
        super().set(**changes)

    # -- state ----------------------------------------------------------------------------
    def state_dict(self) -> dict:
        update = {
            name: (value.copy() if isinstance(value, np.ndarray) else value) for name, value in self.update.state_dict().items()
        }
        return dict(
            self._common_state(),
            update=update,
            population=self.update.population_size,
            restarts=self.restarts,
            fitness_ranges=[list(pair) for pair in self.fitness_ranges],
            initial_mean=self.initial_mean.copy(),
            offsets=None if self.offsets is None else list(self.offsets),
            center_fitness=self.center_fitness,
            mean_before=None if self._mean_before is None else self._mean_before.copy(),
            noise=None if self.noise is None else self.noise.state_dict(),
            replays=self.replays,
        )

    def _load(self, state):
        population = int(state["population"])
        self.update = self._new_update(np.zeros(self.space.num_parameters), population)
        try:
            self.update.load(state["update"])
        except ValueError as error:
            raise ValueError(f"corrupt {self.kind} state: {error}") from None
        self.restarts = int(state["restarts"])
        self.fitness_ranges = [[float(best), float(worst)] for best, worst in state["fitness_ranges"]]
        self.initial_mean = np.array(state["initial_mean"], np.float32)
        if self.initial_mean.shape != (self.space.num_parameters,) or not np.isfinite(self.initial_mean).all():
            raise ValueError(f"corrupt {self.kind} state: initial_mean must be [{self.space.num_parameters}] finite values")
        self.center_fitness = None if state["center_fitness"] is None else float(state["center_fitness"])
        before = state["mean_before"] if state["version"] >= 2 else None
        self._mean_before = None if before is None else np.array(before, np.float32)
        if self._mean_before is not None and self._mean_before.shape != (self.space.num_parameters,):
            raise ValueError(f"corrupt {self.kind} state: mean_before must be [{self.space.num_parameters}] values")
        offsets = state["offsets"]
        noise, replays = (state["noise"], state["replays"]) if state["version"] >= 3 else (None, None)
        if self.noise is not None and noise is not None:
            try:
                self.noise.load(noise)
            except (KeyError, TypeError, ValueError) as error:
                raise ValueError(f"corrupt {self.kind} state: {error}") from None
        self.scales, self.condition = self.update.scales(), self.update.condition()
        self._rekey()
        self.offsets = None
        if offsets is not None:  # a checkpoint inside a round: the same members again
            self.offsets = [self.space.check_offset(int(o), name="offsets") for o in offsets]
            expected = population // (2 if self._mirrored else 1)
            if len(self.offsets) != expected:
                raise ValueError(f"corrupt {self.kind} state: {len(self.offsets)} offsets for a population of {population}")
            self.replays = None if replays is None or self.noise is None else check_int("replays", replays, 1)
            if self.dense_members:
                self._densify()
