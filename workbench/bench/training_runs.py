"""Benchmark: a training run's frames/s against the bare evaluator loop on the same work, and where the time goes.

Users run training, not benchmarks. This benchmark runs the same GA generations (the `pc` preset: population
200, 20 parents, 5 elite candidates x 5 episodes, 20,000-frame cap, 2 sub-populations of 16 slots, SmallModel)
three ways, generation by generation in rotating order so all see the same machine load:
  evaluator  the loop workbench/bench/end_to_end.py times (its pipelined candidate): strategy.ask(), Evaluator.evaluate(),
             strategy.tell(), nothing else
  training   a Trainer with a run directory driven as `python -m workbench train` drives it: a background
             thread, a checkpoint and the JSONL/TensorBoard logs every generation, the caller's thread
             waiting for generation events
  in_order   the evaluator loop with episodes started in request order instead of the longest expected first
             (evaluation.schedule): longest_first_vs_in_order is what the schedule buys
All start from the same state with the same seeds, so they play the same episodes (checked: a benchmark of
different work is void); the ratio training / evaluator is the cost of being a training run (target >= 0.85).
Each round (the population round, the elite round) is split into its busy phase, where every episode slot
runs, and its tail, where slots run dry (workbench.evaluation.telemetry): busy_fps is the rate a round would
have without a tail, and evaluator_vs_busy is what the tails cost a generational algorithm.

Early generations play short episodes; a trained population's are long (a Frostbite elite plays 10,000+
frames). --from-run DIR starts both arms from a run directory's newest checkpoint (e.g. the 2-hour run of
experiments/learning.py); --warmup N trains N generations first, unmeasured.

  python -m workbench.bench.training_runs [--quick | --smoke] [--games frostbite pong] [--generations 4]
                                [--from-run DIR] [--warmup N]
Ends with one JSON line.
"""

import os
import shutil
import tempfile
import time

from workbench.bench import common

common.quiet_start()

from workbench.envs import resolve_atari_game  # noqa: E402
from workbench.envs.rng import episode_seed  # noqa: E402
from workbench.training import RunConfig, Trainer  # noqa: E402
from workbench.training.checkpoint import load_checkpoint  # noqa: E402

TARGET = 0.85  # training / evaluator
SETTINGS = {
    "smoke": dict(
        generations=1,
        overrides=dict(
            max_episode_frames=400,
            slots=4,
            hyperparameters=dict(population_size=12, truncation=4, elite_candidates=2, elite_episodes=2),
        ),
    ),
    "quick": dict(generations=2, overrides=dict(max_episode_frames=4000, hyperparameters=dict(population_size=64))),
    "full": dict(generations=4, overrides={}),
}


class EvaluatorLoop:
    """The bare loop: ask, evaluate, tell; the episode seeds the Trainer uses. longest_first=False: episodes start
    in request order (the evaluator's schedule off)."""

    def __init__(self, config, state=None, longest_first=True):
        self.strategy, self.evaluator = config.build()
        if not longest_first:
            self.evaluator.episode_lengths = None  # what Evaluator(longest_first=False) builds
        if state is not None:
            self.strategy = type(self.strategy).from_state(state["strategy"], self.evaluator.space)
        self.seed = config.seed

    def generation(self):
        """Runs one generation; returns [(phase, Telemetry)] of its rounds."""
        target, rounds = self.strategy.generation + 1, []
        while self.strategy.generation < target:
            phase = self.strategy.phase
            requests = self.strategy.ask()
            seed = episode_seed(self.seed, self.strategy.generation, len(rounds))
            results = self.evaluator.evaluate(requests, seed=seed, bases=self.strategy.bases())
            self.strategy.tell(results)
            rounds.append((phase, self.evaluator.telemetry))
        return rounds

    def close(self):
        self.evaluator.close()


class TrainingRun:
    """A Trainer with a run directory, driven as the CLI drives it (background thread, generation events)."""

    def __init__(self, config, run_dir, from_run=None):
        if from_run is not None:
            shutil.copytree(from_run, run_dir)
            self.trainer = Trainer.resume_from(run_dir)
        else:
            self.trainer = Trainer.from_config(config, run_dir=run_dir)
        self.events = self.trainer.events.subscribe(kinds={"generation"})

    def generation(self):
        self.trainer.start(generations=1)
        while self.trainer.running:
            self.events.get(timeout=0.5)
        self.events.drain()
        self.trainer.wait()
        return self.trainer.history[-1]

    def close(self):
        self.trainer.close()


