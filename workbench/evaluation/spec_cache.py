"""What a process works out once per RunSpec and reuses: the observation shape of its environment (a batch
built to read it) and its parameter space (a model built to read its layers).

Keyed by the spec's fields that decide each value (the environment and its options; then the model, its
options and the noise table), never stored on the frozen spec: equal specs share the entries, and a spec
pickled to a Ray actor carries nothing built.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from workbench.evaluation.run_spec import RunSpec
    from workbench.evolution import ParameterSpace

_lock = threading.Lock()
_shapes: dict[tuple, tuple[int, ...]] = {}
_spaces: dict[tuple, ParameterSpace] = {}


def _options_key(options: Any) -> str:
    return repr(sorted(dict(options).items()))


def _environment_key(spec: RunSpec) -> tuple:
    return spec.env, _options_key(spec.env_options)


def _model_key(spec: RunSpec) -> tuple:
    return (*_environment_key(spec), spec.model, _options_key(spec.model_options), spec.noise_size, spec.noise_seed)


def observation_shape(spec: RunSpec, compute: Callable[[], Sequence[int]]) -> tuple[int, ...]:
    """The spec's observation shape, computed once per environment and options."""
    key = _environment_key(spec)
    with _lock:
        cached = _shapes.get(key)
    if cached is None:
        cached = remember_observation_shape(spec, compute())
    return cached


def remember_observation_shape(spec: RunSpec, shape: Sequence[int]) -> tuple[int, ...]:
    """Records a shape read elsewhere (an evaluator's model) so that observation_shape() need not build a batch."""
    shape = tuple(int(d) for d in shape)
    with _lock:
        _shapes[_environment_key(spec)] = shape
    return shape


def space(spec: RunSpec, compute: Callable[[], ParameterSpace]) -> ParameterSpace:
    """The spec's parameter space, computed once per environment, model and noise table."""
    key = _model_key(spec)
    with _lock:
        cached = _spaces.get(key)
    if cached is None:
        cached = compute()
        with _lock:
            cached = _spaces.setdefault(key, cached)
    return cached
