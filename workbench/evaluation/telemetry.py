"""Telemetry: where an evaluation's time went, and how many frames it produced.

Each sub-population times its own calls in the categories of CATEGORIES:
emulation (environment steps, observations, resets), inference (the model),
weight loading (decoding genomes and writing model slots); idle is the rest of
its wall time (waiting for a CPU or the GIL, Python bookkeeping, waiting for the
last episodes of the others). The seconds are summed over sub-populations, so
with k sub-populations they add up to k times the wall time; the fractions
divide by that. TIME_SPLIT (the categories and idle, defined with the generation
records) is the one list of these names that records, logs and dashboards use.
"""
from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterable, Mapping

from workbench.evolution.records import TIME_SPLIT

CATEGORIES = TIME_SPLIT[:-1]  # timed by the sub-populations; "idle" is the rest of their wall time
_COUNTS = ("frames", "steps", "episodes", "bytes_shipped")


@dataclasses.dataclass
class Telemetry:
    """One evaluation's (or round's) figures; seconds are summed over `subpopulations` lanes."""

    wall_seconds: float = 0.0
    emulation_seconds: float = 0.0
    inference_seconds: float = 0.0
    weight_loading_seconds: float = 0.0
    idle_seconds: float = 0.0
    frames: int = 0
    steps: int = 0
    episodes: int = 0
    subpopulations: int = 1
    bytes_shipped: int = 0  # between processes or machines (RayEvaluator); 0 for a local evaluation

    @property
    def frames_per_second(self) -> float:
        return self.frames / self.wall_seconds if self.wall_seconds > 0 else 0.0

    def seconds(self, name: str) -> float:
        """Seconds spent in `name` (one of TIME_SPLIT)."""
        return getattr(self, f"{name}_seconds")

    def fractions(self) -> dict[str, float]:
        """Each TIME_SPLIT name's share of the lanes' total wall time."""
        total = self.wall_seconds * self.subpopulations
        return {name: (self.seconds(name) / total if total > 0 else 0.0) for name in TIME_SPLIT}

    def as_dict(self) -> dict:
        return dict(dataclasses.asdict(self), frames_per_second=self.frames_per_second,
                    **{f"{name}_fraction": value for name, value in self.fractions().items()})

    @classmethod
    def from_dict(cls, data: Mapping) -> Telemetry:
        """A Telemetry from dataclasses.asdict() output (as Ray actors send it)."""
        return cls(**{field.name: data[field.name] for field in dataclasses.fields(cls) if field.name in data})

    @classmethod
    def combine(cls, parts: Iterable[Telemetry], wall_seconds: float, subpopulations: int | None = None,
                bytes_shipped: int = 0) -> Telemetry:
        """One Telemetry for lanes that ran side by side for wall_seconds (default: one lane per part)."""
        parts = list(parts)
        lanes = len(parts) if subpopulations is None else subpopulations
        total = cls(wall_seconds=wall_seconds, subpopulations=lanes)
        for part in parts:
            for name in CATEGORIES:
                setattr(total, f"{name}_seconds", total.seconds(name) + part.seconds(name))
            for name in _COUNTS:
                setattr(total, name, getattr(total, name) + getattr(part, name))
        total.bytes_shipped += bytes_shipped
        busy = sum(total.seconds(name) for name in CATEGORIES)
        total.idle_seconds = max(0.0, wall_seconds * lanes - busy)
        return total


def time_split(parts: Iterable[Telemetry]) -> dict[str, float]:
    """The TIME_SPLIT shares of several evaluations together (e.g. a generation's rounds); they sum to 1."""
    parts = list(parts)
    seconds = {name: sum(part.seconds(name) for part in parts) for name in TIME_SPLIT}
    total = sum(seconds.values()) or 1.0
    return {name: value / total for name, value in seconds.items()}


class Stopwatch:
    """Accumulates seconds per category into a Telemetry: `with watch("inference"): ...`.

    With a `timeline` list, every timed call is also appended to it as (category, start, end)
    in time.perf_counter() seconds (for timeline plots of the pipeline).
    """

    def __init__(self, telemetry: Telemetry, timeline: list | None = None) -> None:
        self.telemetry, self.timeline = telemetry, timeline
        self._category = None

    def __call__(self, category: str) -> Stopwatch:
        self._category = category
        return self

    def __enter__(self) -> None:
        self._start = time.perf_counter()

    def __exit__(self, *exc: object) -> None:
        end = time.perf_counter()
        name = f"{self._category}_seconds"
        setattr(self.telemetry, name, getattr(self.telemetry, name) + end - self._start)
        if self.timeline is not None:
            self.timeline.append((self._category, self._start, end))
