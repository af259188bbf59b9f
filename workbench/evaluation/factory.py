"""make_evaluator: the local evaluator of a RunSpec, whichever kind its environment family takes.

    evaluator = make_evaluator(spec, layout)     # Evaluator (pipelined episodes), or the family's own
                                                 # (FunctionEvaluator for a function problem)

The pipelined Evaluator runs every family with environments; a family that names an evaluator module of its
own (EnvFamily.evaluator) gets that module's from_spec(spec, layout). RunConfig.build, scoring and every Ray
actor build their local evaluator here, so a new kind of evaluator plugs in with its family alone.
"""

from __future__ import annotations

import functools
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


def worker_setup(spec: RunSpec, layout: EvaluatorLayout | None = None) -> Any:
    """What another process (a Ray actor) must call before make_evaluator(spec, layout) works there, or None: the
    family's evaluator module says (a function problem registered in this process registers it there), and a
    behaviour the user registered here (register_behaviour) is registered there too. A picklable callable."""
    from workbench.evaluation.behaviour import register_behaviour, registered_behaviour

    steps = []
    module = spec.evaluator_module()
    family_setup = getattr(module, "worker_setup", None)
    if family_setup is not None and (step := family_setup(spec)) is not None:
        steps.append(step)
    behaviour = registered_behaviour(None if layout is None else layout.behaviour)
    if behaviour is not None:
        steps.append(functools.partial(register_behaviour, behaviour, replace=True))
    if not steps:
        return None
    return steps[0] if len(steps) == 1 else functools.partial(_in_turn, tuple(steps))


def _in_turn(steps: tuple) -> None:
    for step in steps:
        step()
