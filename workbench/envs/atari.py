"""AtariBatch: a batch of Atari games with the Deep GA preprocessing, on the ops or on ale-py.

    batch = AtariBatch("pong", 32, seed=1)     # or "ALE/Pong-v5"
    obs = batch.reset()                          # uint8 [32, 84, 84, 4]
    rewards, done = batch.step(range(32), actions)

backend="custom" runs the emulators inside TensorFlow ops (fast, many games
stepped on TF's thread pool); "reference" runs ale-py from Python (slow, exact
twin of the ops); None (default) picks "custom" and falls back to "reference"
with a warning when the ops library cannot be loaded or WORKBENCH_PURE_TF=1.
"""
import warnings

import numpy as np

from workbench.envs.atari_config import AtariConfig
from workbench.envs.batch import EnvBatch
from workbench.ops import _loader

ATARI_BACKENDS = ("custom", "reference")


def _make_backend(backend, config, batch_size):
    from workbench.envs.atari_reference import ReferenceAtariBackend

    if backend is not None and backend not in ATARI_BACKENDS:
        raise ValueError(f"backend must be one of {ATARI_BACKENDS} or None, got {backend!r}")
    if backend == "reference" or (backend is None and _loader.pure_tf_requested()):
        return ReferenceAtariBackend(config, batch_size)
    try:
        from workbench.envs.atari_ops_backend import OpsAtariBackend

        return OpsAtariBackend(config, batch_size)
    except _loader.OpsLibraryError as error:
        if backend == "custom":
            raise
        warnings.warn(f"Atari emulation falls back to the slow ale-py reference backend: {error}", stacklevel=3)
        return ReferenceAtariBackend(config, batch_size)


class AtariBatch(EnvBatch):
    """batch_size emulators of one Atari game; see the module docstring and AtariConfig for the arguments."""

    observation_dtype = np.uint8
    has_screen = True

    def __init__(self, game, batch_size, *, frameskip=4, noop_max=30, repeat_action_probability=0.0,
                 max_num_frames_per_episode=108_000, fire_reset=True, screen_size=84, stack_size=4,
                 seed=0, backend=None):
        super().__init__(batch_size, seed)
        self.config = AtariConfig(
            game, frameskip=frameskip, noop_max=noop_max, repeat_action_probability=repeat_action_probability,
            max_num_frames_per_episode=max_num_frames_per_episode, fire_reset=fire_reset,
            screen_size=screen_size, stack_size=stack_size,
        )
        self._backend = _make_backend(backend, self.config, self.batch_size)
        self.action_set = np.asarray(self._backend.action_set, np.int32)
        self.num_actions = int(self.action_set.size)
        self.observation_shape = (screen_size, screen_size, stack_size)

    @property
    def game(self):
        return self.config.game

    @property
    def ops_handle(self):
        """The emulators' resource handle for use inside graphs (workbench.ops.atari_env), or None on ale-py."""
        return getattr(self._backend, "handle", None)

    @property
    def backend(self):
        """"custom" or "reference": the backend in use."""
        return self._backend.name

    @property
    def action_meanings(self):
        """Names of the actions (index i of an action = position in the minimal action set)."""
        from ale_py import Action

        return [Action(int(a)).name for a in self.action_set]

    def __repr__(self):
        return f"AtariBatch({self.game!r}, {self.batch_size}, backend={self.backend!r})"

    # Hooks of EnvBatch.
    def _reset(self, indices, seeds):
        return self._backend.reset(indices, seeds)  # done: a frame cap below the no-ops ends it at once

    def _step(self, indices, actions):
        return self._backend.step(indices, actions)

    def _observation(self, indices):
        return self._backend.observation(indices)

    def _step_and_observe(self, indices, actions):
        if hasattr(self._backend, "step_and_observe"):
            return self._backend.step_and_observe(indices, actions)
        return super()._step_and_observe(indices, actions)

    def _close(self):
        self._backend.close()

    # Atari extras.
    def screen(self, indices=None):
        """RGB screens uint8 [n, height, width, 3] (210x160 for most games) of the last frame, for dashboards and videos."""
        return self._backend.screen(self.check_indices(indices))

    def ram(self, indices=None):
        """Console RAM uint8 [n, 128] (a behaviour characterisation for novelty search)."""
        return self._backend.ram(self.check_indices(indices))

    def status(self, indices=None):
        """dict of [n] arrays: lives, episode_frames (no-ops included), episode_return, done, truncated."""
        return self._backend.status(self.check_indices(indices))

    def lives(self, indices=None):
        return self.status(indices)["lives"]

    def episode_frames(self, indices=None):
        return self.status(indices)["episode_frames"]
