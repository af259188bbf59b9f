"""RunMonitor: what a dashboard shows of a run, as plain data fed by the trainer's events (no widgets).

    monitor = RunMonitor(history=trainer.history)
    changed = monitor.apply(events)         # the parts that changed: {"fitness", "frame", "log", ...}
    monitor.fitness["max"], monitor.latest_frame, monitor.log

Kept apart from the widgets so that its logic is tested without a browser and
the trainer never depends on it.
"""

from __future__ import annotations

import collections
import datetime
import math
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from workbench.checks import check_choice, check_positive_int, check_type
from workbench.evolution.records import TIME_SPLIT, GenerationRecord

if TYPE_CHECKING:
    from workbench.training.events import Event

FITNESS_SERIES = ("max", "mean", "median", "elite")
# the search distribution of the adapted-Gaussian strategies (their records' extras: CMA-ES, sep-CMA-ES, SNES, CEM)
DISTRIBUTION_SERIES = ("step_size", "scale_min", "scale_max")
# a quality-diversity archive (MAP-Elites's records' extras)
ARCHIVE_SERIES = ("qd_score", "coverage", "archive_size")
X_AXES = ("generations", "frames")


def _finite_or_nan(value):
    return float(value) if isinstance(value, (int, float)) and math.isfinite(value) else math.nan


