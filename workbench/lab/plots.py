"""The dashboard's and the agent viewer's plots: matplotlib figures updated in place, rendered to PNG.

Each plot keeps its figure and artists; update() changes their data (set_data)
and rescales, render() draws once and returns PNG bytes. Nothing is redrawn
from scratch, and no pyplot state is touched.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from matplotlib.patches import Patch
from matplotlib.ticker import AutoLocator, MaxNLocator

from workbench.checks import check_optional_positive_int, check_type
from workbench.lab.pictures import figure_png, new_figure
from workbench.lab.run_monitor import DISTRIBUTION_SERIES, FITNESS_SERIES, TIME_SPLIT

SERIES_STYLE = {  # every series has markers: a single generation is a point, not an invisible line
    "max": dict(color="tab:green", lw=1.2, marker="^", ms=3),
    "mean": dict(color="tab:blue", lw=1.6, marker="s", ms=3),
    "median": dict(color="tab:cyan", lw=1.0, ls="--", marker=".", ms=4),
    "elite": dict(color="tab:red", lw=1.6, marker="o", ms=3),
}
SPLIT_COLOURS = {
    "emulation": "tab:orange",
    "inference": "tab:purple",
    "weight_loading": "tab:gray",
    "fused_steps": "tab:brown",
    "idle": "#dddddd",
}
SERIES_LABELS = {"elite": "elite (re-evaluated)"}

if TYPE_CHECKING:
    from workbench.lab.run_monitor import RunMonitor


class FitnessPlot:
    """Max, mean, median and the elite's re-evaluated score per generation, against generations or frames."""

    def __init__(self, width: float = 6.4, height: float = 3.2) -> None:
        self.figure = new_figure(width, height)
        self.axes = self.figure.add_subplot()
        self.lines = {
            name: self.axes.plot([], [], label=SERIES_LABELS.get(name, name), **SERIES_STYLE[name])[0] for name in FITNESS_SERIES
        }
        self.axes.set_ylabel("episode return")
        self.axes.grid(alpha=0.3)
        self.axes.legend(loc="upper left", fontsize=8)
        self.axis = "generations"
        self.axes.set_xlabel("generation")

    def update(self, monitor: RunMonitor, axis: str = "generations") -> None:
        self.axis = axis
        x = monitor.x_values(axis)
        for name, line in self.lines.items():
            line.set_data(x, monitor.fitness[name])
        self.axes.set_xlabel("generation" if axis == "generations" else "frames")
        self.axes.xaxis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1) if axis == "generations" else AutoLocator())
        self.axes.relim()
        self.axes.autoscale_view()
        if x and axis == "generations":  # half a generation either side: one generation gets a unit-wide axis
            self.axes.set_xlim(min(x) - 0.5, max(x) + 0.5)

    def data(self, name: str) -> tuple[list, list]:
        """The (x, y) a series shows now (for tests)."""
        line = self.lines[name]
        return list(line.get_xdata()), list(line.get_ydata())

    def render(self) -> bytes:
        return figure_png(self.figure)

    def save(self, path: str) -> str:
        """Writes the figure as it is now to `path` (PNG); returns the path."""
        with open(path, "wb") as f:
            f.write(self.render())
        return path


DISTRIBUTION_STYLE = {
    "step_size": dict(color="tab:red", lw=1.6, marker="o", ms=3, label="step size σ"),
    "scale_max": dict(color="tab:blue", lw=1.0, marker="^", ms=3, label="largest per-parameter σ"),
    "scale_min": dict(color="tab:cyan", lw=1.0, marker="v", ms=3, label="smallest per-parameter σ"),
}


