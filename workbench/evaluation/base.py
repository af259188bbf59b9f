"""BaseEvaluator: the interface every evaluator has (local, Ray), and the checks they share.

An evaluator turns EvaluationRequests (a genome and a number of episodes) into
EvaluationResults (returns [episodes], and behaviours, steps, frames per episode):

    evaluator.spec                          # RunSpec: environment, model, built-in episode cap, noise table
    evaluator.space                         # ParameterSpace the genomes index (ask a strategy with it)
    results = evaluator.evaluate(requests, seed=s, bases=strategy.bases(), cancel=event)
    evaluator.telemetry                     # Telemetry of the last evaluate(): frames, seconds per category
    evaluator.set_episode_cap(2_000)        # from the next evaluate() on; at most spec.max_episode_frames
    evaluator.add_frame_listener(fn)        # fn(dict(request, episode, step, score, frame)) from a running episode
    evaluator.set_observation_statistics(s) # what observations are normalised by (spec.observation_normalization)
    evaluator.close()                       # or use it as a context manager

Results depend only on the requests, their order and `seed` (episode e of
request r starts from episode_seed(seed, r, e)), never on the evaluator's
layout. A subclass implements evaluate() (calling check_requests() first) and
may react to cap changes (_episode_cap_changed) and to listeners (_listeners_changed).
"""

from __future__ import annotations

import abc
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import TypeVar

import numpy as np

from workbench.checks import check_positive_int, check_type
from workbench.evaluation.behaviour import Behaviour
from workbench.evaluation.run_spec import RunSpec
from workbench.evaluation.telemetry import Telemetry
from workbench.evolution.genome import GenomeDecoder, base_shapes
from workbench.evolution.space import ParameterSpace
from workbench.evolution.strategy import EvaluationRequest, EvaluationResult
from workbench.models.observation_normalization import ObservationStatistics

FrameListener = Callable[[dict], None]


_Evaluator = TypeVar("_Evaluator", bound="BaseEvaluator")


class EvaluationCancelled(Exception):
    """evaluate() was stopped through its `cancel` event; the partial results are discarded."""


