"""Evaluator: genomes x episodes -> returns, on sub-populations that overlap emulation and inference.

    evaluator = Evaluator("pong", model="small", subpopulations=2, slots=16)
    strategy = GeneticAlgorithm(GAConfig(), evaluator.space)
    results = evaluator.evaluate(strategy.ask(), seed=generation, bases=strategy.bases())
    evaluator.telemetry      # frames, frames/s, time in emulation / inference / weight loading / idle

Each sub-population (SubPopulation) owns an environment batch of `slots`
episodes and a model with as many weight slots, and takes (request, episode)
jobs from one shared queue as its slots free up. With two or more, each runs in
its own thread: TensorFlow ops release the GIL, so one sub-population's
network inference runs while another's emulators step (the seed's pipelined
CPU+GPU; on a GPU machine TensorFlow would place the pure-TF model there, see
docs/verification.md). Episode e of request r starts from seed episode_seed(seed, r, e)
and the inference kernels are batch invariant, so the results do not depend
on the number of sub-populations, the slot count or the timing.

perturbed_rank r > 0: genomes whose last mutation has rank r run as their
parent's weights plus the mutation's low-rank factors (the op's perturbed
mode): children are never materialised and siblings share weight reads. Their
returns then come from the factored forward pass, which rounds differently
from the materialised child's.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import tensorflow as tf

from workbench.checks import check_int, check_type
from workbench.evaluation import spec_cache
from workbench.evaluation.allocator import tune_allocator
from workbench.evaluation.base import BaseEvaluator, EvaluationCancelled
from workbench.evaluation.behaviour import behaviour_function
from workbench.evaluation.jobs import JobQueue, Outcomes
from workbench.evaluation.layout import EvaluatorLayout
from workbench.evaluation.run_spec import RunSpec
from workbench.evaluation.schedule import EpisodeLengths
from workbench.evaluation.subpopulation import SubPopulation
from workbench.evaluation.telemetry import Telemetry, occupancy_profile
from workbench.evolution.genome import GenomeDecoder
from workbench.evolution.noise import NoiseTable
from workbench.evolution.strategy import EvaluationRequest, EvaluationResult


class Evaluator(BaseEvaluator):
    """Evaluates EvaluationRequests on `subpopulations` sub-populations of `slots` episodes each, in this process.

    Args:
      env: an Atari game ("pong", "ALE/Pong-v5") or a Gymnasium id ("CartPole-v1").
      model: "small" / "large" (Atari), "mlp" (vector observations) or a callable
        (observation_shape, num_actions, slots, **model_options) -> PopulationModel.
      subpopulations: sub-populations run side by side (1 = no pipelining, no threads).
      slots: episodes running at once in each sub-population.
      max_episode_frames: episode cap in frames (Atari, no-ops included) or steps (Gymnasium); None = the env's own.
      behaviour: behaviour characterisation for requests that ask for one (see behaviour.py).
      perturbed_rank: run rank-r children through the op's perturbed mode (0 = materialise every genome).
      noise: the NoiseTable (default: the shared table); env_options / model_options: passed on.
      frame_listener: a first frame listener (see add_frame_listener): frames come from a running episode of
        the first sub-population at most every frame_interval seconds; None = none yet.
      model_backend: backend of the model's ops; None = "reference" (pure TF, which TensorFlow places
        on a GPU) when TensorFlow sees a GPU, else the environment's choice (the custom CPU kernels).
      action_noise: standard deviation of Gaussian noise added to continuous actions (training-time
        exploration, seeded per episode; 0 = deterministic policies). Scores and replays never add it.
      longest_first: start the episodes expected to be longest first (from the genome's or its parent's
        earlier episodes; evaluation.schedule), which shortens each round's tail; False = in request
        order. Either way the results are the same.
    Or build it from a RunSpec and an EvaluatorLayout (layout.py): Evaluator.from_spec(spec, layout).
    """

    def __init__(
        self,
        env: str,
        model: str | Callable = "small",
        *,
        subpopulations: int = EvaluatorLayout.subpopulations,
        slots: int = EvaluatorLayout.slots,
        max_episode_frames: int | None = None,
        behaviour: str | Callable | None = None,
        perturbed_rank: int = EvaluatorLayout.perturbed_rank,
        noise: NoiseTable | None = None,
        env_options: Mapping | None = None,
        model_options: Mapping | None = None,
        cache_bytes: int = EvaluatorLayout.cache_bytes,
        model_backend: str | None = None,
        frame_listener: Callable[[dict], None] | None = None,
        frame_interval: float = 0.1,
        action_noise: float = EvaluatorLayout.action_noise,
        longest_first: bool = EvaluatorLayout.longest_first,
    ) -> None:
        noise = noise if noise is not None else NoiseTable.shared()
        spec = RunSpec(
            env,
            model,
            env_options=env_options or {},
            model_options=model_options or {},
            max_episode_frames=max_episode_frames,
            noise_size=noise.size,
            noise_seed=noise.seed,
        )
        layout = EvaluatorLayout(
            subpopulations, slots, behaviour, perturbed_rank, cache_bytes, model_backend, action_noise, longest_first
        )
        self._build(spec, noise, layout, frame_listener, frame_interval)

    @classmethod
    def from_spec(
        cls,
        spec: RunSpec,
        layout: EvaluatorLayout | None = None,
        *,
        frame_listener: Callable[[dict], None] | None = None,
        frame_interval: float = 0.1,
        **options: Any,
    ) -> Evaluator:
        """The evaluator of a RunSpec with `layout` (an EvaluatorLayout; or its fields as keywords)."""
        if layout is None:
            layout = EvaluatorLayout.from_options(options, "Evaluator.from_spec")
        elif options:
            raise TypeError(f"Evaluator.from_spec got a layout and the layout keywords {sorted(options)}")
        check_type("layout", layout, EvaluatorLayout)
        evaluator = cls.__new__(cls)
        evaluator._build(spec, spec.noise(), layout, frame_listener, frame_interval)
        return evaluator

    def _build(
        self,
        spec: RunSpec,
        noise: NoiseTable,
        layout: EvaluatorLayout,
        frame_listener: Callable[[dict], None] | None,
        frame_interval: float,
    ) -> None:
        tune_allocator()  # weights of megabytes come and go: reuse freed buffers (allocator.py)
        self.layout = layout
        self.episode_lengths = EpisodeLengths() if layout.longest_first else None
        behaviour = behaviour_function(layout.behaviour)
        if frame_listener is not None and not callable(frame_listener):
            raise TypeError("frame_listener must be callable or None")
        model_backend = layout.model_backend
        if model_backend is None and tf.config.list_physical_devices("GPU"):
            model_backend = "reference"  # the custom kernels are CPU-only; pure TF runs on the GPU (unverified here)
        # model_options' own backend, if any, wins (as it did before the argument existed)
        overrides = {} if model_backend is None or "backend" in spec.model_options else {"backend": model_backend}
        self.envs, self.models = [], []
        try:
            for k in range(layout.subpopulations):
                batch = spec.make_batch(layout.slots, seed=k)
                self.envs.append(batch)
                self.models.append(spec.build_model(batch, layout.slots, **overrides))
        except BaseException:
            self._close_envs()
            raise
        spec_cache.remember_observation_shape(spec, self.models[0].input_shape)
        space = spec.space(self.models[0])
        if noise is not space.noise:  # a table given by hand, not the shared one of (size, seed)
            space = type(space)(noise, space.init_scales, space.layer_shapes)
        if layout.perturbed_rank:
            space.check_rank(layout.perturbed_rank, "perturbed_rank")
            if spec.reference_batch is not None:
                raise ValueError(
                    "perturbed_rank cannot be combined with virtual batch normalisation (a reference "
                    "batch): each child's statistics need its materialised weights"
                )
        super().__init__(spec, space, GenomeDecoder(space, layout.cache_bytes), behaviour)
        if layout.action_noise and not self.envs[0].continuous_actions:
            self._close_envs()
            raise ValueError("action_noise applies to continuous actions; this environment's actions are discrete")
        self.subpopulations = [
            SubPopulation(e, m, self.decoder, behaviour, layout.perturbed_rank, frame_interval, layout.action_noise)
            for e, m in zip(self.envs, self.models)
        ]
        self.telemetry = Telemetry(subpopulations=layout.subpopulations)
        self.timeline: list | None = None
        if frame_listener is not None:
            self.add_frame_listener(frame_listener)

    def _observation_statistics_changed(self, statistics):
        for model in self.models:
            model.set_observation_statistics(statistics)

    def _episode_cap_changed(self, live_cap):
        for subpopulation in self.subpopulations:
            subpopulation.max_episode_frames = live_cap

    def _listeners_changed(self):
        # Frames are made only while someone listens (a screen read per frame_interval otherwise wasted).
        self.subpopulations[0].frames.listener = self._publish_frame if self.has_frame_listeners else None

    def record_timeline(self, enabled: bool = True) -> None:
        """From the next evaluate() on, keep self.timeline: (sub-population, category, start, end) of every
        timed call, in seconds from the evaluation's start (for timeline plots); False: stop recording."""
        self.timeline = [] if enabled else None

    def evaluate(
        self,
        requests: Sequence[EvaluationRequest],
        seed: int = 0,
        bases: Mapping[str, np.ndarray] | None = None,
        cancel: threading.Event | None = None,
        request_ids: Sequence[int] | None = None,
        round_index: int | None = None,
    ) -> list[EvaluationResult]:
        """[EvaluationResult(returns, behaviours, steps, frames)] in request order; sets self.telemetry.

        bases: {key: weights} of dense bases the genomes start from (strategy.bases()).
        cancel: a threading.Event; once set, the sub-populations stop after their current step
        and EvaluationCancelled is raised. request_ids: each request's index for its episode seeds
        (default its position; a chunk of a larger list, as RayEvaluator sends, passes the global ones).
        round_index: the number of the round this call belongs to, for the decoder's cache, which drops
        genomes unused for a few rounds (GenomeDecoder.start_round); a chunk of a larger round, as
        RayEvaluator sends, passes the round's number; None (default): this call is a round of its own.
        Every genome is checked before any episode runs (ValueError naming it).
        """
        requests = self.check_requests(requests, bases, cancel)
        if round_index is not None:
            check_int("round_index", round_index, 0)
        if bases is not None:
            for key, weights in bases.items():
                self.decoder.add_base(key, weights)
            self.decoder.retain_bases(bases)
        request_ids = self.check_request_ids(request_ids, len(requests))
        self.decoder.start_round(round_index)
        genomes = [request.genome for request in requests]
        order = self.episode_lengths.longest_first(genomes) if self.episode_lengths is not None else None
        jobs, outcomes = JobQueue(requests, cancel, order, lanes=len(self.subpopulations)), Outcomes(requests)
        lanes: list[list | None] = [[] if self.timeline is not None else None for _ in self.subpopulations]
        for subpopulation, lane in zip(self.subpopulations, lanes):
            subpopulation.timeline = lane
        start = time.perf_counter()
        parts = self._run(requests, jobs, outcomes, seed, request_ids)
        end = time.perf_counter()
        if jobs.stopped():
            raise EvaluationCancelled("the evaluation was cancelled")
        occupancy = occupancy_profile(
            [s.occupancy_trace for s in self.subpopulations], start, end, sum(s.size for s in self.subpopulations)
        )
        busy = end - start if jobs.dry_at is None else jobs.dry_at - start
        self.telemetry = Telemetry.combine(parts, end - start, busy_seconds=busy, occupancy=occupancy)
        if self.timeline is not None:
            self.timeline = sorted(
                (k, category, begin - start, end - start) for k, lane in enumerate(lanes) for category, begin, end in lane or ()
            )
        if self.episode_lengths is not None:
            self.episode_lengths.record(genomes, outcomes.frames)
        sums = outcomes.observation_sums
        return [
            EvaluationResult(
                outcomes.returns[r],
                None if (behaviours := outcomes.behaviours[r]) is None else np.stack(behaviours),
                outcomes.steps[r],
                outcomes.frames[r],
                None if sums is None else sums[r],
            )
            for r in range(len(requests))
        ]

    def _run(self, requests, jobs, outcomes, seed, ids):
        if len(self.subpopulations) == 1:
            return [self.subpopulations[0].run(requests, jobs, outcomes, seed, ids)]
        parts, errors = [None] * len(self.subpopulations), []

        def work(k, subpopulation):
            try:
                parts[k] = subpopulation.run(requests, jobs, outcomes, seed, ids)
            except BaseException as error:  # re-raised in the caller's thread below
                errors.append(error)

        threads = [
            threading.Thread(target=work, args=(k, s), name=f"workbench-subpopulation-{k}", daemon=True)
            for k, s in enumerate(self.subpopulations)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if errors:
            raise errors[0]
        return parts

    def close(self) -> None:
        for subpopulation in getattr(self, "subpopulations", []):
            subpopulation.close()
        self._close_envs()

    def _close_envs(self):
        for env in self.envs:
            env.close()
