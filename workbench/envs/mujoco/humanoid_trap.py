"""The humanoid trap (Conti et al. 2018, NS-ES): Humanoid-v5 with a U-shaped wall ahead of the start.

The reward is Humanoid-v5's (forward velocity, alive bonus, control and contact costs), so walking
straight ahead pays until the humanoid reaches the back of the U and stays stuck there: a deceptive
task. Getting past the trap means walking sideways out of the U first (and less reward meanwhile),
which novelty search over the final (x, y) position finds and reward-only ES does not.

The model is Gymnasium's humanoid.xml with three box walls added to the world body (no new bodies,
so observations keep Humanoid-v5's 348 values), written once per wall geometry into the workbench's
cache directory. Walls (metres, the humanoid starts at the origin facing +x):
  back wall   x = BACK_X, y in [-HALF_WIDTH, HALF_WIDTH]
  side walls  y = +-HALF_WIDTH, x in [MOUTH_X, BACK_X]
all WALL_HEIGHT high. The MuJoCo task "HumanoidTrap-v5" (tasks.py) uses it.
"""

from __future__ import annotations

import hashlib
import os

MOUTH_X, BACK_X, HALF_WIDTH = 1.0, 3.0, 1.5  # the U opens towards the start, its back 3 m ahead
WALL_THICKNESS, WALL_HEIGHT = 0.1, 1.0
FILE_NAME = "humanoid_trap.xml"


def _walls() -> str:
    t, h = WALL_THICKNESS, WALL_HEIGHT
    length = (BACK_X - MOUTH_X) / 2
    boxes = [
        ("trap_back", BACK_X, 0.0, t, HALF_WIDTH + t),
        ("trap_left", MOUTH_X + length, HALF_WIDTH, length, t),
        ("trap_right", MOUTH_X + length, -HALF_WIDTH, length, t),
    ]
    return "".join(
        f'\n        <geom name="{name}" type="box" pos="{x:g} {y:g} {h:g}" size="{sx:g} {sy:g} {h:g}" '
        f'rgba="0.55 0.35 0.3 1" condim="3" contype="1" conaffinity="1"/>'
        for name, x, y, sx, sy in boxes
    )


def trap_xml(humanoid_xml: str) -> str:
    """Gymnasium's humanoid.xml text with the trap's walls added to its world body."""
    marker = "<worldbody>"
    if humanoid_xml.count(marker) != 1:
        raise ValueError("the humanoid model must have exactly one <worldbody>")
    return humanoid_xml.replace(marker, marker + _walls(), 1)


def cache_directory() -> str:
    return os.path.join(
        os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "deep-neuroevolution-workbench", "models"
    )


def humanoid_trap_path() -> str:
    """The trap model file, written (atomically) on first use from the installed Gymnasium's humanoid.xml."""
    import gymnasium.envs.mujoco

    source = os.path.join(os.path.dirname(gymnasium.envs.mujoco.__file__), "assets", "humanoid.xml")
    with open(source) as f:
        text = trap_xml(f.read())
    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    path = os.path.join(cache_directory(), f"humanoid_trap-{digest}.xml")
    if not os.path.exists(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        temporary = f"{path}.{os.getpid()}.tmp"
        with open(temporary, "w") as f:
            f.write(text)
        os.replace(temporary, path)
    return path


REGIONS = ("short", "inside", "beside", "past")


def trap_region(x: float, y: float) -> str:
    """Where a final torso position (x, y) lies: "short" of the U's mouth (x < MOUTH_X), "inside" the U (between
    its mouth and its back wall, between its side walls), "beside" it (as far as the U reaches, outside its side
    walls: out of the trap sideways) or "past" its back wall (x > BACK_X)."""
    if x > BACK_X:
        return "past"
    if x < MOUTH_X:
        return "short"
    return "inside" if abs(y) <= HALF_WIDTH else "beside"
