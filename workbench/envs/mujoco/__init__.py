"""The MuJoCo family: Gymnasium v5's MuJoCo locomotion tasks, simulated inside TensorFlow ops (backend
"custom") or by Gymnasium itself (backend "reference").

batch.py          MujocoBatch
tasks.py          the tasks: names, Gymnasium's keyword arguments and defaults, info terms
humanoid_trap.py  the humanoid trap, a variant of Humanoid-v5 with a U-shaped wall (deceptive reward)
ops_backend.py    the ops backend; reference.py its Gymnasium twin
render.py         offscreen rendering (render_server.py runs in its own process)
presets.py        run defaults and the paper, pc and tutorial presets, per task
"""

from __future__ import annotations

from workbench.envs.families import EnvFamily, register_env_family
from workbench.envs.mujoco.batch import MujocoBatch
from workbench.envs.mujoco.presets import mujoco_presets, mujoco_run_defaults
from workbench.envs.mujoco.tasks import TASKS, find_mujoco_task, resolve_mujoco_task

__all__ = ["MUJOCO", "TASKS", "MujocoBatch", "find_mujoco_task", "resolve_mujoco_task"]


def _find(name: str) -> str | None:
    task = find_mujoco_task(name)
    return None if task is None else task.id


MUJOCO = register_env_family(
    EnvFamily(
        name="mujoco",
        description="the MuJoCo tasks of the ops (HalfCheetah-v5, hopper, HumanoidTrap-v5)",
        find=_find,
        names=lambda: list(TASKS) + [name for task in TASKS.values() for name in task.short_names],
        batch=MujocoBatch,
        models=("mlp", "linear"),
        vector_observations=True,
        run_defaults=mujoco_run_defaults,
        behaviour="final_position",
        descriptor="feet_contact",
        presets=mujoco_presets,
        test_behaviour="final_position",
    )
)
