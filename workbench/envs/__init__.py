"""Environment batches: many episodes stepped together, each environment addressed by index.

  AtariBatch   Atari games with the Deep GA preprocessing, emulated inside TensorFlow ops
               (backend "custom") or on ale-py (backend "reference")
  GymBatch     any Gymnasium environment with vector observations and discrete actions
  make_batch   either one, from a name: "pong", "ALE/Pong-v5", "CartPole-v1"
  EnvBatch     the interface they share; optional features are the capabilities SCREEN, RAM, IN_GRAPH
"""
from __future__ import annotations

from workbench.envs.atari import AtariBatch
from workbench.envs.atari_config import AtariConfig
from workbench.envs.batch import CAPABILITIES, IN_GRAPH, RAM, SCREEN, EnvBatch
from workbench.envs.games import atari_game_ids, close_matches, find_atari_game, resolve_atari_game
from workbench.envs.gym_batch import GymBatch


def make_batch(name: str, batch_size: int, *, seed: int = 0, **kwargs: object) -> EnvBatch:
    """An AtariBatch when `name` is an Atari game, else a GymBatch of the Gymnasium id `name`.

    max_episode_frames caps episodes for both (Atari: frames, no-ops included; Gymnasium: steps).
    """
    if not isinstance(name, str):
        raise TypeError(f"env must be a game or Gymnasium id string, got {type(name).__name__}")
    if find_atari_game(name) is not None:
        return AtariBatch(name, batch_size, seed=seed, **kwargs)
    import gymnasium

    if name in gymnasium.registry:
        return GymBatch(name, batch_size, seed=seed, **kwargs)
    suggestions = close_matches(name, list(atari_game_ids()) + list(gymnasium.registry))
    hint = f" Did you mean: {', '.join(suggestions)}?" if suggestions else ""
    raise ValueError(f"name {name!r} is neither an Atari game of ale-py nor a Gymnasium id.{hint}")


__all__ = [
    "CAPABILITIES",
    "IN_GRAPH",
    "RAM",
    "SCREEN",
    "AtariBatch",
    "AtariConfig",
    "EnvBatch",
    "GymBatch",
    "atari_game_ids",
    "find_atari_game",
    "make_batch",
    "resolve_atari_game",
]
