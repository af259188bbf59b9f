"""Shared test fixtures: quiet TensorFlow logs, seeded generators, tolerance checks, and the test tiers.

Tiers (pytest markers, declared in pyproject.toml): `slow` (tens of seconds each), `notebook` (runs the
tutorials), `browser` (JupyterLab in Chromium), `ray` (a local Ray cluster). `make test` runs everything;
`make test-fast` leaves these four out. A browser or Ray test whose component is missing is skipped with
the reason outside CI and fails under CI=true (requires_component).

`make test` runs the suite in two pytest-xdist workers (`-n 2 --dist loadgroup`): most of a test's time is
single-threaded Python (importing TensorFlow in a subprocess, tracing, a notebook kernel starting), which a
second worker overlaps. Tests that start a Ray cluster (the `ray` tier, which includes the tutorials that use
Ray) share one xdist group, so they run one after another in one worker, as do the browser tests
(SERIAL_GROUPS).
"""
import importlib.util
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import pytest  # noqa: E402


def in_ci():
    """Whether this is a CI run (CI set to anything but empty, 0 or false): components must be there."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false")


def requires_component(available, what):
    """Skips the test (with the reason) when `what` is missing, except under CI, where it fails."""
    if available:
        return
    if in_ci():
        pytest.fail(f"{what} is missing, and under CI this test must run")
    pytest.skip(f"{what} is missing (under CI=true this is a failure)")


SERIAL_GROUPS = ("ray", "browser")  # markers whose tests form one xdist group each


def pytest_collection_modifyitems(config, items):
    """Tests that must not overlap (one Ray cluster, one Chromium at a time) go to one xdist group each."""
    for item in items:
        for marker in SERIAL_GROUPS:
            if item.get_closest_marker(marker) is not None:
                item.add_marker(pytest.mark.xdist_group(marker))
                break


def module_available(name):
    return importlib.util.find_spec(name) is not None


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


def assert_close_to_scale(actual, expected, tolerance=1e-4):
    """max |actual - expected| <= tolerance * output scale (the float32 criterion of the op tests)."""
    actual, expected = np.asarray(actual, np.float64), np.asarray(expected, np.float64)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    if expected.size == 0:
        return
    scale = max(np.abs(expected).max(), 1e-6)
    error = np.abs(actual - expected).max()
    assert error <= tolerance * scale, f"max abs error {error:.3g} > {tolerance:g} * scale {scale:.3g}"
