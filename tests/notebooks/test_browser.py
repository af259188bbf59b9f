"""The tutorials in a real browser: JupyterLab on localhost (token auth), Debian's Chromium driven by
Playwright. The quickstart: runs all cells, checks that the dashboard rendered, that its fitness plot and
frame viewer changed while training ran, and that dragging a slider changed the trainer's hyperparameter.
The continuous-control tutorial: the dashboard shows rendered MuJoCo frames of a running episode with the
step's forward velocity. Both notebooks run top to bottom without an error output (test_notebooks leaves
them to these tests). Screenshots go to runs/test-screenshots/ (or $WORKBENCH_SCREENSHOT_DIR).

Chromium comes from Debian (`apt-get install chromium`; `make test` and .ci/run install it).
"""

import ast
import contextlib
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from support import BROWSER_NOTEBOOKS, REPO, SCREENSHOTS, launch_chromium, requires_browser

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module", autouse=True)
def browser_installed():
    requires_browser()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def jupyterlab(tmp_path):
    """JupyterLab serving copies of the tutorials, bound to 127.0.0.1 with a token."""
    root = tmp_path / "notebooks"
    root.mkdir()
    for name in BROWSER_NOTEBOOKS:
        shutil.copy(os.path.join(REPO, "notebooks", name), root)
    port, token = free_port(), secrets.token_hex(16)
    settings = tmp_path / "lab-settings"
    for name, values in (
        ("notebook-extension/tracker", {"windowingMode": "none"}),  # keep every cell in the DOM
        ("apputils-extension/notification", {"fetchNews": "false"}),
    ):
        path = settings / "@jupyterlab" / f"{name}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))
    log = open(tmp_path / "jupyterlab.log", "w")
    env = dict(os.environ, CI="1", MPLBACKEND="Agg")  # CI: the notebook's small budget
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jupyterlab",
            "--no-browser",
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.port={port}",
            "--ServerApp.port_retries=0",
            f"--IdentityProvider.token={token}",
            f"--ServerApp.root_dir={root}",
            f"--LabApp.user_settings_dir={settings}",
            f"--LabApp.workspaces_dir={tmp_path / 'workspaces'}",  # no tabs restored from another session
            "--LabApp.expose_app_in_browser=True",
        ]  # window.jupyterapp: run-all and new cells without menus
        + (["--allow-root"] if os.geteuid() == 0 else []),
        cwd=root,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while True:
        try:
            with urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=2) as response:
                json.load(response)
            break
        except OSError:
            if server.poll() is not None or time.monotonic() > deadline:
                server.kill()
                pytest.fail("JupyterLab did not start:\n" + (tmp_path / "jupyterlab.log").read_text()[-3000:])
            time.sleep(0.5)
    with pytest.raises(urllib.error.HTTPError):  # token auth is on
        urllib.request.urlopen(f"{url}/api/sessions", timeout=5)
    yield url, token
    server.terminate()  # shuts its kernels down too
    try:
        server.wait(timeout=30)
    except subprocess.TimeoutExpired:
        server.kill()
    log.close()


def wait_until(condition, timeout, what, poll=0.5):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(poll)
    pytest.fail(f"timed out after {timeout} s waiting for {what}")


# Records every new picture of the dashboard's plot and frame viewer, with the dashboard's status line at the
# time (the status says "running: ..." while the trainer runs).
RECORD_CHANGES_JS = """() => {
  window.__imageChanges = [];
  const record = (image) => {
    const kind = ['wb-fitness-plot', 'wb-frame-viewer'].find(c => image.classList.contains(c));
    const status = document.querySelector('.wb-status');
    if (kind && image.src) window.__imageChanges.push({kind, src: image.src, status: status ? status.innerText : ''});
  };
  new MutationObserver(mutations => {
    for (const m of mutations) {
      if (m.type === 'attributes' && m.target.tagName === 'IMG') record(m.target);
      for (const node of m.addedNodes || []) {
        if (node.querySelectorAll) node.querySelectorAll('img').forEach(record);
        if (node.tagName === 'IMG') record(node);
      }
    }
  }).observe(document.body, {subtree: true, childList: true, attributes: true, attributeFilter: ['src']});
}"""


# The share of a frame's pixels in the agents' colours (MuJoCo's orange-brown bodies: red well above blue and above
# green); the checkered floor and the sky have none. A frame that shows the agent has a few tenths of a per cent.
AGENT_PIXELS_JS = """(selector) => {
  const image = document.querySelector(selector);
  const canvas = document.createElement('canvas');
  canvas.width = image.naturalWidth;
  canvas.height = image.naturalHeight;
  const context = canvas.getContext('2d');
  context.drawImage(image, 0, 0);
  const data = context.getImageData(0, 0, canvas.width, canvas.height).data;
  let agent = 0;
  for (let i = 0; i < data.length; i += 4) {
    if (data[i] - data[i + 2] > 60 && data[i] > data[i + 1]) agent++;
  }
  return agent / (canvas.width * canvas.height);
}"""


