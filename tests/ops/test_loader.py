"""The ops library loader: clear errors for a missing or stale library, and the pure-TF switch."""

import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from workbench.ops import _loader


@pytest.fixture
def fresh_loader(monkeypatch):
    monkeypatch.setattr(_loader, "_libraries", {})
    return _loader


def test_library_is_built_for_the_running_tensorflow():
    path = _loader.library_path()
    assert path is not None, "the ops library should have been built by the install"
    assert _loader.built_for_tensorflow(path) == tf.__version__
    assert hasattr(_loader.load_library(), "workbench_population_matmul")


def test_library_records_the_ale_it_links_and_refuses_another_ale_py(monkeypatch):
    import importlib.metadata

    from workbench.ops import atari_env

    record = _loader.build_record(_loader.library_path(_loader.EMULATION))
    assert record["ale"] == importlib.metadata.version("ale-py")
    assert not hasattr(_loader.load_library(), "workbench_atari_env_step")  # inference library: no ALE inside
    assert hasattr(_loader.load_library(_loader.EMULATION), "workbench_atari_env_step")
    monkeypatch.setattr(_loader, "_components_checked", set())
    monkeypatch.setattr(importlib.metadata, "version", lambda name: "0.0.1")
    with pytest.raises(_loader.OpsLibraryError, match="built with ALE .* ale-py 0.0.1 is installed.*make install"):
        atari_env.create("unused.bin", 1)


def test_missing_library_says_how_to_rebuild(fresh_loader, monkeypatch):
    monkeypatch.setattr(fresh_loader, "library_path", lambda name=None: None)
    with pytest.raises(fresh_loader.OpsLibraryError, match="was not found.*make install.*WORKBENCH_PURE_TF=1"):
        fresh_loader.load_library()


def test_a_directory_of_libraries_can_be_named(fresh_loader, monkeypatch, tmp_path):
    """WORKBENCH_OPS_DIR points the loader at another build (the sanitizer tier's); a missing one says where."""
    import importlib.machinery

    stale = tmp_path / ("_workbench_ops" + importlib.machinery.EXTENSION_SUFFIXES[0])
    stale.write_bytes(b"\x7fELF...WORKBENCH_BUILD_INFO tensorflow=2.13.0;...")
    monkeypatch.setenv("WORKBENCH_OPS_DIR", str(tmp_path))
    assert fresh_loader.library_path() == str(stale)
    with pytest.raises(fresh_loader.OpsLibraryError, match=f"was not found in {tmp_path}"):
        fresh_loader.load_library(fresh_loader.MUJOCO)


def test_library_built_for_another_tensorflow_is_refused(fresh_loader, monkeypatch, tmp_path):
    stale = tmp_path / "_workbench_ops.so"
    stale.write_bytes(b"\x7fELF...WORKBENCH_BUILD_INFO tensorflow=2.13.0;...")
    monkeypatch.setattr(fresh_loader, "library_path", lambda name=None: str(stale))
    expected = f"built for TensorFlow 2.13.0, but TensorFlow {tf.__version__}.*Rebuild"
    with pytest.raises(fresh_loader.OpsLibraryError, match=expected):
        fresh_loader.load_library()


def test_foreign_or_corrupt_library_is_refused(fresh_loader, monkeypatch, tmp_path):
    foreign = tmp_path / "_workbench_ops.so"
    foreign.write_bytes(b"not a library")
    monkeypatch.setattr(fresh_loader, "library_path", lambda name=None: str(foreign))
    with pytest.raises(fresh_loader.OpsLibraryError, match="carries no build record"):
        fresh_loader.load_library()
    foreign.write_bytes(b"garbage WORKBENCH_BUILD_INFO tensorflow=" + tf.__version__.encode() + b"; garbage")
    with pytest.raises(fresh_loader.OpsLibraryError, match="could not load"):
        fresh_loader.load_library()


def test_environment_variable_switches_every_op_to_pure_tf():
    """With WORKBENCH_PURE_TF=1 the ops run without ever loading the library."""
    script = (
        "import numpy as np\n"
        "from workbench.ops import _loader, population_matmul, resolve_backend\n"
        "from workbench.models import SmallModel\n"
        "_loader.library_path = lambda name=None: None  # a load attempt would raise\n"
        "assert resolve_backend() == 'reference'\n"
        "y = population_matmul(np.ones((2, 3), np.float32), np.ones((1, 3, 4), np.float32), [0, 0])\n"
        "assert np.allclose(y.numpy(), 3.0)\n"
        "SmallModel(slots=1).act(np.zeros((1, 84, 84, 4), np.uint8), [0])\n"
        "assert not _loader._libraries\n"
        "print('pure-tf ok')\n"
    )
    env = dict(os.environ, WORKBENCH_PURE_TF="1", TF_CPP_MIN_LOG_LEVEL="2")
    result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "pure-tf ok" in result.stdout


@pytest.mark.parametrize("value, expected", [("1", True), ("true", True), ("0", False), ("", False), ("no", False)])
def test_pure_tf_variable_values(monkeypatch, value, expected):
    monkeypatch.setenv(_loader.PURE_TF_VARIABLE, value)
    assert _loader.pure_tf_requested() is expected


def test_default_backend_is_the_custom_kernel(monkeypatch):
    from workbench.ops import resolve_backend

    monkeypatch.delenv(_loader.PURE_TF_VARIABLE, raising=False)
    assert resolve_backend() == "custom"
    assert resolve_backend("reference") == "reference"
    np.testing.assert_equal(resolve_backend("custom"), "custom")
