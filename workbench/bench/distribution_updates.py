"""Benchmark: what the CMA family's update costs on a million-parameter Atari network, against a generation.

The strategies whose distribution scales to a network (sep-cma-es, snes, cem, cr-fm-nes: per-parameter scales,
CR-FM-NES's also a rank-one direction) on the SmallModel's space of an Atari game (1,008,450 parameters) with the
`pc` preset's population (200 on 2 cores). Each strategy's tell() of one generation (ranking, reading the
members' draws back from the noise table, the update in float64, the next generation's base and its key) is
timed in interleaved rounds (median of each). Measured in the same run:
  limit_seconds        the floor of any of these updates: one pass over the generation's draws, sum_k w_k z_k
                       read back from the noise table into float64 (the least an update must read)
  update_seconds       each strategy's tell()
and, as the generation it is a part of, generation_seconds: the median wall seconds per generation of the `pc`
GA's committed Atari suite runs (experiments/results/atari_suite.jsonl; --generation-seconds otherwise). The
goal is each update within 5 % of a generation (`of_generation` <= 0.05); `vs_limit` says how far above the
floor an update is. Prints a table, then one JSON line.

  python -m workbench.bench.distribution_updates [--quick | --smoke] [--game frostbite] [--rounds 3]
"""

import os
import statistics
import time

from workbench.bench import common

common.quiet_start()

import numpy as np  # noqa: E402

from workbench.evaluation import RunSpec  # noqa: E402
from workbench.evolution import ALGORITHMS, EvaluationResult, NoiseTable, ParameterSpace  # noqa: E402
from workbench.training import RunConfig  # noqa: E402

STRATEGIES = ("sep-cma-es", "snes", "cem", "cr-fm-nes")
TARGET = 0.05  # of a generation's wall time
MODES = {  # parameters (None: the game's SmallModel), population (None: the pc preset's), rounds
    "full": (None, None, 3),
    "quick": (None, 50, 2),
    "smoke": (20_000, 16, 1),
}


def suite_generation_seconds() -> float | None:
    """The median wall seconds per generation of the pc GA's full Atari suite runs in the committed results."""
    path = os.path.join(common.results_folder(), "atari_suite.jsonl")
    if not os.path.exists(path):
        return None
    runs = [
        line
        for line in common.read_lines(path, "atari_suite")
        if line.get("mode") == "full" and line.get("preset") == "pc" and line.get("algorithm") == "ga" and line.get("generations")
    ]
    return statistics.median(line["seconds"] / line["generations"] for line in runs) if runs else None


def space_of(game: str, parameters: int | None) -> ParameterSpace:
    """The SmallModel's space of `game` (the run's default noise table), or a flat one of `parameters` (smoke)."""
    if parameters is None:
        return RunSpec(game, "small").space()
    return ParameterSpace(NoiseTable.shared(2**20, seed=1), np.full(parameters, 0.01, np.float32))  # a small table


def one_update(strategy, rng) -> float:
    """The seconds of one generation's tell() (random fitness: ranking does not change the work)."""
    requests = strategy.ask()
    results = [EvaluationResult([float(v)] * r.episodes) for v, r in zip(rng.normal(size=len(requests)), requests)]
    start = time.perf_counter()
    strategy.tell(results)
    return time.perf_counter() - start


def read_pass(space: ParameterSpace, population: int, rng) -> float:
    """The floor: sum_k w_k z_k over `population` noise slices read into float64, in chunks of 32 rows."""
    n = space.num_parameters
    offsets = [space.sample_offset(rng) for _ in range(population)]
    weights = rng.normal(size=population)
    buffer, total = np.empty((32, n)), np.zeros(n)
    start = time.perf_counter()
    for first in range(0, population, 32):
        rows = offsets[first : first + 32]
        for row, offset in zip(buffer, rows):
            row[:] = space.noise.slice(offset, n)
        total += weights[first : first + len(rows)] @ buffer[: len(rows)]
    return time.perf_counter() - start


def main(argv=None):
    parser = common.parser(
        __doc__,
        quick="population 50, 2 rounds",
        smoke="20,000 parameters, population 16, 1 round: checks the script runs",
    )
    parser.add_argument("--game", default="frostbite", help="the Atari game whose SmallModel sets the space (default frostbite)")
    parser.add_argument("--rounds", type=common.positive_int, help="interleaved timing rounds (default: the mode's)")
    parser.add_argument(
        "--generation-seconds",
        type=float,
        help="a generation's wall time to compare with (default: the median of the committed pc GA suite runs)",
    )
    args = parser.parse_args(argv)
    mode = common.mode_of(args)
    if args.generation_seconds is not None and not args.generation_seconds > 0:
        parser.error(f"--generation-seconds must be > 0, got {args.generation_seconds}")
    try:
        from workbench.envs import resolve_atari_game

        game = resolve_atari_game(args.game)
    except ValueError as error:
        parser.error(f"--game: {error}")
    parameters, population, rounds = MODES[mode]
    rounds = args.rounds or rounds
    if population is None:
        population = RunConfig.resolve("pc", env=game, algorithm="sep-cma-es", cores=2).hyperparameters["population_size"]
    space = space_of(game, parameters)
    rng = np.random.default_rng(0)
    strategies = {
        name: ALGORITHMS[name].strategy(
            ALGORITHMS[name].config_for(dict(population_size=population, sigma_init=0.005)), space, seed=0
        )
        for name in STRATEGIES
    }
    candidates = {name: (lambda s=strategy: one_update(s, rng)) for name, strategy in strategies.items()}
    candidates["limit"] = lambda: read_pass(space, population, rng)
    times: dict[str, list] = {name: [] for name in candidates}
    for candidate in candidates.values():  # a warm-up each: first touches of the noise table and buffers
        candidate()
    for _ in range(rounds):
        for name, candidate in candidates.items():
            times[name].append(candidate())
    limit = statistics.median(times.pop("limit"))
    generation = args.generation_seconds or suite_generation_seconds()
    report: dict = dict(
        benchmark="distribution_updates",
        mode=mode,
        game=game,
        parameters=space.num_parameters,
        population=population,
        rounds=rounds,
        limit_seconds=round(limit, 4),
        generation_seconds=None if generation is None else round(generation, 1),
        target_of_generation=TARGET,
        strategies={},
    )
    print(f"{space.num_parameters:,} parameters, population {population}, {rounds} rounds; floor {limit:.3f} s")
    for name, measured in times.items():
        seconds = statistics.median(measured)
        entry = dict(update_seconds=round(seconds, 4), vs_limit=round(seconds / limit, 2))
        if generation is not None:
            entry["of_generation"] = round(seconds / generation, 4)
        report["strategies"][name] = entry
        share = f", {100 * seconds / generation:.2f} % of a {generation:.0f} s generation" if generation else ""
        print(f"  {name:12s} {seconds:7.3f} s  ({seconds / limit:.1f} x the floor{share})")
    if generation is not None:
        worst = max(entry["of_generation"] for entry in report["strategies"].values())
        report["worst_of_generation"], report["target_met"] = worst, worst <= TARGET
    common.record(report, args)


if __name__ == "__main__":
    main()
