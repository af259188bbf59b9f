"""Benchmark: GA generations on an Atari game, end to end, in frames per second.

The same GA rounds (population, elite re-evaluation; 1 episode per member, a
frame cap per episode) are evaluated by each candidate, for SmallModel and
LargeModel. Measured in the same run:
  naive_fps        what a newcomer writes: a Gymnasium ALE/<Game>-v5 env with AtariPreprocessing
                   (no-op starts, frame skip 4, max-pool, 84x84 grayscale) and a 4-frame stack, one
                   Keras model per member (weights set from the genome; called as model(x)),
                   members evaluated one after another in a Python loop
  unpipelined_fps  our Evaluator with one sub-population of 2 * SLOTS episode slots
  pipelined_fps    our Evaluator as configured by default: 2 sub-populations of SLOTS slots, in threads
  roofline_fps     composed from this run's measurements: the emulation limit (ALE's own C++
                   frame-skip loop, one emulator, times the thread count; bench/emulation.py's
                   raw_ale_fps) and the inference roofline of distinct float32 members
                   (max(weight bytes / read bandwidth, FLOPs / matmul peak); bench/population_inference.py),
                   run back to back: 1 / (1 / emulation + 1 / (4 frames * observations/s))
The unpipelined and pipelined evaluators must return identical results (checked), and the Keras
network must compute our network's logits (checked). Rounds alternate between the two evaluators
so both see the same machine load. Telemetry says where each evaluator's time went. Ends with one
JSON line; ratios are what to read (absolute figures on shared machines are noise).

  python bench/end_to_end.py [--quick | --smoke] [--game pong] [--slots 16]
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from workbench.quiet import quiet_tensorflow  # noqa: E402

quiet_tensorflow("--verbose" in sys.argv[1:])

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from emulation import RawAle  # noqa: E402
from population_inference import flops_per_observation, measure_peak_gflops, measure_read_gbps  # noqa: E402

from workbench.envs import resolve_atari_game  # noqa: E402
from workbench.evaluation import Evaluator  # noqa: E402
from workbench.evolution import GAConfig, GeneticAlgorithm  # noqa: E402
from workbench.models.layers import Conv2D  # noqa: E402

# idle_fraction: the default (pipelined) evaluator's idle share of its lanes' time. On a CPU-only machine both
# sub-populations share the same cores, so pipelining cannot overlap two resources as the 2018 design's
# CPU emulation and GPU inference did; pipelined_vs_unpipelined is reported for machines with a GPU, without
# a target.
TARGETS = {"vs_naive": 15, "idle_fraction": 0.05, "vs_roofline": 0.7}
FRAMESKIP = 4
SETTINGS = {  # population, generations, frame cap per episode, naive members
    "smoke": dict(population=4, generations=1, max_episode_frames=200, naive_members=1, elite=(1, 1)),
    "quick": dict(population=32, generations=2, max_episode_frames=2000, naive_members=2, elite=(2, 2)),
    "full": dict(population=64, generations=3, max_episode_frames=4000, naive_members=3, elite=(3, 3)),
}


class NaiveLoop:
    """Gymnasium + Keras, one member after another (see the module docstring)."""

    def __init__(self, game, model, max_episode_frames):
        import ale_py
        import gymnasium as gym
        from ale_py.registration import rom_id_to_name

        gym.register_envs(ale_py)
        env = gym.make(f"ALE/{rom_id_to_name(game)}-v5", frameskip=1, repeat_action_probability=0.0,
                       max_num_frames_per_episode=max_episode_frames)
        env = gym.wrappers.AtariPreprocessing(env, noop_max=30, frame_skip=FRAMESKIP, screen_size=84)
        self.env = gym.wrappers.FrameStackObservation(env, 4)
        self.model = model

    def keras_network(self, parameters):
        """A Keras network with the genome's weights, the layers of our model."""
        layers = [tf.keras.Input((84, 84, 4))]
        last = len(self.model.layers) - 1
        for i, layer in enumerate(self.model.layers):
            activation = "relu" if i < last else None
            if isinstance(layer, Conv2D):
                layers.append(tf.keras.layers.Conv2D(layer.filters, layer.kernel_size, layer.stride, "same",
                                                     activation=activation))
            else:
                if i == 0 or isinstance(self.model.layers[i - 1], Conv2D):
                    layers.append(tf.keras.layers.Flatten())
                layers.append(tf.keras.layers.Dense(layer.filters if hasattr(layer, "filters") else layer.units,
                                                    activation=activation))
        network = tf.keras.Sequential(layers)
        weights = []
        for layer, (kernel, bias) in zip(self.model.layers, self.model.unflatten(parameters)):
            if isinstance(layer, Conv2D):
                kernel = kernel.reshape(layer.kernel_size, layer.kernel_size, -1, layer.filters)
            weights += [kernel, bias]
        network.set_weights(weights)
        return network

    def run(self, genomes, decoder, seed):
        frames = 0
        for k, genome in enumerate(genomes):
            network = self.keras_network(decoder.decode(genome))
            observation, _ = self.env.reset(seed=seed + k)
            done = False
            while not done:
                x = np.transpose(np.asarray(observation, np.float32), (1, 2, 0))[None] / 255.0
                action = int(np.argmax(network(x, training=False)[0]))
                observation, _, terminated, truncated, _ = self.env.step(action)
                done = terminated or truncated
            frames += self.env.unwrapped.ale.getEpisodeFrameNumber()
        return frames


