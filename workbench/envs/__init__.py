"""Environment batches: many episodes stepped together, each environment addressed by index.

AtariBatch   Atari games with the Deep GA preprocessing, emulated inside TensorFlow ops
             (backend "custom") or on ale-py (backend "reference")
MujocoBatch  Gymnasium v5's MuJoCo locomotion tasks, simulated inside TensorFlow ops (backend
             "custom") or by Gymnasium itself (backend "reference")
GymBatch     any Gymnasium environment with vector observations (discrete or Box actions)
make_batch   any of them, from a name: "pong", "ALE/Pong-v5", "HalfCheetah-v5", "hopper", "CartPole-v1"
env_family   which of them a name is ("atari", "mujoco" or "gymnasium"), with close matches for a wrong name
EnvBatch     the interface they share; optional features are the capabilities SCREEN, RAM, IN_GRAPH,
             PHYSICS_STATE, BODY_POSITION, RENDER_STATES
SimulatorBatch  the template of a simulator family's batch (AtariBatch and MujocoBatch derive from it)
check_batch  checks a batch (any EnvBatch, yours too) against the contract they all keep
"""

from __future__ import annotations

from typing import Any

from workbench.envs.atari import AtariBatch
from workbench.envs.atari_config import AtariConfig
from workbench.envs.batch import (
    BODY_POSITION,
    CAPABILITIES,
    IN_GRAPH,
    PHYSICS_STATE,
    RAM,
    RENDER_STATES,
    SCREEN,
    EnvBatch,
)
from workbench.envs.contract import BatchContractError, check_batch
from workbench.envs.games import atari_game_ids, close_matches, find_atari_game, resolve_atari_game
from workbench.envs.gym_batch import GymBatch
from workbench.envs.mujoco import MujocoBatch
from workbench.envs.mujoco_tasks import TASKS as MUJOCO_TASKS
from workbench.envs.mujoco_tasks import find_mujoco_task, resolve_mujoco_task
from workbench.envs.simulator_batch import SimulatorBatch

ENV_FAMILIES = ("atari", "mujoco", "gymnasium")


def env_family(name: str) -> str:
    """Which family of ENV_FAMILIES `name` is: an Atari game of ale-py, one of the MuJoCo tasks of the ops (Gymnasium
    id or short name) or another Gymnasium id; TypeError or ValueError (with close matches) for anything else."""
    if not isinstance(name, str):
        raise TypeError(f"env must be a game or Gymnasium id string, got {type(name).__name__}")
    if find_atari_game(name) is not None:
        return "atari"
    if find_mujoco_task(name) is not None:
        return "mujoco"
    import gymnasium

    if name in gymnasium.registry:
        return "gymnasium"
    suggestions = close_matches(name, list(atari_game_ids()) + list(MUJOCO_TASKS) + list(gymnasium.registry))
    hint = f" Did you mean: {', '.join(suggestions)}?" if suggestions else ""
    raise ValueError(f"env {name!r} is neither an Atari game of ale-py, a MuJoCo task nor a Gymnasium id.{hint}")


def make_batch(name: str, batch_size: int, *, seed: int = 0, **kwargs: Any) -> EnvBatch:
    """An AtariBatch when `name` is an Atari game, a MujocoBatch when it is one of the MuJoCo tasks of the ops
    (Gymnasium id or short name), else a GymBatch of the Gymnasium id `name` (env_family).

    max_episode_frames caps episodes for all (Atari: frames, no-ops included; MuJoCo and Gymnasium: steps).
    """
    family = env_family(name)
    if family == "atari":
        return AtariBatch(name, batch_size, seed=seed, **kwargs)
    if family == "mujoco":
        return MujocoBatch(name, batch_size, seed=seed, **kwargs)
    return GymBatch(name, batch_size, seed=seed, **kwargs)


__all__ = [
    "BODY_POSITION",
    "CAPABILITIES",
    "ENV_FAMILIES",
    "MUJOCO_TASKS",
    "PHYSICS_STATE",
    "RENDER_STATES",
    "IN_GRAPH",
    "RAM",
    "SCREEN",
    "AtariBatch",
    "AtariConfig",
    "BatchContractError",
    "EnvBatch",
    "GymBatch",
    "MujocoBatch",
    "SimulatorBatch",
    "atari_game_ids",
    "check_batch",
    "env_family",
    "find_atari_game",
    "find_mujoco_task",
    "make_batch",
    "resolve_atari_game",
    "resolve_mujoco_task",
]
