"""Benchmark: what the workbench learns on an Atari game or a MuJoCo task, at what cost, against the papers' scores.

Runs one algorithm with a preset for a budget (minutes and/or frames), records the learning curve
(elite and population statistics against frames and against wall-clock time), then scores the final
elite the paper's way (workbench.training.scoring: fresh test episodes, deep-ga protocol) both at the
training cap and at ALE's 108,000-frame cap, and compares the test means with the scores reported in
the Deep GA paper (docs/protocol.md: DQN, ES, A3C, RS 1B, GA 1B, GA 6B). Writes curve.png, curve.csv
and the test results under --out, prints a table, and ends with one JSON line.

  python experiments/learning.py [--quick | --smoke] [--game frostbite] [--algo ga] [--preset pc]
                           [--minutes 120] [--frames N] [--test-episodes 30] [--out DIR]
  python experiments/learning.py --study sigma=0.002,0.005,0.01 --minutes 20     # equal budgets, curves side by side
  python experiments/learning.py --game seaquest --compare es+vbn,es,random --frames 20000000   # equal frames

MuJoCo tasks (--game HalfCheetah-v5): the default algorithm is ARS with the paper preset, the budget the
task's target minutes (docs/continuous_control.md), and the final policy is scored on 100 fresh episodes
(true reward, the task's 1,000-step cap) against ARS's threshold; the JSON line also says when the
policy's training score first reached the threshold (minutes and steps).

  python experiments/learning.py --game HalfCheetah-v5 [--algo ars|pgpe|es] [--preset paper] [--minutes 10]
  python experiments/learning.py --game HumanoidTrap-v5 --compare es,ns-es,nsr-es --frames 20000000   # final x, y

Modes: --smoke (seconds: checks the script), --quick (a few minutes, for make bench), full (default:
a two-hour budget on the machine at hand; on MuJoCo the task's target). A study runs one training per value
of one hyperparameter with the same budget; a comparison runs one training per algorithm ("+vbn": with
virtual batch normalisation; "+lowrank": the GA with rank-1 mutations in the op's perturbed mode) with the
same frames. Both score each final elite at the training cap.
"""

import csv
import json
import os
import re
import shutil
import sys

import _checkout  # noqa: F401, I001  (this checkout's package first on sys.path)
import numpy as np

from workbench.bench import common  # noqa: E402

common.quiet_start()

from workbench.envs import find_mujoco_task, resolve_atari_game  # noqa: E402
from workbench.envs.mujoco.humanoid_trap import REGIONS, trap_region  # noqa: E402
from workbench.evolution import (  # noqa: E402
    ALGORITHMS,  # noqa: E402
    Genome,
    base_key,
)
from workbench.lab.plots import trap_positions_figure  # noqa: E402
from workbench.training import CheckpointError, RunConfig, Trainer  # noqa: E402
from workbench.training.presets import PRESET_NAMES as PRESETS  # noqa: E402
from workbench.training.scoring import ALE_MAX_EPISODE_FRAMES, evaluate_run, score_genome  # noqa: E402
from workbench.training.warm_start import load_warm_start  # noqa: E402

DOCS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs")
PROTOCOL_PAGE = os.path.join(DOCS, "protocol.md")
CONTROL_PAGE = os.path.join(DOCS, "continuous_control.md")
MODES = {  # budget, test episodes, and what the smoke mode shrinks
    "smoke": dict(
        minutes=None,
        frames=1,
        test_episodes=2,
        overrides=dict(
            hyperparameters=dict(
                population_size=4,
                truncation=2,
                elite_candidates=1,
                elite_episodes=1,
                directions=2,
                top_directions=1,
                meta_population_size=2,
            ),
            slots=2,
            max_episode_frames=400,
            noise_size=2**22,
        ),
    ),
    "quick": dict(minutes=3.0, frames=None, test_episodes=5, overrides={}),
    "full": dict(minutes=120.0, frames=None, test_episodes=30, overrides={}),
}


MUJOCO_TEST_EPISODES = {"smoke": 2, "quick": 10, "full": 100}  # ARS reported means over 100 episodes


