"""Quality diversity at equal episodes on one evaluator: ours against pyribs's schedulers driving this workbench's
evaluator through ask/tell, QD-score and coverage per episode spent.

Every method plays the same network, episode cap and descriptor (the MuJoCo "pc" preset of the quality-diversity
groups: a 64-64 MLP, 1,000 steps, each foot's share of the steps on the ground, a CVT archive of 1,024 cells over
it with QDax's QD-score offset) on the same evaluator (RunConfig.build), 100 episodes a generation:

  map-elites         ours: Iso+LineDD (sigma 0.005, line 0.05), 100 random network initialisations first
  cma-me, cma-mae    ours: 5 sep-CMA-ES emitters of 20 from zero weights, sigma_init 0.05
  ribs-map-elites    pyribs's IsoLineEmitter (the same sigmas, batch 100, the same 100 initialisations first)
  ribs-cma-me        pyribs's EvolutionStrategyEmitter x 5 (sep_cma_es, batch 20, sigma0 0.05, x0 zero; 2imp, filter,
                     no_improvement)
  ribs-cma-mae       the same with imp, mu, basic and an archive learning rate of 0.01 (threshold_min: the offset),
                     scored on a result archive
  nsr-es             ours, the pc preset (population 200, 3 centers); scored by filing every member it played into
                     an archive of the same cells (it keeps none of its own): what its search visited

pyribs's solutions ship as dense bases (one per member); ours as their genomes. The archives of both sides are
the same CVT cells (our centroids handed to ribs's CVTArchive). Each run appends one line to
experiments/results/qd_compare.jsonl with its curve (episodes, QD-score, coverage, best return per generation);
experiments/render_qd_compare.py draws the curves and writes docs/qd_compare.md.

    python experiments/qd_compare.py cma-me --task Walker2d-v5 --seed 0 --episodes 10000

A stopped run resumes: ours from their checkpoints, pyribs's from a pickle of its scheduler (pyribs's own objects;
a scratch file under the run folder, never a workbench checkpoint) written every 10 generations; nsr-es (its
scoring archive is outside the trainer) runs again from the start.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import sys
import time

import _checkout  # noqa: F401, I001  (this checkout's package first on sys.path)
import numpy as np  # noqa: E402

from workbench.bench import common  # noqa: E402

OURS = ("map-elites", "cma-me", "cma-mae", "nsr-es")
RIBS = ("ribs-map-elites", "ribs-cma-me", "ribs-cma-mae")
TASKS = ("Walker2d-v5", "Ant-v5")
HERE = os.path.dirname(os.path.abspath(__file__))
RUNS = os.path.join(HERE, "results", "qd_runs")
RESULTS = os.path.join(HERE, "results", "qd_compare.jsonl")
PRESET = "pc"


def run_config(method: str, task: str, seed: int):
    """The RunConfig of `method` on `task` (ribs methods: ours of the same group, for the evaluator and the archive)."""
    from workbench.training import RunConfig

    algorithm = {"ribs-map-elites": "map-elites", "ribs-cma-me": "cma-me", "ribs-cma-mae": "cma-mae"}.get(method, method)
    changes = dict(behaviour="feet_contact") if method == "nsr-es" else {}
    return RunConfig.from_preset(PRESET, algorithm, env=task, seed=seed, **changes)


def scoring_archive(task: str, seed: int):
    """The archive every method is scored on: the map-elites preset's (the same cells and offset for all)."""
    from workbench.evolution.quality_diversity import make_archive

    return make_archive(run_config("map-elites", task, seed).algorithm_config())


def run_ours(method: str, task: str, seed: int, episodes: int, folder: str) -> list[dict]:
    """Trains our method until `episodes` are spent (resuming its checkpoints); the curve of the scoring archive."""
    from workbench.training import Trainer

    run_dir = os.path.join(folder, "run")
    if os.path.isdir(os.path.join(run_dir, "checkpoints")):
        trainer = Trainer.resume_from(run_dir)
    else:
        config = run_config(method, task, seed)
        strategy, evaluator = config.build()
        trainer = Trainer(strategy, evaluator, run_dir=run_dir, config=config, checkpoint_every=5)
    with trainer:
        while sum(r.evaluations for r in trainer.history) < episodes:
            trainer.run(generations=1)
        trainer.checkpoint()
        return curve_of(trainer.history)


