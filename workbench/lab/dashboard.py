"""TrainingDashboard: a live JupyterLab view and control panel of a Trainer, built from its event stream.

    trainer = Trainer.from_config(RunConfig(env="frostbite", algorithm="ga"), run_dir="runs/quickstart")
    dashboard = TrainingDashboard(trainer, generations=30)
    dashboard            # shows it; then press Start (or dashboard.start())

It shows fitness curves (max, mean, median, re-evaluated elite; x axis in
generations or frames), gameplay of a running episode, throughput (frames/s and
where the evaluator's time went), hyperparameter controls applied live (rejected
values shown with the reason), buttons (start, pause, resume, stop, checkpoint
now, watch elite) and a log of the trainer's errors and of the dashboard's own.

The trainer knows nothing of it: the dashboard subscribes to trainer.events and a
daemon thread of its own drains them and updates the widgets in place, plots at
most every `plot_interval` seconds and frames every `frame_interval` seconds, so
the kernel stays free while training runs in the background.
"""

from __future__ import annotations

import math
import threading
import time
import traceback
from html import escape
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets

from workbench.checks import check_choice, check_int, check_real, check_type
from workbench.lab.controls import HyperparameterPanel, knobs_for
from workbench.lab.pictures import png
from workbench.lab.plots import ArchivePlot, DistributionPlot, FitnessPlot, ThroughputPlot, returns_histogram
from workbench.lab.run_monitor import X_AXES, RunMonitor

if TYPE_CHECKING:
    from workbench.training import Trainer


