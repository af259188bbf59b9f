"""Finds and loads the compiled ops libraries once each, checking they were built for the running TensorFlow.

The library carries a build record, `WORKBENCH_BUILD_INFO tensorflow=X;ale=Y;`,
read from the file before loading it (build_record()). The libraries are looked for inside the package, or
in the directory WORKBENCH_OPS_DIR names (the sanitizer build of `make test-sanitize`; docs/sanitizers.md).
"""

from __future__ import annotations

import glob
import importlib.machinery
import os
import re
import threading
from collections.abc import Callable
from typing import Any

import tensorflow as tf

PURE_TF_VARIABLE = "WORKBENCH_PURE_TF"
OPS_DIR_VARIABLE = "WORKBENCH_OPS_DIR"
BACKENDS = ("custom", "reference")  # the compiled kernels, or their pure-TF / ale-py references
REBUILD_HINT = (
    "Rebuild it with `make install` (or `pip install --no-build-isolation -e .` in the project "
    f"directory), or set {PURE_TF_VARIABLE}=1 to run the pure-TensorFlow reference ops instead."
)
_BUILD_INFO = re.compile(rb"WORKBENCH_BUILD_INFO ((?:[a-z_]+=[^;\x00]*;)+)")
INFERENCE = "_workbench_ops"  # population inference ops (Apache-2.0 code only)
EMULATION = "_workbench_atari_ops"  # Atari emulation ops (links ALE, GPL-2.0-only)
MUJOCO = "_workbench_mujoco_ops"  # MuJoCo physics ops (links the installed libmujoco, Apache-2.0)
_lock = threading.Lock()
_libraries: dict[str, Any] = {}
_components_checked: set[str] = set()  # libraries whose linked component was checked against the installed one


class OpsLibraryError(RuntimeError):
    """The compiled ops library is missing, stale or cannot be loaded."""


def library_path(name: str = INFERENCE) -> str | None:
    """Path of the compiled library `name` inside the package (or in $WORKBENCH_OPS_DIR), or None if it was never
    built."""
    directory = os.environ.get(OPS_DIR_VARIABLE) or os.path.dirname(os.path.abspath(__file__))
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        candidates = glob.glob(os.path.join(directory, name + suffix))
        if candidates:
            return candidates[0]
    return None


def build_record(path: str) -> dict[str, str]:
    """The build record of the library file as a dict (e.g. {"tensorflow": "2.21.0", "ale": "0.12.1"}), {} if none."""
    with open(path, "rb") as stream:
        match = _BUILD_INFO.search(stream.read())
    if not match:
        return {}
    return dict(item.split("=", 1) for item in match.group(1).decode().split(";") if item)


def built_for_tensorflow(path: str) -> str | None:
    """The TensorFlow version recorded in the library file, or None if it has no record."""
    return build_record(path).get("tensorflow")


def load_library(name: str = INFERENCE) -> Any:
    """Returns the loaded ops module `name`, loading and checking it on first use."""
    with _lock:
        if name not in _libraries:
            _libraries[name] = _load_checked(name)
        return _libraries[name]


def load_library_built_with(name: str, component: str, installed: Callable[[], str], mismatch: str) -> Any:
    """load_library(name), after checking once that its build record's `component` (e.g. "ale") is the version
    `installed()` returns; otherwise OpsLibraryError with `mismatch` formatted with {built} and {installed}."""
    library = load_library(name)
    if name not in _components_checked:
        path = library_path(name)
        assert path is not None  # load_library found it
        built, now = build_record(path).get(component), installed()
        if built != now:
            raise OpsLibraryError(mismatch.format(built=built, installed=now) + " " + REBUILD_HINT)
        _components_checked.add(name)
    return library


def _load_checked(name):
    path = library_path(name)
    if path is None:
        raise OpsLibraryError(
            f"The workbench ops library ({name}*.so) was not found in "
            f"{os.environ.get(OPS_DIR_VARIABLE) or 'workbench/ops'}: the package was installed without building its "
            "C++ ops. " + REBUILD_HINT
        )
    built_for = built_for_tensorflow(path)
    if built_for is None:
        raise OpsLibraryError(f"{path} carries no build record; it was not built by this project's setup.py. " + REBUILD_HINT)
    if built_for != tf.__version__:
        raise OpsLibraryError(
            f"{path} was built for TensorFlow {built_for}, but TensorFlow {tf.__version__} is running. " + REBUILD_HINT
        )
    try:
        return tf.load_op_library(path)
    except (tf.errors.NotFoundError, tf.errors.AlreadyExistsError, OSError) as error:
        raise OpsLibraryError(f"TensorFlow could not load {path}: {error}. " + REBUILD_HINT) from error


def pure_tf_requested() -> bool:
    """True when the environment asks every op to run its pure-TF reference."""
    return os.environ.get(PURE_TF_VARIABLE, "").strip().lower() not in ("", "0", "false", "no")
