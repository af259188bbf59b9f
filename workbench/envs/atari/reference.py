"""The reference Atari backend: ale-py's ALEInterface per game, the protocol in Python, numpy preprocessing.

It implements the rules of ops/cc/kernels/atari_emulator.cc line by line (same
SplitMix64 draws, same frames grabbed, same integer resize), so for the same
seeds and actions it gives the same frames, rewards and observations as the
ops. It is slow (Python per frame) and is the fallback when the ops library is
not available.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from workbench.envs.atari.preprocessing import max_and_resize
from workbench.envs.rng import SplitMix64

NOOP, FIRE = 0, 1


def _quiet_ale():
    from ale_py import ALEInterface, LoggerMode

    ALEInterface.setLoggerMode(LoggerMode.Error)
    return ALEInterface


if TYPE_CHECKING:
    from workbench.envs.atari.config import AtariConfig


class _ReferenceEmulator:
    """One game; the Python twin of AtariEmulator (atari_emulator.cc)."""

    def __init__(self, config):
        from ale_py import Action

        self._Action = Action
        self.config = config
        self.ale = _quiet_ale()()
        self.ale.setInt("random_seed", 0)
        self.ale.setFloat("repeat_action_probability", 0.0)
        self.ale.setInt("frame_skip", 1)
        self.ale.setInt("max_num_frames_per_episode", 0)
        self.ale.loadROM(config.rom_path)
        self.pristine = self.ale.cloneState(include_rng=True)  # every episode restarts from the console as loaded
        self.action_set = [a.value for a in self.ale.getMinimalActionSet()]
        self.has_fire = FIRE in self.action_set
        self.sticky = float(np.float32(config.repeat_action_probability))  # the ops hold it as float32
        self.rng = SplitMix64()
        self.previous_action = NOOP
        self.started = self.terminated = self.truncated = False
        self.episode_return = np.float32(0)
        self.stack = None

    @property
    def done(self):
        return self.terminated or self.truncated

    def _act_frame(self, action):
        self.previous_action = action
        return self.ale.act(self._Action(action))

    def _update_flags(self):
        self.terminated = self.ale.game_over(with_truncation=False)
        cap = self.config.max_episode_frames
        self.truncated = not self.terminated and cap is not None and self.ale.getEpisodeFrameNumber() >= cap

    def _frame(self, screens):
        """The max of the last two screens of a call (one screen: itself), resized."""
        newest = screens[-1]
        previous = screens[-2] if len(screens) > 1 else newest
        return max_and_resize(newest, previous, self.config.screen_size)

    def reset(self, seed):
        self.ale.restoreState(self.pristine)
        self.ale.reset_game()
        self.rng = SplitMix64(seed)
        self.started = True
        self.terminated = self.truncated = False
        self.episode_return = np.float32(0)
        self.previous_action = NOOP
        screens = [self.ale.getScreenGrayscale()]
        noop_max = self.config.noop_max
        noops = 1 + self.rng.next() % noop_max if noop_max > 0 else 0
        running = True
        for _ in range(noops):
            self._act_frame(NOOP)
            screens.append(self.ale.getScreenGrayscale())
            self._update_flags()
            if self.done:
                running = False
                break
        if running and self.config.fire_reset and self.has_fire:
            self._act_frame(FIRE)
            screens.append(self.ale.getScreenGrayscale())
            self._update_flags()
        self.stack = np.repeat(self._frame(screens)[None], self.config.stack_size, axis=0)

    def step(self, action):
        requested = self.action_set[action]
        sticky = self.sticky
        skip = self.config.frame_skip
        reward = 0
        screens = []
        for f in range(skip):
            applied = requested
            if sticky > 0.0 and self.rng.uniform() < sticky:
                applied = self.previous_action
            reward += self._act_frame(applied)
            self._update_flags()
            if f >= skip - 2 or self.done:
                screens.append(self.ale.getScreenGrayscale())
            if self.done:
                break
        self.stack = np.concatenate([self.stack[1:], self._frame(screens)[None]])
        self.episode_return = np.float32(self.episode_return + np.float32(reward))
        return np.float32(reward)

    def observation(self):
        return np.ascontiguousarray(np.moveaxis(self.stack, 0, -1))


class ReferenceAtariBackend:
    """Emulators of one game on ale-py, stepped one after the other."""

    name = "reference"

    def __init__(self, config: AtariConfig, batch_size: int) -> None:
        self.emulators = [_ReferenceEmulator(config) for _ in range(batch_size)]
        self.action_set = np.array(self.emulators[0].action_set, np.int32)

    def reset(self, indices: np.ndarray, seeds: np.ndarray) -> np.ndarray:
        for i, seed in zip(indices, seeds):
            self.emulators[i].reset(int(seed))
        return np.array([self.emulators[i].done for i in indices], bool)

    def step(self, indices: np.ndarray, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        rewards = np.array([self.emulators[i].step(int(a)) for i, a in zip(indices, actions)], np.float32)
        return rewards, np.array([self.emulators[i].done for i in indices], bool)

    def step_and_observe(self, indices: np.ndarray, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        rewards, done = self.step(indices, actions)
        return rewards, done, self.observation(indices)

    def observation(self, indices: np.ndarray) -> np.ndarray:
        return np.stack([self.emulators[i].observation() for i in indices])

    def screen(self, indices: np.ndarray) -> np.ndarray:
        return np.stack([self.emulators[i].ale.getScreenRGB() for i in indices])

    def ram(self, indices: np.ndarray) -> np.ndarray:
        return np.stack([self.emulators[i].ale.getRAM() for i in indices])

    def status(self, indices: np.ndarray) -> dict[str, np.ndarray]:
        emulators = [self.emulators[i] for i in indices]
        return {
            "lives": np.array([e.ale.lives() for e in emulators], np.int32),
            "episode_frames": np.array([e.ale.getEpisodeFrameNumber() for e in emulators], np.int32),
            "episode_return": np.array([e.episode_return for e in emulators], np.float32),
            "done": np.array([e.done for e in emulators], bool),
            "truncated": np.array([e.truncated for e in emulators], bool),
        }

    def close(self) -> None:
        self.emulators = []
