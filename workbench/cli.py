"""The command line: python -m workbench train | resume | evaluate | replay | bench.

  python -m workbench train --game frostbite --algo ga --model small --population 200 --generations 10 --out runs/NAME
  python -m workbench resume runs/NAME --generations 5
  python -m workbench evaluate runs/NAME --episodes 30 --protocol deep-ga --json runs/NAME/test.json
  python -m workbench replay runs/NAME --generation 3 --out elite.gif
  python -m workbench bench --quick [--record]

Every hyperparameter of the registered algorithms (workbench.evolution.ALGORITHMS) is an option (--sigma,
--truncation, --learning-rate, --top-directions, --max-speed, ...), grouped by algorithm in `train --help` with
its description and slider range; --config FILE.json gives a RunConfig as JSON (options given on the command
line override it). MuJoCo tasks:

  python -m workbench train --env HalfCheetah-v5 --algo ars --preset paper --minutes 10 --out runs/cheetah
  python -m workbench train --env HumanoidTrap-v5 --algo es --preset pc --init-from runs/humanoid --out runs/trap
      (--init-from: start from another run's elite; workbench/training/warm_start.py)
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from workbench.checks import check_path, check_real
from workbench.evolution import ALGORITHMS, algorithm_spec
from workbench.evolution.hyperparameters import describe
from workbench.quiet import quiet_tensorflow

if TYPE_CHECKING:
    from workbench.evolution import GenerationRecord
    from workbench.training import RunConfig, Trainer
    from workbench.training.run_config import CommandLineOption


def json_value(text: str) -> Any:
    """A command-line value written in JSON (a list field: --descriptor-bounds "[[0, 1], [0, 1]]")."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise argparse.ArgumentTypeError(f"not JSON ({error.msg}): {text!r}") from None


json_value.__name__ = "json"  # the option's metavar (JSON) and argparse's "invalid json value" message


def _option_type(annotation: object) -> Any:
    """The command-line type of a config field annotated `annotation` ("float | None" -> float, "bool" -> bool,
    "list | None" -> a JSON value)."""
    if isinstance(annotation, type):  # a module without `from __future__ import annotations`
        annotation = annotation.__name__
    kinds = [part.strip().removeprefix("<class '").removesuffix("'>") for part in str(annotation).split("|")]
    kinds = [kind for kind in kinds if kind not in ("None", "NoneType")]
    return {"int": int, "float": float, "bool": bool, "list": json_value}.get(kinds[0], str) if kinds else str


def hyperparameter_groups() -> dict[type, list[str]]:
    """{config dataclass: the algorithm names that use it}, in the registry's order (read at each call: an
    algorithm registered after this module was imported gets its options too)."""
    groups: dict[type, list[str]] = {}
    for name, spec in ALGORITHMS.items():
        groups.setdefault(spec.config, []).append(name)
    return groups


def hyperparameter_options() -> dict[str, Any]:
    """{hyperparameter name: its command-line type} over every registered algorithm's config."""
    return {field.name: _option_type(field.type) for config in hyperparameter_groups() for field in dataclasses.fields(config)}


def run_setting_options() -> dict[str, CommandLineOption]:
    """{RunConfig field: its command-line option} for every field that has one (workbench/training/run_config.py)."""
    from workbench.training.run_config import RunConfig

    return {field.name: field.metadata["option"] for field in dataclasses.fields(RunConfig) if "option" in field.metadata}


def _add_run_settings(parser):
    """One option per RunConfig field that declares one: its flags, help and kind from the field."""
    from workbench.training.run_config import RunConfig

    group = parser.add_argument_group("run settings (RunConfig fields; --config and --preset give the rest)")
    fields = {field.name: field for field in dataclasses.fields(RunConfig)}
    for name, option in run_setting_options().items():
        flags = option.flags or ("--" + name.replace("_", "-"),)
        default = fields[name].default
        shown = option.show_default and default is not None and default is not False
        help = (option.help + (f" (default {default!r})" if shown else "")).replace("%", "%%")  # argparse formats help
        kind = option.kind or _option_type(fields[name].type)
        if kind is bool:
            group.add_argument(*flags, dest=name, action=argparse.BooleanOptionalAction, default=None, help=help)
        elif option.choices is not None:
            group.add_argument(*flags, dest=name, choices=option.choices(), help=help)
        else:
            metavar = option.metavar or kind.__name__.upper()
            group.add_argument(*flags, dest=name, type=kind, metavar=metavar, help=help)


