"""Environment batches: many episodes stepped together, each environment addressed by index.

  AtariBatch   Atari games with the Deep GA preprocessing, emulated inside TensorFlow ops
               (backend "custom") or on ale-py (backend "reference")
  GymBatch     any Gymnasium environment with vector observations and discrete actions
  make_batch   either one, from a name: "pong", "ALE/Pong-v5", "CartPole-v1"
"""
from workbench.envs.atari import ATARI_BACKENDS, AtariBatch
from workbench.envs.atari_config import AtariConfig
from workbench.envs.batch import EnvBatch
from workbench.envs.games import atari_game_ids, close_matches, find_atari_game, resolve_atari_game
from workbench.envs.gym_batch import GymBatch


def episode_cap_option(name, max_episode_frames):
    """The make_batch option capping episodes of `name`: frames for Atari (no-ops included), steps for Gymnasium."""
    if max_episode_frames is None:
        return {}
    key = "max_num_frames_per_episode" if find_atari_game(name) is not None else "max_episode_steps"
    return {key: max_episode_frames}


def make_batch(name, batch_size, *, seed=0, **kwargs):
    """An AtariBatch when `name` is an Atari game, else a GymBatch of the Gymnasium id `name`."""
    if find_atari_game(name) is not None:
        return AtariBatch(name, batch_size, seed=seed, **kwargs)
    import gymnasium

    if name in gymnasium.registry:
        return GymBatch(name, batch_size, seed=seed, **kwargs)
    suggestions = close_matches(name, list(atari_game_ids()) + list(gymnasium.registry))
    hint = f" Did you mean: {', '.join(suggestions)}?" if suggestions else ""
    raise ValueError(f"name {name!r} is neither an Atari game of ale-py nor a Gymnasium id.{hint}")


__all__ = [
    "ATARI_BACKENDS",
    "AtariBatch",
    "AtariConfig",
    "EnvBatch",
    "GymBatch",
    "atari_game_ids",
    "episode_cap_option",
    "find_atari_game",
    "make_batch",
    "resolve_atari_game",
]
