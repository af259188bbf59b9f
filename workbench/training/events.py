"""EventBus: a publish/subscribe stream that never blocks the publisher.

The trainer publishes events (per-generation metrics, gameplay frames,
hyperparameter changes, checkpoints, errors, state changes); any number of
subscribers (dashboards, loggers, tests) read them at their own pace. Each
subscription has a bounded queue: when a slow reader lets it fill up, the
oldest events are dropped (and counted), never the publisher delayed.

    subscription = trainer.events.subscribe(kinds={"generation", "error"})
    event = subscription.get(timeout=1.0)       # Event(kind, data, time) or None
    events = subscription.drain()               # everything waiting, at once
"""
import collections
import dataclasses
import threading
import time

KINDS = ("generation", "frame", "hyperparameters", "checkpoint", "error", "state")


@dataclasses.dataclass(frozen=True)
class Event:
    kind: str
    data: dict
    time: float


class Subscription:
    def __init__(self, bus, kinds, maxsize):
        self._bus, self.kinds, self.maxsize = bus, kinds, maxsize
        self._queue = collections.deque()
        self._ready = threading.Condition()
        self.dropped = 0

    def _put(self, event):
        with self._ready:
            if len(self._queue) >= self.maxsize:
                self._queue.popleft()
                self.dropped += 1
            self._queue.append(event)
            self._ready.notify()

    def get(self, timeout=None):
        """The next event, waiting up to `timeout` seconds (None: forever); None on timeout."""
        with self._ready:
            if not self._ready.wait_for(lambda: self._queue, timeout):
                return None
            return self._queue.popleft()

    def drain(self):
        """Every event waiting now, oldest first."""
        with self._ready:
            events = list(self._queue)
            self._queue.clear()
            return events

    def close(self):
        self._bus._unsubscribe(self)


class EventBus:
    def __init__(self):
        self._subscriptions = []
        self._lock = threading.Lock()

    def subscribe(self, kinds=None, maxsize=1000):
        """A new Subscription to `kinds` (a set of KINDS; None = all)."""
        if kinds is not None:
            kinds = set(kinds)
            unknown = kinds - set(KINDS)
            if unknown:
                raise ValueError(f"unknown event kinds {sorted(unknown)}; known: {list(KINDS)}")
        if isinstance(maxsize, bool) or not isinstance(maxsize, int) or maxsize < 1:
            raise ValueError(f"maxsize must be a positive integer, got {maxsize!r}")
        subscription = Subscription(self, kinds, maxsize)
        with self._lock:
            self._subscriptions.append(subscription)
        return subscription

    def _unsubscribe(self, subscription):
        with self._lock:
            if subscription in self._subscriptions:
                self._subscriptions.remove(subscription)

    def publish(self, kind, **data):
        if kind not in KINDS:
            raise ValueError(f"unknown event kind {kind!r}")
        event = Event(kind, data, time.time())
        with self._lock:
            subscriptions = list(self._subscriptions)
        for subscription in subscriptions:
            if subscription.kinds is None or kind in subscription.kinds:
                subscription._put(event)
