"""SubPopulation: one environment batch and one model, running episodes slot by slot.

Each environment index is an episode slot. run() takes (request, episode) jobs from a shared JobQueue
whenever a slot is free, so a finished episode's slot restarts at once with the next job and only running
episodes are stepped and computed (no padding to the longest episode). A step is one inference call for all
running episodes (each with its genome's weight slot and, in perturbed mode, its low-rank factors) and one
environment call.

Fused steps: on a batch that steps inside graphs (capability GRAPH_STEPS: MuJoCo on the ops), one graph call runs
the policy and the simulations step after step (a tf.while_loop) until an episode ends, an action is not finite,
or FUSED_STEP_BUDGET environment steps are done (the frame stream, a live episode cap and cancellation are looked
at between calls). Python's work per step (two calls, their arguments, the returns' bookkeeping) was most of a
step when a generation is a few dozen episodes (CMA-ES's default population); the results are the same to the bit
(the same batches of running episodes, the returns summed in the same order). Not with action noise, a behaviour
measured at every step or perturbed mode, whose per-step work is Python's.

The loop is this module; each other job has a collaborator chosen once when the sub-population is built:
  observation_source.py  where the policy reads observations (inside the graph from the simulator's op, or a host
                         array)
  observation_sums.py    with observation normalisation (the model's), each sampled episode's observation sums,
                         added by the same graph call that computes the actions
  low_rank_factors.py    perturbed mode: each running child's mutation as low-rank factors
  action_noise.py        exploration noise on continuous actions, seeded by the episode's seed
  frame_stream.py        gameplay frames for a listener
  weight_slots.py        which genome (or parent) each model slot holds
A run's own state (its requests, jobs, outcomes and what each slot is running) is an EpisodeRun. A member
whose weights or actions are not finite (a diverged policy) ends its episode at once with a NaN return (the
worst fitness) and a warning.
"""

from __future__ import annotations

import functools
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import tensorflow as tf

from workbench.envs.batch import GRAPH_STEPS, EnvBatch
from workbench.envs.rng import episode_seed
from workbench.evaluation.action_noise import ActionNoise
from workbench.evaluation.behaviour import Behaviour, StepReduction, behaviour_label
from workbench.evaluation.frame_stream import FrameStream
from workbench.evaluation.jobs import JobQueue, Outcomes
from workbench.evaluation.low_rank_factors import LowRankFactors
from workbench.evaluation.observation_source import observation_source
from workbench.evaluation.observation_sums import ObservationSums
from workbench.evaluation.telemetry import Stopwatch, Telemetry
from workbench.evaluation.weight_slots import WeightSlots
from workbench.evolution import EvaluationRequest, GenomeDecoder
from workbench.models.population_model import PopulationModel

BehaviourFunction = Callable[[EnvBatch, int], object]
FUSED_STEP_BUDGET = 4096  # environment steps per fused graph call at most (all running episodes together)


@dataclass
class EpisodeRun:
    """One run()'s state: its jobs, where their outcomes go, and what each episode slot is running."""

    requests: Sequence[EvaluationRequest]
    jobs: JobQueue
    outcomes: Outcomes
    seed: int
    ids: Sequence[int]  # each request's index for episode seeds
    slots: int
    telemetry: Telemetry = field(default_factory=Telemetry)
    watch: Stopwatch = field(init=False)
    timeline: list | None = None
    job: list[tuple[int, int] | None] = field(init=False)  # (request, episode) per episode slot
    weight_slot: np.ndarray = field(init=False)
    perturbed: np.ndarray = field(init=False)
    steps: np.ndarray = field(init=False)
    seen: np.ndarray = field(init=False)  # observations the policy read (and the statistics counted)
    occupancy: tuple[list[float], list[int]] = field(init=False)  # (perf_counter times, running episodes from then)

    def __post_init__(self) -> None:
        self.watch = Stopwatch(self.telemetry, self.timeline)
        self.job = [None] * self.slots
        self.weight_slot = np.zeros(self.slots, np.int32)
        self.perturbed = np.zeros(self.slots, bool)
        self.steps = np.zeros(self.slots, np.int64)
        self.seen = np.zeros(self.slots, np.int64)
        self.occupancy = ([], [])

    def free(self) -> list[int]:
        return [s for s in range(self.slots) if self.job[s] is None]

    def active(self) -> np.ndarray:
        return np.array([s for s in range(self.slots) if self.job[s] is not None], np.int32)

    def job_of(self, slot: int) -> tuple[int, int]:
        job = self.job[slot]
        assert job is not None, f"episode slot {slot} runs no episode"
        return job

    def record_occupancy(self, running: int) -> None:
        times, counts = self.occupancy
        if not counts or counts[-1] != running:
            times.append(time.perf_counter())
            counts.append(running)