def round_summary(rounds):
    """Per phase: seconds, frames, episodes, tail seconds, busy-phase frames/s, over all generations."""
    out = {}
    for phase, t in rounds:
        entry = out.setdefault(
            phase, dict(rounds=0, episodes=0, frames=0, seconds=0.0, tail_seconds=0.0, busy_seconds=0.0, busy_frames=0.0)
        )
        entry["rounds"] += 1
        entry["episodes"] += t.episodes
        entry["frames"] += t.frames
        entry["seconds"] += t.wall_seconds
        entry["tail_seconds"] += t.tail_seconds
        entry["busy_seconds"] += t.busy_seconds
        entry["busy_frames"] += t.busy_frames
    for entry in out.values():
        entry["fps"] = round(entry["frames"] / entry["seconds"], 1) if entry["seconds"] else 0.0
        entry["busy_fps"] = round(entry.pop("busy_frames") / entry["busy_seconds"], 1) if entry["busy_seconds"] else 0.0
        entry["tail_share"] = round(entry["tail_seconds"] / entry["seconds"], 3) if entry["seconds"] else 0.0
        for key in ("seconds", "tail_seconds", "busy_seconds"):
            entry[key] = round(entry[key], 2)
    return out


def bench_game(game, settings, generations, from_run, warmup, seed, work_dir):
    if from_run is not None:
        config = RunConfig.from_run_dir(from_run)
        if resolve_atari_game(config.env) != game:
            raise SystemExit(f"--from-run {from_run} is a run on {config.env}, not {game}")
        _, state = load_checkpoint(from_run)
    else:
        overrides = dict(settings["overrides"])
        config = RunConfig.from_preset("pc", algorithm="ga", env=game, seed=seed, **overrides)
        state = None
    training = TrainingRun(config, os.path.join(work_dir, game), from_run)
    evaluator = EvaluatorLoop(config, state)
    in_order = EvaluatorLoop(config, state, longest_first=False)
    arms = ("training", "evaluator", "in_order")
    try:
        for _ in range(warmup):
            training.generation()
            evaluator.generation()
            in_order.generation()
        walls = {arm: [] for arm in arms}
        frames, record_seconds, rounds, in_order_rounds, round_seconds = [], [], [], [], 0.0
        for g in range(generations):
            for arm in arms[g % 3 :] + arms[: g % 3]:  # each arm first in turn
                start = time.perf_counter()
                if arm == "training":
                    record = training.generation()
                elif arm == "evaluator":
                    parts = evaluator.generation()
                else:
                    unordered = in_order.generation()
                walls[arm].append(time.perf_counter() - start)
            for loop, loop_parts in ((evaluator, parts), (in_order, unordered)):
                mine = loop.strategy.history[-1]
                if (record.max, record.mean, record.elite, record.frames) != (
                    mine.max,
                    mine.mean,
                    mine.elite,
                    sum(t.frames for _, t in loop_parts),
                ):
                    raise AssertionError(
                        f"generation {record.generation}: the training run and an evaluator loop "
                        "played different episodes; a benchmark of different work is void"
                    )
            frames.append(record.frames)
            record_seconds.append(record.seconds)
            round_seconds += sum(r["seconds"] for r in record.rounds)
            rounds += parts
            in_order_rounds += unordered
            print(
                f"{game} generation {record.generation}: {record.frames:,} frames; training "
                f"{record.frames / walls['training'][-1]:,.0f} frames/s (record {record.frames_per_second:,.0f}), "
                f"evaluator {record.frames / walls['evaluator'][-1]:,.0f}; "
                + ", ".join(
                    f"{r['phase']} {r['seconds']:.1f} s (tail {r['tail_seconds']:.1f} s, busy "
                    f"{r['busy_frames_per_second']:,.0f} frames/s)"
                    for r in record.rounds
                ),
                flush=True,
            )
    finally:
        training.close()
        evaluator.close()
        in_order.close()
    total = sum(frames)
    in_order_fps = total / sum(walls["in_order"])
    training_fps = total / sum(walls["training"])
    evaluator_fps = total / sum(walls["evaluator"])
    busy_seconds = sum(t.busy_seconds for _, t in rounds)
    busy_fps = sum(t.busy_frames for _, t in rounds) / busy_seconds if busy_seconds else 0.0
    return {
        "generations": generations,
        "start": "checkpoint" if from_run else f"generation {warmup}",
        "frames": total,
        "training_fps": round(training_fps, 1),
        "training_record_fps": round(total / sum(record_seconds), 1),  # what history.jsonl says
        # per generation, the training arm's seconds outside its record's (checkpoint, logs, thread, events)
        "training_overhead_seconds": round((sum(walls["training"]) - sum(record_seconds)) / generations, 3),
        # and inside it but outside the rounds (ask, tell, statistics): the record's seconds minus the rounds'
        "strategy_seconds": round((sum(record_seconds) - round_seconds) / generations, 3),
        "evaluator_fps": round(evaluator_fps, 1),
        "busy_fps": round(busy_fps, 1),
        "training_vs_evaluator": round(training_fps / evaluator_fps, 3),
        "evaluator_vs_busy": round(evaluator_fps / busy_fps, 3) if busy_fps else None,
        "in_order_fps": round(in_order_fps, 1),
        "longest_first_vs_in_order": round(evaluator_fps / in_order_fps, 3),
        "target_met": training_fps / evaluator_fps >= TARGET,
        "rounds": round_summary(rounds),
        "in_order_rounds": round_summary(in_order_rounds),
        "layout": dict(
            subpopulations=config.subpopulations,
            slots=config.slots,
            max_episode_frames=config.max_episode_frames,
            model=config.model,
            population_size=evaluator.strategy.config.population_size,
        ),
    }


