"""The custom-op Atari backend: emulators inside a TensorFlow resource (workbench.ops.atari_env).

The resource is freed when the backend is closed or garbage-collected.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import tensorflow as tf

from workbench.ops import atari_env
from workbench.ops._resources import OwnedResource

if TYPE_CHECKING:
    from workbench.envs.atari.config import AtariConfig


class OpsAtariBackend(OwnedResource):
    """Emulators of one game stepped by the ops on TF's intra-op thread pool."""

    name = "custom"

    def __init__(self, config: AtariConfig, batch_size: int) -> None:
        handle, action_set = atari_env.create(
            config.rom_path,
            batch_size,
            frame_skip=config.frame_skip,
            noop_max=config.noop_max,
            repeat_action_probability=config.repeat_action_probability,
            max_episode_frames=config.max_episode_frames or 0,  # the ops take 0 for no cap
            fire_reset=config.fire_reset,
            screen_size=config.screen_size,
            stack_size=config.stack_size,
        )
        self._own(handle)
        self.action_set = action_set.numpy()

    def reset(self, indices: np.ndarray, seeds: np.ndarray) -> np.ndarray:
        return atari_env.reset(self.handle, self._indices(indices), tf.constant(seeds, tf.int64)).numpy()

    def step(self, indices: np.ndarray, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        rewards, done = atari_env.step(self.handle, self._indices(indices), tf.constant(actions, tf.int32))
        return rewards.numpy(), done.numpy()

    def step_and_observe(self, indices: np.ndarray, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        values = atari_env.step_and_observe(self.handle, self._indices(indices), tf.constant(actions, tf.int32))
        return tuple(value.numpy() for value in values)

    def observation(self, indices: np.ndarray) -> np.ndarray:
        return atari_env.observation(self.handle, self._indices(indices)).numpy()

    def screen(self, indices: np.ndarray) -> np.ndarray:
        return atari_env.screen(self.handle, self._indices(indices)).numpy()

    def ram(self, indices: np.ndarray) -> np.ndarray:
        return atari_env.ram(self.handle, self._indices(indices)).numpy()

    def status(self, indices: np.ndarray) -> dict[str, np.ndarray]:
        values = atari_env.status(self.handle, self._indices(indices))
        names = ("lives", "episode_frames", "episode_return", "done", "truncated")
        return {name: value.numpy() for name, value in zip(names, values)}