class DistributionPlot:
    """The search distribution of the adapted-Gaussian strategies, on log scales: per generation the step size and
    the spread of the per-parameter standard deviations (their smallest and largest; left), and the newest
    generation's standard deviations along its principal axes, largest first (the covariance spectrum's square
    roots; right, where the strategy gives them: Trainer.distribution_axes)."""

    AXES_POINTS = 400  # the principal axes drawn (evenly spaced ranks of a longer spectrum)

    def __init__(self, width: float = 6.4, height: float = 2.6) -> None:
        self.figure = new_figure(width, height)
        self.axes, self.spectrum = self.figure.subplots(1, 2, width_ratios=(2, 1))
        self.lines = {name: self.axes.plot([], [], **DISTRIBUTION_STYLE[name])[0] for name in DISTRIBUTION_SERIES}
        self.axes.set_yscale("log")
        self.axes.set_xlabel("generation")
        self.axes.set_ylabel("standard deviation")
        self.axes.xaxis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))
        self.axes.grid(alpha=0.3)
        self.axes.legend(loc="upper right", fontsize=8)
        (self.spectrum_line,) = self.spectrum.plot([], [], color="tab:purple", lw=1.4)
        self.spectrum.set_yscale("log")
        self.spectrum.set_xlabel("principal axis (share, largest first)", fontsize=8)
        self.spectrum.set_title("newest generation", fontsize=8)
        self.spectrum.grid(alpha=0.3)

    def update(self, monitor: RunMonitor, axes: np.ndarray | None = None) -> None:
        x = monitor.generations
        for name, line in self.lines.items():
            line.set_data(x, monitor.distribution[name])
        self.axes.relim()
        self.axes.autoscale_view()
        if x:
            self.axes.set_xlim(min(x) - 0.5, max(x) + 0.5)
        self.spectrum.set_visible(axes is not None)
        if axes is not None and len(axes):
            ranks = np.unique(np.linspace(0, len(axes) - 1, min(len(axes), self.AXES_POINTS)).round().astype(int))
            self.spectrum_line.set_data(ranks / max(1, len(axes) - 1), np.asarray(axes)[ranks])
            self.spectrum.set_title(f"{len(axes):,} axes, ratio {axes[0] / axes[-1]:.3g}", fontsize=8)
            self.spectrum.relim()
            self.spectrum.autoscale_view()

    def data(self, name: str) -> tuple[list, list]:
        """The (x, y) a series shows now (for tests; "axes": the principal axes' plot)."""
        line = self.spectrum_line if name == "axes" else self.lines[name]
        return list(line.get_xdata()), list(line.get_ydata())

    def render(self) -> bytes:
        return figure_png(self.figure)


class ArchivePlot:
    """A quality-diversity archive per generation: its QD-score (left axis) and coverage, the share of cells
    holding an elite (right axis, per cent)."""

    def __init__(self, width: float = 6.4, height: float = 2.6) -> None:
        self.figure = new_figure(width, height)
        self.axes = self.figure.subplots()
        self.coverage_axes = self.axes.twinx()
        (self.qd_line,) = self.axes.plot([], [], color="tab:green", lw=1.6, label="QD-score")
        (self.coverage_line,) = self.coverage_axes.plot([], [], color="tab:blue", lw=1.2, ls="--", label="coverage")
        self.axes.set_xlabel("generation")
        self.axes.set_ylabel("QD-score", color="tab:green")
        self.coverage_axes.set_ylabel("coverage (%)", color="tab:blue")
        self.coverage_axes.set_ylim(0, 100)
        self.axes.xaxis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))
        self.axes.grid(alpha=0.3)

    def update(self, monitor: RunMonitor) -> None:
        x = monitor.generations
        self.qd_line.set_data(x, monitor.archive["qd_score"])
        self.coverage_line.set_data(x, [100 * value for value in monitor.archive["coverage"]])
        self.axes.relim()
        self.axes.autoscale_view()
        if x:
            self.axes.set_xlim(min(x) - 0.5, max(x) + 0.5)

    def data(self, name: str) -> tuple[list, list]:
        """The (x, y) a series shows now ("qd_score", or "coverage" in per cent; for tests)."""
        line = self.qd_line if name == "qd_score" else self.coverage_line
        return list(line.get_xdata()), list(line.get_ydata())

    def render(self) -> bytes:
        return figure_png(self.figure)


