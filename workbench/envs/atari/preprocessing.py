"""Atari frame preprocessing in numpy, bit for bit equal to the ops (ops/cc/kernels/frame_preprocessing.*).

max of two grayscale frames, then an exact area resize (OpenCV's INTER_AREA rule
in integer arithmetic, round-half-to-even), and a stack of the last frames.
"""

from __future__ import annotations

import functools

import numpy as np


@functools.cache
def area_weights(in_size: int, out_size: int) -> np.ndarray:
    """Integer matrix [out_size, in_size]: the overlap of output o and source s in units of 1/out_size.

    Each row sums to in_size; out = weights_rows @ frame @ weights_cols.T / (in_h * in_w).
    """
    if in_size < 1 or out_size < 1:
        raise ValueError(f"sizes must be positive, got in_size={in_size}, out_size={out_size}")
    o = np.arange(out_size, dtype=np.int64)[:, None]
    s = np.arange(in_size, dtype=np.int64)[None, :]
    lo = np.maximum(o * in_size, s * out_size)
    hi = np.minimum((o + 1) * in_size, (s + 1) * out_size)
    weights = np.maximum(hi - lo, 0)
    weights.setflags(write=False)
    return weights


def round_half_even_divide(numerator: np.ndarray, divisor: int) -> np.ndarray:
    """round(numerator / divisor) with ties to even, exactly, for non-negative integer arrays."""
    q, r = np.divmod(numerator, divisor)
    twice = 2 * r
    return q + ((twice > divisor) | ((twice == divisor) & (q % 2 == 1)))


def area_resize(frame: np.ndarray, height: int, width: int) -> np.ndarray:
    """Exact area resize of a uint8 [H, W] frame to [height, width] (uint8)."""
    frame = np.asarray(frame)
    if frame.ndim != 2 or frame.dtype != np.uint8:
        raise ValueError(f"frame must be a uint8 [H, W] array, got {frame.dtype} {frame.shape}")
    in_h, in_w = frame.shape
    rows, cols = _float_weights(in_h, height), _float_weights(in_w, width)
    # Float64 BLAS products of integers below 2^53 are exact: the sums are the integer sums.
    sums = (rows @ frame.astype(np.float64) @ cols.T).astype(np.int64)
    return round_half_even_divide(sums, in_h * in_w).astype(np.uint8)


@functools.cache
def _float_weights(in_size, out_size):
    weights = area_weights(in_size, out_size).astype(np.float64)
    weights.setflags(write=False)
    return weights


def max_and_resize(newest: np.ndarray, previous: np.ndarray, size: int) -> np.ndarray:
    """The observation frame of a step: area_resize(max(newest, previous)) to [size, size]."""
    return area_resize(np.maximum(newest, previous), size, size)
