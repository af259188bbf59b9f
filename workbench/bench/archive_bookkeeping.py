"""Benchmark: what a quality-diversity archive of 10,000 cells costs per generation, against the generation.

MAP-Elites's archive work in a generation: draw the batch's parents (archive.sample), insert the batch's
candidates (archive.add: cells, thresholds, the winners) and read the record's figures (archive.statistics).
Timed in interleaved rounds (medians) on the same stream of batches (descriptors drawn so that most land in
occupied cells, as late in a run), for a grid archive (100 x 100 over two dimensions) and a CVT archive (10,000
cells over Ant's four feet), each filled first by the same stream. Measured in the same run:
  limit_seconds       the least an insertion does: the batch's cells (index_of) and one scatter of the
                      objectives (numpy.maximum.at)
  reference_seconds   pyribs 0.12's add() and stats on the same batches (when ribs is installed)
  ours_seconds        our sample + add + statistics
and generation_seconds: the wall time of one generation of the `pc` MAP-Elites preset on Ant-v5 (its batch of
children evaluated by this machine's evaluator; the quick and smoke modes shorten the episodes). The goal is the
archive's work within 5 % of a generation (`of_generation` <= 0.05). CMA-ME and CMA-MAE do more than the archive:
`strategies` holds the whole of their ask and tell per generation (5 sep-CMA-ES emitters of 20 on the Ant
network's parameters, the members' bases, both archives of CMA-MAE, the bases the elites keep, the emitters'
updates and restarts) on the 4-D CVT archive of 10,000 cells, filled first by the strategy itself, its members'
returns and descriptors drawn at random. Prints a table, then one JSON line.

  python -m workbench.bench.archive_bookkeeping [--quick | --smoke] [--rounds 5]
"""

import statistics
import time

from workbench.bench import common

common.quiet_start()

import numpy as np  # noqa: E402

from workbench.evolution.archive import CVTArchive, GridArchive, cvt_centroids  # noqa: E402

TARGET = 0.05  # of a generation's wall time
CELLS = 10_000
MODES = {  # batch, generations per round, rounds, episode cap of the measured generation, its batch
    "full": (100, 20, 5, 1000, None),
    "quick": (100, 10, 3, 200, 32),
    "smoke": (16, 2, 1, 20, 8),
}


def archives(smoke: bool) -> dict:
    """The two archives of CELLS cells (fewer in a smoke run): their factories, so every candidate gets its own."""
    cells = 400 if smoke else CELLS
    side = int(round(cells**0.5))
    centroids = cvt_centroids(cells, [[0, 1]] * 4, seed=0)
    return {
        "grid 2-D": (lambda: GridArchive([side, side], [[0, 1]] * 2), 2, ("grid", [side, side])),
        "cvt 4-D": (lambda: CVTArchive(centroids, [[0, 1]] * 4), 4, ("cvt", centroids)),
    }


def batches(dimensions: int, size: int, count: int, seed: int) -> list:
    """`count` batches of (descriptors [size, d] in [0, 1], objectives [size])."""
    rng = np.random.default_rng(seed)
    return [(rng.beta(2, 2, size=(size, dimensions)), rng.normal(size=size)) for _ in range(count)]


def ours(make, stream):
    archive = make()
    rng = np.random.default_rng(0)

    def run(batches_):
        start = time.perf_counter()
        for generation, (descriptors, objectives) in enumerate(batches_):
            if archive.size:
                archive.sample(rng, len(objectives))
            archive.add(range(len(objectives)), objectives, descriptors, generation)
            archive.statistics()
        return time.perf_counter() - start

    return archive, run


def reference(kind, stream):
    try:
        from ribs.archives import CVTArchive as RibsCVT
        from ribs.archives import GridArchive as RibsGrid
    except ImportError:
        return None, None
    name, geometry = kind
    dimensions = stream[0][0].shape[1]
    ranges = [(0.0, 1.0)] * dimensions
    if name == "grid":
        archive = RibsGrid(solution_dim=1, dims=geometry, ranges=ranges)
    else:
        archive = RibsCVT(solution_dim=1, centroids=geometry, ranges=ranges)

    def run(batches_):
        start = time.perf_counter()
        for descriptors, objectives in batches_:
            if not archive.empty:
                archive.sample_elites(len(objectives))
            archive.add(np.zeros((len(objectives), 1)), objectives, descriptors)
            archive.stats  # noqa: B018 - the figures a record reads
        return time.perf_counter() - start

    return archive, run


def limit(make):
    archive = make()
    best = np.full(archive.cells, -np.inf)

    def run(batches_):
        start = time.perf_counter()
        for descriptors, objectives in batches_:
            np.maximum.at(best, archive.index_of(descriptors), objectives)
        return time.perf_counter() - start

    return run


def strategy_generation(algorithm: str, space, cells: int):
    """CMA-ME's or CMA-MAE's strategy on `space` over a 4-D CVT archive of `cells`, and run(generations): the seconds
    of that many generations of ask, bases and tell, with random returns and descriptors."""
    from workbench.evolution import ALGORITHMS, EvaluationResult

    spec = ALGORITHMS[algorithm]
    settings = dict(emitters=5, population_size=20, archive="cvt", cells=cells, descriptor_bounds=[[0, 1]] * 4)
    strategy = spec.strategy(spec.config_for(dict(settings, qd_score_offset=-3240.0)), space, seed=0)
    rng = np.random.default_rng(3)

    def run(generations: int) -> float:
        start = time.perf_counter()
        for _ in range(generations):
            requests = strategy.ask()
            strategy.bases()
            results = [
                EvaluationResult([value], descriptor[None])
                for value, descriptor in zip(rng.normal(size=len(requests)), rng.beta(2, 2, size=(len(requests), 4)))
            ]
            strategy.tell(results)
        return time.perf_counter() - start

    return strategy, run


