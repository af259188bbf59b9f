"""MujocoBatch: a batch of Gymnasium v5 MuJoCo locomotion tasks, on the ops or on Gymnasium itself.

    batch = MujocoBatch("HalfCheetah-v5", 32, seed=1)   # or "halfcheetah"; task keywords by name
    obs = batch.reset()                                  # float32 [32, 17]
    rewards, done = batch.step(range(32), actions)       # actions float32 [32, 6]
    batch.status()["x_velocity"]                         # the task's info terms of the last step

backend="custom" runs the simulations inside TensorFlow ops (blocks of simulations stepped on TF's
thread pool, no Python per step inside graphs); "reference" runs Gymnasium's own environments from
Python (slow, exact twin of the ops); None (default) picks "custom" and falls back to "reference"
with a warning when the ops library cannot be loaded or WORKBENCH_PURE_TF=1.

Episodes end as Gymnasium's do (terminated by the task's health rule, truncated at
max_episode_steps, default 1,000), and also, truncated and flagged `unstable`, when the simulation
goes unstable (workbench.envs.mujoco.reference): after a step, and after a reset or set_physics_state
whose observation is not finite in float32 (a huge reset_noise_scale or state), which end the episode
at once.

`xml_file` may put a task's rules on another model. Observations then have the length Gymnasium's own
environment returns (its slices of qpos, cinert, qfrc_actuator[6:] ... on that model; Gymnasium's declared
observation_space can be shorter), and a model that lacks a coordinate the rules read (Hopper's height at
qpos[1], ...) is refused at creation with a ValueError naming xml_file; Gymnasium fails on it in reset or step.

One frame is one step (frame_skip physics steps).
Actions are float32 [n, action_size]; MuJoCo clamps them to the control range (action_low,
action_high) when it computes forces, while the control cost uses them as given, as in Gymnasium.

screen() renders RGB frames of the simulations' current states with Gymnasium's own renderer, in a render
process (workbench.envs.mujoco.render: OpenGL and TensorFlow cannot share a process). The camera tracks the main
body (render_camera="track", the default: Gymnasium's distance and elevation for the task, looking at the torso
wherever it runs); render_camera="gymnasium" is Gymnasium's own camera, which does not follow HalfCheetah or Ant.
Headless machines render through EGL (Mesa's software renderer) or OSMesa.
"""

from __future__ import annotations

import threading
from typing import Any, Protocol

import numpy as np

from workbench.checks import check_optional_positive_int, check_positive_int
from workbench.envs.batch import BODY_POSITION, FEET_CONTACT, GRAPH_STEPS, IN_GRAPH, PHYSICS_STATE, RENDER_STATES, SCREEN, Indices
from workbench.envs.mujoco.tasks import MAX_EPISODE_STEPS, resolve_mujoco_task
from workbench.envs.simulator_batch import SimulatorBackend, SimulatorBatch


def _check_model(task, settings):
    """Compiles the task's model with MuJoCo's Python bindings and checks that the task's rules fit it (ValueError
    naming xml_file); returns the index of its main body (ValueError naming main_body)."""
    import mujoco

    path = task.xml_path(settings)
    try:
        model = mujoco.MjModel.from_xml_path(path)
    except ValueError as error:  # MuJoCo's compiler message
        raise ValueError(f"xml_file {settings['xml_file']!r} is not a model MuJoCo can compile: {error}") from None
    task.check_model(model.nq, model.nv, settings)
    body = settings.get("main_body", 1)
    if isinstance(body, str):
        index = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, body)
        if index < 0:
            names = [model.body(k).name for k in range(model.nbody)]
            raise ValueError(f"main_body {body!r} is not a body of {task.id}'s model; its bodies: {names}")
        return index
    if body >= model.nbody:
        raise ValueError(f"main_body {body} is not a body of {task.id}'s model (0..{model.nbody - 1})")
    return int(body)


class MujocoBackend(SimulatorBackend, Protocol):
    """What MuJoCo's backends (OpsMujocoBackend, ReferenceMujocoBackend) add to the family template's protocol."""

    observation_size: int
    action_size: int
    nq: int
    nv: int
    ctrl_range: np.ndarray  # float32 [action_size, 2]

    def physics_state(self, indices: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]: ...

    def feet_contact(self, indices: np.ndarray) -> np.ndarray: ...

    def set_physics_state(self, indices: np.ndarray, qpos: np.ndarray, qvel: np.ndarray) -> np.ndarray: ...


RENDER_CAMERAS = ("track", "gymnasium")  # a camera that follows the main body; Gymnasium's own for the task


