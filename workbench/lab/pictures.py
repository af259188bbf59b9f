"""Pictures for widgets: arrays and matplotlib figures as PNG bytes (for ipywidgets.Image).

Figures are drawn with matplotlib's Agg canvas directly, never through pyplot, so
they work from any thread and leave the notebook's own plotting state alone.
"""

from __future__ import annotations

import io
from typing import Any

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from PIL import Image

from workbench.checks import check_int, check_positive_int, check_real


def png(array: np.ndarray, scale: int = 1) -> bytes:
    """PNG bytes of an image: uint8 [H, W] (grayscale) or [H, W, 3] (RGB), enlarged `scale` times."""
    array = np.asarray(array)
    if array.dtype != np.uint8:
        raise ValueError(f"images must be uint8, got {array.dtype}")
    if array.ndim not in (2, 3) or (array.ndim == 3 and array.shape[2] != 3):
        raise ValueError(f"images must be [H, W] or [H, W, 3], got shape {array.shape}")
    scale = check_positive_int("scale", scale)
    image = Image.fromarray(array)
    if scale != 1:
        image = image.resize((array.shape[1] * scale, array.shape[0] * scale), Image.Resampling.NEAREST)
    buffer = io.BytesIO()
    image.save(buffer, format="png", compress_level=1)
    return buffer.getvalue()


def observation_strip(observation: np.ndarray, gap: int = 2) -> np.ndarray:
    """The network's input as one grayscale picture: a [H, W, k] frame stack side by side, oldest first.

    Float observations are scaled from [0, 1] (or their own range) to 0..255; a vector observation
    (Gymnasium) becomes a one-row bar code.
    """
    gap = check_int("gap", gap, low=0)
    observation = np.asarray(observation)
    if observation.dtype.kind not in "uif" or observation.size == 0:
        raise ValueError(
            f"observation must be a non-empty array of numbers, got dtype {observation.dtype}, shape {observation.shape}"
        )
    if not np.all(np.isfinite(observation)):
        raise ValueError("observation must be finite (it has NaN or infinite values)")
    if observation.ndim == 1:
        observation = observation[None, :, None]
    if observation.ndim == 2:
        observation = observation[:, :, None]
    if observation.ndim != 3:
        raise ValueError(f"observations must be [H, W, frames] or a vector, got shape {observation.shape}")
    if observation.dtype != np.uint8:
        low, high = float(np.min(observation)), float(np.max(observation))
        span = high - low if high > low else 1.0
        observation = ((observation - low) / span * 255).astype(np.uint8)
    height, width, frames = observation.shape
    strip = np.full((height, frames * width + (frames - 1) * gap), 255, np.uint8)
    for k in range(frames):
        strip[:, k * (width + gap) : k * (width + gap) + width] = observation[:, :, k]
    return strip


def new_figure(width: float, height: float) -> Any:
    """A matplotlib Figure on its own Agg canvas (inches at 100 dpi, each side in (0, 100]: a ValueError names
    `width` or `height` otherwise)."""
    size = (check_real("width", width, 0, 100, low_open=True), check_real("height", height, 0, 100, low_open=True))
    figure = Figure(figsize=size, dpi=100, layout="constrained")
    FigureCanvasAgg(figure)
    return figure


def figure_png(figure: Any) -> bytes:
    buffer = io.BytesIO()
    figure.canvas.print_png(buffer)
    return buffer.getvalue()