def generation_seconds(cap: int, batch: int | None):
    """(seconds, episodes, steps, space) of one evaluation of a batch of MAP-Elites children on Ant-v5, pc preset."""
    from workbench.training import RunConfig

    hyperparameters = {} if batch is None else dict(population_size=batch, initial_population=batch)
    config = RunConfig.from_preset(
        "pc", "map-elites", env="Ant-v5", max_episode_frames=cap, hyperparameters=dict(hyperparameters, cells=64)
    )
    strategy, evaluator = config.build()
    try:
        strategy.tell(evaluator.evaluate(strategy.ask(), bases=strategy.bases()))  # generation 0: warms the evaluator
        requests = strategy.ask()
        start = time.perf_counter()
        results = evaluator.evaluate(requests, seed=1, bases=strategy.bases())
        seconds = time.perf_counter() - start
    finally:
        evaluator.close()
    steps = sum(int(np.sum(np.asarray(r.steps))) for r in results if r.steps is not None)
    return seconds, len(requests), steps, strategy.space


def main(argv=None):
    parser = common.parser(
        __doc__,
        quick="10 generations a round, 3 rounds; a generation of 32 Ant episodes capped at 200 steps",
        smoke="400 cells, batches of 16, one round: checks the script runs",
    )
    parser.add_argument("--rounds", type=common.positive_int, help="interleaved timing rounds (default: the mode's)")
    args = parser.parse_args(argv)
    mode = common.mode_of(args)
    batch, per_round, rounds, cap, generation_batch = MODES[mode]
    rounds = args.rounds or rounds
    generation, episodes, steps, space = generation_seconds(cap, generation_batch)
    report: dict = dict(
        benchmark="archive_bookkeeping",
        mode=mode,
        batch=batch,
        generations_per_round=per_round,
        rounds=rounds,
        generation_seconds=round(generation, 3),
        generation_episodes=episodes,
        generation_steps=steps,
        target_of_generation=TARGET,
        archives={},
    )
    print(f"a generation of {episodes} Ant episodes ({steps:,} steps): {generation:.2f} s")
    for name, (make, dimensions, kind) in archives(mode == "smoke").items():
        fill = batches(dimensions, 1000, 30, seed=1)  # the archive as late in a run: most cells occupied
        stream = batches(dimensions, batch, per_round * rounds, seed=2)
        ours_archive, ours_run = ours(make, stream)
        ours_run(fill)
        reference_archive, reference_run = reference(kind, stream)
        candidates = {"ours": ours_run, "limit": limit(make)}
        if reference_run is not None:
            reference_run(fill)
            candidates["reference"] = reference_run
        chunks = [stream[k * per_round : (k + 1) * per_round] for k in range(rounds)]
        times: dict[str, list] = {key: [] for key in candidates}
        for chunk in chunks:  # interleaved: each round's generations, by each candidate in turn
            for key, run in candidates.items():
                times[key].append(run(chunk) / per_round)
        medians = {key: statistics.median(values) for key, values in times.items()}
        entry = dict(
            cells=ours_archive.cells,
            occupied=ours_archive.size,
            ours_seconds=round(medians["ours"], 6),
            limit_seconds=round(medians["limit"], 6),
            vs_limit=round(medians["ours"] / medians["limit"], 2),
            of_generation=round(medians["ours"] / generation, 5),
        )
        if "reference" in medians:
            entry["reference_seconds"] = round(medians["reference"], 6)
            entry["vs_reference"] = round(medians["ours"] / medians["reference"], 2)
        report["archives"][name] = entry
        versus = f", pyribs {1e3 * medians['reference']:.2f} ms" if "reference" in medians else ""
        print(
            f"  {name}: {ours_archive.size:,} of {ours_archive.cells:,} cells occupied; ours {1e3 * medians['ours']:.2f} ms a "
            f"generation (floor {1e3 * medians['limit']:.2f} ms{versus}); {100 * entry['of_generation']:.3f} % of the generation"
        )
    report["strategies"] = {}
    for algorithm in ("cma-me", "cma-mae"):
        strategy, run = strategy_generation(algorithm, space, 400 if mode == "smoke" else CELLS)
        run(3 if mode == "smoke" else 150)  # fill the archive first, as late in a run
        seconds = statistics.median(run(per_round) / per_round for _ in range(rounds))
        report["strategies"][f"{algorithm} cvt 4-D"] = entry = dict(
            cells=strategy.archive.cells,
            occupied=strategy.archive.size,
            parameters=space.num_parameters,
            bases_kept=len(strategy.bases_kept),
            ours_seconds=round(seconds, 6),
            of_generation=round(seconds / generation, 5),
        )
        print(
            f"  {algorithm}: {strategy.archive.size:,} of {strategy.archive.cells:,} cells occupied, {len(strategy.bases_kept)} "
            f"bases kept; ask + tell {1e3 * seconds:.2f} ms a generation; {100 * entry['of_generation']:.3f} % of the generation"
        )
    worst = max(entry["of_generation"] for group in ("archives", "strategies") for entry in report[group].values())
    report["worst_of_generation"], report["target_met"] = worst, worst <= TARGET
    common.record(report, args)


if __name__ == "__main__":
    main()
