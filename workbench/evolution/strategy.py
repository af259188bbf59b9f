"""Strategy: the ask/tell interface every search strategy has, its shared bookkeeping, the hyperparameter log.

A strategy never runs environments. Each round it is asked for evaluations and
told their results, until a generation ends:

    while not done:
        requests = strategy.ask()                   # [EvaluationRequest]
        returns = [evaluate(r.genome, r.episodes) for r in requests]   # one list of returns each
        strategy.tell(returns)                      # may end the generation (strategy.history grows)

What every strategy has (the interface the trainer, replays and the dashboard use):
  ask() / tell(results)    one round; `phase` names the round ("population", "elite candidate", ...)
  round_episode_cap        a cap below the run's for the episodes of the round ask() returns (None: the run's)
  generation, history      generations finished, and their GenerationRecords
  elite, bases()           the best genome so far (None before the first generation) and the dense
                           bases ({key: weights}) genomes start from ({} for seed chains only)
  set(**changes)           hyperparameters from the next generation on, validated now
  start_from(weights)      before the first round: search from these weights (strategies with a center;
                           the GA refuses: its population is seed chains)
  state_dict() / from_state(state, space)   exact save and restore
A subclass writes only what differs: _ask(), _tell(requests, results, means), _load(state), elite,
phase, and calls _record_generation() and _start_next_generation() when its generation ends.

A result is a sequence of episode returns, or an EvaluationResult that also
carries behaviour characterisations (one vector per episode), which requests
with behaviour=True need (novelty search). The objective is maximised; a NaN return counts as the worst possible.
Hyperparameters change between generations through set(): validated at once,
applied when the next generation starts, recorded with that generation number.
"""

from __future__ import annotations

import abc
import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from workbench.checks import check_int
from workbench.evolution.records import GenerationRecord

if TYPE_CHECKING:
    from workbench.evolution.genome import Genome
    from workbench.evolution.space import ParameterSpace


@dataclasses.dataclass(frozen=True)
class EvaluationRequest:
    """Evaluate `genome` for `episodes` episodes; `phase` says in which phase of the strategy's generation
    ("population", "elite candidate", "perturbation", "center", ...: a round may carry several).

    behaviour: the result must carry a behaviour characterisation per episode.
    """

    genome: Genome
    episodes: int
    phase: str
    behaviour: bool = False


@dataclasses.dataclass(frozen=True)
class EvaluationResult:
    """One request's outcome: returns [episodes]; behaviours [episodes, d] when asked for;
    steps and frames [episodes] when the evaluator reports them; observation_sums, when the evaluator
    normalises observations: (count [episodes], sum [episodes, d], sum of squares [episodes, d]) of the
    states each episode's policy saw (zero for episodes not sampled)."""

    returns: Sequence[float] | np.ndarray
    behaviours: np.ndarray | None = None
    steps: Sequence[int] | np.ndarray | None = None
    frames: Sequence[int] | np.ndarray | None = None
    observation_sums: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None


def fitness_value(value: float) -> float:
    """A finite float for ranking: NaN becomes -inf (the worst)."""
    value = float(value)
    return -math.inf if math.isnan(value) else value


def mean_return(returns: Sequence[float] | np.ndarray) -> float:
    """Mean of one request's returns with NaN as the worst (any NaN makes the mean -inf)."""
    values = [fitness_value(v) for v in np.atleast_1d(np.asarray(returns, np.float64))]
    if not values:
        raise ValueError("a request's returns must not be empty")
    return -math.inf if any(v == -math.inf for v in values) else float(np.mean(values))


def check_results(
    results: Sequence[Any], requests: Sequence[EvaluationRequest], finite_behaviours: bool = True
) -> list[EvaluationResult]:
    """[EvaluationResult] with float64 returns [episodes] (and behaviours [episodes, d]) per request; with
    finite_behaviours, a behaviour with a NaN or infinite value is refused."""
    if len(results) != len(requests):
        raise ValueError(f"tell() needs one result per request: {len(requests)} asked, {len(results)} given")
    checked = []
    for k, (result, request) in enumerate(zip(results, requests)):
        if not isinstance(result, EvaluationResult):
            result = EvaluationResult(result)
        returns = np.atleast_1d(np.asarray(result.returns, np.float64))
        if returns.ndim != 1 or returns.size != request.episodes:
            raise ValueError(f"returns[{k}] must hold {request.episodes} episode returns, got shape {returns.shape}")
        behaviours = None
        if request.behaviour:
            if result.behaviours is None:
                raise ValueError(f"results[{k}] needs behaviours: its request asks for a behaviour characterisation")
            behaviours = np.asarray(result.behaviours, np.float64)
            if behaviours.ndim != 2 or behaviours.shape[0] != request.episodes or behaviours.shape[1] == 0:
                raise ValueError(
                    f"results[{k}] behaviours must be [{request.episodes} episodes, d >= 1], got shape {behaviours.shape}"
                )
            if finite_behaviours and not np.isfinite(behaviours).all():
                raise ValueError(f"results[{k}] behaviours must be finite")
        checked.append(EvaluationResult(returns, behaviours, result.steps, result.frames, result.observation_sums))
    return checked


