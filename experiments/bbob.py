"""Runs one algorithm on COCO's BBOB suite (the `cocoex` module): ours through their ask/tell, or a reference.

The 24 noiseless functions in the chosen dimensions and instances, each problem until its budget (budget x n
function evaluations) is spent or its final target (f_opt + 1e-8) is hit. COCO's observer writes the run to
experiments/results/bbob/exdata/ALGORITHM-bBUDGET (cocopp reads it: experiments/render_bbob.py draws the runtime
distributions of ours and the references side by side and writes docs/bbob.md). One JSON line per run goes to
experiments/results/bbob.jsonl (the problems, evaluations and seconds).

Algorithms (all from the origin, COCO's initial solution, with the initial step size 2 of pycma's COCO examples,
restarting with a doubled population from the initial point when they stop, until the budget is spent):
  ours         cma-es, sep-cma-es, snes, cem, cr-fm-nes, xnes: the workbench's strategies (workbench.evolution) with
               restart_from="initial"; members are evaluated in float64 (DistributionSearch.members(): float32
               weights would end precision near 1e-7 relative, short of COCO's targets)
  pycma        the `cma` package's CMA-ES (by the method's author), its default options, IPOP restarts
               (cma.fmin2 with incpopsize 2)
  pycma-sep    the same with CMA_diagonal=True: pycma's sep-CMA-ES
  cmaes        the `cmaes` package's CMA, restarted when should_stop() says so (population doubled)
  cmaes-sep    the `cmaes` package's SepCMA, likewise
  cmaes-xnes   the `cmaes` package's XNES, likewise
  crfmnes      the authors' CR-FM-NES (the `crfmnes` package) with our default lambda (it has none), restarted
               (population doubled) when its state turns non-finite or sigma leaves [1e-12, 1e12] x sigma0 (it has
               no stopping rules of its own)

    python experiments/bbob.py cma-es                       # dimensions 2-20, instances 1-5, budget 1000 n
    python experiments/bbob.py pycma --dimensions 2,3,5     # a reference on the small dimensions
A finished run is packed into experiments/results/bbob/ALGORITHM-bBUDGET.tar.gz (committed; the exdata folder is
not; a run of other dimensions than the mode's is ALGORITHM-bBUDGET-dDIMENSIONS, e.g. cma-es-b1000-d40, and the
page merges it with the algorithm's other runs) and skipped when asked again; a stopped one is run again from its
first problem.

    python experiments/bbob.py cma-es --dimensions 40        # dimension 40 beside the default run
    python experiments/bbob.py cma-es --dimensions 40 --functions 1-5    # one function group: -d40-f1-5

A run of some functions only is packed as ALGORITHM-bBUDGET[-dDIMENSIONS]-fFUNCTIONS: a long run split by function
group (experiments/bbob_groups.sh) finishes group by group, each its own archive, and the page merges them.
"""

from __future__ import annotations

import os
import shutil
import sys
import time

import _checkout  # noqa: F401, I001  (this checkout's package first on sys.path)
import numpy as np  # noqa: E402

from workbench.bench import common  # noqa: E402

OURS = ("cma-es", "sep-cma-es", "snes", "cem", "cr-fm-nes", "xnes")
REFERENCES = ("pycma", "pycma-sep", "cmaes", "cmaes-sep", "cmaes-xnes", "crfmnes")
SIGMA0 = 2.0  # pycma's COCO examples: the box is [-5, 5]^n
MODES = {
    "full": dict(dimensions="2,3,5,10,20", instances="1-5", functions="1-24", budget=1000),
    "quick": dict(dimensions="2,5", instances="1-3", functions="1-24", budget=200),
    "smoke": dict(dimensions="2", instances="1", functions="1,8", budget=50),
}
RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "bbob")


def run_ours(algorithm: str, problem, evaluations: int, seed: int) -> None:
    """Our strategy on one problem until `evaluations` are spent or the final target is hit; it restarts itself."""
    from workbench.evolution import ALGORITHMS, NoiseTable, ParameterSpace

    n = problem.dimension
    spec = ALGORITHMS[algorithm]
    config = spec.config_for(dict(sigma_init=SIGMA0, initial="zeros", restart_from="initial"))
    space = ParameterSpace(NoiseTable.shared(2**20, seed=7), np.ones(n, np.float32))
    strategy = spec.strategy(config, space, seed=seed)
    while problem.evaluations < evaluations and not problem.final_target_hit:
        members = strategy.members()
        requests = strategy.ask()
        values = [problem(x) for x in members]
        strategy.tell([[-value] * request.episodes for value, request in zip(values, requests)])


def run_pycma(problem, evaluations: int, seed: int, diagonal: bool) -> None:
    import cma

    options = dict(
        maxfevals=evaluations,
        verbose=-9,
        seed=seed + 1,
        CMA_diagonal=diagonal,
        termination_callback=[lambda es: bool(problem.final_target_hit)],  # COCO's target hit: stop, as ours do
    )
    cma.fmin2(problem, problem.initial_solution, SIGMA0, options, restarts=9, incpopsize=2)


def run_crfmnes(problem, evaluations: int, seed: int) -> None:
    from crfmnes.alg import CRFMNES

    from workbench.evolution.crfmnes import crfmnes_population_size

    n, population, restart = problem.dimension, crfmnes_population_size(problem.dimension), 0
    while problem.evaluations < evaluations and not problem.final_target_hit:
        start = np.array(problem.initial_solution, np.float64).reshape(n, 1)
        es = CRFMNES(
            n, lambda x: problem(x[:, 0]), start, SIGMA0, population, seed=seed + restart, use_constraint_violation=False
        )
        with np.errstate(all="ignore"):  # its state may turn non-finite: that is a restart here
            while problem.evaluations < evaluations and not problem.final_target_hit:
                es.one_iteration()
                spread = es.sigma * float(np.max(es.D))
                if not (np.isfinite(es.m).all() and np.isfinite(es.v).all() and 1e-12 * SIGMA0 <= spread <= 1e12 * SIGMA0):
                    break
        population, restart = 2 * population, restart + 1


