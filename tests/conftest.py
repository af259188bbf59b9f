"""Pytest configuration: quiet TensorFlow logs, the seeded generator fixture, the tiers and the xdist groups.
Shared helpers are in tests/support (imported as `support`), not here.

Tiers (pytest markers, declared in pyproject.toml): `slow` (tens of seconds each), `notebook` (runs the
tutorials), `browser` (Chromium: JupyterLab, the documentation site), `ray` (a local Ray cluster), `long` (a
robustness rehearsal too long for make test's budget), `parity` (the twins compared at full length, the op
fuzzer's long form). `make test` runs all but `long` and `parity`; `make test-long` and `make test-parity` run
those (CI runs all three); `make test-fast` leaves all six out. A browser or Ray test whose
component is missing is skipped with the reason outside CI and fails under CI=true
(support.requires_component).

`make test` runs the suite in three pytest-xdist workers on 2 cores (`-n 3 --dist loadgroup`): most of a test's
time is single-threaded Python (importing TensorFlow in a subprocess, tracing, a notebook kernel starting) or
waiting for a Ray cluster or JupyterLab, which the other workers overlap. Tests that start a Ray cluster (the
`ray` tier, which includes the tutorials that use Ray) share one xdist group, so they run one after another in
one worker, as do the browser tests (SERIAL_GROUPS).
"""

import os
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# the benchmarks the tests run (and the tutorials run) record their JSON lines here, not in experiments/results
os.environ["WORKBENCH_BENCH_RESULTS"] = tempfile.mkdtemp(prefix="workbench-bench-results-")
from workbench.quiet import skip_keras  # noqa: E402

skip_keras()  # every process the tests start imports TensorFlow ~2 s sooner (the workbench does not use Keras)

import numpy as np  # noqa: E402
import pytest  # noqa: E402

SERIAL_GROUPS = ("ray", "browser")  # markers whose tests form one xdist group each


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's own hook, which reads the groups into the node ids
def pytest_collection_modifyitems(config, items):
    """Tests that must not overlap (one Ray cluster, one Chromium at a time) go to one xdist group each."""
    for item in items:
        for marker in SERIAL_GROUPS:
            if item.get_closest_marker(marker) is not None:
                item.add_marker(pytest.mark.xdist_group(marker))
                break


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


def pytest_configure(config):
    """pytest 9.2's structured node ids silently undo pytest-xdist 3.8's --dist loadgroup (its groups' tests spread
    over the workers: two Ray clusters at once). Stop with the reason instead (setup.py's test extra pins pytest)."""
    from importlib.metadata import version

    from packaging.version import Version

    if config.getoption("dist", "no") != "loadgroup" or hasattr(config, "workerinput"):
        return
    if Version(version("pytest")) >= Version("9.2") and Version(version("pytest-xdist")) <= Version("3.8.0"):
        raise pytest.UsageError(
            f"pytest {version('pytest')} and pytest-xdist {version('pytest-xdist')} do not keep --dist loadgroup's "
            "groups together; install the test extra's versions (pip install -e '.[test]')"
        )