class BaseEvaluator(abc.ABC):
    """What the trainer, replays, the dashboard and Ray see of an evaluator; see the module docstring."""

    def __init__(
        self, spec: RunSpec, space: ParameterSpace, decoder: GenomeDecoder, behaviour: Callable | str | Behaviour | None = None
    ) -> None:
        check_type("spec", spec, RunSpec)
        self.spec, self.space, self.decoder, self.behaviour = spec, space, decoder, behaviour
        self.telemetry = Telemetry()
        self._max_episode_frames = spec.max_episode_frames
        self._frame_listeners: list[FrameListener] = []
        self._listeners_lock = threading.Lock()

    # -- the episode cap ------------------------------------------------------------------
    @property
    def max_episode_frames(self) -> int | None:
        """The episode cap in force (Atari: frames, no-ops included; Gymnasium: steps); None = the env's own."""
        return self._max_episode_frames

    def check_episode_cap(self, frames: int | None) -> int | None:
        """`frames` if it is a valid live cap (None = back to the spec's), else a ValueError naming max_episode_frames."""
        if frames is None:
            return None
        check_positive_int("max_episode_frames", frames)
        built = self.spec.max_episode_frames
        if built is not None and frames > built:
            raise ValueError(f"max_episode_frames can be changed live only up to the run's cap ({built}), got {frames}")
        return int(frames)

    def set_episode_cap(self, frames: int | None) -> None:
        """Caps episodes at `frames` from the next evaluate() on (None: back to spec.max_episode_frames).

        The environments were built with spec.max_episode_frames, so a live cap can only be lower.
        """
        frames = self.check_episode_cap(frames)
        self._max_episode_frames = self.spec.max_episode_frames if frames is None else frames
        live = None if self._max_episode_frames == self.spec.max_episode_frames else self._max_episode_frames
        self._episode_cap_changed(live)

    def _episode_cap_changed(self, live_cap: int | None) -> None:
        """Hook: the cap below the built-in one that episodes must now respect (None: the built-in one)."""

    # -- observation normalisation -------------------------------------------------------
    def set_observation_statistics(self, statistics: ObservationStatistics | None) -> None:
        """Normalises observations by `statistics` from the next evaluate() on (None: the identity); self.spec
        then carries them, so evaluators, replays and scores built from it normalise alike."""
        if self.spec.normalization is None:
            raise ValueError("set_observation_statistics() needs a spec with observation_normalization")
        if statistics is not None:
            check_type("statistics", statistics, ObservationStatistics)
            size = int(np.prod(self.spec.observation_shape()))
            if statistics.size != size:
                raise ValueError(f"statistics must be for observations of size {size}, got {statistics.size}")
        self.spec = self.spec.with_observation_statistics(statistics)
        self._observation_statistics_changed(statistics)

    def _observation_statistics_changed(self, statistics: ObservationStatistics | None) -> None:
        """Hook: the statistics observations must now be normalised by."""

    # -- gameplay frames ------------------------------------------------------------------
    def add_frame_listener(self, listener: FrameListener) -> None:
        """Calls listener(dict(request, episode, step, score, frame)) with frames of running episodes (throttled).

        The listener runs in an evaluation thread: keep it short. A RayEvaluator streams the frames of its
        first actor, fetched while evaluate() runs.
        """
        if not callable(listener):
            raise TypeError("frame listeners must be callable")
        with self._listeners_lock:
            self._frame_listeners.append(listener)
        self._listeners_changed()

    def remove_frame_listener(self, listener: FrameListener) -> None:
        """Stops calling `listener` (ValueError if it was never added)."""
        with self._listeners_lock:
            if listener not in self._frame_listeners:
                raise ValueError("this frame listener was never added")
            self._frame_listeners.remove(listener)
        self._listeners_changed()

    @property
    def has_frame_listeners(self) -> bool:
        return bool(self._frame_listeners)

    def _publish_frame(self, frame: dict) -> None:
        with self._listeners_lock:
            listeners = list(self._frame_listeners)
        for listener in listeners:
            listener(frame)

    def _listeners_changed(self) -> None:
        """Hook: frame listeners were added or removed."""

    # -- evaluation -----------------------------------------------------------------------
    @abc.abstractmethod
    def evaluate(
        self,
        requests: Sequence[EvaluationRequest],
        seed: int = 0,
        bases: Mapping[str, np.ndarray] | None = None,
        cancel: threading.Event | None = None,
        request_ids: Sequence[int] | None = None,
        round_index: int | None = None,
    ) -> list[EvaluationResult]:
        """[EvaluationResult] in request order; sets self.telemetry.

        bases: {key: weights} of the dense bases genomes start from (strategy.bases(); weights [n], or
          weights and per-parameter mutation scales [2, n], and a rank-one direction [3, n]: genome.py).
        cancel: once set, the evaluation stops soon and EvaluationCancelled is raised.
        request_ids: each request's index for its episode seeds (check_request_ids; default its position: a
          part of a larger list passes the global ones, as scoring and RayEvaluator's chunks do).
        round_index: the round this call belongs to, for the decoder's cache (GenomeDecoder.start_round);
          None: this call is a round of its own.
        """

    def check_requests(
        self,
        requests: Sequence[EvaluationRequest],
        bases: Mapping[str, np.ndarray] | None = None,
        cancel: threading.Event | None = None,
    ) -> list[EvaluationRequest]:
        """The requests as a list, every one checked before any episode runs (errors name requests[k])."""
        requests = list(requests)
        bases = {} if bases is None else bases
        check_type("bases", bases, Mapping, "a dict {key: weights} or None")
        n = self.space.num_parameters
        for key, weights in bases.items():
            if np.shape(weights) not in base_shapes(n):
                raise ValueError(
                    f"bases[{key!r:.80}] must hold {n} weights (or weights and mutation scales [2, {n}], and a "
                    f"direction [3, {n}]), got shape {np.shape(weights)}"
                )
        for k, request in enumerate(requests):
            if not isinstance(request, EvaluationRequest):
                raise TypeError(f"requests[{k}] must be an EvaluationRequest, got {type(request).__name__}")
            try:
                self.decoder.check(request.genome, bases=bases.keys())
            except (TypeError, ValueError) as error:
                raise ValueError(f"requests[{k}] has a genome that cannot be decoded here: {error}") from error
            if request.behaviour and self.behaviour is None:
                raise ValueError(f"requests[{k}] asks for a behaviour characterisation: give the evaluator a behaviour")
        if cancel is not None and not isinstance(cancel, threading.Event):
            raise TypeError(f"cancel must be a threading.Event or None, got {type(cancel).__name__}")
        return requests

    @staticmethod
    def check_request_ids(request_ids: Sequence[int] | None, count: int) -> list[int]:
        """Each request's index for its episode seeds: `request_ids` (a chunk of a larger list, as RayEvaluator
        sends, passes the global ones) or the positions 0..count-1; ValueError unless count non-negative ints."""
        if request_ids is None:
            return list(range(count))
        ids = [int(i) for i in request_ids]
        if len(ids) != count or any(i < 0 for i in ids):
            raise ValueError(f"request_ids must be {count} non-negative integers, got {list(request_ids)!r}")
        return ids

    @property
    def num_parameters(self) -> int:
        return self.space.num_parameters

    # -- lifetime -------------------------------------------------------------------------
    def close(self) -> None:
        """Frees the evaluator's environments (and processes); safe to call twice."""

    def __enter__(self: _Evaluator) -> _Evaluator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
