"""The function family: black-box problems whose fitness is a function of the parameter vector itself (the
built-in sphere-N, ellipsoid-N, rastrigin-N, rosenbrock-N, COCO's bbob-fF-iI-dN, and the problems a user
registers: a simulator of their own, a supervised loss, an engineering model).

problems.py   FunctionProblem, the built-in functions, register_function_problem / find_function_problem

A function problem has no environments and no network: its model is "vector" (the genome's weights are the
parameter vector), and it is evaluated by workbench.evaluation.function_evaluator's FunctionEvaluator, which
this family names as its evaluator, so a run of one goes through the same trainer, checkpoints, dashboard and
Ray as any other (one "frame" is one evaluation of the objective). It has no presets.
"""

from __future__ import annotations

from typing import Any, NoReturn

from workbench.envs.families import EnvFamily, register_env_family
from workbench.envs.function.problems import (
    FunctionProblem,
    find_function_problem,
    function_problem,
    function_problem_names,
    register_function_problem,
    registered_function_problem,
    unregister_function_problem,
)

__all__ = [
    "FUNCTION",
    "FunctionProblem",
    "find_function_problem",
    "function_problem",
    "function_problem_names",
    "register_function_problem",
    "registered_function_problem",
    "unregister_function_problem",
]


def _find(name: str) -> str | None:
    return None if find_function_problem(name) is None else name


def _no_batch(name: str, batch_size: int, *, seed: int = 0, **options: Any) -> NoReturn:
    raise ValueError(
        f"{name} is a function problem: it has no environments to step or render (FunctionEvaluator evaluates it; "
        "replays, the agent viewer and virtual batch normalisation need an environment)"
    )


def function_run_defaults(env: str, preset_group: str) -> dict[str, Any]:
    """A function problem's run: the "vector" model, no observation normalisation, one "frame" per evaluation."""
    return dict(model="vector", model_options={}, observation_normalization=None, max_episode_frames=1)


FUNCTION = register_env_family(
    EnvFamily(
        name="function",
        description="black-box functions of the parameter vector (rastrigin-100, bbob-f8-i1-d20, your registered ones)",
        find=_find,
        names=function_problem_names,
        batch=_no_batch,
        models=("vector",),
        vector_observations=True,
        run_defaults=function_run_defaults,
        behaviour="parameters",
        evaluator="function_evaluator",
        environments=False,
    )
)
