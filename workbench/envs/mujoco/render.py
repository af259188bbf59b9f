"""MujocoRenderer: RGB frames of MuJoCo physics states, rendered in a child process (render_server.py).

    renderer = MujocoRenderer("Humanoid-v5", kwargs, (240, 320), tracked_body=1)
    frames = renderer.render(qpos, qvel)      # uint8 [n, 240, 320, 3], a camera that follows body 1
    renderer.close()

tracked_body=None renders with Gymnasium's own camera for the task, which does not follow HalfCheetah or Ant:
once they have run a few metres, its frames show the floor only.

The child never imports TensorFlow: Mesa's software OpenGL and TensorFlow's LLVM crash in one
process. Headless machines render through EGL (the default without a display) or OSMesa
(MUJOCO_GL=osmesa); the child inherits MUJOCO_GL when it is set.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import numpy as np

from workbench.envs.mujoco import render_server as protocol

SERVER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "render_server.py")
HINT = (
    "Headless machines need EGL (libegl1 and Mesa: apt-get install libegl1 libgl1-mesa-dri) or OSMesa "
    "(MUJOCO_GL=osmesa: apt-get install libosmesa6), and the Python packages glfw and PyOpenGL"
)


class MujocoRenderer:
    """A render server for one task and frame size; thread-safe; close() (or garbage collection) ends it."""

    def __init__(self, task_id: str, kwargs: dict, size: tuple[int, int], tracked_body: int | None = None) -> None:
        height, width = size
        self._lock = threading.Lock()
        process = subprocess.Popen([sys.executable, SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert process.stdin is not None and process.stdout is not None  # both are pipes
        self._process: subprocess.Popen[bytes] | None = process
        self._requests, self._replies = process.stdin, process.stdout
        try:
            body = None if tracked_body is None else int(tracked_body)
            protocol.write_message(self._requests, (task_id, dict(kwargs), int(width), int(height), body))
            self._reply("ready")
        except BaseException:
            self.close()
            raise

    def _reply(self, expected):
        message = protocol.read_message(self._replies)
        if message is None:
            code = None if self._process is None else self._process.poll()
            raise RuntimeError(f"the MuJoCo render process ended unexpectedly (exit code {code}). " + HINT)
        kind, value = message
        if kind == "error":
            raise RuntimeError(f"MuJoCo could not render: {value}. {HINT}")
        assert kind == expected, (kind, expected)
        return value

    def render(self, qpos: np.ndarray, qvel: np.ndarray) -> np.ndarray:
        """uint8 [n, height, width, 3] of the physics states (qpos [n, nq], qvel [n, nv])."""
        with self._lock:
            if self._process is None:
                raise RuntimeError("this MujocoRenderer is closed")
            protocol.write_message(self._requests, ("render", np.asarray(qpos, np.float64), np.asarray(qvel, np.float64)))
            return self._reply("frames")

    def close(self) -> None:
        """Ends the render process (safe to call twice)."""
        with self._lock:
            process, self._process = self._process, None
        if process is None:
            return
        try:
            protocol.write_message(self._requests, ("close",))
            self._requests.close()
            process.wait(timeout=10)
        except (OSError, ValueError, subprocess.TimeoutExpired):
            process.kill()
            process.wait()

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass
