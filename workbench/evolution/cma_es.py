"""CMA-ES (full covariance) and sep-CMA-ES (diagonal covariance) as strategies of the registry.

    CMAES      Hansen's tutorial CMA-ES (2016): rank-one and rank-mu updates with active (negative) weights,
               cumulative step-size adaptation, lambda = 4 + floor(3 ln n); for up to MAX_FULL_DIMENSION
               parameters (a member is a dense vector: 4 n bytes to ship)
    SepCMAES   sep-CMA-ES (Ros & Hansen 2008): the diagonal of C only, linear in n; for networks of any size
               (a member is a noise offset on the generation's [mean, scales] base: 12 bytes to ship)

The update is cma_update.py's, sampling and shipping distribution_search.py's. Both start from the zero vector
(initial="zeros", the linear policies' start) or the space's seeded initialisation (initial="random", a network's
usual start), with step size sigma_init. Non-finite returns rank last; degenerate distributions restart (IPOP).
noise_handling=True adds UH-CMA-ES's uncertainty handling (noise_handling.py): a few members play again each
generation and sigma grows while their rank changes show that noise dominates the ranking (the record's
noise_measure).
survival_bonus (as ARS's) is subtracted per step from the returns the update ranks, so that a task's alive bonus
(Hopper, Walker2d and Ant 1, Humanoid 5) does not make standing still the optimum; records stay unshifted.
"""

from __future__ import annotations

import dataclasses

from workbench.checks import check_choice, check_int, check_real
from workbench.evolution.cma_update import CovarianceUpdate, DiagonalUpdate
from workbench.evolution.distribution_search import DistributionSearch
from workbench.evolution.hyperparameters import hyperparameter


@dataclasses.dataclass(frozen=True)
class CMAConfig:
    """The hyperparameters of CMA-ES and sep-CMA-ES: the population, the initial distribution, the episodes; the
    learning rates and weights are the method's defaults for n and lambda (cma_update.py)."""

    population_size: int | None = hyperparameter(
        None, "population size λ", "members per generation (None = 4 + floor(3 ln n))", scale="int", low=4, high=10_000
    )
    sigma_init: float = hyperparameter(
        0.1, "initial step size σ0", "the search distribution's initial standard deviation (before the first generation)"
    )
    initial: str = hyperparameter(
        "random", "initial mean", '"zeros" or "random" (the space\'s seeded initial weights); before the first generation'
    )
    episodes_per_member: int = hyperparameter(1, "episodes per member", "episodes of each member", scale="int")
    center_episodes: int = hyperparameter(
        0, "center episodes", "episodes of the mean each generation, for reporting (0 = none; not in the update)", scale="int"
    )
    max_population: int = hyperparameter(10_000, "largest restart population", "IPOP restarts double λ up to this", scale="int")
    restart_from: str = hyperparameter(
        "mean", "restart from", '"mean" (the current one: keeps a policy\'s progress) or "initial" (pycma\'s IPOP)'
    )
    survival_bonus: float = hyperparameter(
        0.0,
        "survival bonus removed per step",
        "per-step shift subtracted from the returns the update ranks (ARS's; 0 = none); records stay unshifted",
        unit="per step",
        low=0.0,
        high=10.0,
    )
    noise_handling: bool = hyperparameter(
        False,
        "noise handling",
        "UH-CMA-ES (pycma's NoiseHandler): 2 + λ/20 members play again each generation; σ grows while their ranks "
        "show that noise dominates",
    )

    def validated(self) -> CMAConfig:
        if self.population_size is not None:
            check_int("population_size", self.population_size, 4)
        check_real("sigma_init", self.sigma_init, 0, low_open=True)
        check_choice("initial", self.initial, ("zeros", "random"))
        check_int("episodes_per_member", self.episodes_per_member, 1)
        check_int("center_episodes", self.center_episodes, 0)
        check_int("max_population", self.max_population, 4)
        check_choice("restart_from", self.restart_from, ("mean", "initial"))
        check_real("survival_bonus", self.survival_bonus, 0)
        if not isinstance(self.noise_handling, bool):
            raise ValueError(f"noise_handling must be True or False, got {self.noise_handling!r}")
        if self.population_size is not None and self.max_population < self.population_size:
            raise ValueError(f"max_population ({self.max_population}) must be at least population_size ({self.population_size})")
        return self


class CMAES(DistributionSearch):
    """CMA-ES with a full covariance matrix (module docstring)."""

    kind = "CMAES"
    config_class = CMAConfig
    EXTRAS = DistributionSearch.EXTRAS + ("noise_measure",)
    dense_members = True

    def _new_update(self, mean, population_size):
        return CovarianceUpdate(mean, self.config.sigma_init, population_size)


class SepCMAES(DistributionSearch):
    """sep-CMA-ES: a diagonal covariance (module docstring)."""

    kind = "SepCMAES"
    config_class = CMAConfig
    EXTRAS = DistributionSearch.EXTRAS + ("noise_measure",)

    def _new_update(self, mean, population_size):
        return DiagonalUpdate(mean, self.config.sigma_init, population_size)
