"""EventBus: a publish/subscribe stream that never blocks the publisher.

The trainer publishes events (per-generation metrics, gameplay frames,
hyperparameter changes, checkpoints, errors, state changes); any number of
subscribers (dashboards, loggers, tests) read them at their own pace. Each
subscription has a bounded queue: when a slow reader lets it fill up, the
oldest events are dropped (and counted), never the publisher delayed.

    subscription = trainer.events.subscribe(kinds={"generation", "error"})
    event = subscription.get(timeout=1.0)       # Event(kind, data, time) or None
    events = subscription.drain()               # everything waiting, at once
    listener = trainer.events.listen(fn, kinds={"generation"})   # fn(event) in the publisher's thread

Every event's data is typed, one class per kind (PAYLOADS): a GenerationRecord for
"generation", FrameShown, HyperparametersChanged, CheckpointWritten, TrainingFailed
and StateChanged for the others. Subscriptions are for readers that must never slow
the trainer (dashboards); listeners are for writers that must see every event in
order before the trainer goes on (the RunLogger): they run synchronously and an
exception in one reaches the publisher.
"""

from __future__ import annotations

import collections
import dataclasses
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from workbench.checks import check_positive_int
from workbench.evolution.records import GenerationRecord


@dataclasses.dataclass(frozen=True)
class FrameShown:
    """A gameplay frame of a running episode: RGB uint8 [H, W, 3], its member (request), episode, step, score, and
    the last step's info terms (MuJoCo: reward components and x_velocity; {} for Atari)."""

    generation: int
    request: int
    episode: int
    step: int
    score: float
    frame: np.ndarray
    info: dict = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class HyperparametersChanged:
    """trainer.set() accepted `changes`; they apply from generation applies_at_generation."""

    changes: dict
    applies_at_generation: int


@dataclasses.dataclass(frozen=True)
class CheckpointWritten:
    path: str
    generation: int


@dataclasses.dataclass(frozen=True)
class TrainingFailed:
    """The background run stopped on an exception (its repr); generation: where it was."""

    error: str
    generation: int | None = None


@dataclasses.dataclass(frozen=True)
class StateChanged:
    state: str  # "running", "paused", "idle", "stopped", "finished"


PAYLOADS = {
    "generation": GenerationRecord,
    "frame": FrameShown,
    "hyperparameters": HyperparametersChanged,
    "checkpoint": CheckpointWritten,
    "error": TrainingFailed,
    "state": StateChanged,
}
KINDS = tuple(PAYLOADS)


@dataclasses.dataclass(frozen=True)
class Event:
    kind: str
    data: Any  # PAYLOADS[kind]
    time: float


class Subscription:
    """A bounded queue of events for one reader (oldest dropped when full); see the module docstring."""

    def __init__(self, bus: EventBus, kinds: set[str] | None, maxsize: int) -> None:
        self._bus, self.kinds, self.maxsize = bus, kinds, maxsize
        self._queue: collections.deque[Any] = collections.deque()
        self._ready = threading.Condition()
        self.dropped = 0

    def _put(self, event):
        with self._ready:
            if len(self._queue) >= self.maxsize:
                self._queue.popleft()
                self.dropped += 1
            self._queue.append(event)
            self._ready.notify()

    def get(self, timeout: float | None = None) -> Event | None:
        """The next event, waiting up to `timeout` seconds (None: forever); None on timeout."""
        with self._ready:
            if not self._ready.wait_for(lambda: self._queue, timeout):
                return None
            return self._queue.popleft()

    def drain(self) -> list[Event]:
        """Every event waiting now, oldest first."""
        with self._ready:
            events = list(self._queue)
            self._queue.clear()
            return events

    def close(self) -> None:
        self._bus._unsubscribe(self)


class Listener:
    """A callback that receives events synchronously (EventBus.listen); close() detaches it."""

    def __init__(self, bus: EventBus, callback: Callable[[Event], None], kinds: set[str] | None) -> None:
        self._bus, self.callback, self.kinds = bus, callback, kinds

    def _put(self, event):
        self.callback(event)

    def close(self) -> None:
        self._bus._unsubscribe(self)


def _checked_kinds(kinds: Iterable[str] | None) -> set[str] | None:
    if kinds is None:
        return None
    checked = set(kinds)
    unknown = checked - set(KINDS)
    if unknown:
        raise ValueError(f"unknown event kinds {sorted(unknown)}; known: {list(KINDS)}")
    return checked


class EventBus:
    """Publish/subscribe of typed events; see the module docstring."""

    def __init__(self) -> None:
        self._subscriptions: list[Subscription | Listener] = []
        self._watchers: list[Callable[[], None]] = []
        self._lock = threading.Lock()

    def wants(self, kind: str) -> bool:
        """Whether any subscription or listener receives events of `kind` (publishers may skip making them)."""
        with self._lock:
            return any(s.kinds is None or kind in s.kinds for s in self._subscriptions)

    def watch(self, callback: Callable[[], None]) -> None:
        """Calls callback() after every subscribe, listen and unsubscribe (outside the bus's lock)."""
        if not callable(callback):
            raise TypeError("callback must be callable")
        with self._lock:
            self._watchers.append(callback)

    def _changed(self):
        with self._lock:
            watchers = list(self._watchers)
        for callback in watchers:
            callback()

    def subscribe(self, kinds: Iterable[str] | None = None, maxsize: int = 1000) -> Subscription:
        """A new Subscription to `kinds` (a set of KINDS; None = all)."""
        kinds = _checked_kinds(kinds)
        check_positive_int("maxsize", maxsize)
        subscription = Subscription(self, kinds, maxsize)
        with self._lock:
            self._subscriptions.append(subscription)
        self._changed()
        return subscription

    def listen(self, callback: Callable[[Event], None], kinds: Iterable[str] | None = None) -> Listener:
        """Calls callback(event) for each event of `kinds` in the publisher's thread, before publish() returns."""
        if not callable(callback):
            raise TypeError("callback must be callable")
        listener = Listener(self, callback, _checked_kinds(kinds))
        with self._lock:
            self._subscriptions.append(listener)
        self._changed()
        return listener

    def _unsubscribe(self, subscription):
        with self._lock:
            if subscription not in self._subscriptions:
                return
            self._subscriptions.remove(subscription)
        self._changed()

    def publish(self, kind: str, payload: Any = None, **fields: Any) -> Event:
        """Publishes an event of `kind`: its typed payload, or the payload's fields as keywords."""
        if kind not in KINDS:
            raise ValueError(f"unknown event kind {kind!r}")
        payload_class = PAYLOADS[kind]
        if payload is None:
            names = [field.name for field in dataclasses.fields(payload_class)]
            if set(fields) - set(names):
                raise TypeError(f"a {kind!r} event's {payload_class.__name__} has the fields {names}, got {sorted(fields)}")
            payload = payload_class(**fields)
        elif fields or not isinstance(payload, payload_class):
            raise TypeError(f"a {kind!r} event carries one {payload_class.__name__}")
        event = Event(kind, payload, time.time())
        with self._lock:
            subscriptions = list(self._subscriptions)
        for subscription in subscriptions:
            if subscription.kinds is None or kind in subscription.kinds:
                subscription._put(event)
        return event
