"""DiagonalGaussian: what the per-parameter-sigma updates (SNES, CEM) share, N(mean, diag(sigma^2)) in float64.

A subclass sets `weights` (the members' weights, ranked best first) and writes tell_sums(z_w, zz_w), the update
from sum_k w_k z_k and sum_k w_k z_k^2; this class validates, samples, ranks, floors the standard deviations
(SCALE_FLOOR, counted in `repairs`) and saves and restores the state. It is a separable SearchDistribution
(distribution_search.py).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from workbench.evolution.cma_update import checked_start, default_population_size, ranking

SCALE_FLOOR = 1e-300  # the smallest standard deviation kept; lower ones are raised to it (a repair)


class DiagonalGaussian:
    """The shared part of SNESUpdate and CEMUpdate (module docstring)."""

    kind = "diagonal Gaussian"  # names the update in state errors
    weights: np.ndarray

    def __init__(self, mean: np.ndarray, sigma: float, population_size: int | None = None) -> None:
        self.mean = checked_start(mean, sigma)
        self.n = self.mean.size
        self.population_size = default_population_size(self.n) if population_size is None else int(population_size)
        if self.population_size < 4:
            raise ValueError(f"population_size must be at least 4, got {self.population_size}")
        self.sigma = np.full(self.n, float(sigma))
        self.generation = 0
        self.repairs = 0

    @property
    def step_size(self) -> float:
        """The geometric mean of the standard deviations."""
        return float(np.exp(np.mean(np.log(self.sigma))))

    def scales(self) -> np.ndarray:
        return self.sigma.copy()

    def axes(self) -> np.ndarray:
        """A diagonal covariance's principal axes are the parameters: the standard deviations, largest first."""
        return np.sort(self.sigma)[::-1]

    def condition(self) -> float:
        return float((self.sigma.max() / self.sigma.min()) ** 2)

    def sample(self, z: np.ndarray) -> np.ndarray:
        return self.mean + self.sigma * np.asarray(z, np.float64)

    def ranked_weights(self) -> np.ndarray:
        return self.weights

    def tell(self, z: np.ndarray, fitness: np.ndarray) -> None:
        z = np.asarray(z, np.float64)
        if z.shape != (self.population_size, self.n):
            raise ValueError(f"draws must be [{self.population_size}, {self.n}], got shape {z.shape}")
        z = z[ranking(fitness)]
        self.tell_sums(self.weights @ z, self.weights @ np.square(z))

    def tell_sums(self, z_w: np.ndarray, zz_w: np.ndarray) -> None:
        raise NotImplementedError

    def _set_sigma(self, sigma: np.ndarray) -> None:
        """The new standard deviations, those below SCALE_FLOOR raised to it and counted."""
        low = sigma < SCALE_FLOOR
        if low.any():
            self.repairs += int(low.sum())
            sigma = np.maximum(sigma, SCALE_FLOOR)
        self.sigma = sigma

    def state_dict(self) -> dict:
        return dict(mean=self.mean.copy(), sigma=self.sigma.copy(), generation=self.generation, repairs=self.repairs)

    def load(self, state: Mapping) -> None:
        mean, sigma = np.array(state["mean"], np.float64), np.array(state["sigma"], np.float64)
        if mean.shape != (self.n,) or sigma.shape != (self.n,):
            raise ValueError(f"{self.kind} state must hold mean and sigma of [{self.n}]")
        if not (np.isfinite(mean).all() and np.isfinite(sigma).all() and (sigma > 0).all()):
            raise ValueError(f"{self.kind} state holds non-finite values or a standard deviation <= 0")
        self.mean, self.sigma = mean, sigma
        self.generation, self.repairs = int(state["generation"]), int(state["repairs"])
