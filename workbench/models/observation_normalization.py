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

preserve_policy=True keeps a strategy's search mean the same policy when the statistics change: after each
merge the trainer maps the mean (Strategy.map_policy) through preserving_map(), which rewrites the first layer
so that it reads the new normalisation as it read the old one. The input part of PopArt (van Hasselt et al.
2016, which preserves a network's outputs while it rescales its targets): the kernel's row i scales by
std_new_i / std_old_i and the bias takes in the mean's move, since (x - m0) / s0 = (s1 / s0) (x - m1) / s1 +
(m1 - m0) / s0. Exact without a clip; with one, inputs saturate at slightly moved points. A strategy that
converges its step size (the CMA family) otherwise holds a sharp policy that the drifting statistics move
off its optimum faster than its step size lets it follow (docs/cma.md measures it on Hopper).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
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
    preserve_policy: bool = False

    def validated(self) -> ObservationNormalization:
        check_real("observation_normalization fraction", self.fraction, 0, 1, low_open=True)
        if self.clip is not None:
            check_real("observation_normalization clip", self.clip, 0, low_open=True)
        check_real("observation_normalization variance_floor", self.variance_floor, 0, low_open=True)
        if not isinstance(self.preserve_policy, bool):
            raise ValueError(f"observation_normalization preserve_policy must be True or False, got {self.preserve_policy!r}")
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
                f"observation_normalization must be None, True or a dict with {', '.join(cls.field_names())}, got {options!r}"
            )
        unknown = set(options) - set(cls.field_names())
        if unknown:
            raise ValueError(
                f"unknown observation_normalization options {sorted(unknown)}; known: {', '.join(cls.field_names())}"
            )
        return cls(**options).validated()

    @classmethod
    def field_names(cls) -> list[str]:
        return [f.name for f in dataclasses.fields(cls)]

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


def preserving_map(
    layer_shapes: Sequence[tuple[int, int]],
    before: tuple[np.ndarray, np.ndarray],
    after: tuple[np.ndarray, np.ndarray],
) -> Callable[[np.ndarray], np.ndarray]:
    """A function from a network's flat parameters (float64 [n]; kernel then bias per layer, the first layer's
    kernel [d, N] reading the normalised observation) that reads observations normalised by `before` = (mean,
    std) to parameters computing the same outputs from observations normalised by `after` (module docstring)."""
    (mean0, std0), (mean1, std1) = (tuple(np.asarray(a, np.float64) for a in pair) for pair in (before, after))
    if not layer_shapes:
        raise ValueError("preserving_map needs the network's layer shapes")
    d, outputs = (int(v) for v in layer_shapes[0])
    for name, array in (("before mean", mean0), ("before std", std0), ("after mean", mean1), ("after std", std1)):
        if array.shape != (d,) or not np.isfinite(array).all():
            raise ValueError(
                f"preserving_map: the {name} must be [{d}] finite values (the first layer's inputs), got {array.shape}"
            )
    if (std0 <= 0).any() or (std1 <= 0).any():
        raise ValueError("preserving_map: standard deviations must be positive")
    row_scale = std1 / std0
    shift = (mean1 - mean0) / std0
    n = sum(k * m + m for k, m in layer_shapes)

    def mapped(parameters: np.ndarray) -> np.ndarray:
        flat = np.array(parameters, np.float64)
        if flat.shape != (n,):
            raise ValueError(f"preserving_map: parameters must be [{n}] values, got {flat.shape}")
        kernel = flat[: d * outputs].reshape(d, outputs)
        bias = flat[d * outputs : d * outputs + outputs]
        bias += shift @ kernel  # the old kernel: the bias takes in the mean's move before the rows rescale
        kernel *= row_scale[:, None]
        return flat

    return mapped
