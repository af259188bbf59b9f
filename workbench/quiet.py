"""Quiet start-up for the command line and the benchmarks: TensorFlow imported without its log lines.

TensorFlow 2.21 prints several lines to stderr while it loads (oneDNN, CPU
features, absl) before any Python logging exists, and TF_CPP_MIN_LOG_LEVEL does
not reach all of them. quiet_tensorflow() sets the log levels and imports
TensorFlow with the process's stderr pointed at /dev/null for the import only;
`verbose=True` leaves everything as TensorFlow does it.

It also leaves Keras out: TensorFlow 2.21 imports Keras eagerly, about 2 s of a
4 s import, and nothing in the workbench uses Keras (skip_keras says how).
"""

from __future__ import annotations

import os
import sys

SKIP_KERAS = ("TF_USE_LEGACY_KERAS", "1")  # the variable and value skip_keras sets


def skip_keras() -> None:
    """TensorFlow then starts without importing Keras, in this process and the ones it starts (Ray actors,
    subprocesses, notebook kernels): it is pointed at legacy Keras (tf_keras), which is not installed, so its eager
    import of Keras fails quietly and tf.keras stays unusable. A value the user set is kept."""
    os.environ.setdefault(*SKIP_KERAS)


def quiet_tensorflow(verbose: bool = False, keras: bool = False) -> None:
    """Imports TensorFlow now, silently unless `verbose`, without Keras unless `keras` (call before anything
    else imports it; once TensorFlow is imported, the first call has decided and later calls do nothing)."""
    if "tensorflow" in sys.modules:
        return
    if not keras:
        skip_keras()
    elif os.environ.get(SKIP_KERAS[0]) == SKIP_KERAS[1]:
        del os.environ[SKIP_KERAS[0]]  # tf.keras is wanted here (a parent process may have skipped it)
    if verbose:
        return
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    sys.stderr.flush()
    saved = os.dup(2)
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 2)
    try:
        import tensorflow  # noqa: F401
    finally:
        os.dup2(saved, 2)
        os.close(null)
        os.close(saved)
