"""Parks the long runs of another checkout (a worktree the suites ran in) in this one, so that a commit carries them
to the next machine, where a suite started from a clone resumes every run from its newest checkpoint.

Pause or stop the suites first (kill -STOP), so that no checkpoint is copied while it is replaced.

    python experiments/park.py ../study      # then: git add experiments/results/{atari_runs,cma_mujoco,qd_runs}

From SOURCE/experiments/results/ it copies:
- atari_runs/ARM/GAME/: every run folder (config, history, scores and the newest checkpoint: the suites keep one),
  finished or not, as the finished ones are committed; a folder here is replaced by the source's when they differ;
- cma_mujoco/RUN/: an unfinished run's folder; a finished run (its `done` marker written by
  experiments/cma_mujoco.sh) only as that marker, its JSON line in learning.jsonl being the result;
- qd_runs/RUN/: an unfinished run of our methods in experiments/qd_compare.py (a finished one has its line in
  qd_compare.jsonl: a parked copy of it here is removed); pyribs's runs are not parked (their state is a pickle of
  tens of MB), so a stopped one runs again from its start.
Of a run's checkpoints only the newest (and the journals) is copied.
Never copied: TensorBoard's events, trainer locks, checkpoints being written, lock and temporary files. The JSON
lines (*.jsonl) are not touched: merge them by content. Prints what it changed.
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import shutil
import sys

import _checkout

_SKIPPED = shutil.ignore_patterns("tensorboard", "trainer.lock", ".writing-*", "*.lock", "*.tmp")


def _skipped(folder: str, names: list[str]) -> set[str]:
    """What a parked copy leaves out of `folder`: TensorBoard, locks, temporary files, and in a checkpoints folder
    every checkpoint but the newest (a resume reads the newest; its journals are kept)."""
    skipped = set(_SKIPPED(folder, names))
    if os.path.basename(folder) == "checkpoints":
        checkpoints = sorted(n for n in names if n.startswith("generation-"))
        skipped |= set(checkpoints[:-1])
    return skipped


def _files(folder: str) -> dict[str, str]:
    """The files a parked copy of `folder` holds, by path relative to it."""
    found = {}
    for root, folders, files in os.walk(folder):
        left_out = _skipped(root, folders + files)
        folders[:] = [f for f in folders if f not in left_out]
        for name in files:
            if name not in left_out:
                path = os.path.join(root, name)
                found[os.path.relpath(path, folder)] = path
    return found


def _same_tree(source: str, target: str) -> bool:
    """Whether `target` holds exactly what a parked copy of `source` would (names and bytes)."""
    wanted, held = _files(source), _files(target)
    return wanted.keys() == held.keys() and all(filecmp.cmp(wanted[k], held[k], shallow=False) for k in wanted)


def _newest_checkpoint(run: str) -> str:
    """The name of a run folder's newest checkpoint ('' without one); names sort by generation."""
    for root, folders, _ in os.walk(run):
        if os.path.basename(root) == "checkpoints":
            found = sorted(f for f in folders if f.startswith("generation-"))
            return found[-1] if found else ""
    return ""


def _replace(source: str, target: str) -> bool:
    """Copies folder `source` to `target` (replacing it) unless they already match or `target` holds a newer
    checkpoint (parked from elsewhere: never go back) or `source` has no checkpoint yet (nothing to resume);
    whether it copied."""
    if not _newest_checkpoint(source):
        return False
    if os.path.isdir(target) and (_same_tree(source, target) or _newest_checkpoint(target) > _newest_checkpoint(source)):
        return False
    staging = target + ".parking"
    shutil.rmtree(staging, ignore_errors=True)
    shutil.copytree(source, staging, ignore=_skipped)
    shutil.rmtree(target, ignore_errors=True)
    os.rename(staging, target)
    return True


def _recorded_qd_runs(source_results: str) -> set[str]:
    """The run folders of the QD comparison whose line is in the source's qd_compare.jsonl (finished)."""
    path = os.path.join(source_results, "qd_compare.jsonl")
    if not os.path.exists(path):
        return set()
    with open(path) as f:
        lines = [json.loads(line) for line in f if line.strip()]
    return {f"{line['task']}-{line['method']}-seed{line['seed']}" for line in lines}


def park(source_results: str, results: str) -> list[str]:
    """Copies the runs of `source_results` into `results` as the module says; returns what changed."""
    changed = []
    atari = os.path.join(source_results, "atari_runs")
    for arm in sorted(os.listdir(atari)) if os.path.isdir(atari) else []:
        for game in sorted(os.listdir(os.path.join(atari, arm))):
            run = os.path.join(atari, arm, game)
            if os.path.isdir(run) and _replace(run, os.path.join(results, "atari_runs", arm, game)):
                changed.append(f"atari_runs/{arm}/{game}")
    mujoco = os.path.join(source_results, "cma_mujoco")
    for name in sorted(os.listdir(mujoco)) if os.path.isdir(mujoco) else []:
        run, target = os.path.join(mujoco, name), os.path.join(results, "cma_mujoco", name)
        if not os.path.isdir(run):
            continue
        if os.path.exists(os.path.join(run, "done")):
            if os.path.isdir(target) and sorted(os.listdir(target)) == ["done"]:
                continue
            shutil.rmtree(target, ignore_errors=True)
            os.makedirs(target)
            shutil.copy2(os.path.join(run, "done"), os.path.join(target, "done"))
            changed.append(f"cma_mujoco/{name}: finished (its done marker)")
        elif _replace(run, target):
            changed.append(f"cma_mujoco/{name}: parked")
    qd = os.path.join(source_results, "qd_runs")
    finished = _recorded_qd_runs(source_results)
    for name in sorted(os.listdir(qd)) if os.path.isdir(qd) else []:
        run, target = os.path.join(qd, name), os.path.join(results, "qd_runs", name)
        if not os.path.isdir(run):
            continue
        if name in finished:
            if os.path.isdir(target):
                shutil.rmtree(target)
                changed.append(f"qd_runs/{name}: finished (its parked copy removed)")
        elif "-ribs-" in name:
            changed.append(f"qd_runs/{name}: not parked (pyribs's state is a pickle of tens of MB; it runs again)")
        elif _replace(run, target):
            changed.append(f"qd_runs/{name}: parked")
    return changed


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("source", help="the checkout the suites ran in")
    args = parser.parse_args(argv)
    source_results = os.path.join(args.source, "experiments", "results")
    if not os.path.isdir(source_results):
        parser.error(f"source: {source_results} is not a folder")
    if os.path.realpath(source_results) == os.path.realpath(_checkout.RESULTS):
        parser.error("source: that is this checkout")
    changed = park(source_results, _checkout.RESULTS)
    print("\n".join(changed) if changed else "nothing to park: this checkout holds the same runs")


if __name__ == "__main__":
    sys.exit(main())
