"""Benchmark: the Deep GA paper's Atari table on this machine. One algorithm and preset over a list of games,
each trained for a budget in frames, each final elite scored the paper's way, one JSON line per game.

Frames, not minutes: the result does not depend on what else shares the machine (the wall time and frames/s
are reported beside it), and the pc preset is sized for 2 cores on every machine (it otherwise grows with the
cores), so that a bigger machine makes the same run, faster. Each game's final elite is scored on 30 fresh
test episodes (deep-ga protocol, workbench.training.scoring) at the training cap and at ALE's 108,000-frame cap,
and compared with the Deep GA paper's table (docs/protocol.md: DQN, ES, A3C, RS 1B, GA 1B, GA 6B).

  python experiments/atari_suite.py                              # the nine games of the paper's table, 50M frames each
  python experiments/atari_suite.py --games frostbite,seaquest --frames 20000000
  python experiments/atari_suite.py --quick                      # make bench: two games, 5M frames each
  python experiments/atari_suite.py --render                     # docs/atari_suite.md from the results file
  python experiments/atari_suite.py --games frostbite --frames 10000000 --seed 1 --set mutation_rank=1 \
      --set perturbed_rank=1 --results experiments/results/atari_studies.jsonl --append    # one arm of a study

--set NAME=VALUE changes one hyperparameter of the algorithm or one evaluator field (perturbed_rank,
subpopulations, slots, max_episode_frames) from the preset's; the changes are part of each line's signature.
Runs go to <runs>/<algo>-<preset>[-<changes>]-seed<seed>/<game>, where <runs> is the folder atari_runs beside the
results file, experiments/results/atari_runs by default (committed: each run keeps its config, its history with every
generation's elite genome, its test scores and its newest checkpoint, so the table's agents can be replayed and
their runs continued from a fresh clone; atari_runs-quick in the quick mode; --runs chooses another). The budget
is where a run stops, not part of its name: a run trained to 10M frames continues to 50M when asked for 50M (the
same generations an uninterrupted run would make). A stopped suite resumes: a game in progress continues from its newest
checkpoint, and a game with a line in the results file is not run again unless --rerun names it. A line names its
preset and the preset's revision (workbench.training.presets.PRESET_REVISIONS, raised whenever its values change;
run folders of a revision after the first are named <algo>-<preset>-revision<n>-...), not the values: lines of two
revisions are two groups on the page, and when a game's run directory was made with other settings than the
preset's today (values changed without a new revision), the suite stops and names the fields that differ instead of
keeping or extending it.

The results file (default experiments/results/atari_suite.jsonl, committed; the quick mode writes atari_suite-quick.jsonl
beside it, the smoke mode experiments/results/smoke/atari_suite.jsonl; the folder is workbench/bench/common.py's, so outside a
source checkout it is ./bench-results) gets one line per finished game; a file
whose lines were made with another suite version, algorithm, preset, budget, seed or changes is refused unless
--append is given (then the new lines sit beside the old ones, each saying how it was made).
"""

import argparse
import dataclasses
import difflib
import json
import os
import sys

import _checkout  # noqa: F401, I001  (this checkout's package first on sys.path)

from workbench.bench import common  # noqa: E402

common.quiet_start()

from learning import MODES as LEARNING_MODES  # noqa: E402  (experiments/learning.py: the smoke mode's sizes)
from learning import hyperparameter_names, paper_scores, test_summary  # noqa: E402
from render_atari_suite import (  # noqa: E402
    PAGE,
    PAPER_GAMES,
    RESULTS,
    RUNS_FOLDER,
    preset_label,
    render,
    run_name,
    signature_of,
)

from workbench.envs import resolve_atari_game  # noqa: E402
from workbench.evolution import ALGORITHMS  # noqa: E402
from workbench.training import CheckpointError, RunConfig, Trainer  # noqa: E402
from workbench.training.presets import PC_CORES, PRESET_REVISIONS  # noqa: E402
from workbench.training.presets import PRESET_NAMES as PRESETS  # noqa: E402
from workbench.training.run_scores import budget_generation, score_run  # noqa: E402
from workbench.training.scoring import ALE_MAX_EPISODE_FRAMES, evaluate_run  # noqa: E402

