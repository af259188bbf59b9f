"""Compares the BBOB runs of experiments/bbob.py: the area under each runtime distribution, ours against the
references, per function group and over all 24 functions, and COCO's own post-processing (cocopp).

For every (function, dimension, instance) problem and each of COCO's 51 targets (f - f_opt = 10^2 ... 10^-8), the
runtime is the function evaluations the run needed to reach the target, divided by the dimension; a target not
reached within the budget has none. The empirical distribution (ECDF) of log10(runtime) over all pairs, from 0 to
log10(budget), is COCO's runtime ECDF; its area, normalised to 1 (every target at the first evaluation), is
mean(max(0, log10(budget) - log10(runtime)) / log10(budget)) over the pairs, 0 for a target never reached. The
page docs/bbob.md holds the table of areas and their ratios (ours / reference) per group, per dimension and over
all functions, and the ECDF figures (docs/bbob/); cocopp's full report is written to experiments/results/bbob/ppdata
(not committed: it is large and generated). The runs are read from their archives in experiments/results/bbob,
through experiments/results/bbob/runtimes.json (committed: per archive its sha256 and the runtimes cocopp read
from it, so that checking the page does not read every archive again; an archive that changed is read again).

    python experiments/render_bbob.py                  # every finished run
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import json
import os
import re
import tarfile
import tempfile
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
CHECKOUT = os.path.dirname(HERE)
RESULTS = os.path.join(HERE, "results", "bbob")
PAGE = os.path.join(CHECKOUT, "docs", "bbob.md")
FIGURES = os.path.join(CHECKOUT, "docs", "bbob")
CACHE = os.path.join(RESULTS, "runtimes.json")  # per archive: its sha256 and the runtimes cocopp read from it
TARGETS = 10 ** np.linspace(2, -8, 51)  # COCO's 51 targets of f - f_opt
GROUPS = {
    "separable (f1-f5)": range(1, 6),
    "moderate conditioning (f6-f9)": range(6, 10),
    "ill-conditioned (f10-f14)": range(10, 15),
    "multimodal, adequate structure (f15-f19)": range(15, 20),
    "multimodal, weak structure (f20-f24)": range(20, 25),
    "all 24 functions": range(1, 25),
}
PAIRS = (
    ("cma-es", "pycma"),
    ("cma-es", "cmaes"),
    ("sep-cma-es", "pycma-sep"),
    ("sep-cma-es", "cmaes-sep"),
    ("cr-fm-nes", "crfmnes"),
    ("xnes", "cmaes-xnes"),
)


def runtimes(folder: str, budget: int) -> dict[tuple[int, int], np.ndarray]:
    """{(function, dimension): runtimes / dimension [instances, targets]} (NaN: not reached within the budget)."""
    import cocopp

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        datasets = cocopp.load(folder)
    table = {}
    for dataset in datasets:
        evals = np.array(dataset.detEvals(list(TARGETS)), np.float64).T  # [instances, targets]
        evals[evals > budget * dataset.dim] = np.nan
        table[int(dataset.funcId), int(dataset.dim)] = evals / dataset.dim
    return table


def ecdf_area(values: list[np.ndarray], budget: int) -> float:
    """The normalised area under the ECDF of log10(runtime) on [0, log10(budget)] (module docstring)."""
    runtime = np.concatenate([v.ravel() for v in values])
    top = np.log10(budget)
    reached = np.where(np.isfinite(runtime), np.clip(top - np.log10(np.maximum(runtime, 1.0)), 0, top), 0.0)
    return float(reached.mean() / top)


ARCHIVE = re.compile(r"(?P<algorithm>.+)-b(?P<budget>[0-9]+)(?P<dimensions>-d[0-9_]+)?(?P<functions>-f[0-9_-]+)?\.tar\.gz")


def _dimension_label(dimension: int, functions: set[int]) -> str:
    """A table row's name for one dimension, saying which functions it holds when not all 24 have run yet."""
    if functions == set(range(1, 25)):
        return f"dimension {dimension}"
    spans, ordered = [], sorted(functions)
    for f in ordered:
        if spans and f == spans[-1][1] + 1:
            spans[-1][1] = f
        else:
            spans.append([f, f])
    named = ", ".join(f"f{a}" if a == b else f"f{a}-f{b}" for a, b in spans)
    return f"dimension {dimension} ({named} so far)"


