"""The Deep GA (Such et al. 2017) and random search on seed-chain genomes, with the ask/tell protocol.

A generation has two rounds of requests:
  1. "population": every member for episodes_per_member episodes;
  2. "elite candidate": the elite_candidates best members, plus the previous elite,
     for elite_episodes episodes each; the best mean becomes the elite.
The next generation is the elite, unchanged, plus population_size - 1 children
of parents drawn uniformly from the truncation best members (each child is its
parent plus sigma times one noise slice). truncation = 0 is random search:
every generation is drawn fresh (the elite still carries over).
"""
import dataclasses
import math

import numpy as np

from workbench.evolution.genome import Genome
from workbench.evolution.strategy import EvaluationRequest, HyperparameterLog, check_returns, mean_return


def _positive_int(name, value, low=1):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")


@dataclasses.dataclass(frozen=True)
class GAConfig:
    """Deep GA hyperparameters; the defaults are the paper's Atari settings (REFERENCE.md).

    population_size: members per generation (N = 1000).
    truncation: parents per generation, the T best members (20); 0 = random search.
    sigma: mutation power, the noise scale of a child (0.002).
    elite_candidates: best members re-evaluated to choose the elite (10); the previous elite joins them.
    elite_episodes: episodes of each elite candidate (30).
    episodes_per_member: episodes of each member in the population round (1).
    """

    population_size: int = 1000
    truncation: int = 20
    sigma: float = 0.002
    elite_candidates: int = 10
    elite_episodes: int = 30
    episodes_per_member: int = 1

    def validated(self):
        _positive_int("population_size", self.population_size, 2)
        _positive_int("truncation", self.truncation, 0)
        if self.truncation > self.population_size:
            raise ValueError(f"truncation must be at most population_size ({self.population_size}), got {self.truncation}")
        sigma = self.sigma
        if isinstance(sigma, bool) or not isinstance(sigma, (int, float)) or not math.isfinite(sigma) or sigma <= 0:
            raise ValueError(f"sigma must be a positive finite number, got {sigma!r}")
        _positive_int("elite_candidates", self.elite_candidates)
        if self.elite_candidates > self.population_size:
            raise ValueError(
                f"elite_candidates must be at most population_size ({self.population_size}), got {self.elite_candidates}")
        _positive_int("elite_episodes", self.elite_episodes)
        _positive_int("episodes_per_member", self.episodes_per_member)
        return self

    @classmethod
    def tutorial(cls):
        """Small settings for notebooks and CartPole-sized problems (minutes on a laptop)."""
        return cls(population_size=64, truncation=8, sigma=0.05, elite_candidates=4, elite_episodes=5)

    @classmethod
    def random_search(cls, **changes):
        return cls(truncation=0, **changes)


