"""AgentViewer: an evolved agent's episode, frame by frame, in JupyterLab; and two generations side by side.

    viewer = AgentViewer.from_run("runs/demo", generation=5)      # or AgentViewer(episode)
    viewer                                                         # Play + scrubber, RGB frame, network input,
                                                                   # score over time, action histogram
    viewer.save("elite.gif")                                       # or .mp4
    compare_generations("runs/demo", 0, 12)                        # two elites, one shared scrubber

The network's input (the 84x84 frames of the stack, oldest first; a vector as a
bar code) is shown beside the RGB screen the player would see. Continuous-control
episodes (MuJoCo) also show the x velocity and reward components over time and the
actions as a map (dimension x step).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from html import escape
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets
import numpy as np

from workbench.checks import check_int, check_real, check_type
from workbench.lab.pictures import observation_strip, png
from workbench.lab.plots import EpisodePlot, action_histogram, action_map
from workbench.training.replay import Episode, replay, replay_run, save_video

if TYPE_CHECKING:
    from workbench.evaluation import BaseEvaluator
    from workbench.evolution import Genome


class AgentViewer:
    """Widgets that play back one Episode (workbench.training.replay); see the module docstring."""

    def __init__(self, episode: Episode, title: str | None = None, fps: float = 15, scale: int = 2) -> None:
        if not isinstance(episode, Episode):
            raise TypeError(f"episode must be a workbench.training.Episode, got {type(episode).__name__}")
        check_real("fps", fps, 0, 60, low_open=True)
        check_int("scale", scale, 1, 8)
        if title is not None:
            check_type("title", title, str, "a string or None")
        self.episode, self.title, self.scale = episode, title, scale
        self.steps = len(episode.actions)
        self.scores = np.concatenate([[0.0], np.cumsum(episode.rewards, dtype=np.float64)])
        self.score_plot = EpisodePlot(episode.rewards, title="score over time")
        self.play = widgets.Play(value=0, min=0, max=self.steps, step=1, interval=int(1000 / fps), description="play")
        self.slider = widgets.IntSlider(value=0, min=0, max=self.steps, description="step", layout=widgets.Layout(width="480px"))
        self.slider.add_class("wb-agent-scrubber")
        widgets.jslink((self.play, "value"), (self.slider, "value"))
        self.frame_image = widgets.Image(format="png")
        self.frame_image.add_class("wb-agent-frame")
        self.observation_image = widgets.Image(format="png")
        self.observation_image.add_class("wb-agent-observation")
        self.score_image = widgets.Image(format="png")
        self.caption = widgets.HTML()
        self.continuous = episode.actions.ndim == 2
        if self.continuous:
            histogram = widgets.Image(value=action_map(episode.actions, title="actions over time"), format="png")
        else:
            histogram = widgets.Image(
                value=action_histogram(episode.actions, episode.action_meanings, title="actions chosen"), format="png"
            )
        rates = {
            name: values
            for name, values in episode.info.items()  # positions grow without bound: caption only
            if not name.endswith("_position") and name != "distance_from_origin"
        }
        self.info_plot = EpisodePlot(series=rates, title="x velocity and reward terms") if rates else None
        self.info_image = widgets.Image(format="png")
        self.export_path = widgets.Text(value="agent.gif", description="save as", layout=widgets.Layout(width="300px"))
        self.export_button = widgets.Button(description="export", icon="download")
        self.export_status = widgets.HTML()
        self.export_button.on_click(lambda _: self._export())
        self.slider.observe(lambda change: self.show(change["new"]), names="value")
        heading = f"<b>{escape(title)}</b>: " if title else ""
        summary = widgets.HTML(f"{heading}score {episode.score:g} in {self.steps} steps")
        screens = [self.frame_image] if episode.frames is not None else [widgets.HTML("(this environment has no screen)")]
        network_input = widgets.VBox([widgets.HTML("what the network sees (oldest → newest)"), self.observation_image])
        self.widget = widgets.VBox(
            [
                summary,
                widgets.HBox([self.play, self.slider]),
                self.caption,
                widgets.HBox(screens + [network_input]),
                widgets.HBox([self.score_image, histogram] + ([self.info_image] if self.info_plot else [])),
                widgets.HBox([self.export_path, self.export_button, self.export_status]),
            ]
        )
        self.widget.add_class("wb-agent-viewer")
        self.show(0)

    # -- construction from runs and genomes -------------------------------------------------
    @classmethod
    def from_run(cls, run_dir: str, generation: int | None = None, seed: int = 0, **options: Any) -> AgentViewer:
        """The elite of `generation` of a run directory (None: the newest elite), replayed for one episode."""
        episode = replay_run(run_dir, generation=generation, seed=seed)
        label = "newest elite" if generation is None else f"elite of generation {generation}"
        return cls(episode, title=options.pop("title", f"{os.path.basename(os.path.normpath(run_dir))}: {label}"), **options)

    @classmethod
    def from_genome(
        cls, genome: Genome, evaluator: BaseEvaluator, bases: dict | None = None, seed: int = 0, **options: Any
    ) -> AgentViewer:
        """A genome replayed in the spec of `evaluator` (a BaseEvaluator; its live episode cap included)."""
        from workbench.evolution import GenomeDecoder

        decoder = GenomeDecoder(evaluator.space)  # its own cache: the evaluator's may be in use by a trainer
        for key, weights in (bases or {}).items():
            decoder.add_base(key, weights)
        episode = replay(genome, evaluator.spec, decoder, seed=seed, max_episode_frames=evaluator.max_episode_frames)
        return cls(episode, **options)

    # -- display ----------------------------------------------------------------------------
    def _repr_mimebundle_(self, **kwargs):
        return self.widget._repr_mimebundle_(**kwargs)

    def show(self, step: int) -> None:
        """Shows the state after `step` actions (0 = the start; past the end: the last frame)."""
        step = int(min(max(step, 0), self.steps))
        episode = self.episode
        with self.frame_image.hold_sync():
            if episode.frames is not None:  # Atari's 160-pixel screens enlarged, MuJoCo's renders as they are
                self.frame_image.value = png(episode.frames[step], self.scale if episode.frames.shape[2] <= 200 else 1)
        self.observation_image.value = png(observation_strip(episode.observations[step]), self.scale)
        self.score_plot.show_step(step)
        self.score_image.value = self.score_plot.render()
        if self.info_plot is not None:
            self.info_plot.show_step(step)
            self.info_image.value = self.info_plot.render()
        if step == 0:
            action = "start"
        elif self.continuous:
            action = "action [" + ", ".join(f"{a:+.2f}" for a in episode.actions[step - 1]) + "]"
        else:
            chosen = int(episode.actions[step - 1])
            meanings = episode.action_meanings
            action = f"action {meanings[chosen] if meanings else chosen}"
        terms = "".join(f", {name.replace('_', ' ')} {values[step - 1]:.3g}" for name, values in episode.info.items() if step > 0)
        self.caption.value = f"step {step} / {self.steps}: {escape(action)}, score {self.scores[step]:g}{escape(terms)}"
        self.step = step

    def save(self, path: str, fps: float = 15) -> str:
        """Writes the episode as .gif or .mp4, the running score drawn in; returns the path."""
        return save_video(self.episode, path, fps=fps)

    def _export(self):
        try:
            path = self.save(self.export_path.value)
        except Exception as error:  # noqa: BLE001 - shown beside the button
            self.export_status.value = f'<span style="color:#b00020">{escape(str(error))}</span>'
        else:
            self.export_status.value = f"saved {escape(os.path.abspath(path))}"


def compare_generations(run_dir: str, generation_a: int, generation_b: int, seed: int = 0, **options: Any) -> Comparison:
    """The elites of two generations of a run side by side, moved by one shared Play button and scrubber."""
    viewers = [AgentViewer.from_run(run_dir, generation=g, seed=seed, **options) for g in (generation_a, generation_b)]
    return Comparison(viewers)


class Comparison:
    """Several AgentViewers in a row whose scrubbers move together (a shorter episode stays on its end)."""

    def __init__(self, viewers: Iterable[AgentViewer]) -> None:
        if isinstance(viewers, (str, bytes)) or not isinstance(viewers, Iterable):
            raise TypeError(f"viewers must be AgentViewers, got {type(viewers).__name__}")
        self.viewers = [check_type(f"viewers[{k}]", v, AgentViewer, "an AgentViewer") for k, v in enumerate(viewers)]
        if not self.viewers:
            raise ValueError("viewers must hold at least one AgentViewer, got none")
        longest = max(v.steps for v in self.viewers)
        self.play = widgets.Play(value=0, min=0, max=longest, interval=self.viewers[0].play.interval, description="play both")
        self.slider = widgets.IntSlider(value=0, min=0, max=longest, description="step", layout=widgets.Layout(width="480px"))
        widgets.jslink((self.play, "value"), (self.slider, "value"))
        self.slider.observe(lambda change: self.show(change["new"]), names="value")
        self.widget = widgets.VBox([widgets.HBox([self.play, self.slider]), widgets.HBox([v.widget for v in self.viewers])])
        self.widget.add_class("wb-agent-comparison")

    def show(self, step: int) -> None:
        for viewer in self.viewers:
            viewer.slider.value = min(step, viewer.steps)

    def _repr_mimebundle_(self, **kwargs):
        return self.widget._repr_mimebundle_(**kwargs)
