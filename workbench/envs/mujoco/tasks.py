"""The MuJoCo locomotion tasks of Gymnasium v5 that run inside TensorFlow ops: names, settings, defaults.

Each task's keyword arguments are Gymnasium v5's (gymnasium/envs/mujoco/*_v5.py), with the same
defaults (tests/envs/test_mujoco_env.py checks them against Gymnasium's signatures); docs/mujoco.md
writes down the rules behind them. Names are the Gymnasium ids ("HalfCheetah-v5") or short names
("halfcheetah", "half_cheetah", "walker"); unknown names get the close ones.

    task = find_mujoco_task("hopper")          # MujocoTask("Hopper-v5", ...)
    settings = task.settings(ctrl_cost_weight=0.01)  # every keyword argument, checked, defaults filled in
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from workbench.checks import check_bool, check_int, check_positive_int, check_real, close_matches
from workbench.envs.mujoco import humanoid_trap

INFO_TERMS = (
    "x_position",
    "y_position",
    "x_velocity",
    "y_velocity",
    "z_distance_from_origin",
    "distance_from_origin",
    "reward_forward",
    "reward_ctrl",
    "reward_contact",
    "reward_survive",
)  # the op's status columns
SCALARS = ("forward_reward_weight", "ctrl_cost_weight", "contact_cost_weight", "healthy_reward", "reset_noise_scale")
RANGES = ("healthy_z_range", "healthy_angle_range", "healthy_state_range", "contact_force_range", "contact_cost_range")
FLAGS = (
    "terminate_when_unhealthy",
    "exclude_current_positions_from_observation",
    "include_cfrc_ext_in_observation",
    "include_cinert_in_observation",
    "include_cvel_in_observation",
    "include_qfrc_actuator_in_observation",
)
MAX_EPISODE_STEPS = 1000  # Gymnasium's registered TimeLimit of every task here
# The foot geoms of each task's model, in the order of the feet-contact descriptor (QDax's "uni" tasks: Hopper 1,
# Walker2d 2, Ant 4); Feet() in ops/cc/kernels/mujoco_simulation.cc says the same for the ops.
FEET = {
    "Hopper-v5": ("foot_geom",),
    "Walker2d-v5": ("foot_geom", "foot_left_geom"),
    "HalfCheetah-v5": ("bfoot", "ffoot"),
    "Ant-v5": ("left_ankle_geom", "right_ankle_geom", "third_ankle_geom", "fourth_ankle_geom"),
    "Humanoid-v5": ("right_foot", "left_foot"),
}


@dataclass(frozen=True)
class MujocoTask:
    """One Gymnasium v5 task: its id, short names, model file, Gymnasium's keyword defaults and info terms."""

    id: str
    short_names: tuple
    defaults: dict  # Gymnasium's keyword arguments and their defaults (xml_file and frame_skip included)
    info: tuple  # the info terms of Gymnasium's step() that the op reports (a subset of INFO_TERMS)
    normal_velocity_noise: bool = False  # qvel noise scale * N(0, 1) (else uniform in +-scale)
    notes: str = ""
    rules: str | None = None  # the Gymnasium task whose rules a variant follows (None: its own id)
    # What the rules read from the model (as kTasks in ops/cc/kernels/mujoco_simulation.cc says for the ops): at
    # least min_nq position coordinates and min_state values of (qpos, qvel); `reads` names them.
    min_nq: int = 0
    min_state: int = 0
    reads: str = ""

    @property
    def feet(self) -> tuple[str, ...]:
        """The foot geoms the feet-contact descriptor reads, in its order (none for Swimmer and InvertedPendulum)."""
        return FEET.get(self.gymnasium_id, ())

    @property
    def gymnasium_id(self) -> str:
        """The Gymnasium id that runs this task (a variant such as HumanoidTrap-v5 runs Humanoid-v5 on its model)."""
        return self.rules or self.id

    def settings(self, **kwargs: Any) -> dict:
        """Every keyword argument of the task, `kwargs` checked (ValueError/TypeError naming the argument) over
        the defaults."""
        unknown = sorted(set(kwargs) - set(self.defaults))
        if unknown:
            hint = close_matches(unknown[0], list(self.defaults))
            raise ValueError(
                f"{self.id} has no keyword argument {unknown[0]!r}"
                + (f" (did you mean {', '.join(hint)}?)" if hint else "")
                + f"; it takes {', '.join(sorted(self.defaults))}"
            )
        settings = dict(self.defaults, **kwargs)
        for name, value in kwargs.items():
            if name in SCALARS:
                check_real(name, value)
                settings[name] = float(value)
            elif name in RANGES:
                settings[name] = _check_range(name, value)
            elif name in FLAGS:
                check_bool(name, value)
            elif name == "frame_skip":
                check_positive_int(name, value)
            elif name == "main_body":
                if not isinstance(value, str):
                    check_int(name, value, 0)
            elif name == "xml_file":
                if not isinstance(value, str):
                    raise TypeError(f"xml_file must be a path string, got {type(value).__name__}")
        if settings["reset_noise_scale"] < 0 or not math.isfinite(settings["reset_noise_scale"]):
            raise ValueError(f"reset_noise_scale must be finite and >= 0, got {settings['reset_noise_scale']}")
        return settings

    def xml_path(self, settings: dict) -> str:
        """The model file of `settings` (xml_file), resolved as Gymnasium resolves it (a bare name: its assets)."""
        path = settings["xml_file"]
        if path == humanoid_trap.FILE_NAME:
            return humanoid_trap.humanoid_trap_path()
        if not (path.startswith(".") or path.startswith("/") or path.startswith("~")):
            import gymnasium.envs.mujoco

            path = os.path.join(os.path.dirname(gymnasium.envs.mujoco.__file__), "assets", path)
        path = os.path.expanduser(path)
        if not os.path.exists(path):
            raise ValueError(f"xml_file {settings['xml_file']!r} does not exist ({path})")
        return path

    def check_model(self, nq: int, nv: int, settings: dict) -> None:
        """ValueError naming xml_file when a model with nq position coordinates and nv velocities lacks a coordinate
        the task's rules read (Gymnasium's own environment fails on such a model in its reset or step)."""
        if nq >= self.min_nq and nq + nv >= self.min_state:
            return
        need = f"at least {self.min_nq} position coordinates (nq)"
        if self.min_state > self.min_nq:
            need = (need + " and " if self.min_nq else "") + f"at least {self.min_state} values of (qpos, qvel)"
        raise ValueError(
            f"xml_file {settings['xml_file']!r} does not fit {self.id}: {self.gymnasium_id}'s rules read "
            f"{self.reads}, so the model needs {need}; it has nq = {nq}, nv = {nv}"
        )

    def parameters(self, settings: dict) -> np.ndarray:
        """The op's float64 parameter vector: SCALARS, then the (low, high) pairs of RANGES (0 where unused)."""
        values = [float(settings.get(name, 0.0)) for name in SCALARS]
        for name in RANGES:
            values.extend(settings.get(name, (0.0, 0.0)))
        return np.array(values, np.float64)