class ThroughputPlot:
    """Frames per second per generation, overall and in the busy phases (top); where the evaluator's time went
    (stacked shares, middle); the share of episode slots running over the newest generation's rounds (bottom:
    each round's busy phase at the top, then its tail as slots run dry)."""

    def __init__(self, width: float = 6.4, height: float = 4.4) -> None:
        self.figure = new_figure(width, height)
        self.speed, self.split, self.slots = self.figure.subplots(3, 1, height_ratios=(1, 1.2, 0.9))
        (self.speed_line,) = self.speed.plot([], [], color="black", lw=1.4, label="generation")
        (self.busy_line,) = self.speed.plot([], [], color="tab:gray", lw=1.0, ls="--", label="busy phase")
        self.speed.set_ylabel("frames/s")
        self.speed.grid(alpha=0.3)
        self.speed.legend(loc="lower left", fontsize=7, ncol=2)
        self.speed.xaxis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))
        self.split.set_ylabel("time share")
        self.split.set_xlabel("generation")
        self.split.set_ylim(0, 1)
        self.split.xaxis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))
        (self.slots_line,) = self.slots.plot([], [], color="tab:green", lw=1.2, drawstyle="steps-post")
        self.slots.set_ylabel("slots running")
        self.slots.set_xlabel("seconds into the newest generation")
        self.slots.set_ylim(0, 1.05)
        self.slots.grid(alpha=0.3)
        self._bands: _Group | None = None
        self._round_marks: list[Any] = []

    def update(self, monitor: RunMonitor) -> None:
        x = monitor.generations
        self.speed_line.set_data(x, monitor.frames_per_second)
        self.busy_line.set_data(x, monitor.busy_frames_per_second)
        self.speed.relim()
        self.speed.autoscale_view()
        if self._bands is not None:
            self._bands.remove()  # a stacked area has no set_data; its one artist is replaced
            self._bands = None
        if x:
            shares = [np.nan_to_num(monitor.time_split[name]) for name in TIME_SPLIT]
            self._bands = _Group(
                self.split.stackplot(
                    x, *shares, colors=[SPLIT_COLOURS[n] for n in TIME_SPLIT], labels=[n.replace("_", " ") for n in TIME_SPLIT]
                )
            )
            if self.split.get_legend() is None:
                self.split.legend(loc="lower left", fontsize=7, ncol=4)
            self.split.set_xlim(min(x) - 0.5, max(x) + 0.5)
            self.speed.set_xlim(min(x) - 0.5, max(x) + 0.5)
        self._update_slots(monitor.latest_rounds)

    def _update_slots(self, rounds):
        for mark in self._round_marks:
            mark.remove()
        self._round_marks = []
        times, shares, start = [], [], 0.0
        for index, round_ in enumerate(rounds):
            occupancy = list(round_["occupancy"])
            if occupancy:
                edges = start + np.linspace(0.0, round_["seconds"], len(occupancy) + 1)
                times += list(edges[:-1]) + [edges[-1]]
                shares += occupancy + [occupancy[-1]]
            if index:
                self._round_marks.append(self.slots.axvline(start, color="tab:gray", lw=0.8, ls=":"))
            start += round_["seconds"]
        self.slots_line.set_data(times, shares)
        if times:
            self.slots.set_xlim(0.0, max(times[-1], 1e-3))

    def render(self) -> bytes:
        return figure_png(self.figure)


class _Group:
    def __init__(self, artists):
        self.artists = artists

    def remove(self):
        for artist in self.artists:
            artist.remove()


class EpisodePlot:
    """Series over an episode's steps with a cursor at the frame shown: the running score by default, or
    named per-step series (MuJoCo's x_velocity and reward components)."""

    def __init__(
        self,
        rewards: np.ndarray | None = None,
        width: float = 4.0,
        height: float = 2.0,
        title: str | None = None,
        series: dict | None = None,
    ) -> None:
        self.figure = new_figure(width, height)
        self.axes = self.figure.add_subplot()
        if series is None:
            score = np.concatenate([[0.0], np.cumsum(np.asarray(rewards, np.float64))])
            self.axes.plot(np.arange(score.size), score, color="tab:blue", lw=1.4)
            self.axes.set_ylabel("score")
            steps = score.size
        else:
            steps = 1
            for name, values in series.items():  # value k belongs to step k + 1 (after the k-th action)
                values = np.asarray(values, np.float64)
                self.axes.plot(np.arange(1, values.size + 1), values, lw=1.1, label=name.replace("_", " "))
                steps = max(steps, values.size + 1)
            if series:
                self.axes.legend(fontsize=6, loc="upper left", ncol=2)
        self.cursor = self.axes.axvline(0, color="tab:red", lw=1)
        self.axes.set_xlabel("step")
        self.axes.grid(alpha=0.3)
        if title:
            self.axes.set_title(title, fontsize=9)
        self.axes.set_xlim(0, max(steps - 1, 1))

    def show_step(self, step: int) -> None:
        self.cursor.set_xdata([step, step])

    def render(self) -> bytes:
        return figure_png(self.figure)