def markdown_row(page, header, key):
    """{column: number} of the row `key` of the table whose header starts with `header` in docs/`page`."""
    with open(page) as f:
        lines = f.read().splitlines()
    start = next(k for k, line in enumerate(lines) if line.startswith(header))
    columns = [c.strip() for c in lines[start].strip("|").split("|")][1:]
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        if cells[0] == key:
            return {column: float(value) for column, value in zip(columns, cells[1:])}
    return {}


def paper_scores(game):
    """{column: score} of the Deep GA paper's table in docs/protocol.md for `game` ({} when it is not there)."""
    return markdown_row(PROTOCOL_PAGE, "| game | DQN", game)


def mujoco_anchors(task):
    """{"ARS threshold": ..., "target minutes": ...} of docs/continuous_control.md ({} for other tasks)."""
    return markdown_row(CONTROL_PAGE, "| task | ARS threshold", task)


def parse_study(text):
    match = re.fullmatch(r"([a-z_]+)=([^=]+)", text or "")
    if not match:
        raise ValueError(f"--study must look like sigma=0.002,0.005,0.01, got {text!r}")
    values = [json.loads(v) for v in match.group(2).split(",")]
    return match.group(1), values


def parse_settings(text):
    """{name: value} of --set "sigma=0.0075,learning_rate=0.005" (values as JSON numbers, or true / false)."""
    settings = {}
    for item in (text or "").split(","):
        match = re.fullmatch(r"([a-z_]+)=([^=,]+)", item.strip())
        value = None
        if match:
            try:
                value = json.loads(match.group(2))
            except json.JSONDecodeError:
                value = None
        if not isinstance(value, (int, float)):  # a bool is an int: noise_handling=true
            raise ValueError(
                f"--set must look like sigma=0.0075,learning_rate=0.005 or noise_handling=true, got {item.strip()!r}"
            )
        settings[match.group(1)] = value
    return settings


def hyperparameter_names(algorithm):
    return set(ALGORITHMS[algorithm].hyperparameter_names())


def parse_compare(text):
    """[(algorithm, option)] of --compare "es+vbn,es,random,ga+lowrank" (option "", "vbn" or "lowrank")."""
    arms = []
    for arm in (text or "").split(","):
        algorithm, _, suffix = arm.strip().partition("+")
        if (
            algorithm not in ALGORITHMS
            or suffix not in ("", "vbn", "lowrank")
            or (suffix == "lowrank" and ALGORITHMS[algorithm].preset_group != "ga")
        ):
            raise ValueError(
                f"--compare must list algorithms of {sorted(ALGORITHMS)}, each optionally with +vbn "
                f"or (ga, random) +lowrank (e.g. es+vbn,es,random or ga,ga+lowrank), got {arm.strip()!r}"
            )
        arms.append((algorithm, suffix))
    return arms


# A MuJoCo run of the CMA family plays thousands of generations of about a second each; a checkpoint (a few fsyncs;
# since format 2 its cost no longer grows with the history, docs/architecture.md) each time would be a share of that
# second. Those runs checkpoint every MUJOCO_CHECKPOINT_EVERY generations (a stopped run replays at most that many);
# an Atari generation takes minutes and is checkpointed each time.
MUJOCO_CHECKPOINT_EVERY = 20


def train(config, run_dir, minutes, frames):
    """Trains `config` into run_dir for the budget; returns (history, wall seconds of its generations). A run
    budgeted in frames alone resumes a stopped run of the same configuration in run_dir from its newest checkpoint
    (a budget in minutes starts again: a clock cannot be resumed)."""
    every = MUJOCO_CHECKPOINT_EVERY if find_mujoco_task(config.env) is not None else 1
    resumable = (
        minutes is None
        and frames is not None
        and os.path.exists(os.path.join(run_dir, "config.json"))
        and RunConfig.from_run_dir(run_dir).to_json() == config.to_json()
    )
    if resumable:
        trainer = Trainer.resume_from(run_dir, checkpoint_every=every)
        print(f"  resuming {run_dir} at generation {trainer.generation} ({trainer.frames:,} frames)", file=sys.stderr)
    else:
        if os.path.exists(run_dir):
            shutil.rmtree(run_dir)
        trainer = Trainer.from_config(config, run_dir=run_dir, checkpoint_every=every)
    trainer.keep_checkpoints = 1  # the newest is all a resume needs (checkpoints are written atomically)
    try:
        if frames is None or trainer.frames < frames:
            remaining = None if frames is None else frames - trainer.frames
            trainer.run(seconds=None if minutes is None else minutes * 60, frames=remaining)
        trainer.checkpoint()
    finally:
        trainer.close()
    history = list(trainer.history)
    return history, sum(record.seconds for record in history)