RUN_CELL_JS = """async (source) => {
  const app = window.jupyterapp;
  const panel = app.shell.currentWidget;
  const notebook = panel.content;
  notebook.activeCellIndex = notebook.widgets.length - 1;
  await app.commands.execute('notebook:insert-cell-below');
  notebook.activeCell.model.sharedModel.setSource(source);
  await app.commands.execute('notebook:run-cell');
  return notebook.widgets.length - 1;
}"""


KERNEL_IDLE_JS = """() => { const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
    return w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel
           && w.sessionContext.session.kernel.status === 'idle'; }"""


# The open notebook's code cells: error outputs, how many have not run yet, and whether the kernel is idle.
CELLS_JS = """() => {
  const panel = window.jupyterapp.shell.currentWidget;
  const cells = [];
  for (let i = 0; i < panel.content.model.cells.length; i++) {
    const cell = panel.content.model.cells.get(i);
    if (cell.type === 'code') cells.push(cell);
  }
  const errors = cells.flatMap(c => c.outputs.toJSON().filter(o => o.output_type === 'error')
                                                    .map(o => `${o.ename}: ${o.evalue}`));
  return {errors, pending: cells.filter(c => c.executionCount === null).length,
          idle: panel.sessionContext.session.kernel.status === 'idle'};
}"""


def assert_every_cell_ran(page, timeout):
    """Waits for Run All to finish (the kernel idle with every code cell run, or an error) and checks that no
    cell raised."""
    cells = wait_until(
        lambda: (state := page.evaluate(CELLS_JS))["idle"] and (state["errors"] or not state["pending"]) and state,
        timeout,
        "every cell to run",
    )
    assert not cells["errors"], cells["errors"]
    assert cells["pending"] == 0


@contextlib.contextmanager
def notebook_page(jupyterlab, notebook, failure_screenshot):
    """A Chromium page with `notebook` open, its kernel idle and image changes recorded; a full-page screenshot
    named `failure_screenshot` when the block fails."""
    from playwright.sync_api import sync_playwright

    url, token = jupyterlab
    with sync_playwright() as playwright:
        browser = launch_chromium(playwright)
        page = browser.new_page(viewport={"width": 1500, "height": 1100})
        try:
            page.goto(f"{url}/lab/tree/{notebook}?token={token}")
            page.wait_for_function(KERNEL_IDLE_JS, timeout=120_000)
            page.evaluate(RECORD_CHANGES_JS)
            yield page
        except BaseException:
            page.screenshot(path=os.path.join(SCREENSHOTS, failure_screenshot), full_page=True)
            raise
        finally:
            browser.close()


def test_quickstart_runs_in_chromium_with_a_live_dashboard(jupyterlab):
    with notebook_page(jupyterlab, "00_quickstart.ipynb", "quickstart-failure.png") as page:
        page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")

        # The dashboard renders, then its plot and frame viewer change while the background run trains.
        page.wait_for_selector(".wb-dashboard img.wb-fitness-plot", timeout=180_000)
        page.wait_for_selector(".wb-status >> text=/^finished/", timeout=300_000)
        page.locator(".wb-dashboard").first.screenshot(path=os.path.join(SCREENSHOTS, "quickstart-dashboard.png"))
        changes = page.evaluate("window.__imageChanges")
        # Run All ends with the agent viewer of the newest elite.
        page.wait_for_selector(".wb-agent-viewer img.wb-agent-frame", timeout=300_000)
        assert_every_cell_ran(page, 120)

        # Drag the mutation-power slider: the kernel calls trainer.set and confirms beside the slider.
        handle = page.locator(".wb-hp-sigma .noUi-handle").first
        handle.scroll_into_view_if_needed()
        box = handle.bounding_box()
        page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        page.mouse.down()
        page.mouse.move(box["x"] + box["width"] / 2 + 25, box["y"] + box["height"] / 2, steps=8)
        page.mouse.up()
        status = page.locator(".wb-hp-status-sigma").first
        wait_until(lambda: "✓" in status.inner_text(), 30, "the slider change to be accepted")

        # Ask the kernel what the trainer holds now.
        index = page.evaluate(RUN_CELL_JS, 'print("PENDING", trainer.pending())')
        output = page.locator(".jp-Notebook .jp-Cell").nth(index).locator(".jp-OutputArea-output")
        text = wait_until(lambda: output.count() and output.first.inner_text(), 60, "the new cell's output")
        page.screenshot(path=os.path.join(SCREENSHOTS, "quickstart.png"), full_page=True)
    while_running = [c for c in changes if c["status"].startswith("running")]
    frames = {c["src"] for c in while_running if c["kind"] == "wb-frame-viewer"}
    plots = {c["src"] for c in while_running if c["kind"] == "wb-fitness-plot"}
    assert len(frames) >= 3, f"the frame viewer changed {len(frames)} times while training ran"
    assert len(plots) >= 2, f"the fitness plot changed {len(plots)} times while training ran"
    assert text.startswith("PENDING "), text
    pending = ast.literal_eval(text[len("PENDING ") :].strip())
    assert set(pending) == {"sigma"}, pending
    assert pending["sigma"] > 0.005, f"dragging right should raise sigma from 0.005, got {pending['sigma']}"