def _add_train_options(parser):
    parser.add_argument("--config", help="a RunConfig as JSON (options below override it)")
    parser.add_argument("--preset", help="start from a preset: paper, pc or tutorial (--config and options override it)")
    parser.add_argument(
        "--cores", type=int, metavar="N", help="size the Atari pc preset for N cores (default: this machine's; docs/learning.md)"
    )
    _add_run_settings(parser)
    _add_hyperparameter_options(parser)
    _add_budget_options(parser)
    parser.add_argument("--out", required=True, help="run directory (created; must not hold a run already)")
    parser.add_argument(
        "--dry-run", action="store_true", help="print the resolved run's config.json and stop (nothing is written)"
    )


def _add_hyperparameter_options(parser):
    """One option per hyperparameter name, in the group of the first config that has it; its help names every
    algorithm that takes it."""
    groups, kinds, added = hyperparameter_groups(), hyperparameter_options(), set()
    users: dict[str, list[str]] = {}
    for config, names in groups.items():
        for field in dataclasses.fields(config):
            users.setdefault(field.name, []).extend(names)
    for config, names in groups.items():
        group = parser.add_argument_group(f"hyperparameters of {', '.join(names)} ({config.__name__})")
        for name, meta in describe(config).items():
            if name in added:
                continue
            added.add(name)
            aliases = ["--population"] if name == "population_size" else []
            if kinds[name] is bool:
                group.add_argument(
                    "--" + name.replace("_", "-"),
                    dest=name,
                    action=argparse.BooleanOptionalAction,
                    default=None,
                    help=f"{meta.describe()}; {', '.join(users[name])}".replace("%", "%%"),
                )
                continue
            group.add_argument(
                "--" + name.replace("_", "-"),
                *aliases,
                dest=name,
                type=kinds[name],
                metavar=kinds[name].__name__.upper(),
                help=f"{meta.describe()}; {', '.join(users[name])}".replace("%", "%%"),
            )


def _add_budget_options(parser):
    parser.add_argument("--generations", type=int, help="generations to run")
    parser.add_argument("--frames", type=int, help="frames to run")
    parser.add_argument("--minutes", type=float, help="wall-clock minutes to run")
    parser.add_argument("--checkpoint-every", type=int, default=1, help="generations between checkpoints (default 1)")
    parser.add_argument("--no-gif", action="store_true", help="do not write elite.gif at the end")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m workbench", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--verbose", action="store_true", help="show TensorFlow's log lines, and an error's traceback")
    commands = parser.add_subparsers(dest="command", required=True)
    _add_train_options(commands.add_parser("train", help="start a run"))
    resume = commands.add_parser("resume", help="continue a run from its newest checkpoint")
    resume.add_argument("run_dir")
    _add_budget_options(resume)
    evaluate = commands.add_parser("evaluate", help="score a run's elite on fresh test episodes (mean ± std)")
    evaluate.add_argument("run_dir")
    evaluate.add_argument("--generation", type=int, help="generation whose elite to score (default: the newest)")
    evaluate.add_argument("--episodes", type=int, default=30, help="test episodes (default 30)")
    evaluate.add_argument(
        "--protocol",
        default="deep-ga",
        choices=["deep-ga", "machado"],
        help="deep-ga: no sticky actions, 1-30 no-ops (default); machado: sticky actions 0.25",
    )
    evaluate.add_argument(
        "--max-episode-frames",
        type=int,
        help="test episode cap (default: ALE's 108,000 frames; the environment's own for Gymnasium)",
    )
    evaluate.add_argument("--seed", type=int, default=0, help="test seed (default 0; never a training seed)")
    evaluate.add_argument("--json", dest="json_path", help="write every episode's return and length here")
    evaluate.add_argument("--overwrite", action="store_true", help="replace an existing --json file")
    replay = commands.add_parser("replay", help="replay a run's elite and write a GIF or MP4")
    replay.add_argument("run_dir")
    replay.add_argument("--generation", type=int, help="generation whose elite to replay (default: the newest)")
    replay.add_argument("--seed", type=int, default=0, help="episode seed (default 0)")
    replay.add_argument("--out", required=True, help="output file, .gif or .mp4")
    bench = commands.add_parser("bench", help="run the throughput benchmarks (workbench.bench)")
    bench.add_argument("--quick", action="store_true")
    bench.add_argument(
        "--record",
        action="store_true",
        help="append each line to the committed results (a source checkout's experiments/results)",
    )
    bench.add_argument(
        "names", nargs="*", help="benchmarks (default: all): population_inference emulation end_to_end ray_scaling"
    )
    return parser


