"""SubPopulation: one environment batch and one model, running episodes slot by slot.

Each environment index is an episode slot. run() takes (request, episode)
jobs from a shared JobQueue whenever a slot is free, so a finished episode's
slot restarts at once with the next job and only running episodes are
stepped and computed (no padding to the longest episode). A step is one
inference call for all running episodes (each with its genome's weight slot
and, in perturbed mode, its low-rank factors) and one environment call.

With observation normalisation (the model's), the same graph call also adds each
running episode's raw observation to its slot's float64 sums (the episode's
observation statistics, read when it ends). A member whose weights or actions are
not finite (a diverged policy) ends its episode at once with a NaN return (the
worst fitness) and a warning. action_noise > 0 adds N(0, action_noise^2) to every
continuous action (clipped to the control range again), drawn from a generator seeded
by the episode's seed: training-time exploration (OpenAI-ES), the same on any layout.
"""
from __future__ import annotations

import collections
import functools
import threading
import time
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import tensorflow as tf

from workbench.envs.batch import IN_GRAPH, RENDER_STATES, SCREEN
from workbench.envs.rng import episode_seed
from workbench.evaluation.behaviour import checked_behaviour
from workbench.evaluation.telemetry import Stopwatch, Telemetry
from workbench.evaluation.weight_slots import WeightSlots
from workbench.ops import LowRankPerturbation, assign_slots


class JobQueue:
    """(request, episode) pairs handed out to sub-populations, in request order (or in `order`); thread-safe.

    Stopped once a sub-population fails (it sets `failed`) or the caller's `cancel` event is set:
    every sub-population then ends its loop after the current step. `dry_at` is the
    time.perf_counter() of the first take() that could not fill every free slot (the end
    of the round's busy phase; None while every take() was served in full).
    """

    def __init__(self, requests: Sequence[Any], cancel: threading.Event | None = None,
                 order: Sequence[int] | None = None) -> None:
        order = range(len(requests)) if order is None else order  # the requests whose episodes start first
        self._jobs = collections.deque((r, e) for r in order for e in range(requests[r].episodes))
        self._lock = threading.Lock()
        self.failed = threading.Event()
        self.cancel = cancel
        self.dry_at: float | None = None

    def stopped(self) -> bool:
        return self.failed.is_set() or (self.cancel is not None and self.cancel.is_set())

    def take(self, count: int) -> list[tuple[int, int]]:
        with self._lock:
            if self.stopped():
                return []
            if count > len(self._jobs) and self.dry_at is None:
                self.dry_at = time.perf_counter()
            return [self._jobs.popleft() for _ in range(min(count, len(self._jobs)))]

    def __len__(self) -> int:
        with self._lock:
            return len(self._jobs)


class Outcomes:
    """Per request: returns, steps and frames per episode, and behaviours when asked for."""

    def __init__(self, requests: Sequence[Any]) -> None:
        self.returns = [np.zeros(r.episodes) for r in requests]
        self.steps = [np.zeros(r.episodes, np.int64) for r in requests]
        self.frames = [np.zeros(r.episodes, np.int64) for r in requests]
        self.behaviours: list[list[Any] | None] = [[None] * r.episodes if r.behaviour else None for r in requests]
        self.observation_sums: list[tuple[np.ndarray, np.ndarray, np.ndarray]] | None = None  # with normalisation:
        # [(count [E], sum [E, d], sum of squares [E, d])] per request
        self.dimensions: int | None = None
        self.lock = threading.Lock()

    def collect_observations(self, size: int) -> None:
        """Keeps per-episode observation sums of `size` values (observation normalisation)."""
        if self.observation_sums is None:
            self.observation_sums = [(np.zeros(len(r)), np.zeros((len(r), size)), np.zeros((len(r), size)))
                                     for r in self.returns]

    def behaviour(self, r: int, e: int, vector: Any) -> None:
        with self.lock:
            vector = checked_behaviour(vector, self.dimensions, f"request {r}, episode {e}")
            self.dimensions = vector.size
            episodes = self.behaviours[r]
            assert episodes is not None, f"request {r} asked for no behaviour"
            episodes[e] = vector


