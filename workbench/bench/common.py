"""What every benchmark (and experiment) script shares: the quiet start-up, the argument parser's common options, the
timers, and the recording of the one JSON line each run ends with.

A benchmark starts with

    from workbench.bench import common
    common.quiet_start()  # before anything imports TensorFlow

record() dates the JSON line (UTC), adds the commit and the machine and prints it. A benchmark appends it to the
committed results only when asked (--record, or --results FILE): experiments/results/<benchmark>.jsonl in a
source checkout (each recorded run adds a line, so the history stays; experiments/render_results.py makes the
results pages from these files, and recording is followed by rendering them), experiments/results/smoke/ for
smoke runs (ignored by git). Without them, running a benchmark changes no committed file. The experiments
(experiments/: the learning suites, studies, re-tests) record by default (--no-record: print only), and a line
recorded into the committed results is followed by rendering the pages, so no page is left stale.
$WORKBENCH_BENCH_RESULTS (the tests set it) or --results moves the results; outside a checkout the default
folder is ./bench-results.
"""

from __future__ import annotations

import argparse
import datetime
import functools
import json
import os
import platform
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
CHECKOUT = os.path.dirname(os.path.dirname(HERE))  # workbench/bench/ -> the source checkout, when there is one
IN_CHECKOUT = os.path.isdir(os.path.join(CHECKOUT, "experiments")) and os.path.exists(
    os.path.join(CHECKOUT, ".git")
)  # a worktree's .git is a file

RESULTS_VARIABLE = "WORKBENCH_BENCH_RESULTS"
RESULTS_DIR = os.path.join(CHECKOUT, "experiments", "results") if IN_CHECKOUT else os.path.join(os.getcwd(), "bench-results")


def quiet_start(keras: bool = False) -> None:
    """Imports TensorFlow without its start-up log lines (unless --verbose is among the arguments) and without
    Keras unless `keras` (workbench.quiet.quiet_tensorflow)."""
    from workbench.quiet import quiet_tensorflow

    quiet_tensorflow("--verbose" in sys.argv[1:], keras=keras)


# -- the command line -------------------------------------------------------------------------------------
def parser(doc: str | None, quick: str, smoke: str, record: bool = False) -> argparse.ArgumentParser:
    """An argument parser with the options every script has: --quick and --smoke (one at most; neither is the full
    run; `quick` and `smoke` are their help), --verbose, --results FILE, and --record (a benchmark: it records
    only when asked) or --no-record (`record`: an experiment, which records unless told not to)."""
    result = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    group = result.add_mutually_exclusive_group()
    group.add_argument("--quick", action="store_true", help=quick)
    group.add_argument("--smoke", action="store_true", help=smoke)
    result.add_argument("--verbose", action="store_true", help="show TensorFlow's log lines")
    result.add_argument(
        "--results",
        metavar="FILE",
        type=path_text,
        help="append the JSON line to FILE (default: experiments/results/NAME.jsonl in a source checkout, "
        "experiments/results/smoke/ for smoke runs; ./bench-results/ elsewhere)",
    )
    if record:
        result.add_argument("--no-record", action="store_true", help="print the JSON line only; append it nowhere")
    else:
        result.add_argument(
            "--record",
            action="store_true",
            help="append the JSON line to the results (see --results) and render the results pages; without it (or "
            "--results) the line is printed only",
        )
    return result


def mode_of(args: argparse.Namespace) -> str:
    """The run's mode from the parsed --smoke / --quick: "smoke", "quick" or "full"."""
    return "smoke" if args.smoke else "quick" if args.quick else "full"


def int_at_least(low: int):
    """argparse type: an integer of at least `low`."""

    def parse(text: str) -> int:
        value = int(text)
        if value < low:
            raise argparse.ArgumentTypeError(f"must be >= {low}, got {value}")
        return value

    parse.__name__ = f"integer >= {low}"  # argparse names the type so when the text is not an integer
    return parse


