"""Thin wrappers of the in-graph Atari emulator ops (usable eagerly and inside tf.function).

A batch of emulators of one game is a TensorFlow resource; each op touches
only the emulators at `indices` (int32 vector of distinct values), so episodes
of different lengths never wait for each other. Stepping runs on TF's intra-op
thread pool, one emulator per task. Most users want workbench.envs.AtariBatch,
which validates arguments and picks a backend; these are the building blocks
for graphs (the pipelined evaluator).
"""

from __future__ import annotations

import importlib.metadata
from typing import Any

import tensorflow as tf

from workbench.ops import _loader
from workbench.ops._resources import destroy as destroy  # re-exported: the backends' finalizers call it


def _library():
    """The ops library, after checking that its ALE matches the installed ale-py (whose ROMs it loads)."""
    return _loader.load_library_built_with(
        _loader.EMULATION,
        "ale",
        lambda: importlib.metadata.version("ale-py"),
        "The ops library was built with ALE {built}, but ale-py {installed} is installed (its ROM table may differ).",
    )


def create(
    rom_path: str,
    batch_size: int,
    *,
    frame_skip: int = 4,
    noop_max: int = 30,
    repeat_action_probability: float = 0.0,
    max_episode_frames: int = 0,
    fire_reset: bool = True,
    screen_size: int = 84,
    stack_size: int = 4,
) -> tuple[tf.Tensor, tf.Tensor]:
    """Creates the emulators; returns (handle, action_set) with the game's minimal action set (ALE ids)."""
    return _library().workbench_atari_env_create(
        rom_path=str(rom_path),
        batch_size=batch_size,
        frame_skip=frame_skip,
        noop_max=noop_max,
        repeat_action_probability=repeat_action_probability,
        max_episode_frames=max_episode_frames,
        fire_reset=fire_reset,
        screen_size=screen_size,
        stack_size=stack_size,
    )


def reset(handle: tf.Tensor, indices: Any, seeds: Any) -> tf.Tensor:
    """Starts a new episode in each emulator of indices; seeds (int64) drive no-ops and sticky actions.

    Returns done (bool [n]): episodes that already ended during the reset (a frame cap below the no-ops).
    """
    return _library().workbench_atari_env_reset(handle=handle, indices=indices, seeds=seeds)


def step(handle: tf.Tensor, indices: Any, actions: Any) -> tuple[tf.Tensor, tf.Tensor]:
    """One agent step; actions index the minimal action set. Returns (rewards float32, done bool)."""
    return _library().workbench_atari_env_step(handle=handle, indices=indices, actions=actions)


def step_and_observe(handle: tf.Tensor, indices: Any, actions: Any) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    """step() and observation() in one op and one pass: (rewards, done, observations)."""
    return _library().workbench_atari_env_step_and_observe(handle=handle, indices=indices, actions=actions)


def observation(handle: tf.Tensor, indices: Any) -> tf.Tensor:
    """uint8 [n, screen_size, screen_size, stack_size], oldest frame first on the last axis."""
    return _library().workbench_atari_env_observation(handle=handle, indices=indices)


def screen(handle: tf.Tensor, indices: Any) -> tf.Tensor:
    """uint8 [n, height, width, 3] RGB screens of the last emulated frame (210x160 for most games)."""
    return _library().workbench_atari_env_screen(handle=handle, indices=indices)


def ram(handle: tf.Tensor, indices: Any) -> tf.Tensor:
    """uint8 [n, 128] console RAM."""
    return _library().workbench_atari_env_ram(handle=handle, indices=indices)


def status(handle: tf.Tensor, indices: Any) -> tuple[tf.Tensor, ...]:
    """(lives int32, episode_frames int32, episode_return float32, done bool, truncated bool), each [n]."""
    return _library().workbench_atari_env_status(handle=handle, indices=indices)


for _op in ("Create", "Reset", "Step", "StepAndObserve", "Observation", "Screen", "Ram", "Status"):
    tf.no_gradient(f"Workbench>AtariEnv{_op}")
