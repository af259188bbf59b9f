"""Shared test fixtures: quiet TensorFlow logs, seeded generators, tolerance checks."""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import pytest  # noqa: E402


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


def assert_close_to_scale(actual, expected, tolerance=1e-4):
    """max |actual - expected| <= tolerance * output scale (the issue's float32 criterion)."""
    actual, expected = np.asarray(actual, np.float64), np.asarray(expected, np.float64)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    if expected.size == 0:
        return
    scale = max(np.abs(expected).max(), 1e-6)
    error = np.abs(actual - expected).max()
    assert error <= tolerance * scale, f"max abs error {error:.3g} > {tolerance:g} * scale {scale:.3g}"
