"""Scores finished runs three ways (workbench.training.run_scores): (a) the final elite on 200 fresh episodes,
(b) the best elite chosen on a selection set and reported on 200 other episodes, (c) the Deep GA paper's way,
the highest 200-episode mean among the run's elites (biased upward). No training: the runs' committed histories
hold every generation's elite genome. One JSON line per run and mark in experiments/results/run_scores.jsonl.

    python experiments/run_scores.py experiments/results/atari_runs/ga-pc-seed0/*            # each run as its budget ended it
    python experiments/run_scores.py --budget 50000000 experiments/results/atari_runs/ga-pc-seed0/frostbite
    python experiments/run_scores.py --before 10000000,25000000,50000000 RUN...       # the marks of the paper code's logs

Marks: --budget F scores the run as a budget of F frames ended it (the first generation reaching F, as the suite
stops); --before F,... scores the last generation ended at or before each mark (how the logs of the paper's own
GA code mark a run), one line per mark. Neither: the whole run. A (run, mark) with a line in the results file is
not scored again unless --rerun is given; an interrupted scoring resumes from the episodes kept in each run's
elite_scores.json. A run that cannot be scored (corrupt, no elite by the mark) is named and the others go on;
the exit status is then 1.
"""

from __future__ import annotations

import os
import sys

import _checkout  # noqa: F401, I001  (this checkout's package first on sys.path)

from workbench.bench import common  # noqa: E402

common.quiet_start()

from workbench.training.checkpoint import CheckpointError  # noqa: E402
from workbench.training.elites import load_elite  # noqa: E402
from workbench.training.run_scores import budget_generation, generation_before, score_run  # noqa: E402

MODES = {
    "full": dict(episodes=200, screen_episodes=20, max_raced=5),
    "quick": dict(episodes=20, screen_episodes=5, max_raced=3),
    "smoke": dict(episodes=2, screen_episodes=1, max_raced=1),
}


def in_checkout(path):
    """path relative to the checkout when it lies inside it (the committed runs), else absolute."""
    path = os.path.abspath(path)
    return os.path.relpath(path, common.CHECKOUT) if path.startswith(common.CHECKOUT + os.sep) else path


def marks_of(run_dir, budget, before):
    """[(rule, frames, generation)] to score for run_dir: ("budget", F, g), ("before", F, g) per mark, or
    ("run", None, None). A mark the run did not reach by its end is skipped with a message."""
    if budget is None and not before:
        return [("run", None, None)]
    history = load_elite(run_dir).history
    marks = []
    if budget is not None:
        marks.append(("budget", budget, budget_generation(history, budget)))
    for frames in before:
        generation = generation_before(history, frames)
        if history and history[-1].frames_total < frames:
            print(f"{run_dir}: ends at {history[-1].frames_total:,} frames, before the mark {frames:,}; skipped", file=sys.stderr)
        elif generation is None:
            print(f"{run_dir}: no generation ended by {frames:,} frames; skipped", file=sys.stderr)
        else:
            marks.append(("before", frames, generation))
    return marks


def main(argv=None):
    parser = common.parser(
        __doc__,
        quick="20 episodes per test, a 5-episode screen",
        smoke="2 episodes per test: checks the script runs",
        record=True,
    )
    parser.add_argument("runs", nargs="+", help="run directories (a GA or random search run's history holds every elite)")
    parser.add_argument("--budget", type=common.positive_int, help="score each run as a budget of this many frames ended it")
    parser.add_argument("--before", default="", help="comma-separated frame marks: the last generation before each")
    parser.add_argument("--episodes", type=common.positive_int, help="episodes per test (default: the mode's; full 200)")
    parser.add_argument("--screen-episodes", type=common.seed_int, help="the screen's episodes; 0: no screen (full 20)")
    parser.add_argument("--max-raced", type=common.positive_int, help="most elites past the screen (full 5)")
    parser.add_argument("--final-only", action="store_true", help="score (a) only: the final elite at each mark")
    parser.add_argument("--rerun", action="store_true", help="score again a (run, mark) that has a line already")
    args = parser.parse_args(argv)
    mode = common.mode_of(args)
    settings = dict(MODES[mode])
    for name in settings:
        if getattr(args, name) is not None:
            settings[name] = getattr(args, name)
    if settings["screen_episodes"] > settings["episodes"]:
        parser.error(f"--screen-episodes must be at most --episodes ({settings['episodes']}), got {settings['screen_episodes']}")
    try:
        before = [int(text) for text in args.before.split(",") if text.strip()]
    except ValueError:
        parser.error(f"--before takes comma-separated frame counts, got {args.before!r}")
    if any(frames <= 0 for frames in before):
        parser.error(f"--before marks must be positive, got {args.before!r}")
    for run_dir in args.runs:
        if not os.path.isdir(run_dir):
            parser.error(f"runs: {run_dir!r} is not a directory")
    path = common.results_file("run_scores", mode, args)
    done = set()
    if path is not None and os.path.exists(path) and not args.rerun:
        try:
            lines = common.read_lines(path, benchmark="run_scores")
        except ValueError as error:
            raise SystemExit(f"--results {error}") from None
        done = {
            (line["run"], line["rule"], line["mark"], line["episodes"], line["screen_episodes"], line["final_only"])
            for line in lines
        }
    failed = []
    for run_dir in args.runs:
        try:
            marks = marks_of(run_dir, args.budget, before)
            for rule, frames, generation in marks:
                key = (in_checkout(run_dir), rule, frames, settings["episodes"], settings["screen_episodes"], args.final_only)
                if key in done:
                    print(f"{run_dir} ({rule} {frames}): in {path} already (--rerun scores it again)", file=sys.stderr)
                    continue
                print(f"{run_dir}: {rule}" + (f" {frames:,} frames, generation {generation}" if frames else ""), file=sys.stderr)
                scores = score_run(
                    run_dir,
                    generation=generation,
                    pick=not args.final_only,
                    log=lambda line: print(line, file=sys.stderr, flush=True),
                    **settings,
                )
                elite = load_elite(run_dir)
                common.record(
                    dict(
                        benchmark="run_scores",
                        run=key[0],
                        game=elite.config.env,
                        algorithm=elite.config.algorithm,
                        seed=elite.config.seed,
                        rule=rule,
                        mark=frames,
                        final_only=args.final_only,
                        mode=mode,
                        **settings,
                        **scores.to_json(),
                    ),
                    args,
                )
        except (CheckpointError, ValueError, OSError) as error:
            print(f"{run_dir}: cannot be scored: {error}", file=sys.stderr)
            failed.append(run_dir)
    if failed:
        raise SystemExit(f"not scored: {', '.join(failed)}")


if __name__ == "__main__":
    main()
