"""Uncertainty handling for CMA-ES on noisy returns (UH-CMA-ES: Hansen, Niederberger, Guzzella & Koumoutsakos 2009,
"A method for handling uncertainty in evolutionary optimization with an application to feedback control of
combustion"; the measurement and treatment of pycma's NoiseHandler, with its constants).

Each generation a few members (2 + lambda / 20, rounded up with that fraction's probability) play again on other
episodes. Their ranks among all 2 lambda values (the first plays and the re-plays together) change by more than
noise-free ranks would when noise dominates the ranking; the measure s is that change less a limit (the 25th
percentile of the possible rank differences, at least 1), averaged over the re-played members and smoothed over
generations (noise_s += 0.3 (mean s - noise_s)). While noise_s > 0 the step size grows by 1 + 2 / (n + 10) per
generation, so that the search keeps a spread at which its ranking still sees the returns' signal (pycma's
treatment; its alternative, more evaluations per member, is `episodes_per_member` here, chosen by the user).

The re-played members are the generation's first ones (i.i.d. draws, as the 2009 paper's; pycma re-plays the
first half of them and the best of the rest, which needs the first plays before choosing). The re-plays only
measure: the update ranks the first plays, as pycma's.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

CUMULATION = 0.3  # pycma's cum: smoothing of the measure over generations
THETA = 0.5  # pycma's theta: the limit is the theta * 50 = 25th percentile of the possible rank changes


def reevaluation_count(population_size: int, rng: np.random.Generator) -> int:
    """2 + lambda / 20 members to play again, its fraction rounded up with that probability (pycma's)."""
    wanted = 2 + population_size / 20
    count = int(wanted) + int(wanted % 1 > rng.random())
    return min(count, population_size)


def sigma_factor(n: int) -> float:
    """The step size's growth per generation while noise dominates: 1 + 2 / (n + 10)."""
    return 1 + 2.0 / (n + 10)


def _percentile(data: np.ndarray, p: float) -> float:
    """pycma's prctile: linear between the order statistics at p n / 100 - 0.5, clamped to the ends."""
    ordered = np.sort(data)
    n = len(ordered)
    position = p * n / 100 - 0.5
    if position <= 0:
        return float(ordered[0])
    if position >= n - 1:
        return float(ordered[-1])
    i = int(position)
    return float((i + 1 - position) * ordered[i] + (position - i) * ordered[i + 1])


def rank_change(costs: ArrayLike, recosts: ArrayLike, replayed: Sequence[int]) -> float:
    """The mean over the re-played members of |rank change| less its limit (pycma's NoiseHandler.update_measure):
    costs [lambda] of the first plays (lower is better; a non-finite return is +inf), recosts [lambda] equal to
    costs except at `replayed`, where they hold the re-plays."""
    first, second = np.asarray(costs, np.float64), np.asarray(recosts, np.float64)
    if first.ndim != 1 or first.shape != second.shape or len(replayed) == 0:
        raise ValueError(
            f"rank_change needs costs and recosts of one length and re-played members, got {first.shape}, {second.shape}"
        )
    lam = first.size
    order = np.argsort(np.concatenate([first, second]))
    ranks = np.argsort(order).reshape(2, lam)
    delta = ranks[0] - ranks[1] - np.sign(ranks[0] - ranks[1])
    r = np.arange(1, 2 * lam)
    measures = []
    for i in replayed:
        limit = 0.5 * (
            _percentile(np.abs(r - (ranks[0, i] + 1 - (ranks[0, i] > ranks[1, i]))), THETA * 50)
            + _percentile(np.abs(r - (ranks[1, i] + 1 - (ranks[1, i] > ranks[0, i]))), THETA * 50)
        )
        measures.append(abs(delta[i]) - max(limit, 1.0))
    return float(np.mean(measures))


class UncertaintyHandler:
    """The smoothed measure noise_s and what it does to sigma (module docstring); JSON-able state."""

    def __init__(self, n: int) -> None:
        self.alpha = sigma_factor(n)
        self.noise_s = 0.0

    def measure(self, costs: ArrayLike, recosts: ArrayLike, replayed: Sequence[int]) -> float:
        """Takes a generation's plays in and returns the factor for sigma: alpha while noise_s > 0, else 1."""
        self.noise_s += CUMULATION * (rank_change(costs, recosts, replayed) - self.noise_s)
        return self.alpha if self.noise_s > 0 else 1.0

    def state_dict(self) -> dict:
        return {"noise_s": self.noise_s}

    def load(self, state: dict) -> None:
        value = float(state["noise_s"])
        if not math.isfinite(value):
            raise ValueError(f"corrupt noise handling state: noise_s {value!r}")
        self.noise_s = value