def main(argv=None):
    parser = common.parser(
        __doc__, quick="population 64, 4,000-frame cap, 2 generations", smoke="tiny sizes: checks the script runs"
    )
    parser.add_argument("--games", nargs="+", default=["frostbite", "pong"], help="Atari games (default frostbite pong)")
    parser.add_argument("--generations", type=int, default=None, help="measured generations (default: the mode's)")
    parser.add_argument(
        "--from-run", default=None, help="start from this run directory's newest checkpoint (one game: the run's)"
    )
    parser.add_argument("--warmup", type=int, default=0, help="generations trained first, unmeasured")
    parser.add_argument("--seed", type=common.seed_int, default=0)
    args = parser.parse_args(argv)
    mode_name = common.mode_of(args)
    settings = SETTINGS[mode_name]
    generations = settings["generations"] if args.generations is None else args.generations
    if generations < 1:
        parser.error("--generations must be >= 1")
    if args.warmup < 0:
        parser.error("--warmup must be >= 0")
    try:
        games = [resolve_atari_game(game) for game in args.games]
    except ValueError as error:
        parser.error(str(error))
    if args.from_run is not None:
        if not os.path.isdir(args.from_run):
            parser.error(f"--from-run {args.from_run!r} is not a directory")
        if len(games) != 1:
            parser.error("--from-run starts one game's run: give that game alone with --games")
    work_dir = tempfile.mkdtemp(prefix="workbench-training-runs-")
    try:
        results = {
            game: bench_game(game, settings, generations, args.from_run, args.warmup, args.seed, work_dir) for game in games
        }
    finally:
        shutil.rmtree(work_dir, ignore_errors=True)
    print(f"{'game':<10}{'training':>12}{'evaluator':>12}{'busy phase':>12}   training/evaluator  evaluator/busy")
    for game, r in results.items():
        print(
            f"{game:<10}{r['training_fps']:>12,.0f}{r['evaluator_fps']:>12,.0f}{r['busy_fps']:>12,.0f}"
            f"   {r['training_vs_evaluator']:>18.3f}  {r['evaluator_vs_busy']!s:>14}"
        )
        for phase, entry in r["rounds"].items():
            unordered = r["in_order_rounds"][phase]
            print(
                f"  {phase:<16} {entry['seconds']:>8.1f} s, tail {entry['tail_share']:.0%}, "
                f"busy {entry['busy_fps']:,.0f} frames/s, overall {entry['fps']:,.0f}; in request order "
                f"{unordered['seconds']:.1f} s, tail {unordered['tail_share']:.0%}"
            )
        print(
            f"  longest first / in request order: {r['longest_first_vs_in_order']:.3f}; per generation the "
            f"training run spent {r['training_overhead_seconds']:.2f} s outside its record (checkpoint, logs, "
            f"events) and {r['strategy_seconds']:.2f} s in it outside the rounds (ask, tell)"
        )
    summary = {
        "benchmark": "training_runs",
        "mode": mode_name,
        "unit": "frames/s",
        "cores": os.cpu_count(),
        "targets": {"training_vs_evaluator": TARGET},
        "results": results,
    }
    common.record(summary, args)
    return summary


if __name__ == "__main__":
    main()
