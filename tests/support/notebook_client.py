"""A NotebookClient that waits for the kernel's messages in short slices.

nbclient waits for a cell's reply with one asynchronous zmq poll as long as the cell's timeout. That poll can miss
the wake-up of a reply that has already arrived (seen with ipykernel 7, pyzmq 27 and nbclient 0.11, in about one
run in three of the quality-diversity tutorial, whose widgets stream messages from a background thread). The
reply then waits in the socket until the poll times out, and pyzmq's last check at the timeout finds it: the cell
"succeeds" after exactly the timeout (600 s here) and nothing says why. Polling in slices of `SLICE` seconds makes
the same last check every slice, so a missed wake-up costs at most a slice.
"""

from __future__ import annotations

import queue
import time

from nbclient import NotebookClient

SLICE = 1.0  # seconds


class SlicedNotebookClient(NotebookClient):
    """NotebookClient whose shell and IOPub waits poll at most SLICE seconds at a time (same timeouts overall)."""

    async def async_start_new_kernel_client(self):
        client = await super().async_start_new_kernel_client()
        for channel in (client.shell_channel, client.iopub_channel):
            channel.get_msg = _sliced(channel.get_msg)
        return client


def _sliced(get_msg):
    """get_msg(timeout) as a loop of polls of at most SLICE seconds, raising queue.Empty at the same deadline."""

    async def get_msg_in_slices(timeout=None):
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            step = SLICE if deadline is None else max(0.0, min(SLICE, deadline - time.monotonic()))
            try:
                return await get_msg(timeout=step)
            except queue.Empty:
                if deadline is not None and time.monotonic() >= deadline:
                    raise

    return get_msg_in_slices
