"""One trainer per run directory: an exclusive lock a Trainer holds on run_dir/trainer.lock while it lives.

    lock = RunLock.acquire("runs/x")     # RunInUseError naming the folder and the process that holds it
    lock.release()                       # (Trainer.close() does it; so does the process ending, however it ends)

The lock is an advisory flock on the file, so it goes with its process: a run killed with kill -9 leaves no
stale lock behind, and the next `resume` takes it. A file system without flock (some network mounts) runs
unlocked rather than refusing to train.
"""

from __future__ import annotations

import errno
import fcntl
import os
import socket
from typing import IO

LOCK_FILE = "trainer.lock"


class RunInUseError(RuntimeError):
    """Another trainer (in this process or another) holds the run directory."""


class RunLock:
    """The held lock of one run directory."""

    def __init__(self, run_dir: str, handle: IO[str] | None) -> None:
        self.run_dir, self._handle = run_dir, handle

    @classmethod
    def acquire(cls, run_dir: str) -> RunLock:
        """Takes the run directory's lock (making the directory when needed), or RunInUseError naming who holds it."""
        os.makedirs(run_dir, exist_ok=True)
        path = os.path.join(run_dir, LOCK_FILE)
        handle = open(path, "a+")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as error:
            if error.errno not in (errno.EWOULDBLOCK, errno.EACCES):
                return cls(run_dir, handle)  # no flock on this file system: unlocked
            handle.seek(0)
            holder = handle.read().strip() or "another trainer"
            handle.close()
            if holder.startswith(f"process {os.getpid()} "):
                holder = "another Trainer of this process (close() it, or go on with it)"
            raise RunInUseError(
                f"run_dir {run_dir!r} is in use by {holder}: one trainer writes a run at a time (wait for it to end, "
                "stop it, or choose another directory)"
            ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"process {os.getpid()} on {socket.gethostname()}")
        handle.flush()
        return cls(run_dir, handle)

    @staticmethod
    def check(run_dir: str) -> None:
        """RunInUseError when the run directory's lock is held now (a quick test before building a run)."""
        if os.path.exists(os.path.join(run_dir, LOCK_FILE)):
            RunLock.acquire(run_dir).release()

    def release(self) -> None:
        """Gives the lock up (safe to call twice)."""
        if self._handle is not None and not self._handle.closed:
            self._handle.close()  # closing the file drops its flock
        self._handle = None