def explicit_fields(args: argparse.Namespace) -> dict:
    """The RunConfig fields the options of `train` give (run settings and hyperparameters), nothing else:
    --observation-normalization gives True (on, with the settings below it), --no-observation-normalization
    None (off)."""
    fields = {name: getattr(args, name) for name in run_setting_options() if getattr(args, name) is not None}
    if fields.get("observation_normalization") is False:
        fields["observation_normalization"] = None
    hyperparameters = {name: getattr(args, name) for name in hyperparameter_options() if getattr(args, name, None) is not None}
    if hyperparameters:
        fields["hyperparameters"] = hyperparameters
    return fields


def run_config_from(args: argparse.Namespace) -> RunConfig:
    """The run `train`'s options describe: workbench.training.resolve with --preset, --config, --cores and the
    options (the same run RunConfig.resolve builds from the same words). The fields the environment family chose
    are said on stderr."""
    from workbench.envs import find_env_family
    from workbench.training.resolve import resolve_run

    if args.cores is not None and not args.preset:
        raise ValueError("--cores sizes a preset: give --preset too")
    fields = explicit_fields(args)
    algorithm_spec(fields.get("algorithm", "ga"), "--algo")
    resolved = resolve_run(args.preset, config=args.config, cores=args.cores, **fields)
    defaults = resolved.family_defaults()
    if defaults:
        config = resolved.config
        said = ", ".join(f"{name} {value!r}" for name, value in defaults.items())
        preset = " or --preset" if find_env_family(config.env).presets is not None else ""
        print(
            f"{config.env}: the defaults of its family for {config.algorithm}: {said} (--model, --max-episode-frames"
            f", --[no-]observation-normalization{preset} choose others)",
            file=sys.stderr,
        )
    return resolved.config


