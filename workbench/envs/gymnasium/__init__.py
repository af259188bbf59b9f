"""The Gymnasium family: any other registered Gymnasium id with vector observations (CartPole-v1, Pendulum-v1,
LunarLander-v3...), stepped by Gymnasium in Python (batch.py: GymBatch). It is the fallback family: it claims
the registered ids no other family recognises. A run keeps the environment's registered episode limit unless it
gives another; it has no presets (Atari games and MuJoCo tasks do).
"""

from __future__ import annotations

from typing import Any

from workbench.envs.families import EnvFamily, register_env_family
from workbench.envs.gymnasium.batch import GymBatch

__all__ = ["GYMNASIUM", "GymBatch", "registered_episode_limit"]


def _find(name: str) -> str | None:
    import gymnasium

    return name if name in gymnasium.registry else None


def _names() -> list[str]:
    import gymnasium

    return list(gymnasium.registry)


def registered_episode_limit(env: str) -> int | None:
    """The episode limit Gymnasium registers for `env` (CartPole-v1: 500), or None when it registers none."""
    import gymnasium

    return gymnasium.spec(env).max_episode_steps


def gymnasium_run_defaults(env: str, preset_group: str) -> dict[str, Any]:
    """A Gymnasium run's model, options, normalisation and cap when nobody chose them: a linear policy for the
    groups that search linear policies (ARS, PGPE), an MLP for the others; no observation normalisation; the
    registered episode limit (None when there is none: the run must give one)."""
    model = "linear" if preset_group in ("ars", "pgpe") else "mlp"
    return dict(model=model, model_options={}, observation_normalization=None, max_episode_frames=registered_episode_limit(env))


GYMNASIUM = register_env_family(
    EnvFamily(
        name="gymnasium",
        description="any other registered Gymnasium id with vector observations (CartPole-v1)",
        find=_find,
        names=_names,
        batch=GymBatch,
        models=("mlp", "linear"),
        vector_observations=True,
        run_defaults=gymnasium_run_defaults,
        behaviour="final_observation",
        replay_options=dict(render_mode="rgb_array"),
        fallback=True,
    )
)
