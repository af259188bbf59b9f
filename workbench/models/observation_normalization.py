"""Observation normalisation for continuous control: running statistics of the states a population saw.

    options = ObservationNormalization(fraction=1.0, clip=5.0, variance_floor=1e-2)
    statistics = ObservationStatistics.empty(17)
    statistics = statistics.merged(per_episode)         # after a generation, episodes in (request, episode) order
    mean, std = statistics.mean_and_std(options.variance_floor)

A model built with normalisation computes clip((x - mean) / std, -clip, clip) before its first layer
(inside the graph, the same for every member). `mean` and `std` are frozen within a generation: the
trainer merges the states of a generation's episodes after it ends (Mania et al. 2018 use every state,
fraction 1; Salimans et al. 2017 the states of about 1 % of the rollouts, fraction 0.01).

Statistics are kept as float64 count, sum and sum of squares (as OpenAI-ES kept them), so merging is
addition: each episode's sums are accumulated in its own slot in step order, and the merge adds the
episodes in (request, episode) order, which makes the statistics independent of the evaluator's
layout, of Ray's chunking and of resumes. std = sqrt(max(sumsq / n - mean^2, variance_floor)); with no
state seen yet mean = 0 and std = 1 (the identity). Which episodes are sampled depends on the episode's
seed only (sampled()).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from workbench.checks import check_int, check_real
from workbench.envs.rng import SplitMix64


@dataclasses.dataclass(frozen=True)
class ObservationNormalization:
    """How observations are normalised: the fraction of episodes whose states count, the clip after
    normalising (None = no clip) and the variance floor."""

    fraction: float = 1.0
    clip: float | None = 5.0
    variance_floor: float = 1e-2

    def validated(self) -> ObservationNormalization:
        check_real("observation_normalization fraction", self.fraction, 0, 1, low_open=True)
        if self.clip is not None:
            check_real("observation_normalization clip", self.clip, 0, low_open=True)
        check_real("observation_normalization variance_floor", self.variance_floor, 0, low_open=True)
        return self

    @classmethod
    def from_options(cls, options: Any) -> ObservationNormalization | None:
        """None, True (the defaults), a dict of fields, or an ObservationNormalization -> validated (or None)."""
        if options is None or options is False:
            return None
        if options is True:
            return cls()
        if isinstance(options, cls):
            return options.validated()
        if not isinstance(options, dict):
            raise ValueError(
                f"observation_normalization must be None, True or a dict with fraction, clip, variance_floor, got {options!r}"
            )
        unknown = set(options) - {f.name for f in dataclasses.fields(cls)}
        if unknown:
            raise ValueError(
                f"unknown observation_normalization options {sorted(unknown)}; known: fraction, clip, variance_floor"
            )
        return cls(**options).validated()

    def to_json(self) -> dict:
        return dataclasses.asdict(self)

    def sampled(self, episode_seed: int) -> bool:
        """Whether the states of the episode with this seed count (a function of the seed alone)."""
        if self.fraction >= 1.0:
            return True
        return SplitMix64(episode_seed ^ 0x6E6F726D).uniform() < self.fraction


class ObservationStatistics:
    """count, sum [d] and sum of squares [d] of observations (float64); immutable."""

    def __init__(self, count: float, total: np.ndarray, total_squares: np.ndarray) -> None:
        total = np.array(total, np.float64)
        total_squares = np.array(total_squares, np.float64)
        if total.ndim != 1 or total.size == 0 or total_squares.shape != total.shape:
            raise ValueError(
                f"observation statistics need sum and sum of squares of one shape [d], got "
                f"{total.shape} and {total_squares.shape}"
            )
        count = float(count)
        if not (np.isfinite(count) and count >= 0) or not np.isfinite(total).all() or not np.isfinite(total_squares).all():
            raise ValueError("observation statistics must be finite with count >= 0")
        if (total_squares < 0).any():
            raise ValueError("observation statistics: a sum of squares is negative (corrupt statistics)")
        for array in (total, total_squares):
            array.setflags(write=False)
        self.count, self.sum, self.sum_squares = count, total, total_squares

    @classmethod
    def empty(cls, size: int) -> ObservationStatistics:
        check_int("size", size, 1)
        return cls(0.0, np.zeros(size), np.zeros(size))

    @property
    def size(self) -> int:
        return int(self.sum.size)

    def merged(self, episodes: Sequence[tuple[float, np.ndarray, np.ndarray]]) -> ObservationStatistics:
        """These statistics plus episodes' (count, sum, sum of squares), added in the given order."""
        count, total, squares = self.count, self.sum.copy(), self.sum_squares.copy()
        for k, (n, s, ss) in enumerate(episodes):
            s, ss = np.asarray(s, np.float64), np.asarray(ss, np.float64)
            if s.shape != total.shape or ss.shape != total.shape:
                raise ValueError(f"episodes[{k}] statistics must be [{self.size}], got {s.shape} and {ss.shape}")
            count += float(n)
            total += s
            squares += ss
        return ObservationStatistics(count, total, squares)

    def mean_and_std(self, variance_floor: float = 1e-2) -> tuple[np.ndarray, np.ndarray]:
        """(mean, std) as float32 [d]: std = sqrt(max(variance, variance_floor)); (0, 1) before any state."""
        if self.count == 0:
            return np.zeros(self.size, np.float32), np.ones(self.size, np.float32)
        mean = self.sum / self.count
        variance = np.maximum(self.sum_squares / self.count - mean * mean, variance_floor)
        return mean.astype(np.float32), np.sqrt(variance).astype(np.float32)

    # -- state ----------------------------------------------------------------------------
    def state(self) -> dict:
        return {"count": self.count, "sum": self.sum.copy(), "sum_squares": self.sum_squares.copy()}

    @classmethod
    def from_state(cls, state: Any, size: int | None = None) -> ObservationStatistics:
        """The statistics of state(); ValueError for corrupt data or another observation size."""
        try:
            statistics = cls(state["count"], state["sum"], state["sum_squares"])
        except (KeyError, TypeError) as error:
            raise ValueError(f"corrupt observation statistics: {error!r}") from error
        if size is not None and statistics.size != size:
            raise ValueError(f"observation statistics are for observations of size {statistics.size}, not {size}")
        return statistics

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, ObservationStatistics)
            and self.count == other.count
            and np.array_equal(self.sum, other.sum)
            and np.array_equal(self.sum_squares, other.sum_squares)
        )

    def __repr__(self) -> str:
        return f"ObservationStatistics({self.count:.0f} states of size {self.size})"