def centered_ranks(values: np.ndarray | Sequence[float]) -> np.ndarray:
    """Ranks of values mapped linearly onto [-0.5, 0.5] (OpenAI-ES shaping); equal values share their mean rank."""
    values = np.asarray(values, np.float64)
    flat = values.ravel()
    order = np.argsort(flat, kind="stable")
    ordered = flat[order]
    starts = np.concatenate([[0], np.flatnonzero(ordered[1:] != ordered[:-1]) + 1]).astype(np.int64)
    ends = np.concatenate([starts[1:], [flat.size]])
    ranks = np.empty(flat.size, np.float64)
    ranks[order] = np.repeat((starts + ends - 1) / 2.0, ends - starts)
    if flat.size > 1:
        ranks = ranks / (flat.size - 1) - 0.5
    else:
        ranks[:] = 0.0
    return ranks.reshape(values.shape)


def shifted_returns(results: Sequence[EvaluationResult], survival_bonus: float) -> np.ndarray:
    """Each request's mean return minus survival_bonus per step, NaN as the worst (mean_return): the training
    returns of strategies that remove a task's alive bonus (ARS's survival-bonus shift); records stay unshifted."""
    means = []
    for k, result in enumerate(results):
        returns = np.asarray(result.returns, np.float64)
        if survival_bonus:
            if result.steps is None:
                raise ValueError(f"results[{k}] lacks steps per episode: survival_bonus needs them")
            returns = returns - survival_bonus * np.asarray(result.steps, np.float64)
        means.append(mean_return(returns))
    return np.asarray(means, np.float64)


def fitness_summary(values: np.ndarray | Sequence[float]) -> dict[str, float]:
    """max / mean / median of fitness values, NaN as -inf and ignored by mean and median."""
    values = np.asarray(values, np.float64)
    finite = values[np.isfinite(values)]
    return {
        "max": float(values.max()),
        "mean": float(finite.mean()) if finite.size else -math.inf,
        "median": float(np.median(finite)) if finite.size else -math.inf,
    }


def check_known_fields(config_class: type, changes: Mapping[str, Any], owner: str | None = None) -> None:
    """ValueError listing the names in `changes` that are not fields of config_class, and the fields (the
    hyperparameters of `owner`, an algorithm's name; default: the class's name)."""
    known = sorted(f.name for f in dataclasses.fields(config_class))
    unknown = set(changes) - set(known)
    if unknown:
        raise ValueError(f"unknown {owner or config_class.__name__} hyperparameters {sorted(unknown)}; known: {known}")


class HyperparameterLog:
    """Pending changes (applied at the next generation) and the audit trail of applied ones.

    The strategies keep theirs; the Trainer keeps one for the evaluator's settings (the live
    episode cap), so both kinds of change are validated, pended, applied and recorded alike.
    `due` is the generation from which the pending changes may apply (take()).
    """

    def __init__(self) -> None:
        self.pending: dict[str, Any] = {}
        self.due = 0
        self.trail: list[dict[str, Any]] = []  # [{"generation": g, "name": value, ...}] in order

    def request(self, changes: dict, due: int = 0) -> None:
        self.pending.update(changes)
        self.due = max(self.due, due) if changes else self.due

    def take(self, generation: int) -> dict:
        """The pending changes, if they are due at `generation`, recorded under it; else {}."""
        if not self.pending or generation < self.due:
            return {}
        changes, self.pending = self.pending, {}
        self.trail.append(dict(generation=generation, **changes))
        return changes

    def apply(self, config: Any, generation: int, validate: Callable[[Any], Any]) -> Any:
        """The config with the pending changes (validated again), recorded under `generation`."""
        if not self.pending:
            return config
        config = validate(dataclasses.replace(config, **self.pending))
        self.take(generation)
        return config

    def state(self) -> dict:
        return {"pending": dict(self.pending), "due": self.due, "trail": [dict(entry) for entry in self.trail]}

    def load(self, state: dict) -> None:
        self.pending = dict(state["pending"])
        self.due = int(state.get("due", 0))
        self.trail = [dict(entry) for entry in state["trail"]]