SUITE_VERSION = 3  # 2: --set changes in the signature; runs named by seed and changes. 3: 200 test episodes, three scores
MODES = {
    "smoke": dict(
        games=("pong",), frames=1, test_episodes=2, screen_episodes=1, max_raced=1, overrides=LEARNING_MODES["smoke"]["overrides"]
    ),
    "quick": dict(games=("pong", "frostbite"), frames=5_000_000, test_episodes=10, screen_episodes=3, max_raced=2, overrides={}),
    "full": dict(games=PAPER_GAMES, frames=50_000_000, test_episodes=200, screen_episodes=20, max_raced=5, overrides={}),
}
CURVE_POINTS = 200  # (frames, elite, population mean) points kept per game for the page's curves


def read_results(path):
    """The suite's lines in the results file ([] when it does not exist); SystemExit naming the file and line when one
    is not a suite result."""
    if not os.path.exists(path):
        return []
    try:
        return common.read_lines(path, benchmark="atari_suite")
    except ValueError as error:
        raise SystemExit(f"--results {error}") from None


EVALUATOR_FIELDS = ("perturbed_rank", "subpopulations", "slots", "max_episode_frames")


def parse_changes(items, algorithm):
    """{name: value} of the --set NAME=VALUE items (VALUE read as JSON, else as text); ValueError naming --set
    when NAME is neither a hyperparameter of `algorithm` nor an evaluator field."""
    known = hyperparameter_names(algorithm)
    changes = {}
    for item in items or ():
        name, equals, text = item.partition("=")
        name = name.strip()
        if not equals or not name or not text.strip():
            raise ValueError(f"--set takes NAME=VALUE (e.g. mutation_rank=1), got {item!r}")
        if name not in known and name not in EVALUATOR_FIELDS:
            close = difflib.get_close_matches(name, sorted(known) + list(EVALUATOR_FIELDS), n=3)
            raise ValueError(
                f"--set {name}: not a hyperparameter of {algorithm} ({', '.join(sorted(known))}) nor an "
                f"evaluator field ({', '.join(EVALUATOR_FIELDS)})" + (f"; did you mean {', '.join(close)}?" if close else "")
            )
        if name in changes:
            raise ValueError(f"--set names {name} twice")
        try:
            changes[name] = json.loads(text)
        except json.JSONDecodeError:
            changes[name] = text.strip()
        lowest = 0 if name == "perturbed_rank" else 1
        if name in EVALUATOR_FIELDS and (type(changes[name]) is not int or changes[name] < lowest):
            raise ValueError(f"--set {name} must be an integer of at least {lowest}, got {text.strip()!r}")
    return dict(sorted(changes.items()))


def game_config(game, algorithm, preset, seed, overrides, changes=None):
    """The preset's RunConfig on `game`, with the mode's overrides (hyperparameters the algorithm lacks dropped) and
    the --set changes. The pc preset is sized for PC_CORES cores on every machine: the budget is in frames, and a
    preset sized to the machine would give a bigger machine another run (fewer, larger generations) for the same
    frames."""
    known = hyperparameter_names(algorithm)
    changes = changes or {}
    hyperparameters = {k: v for k, v in overrides.get("hyperparameters", {}).items() if k in known}
    hyperparameters.update({k: v for k, v in changes.items() if k in known})
    fields = dict(overrides, **{k: v for k, v in changes.items() if k in EVALUATOR_FIELDS})
    fields = dict(fields, hyperparameters=hyperparameters)
    return RunConfig.from_preset(preset, algorithm, cores=PC_CORES, env=game, seed=seed, **fields)


def one_generation_frames(config):
    """The most frames one generation of `config` can take: every member and elite episode at the cap."""
    settings = config.algorithm_config()
    members = getattr(settings, "population_size", 1)
    elites = getattr(settings, "elite_candidates", 0) * getattr(settings, "elite_episodes", 0)
    return (members + elites) * config.max_episode_frames