def _check_range(name, value):
    try:
        low, high = value
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a (low, high) pair, got {value!r}") from None
    for bound in (low, high):
        if isinstance(bound, bool) or not isinstance(bound, (int, float, np.integer, np.floating)) or math.isnan(bound):
            raise TypeError(f"{name} must hold two numbers, got {value!r}")
    if low > high:
        raise ValueError(f"{name} must have low <= high, got {value!r}")
    return (float(low), float(high))


_PLANAR_INFO = ("x_position", "z_distance_from_origin", "x_velocity", "reward_forward", "reward_ctrl", "reward_survive")
_XY_INFO = ("x_position", "y_position", "distance_from_origin", "x_velocity", "y_velocity", "reward_forward", "reward_ctrl")
_PLANAR_NEEDS: dict[str, Any] = dict(
    min_nq=3, min_state=3, reads="the x position, height and angle at qpos[0], qpos[1] and qpos[2]"
)
_HUMANOID_NEEDS: dict[str, Any] = dict(
    min_nq=3, min_state=3, reads="the x and y position and the height at qpos[0], qpos[1] and qpos[2]"
)
INF = float("inf")
_HUMANOID = dict(
    xml_file="humanoid.xml",
    frame_skip=5,
    forward_reward_weight=1.25,
    ctrl_cost_weight=0.1,
    contact_cost_weight=5e-7,
    contact_cost_range=(-INF, 10.0),
    healthy_reward=5.0,
    terminate_when_unhealthy=True,
    healthy_z_range=(1.0, 2.0),
    reset_noise_scale=1e-2,
    exclude_current_positions_from_observation=True,
    include_cinert_in_observation=True,
    include_cvel_in_observation=True,
    include_qfrc_actuator_in_observation=True,
    include_cfrc_ext_in_observation=True,
)