def curve_of(history) -> list[dict]:
    """Per generation: episodes so far, QD-score, coverage, the archive's best (records of a QD strategy)."""
    curve, spent = [], 0
    for record in history:
        spent += record.evaluations
        extras = record.extras
        curve.append(dict(episodes=spent, qd_score=extras["qd_score"], coverage=extras["coverage"], best=record.elite))
    return curve


def run_ribs(method: str, task: str, seed: int, episodes: int, folder: str) -> list[dict]:
    """pyribs's scheduler on our evaluator until `episodes` are spent."""
    from ribs.archives import CVTArchive
    from ribs.emitters import EvolutionStrategyEmitter, IsoLineEmitter
    from ribs.schedulers import Scheduler

    from workbench.envs.rng import episode_seed
    from workbench.evolution import Genome, GenomeDecoder, base_key
    from workbench.evolution.strategy import EvaluationRequest

    config = run_config(method, task, seed)
    strategy, evaluator = config.build()  # our strategy only for its space and initial population
    hyper = config.algorithm_config()
    space = strategy.space
    n = space.num_parameters
    ours_archive = scoring_archive(task, seed)
    state_file = os.path.join(folder, "ribs_state.pickle")
    if os.path.exists(state_file):
        with open(state_file, "rb") as f:
            saved = pickle.load(f)  # pyribs's own objects, written by this script
        scheduler, curve, generation = saved["scheduler"], saved["curve"], saved["generation"]
        nonfinite = saved.get("nonfinite", 0)
    else:
        cells = dict(
            solution_dim=n,
            centroids=ours_archive.centroids,
            ranges=[tuple(pair) for pair in hyper.descriptor_bounds],
            qd_score_offset=hyper.qd_score_offset,
            seed=seed,
        )
        if method == "ribs-cma-mae":
            archive = CVTArchive(**cells, learning_rate=0.01, threshold_min=hyper.qd_score_offset)
            result = CVTArchive(**cells)
        else:
            archive, result = CVTArchive(**cells), None
        if method == "ribs-map-elites":
            decoder = GenomeDecoder(space)
            offsets = [space.sample_offset(strategy.rng) for _ in range(hyper.initial_population)]  # our generation 0
            initial = np.stack([decoder.decode(Genome(offset)) for offset in offsets])
            emitters = [
                IsoLineEmitter(
                    archive,
                    iso_sigma=hyper.sigma,
                    line_sigma=hyper.line_sigma,
                    initial_solutions=initial.astype(np.float64),
                    batch_size=hyper.population_size,
                    seed=seed,
                )
            ]
        else:
            rules = dict(ranker="imp", selection_rule="mu", restart_rule="basic") if method == "ribs-cma-mae" else {}
            emitters = [
                EvolutionStrategyEmitter(
                    archive,
                    x0=np.zeros(n),
                    sigma0=hyper.sigma_init,
                    batch_size=hyper.population_size,
                    es="sep_cma_es",
                    seed=1000 * seed + k,
                    **rules,
                )
                for k in range(hyper.emitters)
            ]
        scheduler, curve, generation, nonfinite = Scheduler(archive, emitters, result_archive=result), [], 0, 0
    spent = curve[-1]["episodes"] if curve else 0
    try:
        while spent < episodes:
            solutions = scheduler.ask()
            members = solutions.astype(np.float32)
            keys = [base_key(x) for x in members]
            requests = [EvaluationRequest(Genome(key), 1, "population", behaviour=True) for key in keys]
            results = evaluator.evaluate(requests, seed=episode_seed(seed, generation, 0), bases=dict(zip(keys, members)))
            objectives = np.array([float(np.mean(r.returns)) for r in results])
            descriptors = np.stack([r.behaviours.mean(axis=0) for r in results])
            finite = np.isfinite(objectives) & np.isfinite(descriptors).all(axis=1)
            nonfinite += int((~finite).sum())  # pyribs refuses NaN: told as the worst objective at descriptor 0, so
            objectives = np.where(finite, objectives, hyper.qd_score_offset)  # it may fill an empty cell (counted;
            descriptors = np.where(finite[:, None], descriptors, 0.0)  # ours leaves such a member out)
            scheduler.tell(objectives, descriptors)
            spent += len(requests)
            generation += 1
            stats = scheduler.result_archive.stats
            qd_score, coverage = float(stats.qd_score), float(stats.coverage)
            curve.append(dict(episodes=spent, qd_score=qd_score, coverage=coverage, best=_best(stats), nonfinite=nonfinite))
            if generation % 10 == 0 or spent >= episodes:
                with open(state_file + ".tmp", "wb") as f:
                    pickle.dump(dict(scheduler=scheduler, curve=curve, generation=generation, nonfinite=nonfinite), f)
                os.replace(state_file + ".tmp", state_file)
    finally:
        evaluator.close()
    return curve


