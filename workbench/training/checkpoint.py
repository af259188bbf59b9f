"""Checkpoints: JSON plus npz (never pickle), versioned, written atomically, resumable after a crash.

A checkpoint is a directory run_dir/checkpoints/generation-<g>/ with state.json
(numpy arrays replaced by references) and arrays.npz. It is written into a
temporary directory, every file fsynced, then renamed into place (and the parent
fsynced), so a checkpoint directory either exists whole or not at all; a run
killed at any moment resumes from the newest one. The newest `keep` are kept.

Journals (format 2): lists that only grow, such as a run's history of generation
records, are named by the caller (`journals`) and kept out of state.json, in
append-only files beside the checkpoints (checkpoints/journal-<name>-<epoch>.jsonl,
one JSON record per line). A checkpoint refers to the first `length` records of a
journal by their byte count and CRC-32, so each save appends only the records added
since the newest checkpoint (the cost of a save no longer grows with the run), a
crash mid-append leaves bytes that no checkpoint counts (the next save cuts them),
and a damaged journal is refused by name. A list that is not the continuation of
the newest checkpoint's goes to a journal of a new epoch, so older checkpoints keep
theirs; journals no kept checkpoint refers to are deleted. Format 1 checkpoints
(everything in state.json) are read as before.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import zipfile
import zlib
from collections.abc import Sequence
from typing import Any

import numpy as np

FORMAT = "deep-neuroevolution-workbench checkpoint"
VERSION = 2
READABLE_VERSIONS = (1, 2)
_PREFIX = "generation-"
_JOURNAL = re.compile(r"journal-(?P<name>[A-Za-z0-9_.]+)-(?P<epoch>\d{3,})\.jsonl")


class CheckpointError(ValueError):
    """A checkpoint that is missing, corrupt, of another version or of another kind of run."""


def _encode(document: dict, arrays: dict[str, np.ndarray]) -> str:
    """`document` as JSON, each numpy array replaced by a reference {"__array__": key} to arrays[key] and numpy
    scalars by Python numbers. The arrays are found by the C encoder's `default` hook, so plain data is not walked
    in Python first (on a 3 MB history that walk took twice as long as the encoding)."""

    def by_reference(value):
        if isinstance(value, _JournalRef):
            return value.to_json()
        if isinstance(value, np.ndarray):
            key = f"a{len(arrays)}"
            arrays[key] = value
            return {"__array__": key}
        if isinstance(value, np.generic):
            return value.item()
        raise TypeError(f"a checkpoint holds JSON data and numpy arrays, not {type(value).__name__}")

    return json.dumps(document, default=by_reference)


def _join(value, arrays, root):
    if isinstance(value, dict):
        if set(value) == {"__array__"}:
            return arrays[value["__array__"]]
        if "__journal__" in value:
            return _JournalRef.from_json(value).read(root)
        return {k: _join(v, arrays, root) for k, v in value.items()}
    if isinstance(value, list):
        return [_join(v, arrays, root) for v in value]
    return value


class _JournalRef:
    """The first `length` records of a journal file: `size` bytes with CRC-32 `crc`, the last record `last`."""

    def __init__(self, file: str, length: int, size: int, crc: int, last: str) -> None:
        self.file, self.length, self.size, self.crc, self.last = file, length, size, crc, last

    def to_json(self) -> dict:
        return {"__journal__": self.file, "length": self.length, "bytes": self.size, "crc32": self.crc, "last": self.last}

    @classmethod
    def from_json(cls, value: dict) -> _JournalRef:
        try:
            ref = cls(str(value["__journal__"]), int(value["length"]), int(value["bytes"]), int(value["crc32"]), value["last"])
        except (KeyError, TypeError, ValueError) as error:
            raise CheckpointError(f"a journal reference is corrupt: {value!r}") from error
        if not _JOURNAL.fullmatch(ref.file) or min(ref.length, ref.size) < 0:
            raise CheckpointError(f"a journal reference is corrupt: {value!r}")
        return ref

    def read(self, root: str) -> list:
        """The records (CheckpointError naming the file when it is missing, short or changed)."""
        path = os.path.join(root, self.file)
        try:
            with open(path, "rb") as f:
                data = f.read(self.size)
        except OSError as error:
            raise CheckpointError(f"{path}: the checkpoint's journal cannot be read: {error}") from error
        if len(data) != self.size or zlib.crc32(data) != self.crc:
            raise CheckpointError(f"{path} is corrupt: its first {self.size} bytes are not the ones the checkpoint recorded")
        lines = data.split(b"\n")[:-1] if data else []
        if len(lines) != self.length:
            raise CheckpointError(f"{path} is corrupt: {len(lines)} records where the checkpoint recorded {self.length}")
        return [json.loads(line) for line in lines]


def _record_line(record, name: str) -> bytes:
    try:
        text = json.dumps(record, allow_nan=True)
    except TypeError as error:
        raise TypeError(f"journal {name!r} holds JSON records only: {error}") from error
    return text.encode() + b"\n"


def _newest_refs(root: str) -> dict[str, _JournalRef]:
    """The journal references of the newest checkpoint in root, by journal name; none when it has none (format 1)
    or cannot be read (then the journals start a new epoch: never cut a journal by an older checkpoint's count)."""
    found = _checkpoint_dirs(root)
    if not found:
        return {}
    try:
        with open(os.path.join(found[-1], "state.json")) as f:
            document = json.load(f)
    except (OSError, ValueError):
        return {}
    return {_JOURNAL.fullmatch(r.file).group("name"): r for r in _refs_in(document)}  # type: ignore[union-attr]


def _refs_in(value) -> list[_JournalRef]:
    found = []
    if isinstance(value, dict):
        if "__journal__" in value:
            try:
                return [_JournalRef.from_json(value)]
            except CheckpointError:
                return []
        for v in value.values():
            found += _refs_in(v)
    elif isinstance(value, list):
        for v in value:
            found += _refs_in(v)
    return found


def _last_mark(records: list, name: str) -> str:
    """The CRC-32 of the last record's line, as hex: how a save recognises a list that continues a journal."""
    return f"{zlib.crc32(_record_line(records[-1], name)) if records else 0:08x}"


def _write_journal(root: str, name: str, records: list, previous: _JournalRef | None) -> _JournalRef:
    """Appends records[previous.length:] to previous's journal when records continue it (the same record where it
    ended), else writes them all to a journal of a new epoch; fsyncs and returns the reference to all of `records`."""
    if previous is not None and previous.length <= len(records):
        path = os.path.join(root, previous.file)
        continues = previous.last == _last_mark(records[: previous.length], name)
        if continues and os.path.exists(path) and os.path.getsize(path) >= previous.size:
            added = b"".join(_record_line(r, name) for r in records[previous.length :])
            with open(path, "r+b") as f:
                f.truncate(previous.size)  # bytes a crashed save appended that no checkpoint counts
                f.seek(previous.size)
                f.write(added)
                f.flush()
                os.fsync(f.fileno())
            size, crc = previous.size + len(added), zlib.crc32(added, previous.crc)
            return _JournalRef(previous.file, len(records), size, crc, _last_mark(records, name))
    epochs = [int(m.group("epoch")) for m in map(_JOURNAL.fullmatch, os.listdir(root)) if m and m.group("name") == name]
    file = f"journal-{name}-{max(epochs, default=-1) + 1:03d}.jsonl"
    data = b"".join(_record_line(r, name) for r in records)
    with open(os.path.join(root, file), "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    return _JournalRef(file, len(records), len(data), zlib.crc32(data), _last_mark(records, name))


def _take_journals(state: dict, journals: Sequence[Sequence[str]], write) -> dict:
    """A shallow copy of `state` with the list at each path of `journals` replaced by write(name, list)."""
    state = dict(state)
    for path in journals:
        if not path or not all(isinstance(key, str) for key in path):
            raise ValueError(f"journals: each is a path of keys into the state, got {path!r}")
        parent = state
        for key in path[:-1]:
            if not isinstance(parent.get(key), dict):
                raise ValueError(f"journals: the state has no dict at {'.'.join(path[:-1])!r}")
            parent[key] = dict(parent[key])
            parent = parent[key]
        records = parent.get(path[-1])
        if not isinstance(records, list):
            raise ValueError(f"journals: the state has no list at {'.'.join(path)!r}")
        parent[path[-1]] = write(".".join(path), records)
    return state


def _fsync(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def save_checkpoint(run_dir: str, generation: int, state: dict, keep: int = 3, journals: Sequence[Sequence[str]] = ()) -> str:
    """Writes `state` (JSON-able data and numpy arrays) as the checkpoint of `generation`; returns its path.
    `journals`: paths of keys to lists of JSON records in `state` that only grow from save to save (the module
    docstring): each is kept in an append-only journal file, not in state.json."""
    root = os.path.join(run_dir, "checkpoints")
    os.makedirs(root, exist_ok=True)
    for stale in [n for n in os.listdir(root) if n.startswith(".writing-")]:  # left by a crash mid-write
        shutil.rmtree(os.path.join(root, stale), ignore_errors=True)
    if journals:
        previous = _newest_refs(root)
        state = _take_journals(state, journals, lambda name, records: _write_journal(root, name, records, previous.get(name)))
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
    _delete_unreferenced_journals(root)
    return final


def _delete_unreferenced_journals(root: str) -> None:
    referenced = set()
    for path in _checkpoint_dirs(root):
        try:
            with open(os.path.join(path, "state.json")) as f:
                referenced |= {r.file for r in _refs_in(json.load(f))}
        except (OSError, ValueError):
            return  # an unreadable checkpoint: keep every journal rather than guess
    for name in os.listdir(root):
        if _JOURNAL.fullmatch(name) and name not in referenced:
            os.remove(os.path.join(root, name))


def _checkpoint_dirs(root: str) -> list[str]:
    if not os.path.isdir(root):
        return []
    names = [n for n in os.listdir(root) if n.startswith(_PREFIX) and n[len(_PREFIX) :].isdigit()]
    return [os.path.join(root, n) for n in sorted(names)]


def list_checkpoints(run_dir: str) -> list[str]:
    """Checkpoint directories of a run, oldest first."""
    return _checkpoint_dirs(os.path.join(run_dir, "checkpoints"))


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
    if document.get("version") not in READABLE_VERSIONS:
        raise CheckpointError(
            f"{path} is checkpoint version {document.get('version')!r}; this workbench reads versions "
            f"{', '.join(map(str, READABLE_VERSIONS))}"
        )
    try:
        with np.load(os.path.join(path, "arrays.npz"), allow_pickle=False) as npz:
            arrays = {key: npz[key] for key in npz.files}
        return int(document["generation"]), _join(document["state"], arrays, os.path.dirname(os.path.abspath(path)))
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as error:
        raise CheckpointError(f"{path} is corrupt: {error}") from error
