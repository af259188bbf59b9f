"""The custom-op Atari backend: emulators inside a TensorFlow resource (workbench.ops.atari_env).

The resource is freed when the backend is closed or garbage-collected.
"""
import weakref

import tensorflow as tf

from workbench.ops import atari_env


class OpsAtariBackend:
    """Emulators of one game stepped by the ops on TF's intra-op thread pool."""

    name = "custom"

    def __init__(self, config, batch_size):
        self.handle, action_set = atari_env.create(
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
        self.action_set = action_set.numpy()
        self._finalizer = weakref.finalize(self, atari_env.destroy, self.handle)
        self._finalizer.atexit = False  # TensorFlow may be torn down by then; the process frees all

    @staticmethod
    def _indices(indices):
        return tf.constant(indices, tf.int32)

    def reset(self, indices, seeds):
        return atari_env.reset(self.handle, self._indices(indices), tf.constant(seeds, tf.int64)).numpy()

    def step(self, indices, actions):
        rewards, done = atari_env.step(self.handle, self._indices(indices), tf.constant(actions, tf.int32))
        return rewards.numpy(), done.numpy()

    def step_and_observe(self, indices, actions):
        values = atari_env.step_and_observe(self.handle, self._indices(indices), tf.constant(actions, tf.int32))
        return tuple(value.numpy() for value in values)

    def observation(self, indices):
        return atari_env.observation(self.handle, self._indices(indices)).numpy()

    def screen(self, indices):
        return atari_env.screen(self.handle, self._indices(indices)).numpy()

    def ram(self, indices):
        return atari_env.ram(self.handle, self._indices(indices)).numpy()

    def status(self, indices):
        values = atari_env.status(self.handle, self._indices(indices))
        names = ("lives", "episode_frames", "episode_return", "done", "truncated")
        return {name: value.numpy() for name, value in zip(names, values)}

    def close(self):
        self._finalizer()  # destroys the resource once
