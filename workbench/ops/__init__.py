"""Custom TensorFlow ops for populations of networks, each with its own weights.

population_matmul / population_conv2d run batch entry b with the weights of
slot indices[b]; a LowRankPerturbation turns on the perturbed (EGGROLL) mode.
Set WORKBENCH_PURE_TF=1 to run every op through its pure-TF reference.
"""

from __future__ import annotations

from workbench.ops._loader import PURE_TF_VARIABLE, OpsLibraryError, load_library
from workbench.ops.population import (
    BACKENDS,
    LowRankPerturbation,
    assign_slots,
    population_conv2d,
    population_matmul,
    resolve_backend,
)

__all__ = [
    "BACKENDS",
    "PURE_TF_VARIABLE",
    "LowRankPerturbation",
    "OpsLibraryError",
    "assign_slots",
    "load_library",
    "population_conv2d",
    "population_matmul",
    "resolve_backend",
]