def action_map(actions: np.ndarray, width: float = 4.0, height: float = 2.0, title: str | None = None) -> bytes:
    """PNG of continuous actions [T, d] over the steps: one row per action dimension, colour = value."""
    actions = np.asarray(actions, np.float64).reshape(len(actions), -1)
    figure = new_figure(width, height)
    axes = figure.add_subplot()
    if actions.size:
        image = axes.imshow(actions.T, aspect="auto", cmap="coolwarm", interpolation="nearest")
        figure.colorbar(image, ax=axes, fraction=0.05)
    axes.set_xlabel("step")
    axes.set_ylabel("action dimension")
    if title:
        axes.set_title(title, fontsize=9)
    return figure_png(figure)


def action_histogram(
    actions: np.ndarray, meanings: Sequence[str] | None = None, width: float = 4.0, height: float = 2.0, title: str | None = None
) -> bytes:
    """PNG of how often the agent chose each action (named by the game's action meanings)."""
    actions = np.asarray(actions, np.int64)
    count = len(meanings) if meanings else (int(actions.max()) + 1 if actions.size else 1)
    counts = np.bincount(actions, minlength=count)[:count] if actions.size else np.zeros(count, np.int64)
    figure = new_figure(width, height)
    axes = figure.add_subplot()
    names = list(meanings) if meanings else [str(a) for a in range(count)]
    axes.bar(range(count), counts / max(1, counts.sum()), color="tab:purple")
    axes.set_xticks(range(count), names, rotation=90 if count > 6 else 0, fontsize=7)
    axes.set_ylabel("share of steps")
    if title:
        axes.set_title(title, fontsize=9)
    return figure_png(figure)


def returns_histogram(returns: Sequence[float], width: float = 4.0, height: float = 2.0, title: str | None = None) -> bytes:
    """PNG of the distribution of test-episode returns, with their mean marked."""
    values = np.asarray(returns, np.float64)
    figure = new_figure(width, height)
    axes = figure.add_subplot()
    bins = min(20, max(1, len(np.unique(values))))
    axes.hist(values, bins=bins, color="tab:green")
    if values.size:
        axes.axvline(values.mean(), color="black", linestyle="--", linewidth=1, label=f"mean {values.mean():g}")
        axes.legend(fontsize=7)
    axes.set_xlabel("episode return")
    axes.set_ylabel("episodes")
    if title:
        axes.set_title(title, fontsize=9)
    return figure_png(figure)