def config_differences(config, run_dir):
    """The fields (hyperparameters one by one) in which the run in run_dir was made with other settings than
    `config`, as "name: saved -> now" strings; [] when they agree or run_dir holds no run."""
    if not os.path.exists(os.path.join(run_dir, "config.json")):
        return []
    try:
        saved = RunConfig.from_run_dir(run_dir)
    except CheckpointError as error:  # a corrupt config.json: named, not a traceback
        raise SystemExit(str(error)) from None

    def fields(run_config):
        data = run_config.to_json()
        data.update({f"hyperparameters.{k}": v for k, v in data.pop("hyperparameters").items()})
        return data

    before, now = fields(saved), fields(config)
    return [
        f"{name}: {before.get(name)!r} -> {now.get(name)!r}"
        for name in sorted(set(before) | set(now))
        if before.get(name) != now.get(name)
    ]


def train_game(config, run_dir, budget):
    """Trains `config` in run_dir until `budget` frames, resuming a stopped run; returns the trainer's history."""
    differences = config_differences(config, run_dir)
    if differences:
        raise SystemExit(
            f"{run_dir} holds a run of another configuration ({'; '.join(differences)}); move it away (or give "
            "--runs) to start this one"
        )
    if os.path.exists(os.path.join(run_dir, "config.json")):
        trainer = Trainer.resume_from(run_dir)
        print(f"  resuming {run_dir} at generation {trainer.generation} ({trainer.frames:,} frames)", file=sys.stderr)
        if trainer.frames > budget:
            print(
                f"  (the run went on past the budget of {budget:,} frames: it is scored as the budget ended it)", file=sys.stderr
            )
    else:
        trainer = Trainer.from_config(config, run_dir=run_dir)
    trainer.keep_checkpoints = 1  # the newest is all a resume needs (checkpoints are written atomically)
    try:
        if trainer.frames < budget:
            trainer.run(frames=budget - trainer.frames)
            trainer.checkpoint()  # the run's final state, which the scoring reads (a run at its budget is untouched)
    finally:
        trainer.close()
    return list(trainer.history)


def test_file(run_dir, cap_name, generation, newest):
    """Where the test of `generation` at a cap goes: test_<cap>.json for the run's newest generation (the run as
    it stands), test_<cap>-generation<g>.json for an earlier one (a run that went on past this budget keeps the
    test of its own end)."""
    suffix = "" if generation == newest else f"-generation{generation}"
    return os.path.join(run_dir, f"test_{cap_name}{suffix}.json")


def write_score(score, path):
    """A test's Score as JSON in the run directory (test_training_cap.json, test_ale_cap.json); its run_dir relative
    to the checkout when the run lies in it (committed files name no machine's folders)."""
    data = score.to_json()
    if data.get("run_dir") and os.path.abspath(data["run_dir"]).startswith(common.CHECKOUT + os.sep):
        data["run_dir"] = os.path.relpath(os.path.abspath(data["run_dir"]), common.CHECKOUT)
    with open(path, "w") as f:
        json.dump(data, f, indent=1)