def finished_runs(results: str = RESULTS, cache: dict | None = None) -> dict[str, list[tuple[dict, int]]]:
    """{algorithm: [(runtimes table, budget), ...]} of the finished runs: their archives (ALGORITHM-bBUDGET
    [-dDIMENSIONS][-fFUNCTIONS].tar.gz; the caller merges one algorithm's runs of several dimension or function
    sets). An archive whose
    sha256 the cache holds (results/bbob/runtimes.json: what cocopp read from each archive) is not read again;
    another is unpacked and read with cocopp, and its entry is added to `cache`."""
    cache = {} if cache is None else cache
    runs: dict[str, list[tuple[dict, int]]] = {}
    into = None
    for archive in sorted(glob.glob(os.path.join(results, "*-b*.tar.gz"))):
        match = ARCHIVE.fullmatch(os.path.basename(archive))
        if match is None or ".partial" in archive:
            continue
        budget, name = int(match["budget"]), os.path.basename(archive)
        with open(archive, "rb") as stream:
            digest = hashlib.sha256(stream.read()).hexdigest()
        entry = cache.get(name)
        if entry is None or entry.get("sha256") != digest:
            into = into or tempfile.mkdtemp(prefix="bbob-")
            with tarfile.open(archive) as packed:
                packed.extractall(into, filter="data")
                folder = os.path.commonpath(packed.getnames())
            table = runtimes(os.path.join(into, folder), budget)
            entry = cache[name] = dict(sha256=digest, table={f"{f},{d}": as_json(values) for (f, d), values in table.items()})
        table = {tuple(int(part) for part in key.split(",")): from_json(rows) for key, rows in entry["table"].items()}
        runs.setdefault(match["algorithm"], []).append((table, budget))
    return runs


def as_json(values: np.ndarray) -> list:
    """Runtimes [instances, targets] as JSON lists (None: not reached)."""
    return [[None if np.isnan(v) else float(v) for v in row] for row in values]


def from_json(rows: list) -> np.ndarray:
    return np.array([[np.nan if v is None else v for v in row] for row in rows], np.float64)


def read_cache(path: str | None = None) -> dict:
    """The runtimes cache ({archive: {sha256, table}}), empty when there is none."""
    path = path or CACHE
    if not os.path.exists(path):
        return {}
    with open(path) as stream:
        return json.load(stream)


