"""Widget updates from a background thread reach the front end, in a real kernel (ipykernel 7.0.0 broke
this; the notebook extra pins versions that work). The dashboard depends on it."""

import queue
import time

import pytest

jupyter_client = pytest.importorskip("jupyter_client")
pytestmark = pytest.mark.notebook  # a real kernel

WORKER = """
import threading, time
import ipywidgets as widgets
from IPython.display import display
counter = widgets.IntText(value=0)
display(counter)
def work():
    for value in range(1, 21):
        time.sleep(0.02)
        counter.value = value
worker = threading.Thread(target=work, daemon=True)
worker.start()
"""


def updates_of(messages):
    values = []
    for message in messages:
        if message["msg_type"] == "comm_msg":
            data = message["content"]["data"]
            if data.get("method") in ("update", "echo_update") and "value" in data.get("state", {}):
                values.append(data["state"]["value"])
    return values


def test_thread_updates_arrive_while_the_kernel_is_idle_and_while_it_is_busy():
    manager, client = jupyter_client.manager.start_new_kernel(kernel_name="python3")
    try:
        client.execute_interactive(WORKER, timeout=60)
        messages = []
        client.execute("time.sleep(1.0)")  # busy while the thread keeps updating
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and updates_of(messages)[-1:] != [20]:
            try:
                messages.append(client.get_iopub_msg(timeout=0.5))
            except queue.Empty:
                pass
        values = updates_of(messages)
        assert values and values[-1] == 20, f"updates seen: {values}"
        assert values == sorted(values)
        errors = [
            m for m in messages if m["msg_type"] == "error" or (m["msg_type"] == "stream" and m["content"]["name"] == "stderr")
        ]
        assert not errors, errors
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


def test_pinned_versions_are_installed():
    from importlib.metadata import version

    major, minor = (int(part) for part in version("ipykernel").split(".")[:2])
    assert (major, minor) >= (7, 1) or major == 6, "ipykernel 7.0.x drops widget updates from threads"
    assert int(version("ipywidgets").split(".")[0]) == 8