def _best(stats) -> float | None:
    return None if stats.obj_max is None else float(stats.obj_max)


def run_nsr_es(task: str, seed: int, episodes: int, folder: str) -> list[dict]:
    """NSR-ES (ours) with every member it plays filed into the scoring archive."""
    from workbench.training import Trainer

    archive = scoring_archive(task, seed)
    config = run_config("nsr-es", task, seed)
    strategy, evaluator = config.build()
    curve, spent = [], 0

    class Filing(type(evaluator)):  # the evaluator itself, its results also filed (the trainer wants a BaseEvaluator)
        def evaluate(self, requests, **kwargs):
            results = super().evaluate(requests, **kwargs)
            objectives = np.array([float(np.mean(r.returns)) for r in results])
            descriptors = np.stack([r.behaviours.mean(axis=0) for r in results])
            archive.add([r.genome for r in requests], objectives, descriptors)
            return results

    evaluator.__class__ = Filing
    with Trainer(strategy, evaluator, config=config) as trainer:
        while spent < episodes:
            (record,) = trainer.run(generations=1)
            spent += record.evaluations
            statistics = archive.statistics()
            curve.append(
                dict(episodes=spent, qd_score=statistics["qd_score"], coverage=statistics["coverage"], best=record.elite)
            )
    return curve


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("method", choices=OURS + RIBS)
    parser.add_argument("--task", choices=TASKS, default="Walker2d-v5")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--episodes", type=common.int_at_least(100), default=10_000)
    parser.add_argument("--results", default=RESULTS)
    args = parser.parse_args(argv)
    common.quiet_start()
    for line in common.read_lines(args.results) if os.path.exists(args.results) else []:
        if (line.get("method"), line.get("task"), line.get("seed"), line.get("episodes")) == (
            args.method,
            args.task,
            args.seed,
            args.episodes,
        ):
            print(f"{args.method} {args.task} seed {args.seed}: in {args.results} already")
            return 0
    folder = os.path.join(RUNS, f"{args.task}-{args.method}-seed{args.seed}")
    os.makedirs(folder, exist_ok=True)
    start = time.monotonic()
    if args.method in RIBS:
        curve = run_ribs(args.method, args.task, args.seed, args.episodes, folder)
    elif args.method == "nsr-es":
        curve = run_nsr_es(args.task, args.seed, args.episodes, folder)
    else:
        curve = run_ours(args.method, args.task, args.seed, args.episodes, folder)
    last = curve[-1]
    entry = common.stamp(
        dict(
            benchmark="qd_compare",
            method=args.method,
            task=args.task,
            seed=args.seed,
            episodes=args.episodes,
            preset=PRESET,
            qd_score=last["qd_score"],
            coverage=last["coverage"],
            best=last["best"],
            nonfinite=last.get("nonfinite"),  # pyribs's runs: members with a NaN return or descriptor (see run_ribs)
            seconds_this_session=round(time.monotonic() - start, 1),
            curve=curve,
        )
    )
    common.append_line(args.results, entry)
    print(json.dumps({k: v for k, v in entry.items() if k != "curve"}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
