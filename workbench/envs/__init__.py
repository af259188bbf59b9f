"""Environment batches: many episodes stepped together, each environment addressed by index, in families.

Families (each a subpackage ending with one registration in the registry, families.py):
  atari/       AtariBatch: Atari games with the Deep GA preprocessing, emulated inside TensorFlow ops
               (backend "custom") or on ale-py (backend "reference")
  mujoco/      MujocoBatch: Gymnasium v5's MuJoCo locomotion tasks, simulated inside TensorFlow ops (backend
               "custom") or by Gymnasium itself (backend "reference")
  function/    black-box functions of the parameter vector (rastrigin-100, bbob-f8-i1-d20, registered ones):
               no batch, evaluated by workbench.evaluation.function_evaluator
  gymnasium/   GymBatch: any other Gymnasium id with vector observations (discrete or Box actions)

The shared floor:
  families.py        EnvFamily, register_env_family, find_env_family: which family a name is, and everything
                     the layers above ask a family instead of naming it
  batch.py           EnvBatch, the interface every batch keeps; optional features are the capabilities SCREEN,
                     RAM, IN_GRAPH, PHYSICS_STATE, BODY_POSITION, RENDER_STATES, FEET_CONTACT, GRAPH_STEPS
  simulator_batch.py SimulatorBatch, the template of a simulator family's batch over an ops backend and its twin
  backends.py        the choice between a family's ops backend and its reference twin
  contract.py        check_batch: checks a batch (any EnvBatch, yours too) against the contract they all keep
  rng.py             the episode seeds every family draws its starts from

make_batch(name, n) builds any of them from a name: "pong", "ALE/Pong-v5", "HalfCheetah-v5", "hopper", "CartPole-v1".
"""

from __future__ import annotations

from typing import Any

# the built-in families, in the order they register (the fallback family is asked last whatever its place)
from workbench.envs.atari import AtariBatch, AtariConfig, atari_game_ids, find_atari_game, resolve_atari_game  # noqa: I001
from workbench.envs.batch import (
    BODY_POSITION,
    CAPABILITIES,
    FEET_CONTACT,
    GRAPH_STEPS,
    IN_GRAPH,
    PHYSICS_STATE,
    RAM,
    RENDER_STATES,
    SCREEN,
    EnvBatch,
)
from workbench.envs.contract import BatchContractError, check_batch
from workbench.envs.families import (
    ENV_FAMILIES,
    FAMILY_FIELDS,
    EnvFamily,
    ProtocolSetup,
    env_family_names,
    find_env_family,
    register_env_family,
    unregister_env_family,
)
from workbench.envs.function import FunctionProblem, find_function_problem, register_function_problem, unregister_function_problem
from workbench.envs.gymnasium import GymBatch
from workbench.envs.mujoco import TASKS as MUJOCO_TASKS
from workbench.envs.mujoco import MujocoBatch, find_mujoco_task, resolve_mujoco_task
from workbench.envs.simulator_batch import SimulatorBatch


def env_family(name: str) -> str:
    """The name of the family `name` is in ("atari", "mujoco", "gymnasium", or a family registered since):
    find_env_family(name).name; TypeError or ValueError (with close matches) for anything else."""
    return find_env_family(name).name


def make_batch(name: str, batch_size: int, *, seed: int = 0, **kwargs: Any) -> EnvBatch:
    """A batch of the family that recognises `name` (find_env_family): AtariBatch for an Atari game, MujocoBatch
    for a MuJoCo task of the ops (Gymnasium id or short name), GymBatch for another Gymnasium id.

    max_episode_frames caps episodes for all (Atari: frames, no-ops included; MuJoCo and Gymnasium: steps).
    """
    return find_env_family(name).make_batch(name, batch_size, seed=seed, **kwargs)


__all__ = [
    "BODY_POSITION",
    "CAPABILITIES",
    "ENV_FAMILIES",
    "FEET_CONTACT",
    "FAMILY_FIELDS",
    "MUJOCO_TASKS",
    "PHYSICS_STATE",
    "RENDER_STATES",
    "GRAPH_STEPS",
    "IN_GRAPH",
    "RAM",
    "SCREEN",
    "AtariBatch",
    "AtariConfig",
    "BatchContractError",
    "EnvBatch",
    "EnvFamily",
    "FunctionProblem",
    "GymBatch",
    "MujocoBatch",
    "SimulatorBatch",
    "ProtocolSetup",
    "atari_game_ids",
    "check_batch",
    "env_family",
    "env_family_names",
    "find_atari_game",
    "find_env_family",
    "find_function_problem",
    "find_mujoco_task",
    "make_batch",
    "register_env_family",
    "register_function_problem",
    "resolve_atari_game",
    "resolve_mujoco_task",
    "unregister_env_family",
    "unregister_function_problem",
]