class SubPopulation:
    """One environment batch and one model: runs (request, episode) jobs in its episode slots (see the module).

    Set by the evaluator: `max_episode_frames` (a live cap below the environment's own, or None), `timeline` (a
    list that the next run records (category, start, end) of every timed call into, or None),
    `frames.listener` (gameplay frames). After a run: `occupancy_trace` (times, running episodes from then on).
    """

    def __init__(
        self,
        env: EnvBatch,
        model: PopulationModel,
        decoder: GenomeDecoder,
        behaviour: BehaviourFunction | Behaviour | None = None,
        perturbed_rank: int = 0,
        frame_interval: float = 0.1,
        action_noise: float = 0.0,
    ) -> None:
        self.env, self.model = env, model
        self.size = env.batch_size
        self.behaviour: BehaviourFunction | None = None  # read when an episode ends
        self.step_behaviour: StepReduction | None = None  # or measured at every step (behaviour.py)
        self.behaviour_label = behaviour_label(behaviour)
        if isinstance(behaviour, Behaviour) and behaviour.step is not None:
            self.step_behaviour = StepReduction(behaviour, self.size)
        else:
            self.behaviour = behaviour.function if isinstance(behaviour, Behaviour) else behaviour
        self.max_episode_frames: int | None = None
        self.timeline: list | None = None
        self.occupancy_trace: tuple[list[float], list[int]] = ([], [])
        self.weights = WeightSlots(model, decoder, perturbed_rank)
        self.frames = FrameStream(env, frame_interval)
        self.observations = observation_source(env, model.input_shape)
        normalization = model.observation_normalization
        self.observation_sums = (
            None if normalization is None else ObservationSums(normalization, self.size, int(np.prod(model.input_shape)))
        )
        self.continuous = model.action_size is not None
        self.action_noise = None
        if self.continuous and action_noise:
            assert env.action_low is not None and env.action_high is not None, "continuous actions have bounds"
            self.action_noise = ActionNoise(action_noise, self.size, env.action_low, env.action_high)
        self.factors = LowRankFactors(decoder.space, model.kernel_shapes, self.size, perturbed_rank) if perturbed_rank else None
        # autograph off: these graphs have no tensor-dependent Python control flow, and autograph's conversion of
        # the functions they call (LowRankPerturbation's dataclass __init__) looked up the wrong source in a
        # process that had run other tests first ("tf___init_factors() takes 1 positional argument")
        graph = functools.partial(tf.function, autograph=False)
        index = tf.TensorSpec((None,), tf.int32)
        spec = self.observations.input_spec
        self._act = graph(self._plain_actions).get_concrete_function(spec, index, index)
        if self.factors is not None:
            self._act_perturbed = graph(self._perturbed_actions).get_concrete_function(spec, index, index)
        self._fused: Callable | None = None
        fusable = self.factors is None and self.action_noise is None and self.step_behaviour is None
        if fusable and self.continuous and env.supports(GRAPH_STEPS) and spec is None:
            returns = tf.TensorSpec((None,), tf.float64)
            self._fused = graph(self._fused_steps).get_concrete_function(index, index, returns, tf.TensorSpec((), tf.int32))
        self._fusing = self._fused is not None

    @property
    def fused_steps(self) -> bool:
        """Whether episodes run in fused steps (see the module); set False for one Python call per step, the same
        results (a reference and a baseline for benchmarks)."""
        return self._fusing

    @fused_steps.setter
    def fused_steps(self, value: bool) -> None:
        if not isinstance(value, bool):
            raise TypeError(f"fused_steps must be a bool, got {value!r}")
        if value and self._fused is None:
            raise ValueError(
                "fused_steps needs continuous actions on a batch with the 'graph_steps' capability, and no action noise, "
                "step behaviour or perturbed mode"
            )
        self._fusing = value

    # -- the inference graphs ------------------------------------------------------------
    def _actions(self, given, weight_slots, episode_slots, perturbations=None):
        observations = self.observations.in_graph(given, episode_slots)
        if self.observation_sums is not None:
            self.observation_sums.accumulate(observations, episode_slots)
        return self.model.act(observations, weight_slots, perturbations)

    def _plain_actions(self, given, weight_slots, episode_slots):
        return self._actions(given, weight_slots, episode_slots)

    def _perturbed_actions(self, given, weight_slots, episode_slots):
        return self._actions(given, weight_slots, episode_slots, self.factors.perturbations(episode_slots))

    def _fused_steps(self, weight_slots, episode_slots, returns, limit):
        """Steps the episodes in episode_slots, policy and simulations, at most `limit` times while none has ended
        and every action is finite; returns (steps taken, returns so far, done flags of the last step, the last
        actions, whether they were finite). Actions that are not finite are returned without being taken."""
        n = tf.shape(episode_slots)[0]
        assert self.model.action_size is not None, "fused steps are for continuous actions"

        def going(taken, returns, done, actions, finite):
            return finite & (taken < limit) & ~tf.reduce_any(done)

        def one_step(taken, returns, done, actions, finite):
            actions = tf.cast(self._actions(None, weight_slots, episode_slots), tf.float32)
            finite = tf.reduce_all(tf.math.is_finite(actions))

            def step():
                rewards, ended = self.env.step_in_graph(episode_slots, actions)
                return taken + 1, returns + tf.cast(rewards, tf.float64), ended

            taken, returns, done = tf.cond(finite, step, lambda: (taken, returns, done))
            return taken, returns, done, actions, finite

        start = (tf.constant(0), returns, tf.zeros([n], tf.bool), tf.zeros([n, self.model.action_size]), tf.constant(True))
        return tf.while_loop(going, one_step, start)

    # -- the episode loop -----------------------------------------------------------------
    def run(
        self,
        requests: Sequence[EvaluationRequest],
        jobs: JobQueue,
        outcomes: Outcomes,
        seed: int,
        ids: Sequence[int] | None = None,
    ) -> Telemetry:
        """Runs jobs from `jobs` until none are left; returns this sub-population's Telemetry.

        ids: the requests' indices for episode seeds (default 0, 1, ...; a chunk of a larger list passes its own).
        """
        if self.observation_sums is not None:
            outcomes.collect_observations(self.observation_sums.size)
        run = EpisodeRun(
            requests, jobs, outcomes, seed, range(len(requests)) if ids is None else ids, self.size, timeline=self.timeline
        )
        self.occupancy_trace = run.occupancy
        try:
            while not jobs.stopped():
                free = run.free()
                started = jobs.take(len(free), running=self.size - len(free))
                if started:
                    self._start(run, free[: len(started)], started)
                active = run.active()
                run.record_occupancy(active.size)
                if active.size and self._fusing:
                    self._fused_step(run, active)
                elif active.size:
                    self._step(run, active)
                elif not len(jobs):
                    break
        except BaseException:
            jobs.failed.set()
            raise
        return run.telemetry

    def _step(self, run: EpisodeRun, active: np.ndarray) -> None:
        with run.watch("inference"):
            given = self.observations.graph_input(active)
            weight_slots, episode_slots = tf.constant(run.weight_slot[active]), tf.constant(active)
            act = self._act_perturbed if self.factors is not None and run.perturbed[active].any() else self._act
            actions = act(given, weight_slots, episode_slots).numpy()
        run.seen[active] += 1
        self._take(run, active, actions)

    def _take(self, run: EpisodeRun, active: np.ndarray, actions: np.ndarray) -> None:
        """Steps the episodes in `active` with `actions` from the policy (ending those whose actions are not finite)."""
        if self.action_noise is not None:
            actions = self.action_noise.apply(active, actions)
        if self.continuous:
            finite = np.isfinite(actions).all(axis=1)
            if not finite.all():
                self._diverge(run, active[~finite], "its actions are not finite")
                active, actions = active[finite], actions[finite]
                if not active.size:
                    return
        with run.watch("emulation"):
            rewards, done = self.observations.step(active, actions)
            if self.step_behaviour is not None:
                self.step_behaviour.update(self.env, active)
        run.steps[active] += 1
        run.telemetry.steps += active.size
        if run.jobs.dry_at is not None:
            run.telemetry.tail_steps += active.size
        returns = run.outcomes.returns
        for slot, reward in zip(active, rewards):
            r, e = run.job_of(slot)
            returns[r][e] += reward
        self._after_steps(run, active, done)

    def _fused_step(self, run: EpisodeRun, active: np.ndarray) -> None:
        """Up to FUSED_STEP_BUDGET environment steps of the episodes in `active` in one graph call (see the module)."""
        limit = max(1, FUSED_STEP_BUDGET // active.size)
        if self.max_episode_frames is not None:  # one frame per step: no episode passes the cap inside the call
            limit = min(limit, max(1, self.max_episode_frames - int(run.steps[active].max())))
        returns = run.outcomes.returns
        jobs = [run.job_of(slot) for slot in active]
        with run.watch("fused_steps"):
            totals = tf.constant([returns[r][e] for r, e in jobs], tf.float64)
            weight_slots, episode_slots = tf.constant(run.weight_slot[active]), tf.constant(active)
            assert self._fused is not None, "fused_steps is only on when the graph was built"
            taken, totals, done, actions, finite = self._fused(weight_slots, episode_slots, totals, tf.constant(limit))
            taken, totals, done = int(taken), totals.numpy(), done.numpy()
        if taken:
            self.env.record_graph_steps(active, done)
            for (r, e), total in zip(jobs, totals):
                returns[r][e] = total
            run.seen[active] += taken
            run.steps[active] += taken
            run.telemetry.steps += active.size * taken
            if run.jobs.dry_at is not None:
                run.telemetry.tail_steps += active.size * taken
        if not bool(finite):  # the policy's next actions, already computed (and counted in its statistics)
            run.seen[active] += 1
            self._take(run, active, actions.numpy())
        elif taken:
            self._after_steps(run, active, done)

    def _after_steps(self, run: EpisodeRun, active: np.ndarray, done: np.ndarray) -> None:
        """After a step of `active` with these done flags: the live episode cap, a frame for the listener, the ends."""
        if self.max_episode_frames is not None:
            done = done | (self._episode_frames(run, active) >= self.max_episode_frames)
        returns = run.outcomes.returns
        if self.frames.due():
            slot = int(active[0])  # the lowest running slot
            r, e = run.job_of(slot)
            self.frames.send(slot, dict(request=r, episode=e, step=int(run.steps[slot]), score=float(returns[r][e])))
        if done.any():
            self._finish(run, active[done])

    def _start(self, run: EpisodeRun, slots: list[int], started: list[tuple[int, int]]) -> None:
        mutations = []
        with run.watch("weight_loading"):
            for slot, (r, e) in zip(slots, started):
                key, mutation = self.weights.perturbation_of(run.requests[r].genome)
                run.job[slot] = (r, e)
                run.weight_slot[slot] = self.weights.acquire(key)
                run.perturbed[slot] = mutation is not None
                mutations.append(mutation)
            self.weights.flush()
            if self.factors is not None:
                self.factors.write(slots, mutations)
        with run.watch("emulation"):
            seeds = [episode_seed(run.seed, run.ids[r], e) for r, e in started]
            self.observations.start(slots, seeds)
            done = self.env.done(slots)
        run.steps[slots] = 0
        run.seen[slots] = 0
        if self.step_behaviour is not None:
            self.step_behaviour.begin(slots)
        if self.action_noise is not None:
            self.action_noise.begin(slots, seeds)
        if self.observation_sums is not None:
            self.observation_sums.begin(slots, seeds)
        invalid = np.array([self.weights.invalid(run.weight_slot[slot]) for slot in slots], bool)
        if invalid.any():
            self._diverge(run, np.asarray(slots)[invalid], "its weights are not finite")
        if (done & ~invalid).any():  # ended during its reset (a frame cap below the no-ops)
            self._finish(run, np.asarray(slots)[done & ~invalid])

    def _diverge(self, run: EpisodeRun, slots: np.ndarray, reason: str) -> None:
        """Ends the episodes in `slots` with a NaN return (the worst fitness): their policy diverged."""
        for slot in slots:
            r, e = run.job_of(slot)
            run.outcomes.returns[r][e] = np.nan
        warnings.warn(
            f"a member's episode ended with the worst fitness: {reason} (a diverged policy)", RuntimeWarning, stacklevel=2
        )
        self._finish(run, np.asarray(slots))

    def _episode_frames(self, run: EpisodeRun, slots: np.ndarray) -> np.ndarray:
        """Frames of the episodes in `slots` so far (Atari: no-ops included; Gymnasium: steps)."""
        with run.watch("emulation"):
            return self.env.episode_frames(slots)

    def _finish(self, run: EpisodeRun, slots: np.ndarray) -> None:
        outcomes = run.outcomes
        frames = self._episode_frames(run, slots)
        if self.observation_sums is not None and outcomes.observation_sums is not None:
            with run.watch("inference"):
                sampled, sums, squares = self.observation_sums.read(slots)
            for k, slot in enumerate(slots):
                r, e = run.job_of(slot)
                counts, total, total_squares = outcomes.observation_sums[r]
                counts[e] = run.seen[slot] * sampled[k]
                total[e], total_squares[e] = sums[k], squares[k]
        for slot, frame_count in zip(slots, frames):
            r, e = run.job_of(slot)
            outcomes.steps[r][e], outcomes.frames[r][e] = run.steps[slot], frame_count
            if outcomes.behaviours[r] is not None:
                if self.step_behaviour is not None:
                    outcomes.behaviour(r, e, self.step_behaviour.value(self.env, int(slot)), self.behaviour_label)
                else:
                    assert self.behaviour is not None, "a request asked for a behaviour the evaluator has no function for"
                    with run.watch("emulation"):
                        outcomes.behaviour(r, e, self.behaviour(self.env, int(slot)), self.behaviour_label)
            self.weights.release(run.weight_slot[slot])
            run.job[slot] = None
        run.telemetry.episodes += len(slots)
        run.telemetry.frames += int(np.sum(frames))

    def close(self) -> None:
        """Stops the frame stream's painter (the environment and model belong to the caller)."""
        self.frames.close()