def test_the_continuous_control_dashboard_shows_rendered_mujoco_frames(jupyterlab):
    with notebook_page(jupyterlab, "07_continuous_control.ipynb", "mujoco-failure.png") as page:
        page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")
        page.wait_for_selector(".wb-dashboard img.wb-frame-viewer", timeout=180_000)
        caption = wait_until(
            lambda: "x velocity" in page.locator(".wb-dashboard").first.inner_text(),
            180,
            "a MuJoCo frame with its forward velocity under the gameplay view",
        )
        width = page.evaluate("() => document.querySelector('.wb-dashboard img.wb-frame-viewer').naturalWidth")
        agent_share = page.evaluate(AGENT_PIXELS_JS, ".wb-dashboard img.wb-frame-viewer")
        page.locator(".wb-dashboard").first.screenshot(path=os.path.join(SCREENSHOTS, "mujoco-dashboard.png"))
        page.wait_for_selector(".wb-status >> text=/^(finished|stopped)/", timeout=300_000)
        final_share = page.evaluate(AGENT_PIXELS_JS, ".wb-dashboard img.wb-frame-viewer")
        changes = page.evaluate("window.__imageChanges")
        assert_every_cell_ran(page, 300)
    frames = {c["src"] for c in changes if c["kind"] == "wb-frame-viewer" and c["status"].startswith("running")}
    assert caption and width == 320, f"a MuJoCo render is 320 pixels wide, the frame viewer showed {width}"
    assert len(frames) >= 3, f"the frame viewer changed {len(frames)} times while ARS trained"
    # the camera tracks the cheetah: it is in the picture, not only the floor it ran away from
    assert min(agent_share, final_share) > 0.001, (
        f"agent pixels: {agent_share:.4f} at the screenshot, {final_share:.4f} at the end"
    )


ARCHIVE_NOTEBOOK_CELLS = [
    "from workbench.lab.archive_view import ArchiveView\n"
    "from workbench.training import RunConfig, Trainer\n"
    'config = RunConfig(env="Walker2d-v5", algorithm="map-elites", max_episode_frames=60, slots=8,\n'
    "                   hyperparameters=dict(population_size=12, initial_population=24, sigma=0.1, cells=6, archive='grid'))\n"
    "trainer = Trainer.from_config(config)\n"
    "trainer.run(generations=3)\n"
    "view = ArchiveView(trainer)\n"
    "view",
]

# The centre (client coordinates) of a painted, non-empty pixel of the archive canvas, or null.
OCCUPIED_PIXEL_JS = """() => {
  const canvas = document.querySelector('.wb-archive-canvas');
  const data = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
  const box = canvas.getBoundingClientRect();
  for (let p = 0; p < canvas.width * canvas.height; p++) {
    if (!(data[4 * p] === 225 && data[4 * p + 1] === 225 && data[4 * p + 2] === 225)) {
      const x = p % canvas.width, y = Math.floor(p / canvas.width);
      return {x: box.left + (x + 0.5) * box.width / canvas.width, y: box.top + (y + 0.5) * box.height / canvas.height};
    }
  }
  return null;
}"""


LARGE_ARCHIVE_NOTEBOOK_CELLS = [
    "import threading, time\n"
    "import numpy as np\n"
    "from workbench.evolution import Genome\n"
    "from workbench.lab.archive_view import ArchiveView\n"
    "from workbench.training import RunConfig, Trainer\n"
    'config = RunConfig(env="Walker2d-v5", algorithm="map-elites", max_episode_frames=60, slots=8,\n'
    "                   hyperparameters=dict(population_size=12, initial_population=12, sigma=0.1, cells=100, archive='grid'))\n"
    "trainer = Trainer.from_config(config)\n"
    "trainer.run(generations=1)\n"
    "archive, space, rng = trainer.strategy.archive, trainer.strategy.space, np.random.default_rng(0)\n"
    "def fill(count, generation):  # seed-chain elites spread over the 100 x 100 cells\n"
    "    genomes = [Genome(space.sample_offset(rng)) for _ in range(count)]\n"
    "    archive.add(genomes, rng.normal(100, 30, count), rng.random((count, 2)), generation)\n"
    "fill(20_000, 1)  # about 86 % of the 10,000 cells\n"
    "view = ArchiveView(trainer)\n"
    "def grow():  # what a training run's updates do: more elites, the view updated from another thread\n"
    "    for generation in (2, 3):\n"
    "        time.sleep(10)\n"
    "        fill(20_000, generation)\n"
    "        view.update()\n"
    "threading.Thread(target=grow, daemon=True).start()\n"
    "view",
]