class GeneticAlgorithm:
    """The Deep GA on genomes of num_parameters weights in a noise table of noise_size values."""

    def __init__(self, config, num_parameters, noise_size, seed=0):
        if not isinstance(config, GAConfig):
            raise TypeError(f"config must be a GAConfig, got {type(config).__name__}")
        self.config = config.validated()
        _positive_int("num_parameters", num_parameters)
        if num_parameters > noise_size:
            raise ValueError(f"num_parameters ({num_parameters}) must fit in noise_size ({noise_size})")
        self.num_parameters = int(num_parameters)
        self.noise_size = int(noise_size)
        self.rng = np.random.default_rng(seed)
        self.generation = 0
        self.hyperparameters = HyperparameterLog()
        self.history = []
        self.elite = None
        self.elite_fitness = None
        self.population = [self._random_genome() for _ in range(self.config.population_size)]
        self.fitness = None
        self.candidates = None
        self._requests = None

    # -- ask/tell -------------------------------------------------------------------------
    def ask(self):
        """The evaluations this round needs (the same list again until tell() is called)."""
        if self._requests is None:
            if self.fitness is None:
                episodes = self.config.episodes_per_member
                self._requests = [EvaluationRequest(g, episodes, "population") for g in self.population]
            else:
                episodes = self.config.elite_episodes
                self._requests = [EvaluationRequest(g, episodes, "elite candidate") for g in self.candidates]
        return list(self._requests)

    def tell(self, returns):
        """Results of the last ask(): one sequence of episode returns per request, in order."""
        requests = self.ask()
        means = np.array([mean_return(r) for r in check_returns(returns, requests)])
        self._requests = None
        if self.fitness is None:
            self.fitness = means
            order = np.argsort(-means, kind="stable")
            candidates = [self.population[i] for i in order[: self.config.elite_candidates]]
            if self.elite is not None and self.elite not in candidates:
                candidates.append(self.elite)
            self.candidates = candidates
        else:
            best = int(np.argmax(means))  # first of equals: the better-ranked member
            self.elite, self.elite_fitness = self.candidates[best], float(means[best])
            self._end_generation(means)

    @property
    def phase(self):
        return "population" if self.fitness is None else "elite candidate"

    # -- hyperparameters ------------------------------------------------------------------
    def set(self, **changes):
        """Changes hyperparameters from the next generation on (validated now; recorded when applied)."""
        unknown = set(changes) - {f.name for f in dataclasses.fields(GAConfig)}
        if unknown:
            raise ValueError(f"unknown GA hyperparameters: {sorted(unknown)}")
        dataclasses.replace(self.config, **dict(self.hyperparameters.pending, **changes)).validated()
        self.hyperparameters.request(changes)

    # -- generations ----------------------------------------------------------------------
    def _random_offset(self):
        return int(self.rng.integers(0, self.noise_size - self.num_parameters + 1))

    def _random_genome(self):
        return Genome(self._random_offset())

    def _end_generation(self, elite_means):
        finite = self.fitness[np.isfinite(self.fitness)]
        self.history.append({
            "generation": self.generation,
            "max": float(self.fitness.max()),
            "mean": float(finite.mean()) if finite.size else -math.inf,
            "median": float(np.median(finite)) if finite.size else -math.inf,
            "elite": self.elite_fitness,
            "elite_genome": self.elite.to_json(),
            "evaluations": len(self.population) * self.config.episodes_per_member
            + len(self.candidates) * self.config.elite_episodes,
            "config": dataclasses.asdict(self.config),
        })
        order = np.argsort(-self.fitness, kind="stable")
        self.generation += 1
        self.config = self.hyperparameters.apply(self.config, self.generation, GAConfig.validated)
        truncation, size = self.config.truncation, self.config.population_size
        parents = [self.population[i] for i in order[:truncation]]
        children = []
        for _ in range(size - 1):
            if truncation == 0:
                children.append(self._random_genome())
            else:
                parent = parents[int(self.rng.integers(0, truncation))]
                children.append(parent.child(self._random_offset(), self.config.sigma))
        self.population = [self.elite] + children
        self.fitness = None
        self.candidates = None

    # -- state ----------------------------------------------------------------------------
    def state_dict(self):
        """Everything needed to continue exactly, as JSON-able data."""
        return {
            "kind": "GeneticAlgorithm",
            "version": 1,
            "config": dataclasses.asdict(self.config),
            "num_parameters": self.num_parameters,
            "noise_size": self.noise_size,
            "rng": self.rng.bit_generator.state,
            "generation": self.generation,
            "population": [g.to_json() for g in self.population],
            "fitness": None if self.fitness is None else [float(f) for f in self.fitness],
            "candidates": None if self.candidates is None else [g.to_json() for g in self.candidates],
            "elite": None if self.elite is None else self.elite.to_json(),
            "elite_fitness": self.elite_fitness,
            "history": self.history,
            "hyperparameters": self.hyperparameters.state(),
        }

    @classmethod
    def from_state(cls, state):
        """A GA that continues from state_dict() output (ValueError for foreign or corrupt state)."""
        if not isinstance(state, dict) or state.get("kind") != "GeneticAlgorithm" or state.get("version") != 1:
            raise ValueError("not a GeneticAlgorithm state (version 1)")
        try:
            ga = cls(GAConfig(**state["config"]), state["num_parameters"], state["noise_size"])
            ga.rng.bit_generator.state = state["rng"]
            ga.generation = int(state["generation"])
            ga.population = [Genome.from_json(g) for g in state["population"]]
            ga.fitness = None if state["fitness"] is None else np.array(state["fitness"], np.float64)
            ga.candidates = None if state["candidates"] is None else [Genome.from_json(g) for g in state["candidates"]]
            ga.elite = None if state["elite"] is None else Genome.from_json(state["elite"])
            ga.elite_fitness = state["elite_fitness"]
            ga.history = list(state["history"])
            ga.hyperparameters.load(state["hyperparameters"])
        except (KeyError, TypeError) as error:
            raise ValueError(f"corrupt GeneticAlgorithm state: {error!r}") from error
        return ga