def emulation_limit_fps(game, threads, seconds):
    raw = RawAle(game, seed=0)
    raw.run(200)
    best = 0.0
    for _ in range(3):
        start = time.perf_counter()
        frames = 0
        while time.perf_counter() - start < seconds:
            frames += raw.run(500)
        best = max(best, frames / (time.perf_counter() - start))
    return best * threads


def inference_roofline_obs_per_s(model, read_gbps, peak_gflops):
    weight_seconds = model.num_parameters * 4 / (read_gbps * 1e9)
    flop_seconds = flops_per_observation(model) / (peak_gflops * 1e9)
    return 1.0 / max(weight_seconds, flop_seconds)


def bench_model(name, game, settings, slots, limits, seed=0):
    population, generations, max_episode_frames = settings["population"], settings["generations"], settings["max_episode_frames"]
    candidates, elite_episodes = settings["elite"]
    pipelined = Evaluator(game, name, subpopulations=2, slots=slots, max_episode_frames=max_episode_frames)
    unpipelined = Evaluator(game, name, subpopulations=1, slots=2 * slots, max_episode_frames=max_episode_frames)
    config = GAConfig(population_size=population, truncation=max(2, population // 8), sigma=0.002,
                      elite_candidates=candidates, elite_episodes=elite_episodes)
    ga = GeneticAlgorithm(config, pipelined.space, seed=seed)
    warm = ga.ask()[: 2 * slots]
    pipelined.evaluate(warm, seed=99), unpipelined.evaluate(warm, seed=99)  # traces the tf.functions
    totals = {"pipelined": [], "unpipelined": []}
    round_index = 0
    while ga.generation < generations:
        requests = ga.ask()
        order = (("pipelined", pipelined), ("unpipelined", unpipelined))
        if round_index % 2:
            order = order[::-1]
        results = {}
        for label, evaluator in order:
            results[label] = evaluator.evaluate(requests, seed=round_index)
            totals[label].append(evaluator.telemetry)
        for a, b in zip(results["pipelined"], results["unpipelined"]):
            assert np.array_equal(a.returns, b.returns) and np.array_equal(a.frames, b.frames), \
                "the evaluators disagree: a benchmark of wrong answers is void"
        ga.tell(results["pipelined"])
        round_index += 1

    def summary(parts):
        wall = sum(t.wall_seconds for t in parts)
        frames = sum(t.frames for t in parts)
        split = {k: sum(getattr(t, f"{k}_seconds") for t in parts) / (wall * parts[0].subpopulations)
                 for k in ("emulation", "inference", "weight_loading", "idle")}
        return frames / wall, frames, {k: round(v, 3) for k, v in split.items()}

    pipelined_fps, frames, pipelined_split = summary(totals["pipelined"])
    unpipelined_fps, _, unpipelined_split = summary(totals["unpipelined"])

    # The naive loop on a few members of the first generation (same genomes, same frame cap).
    model = pipelined.models[0]
    naive = NaiveLoop(game, model, max_episode_frames)
    genomes = [r.genome for r in GeneticAlgorithm(config, pipelined.space, seed=seed).ask()[: settings["naive_members"]]]
    observation = np.random.default_rng(0).integers(0, 256, (1, 84, 84, 4), dtype=np.uint8)
    model.set_slot(0, pipelined.decoder.decode(genomes[0]))
    ours = model(observation, np.zeros(1, np.int32)).numpy()
    theirs = naive.keras_network(pipelined.decoder.decode(genomes[0]))(observation.astype(np.float32) / 255.0).numpy()
    assert np.allclose(ours, theirs, rtol=1e-3, atol=1e-4 * np.abs(ours).max()), "the Keras network differs from ours"
    naive.run(genomes[:1], pipelined.decoder, seed)  # warm-up (Keras traces its call)
    start = time.perf_counter()
    naive_frames = naive.run(genomes, pipelined.decoder, seed + 1)
    naive_fps = naive_frames / (time.perf_counter() - start)

    inference_obs = inference_roofline_obs_per_s(model, limits["read_gbps"], limits["peak_gflops"])
    roofline_fps = 1.0 / (1.0 / limits["emulation_fps"] + 1.0 / (FRAMESKIP * inference_obs))
    pipelined.close(), unpipelined.close()
    return {
        "naive_fps": round(naive_fps, 1),
        "unpipelined_fps": round(unpipelined_fps, 1),
        "pipelined_fps": round(pipelined_fps, 1),
        "roofline_fps": round(roofline_fps, 1),
        "vs_naive": round(pipelined_fps / naive_fps, 3),
        "pipelined_vs_unpipelined": round(pipelined_fps / unpipelined_fps, 3),
        "idle_fraction": pipelined_split["idle"],
        "vs_roofline": round(pipelined_fps / roofline_fps, 3),
        "inference_roofline_fps": round(FRAMESKIP * inference_obs, 1),
        "frames_per_evaluator": frames,
        "pipelined_time_split": pipelined_split,
        "unpipelined_time_split": unpipelined_split,
        "parameters": model.num_parameters,
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = parser.add_mutually_exclusive_group()
    parser.add_argument("--verbose", action="store_true", help="show TensorFlow's log lines")
    mode.add_argument("--quick", action="store_true", help="small population and frame budget (under 5 minutes)")
    mode.add_argument("--smoke", action="store_true", help="tiny budget: checks the script runs")
    parser.add_argument("--game", default="pong", help="Atari game (default pong)")
    parser.add_argument("--slots", type=int, default=16, help="episode slots per sub-population (default 16)")
    parser.add_argument("--models", nargs="+", default=["small", "large"], choices=["small", "large"])
    args = parser.parse_args(argv)
    if args.slots < 1:
        parser.error("--slots must be >= 1")
    mode_name = "smoke" if args.smoke else "quick" if args.quick else "full"
    settings = SETTINGS[mode_name]
    try:
        game = resolve_atari_game(args.game)
    except ValueError as error:
        parser.error(str(error))
    threads = tf.config.threading.get_intra_op_parallelism_threads() or os.cpu_count()
    read_gbps, _, _ = measure_read_gbps(1 if args.smoke else 3, 16 if args.smoke else 256)
    limits = {
        "read_gbps": read_gbps,
        "peak_gflops": measure_peak_gflops(1 if args.smoke else 5, 512 if args.smoke else 2048),
        "emulation_fps": emulation_limit_fps(game, threads, 0.2 if args.smoke else 1.0),
    }
    print(f"{game}: emulation limit {limits['emulation_fps']:.0f} frames/s ({threads} threads), "
          f"read {read_gbps:.1f} GB/s, matmul peak {limits['peak_gflops']:.0f} GFLOP/s")
    results = {}
    columns = ["naive_fps", "unpipelined_fps", "pipelined_fps", "roofline_fps"]
    print(f"{'model':<8}" + "".join(f"{c:>17}" for c in columns) + "   vs_naive pipe/unpipe vs_roofline idle")
    for name in args.models:
        r = bench_model(name, game, settings, args.slots, limits)
        results[name] = r
        print(f"{name:<8}" + "".join(f"{r[c]:>17.1f}" for c in columns)
              + f"   {r['vs_naive']:>8.2f} {r['pipelined_vs_unpipelined']:>11.2f} {r['vs_roofline']:>11.2f}"
              f" {r['idle_fraction']:>5.1%}")
        print(f"{'':<8}time split pipelined {r['pipelined_time_split']}, unpipelined {r['unpipelined_time_split']}")
    summary = {
        "benchmark": "end_to_end",
        "mode": mode_name,
        "game": game,
        "unit": "frames/s",
        "threads": threads,
        "emulation_limit_fps": round(limits["emulation_fps"], 1),
        "read_gbps": round(read_gbps, 2),
        "peak_gflops": round(limits["peak_gflops"], 1),
        "targets": TARGETS,
        "results": results,
    }
    print(json.dumps(summary, separators=(",", ":")))
    return summary


if __name__ == "__main__":
    main()
