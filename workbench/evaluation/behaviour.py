"""Behaviour characterisations (BCs) for novelty search: what an episode did, as a vector.

A BC function is called as fn(env, index) when the episode in environment
`index` of the EnvBatch `env` ends, and returns a 1-D array of finite numbers
(the same length every time). Built in:
  "final_ram"          the 128 bytes of Atari RAM at the end (Conti et al. 2018)
  "final_observation"  the last observation, flattened (e.g. CartPole's state)
  "final_position"     the main body's final (x, y) (MuJoCo locomotion: the torso; Conti et al. 2018's humanoid BC)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from workbench.envs.batch import BODY_POSITION, RAM, EnvBatch


def final_ram(env: EnvBatch, index: int) -> np.ndarray:
    if not env.supports(RAM):
        raise ValueError(f'behaviour "final_ram" needs an Atari batch (the RAM capability), got {type(env).__name__}')
    return env.ram([index])[0].astype(np.float64)


def final_observation(env: EnvBatch, index: int) -> np.ndarray:
    return np.asarray(env.observation([index])[0], np.float64).ravel()


def final_position(env: EnvBatch, index: int) -> np.ndarray:
    if not env.supports(BODY_POSITION):
        raise ValueError(
            f'behaviour "final_position" needs a MuJoCo batch (the BODY_POSITION capability), got {type(env).__name__}'
        )
    return np.asarray(env.body_position([index])[0], np.float64)


BUILT_IN = {"final_ram": final_ram, "final_observation": final_observation, "final_position": final_position}


def behaviour_function(spec: str | Callable | None) -> Callable[[EnvBatch, int], Any] | None:
    """The BC function of `spec`: a built-in name, a callable fn(env, index), or None (no BCs)."""
    if spec is None or callable(spec):
        return spec
    if isinstance(spec, str) and spec in BUILT_IN:
        return BUILT_IN[spec]
    raise ValueError(f"behaviour must be one of {sorted(BUILT_IN)}, a callable fn(env, index) or None, got {spec!r}")


def checked_behaviour(value: Any, dimensions: int | None, where: str) -> np.ndarray:
    """A BC as a finite float64 vector, of `dimensions` entries when given."""
    vector = np.asarray(value, np.float64)
    if vector.ndim != 1 or vector.size == 0:
        raise ValueError(f"the behaviour function must return a non-empty 1-D array ({where}), got shape {vector.shape}")
    if dimensions is not None and vector.size != dimensions:
        raise ValueError(f"the behaviour function returned {vector.size} values ({where}), earlier {dimensions}")
    if not np.isfinite(vector).all():
        raise ValueError(f"the behaviour function returned non-finite values ({where})")
    return vector
