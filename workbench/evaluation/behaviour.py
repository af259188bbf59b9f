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
name returning one, or None). A user's behaviour may instead be measured at every step: Behaviour(name,
step=fn(env, slots), reduce="mean") returns one row per running episode after each step (from env.observation(slots),
env.ram(slots), env.body_position(slots), ...), and the episode's descriptor is the rows' mean (or min, max, sum)
over its steps, kept per slot by StepReduction in the evaluator:

    register_behaviour(Behaviour("mean_height", step=lambda env, slots: env.observation(slots)[:, :1],
                                 bounds=[[0.8, 2.0]], description="the torso's mean height (Walker2d)"))
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


REDUCTIONS = ("mean", "min", "max", "sum")


@dataclasses.dataclass(frozen=True)
class Behaviour:
    """A named BC: the descriptor bounds it declares (pairs, a function of the environment's name returning pairs or
    None, or None), what it measures, and how it is measured: `function` fn(env, index) when the episode ends, or
    `step` fn(env, slots) after every step of the episodes running in `slots` (an int array), returning one row per
    slot ([len(slots), d]), reduced over the episode's steps by `reduce` ("mean", "min", "max" or "sum")."""

    name: str
    function: Callable[[EnvBatch, int], Any] | None = None
    bounds: Bounds | Callable[[str], Bounds | None] | None = None
    description: str = ""
    step: Callable[[EnvBatch, np.ndarray], Any] | None = None
    reduce: str = "mean"


class StepReduction:
    """A step behaviour's running reduction per episode slot of one environment batch (what SubPopulation keeps):
    begin(slots) when episodes start, update(env, slots) after each step, value(slot) when one ends."""

    def __init__(self, behaviour: Behaviour, slots: int) -> None:
        assert behaviour.step is not None, "a step behaviour"
        self.behaviour, self.size = behaviour, slots
        self.totals: np.ndarray | None = None  # [slots, d], allocated when the first values give d
        self.counts = np.zeros(slots, np.int64)

    def begin(self, slots: Sequence[int] | np.ndarray) -> None:
        self.counts[slots] = 0
        if self.totals is not None:
            self.totals[slots] = 0.0

    def update(self, env: EnvBatch, slots: np.ndarray) -> None:
        behaviour = self.behaviour
        assert behaviour.step is not None
        try:
            values = np.asarray(behaviour.step(env, slots), np.float64)
        except (TypeError, ValueError) as error:
            raise ValueError(f"behaviour {behaviour.name!r}: its step function must return numbers: {error}") from None
        dimensions = None if self.totals is None else self.totals.shape[1]
        if (
            values.ndim != 2
            or values.shape[0] != len(slots)
            or values.shape[1] == 0
            or values.shape[1] != (dimensions or values.shape[1])
        ):
            expected = f"[{len(slots)}, {dimensions if dimensions is not None else 'd'}]"
            raise ValueError(
                f"behaviour {behaviour.name!r}: its step function must return one row per slot, {expected}, got shape "
                f"{values.shape}"
            )
        if self.totals is None:
            self.totals = np.zeros((self.size, values.shape[1]))
        first = self.counts[slots] == 0
        totals = self.totals
        if behaviour.reduce in ("mean", "sum"):
            totals[slots] += values
        elif behaviour.reduce == "min":
            totals[slots] = np.where(first[:, None], values, np.minimum(totals[slots], values))
        else:
            totals[slots] = np.where(first[:, None], values, np.maximum(totals[slots], values))
        self.counts[slots] += 1

    def value(self, env: EnvBatch, slot: int) -> np.ndarray:
        """The episode's descriptor (an episode that ended before its first step: the state it ended in)."""
        if self.counts[slot] == 0:
            self.update(env, np.array([slot]))
        assert self.totals is not None
        total = self.totals[slot].copy()
        return total / self.counts[slot] if self.behaviour.reduce == "mean" else total


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
    if (behaviour.function is None) == (behaviour.step is None):
        raise ValueError(
            f"behaviour {behaviour.name!r}: give either function fn(env, index), read when an episode ends, or step "
            "fn(env, slots), read after every step"
        )
    if behaviour.function is not None and not callable(behaviour.function):
        raise ValueError(f"behaviour {behaviour.name!r}: function must be callable fn(env, index)")
    if behaviour.step is not None and not callable(behaviour.step):
        raise ValueError(f"behaviour {behaviour.name!r}: step must be callable fn(env, slots)")
    if behaviour.reduce not in REDUCTIONS:
        raise ValueError(f"behaviour {behaviour.name!r}: reduce must be one of {REDUCTIONS}, got {behaviour.reduce!r}")
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


def behaviour_function(spec: str | Callable | Behaviour | None) -> Callable[[EnvBatch, int], Any] | Behaviour | None:
    """What an evaluator measures for `spec` (a registered name, a callable fn(env, index), a Behaviour, or None: no
    BCs): the Behaviour (read at the episode's end by its function, or at every step: StepReduction), or the
    callable."""
    if spec is None or callable(spec) or isinstance(spec, Behaviour):
        return spec
    if isinstance(spec, str) and spec in BEHAVIOURS:
        return BEHAVIOURS[spec]
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


def checked_behaviour(value: Any, dimensions: int | None, where: str, name: str = "the behaviour function") -> np.ndarray:
    """A BC as a float64 vector, of `dimensions` entries when given (ValueError naming `name` and `where`). NaN and
    infinite values pass: the strategy refuses them (novelty search) or counts and leaves them out (an archive)."""
    try:
        vector = np.asarray(value, np.float64)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{name} must return numbers ({where}), got {type(value).__name__}: {error}") from None
    if vector.ndim != 1 or vector.size == 0:
        raise ValueError(f"{name} must return a non-empty 1-D array ({where}), got shape {vector.shape}")
    if dimensions is not None and vector.size != dimensions:
        raise ValueError(f"{name} returned {vector.size} values ({where}), earlier {dimensions}")
    return vector


def behaviour_label(behaviour: Any) -> str:
    """How errors name a behaviour: "behaviour 'feet_contact'" for a registered one, else the function's name."""
    if isinstance(behaviour, Behaviour):
        return f"behaviour {behaviour.name!r}"
    return f"the behaviour function {getattr(behaviour, '__name__', type(behaviour).__name__)!r}"
