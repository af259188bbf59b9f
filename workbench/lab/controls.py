"""HyperparameterPanel: a slider and a text input per hyperparameter, applied live, rejections shown.

    knobs = knobs_for(type(trainer.strategy.config), trainer.hyperparameters(), 20_000)
    panel = HyperparameterPanel(trainer.hyperparameters(), trainer.set, knobs)
    panel.widget            # a VBox: one row per knob (label, slider, input, status)

A change (slider released, or a value typed and Enter pressed) calls apply(name=value).
When apply raises ValueError the row shows the rejected value and the reason and
the controls go back to the accepted value; when it succeeds the row says when the
change applies. Which knobs appear depends on the strategy's config fields.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterable, Mapping
from html import escape
from typing import Any

import ipywidgets as widgets

from workbench.evolution.hyperparameters import describe


@dataclasses.dataclass(frozen=True)
class Knob:
    """One live hyperparameter: the trainer.set() name, its label and its slider's range."""

    name: str
    label: str
    scale: str  # "int", "linear" or "log" (a float slider on a log scale): the Hyperparameter's scale
    low: float
    high: float
    step: float = 1


EPISODE_CAP = Knob("max_episode_frames", "episode cap (frames)", "int", 100, 108_000, 100)  # the evaluator's


def knobs_for(config_class: type, hyperparameters: Mapping[str, Any], max_episode_frames: int | None = None) -> list[Knob]:
    """The knobs of the strategy's config dataclass: each field with a slider in its Hyperparameter metadata
    (workbench.evolution.hyperparameters) that holds a value in `hyperparameters` (trainer.hyperparameters(); a
    None default, such as PGPE's center_learning_rate = max_speed / 2, has no slider), and the episode cap
    bounded by the run's cap `max_episode_frames` (no cap knob when the run has none)."""
    chosen = []
    for name, meta in describe(config_class).items():
        if meta.has_slider and meta.low is not None and meta.high is not None and hyperparameters.get(name) is not None:
            chosen.append(Knob(name, meta.label, meta.scale, meta.low, meta.high, meta.step))
    if max_episode_frames is not None:
        chosen.append(dataclasses.replace(EPISODE_CAP, low=min(EPISODE_CAP.low, max_episode_frames), high=max_episode_frames))
    return chosen


def parse(knob: Knob, text: str) -> int | float:
    """The typed text as the knob's type (ValueError naming the knob)."""
    text = text.strip()
    try:
        value = int(text) if knob.scale == "int" else float(text)
    except ValueError:
        kind = "an integer" if knob.scale == "int" else "a number"
        raise ValueError(f"{knob.name} must be {kind}, got {text!r}") from None
    if knob.scale != "int" and not math.isfinite(value):
        raise ValueError(f"{knob.name} must be finite, got {text!r}")
    return value


def _slider(knob, value):
    common = dict(continuous_update=False, readout=True, layout=widgets.Layout(width="250px", flex="0 0 250px"))
    if knob.scale == "int":
        high = max(knob.high, value)
        return widgets.IntSlider(value=value, min=knob.low, max=high, step=knob.step, **common)
    if knob.scale == "log":
        value = min(max(value, knob.low), knob.high)
        return widgets.FloatLogSlider(
            value=value,
            base=10,
            min=math.log10(knob.low),
            max=math.log10(knob.high),
            step=knob.step,
            readout_format=".2e",
            **common,
        )
    return widgets.FloatSlider(
        value=min(max(value, knob.low), knob.high), min=knob.low, max=knob.high, step=knob.step, readout_format=".4f", **common
    )


class HyperparameterPanel:
    """Live controls for a strategy's hyperparameters; see the module docstring."""

    def __init__(
        self,
        values: Mapping[str, Any],
        apply: Callable[..., None],
        knobs: Iterable[Knob],
        on_error: Callable[[str], None] | None = None,
    ) -> None:
        self.knobs = {knob.name: knob for knob in knobs}
        self.values = {name: values[name] for name in self.knobs}  # the accepted values
        self.apply, self.on_error = apply, on_error
        self.sliders, self.inputs, self.statuses = {}, {}, {}
        self._syncing = False
        rows = []
        for name, knob in self.knobs.items():
            slider = _slider(knob, self.values[name])
            slider.add_class(f"wb-hp-{name}")
            text = widgets.Text(
                value=self._format(name), continuous_update=False, layout=widgets.Layout(width="90px", flex="0 0 90px")
            )
            text.add_class(f"wb-hp-input-{name}")
            status = widgets.HTML(layout=widgets.Layout(flex="1 1 auto"))
            status.add_class(f"wb-hp-status-{name}")
            slider.observe(lambda change, name=name: self._changed(name, change["new"]), names="value")
            text.observe(lambda change, name=name: self._typed(name, change["new"]), names="value")
            self.sliders[name], self.inputs[name], self.statuses[name] = slider, text, status
            label = widgets.Label(knob.label, layout=widgets.Layout(width="170px", flex="0 0 170px"))
            rows.append(widgets.HBox([label, slider, text, status]))
        self.widget = widgets.VBox(rows)
        self.widget.add_class("wb-hyperparameters")

    def _format(self, name):
        value = self.values[name]
        return f"{value:.6g}" if isinstance(value, float) else str(value)

    def _typed(self, name, text):
        if self._syncing:
            return
        try:
            value = parse(self.knobs[name], text)
        except ValueError as error:
            self._reject(name, text, error)
            return
        self.submit(name, value)

    def _changed(self, name, value):
        if not self._syncing:
            self.submit(name, int(value) if self.knobs[name].scale == "int" else float(value))

    def submit(self, name: str, value: int | float) -> bool:
        """Applies name = value through `apply`; shows the outcome. True if accepted."""
        if name not in self.knobs:
            raise KeyError(f"no control for {name!r}; controls: {sorted(self.knobs)}")
        try:
            self.apply(**{name: value})
        except ValueError as error:
            self._reject(name, value, error)
            return False
        self.values[name] = value
        self._show(name)
        self.statuses[name].value = f'<span style="color:#2a7a2a">✓ {escape(self._format(name))} from the next generation</span>'
        return True

    def _reject(self, name, value, error):
        self.statuses[name].value = f'<span style="color:#b00020">✗ {escape(str(value))} rejected: {escape(str(error))}</span>'
        self._show(name)
        if self.on_error is not None:
            self.on_error(f"{name} = {value} rejected: {error}")

    def _show(self, name):
        """Puts the controls of `name` back on the accepted value, without applying it again."""
        self._syncing = True
        try:
            slider, value = self.sliders[name], self.values[name]
            if isinstance(slider, widgets.IntSlider) and value > slider.max:
                slider.max = value
            slider.value = value
            self.inputs[name].value = self._format(name)
        finally:
            self._syncing = False

    def refresh(self, values: Mapping[str, Any]) -> None:
        """Shows values applied elsewhere (e.g. trainer.set from code), for the knobs present in `values`."""
        for name in self.knobs:
            if name in values and values[name] is not None and values[name] != self.values[name]:
                self.values[name] = values[name]
                self._show(name)
