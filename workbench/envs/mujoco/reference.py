"""The reference MuJoCo backend: Gymnasium's own v5 environments, stepped from Python.

The twin of the ops (tests/envs/test_mujoco_env.py compares them): the same Gymnasium task code computes
observations, rewards and terminations; the two things the ops define themselves are mirrored here:

  reset noise   after Gymnasium's reset, the physics is reset again (mj_resetData) and put at
                qpos0 + noise, qvel0 + noise drawn from SplitMix64(seed) (workbench.envs.rng): nq values
                for qpos, then nv for qvel, uniform in +-scale, or scale * N(0, 1) for the velocities
                of the tasks whose Gymnasium noise is normal (HalfCheetah, Ant); then mj_forward.
  instability   a step after which MuJoCo counted a bad qpos/qvel/qacc warning, or a step, reset or
                set_physics_state whose observation is not finite in float32, ends the episode:
                truncated, flagged unstable, reward 0, observation zeros, info NaN.
  length        observations have the length of Gymnasium's _get_obs() on the model, which on a
                foreign model (xml_file) can exceed its declared observation_space.

Slow (one Python environment per simulation), but exact; the fallback when the ops library is missing.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from workbench.envs.mujoco.tasks import INFO_TERMS, MujocoTask
from workbench.envs.rng import SplitMix64


def reset_noise(task: MujocoTask, settings: dict, qpos0: np.ndarray, nv: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(qpos, qvel) of a reset with `seed`: the draws of MujocoSimulation::Reset in the ops, in Python."""
    rng = SplitMix64(int(seed) & ((1 << 64) - 1))
    scale = float(settings["reset_noise_scale"])
    low, high = -scale, scale
    qpos = np.array([q + (low + (high - low) * rng.uniform()) for q in qpos0], np.float64)
    if task.normal_velocity_noise:
        qvel = np.array([0.0 + scale * rng.normal() for _ in range(nv)], np.float64)
    else:
        qvel = np.array([0.0 + (low + (high - low) * rng.uniform()) for _ in range(nv)], np.float64)
    return qpos, qvel


def _float32(observation):
    with np.errstate(over="ignore"):  # beyond float32 becomes inf: unstable
        return np.asarray(observation).astype(np.float32)


