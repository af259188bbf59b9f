"""PGPE (Sehnke et al. 2010) with the ClipUp optimiser (Toklu et al. 2020), ask/tell, on a ParameterSpace.

The search distribution is N(mu, diag(sigma^2)) with a learned center mu and a learned standard
deviation per parameter. Both travel as one base [2, n] (weights and mutation scales, see
genome.py): pair k is mu + sigma * z_k and mu - sigma * z_k with z_k the noise slice at one offset
(Genome(key, ((i_k, +1),)) and its mirror). A generation is one round; with u the centered ranks
(in [-0.5, 0.5]) of all members' fitness, P pairs and eps_k = sigma * z_k:

    g_mu    = sum_k (u+_k - u-_k) / 2 * eps_k / P
    g_sigma = sum_k (u+_k + u-_k) / 2 * (eps_k^2 - sigma^2) / sigma / P
    sigma  <- clip(sigma + stdev_learning_rate * g_sigma, (1 -+ stdev_max_change) * sigma)
    ClipUp:  v <- momentum * v + center_learning_rate * g_mu / |g_mu|;  v <- v * min(1, max_speed / |v|)
             mu <- mu + v

(the gradients as EvoTorch computes them for symmetric sampling). Defaults: the paper's and
EvoTorch's: center_learning_rate = max_speed / 2, momentum 0.9, stdev_learning_rate 0.1,
stdev_max_change 0.2, initial sigma = radius / sqrt(n) per parameter with radius = 15 max_speed.
mu starts at zero (a linear policy, as the ClipUp paper's locomotion runs) or at the space's initial
weights (initial="random"). A member with a non-finite return ranks last.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import numpy as np

from workbench.checks import check_choice, check_int, check_real
from workbench.evolution.genome import Genome
from workbench.evolution.hyperparameters import hyperparameter
from workbench.evolution.mirrored import MirroredSearch
from workbench.evolution.space import ParameterSpace
from workbench.evolution.strategy import centered_ranks


@dataclasses.dataclass(frozen=True)
class PGPEConfig:
    """PGPE + ClipUp hyperparameters (see the module docstring; sources in docs/continuous_control.md)."""

    population_size: int = hyperparameter(
        200, "population size", "members per generation, even (symmetric pairs)", scale="int", low=2, high=10_000
    )
    max_speed: float = hyperparameter(
        0.15, "max speed v_max (ClipUp)", "ClipUp's largest step", scale="log", low=1e-4, high=1.0, step=0.05
    )
    center_learning_rate: float | None = hyperparameter(
        None, "center step α (ClipUp)", "ClipUp's step size (None = max_speed / 2)", scale="log", low=1e-4, high=1.0, step=0.05
    )
    momentum: float = hyperparameter(0.9, "momentum (ClipUp)", "ClipUp's momentum", low=0.0, high=0.99, step=0.01)
    stdev_learning_rate: float = hyperparameter(
        0.1, "σ learning rate (PGPE)", "step size of the standard deviations", low=0.0, high=1.0, step=0.01
    )
    stdev_max_change: float = hyperparameter(
        0.2, "σ max change", "largest relative change of a standard deviation per generation"
    )
    radius_init: float | None = hyperparameter(None, "initial radius", "|σ| at the start (None = 15 max_speed)")
    initial: str = hyperparameter(
        "zeros", "initial center", '"zeros" (mu = 0) or "random" (the space\'s initial weights from the seed)'
    )
    episodes_per_member: int = hyperparameter(1, "episodes per member", "episodes of each member", scale="int")
    center_episodes: int = hyperparameter(
        0, "center episodes", "episodes of the center each generation, for reporting (0 = none; not in the update)", scale="int"
    )

    def validated(self) -> PGPEConfig:
        check_int("population_size", self.population_size, 2)
        if self.population_size % 2:
            raise ValueError(f"population_size must be even (symmetric pairs), got {self.population_size}")
        check_real("max_speed", self.max_speed, 0, low_open=True)
        if self.center_learning_rate is not None:
            check_real("center_learning_rate", self.center_learning_rate, 0, low_open=True)
        check_real("momentum", self.momentum, 0, 1, high_open=True)
        check_real("stdev_learning_rate", self.stdev_learning_rate, 0)
        check_real("stdev_max_change", self.stdev_max_change, 0, 1, high_open=True)
        if self.radius_init is not None:
            check_real("radius_init", self.radius_init, 0, low_open=True)
        check_choice("initial", self.initial, ("zeros", "random"))
        check_int("episodes_per_member", self.episodes_per_member, 1)
        check_int("center_episodes", self.center_episodes, 0)
        return self

    @property
    def step_size(self) -> float:
        return self.max_speed / 2 if self.center_learning_rate is None else self.center_learning_rate

    @property
    def radius(self) -> float:
        return 15 * self.max_speed if self.radius_init is None else self.radius_init


def pgpe_gradients(
    space: ParameterSpace, indices: Sequence[int], stdev: np.ndarray, fitness: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(g_mu, g_sigma) float64 [n] from the pairs' fitness [P, 2] (module docstring)."""
    ranks = centered_ranks(np.where(np.isnan(fitness), -np.inf, fitness))
    pairs = len(indices)
    sigma = stdev.astype(np.float64)
    g_mu = np.zeros(space.num_parameters)
    g_sigma = np.zeros(space.num_parameters)
    for k, index in enumerate(indices):
        epsilon = sigma * space.direction(index).astype(np.float64)
        g_mu += (ranks[k, 0] - ranks[k, 1]) / 2 * epsilon
        g_sigma += (ranks[k, 0] + ranks[k, 1]) / 2 * (epsilon * epsilon - sigma * sigma) / sigma
    return g_mu / pairs, g_sigma / pairs