def check_writable(option: str, path: str, *, directory: bool = False) -> None:
    """A ValueError naming `option` unless `path` can be written (a directory when `directory`, else a file in a
    folder), checked before the work whose output it will hold. Folders it makes to try are removed again (the
    writers make their own), so a refused or failed command leaves nothing behind."""
    check_path(option, path)
    folder = os.path.abspath(path if directory else os.path.dirname(os.path.abspath(path)))
    made: list[str] = []  # the folders this check makes, deepest last
    ancestor = folder
    while not os.path.exists(ancestor) and os.path.dirname(ancestor) != ancestor:
        made.insert(0, ancestor)
        ancestor = os.path.dirname(ancestor)
    try:
        if os.path.exists(path) and os.path.isdir(path) != directory:
            raise OSError(f"{'not' if directory else 'is'} a directory")
        os.makedirs(folder, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as error:
        raise ValueError(f"{option} {path}: cannot be written ({error.strerror or error})") from error
    finally:
        for made_folder in reversed(made):
            try:
                os.rmdir(made_folder)
            except OSError:
                break


def budget_of(args: argparse.Namespace) -> dict:
    """Trainer.start's budget from --generations, --frames and --minutes, checked before a run directory is
    written (SystemExit without any, ValueError naming a bad one)."""
    from workbench.training import Trainer

    if args.minutes is not None:
        check_real("--minutes", args.minutes, low=0, low_open=True)
    budget = dict(generations=args.generations, frames=args.frames, seconds=None if args.minutes is None else args.minutes * 60)
    if all(v is None for v in budget.values()):
        raise SystemExit("give a budget: --generations, --frames or --minutes")
    Trainer.check_budget(**budget)
    return budget


def train(trainer: Trainer, args: argparse.Namespace, budget: dict) -> None:
    """Runs for `budget` (budget_of) with a progress bar and a summary line per generation; writes fitness.png
    and elite.gif."""
    from tqdm import tqdm

    total = args.generations
    bar = tqdm(total=total, unit="gen", dynamic_ncols=True, disable=None)
    events = trainer.events.subscribe(kinds={"generation"})
    trainer.start(**budget)
    try:
        while trainer.running:
            event = events.get(timeout=0.5)
            if event is not None:
                _report(bar, event.data)
        for event in events.drain():
            _report(bar, event.data)
        trainer.wait()
    except KeyboardInterrupt:
        bar.write("stopping (the generation in progress is discarded; a checkpoint is written)")
    finally:
        bar.close()
        trainer.stop()  # joins the thread; checkpoints unless the newest checkpoint is already this state
    run_dir = trainer.run_dir
    assert run_dir is not None  # the command line always gives the run a directory (--out)
    outputs = [plot_history(trainer.history, os.path.join(run_dir, "fitness.png"))] if trainer.history else []
    if trainer.history and not args.no_gif and trainer.evaluator.spec.family.environments:
        try:
            from workbench.training.replay import replay_run, save_video

            outputs.append(save_video(replay_run(run_dir), os.path.join(run_dir, "elite.gif")))
        except ValueError as error:
            print(f"no elite.gif: {error}")
    names = [os.path.basename(p) for p in outputs] + ["history.jsonl", "checkpoints/", "tensorboard/"]
    print(f"run directory {trainer.run_dir}: " + ", ".join(names))


def evaluate(args: argparse.Namespace) -> None:
    """Scores a run's elite with a progress bar; prints the paper-style line."""
    from tqdm import tqdm

    from workbench.training.scoring import evaluate_run

    if args.json_path and os.path.exists(args.json_path) and not args.overwrite:
        raise ValueError(f"--json {args.json_path!r} exists already; choose another file or pass --overwrite")
    if args.json_path:
        check_writable("--json", args.json_path)  # before the episodes are played
    bar = tqdm(total=args.episodes, unit="episode", dynamic_ncols=True, disable=None)

    def progress(done, total):
        bar.update(done - bar.n)

    try:
        score = evaluate_run(
            args.run_dir,
            args.generation,
            episodes=args.episodes,
            protocol=args.protocol,
            max_episode_frames=args.max_episode_frames,
            seed=args.seed,
            json_path=args.json_path,
            overwrite=args.overwrite,
            progress=progress,
        )
    finally:
        bar.close()
    which = "newest elite" if args.generation is None else f"elite of generation {args.generation}"
    print(f"{args.run_dir} ({score.algorithm}, {score.env}), {which}: {score.summary()}")
    if args.json_path:
        print(f"episodes written to {args.json_path}")


def _report(bar, record):
    bar.update(1)
    elite = record.elite
    bar.write(
        f"generation {record.generation:>4}  max {record.max:>9.1f}  mean {record.mean:>9.1f}  "
        f"elite {elite if elite is None else round(elite, 1)!s:>9}  frames {record.frames_total:>11,}  "
        f"{record.frames_per_second:>8,.0f} frames/s" + _distribution_note(record.extras) + _archive_note(record.extras)
    )


def _archive_note(extras: dict) -> str:
    """A quality-diversity archive's QD-score, coverage and insertions, and the candidates it rejected if any."""
    if "qd_score" not in extras:
        return ""
    rejected = f", {extras['rejected']} rejected" if extras.get("rejected") else ""
    return (
        f"  QD-score {extras['qd_score']:,.0f}  coverage {extras['coverage']:.1%}  "
        f"{extras['new_cells']} cells filled, {extras['improved_cells']} improved{rejected}"
    )


def _distribution_note(extras: dict) -> str:
    """A search distribution's step size, and its restarts, repairs and non-finite returns when there are any."""
    if "step_size" not in extras:
        return ""
    counts = [f"{extras[name]} {name}" for name in ("restarts", "repairs", "nonfinite") if extras.get(name)]
    return f"  step size {extras['step_size']:.3g}" + "".join(f", {count}" for count in counts)


def plot_history(history: Sequence[GenerationRecord], path: str) -> str:
    """fitness.png of a run: the dashboard's fitness plot (max, mean, median and elite per generation)."""
    from workbench.lab.plots import FitnessPlot
    from workbench.lab.run_monitor import RunMonitor

    plot = FitnessPlot(7, 4)
    plot.update(RunMonitor(history=history))
    return plot.save(path)


def benchmark_names() -> list[str]:
    """The benchmarks `bench` runs: the modules of workbench.bench that have a main(), not their shared helpers."""
    import pathlib

    import workbench.bench

    folder = pathlib.Path(workbench.bench.__file__).parent
    return sorted(path.stem for path in folder.glob("[!_]*.py") if "\ndef main(" in path.read_text())


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "bench":  # the throughput benchmarks are the package's workbench.bench
        import difflib

        names = args.names or ["population_inference", "emulation", "end_to_end", "ray_scaling"]
        known = benchmark_names()
        for name in names:
            if name not in known:
                close = difflib.get_close_matches(name, known, n=3)
                raise SystemExit(
                    f"unknown benchmark {name!r}"
                    + (f" (did you mean {', '.join(close)}?)" if close else "")
                    + f"; the benchmarks: {', '.join(known)}"
                )
        for name in names:
            options = (["--quick"] if args.quick else []) + (["--record"] if args.record else [])
            code = subprocess.call([sys.executable, "-m", f"workbench.bench.{name}", *options])
            if code:
                return code
        return 0
    quiet_tensorflow(args.verbose)  # TensorFlow only once there is work: --help and bad options answer at once
    from workbench.training import CheckpointError, RunInUseError, Trainer, list_checkpoints

    try:
        if args.command == "train":
            config = run_config_from(args)
            if args.dry_run:
                print(json.dumps(config.to_json(), indent=2))
                return 0
            budget = budget_of(args)
            if os.path.exists(os.path.join(args.out, "config.json")):
                raise SystemExit(f"{args.out} already holds a run: resume it with `python -m workbench resume {args.out}`")
            check_writable("--out", args.out, directory=True)
            trainer = Trainer.from_config(config, run_dir=args.out, checkpoint_every=args.checkpoint_every)
            train(trainer, args, budget)
        elif args.command == "evaluate":
            evaluate(args)
        elif args.command == "resume":
            budget = budget_of(args)
            started = bool(list_checkpoints(args.run_dir))
            trainer = Trainer.resume_from(args.run_dir, checkpoint_every=args.checkpoint_every)
            if started:
                print(f"resuming {args.run_dir} at generation {trainer.generation}")
            else:
                print(
                    f"{args.run_dir} has no checkpoint yet (it stopped during its first generation): starting it "
                    "again from generation 0 with its config"
                )
            train(trainer, args, budget)
        else:
            from workbench.training.replay import check_video_path, replay_run, save_video

            check_video_path("--out", args.out)  # before the episode is played
            check_writable("--out", args.out)
            episode = replay_run(args.run_dir, args.generation, seed=args.seed)
            save_video(episode, args.out)
            print(f"{args.out}: {len(episode.actions)} steps, score {episode.score:g}")
    except (ValueError, TypeError, CheckpointError, FileNotFoundError, RunInUseError) as error:  # named by the checks
        if args.verbose:
            raise
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0