TASKS = {
    task.id: task
    for task in (
        MujocoTask(
            "HalfCheetah-v5",
            ("halfcheetah", "cheetah"),
            dict(
                xml_file="half_cheetah.xml",
                frame_skip=5,
                forward_reward_weight=1.0,
                ctrl_cost_weight=0.1,
                reset_noise_scale=0.1,
                exclude_current_positions_from_observation=True,
            ),
            ("x_position", "x_velocity", "reward_forward", "reward_ctrl"),
            normal_velocity_noise=True,
            min_nq=1,
            min_state=1,
            reads="the x position at qpos[0]",
        ),
        MujocoTask(
            "Hopper-v5",
            ("hopper",),
            dict(
                xml_file="hopper.xml",
                frame_skip=4,
                forward_reward_weight=1.0,
                ctrl_cost_weight=1e-3,
                healthy_reward=1.0,
                terminate_when_unhealthy=True,
                healthy_state_range=(-100.0, 100.0),
                healthy_z_range=(0.7, INF),
                healthy_angle_range=(-0.2, 0.2),
                reset_noise_scale=5e-3,
                exclude_current_positions_from_observation=True,
            ),
            _PLANAR_INFO,
            **_PLANAR_NEEDS,
        ),
        MujocoTask(
            "Walker2d-v5",
            ("walker2d", "walker"),
            dict(
                xml_file="walker2d_v5.xml",
                frame_skip=4,
                forward_reward_weight=1.0,
                ctrl_cost_weight=1e-3,
                healthy_reward=1.0,
                terminate_when_unhealthy=True,
                healthy_z_range=(0.8, 2.0),
                healthy_angle_range=(-1.0, 1.0),
                reset_noise_scale=5e-3,
                exclude_current_positions_from_observation=True,
            ),
            _PLANAR_INFO,
            **_PLANAR_NEEDS,
        ),
        MujocoTask(
            "Ant-v5",
            ("ant",),
            dict(
                xml_file="ant.xml",
                frame_skip=5,
                forward_reward_weight=1.0,
                ctrl_cost_weight=0.5,
                contact_cost_weight=5e-4,
                healthy_reward=1.0,
                main_body=1,
                terminate_when_unhealthy=True,
                healthy_z_range=(0.2, 1.0),
                contact_force_range=(-1.0, 1.0),
                reset_noise_scale=0.1,
                exclude_current_positions_from_observation=True,
                include_cfrc_ext_in_observation=True,
            ),
            _XY_INFO + ("reward_contact", "reward_survive"),
            normal_velocity_noise=True,
            min_nq=2,
            min_state=3,
            reads="the x and y position at qpos[0] and qpos[1] and the height as the third value of (qpos, qvel)",
        ),
        MujocoTask(
            "Humanoid-v5",
            ("humanoid",),
            _HUMANOID,
            _XY_INFO + ("reward_contact", "reward_survive"),
            notes="Gymnasium's info also has tendon_length and tendon_velocity (2 tendons); not reported",
            **_HUMANOID_NEEDS,
        ),
        MujocoTask(
            "HumanoidTrap-v5",
            ("humanoidtrap", "trap"),
            dict(_HUMANOID, xml_file=humanoid_trap.FILE_NAME),
            _XY_INFO + ("reward_contact", "reward_survive"),
            rules="Humanoid-v5",
            notes="Humanoid-v5 with a U-shaped wall ahead of the start (humanoid_trap.py; Conti et al. 2018)",
            **_HUMANOID_NEEDS,
        ),
        MujocoTask(
            "Swimmer-v5",
            ("swimmer",),
            dict(
                xml_file="swimmer.xml",
                frame_skip=4,
                forward_reward_weight=1.0,
                ctrl_cost_weight=1e-4,
                reset_noise_scale=0.1,
                exclude_current_positions_from_observation=True,
            ),
            _XY_INFO,
            min_nq=2,
            min_state=2,
            reads="the x and y position at qpos[0] and qpos[1]",
        ),
        MujocoTask(
            "InvertedPendulum-v5",
            ("invertedpendulum",),
            dict(xml_file="inverted_pendulum.xml", frame_skip=2, reset_noise_scale=0.01),
            ("reward_survive",),
            min_state=2,
            reads="the pole angle as the second value of (qpos, qvel)",
        ),
    )
}


def _normalise(name):
    return re.sub(r"[^a-z0-9]", "", name.lower())


_BY_NAME = {}
for _task in TASKS.values():
    for _name in (_task.id, _task.id.split("-")[0], *_task.short_names):
        _BY_NAME[_normalise(_name)] = _task


def find_mujoco_task(name: str) -> MujocoTask | None:
    """The task called `name` (Gymnasium id or short name, any case, with or without -v5), or None."""
    if not isinstance(name, str):
        return None
    key = _normalise(name)
    return _BY_NAME.get(key) or _BY_NAME.get(re.sub(r"v5$", "", key))


def resolve_mujoco_task(name: str) -> MujocoTask:
    """find_mujoco_task(name), or a ValueError naming the close task names."""
    if not isinstance(name, str):
        raise TypeError(f"task must be a name string such as 'HalfCheetah-v5', got {type(name).__name__}")
    task = find_mujoco_task(name)
    if task is None:
        suggestions = close_matches(name, list(TASKS) + [n for t in TASKS.values() for n in t.short_names])
        hint = f" Did you mean: {', '.join(suggestions)}?" if suggestions else ""
        raise ValueError(f"task {name!r} is not one of the MuJoCo tasks ({', '.join(TASKS)}).{hint}")
    return task
