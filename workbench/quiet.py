"""Quiet start-up for the command line and the benchmarks: TensorFlow imported without its log lines.

TensorFlow 2.21 prints several lines to stderr while it loads (oneDNN, CPU
features, absl) before any Python logging exists, and TF_CPP_MIN_LOG_LEVEL does
not reach all of them. quiet_tensorflow() sets the log levels and imports
TensorFlow with the process's stderr pointed at /dev/null for the import only;
`verbose=True` leaves everything as TensorFlow does it.
"""

from __future__ import annotations

import os
import sys


def quiet_tensorflow(verbose: bool = False) -> None:
    """Imports TensorFlow now, silently unless `verbose` (call before anything else imports it)."""
    if verbose or "tensorflow" in sys.modules:
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
