"""Telemetry: where an evaluation's time went, and how many frames it produced.

Each sub-population times its own calls: emulation (environment steps,
observations, resets), inference (the model), weight loading (decoding genomes
and writing model slots); idle is the rest of its wall time (waiting for a CPU
or the GIL, Python bookkeeping, waiting for the last episodes of the others).
The seconds are summed over sub-populations, so with k sub-populations they
add up to k times the wall time; the *_fraction figures divide by that.
"""
import dataclasses
import time

CATEGORIES = ("emulation", "inference", "weight_loading")


@dataclasses.dataclass
class Telemetry:
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
    def frames_per_second(self):
        return self.frames / self.wall_seconds if self.wall_seconds > 0 else 0.0

    def fractions(self):
        """Each category's share of the sub-populations' total wall time."""
        total = self.wall_seconds * self.subpopulations
        names = CATEGORIES + ("idle",)
        return {name: (getattr(self, f"{name}_seconds") / total if total > 0 else 0.0) for name in names}

    def as_dict(self):
        return dict(dataclasses.asdict(self), frames_per_second=self.frames_per_second,
                    **{f"{name}_fraction": value for name, value in self.fractions().items()})

    @classmethod
    def combine(cls, parts, wall_seconds):
        """One Telemetry for sub-populations that ran side by side for wall_seconds."""
        total = cls(wall_seconds=wall_seconds, subpopulations=len(parts))
        for part in parts:
            for field in ("emulation_seconds", "inference_seconds", "weight_loading_seconds", "frames", "steps", "episodes"):
                setattr(total, field, getattr(total, field) + getattr(part, field))
        busy = total.emulation_seconds + total.inference_seconds + total.weight_loading_seconds
        total.idle_seconds = max(0.0, wall_seconds * len(parts) - busy)
        return total


class Stopwatch:
    """Accumulates seconds per category into a Telemetry: `with watch("inference"): ...`.

    With a `timeline` list, every timed call is also appended to it as (category, start, end)
    in time.perf_counter() seconds (for timeline plots of the pipeline).
    """

    def __init__(self, telemetry, timeline=None):
        self.telemetry, self.timeline = telemetry, timeline
        self._category = None

    def __call__(self, category):
        self._category = category
        return self

    def __enter__(self):
        self._start = time.perf_counter()

    def __exit__(self, *exc):
        end = time.perf_counter()
        name = f"{self._category}_seconds"
        setattr(self.telemetry, name, getattr(self.telemetry, name) + end - self._start)
        if self.timeline is not None:
            self.timeline.append((self._category, self._start, end))
