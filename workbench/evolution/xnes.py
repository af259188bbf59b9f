"""xNES, the exponential natural evolution strategy (Glasmachers, Schaul, Sun, Wierstra & Schmidhuber 2010), as a
strategy: a full covariance sigma^2 B B^T adapted by natural-gradient steps in the exponential parameterisation.

With the draws z_k ranked best first and SNES's utilities u_k (they sum to 0), one generation is

    G_delta = sum_k u_k z_k          G_M = sum_k u_k (z_k z_k^T - I)
    G_sigma = tr(G_M) / n            G_B = G_M - G_sigma I
    mu    <- mu + eta_mu sigma B G_delta
    sigma <- sigma exp(eta_sigma / 2 G_sigma)
    B     <- B expm(eta_B / 2 G_B)

with the paper's defaults lambda = 4 + floor(3 ln n), eta_mu = 1 and eta_sigma = eta_B = 3 (3 + ln n) /
(5 n sqrt n) (the `cmaes` package's XNES, which tests/evolution/test_xnes.py compares it with, uses the same). B is
n x n, so members travel as CMA-ES's do (dense, 4 n bytes; distribution_search.py) and spaces above
MAX_FULL_DIMENSION are refused; expm is taken by an eigendecomposition of the symmetric G_B.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from workbench.evolution.cma_es import CMAConfig
from workbench.evolution.cma_update import checked_start, default_population_size, ranking
from workbench.evolution.distribution_search import DistributionSearch
from workbench.evolution.snes import snes_utilities


def symmetric_expm(matrix: np.ndarray) -> np.ndarray:
    """expm of a symmetric matrix, U diag(exp(d)) U^T from its eigendecomposition."""
    values, vectors = np.linalg.eigh(matrix)
    return (vectors * np.exp(values)) @ vectors.T


class XNESUpdate:
    """The xNES update in float64 (module docstring); a SearchDistribution with dense members."""

    kind = "xNES"

    def __init__(self, mean: np.ndarray, sigma: float, population_size: int | None = None) -> None:
        self.mean = checked_start(mean, sigma)
        n = self.n = self.mean.size
        self.population_size = default_population_size(n) if population_size is None else int(population_size)
        if self.population_size < 4:
            raise ValueError(f"population_size must be at least 4, got {self.population_size}")
        self.sigma = float(sigma)
        self.B = np.eye(n)
        self.weights = snes_utilities(self.population_size)
        self.eta_mean = 1.0
        self.eta_sigma = self.eta_b = 3 * (3 + math.log(n)) / (5 * n * math.sqrt(n))
        self.generation, self.repairs = 0, 0

    @property
    def step_size(self) -> float:
        return self.sigma

    def scales(self) -> np.ndarray:
        """sqrt(diag(sigma^2 B B^T))."""
        return self.sigma * np.sqrt(np.einsum("ij,ij->i", self.B, self.B))

    def axes(self) -> np.ndarray:
        """The standard deviations along the principal axes of sigma^2 B B^T: sigma times B's singular values,
        largest first."""
        return self.sigma * np.linalg.svd(self.B, compute_uv=False)

    def condition(self) -> float:
        axes = self.axes()
        return float((axes[0] / axes[-1]) ** 2)

    def sample(self, z: np.ndarray) -> np.ndarray:
        return self.mean + self.sigma * np.asarray(z, np.float64) @ self.B.T

    def tell(self, z: np.ndarray, fitness: np.ndarray) -> None:
        """One generation from the draws [lambda, n] and fitness [lambda] (maximised; non-finite last)."""
        z = np.asarray(z, np.float64)
        if z.shape != (self.population_size, self.n):
            raise ValueError(f"draws must be [{self.population_size}, {self.n}], got shape {z.shape}")
        z = z[ranking(fitness)]
        u = self.weights
        g_delta = u @ z
        g_m = (z * u[:, None]).T @ z - u.sum() * np.eye(self.n)
        g_sigma = float(np.trace(g_m)) / self.n
        g_b = g_m - g_sigma * np.eye(self.n)
        self.mean = self.mean + self.eta_mean * self.sigma * (self.B @ g_delta)
        self.sigma = self.sigma * math.exp(self.eta_sigma / 2 * g_sigma)
        self.B = self.B @ symmetric_expm(self.eta_b / 2 * g_b)
        self.generation += 1

    def state_dict(self) -> dict:
        return dict(mean=self.mean.copy(), sigma=self.sigma, B=self.B.copy(), generation=self.generation, repairs=self.repairs)

    def load(self, state: Mapping) -> None:
        mean, b = np.array(state["mean"], np.float64), np.array(state["B"], np.float64)
        sigma = float(state["sigma"])
        if mean.shape != (self.n,) or b.shape != (self.n, self.n):
            raise ValueError(f"{self.kind} state must hold mean [{self.n}] and B [{self.n}, {self.n}]")
        if not (np.isfinite(mean).all() and np.isfinite(b).all() and math.isfinite(sigma) and sigma > 0):
            raise ValueError(f"{self.kind} state holds non-finite values or sigma <= 0")
        self.mean, self.B, self.sigma = mean, b, sigma
        self.generation, self.repairs = int(state["generation"]), int(state["repairs"])


class XNES(DistributionSearch):
    """xNES with a full covariance (module docstring)."""

    kind = "XNES"
    config_class = CMAConfig
    dense_members = True

    def _new_update(self, mean, population_size):
        return XNESUpdate(mean, self.config.sigma_init, population_size)