class MujocoBatch(SimulatorBatch):
    """batch_size simulations of one MuJoCo task; see the module docstring. `task_kwargs` are the task's
    Gymnasium v5 keyword arguments (workbench.envs.mujoco.tasks lists them with their defaults)."""

    observation_dtype = np.float32
    family_capabilities = frozenset({SCREEN, PHYSICS_STATE, BODY_POSITION, RENDER_STATES})
    ops_module = "mujoco_env"  # observe_in_graph: float32 [n, observation size]
    _backend: MujocoBackend

    def __init__(
        self,
        task: str,
        batch_size: int,
        *,
        seed: int = 0,
        max_episode_frames: int | None = None,
        max_episode_steps: int | None = None,
        backend: str | None = None,
        render_size: tuple[int, int] = (240, 320),
        render_camera: str = "track",
        **task_kwargs: Any,
    ) -> None:
        super().__init__(batch_size, seed)
        try:
            height, width = (check_positive_int("render_size entries", int(v)) for v in render_size)
        except (TypeError, ValueError) as error:
            raise ValueError(f"render_size must be (height, width), positive, got {render_size!r}") from error
        self.render_size = (height, width)
        if render_camera not in RENDER_CAMERAS:
            raise ValueError(f"render_camera must be one of {RENDER_CAMERAS}, got {render_camera!r}")
        self.render_camera = render_camera
        self._renderer: Any = None  # a MujocoRenderer once screen(), render_states() or prepare_rendering() is called
        self._renderer_lock = threading.Lock()  # one renderer, whichever thread asks first
        self.task = resolve_mujoco_task(task)
        if max_episode_steps is not None and max_episode_frames is not None:
            raise ValueError("give max_episode_frames or its Gymnasium spelling max_episode_steps, not both")
        name = "max_episode_steps" if max_episode_steps is not None else "max_episode_frames"
        limit = check_optional_positive_int(name, max_episode_steps if max_episode_steps is not None else max_episode_frames)
        self.max_episode_steps = MAX_EPISODE_STEPS if limit is None else limit
        self.settings = self.task.settings(**task_kwargs)
        self.main_body = _check_model(self.task, self.settings)
        arguments = (self.task, self.settings, self.batch_size, self.max_episode_steps, self.main_body)

        def custom():
            from workbench.envs.mujoco.ops_backend import OpsMujocoBackend

            return OpsMujocoBackend(*arguments)

        def reference():
            from workbench.envs.mujoco.reference import ReferenceMujocoBackend

            return ReferenceMujocoBackend(*arguments)

        self._start_backend(backend, custom, reference, "MuJoCo falls back to the slow Gymnasium reference backend")
        self.action_size = self._backend.action_size
        self.action_low = np.ascontiguousarray(self._backend.ctrl_range[:, 0], np.float32)
        self.action_high = np.ascontiguousarray(self._backend.ctrl_range[:, 1], np.float32)
        self.observation_shape = (self._backend.observation_size,)

    @property
    def env_id(self) -> str:
        return self.task.id

    def _label(self) -> str:
        return self.task.id

    # Hooks of EnvBatch.
    def _reset(self, indices, seeds):
        self._backend.reset(indices, seeds)
        return self._ended(indices)  # a reset whose observation is not finite ends its episode (unstable)

    def _ended(self, indices):
        status = self._backend.status(indices)
        return status["terminated"] | status["truncated"]

    def _step(self, indices, actions):
        rewards, terminated, truncated = self._backend.step(indices, actions)
        return rewards, terminated | truncated

    def _step_and_observe(self, indices, actions):
        rewards, terminated, truncated, observations = self._backend.step_and_observe(indices, actions)
        return rewards, terminated | truncated, observations

    def _close(self):
        super()._close()
        with self._renderer_lock:
            renderer, self._renderer = self._renderer, None
        if renderer is not None:
            renderer.close()

    # MuJoCo extras.
    def status(self, indices: Indices = None) -> dict[str, np.ndarray]:
        """dict of [n] arrays: episode_return (float64), episode_steps, done, terminated, truncated, unstable, and
        the task's info terms of the last step (Gymnasium's names, e.g. x_velocity, reward_ctrl)."""
        indices = self.check_indices(indices)
        status = self._backend.status(indices)
        status["done"] = self._done[indices].copy()
        common = ("episode_return", "episode_steps", "done", "terminated", "truncated", "unstable")
        return {name: status[name] for name in common + self.task.info}

    def step_info(self, indices: Indices = None) -> dict[str, np.ndarray]:
        """The task's info terms of the last step (reward components, x_velocity, ...) as {name: float64 [n]}."""
        status = self.status(indices)
        return {name: np.asarray(status[name], np.float64) for name in self.task.info}

    def episode_frames(self, indices: Indices = None) -> np.ndarray:
        """Steps of the current episodes so far (one frame per step)."""
        return self.status(indices)["episode_steps"].astype(np.int64)

    def physics_state(self, indices: Indices = None) -> tuple[np.ndarray, np.ndarray]:
        """(qpos float64 [n, nq], qvel float64 [n, nv]) of started simulations."""
        qpos, qvel, _ = self._backend.physics_state(self.check_indices(indices, started=True))
        return qpos, qvel

    def set_physics_state(self, indices: Indices, qpos: np.ndarray, qvel: np.ndarray) -> np.ndarray:
        """Puts started simulations in the state (qpos [n, nq], qvel [n, nv]); returns their observations. A state
        whose observation is not finite in float32 (finite but huge values) ends its episode as a step would: done,
        truncated, flagged unstable, observing zeros."""
        indices = self.check_indices(indices, started=True)
        arrays = []
        for name, values, width in (("qpos", qpos, self._backend.nq), ("qvel", qvel, self._backend.nv)):
            array = np.asarray(values, np.float64)
            if array.shape != (indices.size, width):
                raise ValueError(f"{name} must have shape [{indices.size}, {width}], got {list(array.shape)}")
            if not np.all(np.isfinite(array)):
                raise ValueError(f"{name} must be finite")
            arrays.append(array)
        observations = self._backend.set_physics_state(indices, *arrays)
        self._done[indices] |= self._ended(indices)
        return observations

    def screen(self, indices: Indices = None) -> np.ndarray:
        """RGB frames uint8 [n, height, width, 3] (render_size) of the simulations' current states, rendered by
        Gymnasium's renderer with the render_camera (in a render process: workbench.envs.mujoco.render)."""
        return self.render_states(*self.physics_state(indices))

    def render_states(self, qpos: np.ndarray, qvel: np.ndarray) -> np.ndarray:
        """RGB frames uint8 [n, height, width, 3] of given physics states (qpos [n, nq], qvel [n, nv], as
        physics_state() returns them): screen() of a state taken earlier, so that rendering (about 40 ms a frame
        in software) can happen outside the thread that steps the simulations. Thread-safe."""
        return self._started_renderer().render(qpos, qvel)

    def prepare_rendering(self) -> None:
        """Starts the render process now (about a second), so that the first frame does not wait for it."""
        self._started_renderer()

    def _started_renderer(self):
        with self._renderer_lock:
            if self._renderer is None:
                from workbench.envs.mujoco.render import MujocoRenderer

                kwargs = dict(self.settings, xml_file=self.task.xml_path(self.settings))
                if "main_body" in kwargs:
                    kwargs["main_body"] = self.main_body
                tracked = self.main_body if self.render_camera == "track" else None
                self._renderer = MujocoRenderer(self.task.gymnasium_id, kwargs, self.render_size, tracked_body=tracked)
            return self._renderer

    @property
    def capabilities(self) -> frozenset:
        """The family's, IN_GRAPH and GRAPH_STEPS on the ops backend, and FEET_CONTACT for a task with feet."""
        capabilities = super().capabilities
        in_graph = {GRAPH_STEPS} if IN_GRAPH in capabilities else set()
        return capabilities | in_graph | ({FEET_CONTACT} if self.task.feet else set())

    def step_in_graph(self, indices: Any, actions: Any) -> tuple[Any, Any]:
        """One step inside the caller's graph by the simulations' op: (rewards, terminated or truncated) tensors
        (capability GRAPH_STEPS; see EnvBatch.step_in_graph)."""
        self.require(GRAPH_STEPS, "step_in_graph()")
        from workbench.ops import mujoco_env

        rewards, terminated, truncated = mujoco_env.step(self.ops_handle, indices, actions)
        return rewards, terminated | truncated

    def feet_contact(self, indices: Indices = None) -> np.ndarray:
        """float64 [n, feet]: per foot of the task (MujocoTask.feet), the share of the episode's steps that ended with
        it touching the ground (a contact of its geom with a geom of the world body), counted inside each step;
        0 before the first step. Needs FEET_CONTACT."""
        self.require(FEET_CONTACT, "feet_contact()")
        return self._backend.feet_contact(self.check_indices(indices, started=True))

    def body_position(self, indices: Indices = None) -> np.ndarray:
        """float64 [n, 2]: the world (x, y) of the main body: body 1 (the torso; InvertedPendulum's cart), or Ant's
        main_body setting."""
        return self._backend.physics_state(self.check_indices(indices, started=True))[2]
