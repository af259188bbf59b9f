"""Telemetry: where an evaluation's time went, and how many frames it produced.

Each sub-population times its own calls in the categories of CATEGORIES:
emulation (environment steps, observations, resets), inference (the model),
weight loading (decoding genomes and writing model slots), fused steps (graph calls
that step the environments and run the model together, many steps per call); idle is the rest of
its wall time (waiting for a CPU or the GIL, Python bookkeeping, waiting for the
last episodes of the others). The seconds are summed over sub-populations, so
with k sub-populations they add up to k times the wall time; the fractions
divide by that. TIME_SPLIT (the categories and idle, defined with the generation
records) is the one list of these names that records, logs and dashboards use.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from workbench.evolution.records import TIME_SPLIT

CATEGORIES = TIME_SPLIT[:-1]  # timed by the sub-populations; "idle" is the rest of their wall time
_COUNTS = ("frames", "steps", "episodes", "bytes_shipped", "tail_steps")
OCCUPANCY_BINS = 20  # equal slices of a round's wall time in Telemetry.occupancy


@dataclasses.dataclass
class Telemetry:
    """One evaluation's (or round's) figures; seconds are summed over `subpopulations` lanes."""

    wall_seconds: float = 0.0
    emulation_seconds: float = 0.0
    inference_seconds: float = 0.0
    weight_loading_seconds: float = 0.0
    fused_steps_seconds: float = 0.0
    idle_seconds: float = 0.0
    frames: int = 0
    steps: int = 0
    episodes: int = 0
    subpopulations: int = 1
    bytes_shipped: int = 0  # between processes or machines (RayEvaluator); 0 for a local evaluation
    busy_seconds: float = 0.0  # wall seconds of the busy phase (every slot running; see the module)
    tail_steps: int = 0  # environment steps taken in the tail
    occupancy: tuple = ()  # share of the capacity running episodes in OCCUPANCY_BINS slices of the wall time

    @property
    def frames_per_second(self) -> float:
        return self.frames / self.wall_seconds if self.wall_seconds > 0 else 0.0

    @property
    def tail_seconds(self) -> float:
        """Wall seconds from the end of the busy phase to the end of the round."""
        return max(0.0, self.wall_seconds - self.busy_seconds)

    @property
    def busy_frames(self) -> float:
        """Frames of the busy phase, estimated as the frames times the busy phase's share of the steps."""
        return self.frames * (self.steps - self.tail_steps) / self.steps if self.steps else 0.0

    @property
    def busy_frames_per_second(self) -> float:
        """The rate while every slot runs (0 when the round had no busy phase)."""
        return self.busy_frames / self.busy_seconds if self.busy_seconds > 0 else 0.0

    def round_record(self, phase: str) -> dict:
        """This evaluation as one round of a GenerationRecord (ROUND_FIELDS), named by the strategy's phase."""
        return dict(
            phase=phase,
            episodes=self.episodes,
            frames=self.frames,
            seconds=self.wall_seconds,
            busy_frames_per_second=self.busy_frames_per_second,
            tail_seconds=self.tail_seconds,
            occupancy=self.occupancy,
        )

    def seconds(self, name: str) -> float:
        """Seconds spent in `name` (one of TIME_SPLIT)."""
        return getattr(self, f"{name}_seconds")

    def fractions(self) -> dict[str, float]:
        """Each TIME_SPLIT name's share of the lanes' total wall time."""
        total = self.wall_seconds * self.subpopulations
        return {name: (self.seconds(name) / total if total > 0 else 0.0) for name in TIME_SPLIT}

    def as_dict(self) -> dict:
        return dict(
            dataclasses.asdict(self),
            frames_per_second=self.frames_per_second,
            tail_seconds=self.tail_seconds,
            busy_frames_per_second=self.busy_frames_per_second,
            **{f"{name}_fraction": value for name, value in self.fractions().items()},
        )

    @classmethod
    def from_dict(cls, data: Mapping) -> Telemetry:
        """A Telemetry from dataclasses.asdict() output (as Ray actors send it)."""
        fields = {field.name: data[field.name] for field in dataclasses.fields(cls) if field.name in data}
        if "occupancy" in fields:
            fields["occupancy"] = tuple(fields["occupancy"])
        return cls(**fields)

    @classmethod
    def combine(
        cls,
        parts: Iterable[Telemetry],
        wall_seconds: float,
        subpopulations: int | None = None,
        bytes_shipped: int = 0,
        busy_seconds: float | None = None,
        occupancy: Sequence[float] = (),
    ) -> Telemetry:
        """One Telemetry for lanes that ran side by side for wall_seconds (default: one lane per part).

        busy_seconds and occupancy are the round's (measured by whoever ran the lanes); busy_seconds
        defaults to the shortest part's busy phase.
        """
        parts = list(parts)
        lanes = len(parts) if subpopulations is None else subpopulations
        if busy_seconds is None:
            busy_seconds = min((part.busy_seconds for part in parts), default=0.0)
        total = cls(
            wall_seconds=wall_seconds,
            subpopulations=lanes,
            busy_seconds=min(busy_seconds, wall_seconds),
            occupancy=tuple(float(value) for value in occupancy),
        )
        for part in parts:
            for name in CATEGORIES:
                setattr(total, f"{name}_seconds", total.seconds(name) + part.seconds(name))
            for name in _COUNTS:
                setattr(total, name, getattr(total, name) + getattr(part, name))
        total.bytes_shipped += bytes_shipped
        busy = sum(total.seconds(name) for name in CATEGORIES)
        total.idle_seconds = max(0.0, wall_seconds * lanes - busy)
        return total


def occupancy_profile(
    lanes: Sequence[tuple[Sequence[float], Sequence[int]]], start: float, end: float, capacity: int, bins: int = OCCUPANCY_BINS
) -> tuple[float, ...]:
    """The share of `capacity` in use over `bins` equal slices of [start, end].

    lanes: per lane, (times, counts): from times[i] on, counts[i] units ran (until times[i + 1], the last
    until `end`); before times[0] none did. Each slice gets its time-weighted mean over the lanes.
    """
    if end <= start or capacity <= 0:
        return ()
    edges = np.linspace(start, end, bins + 1)
    used = np.zeros(bins)
    for lane_times, lane_counts in lanes:
        times, counts = np.asarray(lane_times, np.float64), np.asarray(lane_counts, np.float64)
        if not times.size:
            continue
        points = np.append(np.clip(times, start, end), end)
        area = np.concatenate([[0.0], np.cumsum(counts * np.diff(points))])  # integral of the count up to each point
        used += np.diff(np.interp(edges, points, area, left=0.0, right=area[-1]))
    return tuple(np.round(used / (capacity * np.diff(edges)), 4).tolist())


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
        self._category: str | None = None

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