def trap_positions_figure(positions: dict[str, Sequence[Sequence[float]]], width: float = 6.0, height: float = 4.0) -> Any:
    """A matplotlib Figure of where episodes ended in the humanoid trap: the U's walls, the start and each
    label's final torso positions [(x, y), ...] (Score.final_positions), with how many ended in each region."""
    from workbench.envs.mujoco import humanoid_trap as trap

    check_type("positions", positions, Mapping, "a dict of label -> [(x, y), ...]")
    points_of = {}
    for label, given in positions.items():
        try:
            points = np.asarray(given, np.float64)
            points = points.reshape(0, 2) if points.size == 0 else points  # a label with no episodes
        except (TypeError, ValueError):
            points = None
        if points is None or points.ndim != 2 or points.shape[1] != 2 or not np.all(np.isfinite(points)):
            raise ValueError(f"positions[{label!r}] must be finite (x, y) pairs [(x, y), ...], got {given!r}"[:300])
        points_of[str(label)] = points
    figure = new_figure(width, height)
    axes = figure.add_subplot()
    walls = [
        ((trap.BACK_X, trap.BACK_X), (-trap.HALF_WIDTH, trap.HALF_WIDTH)),
        ((trap.MOUTH_X, trap.BACK_X), (trap.HALF_WIDTH, trap.HALF_WIDTH)),
        ((trap.MOUTH_X, trap.BACK_X), (-trap.HALF_WIDTH, -trap.HALF_WIDTH)),
    ]
    for xs, ys in walls:
        axes.plot(xs, ys, color="saddlebrown", lw=4)
    for label, points in points_of.items():
        regions = [trap.trap_region(x, y) for x, y in points]
        counts = ", ".join(f"{regions.count(region)} {region}" for region in trap.REGIONS if region in regions)
        axes.scatter(points[:, 0], points[:, 1], s=12, alpha=0.7, label=f"{label}: {counts}")
    axes.scatter([0], [0], marker="x", color="black", label="origin (where episodes begin)")
    axes.set_xlabel("final x (m)")
    axes.set_ylabel("final y (m)")
    axes.set_aspect("equal", adjustable="datalim")
    axes.grid(alpha=0.3)
    axes.legend(fontsize=7, loc="best")
    return figure


def checked_timeline(timeline: Any) -> list[tuple[int, str, float, float]]:
    """The entries of an evaluator timeline, each checked: (sub-population >= 0, category, start <= end), else a
    TypeError or ValueError naming `timeline` and the entry."""
    if isinstance(timeline, (str, bytes)) or not isinstance(timeline, Sequence):
        raise TypeError(f"timeline must be a sequence of (sub-population, category, start, end), got {type(timeline).__name__}")
    entries = []
    for index, entry in enumerate(timeline):
        try:
            k, category, start, end = entry
            ok = isinstance(k, (int, np.integer)) and not isinstance(k, bool) and k >= 0 and isinstance(category, str)
            start, end = float(start), float(end)
            ok = ok and np.isfinite(start) and np.isfinite(end) and start <= end
        except (TypeError, ValueError):
            ok = False
        if not ok:
            raise ValueError(
                f"timeline[{index}] must be (sub-population >= 0, category, start, end) with start <= end, got {entry!r}"
            )
        entries.append((int(k), category, start, end))
    return entries


def timeline_figure(
    timeline: Sequence[tuple],
    lanes: int | None = None,
    width: float = 8.0,
    height: float = 2.4,
    window: tuple[float, float] | None = None,
) -> Any:
    """A matplotlib Figure of an evaluator timeline: one row per sub-population, coloured by category.

    timeline: [(sub-population, category, start, end)] as Evaluator.timeline records it;
    window: (start, end) in seconds to show (default: all).
    """
    timeline = checked_timeline(timeline)
    lanes = check_optional_positive_int("lanes", lanes)
    if window is not None:
        try:
            window = (float(window[0]), float(window[1])) if len(window) == 2 else None
        except (TypeError, ValueError):
            window = None
        if window is None or not (np.isfinite(window).all() and window[0] < window[1]):
            raise ValueError("window must be (start, end) in seconds with start < end, or None")
    figure = new_figure(width, height)
    axes = figure.add_subplot()
    lanes = lanes if lanes is not None else (max((k for k, *_ in timeline), default=0) + 1)
    for k, category, start, end in timeline:
        if window is not None and (end < window[0] or start > window[1]):
            continue
        axes.broken_barh([(start, end - start)], (k - 0.4, 0.8), color=SPLIT_COLOURS.get(category, "black"))
    axes.set_yticks(range(lanes), [f"sub-population {k}" for k in range(lanes)])
    axes.set_xlabel("seconds from the evaluation's start")
    if window is not None:
        axes.set_xlim(*window)
    handles = [Patch(color=SPLIT_COLOURS[c], label=c.replace("_", " ")) for c in TIME_SPLIT if c != "idle"]
    axes.legend(handles=handles, loc="upper right", fontsize=7, ncol=len(handles))
    return figure
