"""The custom-op MuJoCo backend: simulations inside a TensorFlow resource (workbench.ops.mujoco_env).

The resource is freed when the backend is closed or garbage-collected.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from workbench.envs.mujoco.tasks import FLAGS, INFO_TERMS, MujocoTask
from workbench.ops import mujoco_env
from workbench.ops._resources import OwnedResource


class OpsMujocoBackend(OwnedResource):
    """Simulations of one task stepped by the ops on TF's intra-op thread pool."""

    name = "custom"

    def __init__(self, task: MujocoTask, settings: dict, batch_size: int, max_episode_steps: int, main_body: int) -> None:
        flags = {name: settings[name] for name in FLAGS if name in settings}
        handle, sizes, ctrl_range = mujoco_env.create(
            task.gymnasium_id,
            task.xml_path(settings),
            batch_size,
            task.parameters(settings),
            frame_skip=settings["frame_skip"],
            max_episode_steps=max_episode_steps,
            main_body=main_body,
            **flags,
        )
        self._own(handle)
        self.observation_size, self.action_size, self.nq, self.nv = (int(v) for v in sizes.numpy())
        self.ctrl_range = ctrl_range.numpy()

    def reset(self, indices: np.ndarray, seeds: np.ndarray) -> np.ndarray:
        return mujoco_env.reset(self.handle, self._indices(indices), tf.constant(seeds, tf.int64)).numpy()

    def step(self, indices: np.ndarray, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        values = mujoco_env.step(self.handle, self._indices(indices), tf.constant(actions, tf.float32))
        return tuple(value.numpy() for value in values)

    def step_and_observe(self, indices: np.ndarray, actions: np.ndarray) -> tuple[np.ndarray, ...]:
        values = mujoco_env.step_and_observe(self.handle, self._indices(indices), tf.constant(actions, tf.float32))
        return tuple(value.numpy() for value in values)

    def observation(self, indices: np.ndarray) -> np.ndarray:
        return mujoco_env.observation(self.handle, self._indices(indices)).numpy()

    def status(self, indices: np.ndarray) -> dict[str, np.ndarray]:
        returns, lengths, terminated, truncated, unstable, info = (
            value.numpy() for value in mujoco_env.status(self.handle, self._indices(indices))
        )
        status = dict(
            episode_return=returns, episode_steps=lengths, terminated=terminated, truncated=truncated, unstable=unstable
        )
        status.update({name: info[:, k] for k, name in enumerate(INFO_TERMS)})
        return status

    def physics_state(self, indices: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        qpos, qvel, xy = mujoco_env.state(self.handle, self._indices(indices))
        return qpos.numpy(), qvel.numpy(), xy.numpy()

    def feet_contact(self, indices: np.ndarray) -> np.ndarray:
        return mujoco_env.feet_contact(self.handle, self._indices(indices)).numpy()

    def set_physics_state(self, indices: np.ndarray, qpos: np.ndarray, qvel: np.ndarray) -> np.ndarray:
        return mujoco_env.set_state(
            self.handle, self._indices(indices), tf.constant(qpos, tf.float64), tf.constant(qvel, tf.float64)
        ).numpy()
