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
the README). Episode e of request r starts from seed episode_seed(seed, r, e)
and the inference kernels are batch invariant, so the results do not depend
on the number of sub-populations, the slot count or the timing.

perturbed_rank r > 0: genomes whose last mutation has rank r run as their
parent's weights plus the mutation's low-rank factors (the op's perturbed
mode): children are never materialised and siblings share weight reads. Their
returns then come from the factored forward pass, which rounds differently
from the materialised child's.
"""
import threading
import time

import numpy as np
import tensorflow as tf

from workbench.envs import AtariBatch, episode_cap_option, make_batch
from workbench.evaluation.behaviour import behaviour_function
from workbench.evaluation.subpopulation import JobQueue, Outcomes, SubPopulation
from workbench.evaluation.telemetry import Telemetry
from workbench.evolution.genome import GenomeDecoder
from workbench.evolution.noise import NoiseTable
from workbench.evolution.space import ParameterSpace
from workbench.evolution.strategy import EvaluationRequest, EvaluationResult
from workbench.models import LargeModel, MLPModel, PopulationModel, SmallModel
from workbench.models.population_model import positive_int

MODELS = ("small", "large", "mlp")


def build_model(spec, env, slots, model_options):
    """A PopulationModel for env: "small", "large", "mlp" or a callable(observation_shape, num_actions, slots)."""
    options = dict(model_options or {})
    if callable(spec) and not isinstance(spec, str):
        model = spec(tuple(env.observation_shape), env.num_actions, slots, **options)
    elif spec in ("small", "large"):
        if not isinstance(env, AtariBatch):
            raise ValueError(f'model "{spec}" is an Atari network; for {type(env).__name__} use model="mlp"')
        model = (SmallModel if spec == "small" else LargeModel)(num_actions=env.num_actions, slots=slots, **options)
    elif spec == "mlp":
        if len(env.observation_shape) != 1:
            raise ValueError(f'model "mlp" needs vector observations, got shape {tuple(env.observation_shape)}')
        model = MLPModel(env.observation_shape[0], env.num_actions, slots=slots, **options)
    else:
        raise ValueError(f"model must be one of {MODELS} or a callable(observation_shape, num_actions, slots), got {spec!r}")
    if not isinstance(model, PopulationModel):
        raise TypeError(f"the model callable must return a PopulationModel, got {type(model).__name__}")
    if model.input_shape != tuple(env.observation_shape) or model.num_actions != env.num_actions:
        raise ValueError(f"the model takes {model.input_shape} -> {model.num_actions} actions, the environment gives "
                         f"{tuple(env.observation_shape)} and {env.num_actions} actions")
    return model


def check_episode_cap(frames, run_cap):
    """ValueError naming max_episode_frames unless `frames` is None or a positive integer up to run_cap."""
    if frames is None:
        return
    if isinstance(frames, bool) or not isinstance(frames, int) or frames < 1:
        raise ValueError(f"max_episode_frames must be a positive integer, got {frames!r}")
    if run_cap is not None and frames > run_cap:
        raise ValueError(f"max_episode_frames can be changed live only up to the run's cap ({run_cap}), got {frames}")


class EvaluationCancelled(Exception):
    """evaluate() was stopped through its `cancel` event; the partial results are discarded."""


class Evaluator:
    """Evaluates EvaluationRequests on `subpopulations` sub-populations of `slots` episodes each.

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
      frame_listener: called with {request, episode, step, score, frame (RGB)} from a running episode of
        the first sub-population at most every frame_interval seconds (dashboards); None = never.
      model_backend: backend of the model's ops; None = "reference" (pure TF, which TensorFlow places
        on a GPU) when TensorFlow sees a GPU, else the environment's choice (the custom CPU kernels).
    """

    def __init__(self, env, model="small", *, subpopulations=2, slots=16, max_episode_frames=None, behaviour=None,
                 perturbed_rank=0, noise=None, env_options=None, model_options=None, cache_bytes=2**30,
                 model_backend=None, frame_listener=None, frame_interval=0.1):
        positive_int(subpopulations, "subpopulations")
        positive_int(slots, "slots")
        if max_episode_frames is not None:
            positive_int(max_episode_frames, "max_episode_frames")
        behaviour = behaviour_function(behaviour)
        options = dict(env_options or {})
        model_options = dict(model_options or {})
        if model_backend is None and tf.config.list_physical_devices("GPU"):
            model_backend = "reference"  # the custom kernels are CPU-only; pure TF runs on the GPU (unverified here)
        if model_backend is not None:
            model_options.setdefault("backend", model_backend)
        self.envs, self.models = [], []
        try:
            for k in range(subpopulations):
                batch = self._make_env(env, slots, max_episode_frames, options, k)
                self.envs.append(batch)
                self.models.append(build_model(model, batch, slots, model_options))
        except BaseException:
            self.close()
            raise
        self.space = ParameterSpace.for_model(self.models[0], noise if noise is not None else NoiseTable.shared())
        if perturbed_rank:
            self.space.check_rank(perturbed_rank, "perturbed_rank")
        self.decoder = GenomeDecoder(self.space, cache_bytes)
        if frame_listener is not None and not callable(frame_listener):
            raise TypeError("frame_listener must be callable or None")
        self.subpopulations = [SubPopulation(e, m, self.decoder, behaviour, perturbed_rank,
                                             frame_listener if k == 0 else None, frame_interval)
                               for k, (e, m) in enumerate(zip(self.envs, self.models))]
        self.behaviour = behaviour
        self.telemetry = Telemetry(subpopulations=subpopulations)
        self.max_episode_frames = max_episode_frames
        self.episode_cap = max_episode_frames
        # what replays of this evaluator's genomes need (workbench.training.replay)
        self.env_name, self.model_spec, self.env_options, self.model_options = env, model, options, model_options
        self.timeline = None

    def set_episode_cap(self, frames):
        """Caps episodes at `frames` from the next evaluate() on (None: back to max_episode_frames).

        Frames count as for max_episode_frames (Atari: no-ops included; Gymnasium: steps). The
        environments were built with max_episode_frames, so a live cap can only be lower.
        """
        check_episode_cap(frames, self.max_episode_frames)
        self.episode_cap = self.max_episode_frames if frames is None else frames
        live = None if self.episode_cap == self.max_episode_frames else self.episode_cap
        for subpopulation in self.subpopulations:
            subpopulation.episode_cap = live

    def record_timeline(self, enabled=True):
        """From the next evaluate() on, keep self.timeline: (sub-population, category, start, end) of every
        timed call, in seconds from the evaluation's start (for timeline plots); False: stop recording."""
        self.timeline = [] if enabled else None

    @staticmethod
    def _make_env(name, slots, max_episode_frames, options, k):
        if not isinstance(name, str):
            raise TypeError(f"env must be a game or Gymnasium id string, got {type(name).__name__}")
        return make_batch(name, slots, seed=k, **dict(options, **episode_cap_option(name, max_episode_frames)))

    @property
    def num_parameters(self):
        return self.space.num_parameters

    def evaluate(self, requests, seed=0, bases=None, cancel=None, request_ids=None):
        """[EvaluationResult(returns, behaviours, steps, frames)] in request order; sets self.telemetry.

        bases: {key: weights} of dense bases the genomes start from (strategy.bases()).
        cancel: a threading.Event; once set, the sub-populations stop after their current step
        and EvaluationCancelled is raised. request_ids: each request's index for its episode seeds
        (default its position; a chunk of a larger list, as RayEvaluator sends, passes the global ones). Every genome is checked before any episode runs
        (ValueError naming it).
        """
        requests = list(requests)
        if bases is not None:
            for key, weights in bases.items():
                self.decoder.add_base(key, weights)
            self.decoder.retain_bases(bases)
        for k, request in enumerate(requests):
            if not isinstance(request, EvaluationRequest):
                raise TypeError(f"requests[{k}] must be an EvaluationRequest, got {type(request).__name__}")
            try:
                self.decoder.check(request.genome)
            except (TypeError, ValueError) as error:
                raise ValueError(f"requests[{k}] has a genome that cannot be decoded here: {error}") from error
            if request.behaviour and self.behaviour is None:
                raise ValueError(f"requests[{k}] asks for a behaviour characterisation: give the Evaluator a behaviour")
        if cancel is not None and not isinstance(cancel, threading.Event):
            raise TypeError(f"cancel must be a threading.Event or None, got {type(cancel).__name__}")
        if request_ids is not None:
            request_ids = [int(i) for i in request_ids]
            if len(request_ids) != len(requests) or any(i < 0 for i in request_ids):
                raise ValueError(f"request_ids must be {len(requests)} non-negative integers, got {request_ids!r}")
        jobs, outcomes = JobQueue(requests, cancel), Outcomes(requests)
        lanes = [[] if self.timeline is not None else None for _ in self.subpopulations]
        for subpopulation, lane in zip(self.subpopulations, lanes):
            subpopulation.timeline = lane
        start = time.perf_counter()
        parts = self._run(requests, jobs, outcomes, seed, request_ids)
        if jobs.stopped():
            raise EvaluationCancelled("the evaluation was cancelled")
        self.telemetry = Telemetry.combine(parts, time.perf_counter() - start)
        if self.timeline is not None:
            self.timeline = sorted((k, category, begin - start, end - start)
                                   for k, lane in enumerate(lanes) for category, begin, end in lane)
        return [EvaluationResult(outcomes.returns[r],
                                 None if outcomes.behaviours[r] is None else np.stack(outcomes.behaviours[r]),
                                 outcomes.steps[r], outcomes.frames[r])
                for r in range(len(requests))]

    def _run(self, requests, jobs, outcomes, seed, ids):
        if len(self.subpopulations) == 1:
            return [self.subpopulations[0].run(requests, jobs, outcomes, seed, ids)]
        parts, errors = [None] * len(self.subpopulations), []

        def work(k, subpopulation):
            try:
                parts[k] = subpopulation.run(requests, jobs, outcomes, seed, ids)
            except BaseException as error:  # re-raised in the caller's thread below
                errors.append(error)

        threads = [threading.Thread(target=work, args=(k, s), name=f"workbench-subpopulation-{k}", daemon=True)
                   for k, s in enumerate(self.subpopulations)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if errors:
            raise errors[0]
        return parts

    def close(self):
        for env in self.envs:
            env.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