class FramePainter:
    """Renders gameplay frames in a thread of its own: the stepping thread hands over a physics state (cheap) and
    goes on; only the newest state waits, older ones are dropped. Used for MuJoCo, whose software rendering
    takes about 40 ms a frame."""

    def __init__(self, render: Callable, deliver: Callable[[dict], None]) -> None:
        self._render, self._deliver = render, deliver
        self._pending: tuple[dict, tuple] | None = None
        self._wake = threading.Condition()
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="workbench-frame-painter", daemon=True)
        self._thread.start()

    def submit(self, details: dict, state: tuple) -> None:
        with self._wake:
            self._pending = (details, state)
            self._wake.notify()

    def _run(self):
        while True:
            with self._wake:
                while self._pending is None and not self._closed:
                    self._wake.wait()
                if self._closed:
                    return
                (details, state), self._pending = self._pending, None
            self._deliver(dict(details, frame=self._render(*state)[0]))

    def close(self) -> None:
        with self._wake:
            self._closed = True
            self._wake.notify()
        self._thread.join(timeout=5)


class SubPopulation:
    """One environment batch and one model: runs (request, episode) jobs in its episode slots (see the module)."""

    def __init__(self, env: Any, model: Any, decoder: Any, behaviour: Callable | None = None, perturbed_rank: int = 0,
                 frame_listener: Callable[[dict], None] | None = None, frame_interval: float = 0.1,
                 action_noise: float = 0.0) -> None:
        self.env, self.model, self.decoder, self.behaviour = env, model, decoder, behaviour
        self.action_noise = float(action_noise)
        self._noise = [None] * env.batch_size  # per episode slot: the episode's action-noise generator
        self.frame_listener, self.frame_interval = frame_listener, frame_interval
        self._last_frame = 0.0
        self.max_episode_frames = None  # a live cap below the environment's own (Evaluator.set_episode_cap)
        self.timeline = None  # a list to record (category, start, end) of every timed call into, or None
        # the last run's (perf_counter times, running episodes from then on)
        self.occupancy_trace: tuple[list[float], list[int]] = ([], [])
        self.size = env.batch_size
        self.weights = WeightSlots(model, decoder, perturbed_rank)
        self.rank = int(perturbed_rank)
        # Simulators on the ops (Atari, MuJoCo): the network reads the observations inside the graph (they
        # never become numpy).
        self._handle = env.ops_handle if env.supports(IN_GRAPH) else None
        self._has_screen = env.supports(SCREEN)
        self._painter = None  # a FramePainter, for batches that render physics states (MuJoCo)
        self._observations = None if self._handle is not None else np.zeros((self.size,) + model.input_shape,
                                                                             env.observation_dtype)
        observation_spec = tf.TensorSpec((None,) + model.input_shape, tf.as_dtype(env.observation_dtype))
        index_spec = tf.TensorSpec((None,), tf.int32)
        self.normalization = model.observation_normalization
        if self.normalization is not None:
            size = model.input_shape[0]
            self._sampled = tf.Variable(tf.zeros([self.size], tf.float64), trainable=False)
            self._sums = tf.Variable(tf.zeros([self.size, size], tf.float64), trainable=False)
            self._squares = tf.Variable(tf.zeros([self.size, size], tf.float64), trainable=False)
        self._continuous = model.action_size is not None
        # autograph off: these graphs have no tensor-dependent Python control flow, and autograph's conversion of
        # the functions they call (LowRankPerturbation's dataclass __init__) looked up the wrong source in a
        # process that had run other tests first ("tf___init_factors() takes 1 positional argument")
        graph = functools.partial(tf.function, autograph=False)
        if self._handle is not None:
            self._act = graph(self._actions_in_graph).get_concrete_function(index_spec, index_spec)
        else:
            self._act = graph(self._actions_given).get_concrete_function(observation_spec, index_spec, index_spec)
        if self.rank:
            self._init_factors()
            function = graph(self._perturbed_actions)
            if self._handle is not None:
                self._act_perturbed = function.get_concrete_function(None, index_spec, index_spec)
            else:
                self._act_perturbed = function.get_concrete_function(observation_spec, index_spec, index_spec)

    def _actions_in_graph(self, weight_slots, episode_slots):
        return self._actions_given(self.env.observe_in_graph(episode_slots), weight_slots, episode_slots)

    def _actions_given(self, observations, weight_slots, episode_slots, perturbations=None):
        if self.normalization is not None:
            self._accumulate(observations, episode_slots)
        return self.model.act(observations, weight_slots, perturbations)

    def _accumulate(self, observations, episode_slots):
        """Adds the observations of sampled episodes to their slots' float64 sums (inside the graph)."""
        x = tf.cast(tf.reshape(observations, [tf.shape(observations)[0], -1]), tf.float64)
        x = x * tf.gather(self._sampled, episode_slots)[:, None]
        self._sums.scatter_add(tf.IndexedSlices(x, episode_slots))
        self._squares.scatter_add(tf.IndexedSlices(x * x, episode_slots))

    # -- perturbed mode -------------------------------------------------------------------
    def _init_factors(self):
        size, rank = self.size, self.rank
        self._scale = tf.Variable(tf.zeros([size]), trainable=False)
        self._factors = [(tf.Variable(tf.zeros([size, k, rank]), trainable=False),
                          tf.Variable(tf.zeros([size, n, rank]), trainable=False),
                          tf.Variable(tf.zeros([size, n]), trainable=False))
                         for k, n in self.model.kernel_shapes]

    def _perturbed_actions(self, observations, weight_slots, episode_slots):
        if observations is None:
            observations = self.env.observe_in_graph(episode_slots)
        scale = tf.gather(self._scale, episode_slots)
        perturbations = [LowRankPerturbation(scale, tf.gather(a, episode_slots), tf.gather(b, episode_slots),
                                             tf.gather(bias, episode_slots)) for a, b, bias in self._factors]
        return self._actions_given(observations, weight_slots, episode_slots, perturbations)

    def _write_factors(self, slots, mutations):
        """Loads the low-rank factors of the perturbed episodes starting in `slots` (None: unperturbed)."""
        space = self.decoder.space
        scales = [0.0 if m is None else space.low_rank_scale(m[1], self.rank) for m in mutations]
        assign_slots(self._scale, slots, np.asarray(scales, np.float32))
        per_slot = [space.low_rank_factors(m[0], self.rank) if m is not None else None for m in mutations]
        for layer, variables in enumerate(self._factors):
            for part, variable in enumerate(variables):
                shape = tuple(variable.shape[1:])
                values = np.stack([f[layer][part] if f is not None else np.zeros(shape, np.float32) for f in per_slot])
                assign_slots(variable, slots, values)

    # -- the episode loop -----------------------------------------------------------------
    def run(self, requests: Sequence[Any], jobs: JobQueue, outcomes: Outcomes, seed: int,
            ids: Sequence[int] | None = None) -> Telemetry:
        """Runs jobs from `jobs` until none are left; returns this sub-population's Telemetry.

        ids: the requests' indices for episode seeds (default 0, 1, ...; a chunk of a larger list passes its own).
        """
        self._ids = range(len(requests)) if ids is None else ids
        if self.normalization is not None:
            outcomes.collect_observations(self.model.input_shape[0])
        self.telemetry = Telemetry()
        self._watch = Stopwatch(self.telemetry, self.timeline)
        self._jobs = jobs
        times, counts = self.occupancy_trace = ([], [])
        self._requests, self._outcomes, self._seed = requests, outcomes, seed
        self._job = [None] * self.size  # (r, e) per episode slot
        self._weight_slot = np.zeros(self.size, np.int32)
        self._perturbed = np.zeros(self.size, bool)
        self._steps = np.zeros(self.size, np.int64)
        self._seen = np.zeros(self.size, np.int64)
        try:
            while not jobs.stopped():
                free = [s for s in range(self.size) if self._job[s] is None]
                started = jobs.take(len(free))
                if started:
                    self._start(free[:len(started)], started)
                active = np.array([s for s in range(self.size) if self._job[s] is not None], np.int32)
                if not counts or counts[-1] != active.size:
                    times.append(time.perf_counter())
                    counts.append(active.size)
                if active.size:
                    self._step(active)
                elif not len(jobs):
                    break
        except BaseException:
            jobs.failed.set()
            raise
        return self.telemetry

    def _step(self, active):
        watch = self._watch
        with watch("inference"):
            weight_slots, episode_slots = tf.constant(self._weight_slot[active]), tf.constant(active)
            if self.rank and self._perturbed[active].any():
                observations = None if self._handle is not None else tf.constant(self._observations[active])
                actions = self._act_perturbed(observations, weight_slots, episode_slots)
            elif self._handle is not None:
                actions = self._act(weight_slots, episode_slots)
            else:
                actions = self._act(tf.constant(self._observations[active]), weight_slots, episode_slots)
            actions = actions.numpy()
        self._seen[active] += 1  # observations the policy read (and the statistics counted)
        if self._continuous and self.action_noise:
            low, high = self.env.action_low, self.env.action_high
            noise = np.stack([self._noise[slot].standard_normal(actions.shape[1]) for slot in active])
            actions = np.clip(actions + self.action_noise * noise, low, high).astype(np.float32)
        if self._continuous:
            finite = np.isfinite(actions).all(axis=1)
            if not finite.all():
                self._diverge(active[~finite], "its actions are not finite")
                active, actions = active[finite], actions[finite]
                if not active.size:
                    return
        with watch("emulation"):
            if self._handle is not None:
                rewards, done = self.env.step(active, actions)
            else:
                rewards, done, self._observations[active] = self.env.step_and_observe(active, actions)
        self._steps[active] += 1
        self.telemetry.steps += active.size
        if self._jobs.dry_at is not None:
            self.telemetry.tail_steps += active.size
        if self.max_episode_frames is not None:
            done = done | (self._episode_frames(active) >= self.max_episode_frames)
        returns = self._outcomes.returns
        for slot, reward in zip(active, rewards):
            r, e = self._job[slot]
            returns[r][e] += reward
        if (self.frame_listener is not None and self._has_screen
                and time.monotonic() - self._last_frame >= self.frame_interval):
            self._send_frame(active)
        if done.any():
            self._finish(active[done])

    def _send_frame(self, active):
        """Shows the lowest running slot's screen to the frame listener (throttled by frame_interval); MuJoCo's
        are painted by a FramePainter from the physics state, so stepping does not wait for the renderer."""
        self._last_frame = time.monotonic()
        slot = int(active[0])
        r, e = self._job[slot]
        info = {name: float(values[0]) for name, values in self.env.step_info([slot]).items()}
        details = dict(request=r, episode=e, step=int(self._steps[slot]), score=float(self._outcomes.returns[r][e]),
                       info=info)
        if self.env.supports(RENDER_STATES):
            if self._painter is None:
                self._painter = FramePainter(self.env.render_states, self._deliver_frame)
            self._painter.submit(details, self.env.physics_state([slot]))
        else:
            self.frame_listener(dict(details, frame=self.env.screen([slot])[0]))

    def _deliver_frame(self, frame):
        listener = self.frame_listener  # it may have been switched off while the frame was painted
        if listener is not None:
            listener(frame)

    def close(self) -> None:
        """Stops the frame painter (the environment and model belong to the caller)."""
        if self._painter is not None:
            self._painter.close()
            self._painter = None

    def _start(self, slots, started):
        mutations = []
        with self._watch("weight_loading"):
            for slot, (r, e) in zip(slots, started):
                key, mutation = self.weights.perturbation_of(self._requests[r].genome)
                self._job[slot] = (r, e)
                self._weight_slot[slot] = self.weights.acquire(key)
                self._perturbed[slot] = mutation is not None
                mutations.append(mutation)
            self.weights.flush()
            if self.rank:
                self._write_factors(slots, mutations)
        with self._watch("emulation"):
            seeds = [episode_seed(self._seed, self._ids[r], e) for r, e in started]
            if self._handle is not None:
                self.env.start(slots, seeds)
            else:
                self._observations[slots] = self.env.reset(slots, seeds)
            done = self.env.done(slots)
        self._steps[slots] = 0
        self._seen[slots] = 0
        if self.action_noise:
            for slot, seed in zip(slots, seeds):
                self._noise[slot] = np.random.default_rng(seed & 0xFFFFFFFFFFFFFFFF)
        if self.normalization is not None:
            index = tf.constant(np.asarray(slots, np.int32))
            sampled = [1.0 if self.normalization.sampled(seed) else 0.0 for seed in seeds]
            self._sampled.scatter_update(tf.IndexedSlices(tf.constant(sampled, tf.float64), index))
            zeros = tf.zeros((len(slots), self._sums.shape[1]), tf.float64)
            self._sums.scatter_update(tf.IndexedSlices(zeros, index))
            self._squares.scatter_update(tf.IndexedSlices(zeros, index))
        invalid = np.array([self.weights.invalid(self._weight_slot[slot]) for slot in slots], bool)
        if invalid.any():
            self._diverge(np.asarray(slots)[invalid], "its weights are not finite")
        if (done & ~invalid).any():  # ended during its reset (a frame cap below the no-ops)
            self._finish(np.asarray(slots)[done & ~invalid])

    def _diverge(self, slots, reason):
        """Ends the episodes in `slots` with a NaN return (the worst fitness): their policy diverged."""
        returns = self._outcomes.returns
        for slot in slots:
            r, e = self._job[slot]
            returns[r][e] = np.nan
        warnings.warn(f"a member's episode ended with the worst fitness: {reason} (a diverged policy)",
                      RuntimeWarning, stacklevel=2)
        self._finish(np.asarray(slots))

    def _episode_frames(self, slots):
        """Frames of the episodes in `slots` so far (Atari: no-ops included; Gymnasium: steps)."""
        with self._watch("emulation"):
            return self.env.episode_frames(slots)

    def _finish(self, slots):
        outcomes = self._outcomes
        frames = self._episode_frames(slots)
        if outcomes.observation_sums is not None:
            with self._watch("inference"):
                index = tf.constant(np.asarray(slots, np.int32))
                sampled = tf.gather(self._sampled, index).numpy()
                sums, squares = tf.gather(self._sums, index).numpy(), tf.gather(self._squares, index).numpy()
            for k, slot in enumerate(slots):
                r, e = self._job[slot]
                counts, total, total_squares = outcomes.observation_sums[r]
                counts[e] = self._seen[slot] * sampled[k]
                total[e], total_squares[e] = sums[k], squares[k]
        for slot, frame_count in zip(slots, frames):
            r, e = self._job[slot]
            outcomes.steps[r][e], outcomes.frames[r][e] = self._steps[slot], frame_count
            if outcomes.behaviours[r] is not None:
                with self._watch("emulation"):
                    outcomes.behaviour(r, e, self.behaviour(self.env, int(slot)))
            self.weights.release(self._weight_slot[slot])
            self._job[slot] = None
        self.telemetry.episodes += len(slots)
        self.telemetry.frames += int(np.sum(frames))