def curve_points(history):
    """At most CURVE_POINTS evenly spaced (frames, elite, population mean) of the run's generations."""
    step = max(1, -(-len(history) // CURVE_POINTS))
    chosen = history[::step] + ([history[-1]] if (len(history) - 1) % step else [])
    return [[r.frames_total, r.elite, None if r.mean is None else round(r.mean, 1)] for r in chosen]


def run_suite(args, mode, games):
    settings = MODES[mode]
    revision = common.commit()  # the code this process runs (HEAD may move while a suite trains)
    overrides = settings["overrides"]
    budget = args.frames if args.frames is not None else settings["frames"]
    episodes = args.test_episodes or settings["test_episodes"]
    preset_revision = PRESET_REVISIONS[args.preset]
    preset = preset_label(args.preset, preset_revision)
    signature = dict(
        suite_version=SUITE_VERSION,
        algorithm=args.algorithm,
        preset=args.preset,
        preset_revision=preset_revision,
        budget_frames=budget,
        seed=args.seed,
        mode=mode,
        changes=args.changes,
    )
    try:  # every game's error before the first game trains
        configs = {game: game_config(game, args.algorithm, args.preset, args.seed, overrides, args.changes) for game in games}
        for config in configs.values():
            config.algorithm_config()
            config.check()
    except (ValueError, TypeError) as error:
        changes = "".join(f", --set {k}={v}" for k, v in args.changes.items())
        raise SystemExit(f"the run's settings (preset {preset}{changes}) are invalid: {error}") from None
    for game, config in configs.items():
        if mode != "smoke" and budget < one_generation_frames(config):
            raise SystemExit(
                f"--frames {budget:,} is below one generation of preset {preset} on {game} (up to "
                f"{one_generation_frames(config):,} frames: members and elite episodes at the "
                f"{config.max_episode_frames:,}-frame cap); give at least that"
            )
    existing = read_results(args.results)
    foreign = [entry for entry in existing if signature_of(entry) != signature]
    if foreign and not args.append:
        other = signature_of(foreign[0])
        raise SystemExit(
            f"--results {args.results} holds lines made with {other}, not {signature}; give --append to "
            "add lines beside them, or another --results"
        )
    finished = {entry["game"] for entry in existing if signature_of(entry) == signature}
    runs = os.path.join(args.runs, run_name(args.algorithm, args.preset, args.seed, args.changes, preset_revision))
    for game in games:
        config = configs[game]
        run_dir = os.path.join(runs, game)
        if game in finished and game not in args.rerun:
            differences = config_differences(config, run_dir)
            if differences:  # the preset's settings changed since the line was made: the line is not this run's
                raise SystemExit(
                    f"{game}: its line in {args.results} was made with other settings of preset {preset} "
                    f"({'; '.join(differences)}); give another --results (and --runs), or --rerun {game} after moving "
                    f"{run_dir} away"
                )
            print(f"{game}: in {args.results} already (--rerun {game} runs it again)", file=sys.stderr)
            continue
        print(f"{game}: {args.algorithm}, preset {preset}, {budget:,} frames -> {run_dir}", file=sys.stderr)
        history = train_game(config, run_dir, budget)
        newest = history[-1].generation
        history = history[: budget_generation(history, budget) + 1]  # a run that went on is scored at the budget
        seconds = sum(record.seconds for record in history)
        scores = score_run(
            run_dir,
            generation=history[-1].generation,
            episodes=episodes,
            screen_episodes=min(settings["screen_episodes"], episodes),
            max_raced=settings["max_raced"],
            max_episode_frames=config.max_episode_frames,
            pick=args.scores == "all",
            log=lambda line: print(f"  {line}", file=sys.stderr, flush=True),
        )
        at_training_cap = scores.final
        write_score(at_training_cap, test_file(run_dir, "training_cap", history[-1].generation, newest))
        at_ale_cap = None
        if not args.no_ale_cap:
            ale_cap = ALE_MAX_EPISODE_FRAMES if mode != "smoke" else 2 * config.max_episode_frames
            if at_training_cap.capped == 0:  # every episode ended before the training cap: the same under a higher one
                at_ale_cap = dataclasses.replace(at_training_cap, max_episode_frames=ale_cap)
            else:
                at_ale_cap = evaluate_run(run_dir, history[-1].generation, episodes=episodes, max_episode_frames=ale_cap)
            write_score(at_ale_cap, test_file(run_dir, "ale_cap", history[-1].generation, newest))
        paper = paper_scores(game)
        frames = history[-1].frames_total
        entry = dict(
            benchmark="atari_suite",
            **signature,
            game=game,
            recorded=common.utc_now(),
            commit=revision,
            machine=common.machine(),
            generations=len(history),
            frames=frames,
            seconds=round(seconds, 1),
            frames_per_second=round(frames / seconds, 1) if seconds else None,
            final_elite_training=history[-1].elite,
            scores=scores.to_json(),
            test_training_cap=test_summary(at_training_cap),
            test_ale_cap=test_summary(at_ale_cap) if at_ale_cap is not None else None,
            paper=paper,
            ratios={column: round((at_ale_cap or at_training_cap).mean / value, 3) for column, value in paper.items() if value},
            curve=curve_points(history),
        )
        common.append_line(args.results, entry)
        print(
            f"  {frames:,} frames in {seconds / 60:.1f} min; test at the training cap {at_training_cap.summary()}"
            + (f"; at ALE's cap {at_ale_cap.summary()}" if at_ale_cap is not None else ""),
            file=sys.stderr,
        )
        print(json.dumps({k: v for k, v in entry.items() if k != "curve"}))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument(
        "--quick",
        action="store_true",
        help="two games, 5M frames each (make bench; one generation of the pc preset can take 4.5M)",
    )
    mode.add_argument("--smoke", action="store_true", help="one tiny generation of one game: checks the script")
    mode.add_argument("--render", action="store_true", help="write docs/atari_suite.md from --results and exit")
    parser.add_argument("--page", type=common.path_text, help="with --render: the page to write (default docs/atari_suite.md)")
    parser.add_argument("--verbose", action="store_true", help="show TensorFlow's log lines")
    parser.add_argument("--games", help=f"comma-separated ale-py game names (default: {','.join(PAPER_GAMES)})")
    parser.add_argument("--algo", dest="algorithm", default="ga", choices=sorted(ALGORITHMS), help="default ga")
    parser.add_argument("--preset", default="pc", help=f"one of {sorted(PRESETS)} (default pc)")
    parser.add_argument("--frames", type=int, help="training frames per game (default: the mode's; full 50M)")
    parser.add_argument("--test-episodes", type=int, help="episodes of each test (default: the mode's; full 200)")
    parser.add_argument(
        "--scores",
        choices=("all", "final"),
        default="all",
        help="all: (a), (b) and (c); final: (a) only, the final elite (the studies: (b) and (c) replay many elites)",
    )
    parser.add_argument("--seed", type=common.seed_int, default=0)
    parser.add_argument(
        "--results",
        type=common.path_text,
        help="the JSON-lines results file (default experiments/results/atari_suite.jsonl; --quick: atari_suite-quick.jsonl "
        "beside it; --smoke: experiments/results/smoke/atari_suite.jsonl)",
    )
    parser.add_argument(
        "--runs", type=common.path_text, help="the folder of the suite's runs (default: atari_runs beside the results file)"
    )
    parser.add_argument("--rerun", default="", help="comma-separated games to run again though they have a result")
    parser.add_argument("--append", action="store_true", help="add to a results file made with other settings")
    parser.add_argument(
        "--set",
        dest="changes",
        action="append",
        metavar="NAME=VALUE",
        help="change a hyperparameter or evaluator field from the preset's (repeatable)",
    )
    parser.add_argument(
        "--no-ale-cap",
        action="store_true",
        help="score at the training cap only (studies: the 108,000-frame test can cost millions of frames)",
    )
    args = parser.parse_args(argv)
    name = "smoke" if args.smoke else "quick" if args.quick else "full"
    if args.render:
        args.results = args.results or RESULTS
    else:  # the results folder of every benchmark (workbench/bench/common.py); the runs beside the results file
        args.results = args.results or common.results_file("atari_suite-quick" if name == "quick" else "atari_suite", name)
        args.runs = args.runs or os.path.join(os.path.dirname(os.path.abspath(args.results)), RUNS_FOLDER[name])
    if args.render:
        if not os.path.exists(args.results):
            parser.error(f"--results {args.results} does not exist")
        print(render(args.results, args.page or PAGE))
        return
    try:
        names = args.games.split(",") if args.games is not None else MODES[name]["games"]
        games = []
        for raw in names:
            if not raw.strip():
                raise ValueError(f"--games {args.games!r} has an empty game name; give comma-separated ale-py names")
            game = resolve_atari_game(raw.strip())  # ValueError with the close names
            if game in games:
                raise ValueError(f"--games names {game} twice")
            games.append(game)
        args.rerun = {resolve_atari_game(raw.strip()) for raw in args.rerun.split(",") if raw.strip()}
        if args.rerun - set(games):
            unknown = ", ".join(sorted(args.rerun - set(games)))
            raise ValueError(f"--rerun {unknown}: not among the games run ({', '.join(games)})")
        args.changes = parse_changes(args.changes, args.algorithm)
        if args.preset not in PRESETS:
            raise ValueError(f"--preset must be one of {sorted(PRESETS)}, got {args.preset!r}")
        if ALGORITHMS[args.algorithm].vector_only:
            raise ValueError(f"--algo {args.algorithm} is for MuJoCo tasks (vector observations), not Atari")
    except ValueError as error:
        parser.error(str(error))
    for option in ("frames", "test_episodes"):
        value = getattr(args, option)
        if value is not None and value <= 0:
            parser.error(f"--{option.replace('_', '-')} must be positive, got {value}")
    run_suite(args, name, games)


if __name__ == "__main__":
    main()
