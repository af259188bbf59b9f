"""The work a round hands to its sub-populations and where their results go.

JobQueue   the (request, episode) jobs, taken by whichever sub-population has a free episode slot
Outcomes   per request: each episode's return, steps, frames, behaviour and observation sums
"""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from workbench.evaluation.behaviour import checked_behaviour
from workbench.evolution import EvaluationRequest


class JobQueue:
    """(request, episode) pairs handed out to sub-populations, in request order (or in `order`); thread-safe.

    With `lanes` sub-populations taking, each runs at most ceil(jobs / lanes) episodes at once (`running`, given
    to take()): a round of fewer jobs than slots is shared out evenly instead of going to whichever lane asks
    first (19 episodes on 2 x 16 slots: 10 and 9, not 16 and 3), and a larger round is not limited.

    Stopped once a sub-population fails (it sets `failed`) or the caller's `cancel` event is set:
    every sub-population then ends its loop after the current step. `dry_at` is the
    time.perf_counter() of the first take() that could not fill every free slot (the end
    of the round's busy phase; None while every take() was served in full).
    """

    def __init__(
        self,
        requests: Sequence[EvaluationRequest],
        cancel: threading.Event | None = None,
        order: Sequence[int] | None = None,
        lanes: int = 1,
    ) -> None:
        order = range(len(requests)) if order is None else order  # the requests whose episodes start first
        self._jobs = collections.deque((r, e) for r in order for e in range(requests[r].episodes))
        self.share = -(-len(self._jobs) // max(1, lanes))  # episodes a lane runs at once at most
        self._lock = threading.Lock()
        self.failed = threading.Event()
        self.cancel = cancel
        self.dry_at: float | None = None

    def stopped(self) -> bool:
        return self.failed.is_set() or (self.cancel is not None and self.cancel.is_set())

    def take(self, count: int, running: int = 0) -> list[tuple[int, int]]:
        """Up to `count` jobs for a lane with `count` free slots and `running` episodes running."""
        with self._lock:
            if self.stopped():
                return []
            if count > len(self._jobs) and self.dry_at is None:
                self.dry_at = time.perf_counter()
            count = min(count, len(self._jobs), max(0, self.share - running))
            return [self._jobs.popleft() for _ in range(count)]

    def __len__(self) -> int:
        with self._lock:
            return len(self._jobs)


class Outcomes:
    """Per request: returns, steps and frames per episode, and behaviours when asked for."""

    def __init__(self, requests: Sequence[EvaluationRequest]) -> None:
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
            self.observation_sums = [(np.zeros(len(r)), np.zeros((len(r), size)), np.zeros((len(r), size))) for r in self.returns]

    def behaviour(self, r: int, e: int, vector: Any, name: str = "the behaviour function") -> None:
        """Episode e of request r's behaviour (ValueError naming `name` for the wrong shape)."""
        with self.lock:
            vector = checked_behaviour(vector, self.dimensions, f"request {r}, episode {e}", name)
            self.dimensions = vector.size
            episodes = self.behaviours[r]
            assert episodes is not None, f"request {r} asked for no behaviour"
            episodes[e] = vector
