"""make_evaluator: the local evaluator of a RunSpec, whichever kind its environment family takes.

    evaluator = make_evaluator(spec, layout)     # Evaluator (pipelined episodes), or the family's own
                                                 # (FunctionEvaluator for a function problem)

The pipelined Evaluator runs every family with environments; a family that names an evaluator module of its
own (EnvFamily.evaluator) gets that module's from_spec(spec, layout). RunConfig.build, scoring and every Ray
actor build their local evaluator here, so a new kind of evaluator plugs in with its family alone.
"""

from __future__ import annotations

from typing import Any

from workbench.checks import check_type
from workbench.evaluation.base import BaseEvaluator
from workbench.evaluation.layout import EvaluatorLayout
from workbench.evaluation.run_spec import RunSpec


def make_evaluator(spec: RunSpec, layout: EvaluatorLayout | None = None, **layout_options: Any) -> BaseEvaluator:
    """The local evaluator of `spec` with `layout` (an EvaluatorLayout, or its fields as keywords)."""
    check_type("spec", spec, RunSpec)
    if layout is None:
        layout = EvaluatorLayout.from_options(layout_options, "make_evaluator")
    elif layout_options:
        raise TypeError(f"make_evaluator got a layout and the layout keywords {sorted(layout_options)}")
    module = spec.evaluator_module()
    if module is not None:
        return module.from_spec(spec, layout)
    from workbench.evaluation.evaluator import Evaluator  # TensorFlow

    return Evaluator.from_spec(spec, layout)


def worker_setup(spec: RunSpec) -> Any:
    """What another process (a Ray actor) must call before make_evaluator(spec) works there, or None: the
    family's evaluator module says (a function problem registered in this process registers it there)."""
    module = spec.evaluator_module()
    setup = getattr(module, "worker_setup", None)
    return None if setup is None else setup(spec)
