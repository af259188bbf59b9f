"""AtariBatch: a batch of Atari games with the Deep GA preprocessing, on the ops or on ale-py.

    batch = AtariBatch("pong", 32, seed=1)     # or "ALE/Pong-v5"
    obs = batch.reset()                          # uint8 [32, 84, 84, 4]
    rewards, done = batch.step(range(32), actions)

Keywords use the workbench's names (frame_skip, max_episode_frames); ALE's spellings
(frameskip, max_num_frames_per_episode) are accepted too and mean the same.

backend="custom" runs the emulators inside TensorFlow ops (fast, many games
stepped on TF's thread pool); "reference" runs ale-py from Python (slow, exact
twin of the ops); None (default) picks "custom" and falls back to "reference"
with a warning when the ops library cannot be loaded or WORKBENCH_PURE_TF=1.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from workbench.envs.atari.config import ALE_SPELLINGS, AtariConfig
from workbench.envs.batch import RAM, SCREEN, Indices
from workbench.envs.simulator_batch import SimulatorBackend, SimulatorBatch


class AtariBackend(SimulatorBackend, Protocol):
    """What Atari's backends (OpsAtariBackend, ReferenceAtariBackend) add to the family template's protocol."""

    action_set: Any  # the game's minimal action set (ALE action ids)

    def screen(self, indices: np.ndarray) -> np.ndarray: ...

    def ram(self, indices: np.ndarray) -> np.ndarray: ...


class AtariBatch(SimulatorBatch):
    """batch_size emulators of one Atari game; see the module docstring and AtariConfig for the arguments."""

    observation_dtype = np.uint8
    family_capabilities = frozenset({SCREEN, RAM})
    ops_module = "atari_env"  # observe_in_graph: uint8 [n, size, size, stack]
    _backend: AtariBackend

    def __init__(
        self,
        game: str,
        batch_size: int,
        *,
        frame_skip: int = 4,
        noop_max: int = 30,
        repeat_action_probability: float = 0.0,
        max_episode_frames: int | None = 108_000,
        fire_reset: bool = True,
        screen_size: int = 84,
        stack_size: int = 4,
        seed: int = 0,
        backend: str | None = None,
        **ale_spellings: int | None,
    ) -> None:
        super().__init__(batch_size, seed)
        protocol: dict[str, Any] = dict(frame_skip=frame_skip, max_episode_frames=max_episode_frames)
        for spelling, value in ale_spellings.items():
            if spelling not in ALE_SPELLINGS:
                raise TypeError(f"AtariBatch got an unknown keyword {spelling!r}")
            protocol[ALE_SPELLINGS[spelling]] = value
        try:
            self.config = AtariConfig(
                game,
                noop_max=noop_max,
                repeat_action_probability=repeat_action_probability,
                fire_reset=fire_reset,
                screen_size=screen_size,
                stack_size=stack_size,
                **protocol,
            )
        except (TypeError, ValueError) as error:  # name the argument as the caller spelled it
            for spelling in ale_spellings:
                name = ALE_SPELLINGS[spelling]
                if str(error).startswith(name + " "):
                    raise type(error)(f"{spelling} ({name}){str(error)[len(name) :]}") from None
            raise
        screen_size, stack_size = self.config.screen_size, self.config.stack_size
        config, size = self.config, self.batch_size

        def custom():
            from workbench.envs.atari.ops_backend import OpsAtariBackend

            return OpsAtariBackend(config, size)

        def reference():
            from workbench.envs.atari.reference import ReferenceAtariBackend

            return ReferenceAtariBackend(config, size)

        self._start_backend(backend, custom, reference, "Atari emulation falls back to the slow ale-py reference backend")
        self.action_set = np.asarray(self._backend.action_set, np.int32)
        self.num_actions = int(self.action_set.size)
        self.observation_shape = (screen_size, screen_size, stack_size)

    @property
    def game(self) -> str:
        return self.config.game

    @property
    def action_meanings(self) -> list[str]:
        """Names of the actions (index i of an action = position in the minimal action set)."""
        from ale_py import Action

        return [Action(int(a)).name for a in self.action_set]

    def _label(self) -> str:
        return self.game

    # Hooks of EnvBatch.
    def _reset(self, indices, seeds):
        return self._backend.reset(indices, seeds)  # done: a frame cap below the no-ops ends it at once

    def _step(self, indices, actions):
        return self._backend.step(indices, actions)

    def _step_and_observe(self, indices, actions):
        return self._backend.step_and_observe(indices, actions)

    # Atari extras.
    def screen(self, indices: Indices = None) -> np.ndarray:
        """RGB screens uint8 [n, height, width, 3] (210x160 for most games) of the last frame, for dashboards and videos."""
        return self._backend.screen(self.check_indices(indices))

    def ram(self, indices: Indices = None) -> np.ndarray:
        """Console RAM uint8 [n, 128] (a behaviour characterisation for novelty search)."""
        return self._backend.ram(self.check_indices(indices))

    def status(self, indices: Indices = None) -> dict[str, np.ndarray]:
        """dict of [n] arrays: lives, episode_frames (no-ops included), episode_return, done, truncated."""
        return self._backend.status(self.check_indices(indices))

    def lives(self, indices: Indices = None) -> np.ndarray:
        return self.status(indices)["lives"]

    def episode_frames(self, indices: Indices = None) -> np.ndarray:
        return self.status(indices)["episode_frames"]