# Moves the pointer over 500 places of the archive canvas; the mean time of the view's mousemove handler, in ms.
HOVER_TIME_JS = """() => {
  const canvas = document.querySelector('.wb-archive-canvas');
  const box = canvas.getBoundingClientRect();
  const start = performance.now();
  for (let k = 0; k < 500; k++) {
    const x = box.left + ((k * 37) % 997) / 997 * box.width, y = box.top + ((k * 61) % 991) / 991 * box.height;
    canvas.dispatchEvent(new MouseEvent('mousemove', {clientX: x, clientY: y, bubbles: true}));
  }
  return (performance.now() - start) / 500;
}"""


def put_notebook(jupyterlab, name, cells):
    url, token = jupyterlab
    notebook = {
        "cells": [
            {"cell_type": "code", "metadata": {}, "source": source, "outputs": [], "execution_count": None} for source in cells
        ],
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    request = urllib.request.Request(
        f"{url}/api/contents/{name}?token={token}",
        data=json.dumps({"type": "notebook", "format": "json", "content": notebook}).encode(),
        method="PUT",
        headers={"Content-Type": "application/json"},
    )
    urllib.request.urlopen(request, timeout=30).close()


def test_the_archive_view_stays_responsive_with_10000_cells_while_it_updates(jupyterlab):
    put_notebook(jupyterlab, "archive_view_large.ipynb", LARGE_ARCHIVE_NOTEBOOK_CELLS)
    with notebook_page(jupyterlab, "archive_view_large.ipynb", "archive-view-large-failure.png") as page:
        page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")
        page.wait_for_selector(".wb-archive-canvas", timeout=300_000)
        first = wait_until(lambda: elites_shown(page), 60, "the archive's first picture")
        hover = page.evaluate(HOVER_TIME_JS)
        tip = page.locator(".wb-archive-tip").first.inner_text()
        grown = wait_until(lambda: (n := elites_shown(page)) > first and n, 90, "the archive's update, drawn")
        wait_until(lambda: elites_shown(page) > grown, 60, "the second update, drawn")
        draws = page.evaluate("() => performance.getEntriesByName('wb-archive-draw').map((entry) => entry.duration)")
        point = page.evaluate(OCCUPIED_PIXEL_JS)
        page.mouse.click(point["x"], point["y"])
        page.wait_for_selector(".wb-agent-frame", timeout=180_000)  # any cell of the 10,000 replays
        assert_every_cell_ran(page, 300)
    assert 8_000 < first < grown < 10_000 and tip.startswith("cell "), (first, grown, tip)
    assert 3 <= len(draws) <= 4 and max(draws) < 100, draws  # one draw per update (not one per trait): 10-15 ms here
    assert hover < 16, hover  # ms per pointer move (about 3 here): the tooltip follows the pointer within a frame


def elites_shown(page) -> int:
    """The number of elites the view's info line reports (0 before it is drawn)."""
    text = page.locator(".wb-archive-info").first.inner_text()
    return int(text.split(" of ")[0]) if " of " in text else 0


def test_the_archive_view_shows_cells_on_hover_and_replays_a_clicked_cell(jupyterlab):
    put_notebook(jupyterlab, "archive_view.ipynb", ARCHIVE_NOTEBOOK_CELLS)
    with notebook_page(jupyterlab, "archive_view.ipynb", "archive-view-failure.png") as page:
        page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")
        page.wait_for_selector(".wb-archive-canvas", timeout=300_000)
        point = wait_until(lambda: page.evaluate(OCCUPIED_PIXEL_JS), 60, "a painted cell on the archive canvas")
        page.mouse.move(point["x"], point["y"])
        tip = wait_until(lambda: page.locator(".wb-archive-tip").first.inner_text(), 30, "the tooltip of a cell")
        info = page.locator(".wb-archive-info").first.inner_text()
        page.locator(".wb-archive-view").first.screenshot(path=os.path.join(SCREENSHOTS, "archive-view.png"))
        page.mouse.click(point["x"], point["y"])
        page.wait_for_selector(".wb-agent-frame", timeout=180_000)  # the clicked cell's elite in an AgentViewer
        message = wait_until(lambda: "replaying" in page.locator(".wb-archive-info").first.inner_text(), 60, "the click's answer")
        assert_every_cell_ran(page, 300)
    assert tip.startswith("cell ") and "fitness" in tip and "descriptor (" in tip and "generation" in tip, tip
    assert "cells hold an elite" in info and message, info
