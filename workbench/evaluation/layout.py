"""EvaluatorLayout: how an evaluator arranges its work, apart from what it evaluates (the RunSpec).

    layout = EvaluatorLayout(subpopulations=2, slots=16)
    Evaluator.from_spec(spec, layout)              # or RayEvaluator.from_spec(spec, layout, actors=2)

The one place the layout's fields, defaults and checks are written: the local Evaluator takes it, every Ray
actor's Evaluator takes the same, RunConfig makes it from a run's config (RunConfig.layout()). None of its
fields changes a result, except perturbed_rank (the factored forward pass rounds differently) and action_noise
(training-time exploration).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from workbench.checks import check_bool, check_int, check_positive_int, check_real


@dataclasses.dataclass(frozen=True)
class EvaluatorLayout:
    """subpopulations: sub-populations run side by side (1 = no pipelining, no threads). slots: episodes running
    at once in each. behaviour: behaviour characterisation for requests that ask for one (behaviour.py).
    perturbed_rank: run rank-r children through the op's perturbed mode (0 = materialise every genome).
    cache_bytes: bound of the decoder's cache of materialised parents. model_backend: backend of the model's
    ops (None: "reference" when TensorFlow sees a GPU, else the environment's choice). action_noise: standard
    deviation of Gaussian noise added to continuous actions (training-time exploration, seeded per episode).
    longest_first: start the episodes expected to be longest first (evaluation/schedule.py); either way the
    results are the same."""

    subpopulations: int = 2
    slots: int = 16
    behaviour: str | Callable | None = None
    perturbed_rank: int = 0
    cache_bytes: int = 2**30
    model_backend: str | None = None
    action_noise: float = 0.0
    longest_first: bool = True

    def __post_init__(self) -> None:
        check_positive_int("subpopulations", self.subpopulations)
        check_positive_int("slots", self.slots)
        check_int("perturbed_rank", self.perturbed_rank, 0)
        check_int("cache_bytes", self.cache_bytes, 0)
        check_real("action_noise", self.action_noise, 0)
        check_bool("longest_first", self.longest_first)

    @classmethod
    def from_options(cls, options: Mapping[str, Any], owner: str) -> EvaluatorLayout:
        """The layout of keyword arguments; TypeError from `owner` naming the unknown ones and the known ones."""
        unknown = set(options) - set(cls.names())
        if unknown:
            raise TypeError(f"{owner} got unknown keywords {sorted(unknown)}; the layout's are {list(cls.names())}")
        return cls(**options)

    @classmethod
    def names(cls) -> tuple[str, ...]:
        return tuple(field.name for field in dataclasses.fields(cls))