class TrainingDashboard:
    """The widgets of one trainer; see the module docstring. Display it as the last expression of a cell."""

    def __init__(
        self,
        trainer: Trainer,
        *,
        generations: int | None = None,
        frames: int | None = None,
        seconds: float | None = None,
        plot_interval: float = 0.5,
        frame_interval: float = 0.1,
        x_axis: str = "generations",
        frame_scale: int = 2,
    ) -> None:
        from workbench.training import Trainer

        check_type("trainer", trainer, Trainer, "a workbench.training.Trainer")
        check_real("plot_interval", plot_interval, 0, 60, low_open=True)
        check_real("frame_interval", frame_interval, 0, 60, low_open=True)
        check_choice("x_axis", x_axis, X_AXES)
        check_int("frame_scale", frame_scale, 1, 8)
        trainer.check_budget(generations, frames, seconds)  # validates the budget now, not at Start
        self.trainer = trainer
        self.budget: dict[str, Any] = dict(generations=generations, frames=frames, seconds=seconds)
        self.plot_interval, self.frame_interval, self.frame_scale = plot_interval, frame_interval, frame_scale
        self.monitor = RunMonitor(history=trainer.history)
        self.monitor.state = "running" if trainer.running else "idle"
        self.fitness_plot, self.throughput_plot = FitnessPlot(), ThroughputPlot()
        self.distribution_plot = DistributionPlot()  # shown for the strategies whose records carry a distribution
        self.archive_plot = ArchivePlot()  # shown for the strategies whose records carry an archive (MAP-Elites)
        self.elite_viewer = None
        self.score = None  # the newest Score of score_elite()
        self._subscription = trainer.events.subscribe(maxsize=5000)
        self._lock = threading.RLock()  # one updater at a time: the thread, or update_now() from a test
        self._dirty = {"fitness", "throughput", "log", "state", "notices"}
        self._last_plot = self._last_frame = 0.0
        self._closed = threading.Event()
        self._build()
        self.update_now()
        self._thread = threading.Thread(target=self._update_loop, name="workbench-dashboard", daemon=True)
        self._thread.start()

    # -- layout ---------------------------------------------------------------------------
    def _build(self):
        self.fitness_image = widgets.Image(format="png", layout=widgets.Layout(width="600px"))
        self.fitness_image.add_class("wb-fitness-plot")
        self.axis_toggle = widgets.ToggleButtons(
            options=[("generations", "generations"), ("frames", "frames")],
            value="generations",
            description="x axis",
            style={"button_width": "110px"},
        )
        self.axis_toggle.observe(self._guard(lambda change: self._mark("fitness")), names="value")
        self.frame_image = widgets.Image(format="png", layout=widgets.Layout(width=f"{160 * self.frame_scale}px"))
        self.frame_image.add_class("wb-frame-viewer")
        self.frame_caption = widgets.HTML("no gameplay yet")
        self.distribution_image = widgets.Image(format="png", layout=widgets.Layout(width="600px"))
        self.distribution_image.add_class("wb-distribution-plot")
        self.distribution_box = widgets.VBox(
            [widgets.HTML("<b>Search distribution</b> (step size, per-parameter σ, principal axes)"), self.distribution_image],
            layout=widgets.Layout(display="none"),  # shown once a generation records a distribution
        )
        self.archive_image = widgets.Image(format="png", layout=widgets.Layout(width="600px"))
        self.archive_image.add_class("wb-archive-plot")
        self.archive_view = None  # the live archive (workbench.lab.archive_view) of a quality-diversity run
        archive_parts = [widgets.HTML("<b>Archive</b> (QD-score and coverage)"), self.archive_image]
        if getattr(self.trainer.strategy, "archive", None) is not None:
            from workbench.lab.archive_view import ArchiveView

            self.archive_view = ArchiveView(self.trainer)
            archive_parts += [
                widgets.HTML("<b>Archive cells</b> (fitness; hover to read a cell, click to replay its elite)"),
                self.archive_view.widget,
            ]
        self.archive_box = widgets.VBox(archive_parts, layout=widgets.Layout(display="none"))  # shown once one is recorded
        self.throughput_image = widgets.Image(format="png", layout=widgets.Layout(width="540px"))
        self.throughput_image.add_class("wb-throughput-plot")
        self.throughput_label = widgets.HTML(layout=widgets.Layout(max_width="540px"))
        self.status = widgets.HTML()
        self.status.add_class("wb-status")
        self.log_view = widgets.HTML(
            layout=widgets.Layout(max_height="160px", overflow="auto", border="1px solid #ddd", padding="2px 6px")
        )
        self.log_view.add_class("wb-log")
        self.notices = widgets.HTML()
        self.buttons = {}
        for name, icon, action in (
            ("start", "play", self.start),
            ("pause", "pause", self.trainer.pause),
            ("resume", "step-forward", self.trainer.resume),
            ("stop", "stop", self.stop),
            ("checkpoint now", "save", self._checkpoint),
            ("watch elite", "eye", self.watch_elite),
            ("score elite", "trophy", self.score_elite),
        ):
            button = widgets.Button(description=name, icon=icon, layout=widgets.Layout(width="150px"))
            button.add_class(f"wb-button-{name.replace(' ', '-')}")
            button.on_click(self._guard(lambda _, action=action: action()))
            self.buttons[name] = button
        snapshot = self.trainer.snapshot()
        self.controls = HyperparameterPanel(
            dict(snapshot.hyperparameters, **snapshot.pending),
            self._apply,
            knobs_for(
                type(self.trainer.strategy.config), snapshot.hyperparameters, self.trainer.evaluator.spec.max_episode_frames
            ),
            on_error=lambda text: self._log("error", text),
        )
        self.elite_area = widgets.VBox()
        self.score_episodes = widgets.BoundedIntText(
            value=30,
            min=1,
            max=1000,
            description="test episodes",
            style={"description_width": "initial"},
            layout=widgets.Layout(width="180px"),
        )
        self.score_view = widgets.HTML("score the current elite on fresh test episodes (deep-ga protocol)")
        self.score_view.add_class("wb-score")
        self.score_image = widgets.Image(format="png", layout=widgets.Layout(width="400px"))
        gameplay = widgets.VBox([widgets.HTML("<b>Gameplay</b> (a running episode)"), self.frame_image, self.frame_caption])
        if not self.trainer.evaluator.spec.family.environments:  # a function problem: no episodes to show or replay
            gameplay.layout.display = "none"
            self.buttons["watch elite"].disabled = True
            self.buttons["watch elite"].tooltip = f"{self.trainer.evaluator.spec.env} has no environment to replay"
        fitness = widgets.VBox(
            [widgets.HTML("<b>Fitness</b>"), self.axis_toggle, self.fitness_image, self.distribution_box, self.archive_box]
        )
        throughput = widgets.VBox([widgets.HTML("<b>Throughput</b>"), self.throughput_label, self.throughput_image])
        hyperparameters = widgets.VBox(
            [widgets.HTML("<b>Hyperparameters</b> (applied from the next generation)"), self.controls.widget, self.notices]
        )
        self.widget = widgets.VBox(
            [
                self.status,
                widgets.HBox(list(self.buttons.values())),
                widgets.HBox([fitness, gameplay]),
                widgets.HBox([throughput, hyperparameters]),
                widgets.HTML("<b>Log</b>"),
                self.log_view,
                widgets.HBox([self.score_episodes, self.score_view]),
                self.score_image,
                self.elite_area,
            ]
        )
        self.widget.add_class("wb-dashboard")

    def _repr_mimebundle_(self, **kwargs):
        return self.widget._repr_mimebundle_(**kwargs)

    # -- actions --------------------------------------------------------------------------
    def start(self, generations: int | None = None, frames: int | None = None, seconds: float | None = None) -> None:
        """Starts training in the background with the given budget (default: the dashboard's)."""
        given: dict[str, Any] = dict(generations=generations, frames=frames, seconds=seconds)
        budget = given if any(v is not None for v in given.values()) else self.budget
        self.trainer.start(**budget)

    def stop(self) -> None:
        self.trainer.stop()

    def _checkpoint(self):
        if self.trainer.run_dir is None:
            raise ValueError("this trainer has no run_dir, so it cannot write checkpoints")
        self.trainer.checkpoint()

    def watch_elite(self, seed: int = 0, wait: bool = False) -> threading.Thread:
        """Replays the current elite for one episode (in a thread) and shows it in an AgentViewer below."""
        from workbench.lab.agent_viewer import AgentViewer

        trainer = self.trainer
        snapshot = trainer.snapshot()
        elite, bases, generation = snapshot.elite, snapshot.bases, snapshot.generation
        if elite is None:
            raise ValueError("there is no elite yet: wait for the first generation to finish")
        self._log("info", f"replaying the elite of generation {generation} ...")

        def replay():
            viewer = AgentViewer.from_genome(
                elite, trainer.evaluator, bases=bases, seed=seed, title=f"elite of generation {generation}"
            )
            self.elite_viewer = viewer
            self.elite_area.children = [viewer.widget]
            self._log(
                "info", f"elite of generation {generation}: score {viewer.episode.score:g} in {len(viewer.episode.actions)} steps"
            )

        return self._in_background("watch elite", replay, wait)

    def score_elite(self, episodes: int | None = None, wait: bool = False) -> threading.Thread:
        """Scores the current elite on fresh test episodes in a thread (Trainer.evaluate_elite); shows
        mean ± std and the histogram of the returns. episodes: default the "test episodes" box."""
        episodes = self.score_episodes.value if episodes is None else episodes
        check_int("episodes", episodes, 1)
        trainer = self.trainer
        if trainer.snapshot().elite is None:
            raise ValueError("there is no elite yet: wait for the first generation to finish")
        self.score_view.value = f"scoring the elite on {episodes} test episodes ..."

        def progress(done, total):
            self.score_view.value = f"scoring the elite: {done} / {total} test episodes"

        def score():
            result = trainer.evaluate_elite(episodes=episodes, progress=progress)
            self.score = result
            title = f"elite of generation {result.generation}: {result.mean:.1f} ± {result.std:.1f}"
            self.score_image.value = returns_histogram(result.returns, title=title)
            self.score_view.value = f"<b>{escape(result.summary())}</b>"
            self._log("info", f"elite of generation {result.generation} scored {result.summary()}")

        def failed(error):
            self.score_view.value = f'<span style="color:#b00020">scoring failed: {escape(str(error))}</span>'

        return self._in_background("score elite", score, wait, failed)

    def _in_background(self, name, work, wait, on_error=None):
        """Runs work() in a daemon thread; an exception goes to the log (and on_error), never lost in the thread."""

        def run():
            try:
                work()
            except Exception as error:  # noqa: BLE001 - shown in the log, not lost in a thread
                if on_error is not None:
                    on_error(error)
                self._log("error", f"{name} failed: {error!r}")

        thread = threading.Thread(target=run, name=f"workbench-{name.replace(' ', '-')}", daemon=True)
        thread.start()
        if wait:
            thread.join()
        return thread

    def _apply(self, **changes):
        self.trainer.set(**changes)

    def _current_values(self, values):
        """The controls' values: the applied ones with the accepted-but-pending changes on top."""
        return dict(values, **self.trainer.pending())

    # -- errors ---------------------------------------------------------------------------
    def _guard(self, callback):
        """The callback, with any exception shown in the log instead of vanishing."""

        def guarded(*args):
            try:
                callback(*args)
            except Exception as error:  # noqa: BLE001 - widget callbacks have nowhere else to report
                self._log("error", f"{type(error).__name__}: {error}")

        return guarded

    def _log(self, level, text):
        with self._lock:
            self.monitor.add_log(level, text)
            self._dirty.add("log")
        if level == "error":
            self._render_log()  # errors show at once, also when the updater is busy

    def _mark(self, part):
        with self._lock:
            self._dirty.add(part)
            self._last_plot = 0.0

    # -- updates --------------------------------------------------------------------------
    def _update_loop(self):
        while not self._closed.wait(min(self.frame_interval, self.plot_interval) / 2):
            try:
                self.update_now(throttle=True)
            except Exception:  # noqa: BLE001 - keep updating; show what broke
                self._log("error", "dashboard update failed: " + traceback.format_exc(limit=3))

    def update_now(self, throttle: bool = False) -> None:
        """Takes the waiting events and updates the widgets (throttle=False: regardless of the intervals)."""
        with self._lock:
            self._dirty |= self.monitor.apply(self._subscription.drain())
            now = time.monotonic()
            if "frame" in self._dirty and (not throttle or now - self._last_frame >= self.frame_interval):
                self._last_frame = now
                self._dirty.discard("frame")
                self._render_frame()
            if not throttle or now - self._last_plot >= self.plot_interval:
                self._last_plot = now
                dirty, self._dirty = self._dirty - {"frame"}, self._dirty & {"frame"}
                self._render(dirty)

    def _render(self, dirty):
        monitor = self.monitor
        if "fitness" in dirty:
            self.fitness_plot.update(monitor, self.axis_toggle.value)
            self.fitness_image.value = self.fitness_plot.render()
            if monitor.has_distribution:
                self.distribution_plot.update(monitor, self.trainer.distribution_axes())
                self.distribution_image.value = self.distribution_plot.render()
                self.distribution_box.layout.display = None
            if monitor.has_archive:
                self.archive_plot.update(monitor)
                self.archive_image.value = self.archive_plot.render()
                if self.archive_view is not None:
                    self.archive_view.update()
                self.archive_box.layout.display = None
        if "throughput" in dirty:
            self.throughput_plot.update(monitor)
            self.throughput_image.value = self.throughput_plot.render()
            if monitor.generations:
                shares = ", ".join(f"{name.replace('_', ' ')} {monitor.time_split[name][-1]:.0%}" for name in monitor.time_split)
                self.throughput_label.value = (
                    f"{monitor.frames_per_second[-1]:,.0f} frames/s in generation "
                    f"{monitor.generations[-1]} ({shares}); {_phases(monitor)}"
                )
        if "hyperparameters" in dirty and monitor.hyperparameters:
            self.controls.refresh(self._current_values(monitor.hyperparameters))
        if "notices" in dirty:
            self.notices.value = "<br>".join(escape(text) for text in list(monitor.notices)[-3:])
        if dirty & {"state", "fitness"}:
            self.status.value = f"<b>{escape(monitor.summary())}</b>"
            self._enable_buttons()
        if "log" in dirty:
            self._render_log()

    def _render_frame(self):
        data = self.monitor.latest_frame
        if data is None:
            return
        scale = self.frame_scale if data.frame.shape[1] <= 200 else 1  # Atari's 160 px enlarged, MuJoCo's as rendered
        with self.frame_image.hold_sync():
            self.frame_image.layout.width = f"{data.frame.shape[1] * scale}px"
            self.frame_image.value = png(data.frame, scale)
        caption = (
            f"generation {data.generation}, member {data.request}, episode {data.episode}: step {data.step}, score {data.score:g}"
        )
        if data.info:  # MuJoCo: the step's reward components and forward velocity
            caption += "<br>" + ", ".join(f"{escape(name.replace('_', ' '))} {value:.3g}" for name, value in data.info.items())
        self.frame_caption.value = caption

    def _render_log(self):
        colours = {"error": "#b00020", "info": "#444"}
        lines = [
            f'<div style="color:{colours.get(level, "#444")};font-family:monospace;white-space:pre-wrap">'
            f"{stamp} {escape(text)}</div>"
            for stamp, level, text in reversed(self.monitor.log)
        ]
        self.log_view.value = "".join(lines) or '<span style="color:#888">nothing logged yet</span>'

    def _enable_buttons(self):
        running, paused = self.trainer.running, self.trainer.paused
        self.buttons["start"].disabled = running
        self.buttons["pause"].disabled = not running or paused
        self.buttons["resume"].disabled = not paused
        self.buttons["stop"].disabled = not running

    def close(self) -> None:
        """Stops the updater thread, unsubscribes and closes the widgets (the trainer is left alone)."""
        self._closed.set()
        self._thread.join(timeout=5)
        self._subscription.close()
        self.widget.close()


def _phases(monitor) -> str:
    """The newest generation's busy-phase rate and tail, in words."""
    busy, tail = monitor.busy_frames_per_second[-1], monitor.tail_seconds[-1]
    rounds = monitor.latest_rounds
    seconds = sum(r["seconds"] for r in rounds)
    busy_text = "no busy phase" if math.isnan(busy) else f"busy phase {busy:,.0f} frames/s"
    if not rounds or seconds <= 0:
        return busy_text
    return f"{busy_text}, tail {tail:.1f} s of {seconds:.1f} s in {len(rounds)} round{'s' * (len(rounds) > 1)}"
