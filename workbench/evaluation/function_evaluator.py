"""FunctionEvaluator: genomes evaluated on a function problem (workbench.envs.function) instead of episodes.

    evaluator = FunctionEvaluator("rastrigin-100")             # a built-in or registered problem's name
    evaluator = FunctionEvaluator(FunctionProblem("my-loss", 10, loss))   # registers the problem in this process
    results = evaluator.evaluate(strategy.ask(), seed=0, bases=strategy.bases())

It is the evaluator the function family names (EnvFamily.evaluator), so RunConfig(env="rastrigin-100").build(),
the command line, the trainer, checkpoints, the dashboard and RayEvaluator (each actor builds one) take it as
they take the pipelined Evaluator. Each genome is decoded by the run's GenomeDecoder (float32, the same in
every process), the vectors of a call are stacked into float64 matrices of at most `rows_per_call` rows
(default: as many as fit in 256 MB) and the objective is called once per matrix.

One "frame" is one row the objective evaluates. A deterministic problem is evaluated once per request, whatever
its episodes ask for: every episode has that return, frames [1, 0, ...]. A noisy one is evaluated once per
episode with the seed episode_seed(seed, request index, episode) (as uint64, what numpy's default_rng takes),
so results depend only on the requests, their order and `seed`, as for every evaluator. behaviour "parameters"
(novelty search's default here): each episode's behaviour is the parameter vector. Telemetry: weight loading is
the decoding, inference the objective.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from workbench.checks import check_int, check_type
from workbench.envs import FunctionProblem, register_function_problem
from workbench.envs.function import function_problem, registered_function_problem
from workbench.envs.rng import episode_seed
from workbench.evaluation.base import BaseEvaluator, EvaluationCancelled
from workbench.evaluation.layout import EvaluatorLayout
from workbench.evaluation.run_spec import VECTOR_MODEL, RunSpec
from workbench.evaluation.telemetry import Telemetry
from workbench.evolution.genome import GenomeDecoder
from workbench.evolution.noise import DEFAULT_SEED, DEFAULT_SIZE
from workbench.evolution.space import ParameterSpace
from workbench.evolution.strategy import EvaluationRequest, EvaluationResult

BEHAVIOUR = "parameters"  # the behaviour characterisation a function problem has: the parameter vector
CALL_BYTES = 256 * 2**20  # float64 rows per objective call, by default


def space(spec: RunSpec) -> ParameterSpace:
    """The parameter space of a function problem's spec: its dimension over the spec's noise table, random initial
    vectors of the problem's init_scale, no layers (low-rank mutations need layers: a function problem takes
    full-rank ones)."""
    problem = function_problem(spec.env)
    return ParameterSpace(spec.noise(), np.full(problem.dimension, problem.init_scale, np.float32))


def worker_setup(spec: RunSpec) -> Any:
    """What a worker process (a Ray actor) must call before it can build this spec's evaluator: registering the
    problem when it is a registered one (a picklable callable), or None for a built-in name."""
    registered = registered_function_problem(spec.env)
    return None if registered is None else functools.partial(register_function_problem, registered, replace=True)


def from_spec(spec: RunSpec, layout: EvaluatorLayout | None = None) -> FunctionEvaluator:
    """The FunctionEvaluator of a function problem's RunSpec; of the layout it reads the behaviour and the
    decoder's cache, and refuses what a function problem cannot have (a low-rank perturbed mode, action noise)."""
    return FunctionEvaluator.from_spec(spec, layout)


