"""Re-tests the newest elites of a finished run on two fresh sets of test episodes.

Two questions about a run's final verdict, answered from its own history at no training cost:
- How much does a test mean move with the test's episodes? The final elite is scored on a selection set
  (test seed 1) and a report set (test seed 2), beside the run's own test (seed 0: the suite's
  test_training_cap.json in the run directory, when it is there and scored the same elite at the same cap).
- Would re-evaluating the carried-over elites at the end choose a better agent than the final elite? The
  newest N distinct elites are scored on the selection set, the best of them there is "picked", and the report
  set (episodes the choice never saw) scores the pick, the final elite and the rest alike.

Test seeds never repeat a training episode (workbench.training.scoring). The elites come from the run's history,
which holds every generation's elite for the GA and random search; ES centers of earlier generations are not
kept. Episodes are capped at the run's training cap unless --max-episode-frames says otherwise. Ends with one
JSON line; docs/learning.md shows the table.

    python experiments/elite_retest.py experiments/results/atari_runs/ga-pc-seed0/asteroids     # 8 elites x (30 + 30) episodes
"""

from __future__ import annotations

import json
import os
import sys

import _checkout  # noqa: F401, I001  (this checkout's package first on sys.path)

from workbench.bench import common  # noqa: E402

common.quiet_start()

from learning import test_summary  # noqa: E402

from workbench.training.checkpoint import CheckpointError  # noqa: E402
from workbench.training.elites import load_elite  # noqa: E402
from workbench.training.scoring import score_elite  # noqa: E402

MODES = {"full": dict(elites=8, episodes=30), "quick": dict(elites=3, episodes=10), "smoke": dict(elites=2, episodes=2)}
SELECTION_SEED, REPORT_SEED = 1, 2  # test seeds; the run's own test (the suite's) used seed 0


def newest_distinct_elites(history, count):
    """The generations of the newest `count` distinct elites in a run's history, newest first (a carried-over
    elite counts once, at its newest generation)."""
    seen, generations = set(), []
    for record in reversed(history):
        if record.elite_genome is None:
            continue
        key = json.dumps(record.elite_genome, sort_keys=True)
        if key not in seen:
            seen.add(key)
            generations.append(record.generation)
        if len(generations) == count:
            break
    return generations


def in_checkout(path):
    """path relative to the checkout when it lies inside it (the committed runs), else absolute."""
    path = os.path.abspath(path)
    return os.path.relpath(path, common.CHECKOUT) if path.startswith(common.CHECKOUT + os.sep) else path


def own_test(run_dir, cap, generation):
    """The run's own test of its final elite (seed 0, the suite's test_training_cap.json) when it scored that elite
    at this cap: {mean, episodes}; else None (no such file, another elite or cap, or a file that does not parse)."""
    try:
        with open(os.path.join(run_dir, "test_training_cap.json")) as f:
            own = json.load(f)
        if (own["max_episode_frames"], own["seed"], own["generation"]) == (cap, 0, generation):
            return dict(mean=round(float(own["mean"]), 1), episodes=len(own["returns"]))
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return None


def retest(run_dir, elites, episodes, max_episode_frames=None, log=print):
    """The report of re-testing the newest `elites` distinct elites of run_dir (see the module's docstring)."""
    try:
        final = load_elite(run_dir)
    except (CheckpointError, ValueError) as error:
        raise SystemExit(f"run_dir: {error}") from None
    if final.config.algorithm not in ("ga", "random"):
        raise SystemExit(
            f"run_dir: {run_dir} is a {final.config.algorithm} run; its earlier elites are not kept (a GA or random "
            "search run's history holds every generation's elite)"
        )
    cap = max_episode_frames or final.config.max_episode_frames
    training = {record.generation: record.elite for record in final.history}
    rows = []
    for generation in newest_distinct_elites(final.history, elites):
        elite = load_elite(run_dir, generation)  # once, for both test sets
        scores = {
            name: score_elite(elite, episodes=episodes, max_episode_frames=cap, seed=seed)
            for name, seed in (("selection", SELECTION_SEED), ("report", REPORT_SEED))
        }
        rows.append(
            dict(
                generation=generation,
                training=training[generation],
                selection=test_summary(scores["selection"]),
                report=test_summary(scores["report"]),
                frames=int(sum(sum(score.frames) for score in scores.values())),
            )
        )
        log(
            f"generation {generation}: training {training[generation]}, selection set {scores['selection'].mean:.1f}, "
            f"report set {scores['report'].mean:.1f}"
        )
    if not rows:
        raise SystemExit(f"run_dir: the history of {run_dir} holds no elite genome")
    picked = max(rows, key=lambda row: row["selection"]["mean"])  # the first (newest) of equal means
    reports = [row["report"]["mean"] for row in rows]
    return dict(
        benchmark="elite_retest",
        game=final.config.env,
        algorithm=final.config.algorithm,
        run=in_checkout(run_dir),
        run_generations=len(final.history),
        run_frames=final.history[-1].frames_total if final.history else 0,
        episodes=episodes,
        max_episode_frames=cap,
        elites=rows,
        final_generation=rows[0]["generation"],
        final_own_test=own_test(run_dir, cap, rows[0]["generation"]),
        picked_generation=picked["generation"],
        picked_over_final=round(picked["report"]["mean"] / rows[0]["report"]["mean"], 3) if rows[0]["report"]["mean"] else None,
        report_mean_over_elites=round(sum(reports) / len(reports), 1),
        frames=sum(row["frames"] for row in rows),
    )


def main(argv=None):
    parser = common.parser(
        __doc__,
        quick=f"{MODES['quick']['elites']} elites x {MODES['quick']['episodes']} episodes per set",
        smoke=f"{MODES['smoke']['elites']} elites x {MODES['smoke']['episodes']} episodes per set: checks the script runs",
        record=True,
    )
    parser.add_argument("run_dir", help="a finished GA (or random search) run directory")
    parser.add_argument("--elites", type=common.int_at_least(1), default=None, help="how many of the newest distinct elites")
    parser.add_argument("--episodes", type=common.int_at_least(1), default=None, help="episodes per elite in each set")
    parser.add_argument(
        "--max-episode-frames", type=common.int_at_least(1), default=None, help="test episode cap (default: the run's own)"
    )
    args = parser.parse_args(argv)
    mode = common.mode_of(args)
    report = retest(
        args.run_dir,
        args.elites or MODES[mode]["elites"],
        args.episodes or MODES[mode]["episodes"],
        args.max_episode_frames,
        log=lambda line: print(line, file=sys.stderr, flush=True),
    )
    common.record(dict(report, mode=mode), args)


if __name__ == "__main__":
    main()
