"""Soak test: a long training run in one process with the dashboard attached, watched for leaks.

Trains a small Atari GA (Pong, SmallModel, population 16, 2 elite candidates x 2 episodes, 400-frame episodes; 100
in the smoke run) for 200 generations in the background, with a run directory (a checkpoint and the logs every
generation) and a TrainingDashboard attached (its update thread draws the plots and gameplay frames as in a
notebook). After every generation it samples the process's resident memory, open file descriptors and
threads. The figure of merit is the growth from generation `--settle` (10) to the end (target <= 5 %): for
memory the largest sample after it against it; for the counts of files and threads, which a single descriptor
or thread open at the moment of a sample moves by 9-10 %, the median of the last samples against the median of
the first ones after settling (a leak raises both; "peak_growth" gives the largest sample's as well). A warm-up
that ends later than the settling generations counts as growth there; the second half's growth and the memory
every 10 generations in the JSON line tell a warm-up (flat later) from a leak (still growing), and the C heap's
bytes in use and free every 10 generations (glibc) tell live memory (a leak, or a cache filling) from freed
blocks the allocator keeps. Ends with one JSON line.

  python -m workbench.bench.soak [--quick | --smoke] [--generations 200] [--game pong]
"""

import ctypes
import ctypes.util
import functools
import os
import shutil
import tempfile
import time

import numpy as np

from workbench.bench import common

common.quiet_start()

import psutil  # noqa: E402

from workbench.lab import TrainingDashboard  # noqa: E402
from workbench.training import RunConfig, Trainer  # noqa: E402

TARGET = 0.05  # growth after the settling generations
MODES = {
    "smoke": dict(generations=12, settle=4, max_episode_frames=100),
    "quick": dict(generations=60, settle=10, max_episode_frames=400),
    "full": dict(generations=200, settle=10, max_episode_frames=400),
}


class MallInfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")
    ]


