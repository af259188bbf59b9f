"""GymBatch: any Gymnasium environment with vector observations and discrete or Box actions as an EnvBatch.

For fast tutorials and tests (CartPole, Acrobot, LunarLander...), and any continuous-control task
through Python (Pendulum, MountainCarContinuous, BipedalWalker...; the MuJoCo tasks run far faster
in MujocoBatch):

    batch = GymBatch("CartPole-v1", 16, seed=0)
    obs = batch.reset()                     # float32 [16, 4]
    rewards, done = batch.step([0, 1], [1, 0])

done is terminated or truncated (the environment's own time limit, or
max_episode_frames when given: one frame per step here; Gymnasium's spelling
max_episode_steps is accepted too).
"""

from __future__ import annotations

import numpy as np

from workbench.checks import check_optional_positive_int, close_matches
from workbench.envs.batch import SCREEN, EnvBatch, Indices


def _make_env(env_id, max_episode_steps, render_mode, kwargs):
    import gymnasium

    try:
        return gymnasium.make(env_id, max_episode_steps=max_episode_steps, render_mode=render_mode, **kwargs)
    except gymnasium.error.Error as error:
        if env_id not in gymnasium.registry:
            suggestions = close_matches(env_id, list(gymnasium.registry))
            hint = f" Did you mean: {', '.join(suggestions)}?" if suggestions else ""
            raise ValueError(f"env_id {env_id!r} is not a registered Gymnasium environment.{hint}") from error
        raise


class GymBatch(EnvBatch):
    """batch_size copies of a Gymnasium environment behind the EnvBatch interface."""

    observation_dtype = np.float32

    def __init__(
        self,
        env_id: str,
        batch_size: int,
        *,
        seed: int = 0,
        max_episode_frames: int | None = None,
        render_mode: str | None = None,
        max_episode_steps: int | None = None,
        **kwargs: object,
    ) -> None:
        import gymnasium

        super().__init__(batch_size, seed)
        if not isinstance(env_id, str):
            raise TypeError(f"env_id must be a string such as 'CartPole-v1', got {type(env_id).__name__}")
        if max_episode_steps is not None:
            if max_episode_frames is not None:
                raise ValueError("give max_episode_frames or its Gymnasium spelling max_episode_steps, not both")
            check_optional_positive_int("max_episode_steps", max_episode_steps)
            max_episode_frames = max_episode_steps
        max_episode_steps = check_optional_positive_int("max_episode_frames", max_episode_frames)
        self.env_id = env_id
        self.envs = [_make_env(env_id, max_episode_steps, render_mode, kwargs) for _ in range(self.batch_size)]
        space = self.envs[0].observation_space
        if not isinstance(space, gymnasium.spaces.Box):
            self.close()
            raise ValueError(f"env_id {env_id!r} has {space} observations; GymBatch needs vector (Box) observations")
        actions = self.envs[0].action_space
        if isinstance(actions, gymnasium.spaces.Discrete):
            self.num_actions = int(actions.n)
            self._action_start = int(actions.start)
        elif isinstance(actions, gymnasium.spaces.Box) and len(actions.shape) == 1:
            self.action_size = int(actions.shape[0])
            self.action_low = actions.low.astype(np.float32)
            self.action_high = actions.high.astype(np.float32)
        else:
            self.close()
            raise ValueError(f"env_id {env_id!r} has {actions} actions; GymBatch needs discrete or vector (Box) actions")
        self.observation_shape = tuple(space.shape)
        self._observations = np.zeros((self.batch_size,) + self.observation_shape, np.float32)
        self._returns = np.zeros(self.batch_size, np.float32)
        self._steps = np.zeros(self.batch_size, np.int32)
        self._truncated = np.zeros(self.batch_size, bool)

    def __repr__(self):
        return f"GymBatch({self.env_id!r}, {self.batch_size})"

    def _reset(self, indices, seeds):
        for i, seed in zip(indices, seeds):
            observation, _ = self.envs[i].reset(seed=int(seed) % (1 << 63))
            self._observations[i] = observation
        self._returns[indices] = 0
        self._steps[indices] = 0
        self._truncated[indices] = False

    def _step(self, indices, actions):
        rewards = np.zeros(len(indices), np.float32)
        done = np.zeros(len(indices), bool)
        for k, (i, action) in enumerate(zip(indices, actions)):
            action = (
                action.astype(self.envs[i].action_space.dtype) if self.continuous_actions else (int(action) + self._action_start)
            )
            observation, reward, terminated, truncated, _ = self.envs[i].step(action)
            self._observations[i] = observation
            rewards[k] = reward
            done[k] = terminated or truncated
            self._truncated[i] = truncated and not terminated
        self._returns[indices] += rewards
        self._steps[indices] += 1
        return rewards, done

    def _observation(self, indices):
        return self._observations[indices].copy()

    def _close(self):
        for env in self.envs:
            env.close()
        self.envs = []

    def status(self, indices: Indices = None) -> dict[str, np.ndarray]:
        """dict of [n] arrays: episode_steps, episode_return, done, truncated."""
        indices = self.check_indices(indices)
        return {
            "episode_steps": self._steps[indices].copy(),
            "episode_return": self._returns[indices].copy(),
            "done": self._done[indices].copy(),
            "truncated": self._truncated[indices].copy(),
        }

    @property
    def capabilities(self) -> frozenset:
        """screen when built with render_mode="rgb_array"."""
        return frozenset({SCREEN} if self.envs and self.envs[0].render_mode == "rgb_array" else ())

    def episode_frames(self, indices: Indices = None) -> np.ndarray:
        """Steps of the current episodes so far (one frame per step)."""
        return self._steps[self.check_indices(indices)].astype(np.int64)

    def screen(self, indices: Indices = None) -> np.ndarray:
        """RGB frames [n, H, W, 3]; needs render_mode="rgb_array" at construction."""
        indices = self.check_indices(indices)
        if self.envs[0].render_mode != "rgb_array":
            raise ValueError('screen() needs GymBatch(..., render_mode="rgb_array")')
        return np.stack([self.envs[i].render() for i in indices])