def recorded_history(run_dir):
    """The GenerationRecords of a finished run directory (its history.jsonl)."""
    from workbench.evolution.records import GenerationRecord

    path = os.path.join(run_dir, "history.jsonl")
    if not os.path.exists(path):
        raise SystemExit(f"--rescore needs a run in {run_dir} (its history.jsonl)")
    with open(path) as f:
        return [GenerationRecord.from_json(json.loads(line)) for line in f if line.strip()]


def rolling_median(values, window):
    """The median of each value's trailing window (NaNs left out)."""
    values = np.asarray(values, float)
    out = np.full(values.shape, np.nan)
    for i in range(len(values)):
        part = values[max(0, i - window + 1) : i + 1]
        part = part[np.isfinite(part)]
        if part.size:
            out[i] = np.median(part)
    return out


def write_curve(curves, out, unit="frames"):
    """curve.csv and curve.png of {label: history}: elite and population statistics against frames (MuJoCo:
    unit "steps") and minutes. With hundreds of generations the elite's points are drawn faintly and its
    rolling median over 2 % of the generations on top."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with open(os.path.join(out, "curve.csv"), "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["run", "generation", "frames_total", "minutes", "max", "mean", "median", "elite"])
        for label, history in curves.items():
            minutes = 0.0
            for record in history:
                minutes += record.seconds / 60
                writer.writerow(
                    [
                        label,
                        record.generation,
                        record.frames_total,
                        round(minutes, 3),
                        record.max,
                        record.mean,
                        record.median,
                        record.elite,
                    ]
                )
    figure, (by_frames, by_time) = plt.subplots(1, 2, figsize=(11, 3.8), sharey=True)
    for label, history in curves.items():
        frames = [r.frames_total / 1e6 for r in history]
        minutes, elapsed = [], 0.0
        for record in history:
            elapsed += record.seconds / 60
            minutes.append(elapsed)
        elite = [float("nan") if r.elite is None else r.elite for r in history]
        prefix = "" if len(curves) == 1 else f"{label}: "
        many = len(history) > 150
        for axes, x in ((by_frames, frames), (by_time, minutes)):
            if many:
                (line,) = axes.plot(x, elite, ".", ms=1.5, alpha=0.3)
                axes.plot(
                    x,
                    rolling_median(elite, max(3, len(history) // 50)),
                    "-",
                    lw=1.6,
                    color=line.get_color(),
                    label=f"{prefix}elite (rolling median)",
                )
            else:
                (line,) = axes.plot(x, elite, "o-", ms=3, label=f"{prefix}elite")
            axes.plot(
                x,
                [r.mean for r in history],
                "--",
                lw=0.8 if many else 1.5,
                color=line.get_color(),
                alpha=0.6,
                label=f"{prefix}population mean",
            )
    by_frames.set_xlabel(f"{unit} (millions)")
    by_time.set_xlabel("wall-clock minutes")
    by_frames.set_ylabel("episode return")
    for axes in (by_frames, by_time):
        axes.grid(alpha=0.3)
    by_time.legend(fontsize=7)
    figure.tight_layout()
    path = os.path.join(out, "curve.png")
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return path


def test_summary(score):
    return dict(
        mean=round(score.mean, 1),
        std=round(score.std, 1),
        median=score.median,
        episodes=score.episodes,
        max_episode_frames=score.max_episode_frames,
        capped=score.capped,
    )


def main(argv=None):
    parser = common.parser(
        __doc__, quick="a few minutes of training (make bench)", smoke="one tiny generation: checks the script runs", record=True
    )
    parser.add_argument("--game", "--env", dest="game", default="frostbite", help="an Atari game or a MuJoCo task")
    parser.add_argument(
        "--algo", dest="algorithm", choices=sorted(ALGORITHMS), help="search algorithm (default: ga on Atari, ars on MuJoCo)"
    )
    parser.add_argument("--preset", help=f"one of {sorted(PRESETS)} (default: pc on Atari, paper on MuJoCo)")
    parser.add_argument("--minutes", type=float, help="training budget in minutes (default: the mode's)")
    parser.add_argument(
        "--frames",
        type=int,
        help="training budget in frames (alone: a stopped run resumes; with --minutes: whichever ends first)",
    )
    parser.add_argument("--test-episodes", type=int, help="test episodes per cap (default: the mode's; full: 30)")
    parser.add_argument("--model", help="population model (default: small on Atari, the preset's on MuJoCo)")
    parser.add_argument("--study", help="sweep one hyperparameter, e.g. sigma=0.002,0.005,0.01 (equal budgets)")
    parser.add_argument("--compare", help="algorithms at equal frames, e.g. es+vbn,es,random (needs --frames)")
    parser.add_argument("--seed", type=common.seed_int, default=0)
    parser.add_argument(
        "--set",
        dest="settings",
        metavar="NAME=VALUE,...",
        help="hyperparameters for every arm, e.g. sigma=0.0075,learning_rate=0.005 (over the preset's)",
    )
    parser.add_argument(
        "--init-from",
        dest="init_from",
        metavar="RUN_DIR",
        help="every arm starts from that run's elite (its model and observation normalisation too)",
    )
    parser.add_argument(
        "--rescore",
        action="store_true",
        help="do not train: score the run already in --out again (and write the curve and JSON line)",
    )
    parser.add_argument(
        "--out",
        type=common.path_text,
        help="the run's folder (default experiments/results/learning-GAME-ALGO[-study]; ./bench-results/ outside a checkout)",
    )
    args = parser.parse_args(argv)
    name = common.mode_of(args)
    settings = MODES[name]
    try:
        task = find_mujoco_task(args.game)
        game = task.id if task is not None else resolve_atari_game(args.game)
        args.algorithm = args.algorithm or ("ars" if task is not None else "ga")
        if args.preset is None:
            args.preset = "paper" if task is not None else "pc"
        if task is None and args.model is None:
            args.model = "small"
        if task is None and ALGORITHMS[args.algorithm].vector_only:
            raise ValueError(f"--algo {args.algorithm} is for MuJoCo tasks (vector observations), not {game}")
        if args.preset not in PRESETS:
            raise ValueError(f"--preset must be one of {sorted(PRESETS)}, got {args.preset!r}")
        study = parse_study(args.study) if args.study is not None else None
        compare = parse_compare(args.compare) if args.compare is not None else None
        settings_given = parse_settings(args.settings) if args.settings is not None else {}
        trained = [algorithm for algorithm, _ in compare] if compare else [args.algorithm]
        for key in settings_given:  # each setting goes to the arms that have it
            if not any(key in hyperparameter_names(algorithm) for algorithm in trained):
                raise ValueError(f"--set: none of {trained} has a hyperparameter {key!r}")
        if study and compare:
            raise ValueError("--study and --compare cannot be combined")
        if args.rescore and (study or compare):
            raise ValueError("--rescore scores one run; it cannot be combined with --study or --compare")
        if compare and args.frames is None and not args.smoke:
            raise ValueError("--compare needs --frames: the algorithms are compared at equal frames")
    except ValueError as error:
        parser.error(str(error))
    for option in ("minutes", "frames", "test_episodes"):
        value = getattr(args, option)
        if value is not None and value <= 0:
            parser.error(f"--{option.replace('_', '-')} must be positive, got {value}")
    anchors = mujoco_anchors(game) if task is not None else {}
    default_minutes = settings["minutes"]
    if task is not None and name == "full":
        default_minutes = anchors.get("target minutes", 30.0)
    minutes = args.minutes if args.minutes is not None else default_minutes
    if args.frames is not None and args.minutes is None:
        minutes = None  # a budget in frames alone (equal frames for comparisons; a stopped run resumes)
    frames = args.frames if args.frames is not None else (settings["frames"] if args.minutes is None else None)
    episodes = args.test_episodes or (MUJOCO_TEST_EPISODES[name] if task is not None else settings["test_episodes"])

    def preset_config(algorithm, **fields):
        """The preset's RunConfig for `algorithm` with the mode's overrides (hyperparameters it does not take dropped)."""
        overrides = dict(settings["overrides"], **fields)
        known = RunConfig.resolve(args.preset, algorithm=algorithm, env=game).hyperparameters
        wanted = dict(overrides.get("hyperparameters", {}))
        if task is not None and ALGORITHMS[algorithm].vector_only:
            wanted.setdefault("center_episodes", 1)  # the policy's own training score, for the curve
        overrides["hyperparameters"] = {key: value for key, value in wanted.items() if key in known or key == "center_episodes"}
        overrides["hyperparameters"].update(
            {key: value for key, value in settings_given.items() if key in hyperparameter_names(algorithm)}
        )
        if args.model is not None:
            overrides["model"] = args.model
        if args.init_from is not None:  # a warm start: the resolver takes the source's model and normalisation
            overrides["init_from"] = args.init_from
        return RunConfig.resolve(args.preset, algorithm=algorithm, env=game, seed=args.seed, **overrides)

    arms = None  # a study's or a comparison's RunConfigs, by arm
    try:  # a clear error now for an invalid preset/override combination or warm start, before anything is written
        base = preset_config(args.algorithm)
        if study:
            field, values = study
            arms = {
                f"{field}={value}": RunConfig.from_json(
                    dict(base.to_json(), hyperparameters=dict(base.hyperparameters, **{field: value}))
                )
                for value in values
            }
        elif compare:
            arms = {}
            for algorithm, option in compare:
                config = preset_config(algorithm, virtual_batch_norm=option == "vbn")
                if option == "lowrank":  # rank-1 mutations, run through the op's perturbed mode
                    config = RunConfig.from_json(
                        dict(config.to_json(), perturbed_rank=1, hyperparameters=dict(config.hyperparameters, mutation_rank=1))
                    )
                arms[algorithm + (f"+{option}" if option else "")] = config
        for config in [base, *(arms or {}).values()]:
            config.algorithm_config()
    except (ValueError, TypeError, CheckpointError) as error:
        parser.error(str(error))
    label = "compare" if compare else args.algorithm + (f"-{study[0]}" if study else "")
    out = args.out or os.path.join(common.results_folder(), f"learning-{game}-{label}")  # beside the results files
    os.makedirs(out, exist_ok=True)
    paper = paper_scores(game) if task is None else anchors
    if arms is not None:
        if study:
            describe = dict(study=study[0], algorithm=base.algorithm, preset=args.preset)
        else:
            describe = dict(compare=list(arms), preset=args.preset, **({"init_from": args.init_from} if args.init_from else {}))
        run_arms(arms, describe, base, minutes, frames, episodes, out, name, paper, args)
        return
    run_dir = os.path.join(out, "run")
    if args.rescore:  # the run is there: score it again (a scoring step that failed, other test episodes)
        history = recorded_history(run_dir)
        seconds = sum(record.seconds for record in history)
    else:
        history, seconds = train(base, run_dir, minutes, frames)
    if not history:
        raise SystemExit("no generation finished within the budget; give more --minutes or --frames")
    curve = write_curve({args.algorithm: history}, out, "frames" if task is None else "steps")
    if task is not None:
        report_mujoco(game, args, name, base, history, seconds, run_dir, episodes, minutes, anchors, out, curve)
        return
    at_training_cap = evaluate_run(
        run_dir,
        episodes=episodes,
        max_episode_frames=base.max_episode_frames,
        json_path=os.path.join(out, "test_training_cap.json"),
        overwrite=True,
    )
    ale_cap = ALE_MAX_EPISODE_FRAMES if name != "smoke" else 2 * base.max_episode_frames
    at_ale_cap = evaluate_run(
        run_dir, episodes=episodes, max_episode_frames=ale_cap, json_path=os.path.join(out, "test_ale_cap.json"), overwrite=True
    )
    total_frames = history[-1].frames_total
    print(
        f"{game}, {args.algorithm}, preset {args.preset}: {len(history)} generations, {total_frames:,} frames in "
        f"{seconds / 60:.1f} min ({total_frames / seconds:,.0f} frames/s)",
        file=sys.stderr,
    )
    print(f"test at the training cap ({base.max_episode_frames}): {at_training_cap.summary()}", file=sys.stderr)
    print(f"test at ALE's cap ({ale_cap}): {at_ale_cap.summary()}", file=sys.stderr)
    for column, value in paper.items():
        print(f"  paper {column:>6}: {value:>8g}   ours / paper: {at_ale_cap.mean / value:6.3f}", file=sys.stderr)
    report = {
        "benchmark": "learning",
        "mode": name,
        "game": game,
        "algorithm": args.algorithm,
        "preset": args.preset,
        "generations": len(history),
        "frames": total_frames,
        "seconds": round(seconds, 1),
        "cores": os.cpu_count(),
        "frames_per_second": round(total_frames / seconds, 1),
        "final_elite_training": history[-1].elite,
        "test_training_cap": test_summary(at_training_cap),
        "test_ale_cap": test_summary(at_ale_cap),
        "paper": paper,
        "ratios": {column: round(at_ale_cap.mean / value, 3) for column, value in paper.items() if value},
        "curve": curve,
    }
    common.record(report, args)


def first_reaching(history, threshold):
    """(minutes, steps) when the training score of the policy (the record's elite) first reached `threshold`."""
    minutes = 0.0
    for record in history:
        minutes += record.seconds / 60
        if record.elite is not None and record.elite >= threshold:
            return round(minutes, 2), record.frames_total
    return None, None


def report_mujoco(game, args, name, base, history, seconds, run_dir, episodes, minutes, anchors, out, curve):
    """Scores the final policy on fresh episodes (true reward, the task's cap) and prints the JSON line."""
    score = evaluate_run(run_dir, episodes=episodes, json_path=os.path.join(out, "test.json"), overwrite=True)
    steps = history[-1].frames_total
    threshold = anchors.get("ARS threshold")
    reached_minutes, reached_steps = first_reaching(history, threshold) if threshold else (None, None)
    target = anchors.get("target minutes")
    print(
        f"{game}, {args.algorithm}, preset {args.preset}: {len(history)} generations, {steps:,} steps in "
        f"{seconds / 60:.1f} min ({steps / seconds:,.0f} steps/s); test {score.summary()}",
        file=sys.stderr,
    )
    if threshold:
        print(
            f"  ARS threshold {threshold:g}: test / threshold {score.mean / threshold:.3f}; training score first "
            f"reached it after {reached_minutes} min"
            if reached_minutes is not None
            else f"  ARS threshold {threshold:g}: test / threshold {score.mean / threshold:.3f}; not reached in training",
            file=sys.stderr,
        )
    positions = np.asarray(score.final_positions)
    common.record(
        {
            "benchmark": "learning",
            "mode": name,
            "game": game,
            "algorithm": args.algorithm,
            "preset": args.preset,
            "model": base.model,
            "observation_normalization": RunConfig.from_run_dir(run_dir).spec().observation_normalization,
            "generations": len(history),
            "frames": steps,
            "seconds": round(seconds, 1),
            "cores": os.cpu_count(),
            "steps_per_second": round(steps / seconds, 1),
            "budget_minutes": minutes,
            "budget_steps": args.frames,
            "seed": args.seed,
            "final_policy_training": history[-1].elite,
            "test": test_summary(score),
            "test_final_x": round(float(positions[:, 0].mean()), 2),
            "ars_threshold": threshold,
            "ratio_to_threshold": round(score.mean / threshold, 3) if threshold else None,
            "threshold_reached_in_training_minutes": reached_minutes,
            "threshold_reached_in_training_steps": reached_steps,
            "target_minutes": target,
            # in the target minutes; a budget in steps alone (ARS's steps in them, experiments/cma_mujoco.sh): within it
            "target_met": bool(
                threshold
                and target
                and score.mean >= threshold
                and (seconds <= target * 60 * 1.02 if minutes is not None else args.frames is not None)
            ),
            "curve": curve,
        },
        args,
    )


def starting_score(config, episodes):
    """The Score of the policy a warm start begins from (config.init_from's elite) on config's task."""
    spec = config.spec()
    start = load_warm_start(config.init_from, config.model, config.model_options, spec)
    if start.statistics is not None:
        spec = spec.with_observation_statistics(start.statistics)
    key = base_key(start.weights)
    return score_genome(
        Genome(key),
        spec,
        bases={key: start.weights},
        episodes=episodes,
        max_episode_frames=config.max_episode_frames,
        run_seed=config.seed,
        subpopulations=config.subpopulations,
        slots=config.slots,
    )


def add_positions(result, positions, label, score, env):
    """MuJoCo: where the tested policy left the body, into result; on the humanoid trap also the share of episodes
    ending in the U, past it or elsewhere, and the positions themselves (for the figure)."""
    if not score.final_positions:
        return
    final = np.asarray(score.final_positions)
    result.update(final_x=round(float(final[:, 0].mean()), 2), final_y=round(float(final[:, 1].mean()), 2))
    if env == "HumanoidTrap-v5":
        positions[label] = score.final_positions
        regions = [trap_region(x, y) for x, y in final[:, :2]]
        result.update(
            max_x=round(float(final[:, 0].max()), 2),
            regions={region: round(regions.count(region) / len(regions), 3) for region in REGIONS},
        )


def run_arms(arms, describe, base, minutes, frames, episodes, out, name, paper, args):
    """One run per arm ({label: RunConfig}) with equal budgets; curves side by side; each final elite tested at the
    training cap; ends with one JSON line (`describe` says what the arms vary)."""
    for config in arms.values():
        config.algorithm_config()  # every arm's error before the first arm trains
    curves, results, positions = {}, {}, {}
    if base.init_from is not None:  # every arm starts from one policy: where it stands on this task
        start = starting_score(base, episodes)
        with open(os.path.join(out, "start-test.json"), "w") as f:
            json.dump(start.to_json(), f, indent=1)
        results["start"] = dict(test=test_summary(start), frames=0, init_from=base.init_from)
        add_positions(results["start"], positions, "start", start, base.env)
    for label, config in arms.items():
        run_dir = os.path.join(out, label)
        history, seconds = train(config, run_dir, minutes, frames)
        if not history:
            raise SystemExit(f"{label}: no generation finished within the budget")
        curves[label] = history
        score = evaluate_run(
            run_dir,
            episodes=episodes,
            max_episode_frames=base.max_episode_frames,
            json_path=os.path.join(out, f"{label}-test.json"),
            overwrite=True,
        )
        results[label] = dict(
            test=test_summary(score),
            frames=history[-1].frames_total,
            seconds=round(seconds, 1),
            final_elite_training=history[-1].elite,
            model=config.model,
        )
        add_positions(results[label], positions, label, score, base.env)
        print(f"{label}: {history[-1].frames_total:,} frames in {seconds / 60:.1f} min; test {score.summary()}", file=sys.stderr)
    curve = write_curve(curves, out, "steps" if find_mujoco_task(base.env) is not None else "frames")
    if positions:  # the humanoid trap: where each arm's test episodes ended, with the U's walls
        describe = dict(describe, positions=os.path.join(out, "positions.png"))
        trap_positions_figure(positions).savefig(describe["positions"], dpi=120)
    models = sorted({config.model for config in arms.values()})  # the arms' own (base is the default algorithm's)
    common.record(
        {
            "benchmark": "learning",
            "mode": name,
            **describe,
            "game": base.env,
            "model": models[0] if len(models) == 1 else models,
            "budget": dict(minutes=minutes, frames=frames),
            "cores": os.cpu_count(),
            "results": results,
            "paper": paper,
            "curve": curve,
        },
        args,
    )


if __name__ == "__main__":
    main()
