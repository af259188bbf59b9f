"""The Deep GA (Such et al. 2017) and random search on seed-chain genomes, with the ask/tell protocol.

A generation has two rounds of requests:
  1. "population": every member for episodes_per_member episodes;
  2. "elite candidate": the elite_candidates best members, plus the previous elite,
     for elite_episodes episodes each; the best mean becomes the elite.
The next generation is the elite, unchanged, plus population_size - 1 children
of parents drawn uniformly from the truncation best members (each child is its
parent plus one mutation: sigma times a noise slice, or with mutation_rank r
a rank-r perturbation per layer). truncation = 0 is random search: every
generation is drawn fresh (the elite still carries over).

With initial_population N > population_size, generation 0 draws N random
networks instead (a random search's worth of them: the paper's random search
found most of its 1B-frame score within 10-25M frames); its truncation best
become the first parents, and every later generation has population_size
members. 0 (the default; any N up to population_size) is the paper's:
generation 0 is as large as the rest. It counts when the run starts: set
live later, it changes nothing. initial_episode_frames C > 0 caps the
episodes of generation 0's population round at C frames (Gymnasium: steps),
so that many random networks cost at most N x C frames; the elite candidates
are then re-evaluated at the run's cap, as in every generation.

With progressive_caps g >= 1, population rounds play shorter episodes than the
run's cap (progressive episode lengths, Fuks et al. 2019): generation 1's at
half the mean length of generation 0's population episodes, each later
generation's g times the one before, until the run's cap. The cap never cuts
the episodes the current elite plays (it is at least their mean length in the
last elite round): where a game pays late in an episode, or its episodes have a
fixed length, the elite's episodes are long and so is the cap; that is how the
schedule knows. Elite candidates always play at the run's cap, so the elite is
chosen on full episodes. The lengths come from the results' frame counts (an
evaluator that reports none leaves every cap at the run's).

With sigma_adaptation tau > 0 the mutation power is self-adapted, as in the
classic evolution strategies (Schwefel; Beyer and Schwefel 2002): each genome
carries the sigma of its last mutation, and a child's sigma is its parent's
times exp(tau N(0, 1)), kept within [sigma / 10, 10 sigma] of the configured
sigma (which a genome without mutations starts from). Selection then keeps the
step sizes that made good children. tau = 0 is the paper's single sigma.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from workbench.checks import check_int, check_real
from workbench.evolution.genome import Genome
from workbench.evolution.hyperparameters import hyperparameter
from workbench.evolution.space import ParameterSpace, check_rank
from workbench.evolution.strategy import EvaluationRequest, Strategy


@dataclasses.dataclass(frozen=True)
class GAConfig:
    """Deep GA hyperparameters; the defaults are the paper's Atari settings (docs/protocol.md). A rank-r
    mutation (EGGROLL-style A B^T / sqrt(r) per layer) can be applied by the inference op to a cached parent
    without materialising the child; it needs a space with layer shapes."""

    population_size: int = hyperparameter(1000, "population size", "members per generation", scale="int", low=2, high=10_000)
    truncation: int = hyperparameter(
        20, "truncation (parents)", "parents per generation, the T best members; 0 = random search", scale="int", low=1, high=1000
    )
    sigma: float = hyperparameter(
        0.002, "mutation power σ", "the noise scale of a child", scale="log", low=1e-4, high=1.0, step=0.05
    )
    elite_candidates: int = hyperparameter(
        10, "elite candidates", "best members re-evaluated to choose the elite (the previous elite joins them)", scale="int"
    )
    elite_episodes: int = hyperparameter(30, "elite episodes", "episodes of each elite candidate", scale="int", low=1, high=100)
    episodes_per_member: int = hyperparameter(
        1, "episodes per member", "episodes of each member in the population round", scale="int"
    )
    initial_population: int = hyperparameter(
        0,
        "random first generation",
        "0 = generation 0 has population_size members (the paper); N > population_size = it draws N random "
        "networks, then the population returns to its size (no slider: it counts when the run starts)",
        scale="int",
    )
    initial_episode_frames: int = hyperparameter(
        0,
        "first generation's episode cap",
        "0 = the run's cap; C = generation 0's population round plays at most C frames per episode (its elite "
        "candidates the run's cap; no slider: it counts when the run starts)",
        scale="int",
    )
    progressive_caps: float = hyperparameter(
        0.0,
        "progressive episode caps",
        "0 = population rounds at the run's cap (the paper); g >= 1 = generation 1 at half generation 0's mean episode "
        "length, each later one g times longer, never below the elite's episodes, up to the run's cap",
        low=0.0,
        high=4.0,
        step=0.05,
    )
    mutation_rank: int = hyperparameter(
        0, "mutation rank", "0 = full-rank mutations (the paper); r > 0 = rank-r mutations per layer", scale="int"
    )
    sigma_adaptation: float = hyperparameter(
        0.0,
        "σ self-adaptation τ",
        "0 = every child mutates with σ (the paper); τ > 0 = a child's σ is its parent's times exp(τ N(0,1)), within [σ/10, 10σ]",
        low=0.0,
        high=2.0,
        step=0.05,
    )

    def validated(self) -> GAConfig:
        check_int("population_size", self.population_size, 2)
        check_int("truncation", self.truncation, 0)
        if self.truncation > self.population_size:
            raise ValueError(f"truncation must be at most population_size ({self.population_size}), got {self.truncation}")
        check_real("sigma", self.sigma, 0, low_open=True)
        check_int("elite_candidates", self.elite_candidates, 1)
        if self.elite_candidates > self.population_size:
            raise ValueError(
                f"elite_candidates must be at most population_size ({self.population_size}), got {self.elite_candidates}"
            )
        check_int("elite_episodes", self.elite_episodes, 1)
        check_int("episodes_per_member", self.episodes_per_member, 1)
        check_int("initial_population", self.initial_population, 0)
        check_int("initial_episode_frames", self.initial_episode_frames, 0)
        check_real("progressive_caps", self.progressive_caps, 0, 4)
        if 0 < self.progressive_caps < 1:
            raise ValueError(f"progressive_caps must be 0 (off) or a growth of at least 1, got {self.progressive_caps}")
        check_rank(self.mutation_rank, "mutation_rank")
        check_real("sigma_adaptation", self.sigma_adaptation, 0, 2)
        return self

    @classmethod
    def tutorial(cls) -> GAConfig:
        """Small settings for notebooks and CartPole-sized problems (minutes on a laptop)."""
        return cls(population_size=64, truncation=8, sigma=0.05, elite_candidates=4, elite_episodes=5)

    @classmethod
    def random_search(cls, **changes: Any) -> GAConfig:
        return cls(truncation=0, **changes)


def _mean_frames(results) -> float | None:
    """Mean frames per episode of the results (None when any result carries no frame counts)."""
    counts = [result.frames for result in results]
    if not counts or any(frames is None for frames in counts):
        return None
    return float(np.mean(np.concatenate([np.asarray(frames, np.float64) for frames in counts])))


class GeneticAlgorithm(Strategy):
    """The Deep GA on genomes of a ParameterSpace; `seed` drives every random choice."""

    kind = "GeneticAlgorithm"
    config_class = GAConfig
    rank_field = "mutation_rank"
    EXTRAS = ("sigma_median",)  # the median mutation power the generation's members carry (with self-adaptation)
    STATE_VERSIONS = (1, 2)  # 2: the episode lengths progressive caps measure (version 1 had none)

    def __init__(self, config: GAConfig, space: ParameterSpace, seed: int = 0) -> None:
        super().__init__(config, space, seed)
        self._elite = None
        self.elite_fitness = None
        first = max(self.config.initial_population, self.config.population_size)
        self.population = [self._random_genome() for _ in range(first)]
        self.fitness = None
        self.candidates = None
        self.first_length: float | None = None  # mean frames of generation 0's population episodes
        self.elite_length: float | None = None  # mean frames of the elite's episodes in the last elite round

    # -- ask/tell -------------------------------------------------------------------------
    def _ask(self):
        if self.fitness is None:
            return [EvaluationRequest(g, self.config.episodes_per_member, "population") for g in self.population]
        return [EvaluationRequest(g, self.config.elite_episodes, "elite candidate") for g in self.candidates]

    def _tell(self, requests, results, means):
        if self.fitness is None:
            if self.generation == 0:
                self.first_length = _mean_frames(results)
            self.fitness = means
            order = np.argsort(-means, kind="stable")
            candidates = [self.population[i] for i in order[: self.config.elite_candidates]]
            if self._elite is not None and self._elite not in candidates:
                candidates.append(self._elite)
            self.candidates = candidates
        else:
            best = int(np.argmax(means))  # first of equals: the better-ranked member
            self._elite, self.elite_fitness = self.candidates[best], float(means[best])
            self.elite_length = _mean_frames(results[best : best + 1])
            self._end_generation()

    @property
    def phase(self) -> str:
        return "population" if self.fitness is None else "elite candidate"

    @property
    def round_episode_cap(self) -> int | None:
        """The population round's cap: initial_episode_frames in generation 0 (when set), the progressive schedule
        after it (when on and measured); None for elite rounds and otherwise: the run's cap."""
        if self.fitness is not None:
            return None
        if self.generation == 0:
            return self.config.initial_episode_frames or None
        growth = self.config.progressive_caps
        if growth == 0 or self.first_length is None:
            return None
        cap = self.first_length / 2 * growth ** min(self.generation - 1, 64)  # 4 ** 64: far above any cap, finite
        if self.elite_length is not None:
            cap = max(cap, self.elite_length)
        return int(min(math.ceil(cap), 2**31 - 1))

    @property
    def elite(self) -> Genome | None:
        """The elite: the best re-evaluated candidate of the last generation (None before the first ends)."""
        return self._elite

    # -- generations ----------------------------------------------------------------------
    def _random_genome(self):
        return Genome(self.space.sample_offset(self.rng))

    def _end_generation(self):
        extras = {}
        if self.config.sigma_adaptation > 0:
            extras["sigma_median"] = float(np.median([self._sigma_of(g) for g in self.population]))
        self._record_generation(
            self.fitness,
            self.elite_fitness,
            self._elite,
            evaluations=len(self.population) * self.config.episodes_per_member
            + len(self.candidates) * self.config.elite_episodes,
            **extras,
        )
        order = np.argsort(-self.fitness, kind="stable")
        self._start_next_generation()
        truncation, size, rank = self.config.truncation, self.config.population_size, self.config.mutation_rank
        parents = [self.population[i] for i in order[:truncation]]
        children = []
        for _ in range(size - 1):
            if truncation == 0:
                children.append(self._random_genome())
            else:
                parent = parents[int(self.rng.integers(0, truncation))]
                offset = self.space.sample_offset(self.rng, rank)
                children.append(parent.child(offset, self._child_sigma(parent), rank))
        self.population = [self._elite] + children
        self.fitness = None
        self.candidates = None

    def _sigma_of(self, genome: Genome) -> float:
        """The mutation power a genome carries: its last mutation's sigma (the configured sigma without one)."""
        return float(genome.mutations[-1][1]) if genome.mutations else self.config.sigma

    def _child_sigma(self, parent: Genome) -> float:
        """The configured sigma, or with self-adaptation the parent's times exp(tau N(0, 1)) within [sigma/10, 10 sigma]
        (draws from the rng only when adapting, so runs without it keep their random sequence)."""
        tau, sigma = self.config.sigma_adaptation, self.config.sigma
        if tau == 0:
            return sigma
        adapted = self._sigma_of(parent) * math.exp(tau * float(self.rng.standard_normal()))
        return min(max(adapted, sigma / 10), sigma * 10)

    # -- state ----------------------------------------------------------------------------
    def state_dict(self) -> dict:
        """Everything needed to continue exactly, as JSON-able data."""
        return dict(
            self._common_state(),
            population=[g.to_json() for g in self.population],
            fitness=None if self.fitness is None else [float(f) for f in self.fitness],
            candidates=None if self.candidates is None else [g.to_json() for g in self.candidates],
            elite=None if self._elite is None else self._elite.to_json(),
            elite_fitness=self.elite_fitness,
            first_length=self.first_length,
            elite_length=self.elite_length,
        )

    def _load(self, state):
        self.population = [Genome.from_json(g) for g in state["population"]]
        self.fitness = None if state["fitness"] is None else np.array(state["fitness"], np.float64)
        self.candidates = None if state["candidates"] is None else [Genome.from_json(g) for g in state["candidates"]]
        self._elite = None if state["elite"] is None else Genome.from_json(state["elite"])
        self.elite_fitness = state["elite_fitness"]
        measured = state["version"] >= 2  # version 1 (runs made before progressive caps) measured no lengths
        self.first_length = state["first_length"] if measured else None
        self.elite_length = state["elite_length"] if measured else None
