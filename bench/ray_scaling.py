"""Benchmark: the same GA generations on the local Evaluator and on a RayEvaluator, on the same cores.

Measured in the same run, round by round (the two alternate, so both see the same machine load):
  local_fps     the local pipelined Evaluator (2 sub-populations, all cores): the baseline, and on one
                machine also the limit (Ray adds processes and messages, not cores)
  ray_fps       a local Ray cluster with `--actors` actors (1 CPU each), each a full pipelined evaluator
                with half the episode slots, the GA's genomes shipped as seed chains
  ray_vs_local  ray_fps / local_fps (target >= 0.85)
  bytes_per_generation   what travelled between the master and the actors per generation
                (chunks of genomes, results, dense bases), from RayEvaluator.telemetry.bytes_shipped
  bytes_ratio   bytes_per_generation / the bytes of the population's weights (what shipping weights
                would cost: population * parameters * 4), target <= 0.01
The results of the two evaluators must be identical (checked). Ends with one JSON line.

  python bench/ray_scaling.py [--quick | --smoke] [--game pong] [--model small] [--actors 2]
"""
import argparse
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from workbench.quiet import quiet_tensorflow  # noqa: E402

quiet_tensorflow("--verbose" in sys.argv[1:])

import numpy as np  # noqa: E402

from workbench.evaluation import Evaluator  # noqa: E402
from workbench.evaluation.ray_evaluator import RayEvaluator  # noqa: E402
from workbench.evolution import GAConfig, GeneticAlgorithm, NoiseTable  # noqa: E402

TARGETS = {"ray_vs_local": 0.85, "bytes_ratio": 0.01}
SETTINGS = {  # population, generations, frame cap per episode, elite candidates x episodes
    "smoke": dict(population=6, generations=1, max_episode_frames=200, elite=(2, 1)),
    "quick": dict(population=32, generations=2, max_episode_frames=2000, elite=(2, 2)),
    "full": dict(population=64, generations=4, max_episode_frames=4000, elite=(3, 3)),
}
SLOTS = 16  # episode slots per sub-population of the local evaluator; each of the actors gets SLOTS / actors


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = parser.add_mutually_exclusive_group()
    parser.add_argument("--verbose", action="store_true", help="show TensorFlow's log lines")
    mode.add_argument("--quick", action="store_true", help="smaller population and budget (a few minutes)")
    mode.add_argument("--smoke", action="store_true", help="tiny budget: checks the script runs")
    parser.add_argument("--game", default="pong")
    parser.add_argument("--model", default="small", choices=["small", "large"])
    parser.add_argument("--actors", type=int, default=2)
    args = parser.parse_args()
    if args.actors < 1:
        parser.error("--actors must be at least 1")
    name = "smoke" if args.smoke else "quick" if args.quick else "full"
    settings = SETTINGS[name]
    noise_size = 2**22 if args.smoke else 2**26
    noise = NoiseTable.shared(noise_size, 123)
    common = dict(subpopulations=2, max_episode_frames=settings["max_episode_frames"])
    local = Evaluator(args.game, args.model, slots=SLOTS, noise=noise, **common)
    remote = RayEvaluator(args.game, args.model, actors=args.actors, num_cpus=os.cpu_count(),
                          slots=max(1, SLOTS // args.actors), noise_size=noise_size, noise_seed=123,
                          temp_dir=tempfile.mkdtemp(prefix="rwb-", dir="/tmp"), **common)
    try:
        candidates, episodes = settings["elite"]
        ga = GeneticAlgorithm(GAConfig(population_size=settings["population"], truncation=max(2, settings["population"] // 8),
                                       sigma=0.005, elite_candidates=candidates, elite_episodes=episodes),
                              local.space, seed=0)
        warm = ga.ask()[:2]  # traces the TensorFlow functions of both before timing
        local.evaluate(warm, seed=999)
        remote.evaluate(warm, seed=999)
        totals = {"local": [0, 0.0], "ray": [0, 0.0]}
        shipped, rounds = 0, 0
        while ga.generation < settings["generations"]:
            requests, seed = ga.ask(), 1000 + rounds
            start = time.perf_counter()
            expected = local.evaluate(requests, seed=seed)
            totals["local"][1] += time.perf_counter() - start
            totals["local"][0] += local.telemetry.frames
            start = time.perf_counter()
            got = remote.evaluate(requests, seed=seed)
            totals["ray"][1] += time.perf_counter() - start
            totals["ray"][0] += remote.telemetry.frames
            shipped += remote.telemetry.bytes_shipped
            for a, b in zip(got, expected):
                if not (np.array_equal(a.returns, b.returns) and np.array_equal(a.frames, b.frames)):
                    raise SystemExit("the Ray evaluator's results differ from the local evaluator's")
            ga.tell(expected)
            rounds += 1
        local_fps = totals["local"][0] / totals["local"][1]
        ray_fps = totals["ray"][0] / totals["ray"][1]
        generations = settings["generations"]
        bytes_per_generation = shipped / generations
        weights_bytes = settings["population"] * local.space.num_parameters * 4
        network_bytes = local.space.num_parameters * 4
        generation_seconds = totals["ray"][1] / generations
        print(f"local evaluator: {local_fps:10,.0f} frames/s", file=sys.stderr)
        print(f"Ray, {args.actors} actors:  {ray_fps:10,.0f} frames/s  (ray_vs_local {ray_fps / local_fps:.3f})",
              file=sys.stderr)
        print(f"bytes per generation: {bytes_per_generation:,.0f} (weights of the population: {weights_bytes:,}; "
              f"ratio {bytes_per_generation / weights_bytes:.2e})", file=sys.stderr)
        report = {
            "benchmark": "ray_scaling", "mode": name, "game": args.game, "model": args.model, "actors": args.actors,
            "cpus": os.cpu_count(), "population": settings["population"], "generations": generations,
            "local_fps": round(local_fps, 1), "ray_fps": round(ray_fps, 1), "ray_vs_local": round(ray_fps / local_fps, 3),
            "bytes_per_generation": round(bytes_per_generation), "population_weights_bytes": weights_bytes,
            "bytes_ratio": float(f"{bytes_per_generation / weights_bytes:.3g}"),
            "bytes_vs_one_network": float(f"{bytes_per_generation / network_bytes:.3g}"),
            "generation_seconds": round(generation_seconds, 2),
            "master_bytes_per_second": round(bytes_per_generation / generation_seconds),
            "actor_restarts": remote.restarts, "targets": TARGETS,
        }
        print(json.dumps(report))
    finally:
        remote.close()
        local.close()


if __name__ == "__main__":
    main()
