"""CEM, the cross-entropy method with a diagonal Gaussian (Rubinstein 1999; for policies, Szita & Lőrincz 2006).

The search distribution is N(mu, diag(sigma^2)). Each generation keeps the best k = max(2, round(elite_fraction
lambda)) members and fits the distribution to them, smoothed:

    mu      <- (1 - smoothing) mu + smoothing mean(elites)
    sigma^2 <- (1 - smoothing) sigma^2 + smoothing (var(elites) + extra_noise)

With the elites x_i = mu + sigma z_i and weights 1 / k, mean(elites) = mu + sigma sum_i z_i / k and var(elites) =
sigma^2 (sum_i z_i^2 / k - (sum_i z_i / k)^2): all the update needs are those two sums, so the draws stream as
sep-CMA-ES's do, and members travel the same way (a noise offset on the generation's [mu, sigma] base).
extra_noise (Szita & Lőrincz's noisy CEM) keeps the variance from collapsing early; 0 is plain CEM.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from workbench.checks import check_real
from workbench.evolution.cma_es import CMAConfig
from workbench.evolution.diagonal_gaussian import DiagonalGaussian
from workbench.evolution.distribution_search import DistributionSearch
from workbench.evolution.hyperparameters import hyperparameter


class CEMUpdate(DiagonalGaussian):
    """The diagonal CEM update in float64 (module docstring); a separable SearchDistribution."""

    kind = "CEM"

    def __init__(
        self,
        mean: np.ndarray,
        sigma: float,
        population_size: int | None = None,
        elite_fraction: float = 0.25,
        smoothing: float = 1.0,
        extra_noise: float = 0.0,
    ) -> None:
        super().__init__(mean, sigma, population_size)
        self.elites = min(self.population_size, max(2, round(elite_fraction * self.population_size)))
        self.smoothing, self.extra_noise = float(smoothing), float(extra_noise)
        self.weights = np.zeros(self.population_size)
        self.weights[: self.elites] = 1 / self.elites

    def tell_sums(self, z_w: np.ndarray, zz_w: np.ndarray) -> None:
        """The update from the elites' mean draw and mean squared draw (each [n])."""
        z_w, zz_w = np.asarray(z_w, np.float64), np.asarray(zz_w, np.float64)
        self.generation += 1
        a = self.smoothing
        variance = self.sigma**2 * np.maximum(zz_w - z_w**2, 0.0) + self.extra_noise
        self.mean = self.mean + a * self.sigma * z_w
        self._set_sigma(np.sqrt((1 - a) * self.sigma**2 + a * variance))


@dataclasses.dataclass(frozen=True)
class CEMConfig(CMAConfig):
    """CEM's hyperparameters: CMAConfig's, the elite fraction, the smoothing and the extra noise."""

    elite_fraction: float = hyperparameter(
        0.25,
        "elite fraction ρ",
        "the share of the members the distribution is fitted to (at least 2)",
        low=0.05,
        high=0.5,
        step=0.05,
    )
    smoothing: float = hyperparameter(
        1.0,
        "smoothing α",
        "the weight of the new fit against the old distribution (1: no smoothing)",
        low=0.05,
        high=1.0,
        step=0.05,
    )
    extra_noise: float = hyperparameter(0.0, "extra noise", "a variance added to each fit (noisy CEM; 0: plain CEM)")

    def validated(self) -> CEMConfig:
        super().validated()
        check_real("elite_fraction", self.elite_fraction, 0, 1, low_open=True)
        check_real("smoothing", self.smoothing, 0, 1, low_open=True)
        check_real("extra_noise", self.extra_noise, 0)
        return self


class CEM(DistributionSearch):
    """The cross-entropy method on a ParameterSpace (module docstring)."""

    kind = "CEM"
    config_class = CEMConfig
    UPDATE_FIELDS = ("population_size", "elite_fraction", "smoothing", "extra_noise")

    def _new_update(self, mean, population_size):
        config = self.config
        return CEMUpdate(mean, config.sigma_init, population_size, config.elite_fraction, config.smoothing, config.extra_noise)
