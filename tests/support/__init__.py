"""Helpers the tests share: the repository's paths, the component checks of the browser and Ray tiers, the float32
tolerance of the op tests, a small CartPole run and the loader of a script's main() (load_bench). Test modules
import these from here (pyproject.toml puts tests/ on pytest's path), never from conftest.py or from one another."""

import importlib.util
import os
import shutil
import sys

import numpy as np
import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the repository's root
TESTS = os.path.join(REPO, "tests")
DATA = os.path.join(TESTS, "data")  # the tests' fixtures (legacy run directories, tiny MuJoCo models)
BENCH = os.path.join(REPO, "workbench", "bench")  # the throughput benchmarks (installed as workbench.bench)
EXPERIMENTS = os.path.join(REPO, "experiments")  # the experiments: learning suites, studies, result pages


CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
# The tutorials the browser tests run top to bottom in JupyterLab (tests/notebooks/test_browser.py), so that
# test_notebooks does not run them a second time when the browser tier can run.
BROWSER_NOTEBOOKS = ("00_quickstart.ipynb", "07_continuous_control.ipynb")


SCREENSHOTS = os.environ.get("WORKBENCH_SCREENSHOT_DIR", os.path.join(REPO, "runs", "test-screenshots"))


def browser_available():
    """Whether the browser tier can run here: Debian's Chromium and Playwright."""
    return os.path.exists(CHROMIUM) and module_available("playwright")


def requires_browser():
    """The browser tier's components (skipped without them outside CI, failed under CI: requires_component)."""
    requires_component(os.path.exists(CHROMIUM), f"Chromium ({CHROMIUM}; apt-get install chromium, which make test does as root)")
    requires_component(module_available("playwright"), "playwright (pip install -e '.[test]')")


def launch_chromium(playwright):
    """Debian's Chromium through Playwright (no browser download), headless; creates the screenshot folder."""
    os.makedirs(SCREENSHOTS, exist_ok=True)
    return playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-dev-shm-usage"])


def bench_script(name):
    """The path of the benchmark workbench/bench/<name>, else of the experiment experiments/<name>."""
    path = os.path.join(BENCH, name)
    return path if os.path.exists(path) else os.path.join(EXPERIMENTS, name)


def load_bench(name):
    """The benchmark or experiment script <name>.py as a module, to call its main(argv) in this process (the
    argument checks run before any work; a subprocess would spend its seconds importing TensorFlow first)."""
    if EXPERIMENTS not in sys.path:  # as `python experiments/NAME.py` has it: its siblings import as modules
        sys.path.insert(0, EXPERIMENTS)
    spec = importlib.util.spec_from_file_location(f"{name}_bench", bench_script(f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    environment = dict(os.environ)
    spec.loader.exec_module(module)
    os.environ.clear()  # a script's start-up may change it (end_to_end.py asks for Keras back)
    os.environ.update(environment)
    return module


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


def module_available(name):
    return importlib.util.find_spec(name) is not None


def assert_close_to_scale(actual, expected, tolerance=1e-4):
    """max |actual - expected| <= tolerance * output scale (the float32 criterion of the op tests)."""
    actual, expected = np.asarray(actual, np.float64), np.asarray(expected, np.float64)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    if expected.size == 0:
        return
    scale = max(np.abs(expected).max(), 1e-6)
    error = np.abs(actual - expected).max()
    assert error <= tolerance * scale, f"max abs error {error:.3g} > {tolerance:g} * scale {scale:.3g}"


def cartpole_config(**changes):
    """A RunConfig of a GA on CartPole small enough for a test (16 members, two generations in seconds)."""
    from workbench.training import RunConfig

    config = dict(
        env="CartPole-v1",
        model="mlp",
        algorithm="ga",
        subpopulations=2,
        slots=8,
        max_episode_frames=200,
        noise_size=2**20,
        model_options=dict(hidden_sizes=[8]),
        hyperparameters=dict(population_size=16, truncation=4, sigma=0.1, elite_candidates=2, elite_episodes=2),
    )
    config.update(changes)
    return RunConfig(**config)


def pong_config():
    """A RunConfig of a GA on Pong small enough for a test (8 members, 120-frame episodes)."""
    from workbench.training import RunConfig

    return RunConfig(
        env="pong",
        model="small",
        algorithm="ga",
        subpopulations=2,
        slots=4,
        max_episode_frames=120,
        noise_size=2**20,
        hyperparameters=dict(population_size=8, truncation=2, sigma=0.01, elite_candidates=1, elite_episodes=1),
    )


def generation_record(g, **values):
    """A GenerationRecord of generation g with made-up values rising with g (`values` override fields)."""
    from workbench.evolution import GenerationRecord

    record = dict(
        generation=g,
        max=10.0 + g,
        mean=5.0 + g,
        median=4.0 + g,
        elite=8.0 + g,
        elite_genome=None,
        evaluations=10,
        frames_total=1000 * (g + 1),
        frames_per_second=5000.0,
        time_split=dict(emulation=0.5, inference=0.3, weight_loading=0.05, idle=0.15),
        hyperparameters={"sigma": 0.01},
    )
    record.update(values)
    return GenerationRecord(**record)


class InjectedDraws:
    """Stands in for the cmaes package's RandomState: randn(n) returns the next row of the draws given (the
    reference implementations' twins inject our draws instead of hoping for equal random streams)."""

    def __init__(self):
        self.rows = []

    def randn(self, n):
        row = self.rows.pop(0)
        assert row.shape == (n,)
        return row.copy()