class FunctionEvaluator(BaseEvaluator):
    """Evaluates genomes on a function problem; see the module docstring.

    problem: a function problem's name (built-in or registered) or a FunctionProblem (registered in this process,
      replacing one of the same name). noise_size, noise_seed: the shared noise table. behaviour: None or
      "parameters". rows_per_call: rows per objective call (default: 256 MB of float64 rows). cache_bytes: the
      decoder's cache.
    """

    def __init__(
        self,
        problem: str | FunctionProblem,
        *,
        noise_size: int = DEFAULT_SIZE,
        noise_seed: int = DEFAULT_SEED,
        behaviour: str | None = None,
        rows_per_call: int | None = None,
        cache_bytes: int = 2**30,
    ) -> None:
        if isinstance(problem, FunctionProblem):
            register_function_problem(problem, replace=True)
            problem = problem.name
        check_type("problem", problem, str, "a function problem's name or a FunctionProblem")
        spec = RunSpec(problem, VECTOR_MODEL, max_episode_frames=1, noise_size=noise_size, noise_seed=noise_seed)
        self._build(spec, EvaluatorLayout(behaviour=behaviour, cache_bytes=cache_bytes), rows_per_call)

    @classmethod
    def from_spec(
        cls, spec: RunSpec, layout: EvaluatorLayout | None = None, rows_per_call: int | None = None
    ) -> FunctionEvaluator:
        """The evaluator of a function problem's RunSpec (see the module function from_spec)."""
        evaluator = cls.__new__(cls)
        evaluator._build(spec, EvaluatorLayout() if layout is None else layout, rows_per_call)
        return evaluator

    def _build(self, spec: RunSpec, layout: EvaluatorLayout, rows_per_call: int | None) -> None:
        check_type("spec", spec, RunSpec)
        check_type("layout", layout, EvaluatorLayout)
        self.problem = function_problem(spec.env)
        if spec.model != VECTOR_MODEL:
            raise ValueError(
                f'model: {spec.env} is a function problem; its model is "{VECTOR_MODEL}" (the parameter vector), '
                f"got {spec.model!r}"
            )
        if spec.model_options:
            raise ValueError(
                f'model_options: the "{VECTOR_MODEL}" model of a function problem has none, got {dict(spec.model_options)}'
            )
        if spec.env_options:
            raise ValueError(f"env_options: a function problem has none, got {dict(spec.env_options)}")
        if spec.normalization is not None:
            raise ValueError("observation_normalization: a function problem has no observations to normalise")
        if spec.reference_batch is not None:
            raise ValueError("virtual_batch_norm: a function problem has no network to normalise")
        if layout.perturbed_rank:
            raise ValueError("perturbed_rank: a function problem has no layers for low-rank perturbations; it must be 0")
        if layout.action_noise:
            raise ValueError("action_noise: a function problem has no actions; it must be 0")
        if layout.behaviour not in (None, BEHAVIOUR):
            raise ValueError(
                f'behaviour: a function problem\'s behaviour characterisation is "{BEHAVIOUR}", got {layout.behaviour!r}'
            )
        parameter_space = space(spec)
        rows = rows_per_call if rows_per_call is not None else max(1, CALL_BYTES // (8 * self.problem.dimension))
        self.rows_per_call = check_int("rows_per_call", rows, 1)
        super().__init__(spec, parameter_space, GenomeDecoder(parameter_space, layout.cache_bytes), layout.behaviour)

    def evaluate(
        self,
        requests: Sequence[EvaluationRequest],
        seed: int = 0,
        bases: Mapping[str, np.ndarray] | None = None,
        cancel: threading.Event | None = None,
        request_ids: Sequence[int] | None = None,
        round_index: int | None = None,
    ) -> list[EvaluationResult]:
        """[EvaluationResult(returns, behaviours, steps, frames)] in request order; sets self.telemetry. The
        arguments are the pipelined Evaluator's (request_ids: each request's index for its episode seeds;
        round_index: the round, for the decoder's cache)."""
        requests = self.check_requests(requests, bases, cancel)
        ids = self.check_request_ids(request_ids, len(requests))
        if round_index is not None:
            check_int("round_index", round_index, 0)
        for key, weights in (bases or {}).items():
            self.decoder.add_base(key, weights)
        if bases is not None:
            self.decoder.retain_bases(bases)
        self.decoder.start_round(round_index)
        # the rows the objective evaluates: (request, episode); a deterministic problem's episode 0 only
        rows = [(k, e) for k, request in enumerate(requests) for e in range(request.episodes if self.problem.noisy else 1)]
        values = np.empty(len(rows))
        start, decoding, calling = time.perf_counter(), 0.0, 0.0
        for first in range(0, len(rows), self.rows_per_call):
            if cancel is not None and cancel.is_set():
                raise EvaluationCancelled("the evaluation was cancelled")
            chunk = rows[first : first + self.rows_per_call]
            tick = time.perf_counter()
            x = np.stack([self.decoder.decode(requests[k].genome) for k, _ in chunk]).astype(np.float64)
            tock = time.perf_counter()
            seeds = np.array([episode_seed(seed, ids[k], e) % 2**64 for k, e in chunk], np.uint64) if self.problem.noisy else None
            values[first : first + len(chunk)] = self.problem.returns(x, seeds)
            decoding, calling = decoding + tock - tick, calling + time.perf_counter() - tock
        results = self._results(requests, rows, values)
        wall = time.perf_counter() - start
        episodes = sum(request.episodes for request in requests)
        self.telemetry = Telemetry(
            wall_seconds=wall,
            inference_seconds=calling,
            weight_loading_seconds=decoding,
            idle_seconds=max(0.0, wall - calling - decoding),
            frames=len(rows),
            steps=len(rows),
            episodes=episodes,
            busy_seconds=wall,
        )
        return results

    def _results(
        self, requests: list[EvaluationRequest], rows: list[tuple[int, int]], values: np.ndarray
    ) -> list[EvaluationResult]:
        """Each request's returns (a deterministic problem's one value for every episode), one frame and step per
        evaluated row, and its parameter vector per episode as the behaviour when asked for."""
        returns = [np.empty(request.episodes) for request in requests]
        frames = [np.zeros(request.episodes, np.int64) for request in requests]
        for (k, e), value in zip(rows, values):
            if self.problem.noisy:
                returns[k][e] = value
            else:
                returns[k][:] = value
            frames[k][e] = 1
        results = []
        for k, request in enumerate(requests):
            behaviours = None
            if request.behaviour:
                behaviours = np.tile(self.decoder.decode(request.genome), (request.episodes, 1))
            results.append(EvaluationResult(returns[k], behaviours, frames[k].copy(), frames[k]))
        return results
