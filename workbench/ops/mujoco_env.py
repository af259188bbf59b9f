"""Thin wrappers of the in-graph MuJoCo simulation ops (usable eagerly and inside tf.function).

A batch of simulations of one Gymnasium v5 task is a TensorFlow resource; each op touches only the
simulations at `indices` (int32 vector of distinct values), so episodes of different lengths never
wait for each other. Stepping runs on TF's intra-op thread pool, one simulation per task, without the
GIL. Most users want workbench.envs.MujocoBatch, which validates arguments and fills in the task's
settings; these are the building blocks for graphs (the evaluator).
"""

from __future__ import annotations

import importlib.metadata
from typing import Any

import tensorflow as tf

from workbench.ops import _loader
from workbench.ops._resources import destroy as destroy  # re-exported: the backends' finalizers call it


def installed_mujoco_version() -> str:
    """The version of the installed mujoco-core (the libmujoco the ops link and Gymnasium runs)."""
    return importlib.metadata.version("mujoco-core")


def _library():
    """The ops library, after checking that it was built against the installed MuJoCo."""
    return _loader.load_library_built_with(
        _loader.MUJOCO,
        "mujoco",
        installed_mujoco_version,
        "The MuJoCo ops library was built against MuJoCo {built}, but mujoco-core {installed} is installed.",
    )


def create(
    task: str,
    xml_path: str,
    batch_size: int,
    parameters: Any,
    *,
    frame_skip: int,
    max_episode_steps: int = 1000,
    terminate_when_unhealthy: bool = True,
    exclude_current_positions_from_observation: bool = True,
    include_cfrc_ext_in_observation: bool = True,
    include_cinert_in_observation: bool = True,
    include_cvel_in_observation: bool = True,
    include_qfrc_actuator_in_observation: bool = True,
    main_body: int = 1,
) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    """Creates the simulations; returns (handle, sizes [obs, action, nq, nv], ctrl_range float32 [action, 2]).

    parameters: float64 [15], the task's real settings in the order of workbench.envs.mujoco.tasks
    (SCALARS, then the (low, high) pairs of RANGES).
    """
    return _library().workbench_mujoco_env_create(
        parameters=tf.convert_to_tensor(parameters, tf.float64),
        task=task,
        xml_path=str(xml_path),
        batch_size=batch_size,
        frame_skip=frame_skip,
        max_episode_steps=max_episode_steps,
        terminate_when_unhealthy=terminate_when_unhealthy,
        exclude_current_positions_from_observation=exclude_current_positions_from_observation,
        include_cfrc_ext_in_observation=include_cfrc_ext_in_observation,
        include_cinert_in_observation=include_cinert_in_observation,
        include_cvel_in_observation=include_cvel_in_observation,
        include_qfrc_actuator_in_observation=include_qfrc_actuator_in_observation,
        main_body=main_body,
    )


def reset(handle: tf.Tensor, indices: Any, seeds: Any) -> tf.Tensor:
    """Starts a new episode in each simulation of indices (reset noise from the int64 seeds); returns observations."""
    return _library().workbench_mujoco_env_reset(handle=handle, indices=indices, seeds=seeds)


def step(handle: tf.Tensor, indices: Any, actions: Any) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    """One step with float32 actions [n, action size]; returns (rewards float32, terminated, truncated)."""
    return _library().workbench_mujoco_env_step(handle=handle, indices=indices, actions=actions)


def step_and_observe(handle: tf.Tensor, indices: Any, actions: Any) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor, tf.Tensor]:
    """step() and observation() in one op and one pass: (rewards, terminated, truncated, observations)."""
    return _library().workbench_mujoco_env_step_and_observe(handle=handle, indices=indices, actions=actions)


def observation(handle: tf.Tensor, indices: Any) -> tf.Tensor:
    """float32 [n, observation size] in Gymnasium v5's layout of the task."""
    return _library().workbench_mujoco_env_observation(handle=handle, indices=indices)


def status(handle: tf.Tensor, indices: Any) -> tuple[tf.Tensor, ...]:
    """(returns float64, lengths int32, terminated, truncated, unstable, info float64 [n, 10]) of the episodes."""
    return _library().workbench_mujoco_env_status(handle=handle, indices=indices)


def state(handle: tf.Tensor, indices: Any) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    """(qpos float64 [n, nq], qvel float64 [n, nv], main body (x, y) float64 [n, 2])."""
    return _library().workbench_mujoco_env_state(handle=handle, indices=indices)


def feet_contact(handle: tf.Tensor, indices: Any) -> tf.Tensor:
    """float64 [n, feet]: per foot, the share of the episode's steps that ended with it on the ground."""
    return _library().workbench_mujoco_env_feet_contact(handle=handle, indices=indices)


def set_state(handle: tf.Tensor, indices: Any, qpos: Any, qvel: Any) -> tf.Tensor:
    """Puts the simulations in the physics state (qpos, qvel), mj_forward; returns their observations."""
    return _library().workbench_mujoco_env_set_state(handle=handle, indices=indices, qpos=qpos, qvel=qvel)
