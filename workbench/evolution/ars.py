"""Augmented Random Search (Mania et al. 2018), ask/tell, on a ParameterSpace.

The policy M is a dense float32 vector (for ARS a linear policy, model "linear"); it
reaches evaluators as a base, and direction k is evaluated at M + nu delta_k and
M - nu delta_k (Genome(key, ((i_k, +nu),)) and its mirror: one noise offset per
direction). A generation is one round; with r+_k, r-_k the directions' returns
(minus survival_bonus per step, see below):

    kept   = the top_directions directions by max(r+_k, r-_k)       (all of them: V1 / V2)
    sigma_R = standard deviation of the 2 b returns kept
    M     += step_size / (b sigma_R) * sum_kept (r+_k - r-_k) delta_k

V2 (and V2-t) normalise states by the running mean and standard deviation of every
state seen in training, frozen within a generation: that is the run's observation
normalisation (RunSpec observation_normalization with fraction 1), not part of this
class; V1 runs without it. The "-t" variants keep b < N directions.

survival_bonus: a per-step constant subtracted from every training return (the paper
removed the alive bonus of Hopper, Walker2d and Ant (1) and Humanoid (5) during
training); records and the reported fitness stay unshifted. It needs the steps of
each episode (EvaluationResult.steps).

M starts at zero, as in the paper. A direction with a non-finite return (a diverged
member) counts as the generation's lowest finite return; a generation without two
distinct returns leaves M unchanged.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from workbench.checks import check_int, check_real
from workbench.evolution.genome import Genome
from workbench.evolution.hyperparameters import hyperparameter
from workbench.evolution.mirrored import MirroredSearch
from workbench.evolution.space import ParameterSpace
from workbench.evolution.strategy import shifted_returns


@dataclasses.dataclass(frozen=True)
class ARSConfig:
    """ARS hyperparameters; the defaults are the paper's HalfCheetah V2-t settings (docs/continuous_control.md)."""

    directions: int = hyperparameter(
        32, "directions N (ARS)", "directions per generation (2 N members)", scale="int", low=1, high=1000
    )
    top_directions: int | None = hyperparameter(
        4, "kept directions b (ARS)", "b <= N directions kept for the update (None = all: V1 / V2)", scale="int", low=1, high=1000
    )
    step_size: float = hyperparameter(
        0.02, "step size α (ARS)", "the update's step size", scale="log", low=1e-4, high=1.0, step=0.05
    )
    noise: float = hyperparameter(0.03, "noise ν (ARS)", "the perturbation scale", scale="log", low=1e-4, high=1.0, step=0.05)
    survival_bonus: float = hyperparameter(
        0.0,
        "survival bonus removed per step",
        "per-step shift subtracted from training returns (0 = none)",
        unit="per step",
        low=0.0,
        high=10.0,
        step=0.5,
    )
    episodes_per_member: int = hyperparameter(1, "episodes per member", "episodes of each member", scale="int")
    center_episodes: int = hyperparameter(
        0, "center episodes", "episodes of the policy each generation, for reporting (0 = none; not in the update)", scale="int"
    )

    def validated(self) -> ARSConfig:
        check_int("directions", self.directions, 1)
        if self.top_directions is not None:
            check_int("top_directions", self.top_directions, 1, self.directions)
        check_real("step_size", self.step_size, 0, low_open=True)
        check_real("noise", self.noise, 0, low_open=True)
        check_real("survival_bonus", self.survival_bonus, 0)
        check_int("episodes_per_member", self.episodes_per_member, 1)
        check_int("center_episodes", self.center_episodes, 0)
        return self

    @property
    def kept(self) -> int:
        return self.directions if self.top_directions is None else self.top_directions


def ars_step(
    space: ParameterSpace, indices: Sequence[int], plus: np.ndarray, minus: np.ndarray, config: ARSConfig
) -> tuple[np.ndarray, float]:
    """(the update of M as float32 [n], sigma_R) from the directions' returns (float64 [N] each)."""
    plus, minus = plus.copy(), minus.copy()
    finite = np.concatenate([plus, minus])
    finite = finite[np.isfinite(finite)]
    if finite.size == 0:
        return np.zeros(space.num_parameters, np.float32), 0.0
    floor = finite.min()
    plus[~np.isfinite(plus)] = floor
    minus[~np.isfinite(minus)] = floor
    order = np.argsort(-np.maximum(plus, minus), kind="stable")[: config.kept]
    kept = np.concatenate([plus[order], minus[order]])
    sigma_r = float(np.std(kept))
    if sigma_r == 0.0:
        return np.zeros(space.num_parameters, np.float32), 0.0
    weights = (plus[order] - minus[order]) * (config.step_size / (config.kept * sigma_r))
    return space.combine([indices[k] for k in order], weights), sigma_r


class AugmentedRandomSearch(MirroredSearch):
    """ARS V1 / V2 / V1-t / V2-t on a ParameterSpace (see the module docstring); `seed` drives the directions."""

    kind = "AugmentedRandomSearch"
    config_class = ARSConfig
    EXTRAS = ("reward_std", "update_norm")

    def __init__(self, config: ARSConfig, space: ParameterSpace, seed: int = 0) -> None:
        super().__init__(config, space, seed)
        self._start_center(np.zeros(space.num_parameters, np.float32))  # M = 0, as in the paper

    def pairs(self) -> int:
        return self.config.directions

    def mutation(self, index: int, sign: int) -> tuple:
        return (index, sign * self.config.noise)

    def _tell(self, requests, results, means):
        self._pair_fitness(means)
        directions = len(self.indices)
        shifted = shifted_returns(results[: 2 * directions], self.config.survival_bonus).reshape(directions, 2)
        update, sigma_r = ars_step(self.space, self.indices, shifted[:, 0], shifted[:, 1], self.config)
        self._record_generation(
            means[: 2 * directions],
            self.center_fitness,
            Genome(self._key),
            sum(r.episodes for r in requests),
            reward_std=sigma_r,
            update_norm=float(np.linalg.norm(update)),
        )
        self._next_center(self.center + update)

    # -- state ----------------------------------------------------------------------------
    def state_dict(self) -> dict:
        return self._common_state()

    def _load(self, state):
        self._load_center(state)
        self._rekey()