class RunMonitor:
    """Per-generation series, the newest gameplay frame, hyperparameter notices and a log, from events."""

    def __init__(self, history: Iterable[GenerationRecord] = (), log_lines: int = 200) -> None:
        self.generations: list[int] = []
        self.frames_total: list[int] = []
        self.fitness: dict[str, list[float]] = {name: [] for name in FITNESS_SERIES}
        self.frames_per_second: list[float] = []
        self.busy_frames_per_second: list[float] = []  # the rate while every slot runs (see evaluation.telemetry)
        self.tail_seconds: list[float] = []  # per generation: its rounds' tails (slots running dry)
        self.latest_rounds: Any = ()  # the newest generation's rounds (GenerationRecord.rounds): occupancy over time
        self.time_split: dict[str, list[float]] = {name: [] for name in TIME_SPLIT}
        self.distribution: dict[str, list[float]] = {name: [] for name in DISTRIBUTION_SERIES}  # NaN: not recorded
        self.archive: dict[str, list[float]] = {name: [] for name in ARCHIVE_SERIES}  # NaN: not recorded
        self.latest_frame: Any = None  # the newest "frame" event's FrameShown: frame (RGB), score, step, generation
        self.frames_received = 0
        self.state = "idle"
        self.hyperparameters: dict[str, Any] = {}  # the newest generation's hyperparameters
        self.notices: collections.deque[str] = collections.deque(maxlen=20)  # changes and checkpoints, newest last
        self._distribution_counts = dict(restarts=0, repairs=0)  # the newest record's, to log what a generation adds
        log_lines = check_positive_int("log_lines", log_lines)
        self.log: collections.deque[tuple[str, str, str]] = collections.deque(maxlen=log_lines)  # (time, level, text)
        if isinstance(history, (str, bytes)) or not isinstance(history, Iterable):
            raise TypeError(f"history must be GenerationRecords (read_history(run_dir)), got {type(history).__name__}")
        for index, record in enumerate(history):
            self._generation(check_type(f"history[{index}]", record, GenerationRecord, "a GenerationRecord"))

    def apply(self, events: Iterable[Event]) -> set[str]:
        """Takes events (trainer.events subscription items) in order; returns the set of parts that changed."""
        changed = set()
        for event in events:
            handler = getattr(self, f"_on_{event.kind}", None)
            if handler is not None:
                changed |= handler(event)
        return changed

    # -- per kind -------------------------------------------------------------------------
    def _on_generation(self, event):
        before = dict(self._distribution_counts)
        self._generation(event.data)
        logged = self._log_distribution_events(event.data, before, event.time)
        rejected = int(event.data.extras.get("rejected", 0) or 0)
        if rejected:
            self.add_log(
                "error",
                f"generation {event.data.generation}: {rejected} candidates left out of the archive (a non-finite return "
                "or descriptor)",
                event.time,
            )
            logged = True
        return {"fitness", "throughput", "hyperparameters"} | ({"log"} if logged else set())

    def _log_distribution_events(self, record: GenerationRecord, before: dict[str, int], when: float) -> bool:
        """Log lines for what a search distribution's record counts (restarts, repairs, non-finite returns) when
        the generation added to it; True when one was written."""
        extras, generation, logged = record.extras, record.generation, False
        restarts, repairs, nonfinite = (int(extras.get(name, 0)) for name in ("restarts", "repairs", "nonfinite"))
        if restarts > before["restarts"]:
            self.add_log(
                "info",
                f"generation {generation}: the search distribution restarted (restart {restarts}: its step size "
                "collapsed or exploded, its covariance became ill-conditioned, or the fitness stayed flat; IPOP doubles "
                "the population)",
                when,
            )
            logged = True
        if repairs > before["repairs"]:
            self.add_log(
                "info",
                f"generation {generation}: {repairs - before['repairs']} eigenvalues or scales were raised to their floor "
                "(the covariance lost positive definiteness to rounding)",
                when,
            )
            logged = True
        if nonfinite:
            self.add_log("error", f"generation {generation}: {nonfinite} members returned non-finite fitness (ranked last)", when)
            logged = True
        return logged

    def _on_frame(self, event):
        self.latest_frame = event.data
        self.frames_received += 1
        return {"frame"}

    def _on_hyperparameters(self, event):
        changes = ", ".join(
            f"{name} = {value:g}" if isinstance(value, float) else f"{name} = {value}"
            for name, value in event.data.changes.items()
        )
        self.notices.append(f"{changes} (applies at generation {event.data.applies_at_generation})")
        self.add_log("info", f"hyperparameters: {changes}", event.time)
        return {"notices", "log"}

    def _on_checkpoint(self, event):
        self.add_log("info", f"checkpoint after {event.data.generation} generations: {event.data.path}", event.time)
        return {"log"}

    def _on_error(self, event):
        self.add_log("error", f"training failed in generation {event.data.generation}: {event.data.error}", event.time)
        return {"log"}

    def _on_state(self, event):
        self.state = event.data.state
        return {"state"}

    # -- helpers --------------------------------------------------------------------------
    def _generation(self, record: GenerationRecord):
        self.generations.append(record.generation)
        self.frames_total.append(int(record.frames_total))
        for name in FITNESS_SERIES:
            self.fitness[name].append(_finite_or_nan(getattr(record, name)))
        self.frames_per_second.append(_finite_or_nan(record.frames_per_second))
        self.busy_frames_per_second.append(_finite_or_nan(record.busy_frames_per_second) or math.nan)
        self.tail_seconds.append(_finite_or_nan(record.tail_seconds))
        self.latest_rounds = record.rounds
        for name in TIME_SPLIT:
            self.time_split[name].append(_finite_or_nan(record.time_split.get(name)))
        for name in DISTRIBUTION_SERIES:
            self.distribution[name].append(_finite_or_nan(record.extras.get(name)))
        for name in ARCHIVE_SERIES:
            self.archive[name].append(_finite_or_nan(record.extras.get(name)))
        for name in self._distribution_counts:
            self._distribution_counts[name] = int(record.extras.get(name, self._distribution_counts[name]))
        self.hyperparameters = dict(record.hyperparameters)

    @property
    def has_distribution(self) -> bool:
        """Whether the records carry a search distribution's step size and scales (DISTRIBUTION_SERIES)."""
        return any(not math.isnan(value) for value in self.distribution["step_size"])

    @property
    def has_archive(self) -> bool:
        """Whether the records carry a quality-diversity archive's QD-score and coverage (ARCHIVE_SERIES)."""
        return any(not math.isnan(value) for value in self.archive["qd_score"])

    def add_log(self, level: str, text: str, when: float | None = None) -> None:
        """Appends a log line (level "info" or "error"); when: a time.time() value (default now)."""
        stamp = datetime.datetime.fromtimestamp(when) if when is not None else datetime.datetime.now()
        self.log.append((stamp.strftime("%H:%M:%S"), level, text))

    def x_values(self, axis: str) -> list[int]:
        """The x coordinates of the per-generation series: "generations" or "frames" (cumulative)."""
        check_choice("axis", axis, X_AXES)
        return list(self.generations) if axis == "generations" else list(self.frames_total)

    def summary(self) -> str:
        """One line about the newest generation (or the state when there is none yet)."""
        if not self.generations:
            return f"{self.state}: no generation finished yet"
        fps = self.frames_per_second[-1]
        best = max((v for v in self.fitness["max"] if not math.isnan(v)), default=math.nan)
        return (
            f"{self.state}: generation {self.generations[-1]}, {self.frames_total[-1]:,} frames, "
            f"{fps:,.0f} frames/s, best episode so far {best:g}"
        )
