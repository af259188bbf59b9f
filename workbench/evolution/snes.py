"""SNES, the separable natural evolution strategy (Schaul, Glasmachers & Schmidhuber 2011), as a strategy.

The search distribution is N(mu, diag(sigma^2)) with a standard deviation per parameter. With the draws z_k ranked
best first and the utilities u_k = max(0, ln(lambda / 2 + 1) - ln k) / sum_j max(0, ln(lambda / 2 + 1) - ln j)
- 1 / lambda (rank-based fitness shaping; they sum to 0), one generation is

    mu    <- mu + eta_mu sigma * sum_k u_k z_k
    sigma <- sigma * exp(eta_sigma / 2 * sum_k u_k (z_k^2 - 1))   (= exp(eta_sigma / 2 * sum_k u_k z_k^2))

with the paper's defaults lambda = 4 + floor(3 ln n), eta_mu = 1 and eta_sigma = (3 + ln n) / (5 sqrt n). Members
travel as sep-CMA-ES's do (distribution_search.py): a noise offset on the generation's [mu, sigma] base, 12 bytes.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from workbench.checks import check_real
from workbench.evolution.cma_es import CMAConfig
from workbench.evolution.diagonal_gaussian import DiagonalGaussian
from workbench.evolution.distribution_search import DistributionSearch
from workbench.evolution.hyperparameters import hyperparameter


def snes_utilities(population_size: int) -> np.ndarray:
    """The utilities of the members ranked best first, [lambda] (module docstring)."""
    raw = np.maximum(0.0, math.log(population_size / 2 + 1) - np.log(np.arange(1, population_size + 1)))
    return raw / raw.sum() - 1 / population_size


class SNESUpdate(DiagonalGaussian):
    """The SNES update in float64 (module docstring); a separable SearchDistribution."""

    kind = "SNES"

    def __init__(
        self,
        mean: np.ndarray,
        sigma: float,
        population_size: int | None = None,
        mean_learning_rate: float | None = None,
        scale_learning_rate: float | None = None,
    ) -> None:
        super().__init__(mean, sigma, population_size)
        self.eta_mu = 1.0 if mean_learning_rate is None else float(mean_learning_rate)
        default_eta_sigma = (3 + math.log(self.n)) / (5 * math.sqrt(self.n))
        self.eta_sigma = default_eta_sigma if scale_learning_rate is None else float(scale_learning_rate)
        self.weights = snes_utilities(self.population_size)

    @property
    def utilities(self) -> np.ndarray:
        """The rank utilities (the weights of the members ranked best first)."""
        return self.weights

    def tell_sums(self, z_w: np.ndarray, zz_w: np.ndarray) -> None:
        """The update from sum_k u_k z_k and sum_k u_k z_k^2 over the ranked draws (each [n])."""
        self.generation += 1
        self.mean = self.mean + self.eta_mu * self.sigma * np.asarray(z_w, np.float64)
        self._set_sigma(self.sigma * np.exp(self.eta_sigma / 2 * np.asarray(zz_w, np.float64)))


@dataclasses.dataclass(frozen=True)
class SNESConfig(CMAConfig):
    """SNES's hyperparameters: CMAConfig's and the two learning rates (None: the paper's defaults)."""

    mean_learning_rate: float | None = hyperparameter(1.0, "mean learning rate η_μ", "the mean's step (the paper: 1)")
    scale_learning_rate: float | None = hyperparameter(
        None, "scale learning rate η_σ", "the standard deviations' step (None = (3 + ln n) / (5 sqrt n))"
    )

    def validated(self) -> SNESConfig:
        super().validated()
        if self.mean_learning_rate is not None:
            check_real("mean_learning_rate", self.mean_learning_rate, 0, low_open=True)
        if self.scale_learning_rate is not None:
            check_real("scale_learning_rate", self.scale_learning_rate, 0, low_open=True)
        return self


class SNES(DistributionSearch):
    """SNES on a ParameterSpace (module docstring)."""

    kind = "SNES"
    config_class = SNESConfig
    UPDATE_FIELDS = ("population_size", "mean_learning_rate", "scale_learning_rate")

    def _new_update(self, mean, population_size):
        config = self.config
        return SNESUpdate(mean, config.sigma_init, population_size, config.mean_learning_rate, config.scale_learning_rate)