def path_text(text: str) -> str:
    """argparse type: a file or folder path, not empty (an empty one would otherwise fall back to the default)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("must be a path, got an empty string")
    return text


path_text.__name__ = "path"

positive_int = int_at_least(1)
seed_int = int_at_least(0)  # --seed: the strategies take seeds >= 0


# -- timers -----------------------------------------------------------------------------------------------
def timed(function, *args, **kwargs):
    """(function(*args, **kwargs), its wall seconds)."""
    start = time.perf_counter()
    result = function(*args, **kwargs)
    return result, time.perf_counter() - start


def interleaved(candidates: dict, rounds: int, warmups: dict | None = None) -> dict[str, list]:
    """Each candidate's measurement in each of `rounds` interleaved rounds (one call of each per round, in turn, so
    that a drift of the machine's speed reaches every candidate alike), after one call of each warm-up (default: of
    each candidate). candidates and warmups: {name: a function of no arguments}; returns {name: [values]}."""
    for warmup in (warmups or candidates).values():
        warmup()
    values: dict[str, list] = {name: [] for name in candidates}
    for _ in range(rounds):
        for name, measure in candidates.items():
            values[name].append(measure())
    return values


def best_rate(candidates: dict, work, rounds: int) -> dict[str, float]:
    """The best rate of each candidate over `rounds` interleaved rounds: candidates {name: run}, where run(amount)
    does the work and returns how much it did (frames, steps); work: {name: amount} or one amount for all. Each
    warms up on a tenth of its work."""
    work = work if isinstance(work, dict) else dict.fromkeys(candidates, work)

    def rate(run, amount):
        done, seconds = timed(run, amount)
        return done / seconds

    values = interleaved(
        {name: functools.partial(rate, run, work[name]) for name, run in candidates.items()},
        rounds,
        warmups={name: functools.partial(run, max(1, work[name] // 10)) for name, run in candidates.items()},
    )
    return {name: max(rates) for name, rates in values.items()}


# -- recording --------------------------------------------------------------------------------------------
def machine() -> dict:
    """The machine a line was measured on: CPU model, logical cores, memory, operating system, Python."""
    model, memory_gib = platform.processor() or platform.machine(), None
    try:
        with open("/proc/cpuinfo") as f:
            model = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), model)
        with open("/proc/meminfo") as f:
            kib = next((int(line.split()[1]) for line in f if line.startswith("MemTotal")), None)
            memory_gib = None if kib is None else round(kib / 2**20, 1)
    except OSError:
        pass
    return dict(
        cpu=model,
        cores=os.cpu_count(),
        memory_gib=memory_gib,
        system=f"{platform.system()} {platform.release()}",
        python=platform.python_version(),
    )


def commit() -> str | None:
    """The source checkout's commit (12 hex digits), with "+changes" when its code differs from that commit (the
    results folder aside); None outside a checkout."""
    if not IN_CHECKOUT:
        return None
    try:
        head = subprocess.run(
            ["git", "-C", CHECKOUT, "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
        changed = subprocess.run(
            [
                "git",
                "-C",
                CHECKOUT,
                "status",
                "--porcelain",
                "--untracked-files=no",
                "--",
                ".",
                ":!experiments/results",
                ":!docs",
            ],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    return head + ("+changes" if changed else "")


def utc_now() -> str:
    """Now in UTC, to the second, as ISO 8601 ("2026-12-04T15:32:05Z"): the `recorded` field of a line."""
    return datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def recorded(entry: dict) -> str:
    """When a line was recorded (lines the Atari suite wrote before this module existed call it `date`)."""
    return entry.get("recorded") or entry.get("date") or ""


def stamp(report: dict) -> dict:
    """The report with when (UTC, to the second), the commit, the workbench's version and the machine added."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        workbench_version = version("deep-neuroevolution-workbench")
    except PackageNotFoundError:
        workbench_version = None
    return dict(
        report,
        recorded=utc_now(),
        commit=commit(),
        version=workbench_version,
        machine=machine(),
    )


def results_folder() -> str:
    """Where results files (and the runs of the learning experiments) go: $WORKBENCH_BENCH_RESULTS, else the
    checkout's experiments/results, else ./bench-results."""
    return os.environ.get(RESULTS_VARIABLE) or RESULTS_DIR


def results_file(benchmark: str, mode: str, args: argparse.Namespace | None = None) -> str | None:
    """Where a run's line goes: --results, else $WORKBENCH_BENCH_RESULTS or the default folder, with smoke runs in
    its smoke/ subfolder; None with --no-record, and for a benchmark run without --record or --results."""
    if args is not None and getattr(args, "no_record", False):
        return None
    if args is not None and getattr(args, "results", None):
        return args.results
    if args is not None and not getattr(args, "record", True):
        return None
    folder = results_folder()
    return os.path.join(folder, "smoke", f"{benchmark}.jsonl") if mode == "smoke" else os.path.join(folder, f"{benchmark}.jsonl")


def render_pages() -> None:
    """Renders the results pages from the committed results again (experiments/render_results.py), after a line
    was recorded there, so that the pages never go stale; nothing outside a source checkout."""
    renderer = os.path.join(CHECKOUT, "experiments", "render_results.py")
    if IN_CHECKOUT and os.path.exists(renderer):
        subprocess.run([sys.executable, renderer], check=False)


def append_line(path: str, entry: dict) -> None:
    """Appends `entry` as one JSON line to `path` (folders made as needed)."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "a") as f:
        f.write(json.dumps(entry, separators=(",", ":")) + "\n")


def record(report: dict, args: argparse.Namespace | None = None) -> dict:
    """Stamps the report (stamp), prints it as the run's last line on stdout and appends it to its results file
    (results_file); SystemExit naming the file when it cannot be written. Returns the stamped report."""
    stamped = stamp(report)
    print(json.dumps(stamped, separators=(",", ":")), flush=True)  # printed first: a failed write loses nothing
    path = results_file(report["benchmark"], report.get("mode", "full"), args)
    if path is not None:
        try:
            append_line(path, stamped)
        except OSError as error:
            raise SystemExit(f"--results: cannot append to {path}: {error} (the line is printed above)") from None
        shown = os.path.relpath(path)
        print(f"recorded in {path if shown.startswith('..') else shown}", file=sys.stderr)
        if os.path.dirname(os.path.abspath(path)) == os.path.abspath(RESULTS_DIR):
            render_pages()  # a line recorded into the committed results: the pages follow, so none goes stale
    return stamped


def read_lines(path: str, benchmark: str | None = None) -> list[dict]:
    """The JSON lines of a results file, in file order (blank lines skipped). ValueError naming the file and line
    when a line is not a JSON object, or not a line of `benchmark` when one is given."""
    entries = []
    with open(path) as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
            except json.JSONDecodeError as error:
                raise ValueError(f"{path} line {number} is not JSON: {error}") from None
            if not isinstance(entry, dict):
                raise ValueError(f"{path} line {number} is not a JSON object")
            if benchmark is not None and entry.get("benchmark") != benchmark:
                raise ValueError(f"{path} line {number} is not a {benchmark} result")
            entries.append(entry)
    return entries
