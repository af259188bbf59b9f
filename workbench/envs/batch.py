"""EnvBatch: the interface every environment batch shares (Atari and MuJoCo on the ops or their references, Gymnasium).

A batch holds batch_size environments of one kind. Calls name the
environments they touch by `indices`, so episodes of different lengths never
wait for each other:

    obs = batch.reset()                        # all, seeds derived from the batch seed
    rewards, done = batch.step([0, 3], [1, 2])  # only environments 0 and 3
    obs = batch.observation([0, 3])

Actions are discrete (num_actions: ints in [0, num_actions)) or continuous (action_size: float rows
[n, action_size], finite, nominally within [action_low, action_high]; what happens outside that range
is the environment's rule, e.g. MuJoCo clamps controls to the actuators' range).

Optional features are declared capabilities, asked for by name (never by hasattr):

    batch.supports(SCREEN)          # screen(indices): RGB frames for dashboards and videos
    batch.supports(RAM)             # ram(indices): console RAM (Atari), a behaviour characterisation
    batch.supports(IN_GRAPH)        # ops_handle and observe_in_graph(): observations made inside graphs
    batch.supports(PHYSICS_STATE)   # physics_state / set_physics_state(indices, qpos, qvel): replays (MuJoCo)
    batch.supports(BODY_POSITION)   # body_position(indices): the main body's world (x, y), for behaviours
    batch.supports(RENDER_STATES)   # render_states(qpos, qvel): frames of states taken earlier (thread-safe);
                                    # prepare_rendering(): start the renderer before the first frame is wanted
    batch.supports(FEET_CONTACT)    # feet_contact(indices): each foot's share of steps on the ground (MuJoCo)
    batch.supports(GRAPH_STEPS)     # step_in_graph(): steps inside graphs, one frame each (MuJoCo on the ops)

Every batch counts its episodes' frames (episode_frames: Atari frames with no-ops, else steps) and
names its actions when it can (action_meanings, or None).

This class validates every argument (a ValueError/TypeError naming it) and
keeps the per-episode seeds and done flags, so drive one batch from one thread
at a time (separate batches in separate threads are fine); subclasses implement the _reset/_step/... hooks
on valid, deduplicated int32 indices.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from workbench.checks import check_positive_int
from workbench.envs.rng import episode_seed

SCREEN, RAM, IN_GRAPH = "screen", "ram", "in_graph"
PHYSICS_STATE, BODY_POSITION, RENDER_STATES = "physics_state", "body_position", "render_states"
FEET_CONTACT, GRAPH_STEPS = "feet_contact", "graph_steps"
Indices = Sequence[int] | np.ndarray | None  # environment indices: a vector of ints (None: all)
CAPABILITIES = (SCREEN, RAM, IN_GRAPH, PHYSICS_STATE, BODY_POSITION, RENDER_STATES, FEET_CONTACT, GRAPH_STEPS)


def _integer_vector(values, name):
    array = np.asarray(values)
    if array.dtype == object or not (np.issubdtype(array.dtype, np.integer) or array.size == 0):
        raise TypeError(f"{name} must hold integers, got dtype {array.dtype}")
    if array.ndim == 0:
        array = array.reshape(1)
    if array.ndim != 1:
        raise ValueError(f"{name} must be a vector, got shape {array.shape}")
    return array.astype(np.int64) if array.size == 0 else array  # [] is float64 to numpy


class EnvBatch:
    """Base of all environment batches; see the module docstring."""

    def __init__(self, batch_size: int, seed: int) -> None:
        check_positive_int("batch_size", batch_size)
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
            raise TypeError(f"seed must be an integer, got {seed!r}")
        self.batch_size = int(batch_size)
        self.seed = int(seed)
        self._episodes = np.zeros(self.batch_size, np.int64)  # resets so far, per environment
        self._started = np.zeros(self.batch_size, bool)
        self._done = np.zeros(self.batch_size, bool)
        self._closed = False

    # -- what subclasses provide -------------------------------------------------------
    num_actions: int | None = None  # size of the discrete action set (discrete actions)
    action_size: int | None = None  # length of an action vector (continuous actions)
    action_low: np.ndarray | None = None  # float32 [action_size], the nominal range of continuous actions
    action_high: np.ndarray | None = None
    observation_shape: tuple[int, ...]  # declared by each subclass (the contract checks it)
    observation_dtype: Any = None

    @property
    def continuous_actions(self) -> bool:
        """Whether actions are float vectors [action_size] (else ints in [0, num_actions))."""
        return self.action_size is not None

    @property
    def capabilities(self) -> frozenset:
        """The optional features this batch has (names from CAPABILITIES)."""
        return frozenset()

    def supports(self, capability: str) -> bool:
        """Whether this batch has the optional feature `capability` (one of CAPABILITIES)."""
        if capability not in CAPABILITIES:
            raise ValueError(f"capability must be one of {CAPABILITIES}, got {capability!r}")
        return capability in self.capabilities

    def require(self, capability: str, purpose: str) -> None:
        """ValueError saying `purpose` needs `capability` unless this batch has it."""
        if not self.supports(capability):
            raise ValueError(
                f"{purpose} needs a batch with the {capability!r} capability; "
                f"{type(self).__name__} has {sorted(self.capabilities) or 'none'}"
            )

    @property
    def action_meanings(self) -> list | None:
        """Names of the actions, or None when the environment does not name them."""
        return None

    @property
    def ops_handle(self) -> Any:
        """The emulators' resource handle for use inside graphs (capability IN_GRAPH)."""
        self.require(IN_GRAPH, "ops_handle")
        raise NotImplementedError(f"{type(self).__name__} declares IN_GRAPH but has no ops_handle")

    def observe_in_graph(self, indices: Any) -> Any:
        """The observations of `indices` (an int32 tensor) as a tensor, made inside the caller's graph by the
        simulators' own op (capability IN_GRAPH; no validation: the graph's caller passes valid indices)."""
        self.require(IN_GRAPH, "observe_in_graph()")
        raise NotImplementedError(f"{type(self).__name__} declares IN_GRAPH but has no observe_in_graph()")

    def step_in_graph(self, indices: Any, actions: Any) -> tuple[Any, Any]:
        """One step of `indices` (an int32 tensor) with `actions` (a float32 tensor [n, action_size]) made inside the
        caller's graph by the simulators' own op: (rewards float32 [n], done bool [n]) tensors; every step is one
        frame (capability GRAPH_STEPS). No validation and no bookkeeping: the graph's caller passes started, running
        episodes and finite actions, and tells the batch afterwards (record_graph_steps)."""
        self.require(GRAPH_STEPS, "step_in_graph()")
        raise NotImplementedError(f"{type(self).__name__} declares GRAPH_STEPS but has no step_in_graph()")

    def record_graph_steps(self, indices: Indices, done: Sequence[bool] | np.ndarray) -> None:
        """Tells the batch that graphs stepped `indices` (step_in_graph) and which of their episodes ended, as step()
        would have recorded it (capability GRAPH_STEPS)."""
        self.require(GRAPH_STEPS, "record_graph_steps()")
        checked = self.check_indices(indices, started=True)
        flags = np.asarray(done)
        if flags.dtype != bool or flags.shape != checked.shape:
            raise ValueError(f"done must be bool [{checked.size}] (one flag per index), got {flags.dtype}{list(flags.shape)}")
        self._done[checked] = flags

    def screen(self, indices: Indices = None) -> np.ndarray:
        """RGB screens uint8 [n, H, W, 3] of the last frame (capability SCREEN)."""
        self.require(SCREEN, "screen()")
        raise NotImplementedError(f"{type(self).__name__} declares SCREEN but has no screen()")

    def ram(self, indices: Indices = None) -> np.ndarray:
        """Console RAM uint8 [n, bytes] (capability RAM)."""
        self.require(RAM, "ram()")
        raise NotImplementedError(f"{type(self).__name__} declares RAM but has no ram()")

    def physics_state(self, indices: Indices = None) -> tuple[np.ndarray, np.ndarray]:
        """(qpos float64 [n, nq], qvel float64 [n, nv]) of the simulations (capability PHYSICS_STATE)."""
        self.require(PHYSICS_STATE, "physics_state()")
        raise NotImplementedError(f"{type(self).__name__} declares PHYSICS_STATE but has no physics_state()")

    def set_physics_state(self, indices: Indices, qpos: np.ndarray, qvel: np.ndarray) -> np.ndarray:
        """Puts started simulations in the state (qpos, qvel); returns their observations (capability PHYSICS_STATE)."""
        self.require(PHYSICS_STATE, "set_physics_state()")
        raise NotImplementedError(f"{type(self).__name__} declares PHYSICS_STATE but has no set_physics_state()")

    def body_position(self, indices: Indices = None) -> np.ndarray:
        """float64 [n, 2]: the world (x, y) of each simulation's main body (capability BODY_POSITION)."""
        self.require(BODY_POSITION, "body_position()")
        raise NotImplementedError(f"{type(self).__name__} declares BODY_POSITION but has no body_position()")

    def feet_contact(self, indices: Indices = None) -> np.ndarray:
        """float64 [n, feet]: each foot's share of the episode's steps that ended with it on the ground (capability
        FEET_CONTACT)."""
        self.require(FEET_CONTACT, "feet_contact()")
        raise NotImplementedError(f"{type(self).__name__} declares FEET_CONTACT but has no feet_contact()")

    def render_states(self, qpos: np.ndarray, qvel: np.ndarray) -> np.ndarray:
        """RGB frames uint8 [n, H, W, 3] of physics states taken earlier by physics_state(), from any thread
        (capability RENDER_STATES): a dashboard paints them while the simulations go on stepping."""
        self.require(RENDER_STATES, "render_states()")
        raise NotImplementedError(f"{type(self).__name__} declares RENDER_STATES but has no render_states()")

    def prepare_rendering(self) -> None:
        """Starts what render_states() needs (a render process, a GL context), from any thread, so that the first
        frame a dashboard asks for does not wait for it (capability RENDER_STATES); nothing to do by default."""
        self.require(RENDER_STATES, "prepare_rendering()")

    def episode_frames(self, indices: Indices = None) -> np.ndarray:
        """Frames of the current episodes so far, int [n] (Atari: no-ops included; otherwise steps)."""
        raise NotImplementedError

    def step_info(self, indices: Indices = None) -> dict[str, np.ndarray]:
        """The last step's info terms as {name: float64 [n]} (Gymnasium's names: MuJoCo's reward components and
        x_velocity); {} for batches without any."""
        self.check_indices(indices)
        return {}

    def _reset(self, indices, seeds):
        """Starts the episodes; may return their done flags (an episode can end during its reset)."""
        raise NotImplementedError

    def _step(self, indices, actions):
        raise NotImplementedError

    def _observation(self, indices):
        raise NotImplementedError

    def _close(self):
        pass

    # -- the public interface ----------------------------------------------------------
    def reset(self, indices: Indices = None, seeds: Sequence[int] | np.ndarray | None = None) -> np.ndarray:
        """Starts new episodes; returns their observations. seeds default to per-episode seeds of the batch seed."""
        return self.observation(self.start(indices, seeds))

    def start(self, indices: Indices = None, seeds: Sequence[int] | np.ndarray | None = None) -> np.ndarray:
        """reset() without reading the observations; returns the validated indices."""
        checked = self.check_indices(indices)
        if seeds is None:
            seed_values = np.array([episode_seed(self.seed, i, self._episodes[i]) for i in checked], np.int64)
        else:
            seed_values = _integer_vector(seeds, "seeds")
            if seed_values.shape[0] != checked.shape[0]:
                raise ValueError(f"seeds must have one value per index ({checked.shape[0]}), got {seed_values.shape[0]}")
            if seed_values.size and (seed_values.min() < -(1 << 63) or seed_values.max() >= (1 << 63)):
                raise ValueError("seeds must fit in int64")
            seed_values = seed_values.astype(np.int64)
        done = self._reset(checked, seed_values) if checked.size else None
        self._episodes[checked] += 1
        self._started[checked] = True
        self._done[checked] = False if done is None else np.asarray(done, bool)
        return checked

    def _step_and_observe(self, indices, actions):
        rewards, done = self._step(indices, actions)
        return rewards, done, self._observation(indices)

    def step(self, indices: Indices, actions: Sequence[int] | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """One step of the environments at indices with actions (ints [n], or floats [n, action_size] when
        continuous); returns (rewards float32 [n], done bool [n])."""
        checked, action_values = self._check_step(indices, actions)
        if not checked.size:
            return np.zeros(0, np.float32), np.zeros(0, bool)
        rewards, done = self._step(checked, action_values)
        rewards, done = np.asarray(rewards, np.float32), np.asarray(done, bool)
        self._done[checked] = done
        return rewards, done

    def step_and_observe(
        self, indices: Indices, actions: Sequence[int] | np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """step() and then observation() of the same environments, in one pass where the backend can."""
        checked, action_values = self._check_step(indices, actions)
        if not checked.size:
            return np.zeros(0, np.float32), np.zeros(0, bool), self.observation(checked)
        rewards, done, observations = self._step_and_observe(checked, action_values)
        rewards, done = np.asarray(rewards, np.float32), np.asarray(done, bool)
        self._done[checked] = done
        return rewards, done, np.asarray(observations)

    def _check_step(self, indices, actions):
        indices = self.check_indices(indices, started=True)
        actions = self._check_actions(actions, indices.shape[0])
        finished = np.flatnonzero(self._done[indices])
        if finished.size:
            i = finished[0]
            raise ValueError(f"indices[{i}] = {indices[i]} is at the end of its episode; reset it before stepping")
        return indices, actions

    def _check_actions(self, actions, n):
        """int32 [n] discrete actions, or float32 [n, action_size] finite continuous actions."""
        if self.continuous_actions:
            array = np.asarray(actions)
            if array.dtype == object or not (np.issubdtype(array.dtype, np.floating) or np.issubdtype(array.dtype, np.integer)):
                raise TypeError(f"actions must hold real numbers, got dtype {array.dtype}")
            if array.shape != (n, self.action_size):
                raise ValueError(
                    f"actions must have shape [{n}, {self.action_size}] (one row per index), got {list(array.shape)}"
                )
            with np.errstate(over="ignore"):  # beyond float32 becomes inf, refused just below
                array = array.astype(np.float32)
            bad = np.argwhere(~np.isfinite(array))
            if bad.size:
                i, j = bad[0]
                raise ValueError(f"actions[{i}, {j}] = {array[i, j]} is not finite")
            return array
        actions = _integer_vector(actions, "actions")
        if actions.shape[0] != n:
            raise ValueError(f"actions must have one value per index ({n}), got {actions.shape[0]}")
        bad = np.flatnonzero((actions < 0) | (actions >= self.num_actions))
        if bad.size:
            i = bad[0]
            raise ValueError(
                f"actions[{i}] = {actions[i]} is not an action of this environment: valid actions are 0..{self.num_actions - 1}"
            )
        return actions.astype(np.int32)

    def observation(self, indices: Indices = None) -> np.ndarray:
        """Current observations of the environments at indices ([n, *observation_shape])."""
        indices = self.check_indices(indices, started=True)
        if not indices.size:
            return np.zeros((0,) + tuple(self.observation_shape), self.observation_dtype)
        return np.asarray(self._observation(indices))

    def done(self, indices: Indices = None) -> np.ndarray:
        """Whether each episode at indices has ended (never-reset environments count as not done)."""
        return self._done[self.check_indices(indices)].copy()

    def close(self) -> None:
        """Frees the environments; later calls raise. Safe to call twice."""
        if not self._closed:
            self._closed = True
            self._close()

    def __enter__(self) -> EnvBatch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def check_indices(self, indices: Indices, started: bool = False) -> np.ndarray:
        """Validated int32 indices (all environments when None): in range, distinct, reset if `started`."""
        if self._closed:
            raise RuntimeError(f"this {type(self).__name__} is closed")
        values = np.arange(self.batch_size, dtype=np.int32) if indices is None else _integer_vector(indices, "indices")
        bad = np.flatnonzero((values < 0) | (values >= self.batch_size))
        if bad.size:
            i = bad[0]
            raise ValueError(f"indices[{i}] = {values[i]} is out of range [0, {self.batch_size})")
        if np.unique(values).size != values.size:
            distinct, counts = np.unique(values, return_counts=True)
            raise ValueError(f"indices must be distinct; {distinct[counts > 1].tolist()} repeated")
        if started:
            fresh = np.flatnonzero(~self._started[values])
            if fresh.size:
                i = fresh[0]
                raise ValueError(f"indices[{i}] = {values[i]} has not been reset yet; call reset first")
        return values.astype(np.int32)
