"""The MuJoCo render server: a child process that renders frames of MuJoCo tasks with Gymnasium's renderer.

Run as a script by workbench.envs.mujoco.render (never imported by the workbench): Mesa's OpenGL
(EGL or OSMesa, software rendering through LLVM) and TensorFlow, which carries its own LLVM, crash
when they share a process, so rendering lives in a process that never imports TensorFlow.

Protocol over stdin/stdout: length-prefixed pickles. The first message is (task id, Gymnasium keyword
arguments, width, height, tracked body); the reply is ("ready", None) or ("error", message). A tracked body id
makes the camera a tracking camera (mjCAMERA_TRACKING) that looks at that body from the task's own distance and
elevation, so the agent stays in the frame wherever it runs; None keeps Gymnasium's camera for the task. Then each
("render", qpos [n, nq], qvel [n, nv]) is answered with ("frames", uint8 [n, height, width, 3]) or
("error", message); ("close",) ends the process.
"""

from __future__ import annotations

import os
import pickle
import signal
import struct
import sys
from typing import IO, Any


def read_message(stream: IO[bytes]) -> Any:
    """The next message of `stream`, or None at its end."""
    header = stream.read(8)
    if len(header) < 8:
        return None
    (size,) = struct.unpack("<Q", header)
    return pickle.loads(stream.read(size))


def write_message(stream: IO[bytes], message: Any) -> None:
    """Writes `message` to `stream` and flushes it."""
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(struct.pack("<Q", len(data)) + data)
    stream.flush()


def serve(inbox: IO[bytes], outbox: IO[bytes]) -> None:
    """Answers render requests from `inbox` on `outbox` until ("close",) or the end of `inbox`."""
    task_id, kwargs, width, height, tracked_body = read_message(inbox)
    try:
        import gymnasium
        import mujoco
        import numpy as np

        env: Any = gymnasium.make(task_id, render_mode="rgb_array", width=width, height=height, **kwargs)
        env.reset(seed=0)
        if tracked_body is not None:
            renderer = env.unwrapped.mujoco_renderer
            camera = dict(renderer.default_cam_config or {})
            camera.pop("lookat", None)  # the tracking camera looks at the body
            camera.update(type=int(mujoco.mjtCamera.mjCAMERA_TRACKING), trackbodyid=int(tracked_body))
            renderer.default_cam_config = camera
            renderer.camera_id = None  # a camera id (-1 included) would reset the camera's type at every frame
        env.render()
    except Exception as error:  # noqa: BLE001 - reported to the parent, which raises it
        write_message(outbox, ("error", f"{type(error).__name__}: {error}"))
        return
    write_message(outbox, ("ready", None))
    while True:
        message = read_message(inbox)
        if message is None or message[0] == "close":
            break
        try:
            _, qpos, qvel = message
            frames = []
            for k in range(len(qpos)):
                env.unwrapped.set_state(qpos[k], qvel[k])
                frames.append(env.render())
            write_message(outbox, ("frames", np.stack(frames)))
        except Exception as error:  # noqa: BLE001 - reported to the parent, which raises it
            write_message(outbox, ("error", f"{type(error).__name__}: {error}"))
    env.close()


if __name__ == "__main__":
    # The parent ends this process (a "close" message or the end of stdin). An interrupt of the parent's process
    # group (a notebook cell stopped, the kernel shut down) must not kill it mid-message with a traceback.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # Run as a script, this directory heads sys.path, and its mujoco.py would shadow the mujoco package.
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path = [path for path in sys.path if os.path.abspath(path or os.curdir) != here]
    if not os.environ.get("DISPLAY"):  # headless: render through EGL unless the user chose a platform
        os.environ.setdefault("MUJOCO_GL", "egl")
    if os.environ.get("MUJOCO_GL") in ("egl", "osmesa"):
        os.environ.setdefault("PYOPENGL_PLATFORM", os.environ["MUJOCO_GL"])
    inbox, outbox = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # MuJoCo's and Gymnasium's prints must not enter the protocol stream
    serve(inbox, outbox)