class Strategy(abc.ABC):
    """The interface and bookkeeping of every search strategy; see the module docstring.

    Subclasses name their `kind`, `config_class` (a frozen dataclass with a validated() method that
    returns it or raises ValueError), the config field holding the mutation rank (`rank_field`, None
    when there is none) and the names of the numbers their records add (`EXTRAS`); ACCEPTS_NONFINITE_BEHAVIOURS
    lets NaN or infinite behaviours through to _tell (refused by default). STATE_VERSIONS: the
    versions of state_dict() from_state reads, the newest (the one state_dict writes) last; _load sees
    state["version"] and fills in what an older version lacks.
    """

    kind: ClassVar[str]
    config_class: ClassVar[type]
    rank_field: ClassVar[str | None] = None
    EXTRAS: ClassVar[tuple[str, ...]] = ()
    STATE_VERSIONS: ClassVar[tuple[int, ...]] = (1,)
    ACCEPTS_NONFINITE_BEHAVIOURS: ClassVar[bool] = False  # True: the strategy counts them itself (an archive does)

    def __init__(self, config: Any, space: ParameterSpace, seed: int = 0) -> None:
        from workbench.evolution.space import ParameterSpace

        if not isinstance(config, self.config_class):
            raise TypeError(f"config must be a {self.config_class.__name__}, got {type(config).__name__}")
        if not isinstance(space, ParameterSpace):
            raise TypeError(f"space must be a ParameterSpace, got {type(space).__name__}")
        self.space = space
        self.config = self._validate(config)
        self.rng = np.random.default_rng(check_int("seed", seed, 0))
        self.generation = 0
        self.hyperparameters = HyperparameterLog()
        self.history: list[GenerationRecord] = []
        self._requests: list[EvaluationRequest] | None = None
        self._asked = False  # a round has been handed out (or the state was restored): no warm start any more

    # -- ask/tell (template) --------------------------------------------------------------
    def ask(self) -> list[EvaluationRequest]:
        """The evaluations this round needs (the same list again until tell() is called)."""
        if self._requests is None:
            self._requests = list(self._ask())
            self._asked = True
        return list(self._requests)  # a copy: the caller may not change the round

    def tell(self, results: Sequence[Any]) -> None:
        """Results of the last ask(), one per request in order (EvaluationResults or sequences of returns)."""
        requests = self.ask()
        checked = check_results(results, requests, not self.ACCEPTS_NONFINITE_BEHAVIOURS)
        self._check_results(checked)
        means = np.array([mean_return(r.returns) for r in checked])
        self._requests = None
        self._tell(requests, checked, means)

    @abc.abstractmethod
    def _ask(self) -> list[EvaluationRequest]:
        """This round's requests (called once per round)."""

    @abc.abstractmethod
    def _tell(self, requests, results, means) -> None:
        """The round's checked results and their mean returns (NaN = -inf); may end the generation."""

    def _check_results(self, results) -> None:
        """Hook: refuse results (ValueError) before the round is consumed."""

    @property
    @abc.abstractmethod
    def phase(self) -> str:
        """The phase of the current round's requests (EvaluationRequest.phase)."""

    @property
    def round_episode_cap(self) -> int | None:
        """The episode cap (Atari frames, Gymnasium steps) of the round ask() returns when the strategy wants one below
        the run's (the trainer applies it to that round only; a higher one changes nothing); None: the run's cap."""
        return None

    @property
    @abc.abstractmethod
    def elite(self) -> Genome | None:
        """The best genome so far: a Genome, or None while there is none (the GA before its first generation;
        strategies with a center, like ES, have one from the start)."""

    def bases(self) -> dict:
        """{key: weights} of the dense bases the current requests and the elite start from (none by default):
        weights [n], or weights and per-parameter mutation scales [2, n] (genome.py)."""
        return {}

    def elite_bases(self) -> dict:
        """bases() and the dense bases the newest record's elite starts from when it is not among them (a center
        that was played and then moved): what rebuilding the last generation's elite from a checkpoint needs."""
        return self.bases()

    # -- ending a generation --------------------------------------------------------------
    def _record_generation(self, fitness, elite, elite_genome, evaluations, **extras) -> GenerationRecord:
        """Appends the record of the generation that ends now.

        fitness: the members' fitness values, or their fitness_summary() when computed earlier.
        """
        unknown = set(extras) - set(self.EXTRAS)
        if unknown:
            raise ValueError(f"{self.kind} records declare extras {self.EXTRAS}, got {sorted(unknown)}")
        record = GenerationRecord(
            generation=self.generation,
            **(fitness if isinstance(fitness, dict) else fitness_summary(fitness)),
            elite=elite,
            elite_genome=None if elite_genome is None else elite_genome.to_json(),
            evaluations=int(evaluations),
            hyperparameters=dataclasses.asdict(self.config),
            extras=extras,
        )
        self.history.append(record)
        return record

    def _start_next_generation(self) -> None:
        """Starts the next generation: the pending changes take effect, recorded with its number."""
        self.generation += 1
        self.config = self.hyperparameters.apply(self.config, self.generation, self._validate)

    # -- warm start -----------------------------------------------------------------------
    def start_from(self, weights: np.ndarray) -> None:
        """Searches from `weights` (float32 [n], e.g. another run's elite) instead of the seeded initialisation;
        only before the first round. ValueError for a strategy without a center, or one that has started."""
        raise ValueError(
            f"{self.kind} cannot start from given weights (init_from): it has no center (a weight vector the search "
            "moves); the algorithms with the registry's has_center trait can"
        )

    def map_policy(self, transform: Callable[[np.ndarray], np.ndarray]) -> None:
        """Rewrites the policy the search holds (its center) as transform(weights) [n] -> [n], between
        generations: the trainer's observation normalisation with preserve_policy (observation_normalization.py).
        ValueError for a strategy without one search center."""
        raise ValueError(
            f"{self.kind} keeps no single search center to map: observation_normalization's preserve_policy is for "
            "the strategies that adapt a search distribution's mean (CMA-ES, sep-CMA-ES, CR-FM-NES, SNES, xNES, CEM)"
        )

    def _starting_weights(self, weights: Any) -> np.ndarray:
        """start_from()'s checks: not started yet, weights [n] finite; returns them as a new float32 vector."""
        if self._asked:
            raise ValueError(
                f"start_from: the {self.kind} has started already (generation {self.generation}); "
                "a warm start comes before the first round"
            )
        vector = np.array(weights, np.float32)
        size = self.space.num_parameters
        if vector.shape != (size,) or not np.isfinite(vector).all():
            raise ValueError(f"start_from: weights must be [{size}] finite values, got shape {vector.shape}")
        return vector

    # -- hyperparameters ------------------------------------------------------------------
    def set(self, **changes: Any) -> None:
        """Changes hyperparameters from the next generation on (validated now; recorded when applied)."""
        check_known_fields(type(self.config), changes)
        self._validate(dataclasses.replace(self.config, **dict(self.hyperparameters.pending, **changes)))
        self.hyperparameters.request(changes)

    def _validate(self, config):
        config.validated()
        if self.rank_field is not None:
            self.space.check_rank(getattr(config, self.rank_field), self.rank_field)
        return config

    # -- state ----------------------------------------------------------------------------
    def _common_state(self) -> dict:
        return {
            "kind": self.kind,
            "version": self.STATE_VERSIONS[-1],
            "config": dataclasses.asdict(self.config),
            "space": self.space.describe(),
            "rng": self.rng.bit_generator.state,
            "generation": self.generation,
            "history": [record.to_json() for record in self.history],
            "hyperparameters": self.hyperparameters.state(),
        }

    @abc.abstractmethod
    def state_dict(self) -> dict:
        """Everything needed to continue exactly: JSON-able data (and numpy arrays for dense vectors)."""

    @classmethod
    def from_state(cls, state: dict, space: ParameterSpace) -> Strategy:
        """A strategy that continues from state_dict() output in `space` (ValueError for foreign or corrupt state)."""
        article = "an" if cls.kind[0] in "AEIOU" else "a"
        versions = cls.STATE_VERSIONS
        if not isinstance(state, dict) or state.get("kind") != cls.kind or state.get("version") not in versions:
            raise ValueError(f"not {article} {cls.kind} state (version {' or '.join(str(v) for v in versions)})")
        try:
            space.check_compatible(state["space"], f"{cls.kind} state")
            strategy = cls(cls.config_class(**state["config"]), space)
            strategy.rng.bit_generator.state = state["rng"]
            strategy.generation = int(state["generation"])
            strategy.history = [GenerationRecord.from_json(record) for record in state["history"]]
            strategy.hyperparameters.load(state["hyperparameters"])
            strategy._load(state)
            strategy._asked = True
        except (KeyError, TypeError) as error:
            raise ValueError(f"corrupt {cls.kind} state: {error!r}") from error
        return strategy

    @abc.abstractmethod
    def _load(self, state) -> None:
        """Restores the subclass's own part of state_dict()."""