@functools.lru_cache(maxsize=1)
def glibc():
    """The C library if it is glibc 2.33+ (it has mallinfo2), else None; loaded once."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.mallinfo2.restype = MallInfo2
    except (OSError, AttributeError):
        return None
    return libc


def heap_statistics():
    """The C heap's blocks in use and the freed blocks glibc keeps (numpy arrays and TensorFlow tensors live
    there): {"in_use_bytes", "free_bytes"}, or {} where the C library is not glibc 2.33+."""
    libc = glibc()
    if libc is None:
        return {}
    info = libc.mallinfo2()
    return {"in_use_bytes": info.uordblks + info.hblkhd, "free_bytes": info.fordblks}


def sample(process):
    heap = heap_statistics()  # live against free C-heap bytes: a leak or a filling cache, or the allocator
    return dict(
        rss=process.memory_info().rss,
        files=process.num_fds(),
        threads=process.num_threads(),
        heap_in_use=heap.get("in_use_bytes"),
        heap_free=heap.get("free_bytes"),
    )


def mib_every(samples, key, step=10):
    return [None if s[key] is None else round(s[key] / 2**20) for s in samples[::step]]


def main(argv=None):
    parser = common.parser(__doc__, quick="60 generations", smoke="12 generations of 100-frame episodes: checks the script runs")
    parser.add_argument("--generations", type=int, default=None)
    parser.add_argument("--settle", type=int, default=None, help="generations before the baseline sample")
    parser.add_argument("--game", default="pong")
    args = parser.parse_args(argv)
    name = common.mode_of(args)
    generations = args.generations or MODES[name]["generations"]
    settle = MODES[name]["settle"] if args.settle is None else args.settle
    if not 0 <= settle < generations - 1:
        parser.error(f"--settle must be in [0, generations - 1), got {settle} with {generations} generations")
    config = RunConfig(
        env=args.game,
        model="small",
        algorithm="ga",
        subpopulations=2,
        slots=8,
        max_episode_frames=MODES[name]["max_episode_frames"],
        noise_size=2**24,
        hyperparameters=dict(population_size=16, truncation=4, sigma=0.01, elite_candidates=2, elite_episodes=2),
    )
    run_dir = tempfile.mkdtemp(prefix="workbench-soak-")
    process = psutil.Process()
    samples = []
    start = time.perf_counter()
    try:
        trainer = Trainer.from_config(config, run_dir=os.path.join(run_dir, "run"))
        dashboard = TrainingDashboard(trainer, plot_interval=0.2, frame_interval=0.1)
        events = trainer.events.subscribe(kinds={"generation"})
        trainer.start(generations=generations)
        while trainer.running or len(samples) < generations:
            event = events.get(timeout=1.0)
            if event is None:
                if not trainer.running:
                    break
                continue
            samples.append(dict(sample(process), generation=event.data.generation))
            if len(samples) % 20 == 0:
                s = samples[-1]
                print(
                    f"generation {s['generation']}: {s['rss'] / 2**20:.0f} MiB, {s['files']} files, "
                    f"{s['threads']} threads, {dashboard.monitor.frames_received} frames shown",
                    flush=True,
                )
        trainer.wait()
        frames_shown = dashboard.monitor.frames_received
        dashboard.close()
        trainer.close()
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)
    if len(samples) != generations:
        raise SystemExit(f"only {len(samples)} of {generations} generations were recorded")
    baseline = samples[settle]
    half = samples[len(samples) // 2]
    peak_growth = {
        key: (max(s[key] for s in samples[settle:]) - baseline[key]) / baseline[key] for key in ("rss", "files", "threads")
    }
    window = max(1, min(20, (len(samples) - settle) // 3))  # samples in each median of a count

    def median(part, key):
        return float(np.median([s[key] for s in part]))

    growth = dict(
        rss=peak_growth["rss"],
        **{
            key: (median(samples[-window:], key) - median(samples[settle : settle + window], key))
            / median(samples[settle : settle + window], key)
            for key in ("files", "threads")
        },
    )
    summary = {
        "benchmark": "soak",
        "mode": name,
        "game": args.game,
        "generations": generations,
        "settle": settle,
        "seconds": round(time.perf_counter() - start, 1),
        "frames_shown": frames_shown,
        "rss_mib": {
            "first": round(samples[0]["rss"] / 2**20, 1),
            "settled": round(baseline["rss"] / 2**20, 1),
            "last": round(samples[-1]["rss"] / 2**20, 1),
            "max": round(max(s["rss"] for s in samples) / 2**20, 1),
        },
        "files": {"settled": baseline["files"], "last": samples[-1]["files"], "max": max(s["files"] for s in samples)},
        "threads": {"settled": baseline["threads"], "last": samples[-1]["threads"], "max": max(s["threads"] for s in samples)},
        "growth": {key: round(value, 4) for key, value in growth.items()},
        "peak_growth": {key: round(value, 4) for key, value in peak_growth.items()},
        # a leak keeps growing, a warm-up stops: the second half's growth (its last sample against its first)
        # and the memory every 10 generations tell them apart
        "second_half_growth": {key: round((samples[-1][key] - half[key]) / half[key], 4) for key in ("rss", "files", "threads")},
        "rss_mib_every_10": mib_every(samples, "rss"),
        # the C heap (glibc): blocks in use, and freed blocks the allocator keeps instead of returning them
        "heap_in_use_mib_every_10": mib_every(samples, "heap_in_use"),
        "heap_free_mib_every_10": mib_every(samples, "heap_free"),
        "target": TARGET,
        "target_met": all(value <= TARGET for value in growth.values()),
    }
    print(
        f"growth after generation {settle}: memory {growth['rss']:.1%}, files {growth['files']:.1%}, "
        f"threads {growth['threads']:.1%} (target <= {TARGET:.0%}); memory in the second half "
        f"{summary['second_half_growth']['rss']:+.1%}"
    )
    common.record(summary, args)
    return summary


if __name__ == "__main__":
    main()
