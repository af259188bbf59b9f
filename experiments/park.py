"""Parks the long runs of another checkout (a worktree the suites ran in) in this one, so that a commit carries them
to the next machine, where a suite started from a clone resumes every run from its newest checkpoint.

Pause or stop the suites first (kill -STOP), so that no checkpoint is copied while it is replaced.

    python experiments/park.py ../study      # then: git add experiments/results/atari_runs experiments/results/cma_mujoco

From SOURCE/experiments/results/ it copies:
- atari_runs/ARM/GAME/: every run folder (config, history, scores and the newest checkpoint: the suites keep one),
  finished or not, as the finished ones are committed; a folder here is replaced by the source's when they differ;
- cma_mujoco/RUN/: an unfinished run's folder; a finished run (its `done` marker written by
  experiments/cma_mujoco.sh) only as that marker, its JSON line in learning.jsonl being the result.
Never copied: TensorBoard's events, trainer locks, checkpoints being written, lock and temporary files. The JSON
lines (*.jsonl) are not touched: merge them by content. Prints what it changed.
"""

from __future__ import annotations

import argparse
import filecmp
import os
import shutil
import sys

import _checkout

SKIPPED = shutil.ignore_patterns("tensorboard", "trainer.lock", ".writing-*", "*.lock", "*.tmp")


def _same_tree(left: str, right: str) -> bool:
    """Whether two folders hold the same files (names and bytes), skipped names aside."""
    compared = filecmp.dircmp(left, right, ignore=["tensorboard", "trainer.lock"])
    if compared.left_only or compared.right_only or compared.funny_files:
        return False
    _, mismatch, errors = filecmp.cmpfiles(left, right, compared.common_files, shallow=False)
    if mismatch or errors:
        return False
    return all(_same_tree(os.path.join(left, d), os.path.join(right, d)) for d in compared.common_dirs)


def _newest_checkpoint(run: str) -> str:
    """The name of a run folder's newest checkpoint ('' without one); names sort by generation."""
    for root, folders, _ in os.walk(run):
        if os.path.basename(root) == "checkpoints":
            found = sorted(f for f in folders if f.startswith("generation-"))
            return found[-1] if found else ""
    return ""


def _replace(source: str, target: str) -> bool:
    """Copies folder `source` to `target` (replacing it) unless they already match or `target` holds a newer
    checkpoint (parked from elsewhere: never go back); whether it copied."""
    if os.path.isdir(target) and (_same_tree(source, target) or _newest_checkpoint(target) > _newest_checkpoint(source)):
        return False
    staging = target + ".parking"
    shutil.rmtree(staging, ignore_errors=True)
    shutil.copytree(source, staging, ignore=SKIPPED)
    shutil.rmtree(target, ignore_errors=True)
    os.rename(staging, target)
    return True


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
