"""Checkpoints: JSON plus npz (never pickle), versioned, written atomically, resumable after a crash.

A checkpoint is a directory run_dir/checkpoints/generation-<g>/ with state.json
(numpy arrays replaced by references) and arrays.npz. It is written into a
temporary directory, every file fsynced, then renamed into place (and the parent
fsynced), so a checkpoint directory either exists whole or not at all; a run
killed at any moment resumes from the newest one. The newest `keep` are kept.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import zipfile
from typing import Any

import numpy as np

FORMAT = "deep-neuroevolution-workbench checkpoint"
VERSION = 1
_PREFIX = "generation-"


class CheckpointError(ValueError):
    """A checkpoint that is missing, corrupt, of another version or of another kind of run."""


def _encode(document: dict, arrays: dict[str, np.ndarray]) -> str:
    """`document` as JSON, each numpy array replaced by a reference {"__array__": key} to arrays[key] and numpy
    scalars by Python numbers. The arrays are found by the C encoder's `default` hook, so plain data is not walked
    in Python first (on a 3 MB history that walk took twice as long as the encoding)."""

    def by_reference(value):
        if isinstance(value, np.ndarray):
            key = f"a{len(arrays)}"
            arrays[key] = value
            return {"__array__": key}
        if isinstance(value, np.generic):
            return value.item()
        raise TypeError(f"a checkpoint holds JSON data and numpy arrays, not {type(value).__name__}")

    return json.dumps(document, default=by_reference)


def _join(value, arrays):
    if isinstance(value, dict):
        if set(value) == {"__array__"}:
            return arrays[value["__array__"]]
        return {k: _join(v, arrays) for k, v in value.items()}
    if isinstance(value, list):
        return [_join(v, arrays) for v in value]
    return value


def _fsync(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def save_checkpoint(run_dir: str, generation: int, state: dict, keep: int = 3) -> str:
    """Writes `state` (JSON-able data and numpy arrays) as the checkpoint of `generation`; returns its path."""
    root = os.path.join(run_dir, "checkpoints")
    os.makedirs(root, exist_ok=True)
    for stale in [n for n in os.listdir(root) if n.startswith(".writing-")]:  # left by a crash mid-write
        shutil.rmtree(os.path.join(root, stale), ignore_errors=True)
    arrays: dict[str, np.ndarray] = {}
    text = _encode({"format": FORMAT, "version": VERSION, "generation": int(generation), "state": state}, arrays)
    staging = tempfile.mkdtemp(prefix=".writing-", dir=root)
    try:
        with open(os.path.join(staging, "state.json"), "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        with open(os.path.join(staging, "arrays.npz"), "wb") as f:
            np.savez(f, **arrays)  # type: ignore[arg-type]  # numpy's stub reads the names as its keywords
            f.flush()
            os.fsync(f.fileno())
        _fsync(staging)
        final = os.path.join(root, f"{_PREFIX}{int(generation):06d}")
        if os.path.exists(final):
            shutil.rmtree(final)
        os.rename(staging, final)
        _fsync(root)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    for old in list_checkpoints(run_dir)[:-keep]:
        shutil.rmtree(old, ignore_errors=True)
    return final


def list_checkpoints(run_dir: str) -> list[str]:
    """Checkpoint directories of a run, oldest first."""
    root = os.path.join(run_dir, "checkpoints")
    if not os.path.isdir(root):
        return []
    names = [n for n in os.listdir(root) if n.startswith(_PREFIX) and n[len(_PREFIX) :].isdigit()]
    return [os.path.join(root, n) for n in sorted(names)]


def load_checkpoint(path: str) -> tuple[int, Any]:
    """(generation, state) of a checkpoint directory, or of a run directory's newest checkpoint."""
    if os.path.isdir(os.path.join(path, "checkpoints")):
        found = list_checkpoints(path)
        if not found:
            raise CheckpointError(f"{path} has no checkpoint")
        path = found[-1]
    try:
        with open(os.path.join(path, "state.json")) as f:
            document = json.load(f)
    except FileNotFoundError as error:
        raise CheckpointError(f"{path} is not a checkpoint (no state.json)") from error
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise CheckpointError(f"{path}/state.json is corrupt: {error}") from error
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise CheckpointError(f"{path} is not a workbench checkpoint")
    if document.get("version") != VERSION:
        raise CheckpointError(f"{path} is checkpoint version {document.get('version')!r}; this workbench reads {VERSION}")
    try:
        with np.load(os.path.join(path, "arrays.npz"), allow_pickle=False) as npz:
            arrays = {key: npz[key] for key in npz.files}
        return int(document["generation"]), _join(document["state"], arrays)
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as error:
        raise CheckpointError(f"{path} is corrupt: {error}") from error