class ClipUp:
    """ClipUp on a float32 vector (ascends): normalised gradient step, momentum, speed clipped at max_speed."""

    def __init__(self, size: int) -> None:
        self.velocity = np.zeros(size, np.float64)

    def step(self, gradient: np.ndarray, step_size: float, momentum: float, max_speed: float) -> np.ndarray:
        """The change of the center (float64 [n]); a zero gradient only decays the velocity."""
        norm = float(np.linalg.norm(gradient))
        push = gradient * (step_size / norm) if norm > 0 else np.zeros_like(self.velocity)
        self.velocity = momentum * self.velocity + push
        speed = float(np.linalg.norm(self.velocity))
        if speed > max_speed:
            self.velocity = self.velocity * (max_speed / speed)
        return self.velocity


class PGPE(MirroredSearch):
    """PGPE with ClipUp on a ParameterSpace (see the module docstring); `seed` drives the samples."""

    kind = "PGPE"
    config_class = PGPEConfig
    EXTRAS = ("stdev_mean", "speed")

    def __init__(self, config: PGPEConfig, space: ParameterSpace, seed: int = 0) -> None:
        super().__init__(config, space, seed)
        n = space.num_parameters
        self.stdev = np.full(n, self.config.radius / math.sqrt(n), np.float32)
        self.optimizer = ClipUp(n)
        initial = np.zeros(n, np.float32) if self.config.initial == "zeros" else space.initial(space.sample_offset(self.rng))
        self._start_center(initial)

    def base(self) -> np.ndarray:
        """[mu, sigma]: the center and the per-parameter standard deviations, one base [2, n]."""
        return np.stack([self.center, self.stdev])

    def mutation(self, index: int, sign: int) -> tuple:
        return (index, float(sign))  # sigma * z: the base's scales times the noise slice

    def _tell(self, requests, results, means):
        config = self.config
        fitness = self._pair_fitness(means)
        g_mu, g_sigma = pgpe_gradients(self.space, self.indices, self.stdev, fitness)
        self._record_generation(
            fitness,
            self.center_fitness,
            Genome(self._key),
            sum(r.episodes for r in requests),
            stdev_mean=float(np.mean(self.stdev)),
            speed=float(np.linalg.norm(self.optimizer.velocity)),
        )
        sigma = self.stdev.astype(np.float64)
        self.stdev = np.clip(
            sigma + config.stdev_learning_rate * g_sigma,
            sigma * (1 - config.stdev_max_change),
            sigma * (1 + config.stdev_max_change),
        ).astype(np.float32)
        change = self.optimizer.step(g_mu, config.step_size, config.momentum, config.max_speed)
        self._next_center(self.center.astype(np.float64) + change)

    # -- state ----------------------------------------------------------------------------
    def state_dict(self) -> dict:
        return dict(self._common_state(), stdev=self.stdev.copy(), velocity=self.optimizer.velocity.copy())

    def _load(self, state):
        n = self.space.num_parameters
        self._load_center(state)
        stdev, velocity = np.array(state["stdev"], np.float32), np.array(state["velocity"], np.float64)
        if stdev.shape != (n,) or velocity.shape != (n,):
            raise ValueError(f"corrupt {self.kind} state: stdev and velocity must be [{n}]")
        if not (np.isfinite(velocity).all() and np.isfinite(stdev).all() and (stdev > 0).all()):
            raise ValueError(f"corrupt {self.kind} state: non-finite values or a standard deviation <= 0")
        self.stdev, self.optimizer.velocity = stdev, velocity
        self._rekey()
