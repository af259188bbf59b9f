"""OpenAI-ES (Salimans et al. 2017) on a ParameterSpace, with the ask/tell protocol.

The center theta is a dense float32 vector (Adam moves it off any seed chain);
it reaches evaluators as a base (bases(): {key: weights}, GenomeDecoder.add_base)
and each member is the center plus one mutation, Genome(key, ((i, +sigma, r),))
and its mirror Genome(key, ((i, -sigma, r),)): mirrored sampling with one noise
offset per pair. A generation is one round of requests: the population_size
members ("perturbation") and, when center_episodes > 0, the center itself
("center", for reporting; it does not enter the update). Then

    s = centered_ranks(fitness over all members)              in [-0.5, 0.5]
    g = sum_pairs (s+ - s-) * epsilon_pair / population_size
    Adam step on -g + l2_coefficient * theta                  (minimised)

as in the paper's implementation (its step size absorbs 1/sigma).
perturbation_rank r > 0 uses rank-r perturbations per layer (EGGROLL); the
update stays full rank. Virtual batch norm lives in the model (models/virtual_batch_norm.py). The
center and the mirrored sampling are MirroredSearch's (mirrored.py), shared with ARS and PGPE.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import numpy as np

from workbench.checks import check_int, check_real
from workbench.evolution.genome import Genome
from workbench.evolution.hyperparameters import hyperparameter
from workbench.evolution.mirrored import MirroredSearch
from workbench.evolution.space import ParameterSpace, check_rank
from workbench.evolution.strategy import centered_ranks, shifted_returns


@dataclasses.dataclass(frozen=True)
class ESConfig:
    """OpenAI-ES hyperparameters; the defaults are the paper's Atari settings (docs/protocol.md). The survival
    bonus is ARS's trick for tasks that pay for staying alive (Humanoid 5 per step): ranked on the rest of the
    reward, members that stand still no longer beat those that move. Records stay unshifted."""

    population_size: int = hyperparameter(
        5000, "population size", "members per generation, an even number (mirrored pairs)", scale="int", low=2, high=10_000
    )
    sigma: float = hyperparameter(0.02, "noise σ", "noise scale of the perturbations", scale="log", low=1e-4, high=1.0, step=0.05)
    learning_rate: float = hyperparameter(0.01, "learning rate", "Adam's step size", scale="log", low=1e-5, high=1.0, step=0.05)
    l2_coefficient: float = hyperparameter(
        0.005, "L2 coefficient", "weight decay added to the minimised gradient", low=0.0, high=0.1, step=1e-4
    )
    adam_beta1: float = hyperparameter(0.9, "Adam β1", "Adam's first-moment decay")
    adam_beta2: float = hyperparameter(0.999, "Adam β2", "Adam's second-moment decay")
    adam_epsilon: float = hyperparameter(1e-8, "Adam ε", "Adam's denominator constant")
    episodes_per_member: int = hyperparameter(1, "episodes per member", "episodes of each member", scale="int")
    center_episodes: int = hyperparameter(
        1, "center episodes", "episodes of the center each generation, for reporting (0 = none)", scale="int"
    )
    perturbation_rank: int = hyperparameter(
        0, "perturbation rank", "0 = full-rank perturbations (the paper); r > 0 = rank r per layer", scale="int"
    )
    survival_bonus: float = hyperparameter(
        0.0,
        "survival bonus removed per step",
        "a per-step constant subtracted from every member's return before ranking (0 = none, the paper)",
        unit="per step",
        low=0.0,
        high=10.0,
        step=0.5,
    )

    def validated(self) -> ESConfig:
        check_int("population_size", self.population_size, 2)
        if self.population_size % 2:
            raise ValueError(f"population_size must be even (mirrored pairs), got {self.population_size}")
        check_real("sigma", self.sigma, 0, low_open=True)
        check_real("learning_rate", self.learning_rate, 0, low_open=True)
        check_real("l2_coefficient", self.l2_coefficient, 0)
        check_real("adam_beta1", self.adam_beta1, 0, 1, high_open=True)
        check_real("adam_beta2", self.adam_beta2, 0, 1, high_open=True)
        check_real("adam_epsilon", self.adam_epsilon, 0, low_open=True)
        check_int("episodes_per_member", self.episodes_per_member, 1)
        check_int("center_episodes", self.center_episodes, 0)
        check_rank(self.perturbation_rank, "perturbation_rank")
        check_real("survival_bonus", self.survival_bonus, 0)
        return self

    @classmethod
    def tutorial(cls) -> ESConfig:
        """Small settings for notebooks and CartPole-sized problems."""
        return cls(population_size=64, sigma=0.05, learning_rate=0.03)


class Adam:
    """Adam on a float32 vector, minimising (the form of the paper's implementation)."""

    def __init__(self, size: int) -> None:
        self.m: np.ndarray = np.zeros(size, np.float32)
        self.v: np.ndarray = np.zeros(size, np.float32)
        self.t = 0

    def step(self, gradient: np.ndarray, learning_rate: float, beta1: float, beta2: float, epsilon: float) -> np.ndarray:
        """The update to add to the parameters (float32)."""
        self.t += 1
        rate = learning_rate * math.sqrt(1 - beta2**self.t) / (1 - beta1**self.t)
        self.m = np.float32(beta1) * self.m + np.float32(1 - beta1) * gradient
        self.v = np.float32(beta2) * self.v + np.float32(1 - beta2) * (gradient * gradient)
        return (np.float32(-rate) * self.m / (np.sqrt(self.v) + np.float32(epsilon))).astype(np.float32)

    def state(self) -> dict:
        return {"t": self.t, "m": self.m.copy(), "v": self.v.copy()}

    def load(self, state: dict, size: int) -> None:
        m, v = np.asarray(state["m"], np.float32), np.asarray(state["v"], np.float32)
        if m.shape != (size,) or v.shape != (size,):
            raise ValueError(f"Adam moments must be [{size}], got {m.shape} and {v.shape}")
        self.t, self.m, self.v = int(state["t"]), m.copy(), v.copy()


def es_gradient(
    space: ParameterSpace, indices: Sequence[int], fitness: np.ndarray, rank: int, population_size: int
) -> np.ndarray:
    """sum_pairs (s+ - s-) epsilon / population_size with s = centered ranks; fitness [pairs, 2]."""
    shaped = centered_ranks(fitness)
    return space.combine(indices, shaped[:, 0] - shaped[:, 1], rank) / np.float32(population_size)


def adam_update(theta: np.ndarray, adam: Adam, gradient: np.ndarray, config: ESConfig) -> np.ndarray:
    """theta after one Adam step on -gradient + l2 * theta (the gradient is ascended)."""
    step = adam.step(
        -gradient + np.float32(config.l2_coefficient) * theta,
        config.learning_rate,
        config.adam_beta1,
        config.adam_beta2,
        config.adam_epsilon,
    )
    return (theta + step).astype(np.float32)


class EvolutionStrategy(MirroredSearch):
    """OpenAI-ES on a ParameterSpace; `seed` drives the initial center and every noise offset."""

    kind = "EvolutionStrategy"
    config_class = ESConfig
    rank_field = "perturbation_rank"
    EXTRAS = ("gradient_norm",)

    def __init__(self, config: ESConfig, space: ParameterSpace, seed: int = 0) -> None:
        super().__init__(config, space, seed)
        self.adam = Adam(self.space.num_parameters)
        self._start_center(self.space.initial(self.space.sample_offset(self.rng)))

    def mutation_rank(self) -> int:
        return self.config.perturbation_rank

    def mutation(self, index: int, sign: int) -> tuple:
        return (index, sign * self.config.sigma, self.config.perturbation_rank)

    def _tell(self, requests, results, means):
        fitness = self._pair_fitness(means)
        ranked = fitness
        if self.config.survival_bonus:
            ranked = shifted_returns(results[: fitness.size], self.config.survival_bonus).reshape(fitness.shape)
        gradient = es_gradient(self.space, self.indices, ranked, self.config.perturbation_rank, fitness.size)
        self._record_generation(
            fitness,
            self.center_fitness if self.config.center_episodes else None,
            Genome(self._key),
            sum(r.episodes for r in requests),
            gradient_norm=float(np.linalg.norm(gradient)),
        )
        self._next_center(adam_update(self.center, self.adam, gradient, self.config))

    # -- state ----------------------------------------------------------------------------
    def state_dict(self) -> dict:
        """Everything needed to continue exactly: JSON-able data plus numpy arrays (center, Adam moments)."""
        return dict(self._common_state(), adam=self.adam.state())

    def _load(self, state):
        self._load_center(state)
        self._rekey()
        self.adam.load(state["adam"], self.space.num_parameters)