def run_cmaes(problem, evaluations: int, seed: int, kind: str) -> None:
    import cmaes

    make = dict(cma=cmaes.CMA, sep=cmaes.SepCMA, xnes=cmaes.XNES)[kind]
    population = None
    restart = 0
    while problem.evaluations < evaluations and not problem.final_target_hit:
        optimizer = make(mean=np.array(problem.initial_solution), sigma=SIGMA0, population_size=population, seed=seed + restart)
        while problem.evaluations < evaluations and not problem.final_target_hit and not optimizer.should_stop():
            solutions = [optimizer.ask() for _ in range(optimizer.population_size)]
            optimizer.tell([(x, problem(x)) for x in solutions])
        population, restart = 2 * optimizer.population_size, restart + 1


def run(
    algorithm: str, dimensions: str, instances: str, functions: str, budget: int, seed: int, out: str, suffix: str = ""
) -> dict:
    """One algorithm over the suite; returns the run's summary. suffix: what names a run of other dimensions than
    its mode's ("-d40")."""
    import cocoex

    name = f"{algorithm}-b{budget}{suffix}"
    folder = os.path.join(out, "exdata", name)
    archive = os.path.join(out, f"{name}.tar.gz")
    if os.path.exists(archive):
        print(f"{name}: done already ({archive})", file=sys.stderr)
        return {}
    shutil.rmtree(folder, ignore_errors=True)  # a stopped run starts again: COCO's files cannot be resumed
    os.makedirs(os.path.join(out, "exdata"), exist_ok=True)
    suite = cocoex.Suite("bbob", "", f"dimensions: {dimensions} instance_indices: {instances} function_indices: {functions}")
    here = os.getcwd()
    os.chdir(out)  # the observer writes under ./exdata
    try:
        observer = cocoex.Observer("bbob", f"result_folder: {name} algorithm_name: {name}")
        start, problems, spent = time.time(), 0, 0
        for problem in suite:
            problem.observe_with(observer)
            evaluations = budget * problem.dimension
            if algorithm in OURS:
                run_ours(algorithm, problem, evaluations, seed)
            elif algorithm.startswith("pycma"):
                run_pycma(problem, evaluations, seed, diagonal=algorithm == "pycma-sep")
            elif algorithm == "crfmnes":
                run_crfmnes(problem, evaluations, seed)
            else:
                run_cmaes(problem, evaluations, seed, kind=algorithm.removeprefix("cmaes-") if "-" in algorithm else "cma")
            problems, spent = problems + 1, spent + problem.evaluations
            hit = bool(problem.final_target_hit)
            print(f"{problem.id}: {problem.evaluations} evaluations, target hit: {hit}", file=sys.stderr)
            problem.free()
        observer = None
    finally:
        os.chdir(here)
    pack(folder, archive)
    return dict(problems=problems, evaluations=spent, seconds=round(time.time() - start, 1), archive=os.path.basename(archive))


def pack(folder: str, archive: str) -> None:
    """COCO's folder of one run as a .tar.gz beside exdata/ (written under a temporary name, then renamed)."""
    base = archive[: -len(".tar.gz")] + ".partial"
    shutil.make_archive(base, "gztar", root_dir=os.path.dirname(folder), base_dir=os.path.basename(folder))
    os.replace(base + ".tar.gz", archive)


def main(argv=None):
    parser = common.parser(
        __doc__,
        quick="dimensions 2 and 5, instances 1-3, budget 200 n",
        smoke="dimension 2, instance 1, functions 1 and 8, budget 50 n: checks the script runs",
        record=True,
    )
    parser.add_argument("algorithm", choices=OURS + REFERENCES, help="the algorithm to run")
    parser.add_argument("--dimensions", help="COCO dimensions, e.g. 2,3,5,10,20 (default: the mode's)")
    parser.add_argument("--instances", help="COCO instance indices, e.g. 1-15")
    parser.add_argument("--functions", help="BBOB function indices, e.g. 1-24")
    parser.add_argument("--budget", type=common.positive_int, help="function evaluations per dimension (full: 1000)")
    parser.add_argument("--seed", type=common.seed_int, default=0, help="the algorithm's seed (default 0)")
    parser.add_argument("--out", type=common.path_text, help="the folder of exdata/ (default experiments/results/bbob)")
    args = parser.parse_args(argv)
    mode = common.mode_of(args)
    settings = dict(MODES[mode])
    for name in ("dimensions", "instances", "functions", "budget"):
        if getattr(args, name) is not None:
            settings[name] = getattr(args, name)
    out = os.path.abspath(args.out or (RESULTS if mode == "full" else os.path.join(RESULTS, mode)))
    dimensions, functions = settings["dimensions"], settings["functions"]
    suffix = "" if dimensions == MODES[mode]["dimensions"] else "-d" + dimensions.replace(",", "_")
    suffix += "" if functions == MODES[mode]["functions"] else "-f" + functions.replace(",", "_")
    summary = run(
        args.algorithm, *(settings[k] for k in ("dimensions", "instances", "functions", "budget")), args.seed, out, suffix
    )
    if summary:
        common.record(dict(benchmark="bbob", mode=mode, algorithm=args.algorithm, seed=args.seed, **settings, **summary), args)


if __name__ == "__main__":
    main()