def figure(name: str, curves: dict[str, list[np.ndarray]], budget: int, path: str) -> None:
    """The runtime ECDFs of `curves` ({label: runtimes}) on one axis, COCO's way (log10 of evaluations / n)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    grid = np.linspace(0, np.log10(budget), 200)
    fig, ax = plt.subplots(figsize=(6, 4))
    for label, values in curves.items():
        runtime = np.log10(np.concatenate([v.ravel() for v in values]))
        ax.step(grid, [(runtime <= x).mean() for x in grid], where="post", label=label)
    ax.set_xlabel("log10(function evaluations / dimension)")
    ax.set_ylabel("fraction of (problem, target) pairs")
    ax.set_ylim(0, 1)
    ax.set_title(name)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def render(results: str = RESULTS, figures: bool = True, cache: dict | None = None) -> str:
    """The page's text; with `figures`, the ECDF figures are drawn into docs/bbob/ too; `cache`: the runtimes
    cache to read and fill (finished_runs)."""
    runs = finished_runs(results, cache)
    tables = {algorithm: {k: v for table, _ in parts for k, v in table.items()} for algorithm, parts in runs.items()}
    budgets = {algorithm: min(budget for _, budget in parts) for algorithm, parts in runs.items()}
    lines = [
        "# COCO's BBOB suite: ours against the reference implementations",
        "",
        "<!-- Generated by experiments/render_bbob.py from experiments/results/bbob/exdata; do not edit by hand. -->",
        "",
        "The runs of `experiments/bbob.py` (docs/cma.md says how each algorithm runs). Each cell is the normalised area",
        "under the runtime ECDF (COCO's 51 targets per problem, runtime in evaluations / dimension up to the budget;",
        "1 = every target at the first evaluation), over the problems of that row; the ratio is ours / the reference.",
        "",
    ]
    if not runs:
        return "\n".join(lines + ["No finished run yet.", ""])
    lines.append("Finished runs: " + ", ".join(f"`{a}` (budget {budgets[a]} n)" for a in runs) + ".")
    lines.append("")
    if figures:
        os.makedirs(FIGURES, exist_ok=True)
    for ours, reference in PAIRS:
        if ours not in tables or reference not in tables:
            continue
        budget = min(budgets[ours], budgets[reference])
        common = sorted(set(tables[ours]) & set(tables[reference]))
        dimensions = sorted({d for _, d in common})
        lines += [
            f"## `{ours}` against `{reference}`",
            "",
            f"| problems | `{ours}` | `{reference}` | ratio |",
            "|---|---|---|---|",
        ]
        rows = [(name, [key for key in common if key[0] in functions]) for name, functions in GROUPS.items()]
        rows += [
            (_dimension_label(d, {f for f, dd in common if dd == d}), [key for key in common if key[1] == d]) for d in dimensions
        ]
        for name, keys in rows:
            if not keys:
                continue
            a = ecdf_area([tables[ours][k] for k in keys], budget)
            b = ecdf_area([tables[reference][k] for k in keys], budget)
            lines.append(f"| {name} | {a:.3f} | {b:.3f} | {a / b:.3f} |" if b > 0 else f"| {name} | {a:.3f} | {b:.3f} | - |")
        path = os.path.join(FIGURES, f"{ours}-{reference}.png")
        if figures:
            figure(
                f"{ours} and {reference}: all functions, dimensions {', '.join(map(str, dimensions))}",
                {label: [tables[label][k] for k in common] for label in (ours, reference)},
                budget,
                path,
            )
        lines += ["", f"![{ours} and {reference}](bbob/{os.path.basename(path)})", ""]
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="fail if docs/bbob.md is not what the runs give")
    parser.add_argument("--cocopp", action="store_true", help="also run COCO's post-processing into results/bbob/ppdata")
    args = parser.parse_args(argv)
    cache = read_cache()
    page = render(figures=not args.check, cache=cache)
    if args.check:
        with open(PAGE) as stream:
            if stream.read() != page:
                raise SystemExit(f"{PAGE} is stale: run experiments/render_bbob.py")
        return
    with open(PAGE, "w") as stream:
        stream.write(page)
    names = {os.path.basename(archive) for archive in glob.glob(os.path.join(RESULTS, "*-b*.tar.gz"))}
    with open(CACHE, "w") as stream:  # the archives there are, no others
        json.dump({name: entry for name, entry in sorted(cache.items()) if name in names}, stream, separators=(",", ":"))
    if args.cocopp:
        import cocopp

        into = tempfile.mkdtemp(prefix="bbob-")
        for archive in sorted(glob.glob(os.path.join(RESULTS, "*-b*.tar.gz"))):
            with tarfile.open(archive) as packed:
                packed.extractall(into, filter="data")
        folders = [os.path.join(into, name) for name in sorted(os.listdir(into))]
        cocopp.main(["-o", os.path.join(HERE, "results", "bbob", "ppdata")] + folders)


if __name__ == "__main__":
    main()
