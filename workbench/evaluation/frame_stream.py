"""Gameplay frames for whoever listens: a running episode's screen, at most one per `interval` seconds.

The evaluator sets `listener` only while someone listens (a screen read per interval would otherwise be
wasted). Batches that render physics states (RENDER_STATES: MuJoCo, whose software rendering takes about 40 ms a
frame) hand the state to a FramePainter thread, so stepping never waits for the renderer; the painter starts, and
prepares the renderer (MuJoCo's render process takes about a second to start), as soon as a listener is set, so
that the first frame of a run is painted at once, not a second late (a short run would otherwise show none).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from workbench.envs.batch import RENDER_STATES, SCREEN, EnvBatch

FrameListener = Callable[[dict], None]


class FramePainter:
    """Renders gameplay frames in a thread of its own: the stepping thread hands over a physics state (cheap) and
    goes on; only the newest state waits, older ones are dropped."""

    def __init__(
        self, render: Callable[..., np.ndarray], deliver: FrameListener, prepare: Callable[[], None] | None = None
    ) -> None:
        self._render, self._deliver, self._prepare = render, deliver, prepare
        self._pending: tuple[dict, tuple] | None = None
        self._wake = threading.Condition()
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="workbench-frame-painter", daemon=True)
        self._thread.start()

    def submit(self, details: dict, state: tuple) -> None:
        with self._wake:
            self._pending = (details, state)
            self._wake.notify()

    def _run(self) -> None:
        with self._wake:
            if self._closed:  # closed before this thread first ran: start no renderer for a batch being closed
                return
        if self._prepare is not None:
            try:
                self._prepare()
            except Exception:  # noqa: BLE001 - the first render raises it again, where it is reported
                pass
        while True:
            with self._wake:
                while self._pending is None and not self._closed:
                    self._wake.wait()
                if self._closed or self._pending is None:
                    return
                (details, state), self._pending = self._pending, None
            self._deliver(dict(details, frame=self._render(*state)[0]))

    def close(self) -> None:
        with self._wake:
            self._closed = True
            self._wake.notify()
        self._thread.join(timeout=5)


class FrameStream:
    """Throttled frames of one environment batch to `listener` (None: nobody listens); see the module."""

    def __init__(self, env: EnvBatch, interval: float = 0.1) -> None:
        self.env, self.interval = env, interval
        self._listener: FrameListener | None = None
        self._has_screen = env.supports(SCREEN)
        self._last = 0.0
        self._painter: FramePainter | None = None

    @property
    def listener(self) -> FrameListener | None:
        """Who receives the frames (None: nobody); setting one starts the painter of a RENDER_STATES batch."""
        return self._listener

    @listener.setter
    def listener(self, listener: FrameListener | None) -> None:
        self._listener = listener
        if listener is not None and self._has_screen and self.env.supports(RENDER_STATES) and self._painter is None:
            self._painter = FramePainter(self.env.render_states, self._deliver, prepare=self.env.prepare_rendering)

    def due(self) -> bool:
        """Whether a frame should be sent now (someone listens, the batch has screens, the interval has passed)."""
        return self.listener is not None and self._has_screen and time.monotonic() - self._last >= self.interval

    def send(self, slot: int, details: dict[str, Any]) -> None:
        """Sends slot `slot`'s screen with `details` (request, episode, step, score) and its step info."""
        self._last = time.monotonic()
        info = {name: float(values[0]) for name, values in self.env.step_info([slot]).items()}
        details = dict(details, info=info)
        if self._painter is not None:
            self._painter.submit(details, self.env.physics_state([slot]))
        else:
            self._deliver(dict(details, frame=self.env.screen([slot])[0]))

    def _deliver(self, frame: dict) -> None:
        listener = self._listener  # it may have been switched off while the frame was painted
        if listener is not None:
            listener(frame)

    def close(self) -> None:
        """Stops the painter thread, if one started."""
        if self._painter is not None:
            self._painter.close()
            self._painter = None
