"""Every tutorial notebook runs top to bottom with its small CI budget, and is committed without outputs. The
ones the browser tests run top to bottom in JupyterLab (support.BROWSER_NOTEBOOKS) run here only when the
browser tier cannot (no Chromium or Playwright, outside CI); the one that starts a Ray cluster runs in the long
tier."""

import glob
import os

import nbformat
import pytest

from support import BROWSER_NOTEBOOKS, REPO, browser_available, in_ci
from support.notebook_client import SlicedNotebookClient

NOTEBOOKS = sorted(glob.glob(os.path.join(REPO, "notebooks", "*.ipynb")))


def test_there_are_notebooks():
    assert NOTEBOOKS


@pytest.mark.parametrize("path", NOTEBOOKS, ids=os.path.basename)
def test_notebook_is_committed_without_outputs(path):
    notebook = nbformat.read(path, as_version=4)
    for cell in notebook.cells:
        if cell.cell_type == "code":
            assert not cell.outputs and cell.execution_count is None, "strip outputs before committing"


def uses_ray(path):
    with open(path) as f:
        return "RayEvaluator" in f.read()


def marks(path):
    """A notebook that starts a Ray cluster is marked ray, and runs in the long tier: tests/evaluation/test_ray.py
    checks in make test what it shows (the same results on actors, bytes per generation)."""
    return [pytest.mark.ray, pytest.mark.long] if uses_ray(path) else []


@pytest.mark.notebook
@pytest.mark.parametrize("path", [pytest.param(path, marks=marks(path)) for path in NOTEBOOKS], ids=os.path.basename)
def test_notebook_runs(path, monkeypatch, tmp_path):
    if os.path.basename(path) in BROWSER_NOTEBOOKS and (browser_available() or in_ci()):
        pytest.skip("run top to bottom, without errors, by tests/notebooks/test_browser.py")
    monkeypatch.setenv("CI", "1")  # the notebooks' small-budget switch
    monkeypatch.setenv("MPLBACKEND", "Agg")
    notebook = nbformat.read(path, as_version=4)
    SlicedNotebookClient(notebook, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    errors = [out for cell in notebook.cells if cell.cell_type == "code" for out in cell.outputs if out.output_type == "error"]
    assert not errors
