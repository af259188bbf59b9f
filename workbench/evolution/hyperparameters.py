"""Hyperparameter metadata on the config dataclasses' fields: a label, a one-line description, a unit, and the
range of the dashboard's slider (and the command line's help) when the field has one.

    sigma: float = hyperparameter(0.002, "mutation power σ", "the noise scale of a child", scale="log",
                                  low=1e-4, high=1.0)
    describe(GAConfig)["sigma"].help      # what the command line, the dashboard and the docs print

The metadata describes; validation stays in each config's validated() (hard limits such as population_size >= 2
or an even ES population), so that a slider's range is a sensible span, not a limit.
"""

from __future__ import annotations

import dataclasses
from typing import Any

SCALES = ("linear", "log", "int")
_KEY = "hyperparameter"


@dataclasses.dataclass(frozen=True)
class Hyperparameter:
    """What a config field means: label, one-line help, unit; scale and [low, high] of its slider (None = none)."""

    label: str
    help: str
    unit: str = ""
    scale: str = "linear"  # "int", "linear" or "log" (a float slider on a log scale)
    low: float | None = None
    high: float | None = None
    step: float = 1

    def __post_init__(self) -> None:
        if self.scale not in SCALES:
            raise ValueError(f"scale must be one of {SCALES}, got {self.scale!r}")
        if not (self.low is None and self.high is None) and not (
            self.low is not None and self.high is not None and self.low < self.high
        ):
            raise ValueError(f"{self.label}: low and high must both be given with low < high, got {self.low!r}, {self.high!r}")
        if self.scale == "log" and self.low is not None and self.low <= 0:
            raise ValueError(f"{self.label}: a log scale needs low > 0, got {self.low!r}")

    @property
    def has_slider(self) -> bool:
        return self.low is not None

    def describe(self) -> str:
        """ "the noise scale of a child (slider 0.0001 to 1, log scale)": the help line, its unit and slider range."""
        unit = f" [{self.unit}]" if self.unit else ""
        span = f" (slider {self.low:g} to {self.high:g}{', log scale' if self.scale == 'log' else ''})" if self.has_slider else ""
        return f"{self.help}{unit}{span}"


def hyperparameter(
    default: Any,
    label: str,
    help: str,
    *,
    unit: str = "",
    scale: str = "linear",
    low: float | None = None,
    high: float | None = None,
    step: float = 1,
) -> Any:
    """A dataclass field with `default` and its Hyperparameter metadata."""
    meta = Hyperparameter(label, help, unit, scale, low, high, step)
    return dataclasses.field(default=default, metadata={_KEY: meta})


def describe(config_class: type) -> dict[str, Hyperparameter]:
    """{field name: Hyperparameter} of a config dataclass, in field order; a field without metadata gets a
    label and help made from its name (an algorithm registered without metadata still gets options and help)."""
    described = {}
    for field in dataclasses.fields(config_class):
        meta = field.metadata.get(_KEY)
        if meta is None:
            name = field.name.replace("_", " ")
            meta = Hyperparameter(name, name)
        described[field.name] = meta
    return described