class ReferenceMujocoBackend:
    """One gymnasium.make(task.id) per simulation, behind the same calls as OpsMujocoBackend."""

    name = "reference"

    def __init__(self, task: MujocoTask, settings: dict, batch_size: int, max_episode_steps: int, main_body: int) -> None:
        import gymnasium
        import mujoco

        self._mujoco = mujoco
        self.task, self.settings, self.main_body = task, settings, main_body
        kwargs = dict(settings, main_body=main_body) if "main_body" in settings else dict(settings)
        kwargs["xml_file"] = task.xml_path(settings)
        self.envs: list[Any] = [
            gymnasium.make(task.gymnasium_id, max_episode_steps=max_episode_steps, **kwargs) for _ in range(batch_size)
        ]
        model = self.envs[0].unwrapped.model
        self.nq, self.nv, self.action_size = int(model.nq), int(model.nv), int(model.nu)
        self.observation_size = int(self.envs[0].unwrapped._get_obs().size)  # not observation_space (module doc)
        limited = model.actuator_ctrllimited.astype(bool)
        self.ctrl_range = np.where(limited[:, None], model.actuator_ctrlrange, [-np.inf, np.inf]).astype(np.float32)
        self._observations = np.zeros((batch_size, self.observation_size), np.float32)
        self._returns = np.zeros(batch_size, np.float64)
        self._steps = np.zeros(batch_size, np.int32)
        self._terminated = np.zeros(batch_size, bool)
        self._truncated = np.zeros(batch_size, bool)
        self._unstable = np.zeros(batch_size, bool)
        self._info = np.full((batch_size, len(INFO_TERMS)), np.nan)
        self._foot_geoms = [int(mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_GEOM, name)) for name in task.feet]
        self._foot_contact_steps = np.zeros((batch_size, len(task.feet)), np.int64)
        self._instability = [
            int(w) for w in (mujoco.mjtWarning.mjWARN_BADQPOS, mujoco.mjtWarning.mjWARN_BADQVEL, mujoco.mjtWarning.mjWARN_BADQACC)
        ]

    def _warnings(self, env):
        data = env.unwrapped.data
        return [int(data.warning[k].number) for k in self._instability]

    def reset(self, indices: np.ndarray, seeds: np.ndarray) -> np.ndarray:
        for i, seed in zip(indices, seeds):
            env = self.envs[i]
            env.reset(seed=int(seed) % (1 << 63))
            raw = env.unwrapped
            self._mujoco.mj_resetData(raw.model, raw.data)
            qpos, qvel = reset_noise(self.task, self.settings, raw.model.qpos0, self.nv, int(seed))
            raw.set_state(qpos, qvel)
            self._returns[i], self._steps[i] = 0.0, 0
            self._foot_contact_steps[i] = 0
            self._terminated[i] = self._truncated[i] = self._unstable[i] = False
            self._info[i] = np.nan
            if self._observe(i):
                self._reset_info(i)
        return self._observations[indices].copy()

    def _observe(self, i):
        """Keeps simulation i's observation; a non-finite one ends the episode as unstable. True if finite."""
        observation = _float32(self.envs[i].unwrapped._get_obs())
        if np.all(np.isfinite(observation)):
            self._observations[i] = observation
            return True
        self._observations[i] = 0.0
        self._truncated[i] = self._unstable[i] = True
        self._info[i] = np.nan
        return False

    def _reset_info(self, i):
        qpos = self.envs[i].unwrapped.data.qpos
        names = set(self.task.info)
        for k, name in enumerate(INFO_TERMS):
            if name == "x_position" and name in names:
                self._info[i, k] = qpos[0]
            elif name == "y_position" and name in names:
                self._info[i, k] = qpos[1]
            elif name == "distance_from_origin" and name in names:
                self._info[i, k] = np.linalg.norm(qpos[0:2], ord=2)
            elif name == "z_distance_from_origin" and name in names:
                self._info[i, k] = qpos[1] - self.envs[i].unwrapped.init_qpos[1]

    def step(self, indices: np.ndarray, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        rewards = np.zeros(len(indices), np.float32)
        for k, (i, action) in enumerate(zip(indices, actions)):
            env = self.envs[i]
            before = self._warnings(env)
            observation, reward, terminated, truncated, info = env.step(np.asarray(action, np.float32))
            self._steps[i] += 1
            observation = _float32(observation)
            unstable = self._warnings(env) != before or not np.all(np.isfinite(observation))
            if unstable:
                observation, reward, terminated, truncated, info = np.zeros_like(observation), 0.0, False, True, {}
            else:
                self._count_feet_contact(i)
            self._observations[i] = observation
            self._terminated[i], self._truncated[i], self._unstable[i] = terminated, truncated, unstable
            self._returns[i] += float(reward)
            self._info[i] = [float(info[name]) if name in info else np.nan for name in INFO_TERMS]
            rewards[k] = reward
        return rewards, self._terminated[indices].copy(), self._truncated[indices].copy()

    def _count_feet_contact(self, i):
        """Adds the step to every foot of simulation i that touches a geom of the world body (the ground) now."""
        raw = self.envs[i].unwrapped
        pairs = np.asarray(raw.data.contact.geom, np.int64).reshape(-1, 2)[: raw.data.ncon]
        grounded = raw.model.geom_bodyid[pairs] == 0  # [ncon, 2]: which side is a geom of the world body
        for f, foot in enumerate(self._foot_geoms):
            if ((pairs[:, 0] == foot) & grounded[:, 1]).any() or ((pairs[:, 1] == foot) & grounded[:, 0]).any():
                self._foot_contact_steps[i, f] += 1

    def feet_contact(self, indices: np.ndarray) -> np.ndarray:
        steps = self._steps[indices].astype(np.float64)[:, None]
        counts = self._foot_contact_steps[indices].astype(np.float64)
        return np.divide(counts, steps, out=np.zeros_like(counts), where=steps > 0)

    def step_and_observe(self, indices: np.ndarray, actions: np.ndarray) -> tuple[np.ndarray, ...]:
        return (*self.step(indices, actions), self._observations[indices].copy())

    def observation(self, indices: np.ndarray) -> np.ndarray:
        return self._observations[indices].copy()

    def status(self, indices: np.ndarray) -> dict[str, np.ndarray]:
        status = dict(
            episode_return=self._returns[indices].copy(),
            episode_steps=self._steps[indices].copy(),
            terminated=self._terminated[indices].copy(),
            truncated=self._truncated[indices].copy(),
            unstable=self._unstable[indices].copy(),
        )
        status.update({name: self._info[indices, k].copy() for k, name in enumerate(INFO_TERMS)})
        return status

    def physics_state(self, indices: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        datas = [self.envs[i].unwrapped.data for i in indices]
        qpos = np.array([d.qpos for d in datas], np.float64).reshape(len(indices), self.nq)
        qvel = np.array([d.qvel for d in datas], np.float64).reshape(len(indices), self.nv)
        xy = np.array([d.xpos[self.main_body][:2] for d in datas], np.float64).reshape(len(indices), 2)
        return qpos, qvel, xy

    def set_physics_state(self, indices: np.ndarray, qpos: np.ndarray, qvel: np.ndarray) -> np.ndarray:
        for k, i in enumerate(indices):
            raw = self.envs[i].unwrapped
            raw.set_state(np.asarray(qpos[k], np.float64), np.asarray(qvel[k], np.float64))
            self._observe(i)
        return self._observations[indices].copy()

    def close(self) -> None:
        for env in self.envs:
            env.close()
        self.envs = []
