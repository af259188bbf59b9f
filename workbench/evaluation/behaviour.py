"""Behaviour characterisations (BCs): what an episode did, as a vector; with declared bounds, a descriptor.

A BC function is called as fn(env, index) when the episode in environment `index` of the EnvBatch `env` ends, and
returns a 1-D array of numbers (the same length every time). Novelty search measures distances between BCs;
quality diversity (MAP-Elites) files each member into the archive cell of its BC, its descriptor, inside bounds the
behaviour declares per environment (one (low, high) pair per dimension; behaviour_bounds). Built in:
  "final_ram"          the 128 bytes of Atari RAM at the end (Conti et al. 2018); bounds [0, 255] each
  "final_observation"  the last observation, flattened (e.g. CartPole's state); no bounds declared
  "final_position"     the main body's final (x, y) (MuJoCo locomotion: the torso; Conti et al. 2018's humanoid BC);
                       bounds [-30, 30] each on Ant (QDax's "omni" task), none declared on the other tasks
  "feet_contact"       per foot, the share of the episode's steps that ended with it on the ground (MuJoCo: Hopper 1,
                       Walker2d 2, HalfCheetah 2, Ant 4, Humanoid 2 feet; QDax's "uni" descriptor), counted inside
                       the simulation op at every step; bounds [0, 1] each
  "player_position"    the player's final (x, y) read from the Atari RAM (workbench.envs.atari.ram_map: Montezuma's
                       Revenge, whose reward is deceptive, and Frostbite); the bounds of the game's screen
register_behaviour() declares a user's own, with its bounds (a list of pairs, or a function of the environment's
name returning one, or None).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from workbench.envs.batch import BODY_POSITION, FEET_CONTACT, RAM, EnvBatch


def final_ram(env: EnvBatch, index: int) -> np.ndarray:
    if not env.supports(RAM):
        raise ValueError(f'behaviour "final_ram" needs an Atari batch (the RAM capability), got {type(env).__name__}')
    return env.ram([index])[0].astype(np.float64)


def final_observation(env: EnvBatch, index: int) -> np.ndarray:
    return np.asarray(env.observation([index])[0], np.float64).ravel()


def final_position(env: EnvBatch, index: int) -> np.ndarray:
    if not env.supports(BODY_POSITION):
        raise ValueError(
            f'behaviour "final_position" needs a MuJoCo batch (the BODY_POSITION capability), got {type(env).__name__}'
        )
    return np.asarray(env.body_position([index])[0], np.float64)


def player_position(env: EnvBatch, index: int) -> np.ndarray:
    from workbench.envs.atari.ram_map import PLAYER_POSITION

    game = getattr(env, "game", None) if env.supports(RAM) else None
    if game not in PLAYER_POSITION:
        raise ValueError(
            f'behaviour "player_position" reads the player\'s position from the RAM of {sorted(PLAYER_POSITION)}; '
            f"got {type(env).__name__}" + (f" of {game}" if game else "")
        )
    where = PLAYER_POSITION[game]
    return env.ram([index])[0][[where.x, where.y]].astype(np.float64)


def _player_position_bounds(env: str) -> Bounds | None:
    from workbench.envs.atari import find_atari_game
    from workbench.envs.atari.ram_map import PLAYER_POSITION

    game = find_atari_game(env)
    return [list(pair) for pair in PLAYER_POSITION[game].bounds] if game in PLAYER_POSITION else None


def feet_contact(env: EnvBatch, index: int) -> np.ndarray:
    if not env.supports(FEET_CONTACT):
        raise ValueError(
            f'behaviour "feet_contact" needs a MuJoCo task with feet (the FEET_CONTACT capability), got {type(env).__name__}'
            + (f" of {env.task.id}" if hasattr(env, "task") else "")
        )
    return np.asarray(env.feet_contact([index])[0], np.float64)


Bounds = Sequence[Sequence[float]]


@dataclasses.dataclass(frozen=True)
class Behaviour:
    """A named BC: its function fn(env, index), the descriptor bounds it declares (pairs, a function of the
    environment's name returning pairs or None, or None), and what it measures."""

    name: str
    function: Callable[[EnvBatch, int], Any]
    bounds: Bounds | Callable[[str], Bounds | None] | None = None
    description: str = ""


def _final_position_bounds(env: str) -> Bounds | None:
    from workbench.envs.mujoco.tasks import find_mujoco_task

    task = find_mujoco_task(env)
    return [[-30.0, 30.0], [-30.0, 30.0]] if task is not None and task.gymnasium_id == "Ant-v5" else None


def _feet_contact_bounds(env: str) -> Bounds | None:
    from workbench.envs.mujoco.tasks import find_mujoco_task

    task = find_mujoco_task(env)
    return [[0.0, 1.0]] * len(task.feet) if task is not None and task.feet else None


BEHAVIOURS: dict[str, Behaviour] = {}


def register_behaviour(behaviour: Behaviour, replace: bool = False) -> Behaviour:
    """Declares a BC by name (ValueError when the name is taken, unless `replace`); returns it."""
    if not isinstance(behaviour, Behaviour):
        raise TypeError(f"register_behaviour takes a Behaviour, got {type(behaviour).__name__}")
    if not isinstance(behaviour.name, str) or not behaviour.name:
        raise ValueError(f"a behaviour's name is a non-empty string, got {behaviour.name!r}")
    if not callable(behaviour.function):
        raise ValueError(f"behaviour {behaviour.name!r}: function must be callable fn(env, index)")
    if behaviour.bounds is not None and not callable(behaviour.bounds):
        checked_bounds(behaviour.bounds, f"behaviour {behaviour.name!r} bounds")
    if behaviour.name in BEHAVIOURS and not replace:
        raise ValueError(f"behaviour {behaviour.name!r} is registered already (replace=True replaces it)")
    BEHAVIOURS[behaviour.name] = behaviour
    return behaviour


def unregister_behaviour(name: str) -> None:
    """Forgets a user's behaviour; KeyError when it is not registered."""
    del BEHAVIOURS[name]


def checked_bounds(bounds: Any, name: str = "bounds") -> list[list[float]]:
    """bounds as [[low, high], ...] floats, finite with low < high, at least one pair (ValueError naming `name`)."""
    try:
        pairs = [[float(low), float(high)] for low, high in bounds]
    except (TypeError, ValueError) as error:
        raise ValueError(f"{name} must be (low, high) pairs, one per dimension, got {bounds!r:.120}") from error
    if not pairs or not all(np.isfinite(p).all() and p[0] < p[1] for p in pairs):
        raise ValueError(f"{name} must be at least one finite (low, high) pair with low < high, got {bounds!r:.120}")
    return pairs


def registered_behaviour(spec: Any) -> Behaviour | None:
    """The user's Behaviour registered as `spec` (None for a built-in name, a callable or an unknown name): what a
    worker process (a Ray actor) must register before it evaluates with it."""
    if isinstance(spec, str) and spec in BEHAVIOURS and spec not in BUILT_IN_BEHAVIOURS:
        return BEHAVIOURS[spec]
    return None


def behaviour_bounds(spec: str | None, env: str) -> list[list[float]] | None:
    """The descriptor bounds behaviour `spec` (a registered name) declares on environment `env`, or None."""
    behaviour = BEHAVIOURS.get(spec) if isinstance(spec, str) else None
    if behaviour is None or behaviour.bounds is None:
        return None
    bounds = behaviour.bounds(env) if callable(behaviour.bounds) else behaviour.bounds
    return None if bounds is None else checked_bounds(bounds, f"the bounds behaviour {spec!r} declares for {env}")


def behaviour_function(spec: str | Callable | None) -> Callable[[EnvBatch, int], Any] | None:
    """The BC function of `spec`: a registered name, a callable fn(env, index), or None (no BCs)."""
    if spec is None or callable(spec):
        return spec
    if isinstance(spec, str) and spec in BEHAVIOURS:
        return BEHAVIOURS[spec].function
    raise ValueError(f"behaviour must be one of {sorted(BEHAVIOURS)}, a callable fn(env, index) or None, got {spec!r}")


for _behaviour in (
    Behaviour("final_ram", final_ram, [[0.0, 255.0]] * 128, "the 128 bytes of Atari RAM at the episode's end"),
    Behaviour("final_observation", final_observation, None, "the last observation, flattened"),
    Behaviour("final_position", final_position, _final_position_bounds, "the main body's final world (x, y)"),
    Behaviour("feet_contact", feet_contact, _feet_contact_bounds, "each foot's share of the steps on the ground"),
    Behaviour("player_position", player_position, _player_position_bounds, "the player's final (x, y) from the RAM"),
):
    register_behaviour(_behaviour)
BUILT_IN_BEHAVIOURS = frozenset(BEHAVIOURS)


def checked_behaviour(value: Any, dimensions: int | None, where: str) -> np.ndarray:
    """A BC as a finite float64 vector, of `dimensions` entries when given."""
    vector = np.asarray(value, np.float64)
    if vector.ndim != 1 or vector.size == 0:
        raise ValueError(f"the behaviour function must return a non-empty 1-D array ({where}), got shape {vector.shape}")
    if dimensions is not None and vector.size != dimensions:
        raise ValueError(f"the behaviour function returned {vector.size} values ({where}), earlier {dimensions}")
    if not np.isfinite(vector).all():
        raise ValueError(f"the behaviour function returned non-finite values ({where})")
    return vector
