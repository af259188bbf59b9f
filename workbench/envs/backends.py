"""The choice between a simulator family's ops backend and its reference twin (AtariBatch, MujocoBatch)."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

from workbench.checks import check_choice

BACKENDS = ("custom", "reference")  # workbench.ops.BACKENDS, named here so that importing the families stays light


def make_backend(backend: str | None, custom: Callable[[], Any], reference: Callable[[], Any], fallback: str) -> Any:
    """reference() for backend "reference" (or None with WORKBENCH_PURE_TF=1), else custom(); with backend None a
    missing or stale ops library falls back to reference() with the warning `fallback: <reason>`."""
    from workbench.ops import _loader  # TensorFlow: imported when a batch is built

    check_choice("backend", backend, BACKENDS, allow_none=True)
    if backend == "reference" or (backend is None and _loader.pure_tf_requested()):
        return reference()
    try:
        return custom()
    except _loader.OpsLibraryError as error:
        if backend == "custom":
            raise
        warnings.warn(f"{fallback}: {error}", stacklevel=4)
        return reference()
