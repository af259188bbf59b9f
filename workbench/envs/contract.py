"""check_batch: the contract every EnvBatch keeps, checked on a live batch (yours too).

    from workbench.envs import check_batch, MujocoBatch
    check_batch(MujocoBatch("hopper", 4))                                     # raises BatchContractError
    check_batch(MujocoBatch("hopper", 4), twin=MujocoBatch("hopper", 4, backend="reference"))

In the spirit of Gymnasium's utils/env_checker.py and stable-baselines3's common/env_checker.py, for
batches: what the evaluator, the trainer and the dashboards rely on without looking.

  interface     batch_size, observation_shape and observation_dtype declared; discrete actions
                (num_actions >= 1) or continuous ones (action_size, float32 action_low <= action_high)
  observations  reset, observation and step_and_observe return [n, *observation_shape] of
                observation_dtype; an empty index list gives empty arrays
  seeding       the same seeds and actions give the same observations, rewards and done flags
                (reset seeding makes episodes reproducible; stepping is deterministic)
  indices       a step touches only the named environments: the others keep their observations,
                done flags and frame counts
  capabilities  each declared capability works and returns what it declares; each undeclared
                one raises a ValueError naming it
  bad input     out-of-range, repeated and non-integer indices, actions of the wrong shape, dtype
                or range, non-finite continuous actions, seeds of the wrong length: a ValueError or
                TypeError that names the argument, and the batch unchanged; stepping after the end of
                an episode, and (on a batch with environments never reset) stepping or observing
                before a reset: a ValueError that says to reset
  twin          with twin= (the same environments on the other backend, or any batch that must
                agree), both play the same seeds and actions to the same observations, rewards,
                done flags and frame counts

The check resets and steps the batch's environments (the batch stays open and usable) and raises
BatchContractError listing every broken clause, or returns the names of the clauses it checked.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np

from workbench.envs.batch import (
    BODY_POSITION,
    CAPABILITIES,
    GRAPH_STEPS,
    IN_GRAPH,
    PHYSICS_STATE,
    RAM,
    RENDER_STATES,
    SCREEN,
    EnvBatch,
)

CLAUSES = ("interface", "observations", "seeding", "indices", "capabilities", "bad_input", "twin")


class BatchContractError(AssertionError):
    """A batch broke clauses of the contract; the message lists each with what was seen."""


def check_batch(
    batch: EnvBatch, *, twin: EnvBatch | None = None, steps: int = 20, seed: int = 1234, skip: Iterable[str] = ()
) -> list[str]:
    """Checks `batch` against the contract (module docstring); returns the clauses checked.

    twin: a batch of the same environments that must play identically (checked only when given).
    steps: steps per played sequence. skip: clauses or capability names not to check (e.g. "screen", whose MuJoCo
    renderer starts a process).
    """
    if not isinstance(batch, EnvBatch):
        raise TypeError(f"batch must be a workbench.envs.EnvBatch, got {type(batch).__name__}")
    if twin is not None and not isinstance(twin, EnvBatch):
        raise TypeError(f"twin must be a workbench.envs.EnvBatch, got {type(twin).__name__}")
    skip = set(skip)
    unknown = skip - set(CLAUSES) - set(CAPABILITIES)
    if unknown:
        raise ValueError(
            f"skip names no clause or capability: {sorted(unknown)}; clauses: {CLAUSES}, capabilities: {CAPABILITIES}"
        )
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise ValueError(f"steps must be a positive int, got {steps!r}")
    checker = _Checker(batch, np.random.default_rng(seed), steps, skip)
    clauses = [c for c in CLAUSES if c not in skip and (c != "twin" or twin is not None)]
    if "bad_input" in clauses:
        try:
            checker.unreset()  # before anything resets the batch
        except _Broken as broken:
            checker.broken.append(f"bad_input: {broken}")
    for clause in clauses:
        try:
            if clause == "twin":
                checker.twin(twin)
            else:
                getattr(checker, clause)()
        except _Broken as broken:
            checker.broken.append(f"{clause}: {broken}")
        except Exception as error:  # noqa: BLE001 - any other exception breaks the clause
            checker.broken.append(f"{clause}: raised {type(error).__name__}: {error}")
        if clause == "interface" and checker.broken:
            break  # nothing else can be checked without a sound interface
    if checker.broken:
        raise BatchContractError(f"{batch!r} breaks the environment contract:\n  " + "\n  ".join(checker.broken))
    return clauses


class _Broken(Exception):
    """One broken clause (its message says what was seen)."""


def _require(condition, message):
    if not condition:
        raise _Broken(message)


class _Checker:
    def __init__(self, batch, rng, steps, skip):
        self.batch, self.rng, self.steps, self.skip = batch, rng, steps, skip
        self.broken = []

    # -- helpers ------------------------------------------------------------------------------
    def actions(self, n, rng=None):
        """Valid actions for n environments: uniform over the discrete set, or within the nominal range."""
        rng = rng or self.rng
        b = self.batch
        if b.continuous_actions:
            low = np.where(np.isfinite(b.action_low), b.action_low, -1.0)
            high = np.where(np.isfinite(b.action_high), b.action_high, 1.0)
            return rng.uniform(low, high, size=(n, b.action_size)).astype(np.float32)
        return rng.integers(b.num_actions, size=n).astype(np.int32)

    def observations_ok(self, name, observations, n):
        b = self.batch
        array = np.asarray(observations)
        expected = (n,) + tuple(b.observation_shape)
        _require(array.shape == expected, f"{name} returned shape {array.shape}, declared {expected}")
        _require(
            array.dtype == np.dtype(b.observation_dtype),
            f"{name} returned dtype {array.dtype}, declared {np.dtype(b.observation_dtype)}",
        )
        return array

    def play(self, batch, seeds, action_seed):
        """Resets every environment with seeds, then steps the live ones `steps` times with actions drawn from
        action_seed; returns the trace (observations, rewards, done, frames per step)."""
        rng = np.random.default_rng(action_seed)
        trace = [batch.reset(None, seeds).copy(), batch.done().copy()]
        for _ in range(self.steps):
            actions = self.actions(batch.batch_size, rng)  # drawn for all, so the stream does not depend on done
            live = np.flatnonzero(~batch.done())
            if not live.size:
                break
            rewards, done, observations = batch.step_and_observe(live, actions[live])
            trace += [live, rewards.copy(), done.copy(), observations.copy(), batch.episode_frames().copy()]
        return trace

    @staticmethod
    def same(a, b):
        return len(a) == len(b) and all(np.array_equal(x, y, equal_nan=np.asarray(x).dtype.kind == "f") for x, y in zip(a, b))

    # -- clauses ------------------------------------------------------------------------------
    def interface(self):
        b = self.batch
        _require(isinstance(b.batch_size, int) and b.batch_size >= 1, f"batch_size {b.batch_size!r}")
        shape = getattr(b, "observation_shape", None)
        _require(
            isinstance(shape, tuple) and all(isinstance(d, int) and d >= 0 for d in shape),
            f"observation_shape must be a tuple of sizes, got {shape!r}",
        )
        _require(b.observation_dtype is not None, "observation_dtype is not declared")
        if b.continuous_actions:
            _require(isinstance(b.action_size, int) and b.action_size >= 0, f"action_size {b.action_size!r}")
            for name in ("action_low", "action_high"):
                value = getattr(b, name)
                _require(
                    isinstance(value, np.ndarray) and value.dtype == np.float32 and value.shape == (b.action_size,),
                    f"{name} must be float32 [{b.action_size}], got {value!r}",
                )
            _require(np.all(b.action_low <= b.action_high), "action_low exceeds action_high")
            _require(b.num_actions is None, "both num_actions and action_size are declared")
        else:
            _require(
                isinstance(b.num_actions, int) and b.num_actions >= 1,
                f"num_actions must be a positive int (or action_size declared), got {b.num_actions!r}",
            )
        _require(
            set(b.capabilities) <= set(CAPABILITIES), f"unknown capabilities {sorted(set(b.capabilities) - set(CAPABILITIES))}"
        )

    def observations(self):
        b = self.batch
        n = b.batch_size
        self.observations_ok("reset()", b.reset(), n)
        self.observations_ok("observation()", b.observation(), n)
        live = np.flatnonzero(~b.done())
        rewards, done, observations = b.step_and_observe(live, self.actions(live.size))
        self.observations_ok("step_and_observe()", observations, live.size)
        _require(
            np.asarray(rewards).shape == (live.size,) and np.asarray(done).shape == (live.size,),
            f"step_and_observe() returned rewards {np.shape(rewards)} and done {np.shape(done)} for {live.size} indices",
        )
        live = np.flatnonzero(~b.done())
        rewards, done = b.step(live, self.actions(live.size))
        _require(
            rewards.dtype == np.float32 and done.dtype == bool,
            f"step() returned rewards {rewards.dtype} and done {done.dtype}, expected float32 and bool",
        )
        self.observations_ok("observation([])", b.observation([]), 0)
        rewards, done = b.step([], self.actions(0))
        _require(rewards.shape == (0,) and done.shape == (0,), "step([]) must return empty arrays")
        frames = b.episode_frames()
        _require(np.asarray(frames).shape == (n,) and np.all(np.asarray(frames) >= 0), f"episode_frames() returned {frames!r}")
        info = b.step_info()
        _require(
            isinstance(info, dict) and all(np.asarray(v).shape == (n,) for v in info.values()),
            "step_info() must map names to [n] arrays",
        )

    def seeding(self):
        b = self.batch
        seeds = self.rng.integers(-(1 << 62), 1 << 62, size=b.batch_size)
        first = self.play(b, seeds, action_seed=7)
        second = self.play(b, seeds, action_seed=7)
        _require(self.same(first[:1], second[:1]), "the same seeds reset to different observations")
        _require(self.same(first, second), "the same seeds and actions played different episodes")

    def indices(self):
        b = self.batch
        if b.batch_size < 2:
            return
        b.reset()
        names = np.arange(b.batch_size)
        for _ in range(self.steps):
            live = np.flatnonzero(~b.done())
            if live.size < 2:
                b.reset(np.flatnonzero(b.done()))
                continue
            chosen = self.rng.permutation(live)[: self.rng.integers(1, live.size)]
            others = np.setdiff1d(names, chosen)
            before = (b.observation(others), b.done(others), b.episode_frames(others))
            b.step(chosen, self.actions(chosen.size))
            after = (b.observation(others), b.done(others), b.episode_frames(others))
            _require(self.same(before, after), f"stepping {chosen.tolist()} changed environments {others.tolist()}")

    def capabilities(self):
        b = self.batch
        declared = b.capabilities
        b.reset()
        indices = np.array([b.batch_size - 1, 0][: b.batch_size], np.int32)
        n = indices.size
        checks: dict[str, Callable[[], None]] = {
            SCREEN: lambda: self.screen_ok(indices),
            RAM: lambda: self.array_ok("ram()", b.ram(indices), n, np.uint8, 2),
            IN_GRAPH: lambda: self.in_graph_ok(indices),
            PHYSICS_STATE: lambda: self.physics_state_ok(indices),
            BODY_POSITION: lambda: _require(
                np.asarray(b.body_position(indices)).shape == (n, 2), "body_position() must return [n, 2]"
            ),
            RENDER_STATES: lambda: self.render_states_ok(indices),
            GRAPH_STEPS: lambda: self.graph_steps_ok(indices),
        }
        for capability, check in checks.items():
            if capability in self.skip:
                continue
            _require(b.supports(capability) == (capability in declared), f"supports({capability!r}) disagrees")
            if capability in declared:
                check()
            else:
                call = {
                    SCREEN: lambda: b.screen(indices),
                    RAM: lambda: b.ram(indices),
                    IN_GRAPH: lambda: b.ops_handle,
                    PHYSICS_STATE: lambda: b.physics_state(indices),
                    BODY_POSITION: lambda: b.body_position(indices),
                    RENDER_STATES: lambda: b.render_states(np.zeros((n, 1)), np.zeros((n, 1))),
                    GRAPH_STEPS: lambda: b.record_graph_steps(indices, np.zeros(n, bool)),
                }[capability]
                try:
                    call()
                except ValueError as error:
                    _require(capability in str(error), f"undeclared {capability!r} raised without naming it: {error}")
                else:
                    raise _Broken(f"undeclared capability {capability!r} did not raise")

    def array_ok(self, name, value, n, dtype, ndim):
        array = np.asarray(value)
        _require(
            array.shape[:1] == (n,) and array.ndim == ndim and array.dtype == dtype,
            f"{name} returned {array.dtype}{list(array.shape)}, expected {np.dtype(dtype)} [{n}, ...] of rank {ndim}",
        )

    def screen_ok(self, indices):
        frames = np.asarray(self.batch.screen(indices))
        self.array_ok("screen()", frames, indices.size, np.uint8, 4)
        _require(frames.shape[-1] == 3, f"screen() must return RGB frames, got shape {frames.shape}")

    def render_states_ok(self, indices):
        """prepare_rendering() returns; render_states() of a state taken now draws what screen() draws now (when the
        batch has SCREEN)."""
        b = self.batch
        b.prepare_rendering()
        frames = np.asarray(b.render_states(*b.physics_state(indices)))
        self.array_ok("render_states()", frames, indices.size, np.uint8, 4)
        if b.supports(SCREEN):
            _require(np.array_equal(frames, b.screen(indices)), "render_states() of the current state != screen()")

    def in_graph_ok(self, indices):
        import tensorflow as tf

        b = self.batch
        _require(b.ops_handle is not None, "ops_handle is None")
        inside = b.observe_in_graph(tf.constant(indices, tf.int32))
        _require(np.array_equal(np.asarray(inside), b.observation(indices)), "observe_in_graph() differs from observation()")

    def graph_steps_ok(self, indices):
        """step_in_graph() inside a graph, then record_graph_steps(), does what step() does from the same starts."""
        import tensorflow as tf

        b = self.batch
        seeds = np.arange(indices.size, dtype=np.int64) + 11
        actions = np.asarray(self.actions(indices.size), np.float32)

        @tf.function(autograph=False)
        def graph_step(slots, values):
            return b.step_in_graph(slots, values)

        b.start(indices, seeds)
        rewards, done = (np.asarray(value) for value in graph_step(tf.constant(indices, tf.int32), tf.constant(actions)))
        b.record_graph_steps(indices, done)
        inside = (rewards, done, b.observation(indices), b.done(indices), b.episode_frames(indices))
        b.start(indices, seeds)
        stepped = b.step(indices, actions)
        outside = (*stepped, b.observation(indices), b.done(indices), b.episode_frames(indices))
        _require(self.same(inside, outside), "step_in_graph() and record_graph_steps() differ from step()")
        b.reset()

    def physics_state_ok(self, indices):
        b = self.batch
        qpos, qvel = b.physics_state(indices)
        _require(
            qpos.ndim == 2
            and qvel.ndim == 2
            and qpos.shape[0] == qvel.shape[0] == indices.size
            and qpos.dtype == qvel.dtype == np.float64,
            "physics_state() must return float64 [n, nq] and [n, nv]",
        )
        before = b.observation(indices)
        observations = b.set_physics_state(indices, qpos, qvel)
        _require(np.array_equal(observations, before), "set_physics_state() of the current state changed observations")

    def unreset(self):
        """Stepping or observing an environment that was never reset is refused, naming the reset."""
        fresh = np.flatnonzero(~self.batch._started)
        if not fresh.size:
            return
        for what, call in (
            ("stepping", lambda: self.batch.step(fresh[:1], self.actions(1))),
            ("observing", lambda: self.batch.observation(fresh[:1])),
        ):
            try:
                call()
            except ValueError as error:
                _require("reset" in str(error), f"{what} an environment never reset raised without saying reset: {error}")
            else:
                raise _Broken(f"{what} an environment never reset was accepted")

    def bad_input(self):
        b = self.batch
        n = b.batch_size
        b.reset()
        before = (b.observation(), b.done(), b.episode_frames())
        good = self.actions(1)
        calls = [
            ("an index out of range", "indices", ValueError, lambda: b.step([n], good)),
            ("a negative index", "indices", ValueError, lambda: b.observation([-1])),
            ("a non-integer index", "indices", TypeError, lambda: b.step([0.5], good)),
            ("a matrix of indices", "indices", ValueError, lambda: b.step([[0]], good)),
            ("seeds of the wrong length", "seeds", ValueError, lambda: b.reset([0], seeds=[1, 2])),
            ("actions for too many indices", "actions", ValueError, lambda: b.step([0], self.actions(2))),
            ("string actions", "actions", TypeError, lambda: b.step([0], np.array([["x"] * (b.action_size or 1)]))),
        ]
        if n >= 2:
            calls.append(("repeated indices", "indices", ValueError, lambda: b.step([0, 0], self.actions(2))))
        if b.continuous_actions:
            bad = good.copy()
            if b.action_size:
                bad[0, -1] = np.nan
                calls.append(("a NaN action", "actions", ValueError, lambda: b.step([0], bad)))
            calls.append(
                (
                    "actions of the wrong width",
                    "actions",
                    ValueError,
                    lambda: b.step([0], np.zeros((1, b.action_size + 1), np.float32)),
                )
            )
        else:
            calls += [
                ("an action out of range", "actions", ValueError, lambda: b.step([0], [b.num_actions])),
                ("a negative action", "actions", ValueError, lambda: b.step([0], [-1])),
            ]
        for what, argument, error_type, call in calls:
            try:
                call()
            except (ValueError, TypeError) as error:
                _require(
                    isinstance(error, error_type),
                    f"{what} raised {type(error).__name__}, expected {error_type.__name__}: {error}",
                )
                _require(argument in str(error), f"{what} raised an error that does not name {argument!r}: {error}")
            else:
                raise _Broken(f"{what} was accepted")
        after = (b.observation(), b.done(), b.episode_frames())
        _require(self.same(before, after), "a refused call changed the batch")
        for _ in range(100_000):  # play environment 0 to the end of its episode
            if b.done([0])[0]:
                break
            b.step([0], self.actions(1))
        if b.done([0])[0]:
            try:
                b.step([0], self.actions(1))
            except ValueError as error:
                _require("reset" in str(error), f"stepping a finished episode raised without saying reset: {error}")
            else:
                raise _Broken("stepping a finished episode was accepted")

    def twin(self, twin):
        b = self.batch
        _require(
            twin.batch_size == b.batch_size
            and tuple(twin.observation_shape) == tuple(b.observation_shape)
            and twin.num_actions == b.num_actions
            and twin.action_size == b.action_size,
            "the twin declares another interface",
        )
        seeds = self.rng.integers(-(1 << 62), 1 << 62, size=b.batch_size)
        ours = self.play(b, seeds, action_seed=11)
        theirs = self.play(twin, seeds, action_seed=11)
        _require(self.same(ours[:2], theirs[:2]), "the twins reset the same seeds to different observations")
        for k in range(2, min(len(ours), len(theirs)), 5):
            step = (k - 2) // 5
            _require(self.same(ours[k : k + 5], theirs[k : k + 5]), f"the twins differ at step {step}")
        _require(len(ours) == len(theirs), "the twins' episodes end at different steps")
