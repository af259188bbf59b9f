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
                   frame-skip loop, one emulator, times the thread count; workbench/bench/emulation.py's
                   raw_ale_fps) and the inference roofline of distinct float32 members
                   (max(weight bytes / read bandwidth, FLOPs / matmul peak); workbench/bench/population_inference.py),
                   run back to back: 1 / (1 / emulation + 1 / (4 frames * observations/s))
The limits are measured again before every round, so a shared machine's drift lands in the limit as
in the candidates, and the whole measurement runs three times (quick and full modes): the JSON line
gives the median of each figure, the spread (min, max) of each ratio, and every run. The targets are
read on the medians. The unpipelined and pipelined evaluators must return identical results
(checked), and the Keras network must compute our network's logits (checked). Rounds alternate
between the two evaluators so both see the same machine load. Telemetry says where each evaluator's
time went (idle_fraction: the pipelined evaluator's idle share). A row for the GA's low-rank mode
(mutation_rank 1) compares its children run through the op's perturbed mode with the same children
materialised. Ends with one JSON line; ratios are what to read (absolute figures on shared machines are
noise).

  python -m workbench.bench.end_to_end [--quick | --smoke] [--game pong] [--slots 16]
"""

import os
import time

from workbench.bench import common

common.quiet_start(keras=True)  # the naive loop is a Keras network per genome

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from workbench.bench.emulation import RawAle  # noqa: E402
from workbench.bench.population_inference import flops_per_observation, measure_peak_gflops, measure_read_gbps  # noqa: E402
from workbench.envs import resolve_atari_game  # noqa: E402
from workbench.evaluation import TIME_SPLIT, Evaluator  # noqa: E402
from workbench.evolution import GAConfig, GeneticAlgorithm  # noqa: E402
from workbench.models.layers import Conv2D  # noqa: E402

# idle_fraction: the default (pipelined) evaluator's idle share of its lanes' time. On a CPU-only machine both
# sub-populations share the same cores, so pipelining cannot overlap two resources as the 2018 design's
# CPU emulation and GPU inference did; pipelined_vs_unpipelined is reported for machines with a GPU, without
# a target.
TARGETS = {"vs_naive": 15, "idle_fraction": 0.05, "vs_roofline": 0.7}
FRAMESKIP = 4
# population, generations, frame cap per episode, naive members, runs. The populations are 4x the 32 slots, so
# a round is mostly its busy phase (a population of 32 on 32 slots measured one wave of episodes and its
# straggler, which is what made the quick vs_naive lower than the full one).
SETTINGS = {
    "smoke": dict(population=4, generations=1, max_episode_frames=200, naive_members=1, elite=(1, 1), repeats=1),
    "quick": dict(population=128, generations=1, max_episode_frames=1000, naive_members=2, elite=(2, 2), repeats=3),
    "full": dict(population=128, generations=2, max_episode_frames=4000, naive_members=3, elite=(3, 3), repeats=3),
}


class NaiveLoop:
    """Gymnasium + Keras, one member after another (see the module docstring)."""

    def __init__(self, game, model, max_episode_frames):
        import ale_py
        import gymnasium as gym
        from ale_py.registration import rom_id_to_name

        gym.register_envs(ale_py)
        env = gym.make(
            f"ALE/{rom_id_to_name(game)}-v5",
            frameskip=1,
            repeat_action_probability=0.0,
            max_num_frames_per_episode=max_episode_frames,
        )
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
                layers.append(
                    tf.keras.layers.Conv2D(layer.filters, layer.kernel_size, layer.stride, "same", activation=activation)
                )
            else:
                if i == 0 or isinstance(self.model.layers[i - 1], Conv2D):
                    if layer.flatten == "channels_first":  # our dense layer's row order: channel, height, width
                        layers.append(tf.keras.layers.Permute((3, 1, 2)))
                    layers.append(tf.keras.layers.Flatten())
                layers.append(
                    tf.keras.layers.Dense(layer.filters if hasattr(layer, "filters") else layer.units, activation=activation)
                )
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


def measure_limits(game, threads, smoke):
    """This moment's limits: read bandwidth, matmul peak, the emulation limit (measured between candidate rounds,
    so a shared machine's drift lands in both)."""
    read_gbps, _, _ = measure_read_gbps(1 if smoke else 2, 16 if smoke else 128)
    return {
        "read_gbps": read_gbps,
        "peak_gflops": measure_peak_gflops(1 if smoke else 3, 512 if smoke else 2048),
        "emulation_fps": emulation_limit_fps(game, threads, 0.2 if smoke else 0.5),
    }


def roofline(model, limits):
    """(composed roofline, inference roofline) in frames/s for these limits: the composed one is
    1 / (1 / emulation + 1 / (FRAMESKIP * inference observations/s))."""
    inference_fps = FRAMESKIP * inference_roofline_obs_per_s(model, limits["read_gbps"], limits["peak_gflops"])
    return 1.0 / (1.0 / limits["emulation_fps"] + 1.0 / inference_fps), inference_fps


def bench_run(pipelined, unpipelined, game, settings, threads, smoke, seed):
    """One run: the GA's rounds on both evaluators (alternating), the limits measured before each round."""
    population, generations = settings["population"], settings["generations"]
    candidates, elite_episodes = settings["elite"]
    config = GAConfig(
        population_size=population,
        truncation=max(2, population // 8),
        sigma=0.002,
        elite_candidates=candidates,
        elite_episodes=elite_episodes,
    )
    ga = GeneticAlgorithm(config, pipelined.space, seed=seed)
    totals = {"pipelined": [], "unpipelined": []}
    rounds = []  # (frames of the round, the limits measured just before it)
    while ga.generation < generations:
        requests = ga.ask()
        limits = measure_limits(game, threads, smoke)
        order = (("pipelined", pipelined), ("unpipelined", unpipelined))
        if len(rounds) % 2:
            order = order[::-1]
        results = {}
        for label, evaluator in order:
            results[label] = evaluator.evaluate(requests, seed=1000 * seed + len(rounds))
            totals[label].append(evaluator.telemetry)
        for a, b in zip(results["pipelined"], results["unpipelined"]):
            assert np.array_equal(a.returns, b.returns) and np.array_equal(a.frames, b.frames), (
                "the evaluators disagree: a benchmark of wrong answers is void"
            )
        rounds.append((pipelined.telemetry.frames, limits))
        ga.tell(results["pipelined"])
    return totals, rounds, config


def evaluator_summary(parts):
    wall = sum(t.wall_seconds for t in parts)
    frames = sum(t.frames for t in parts)
    split = {k: sum(getattr(t, f"{k}_seconds") for t in parts) / (wall * parts[0].subpopulations) for k in TIME_SPLIT}
    return frames / wall, frames, {k: round(v, 3) for k, v in split.items()}


def bench_perturbed(name, game, settings, slots):
    """The GA's low-rank mode (mutation_rank 1): the same rank-1 children run through the op's perturbed mode
    (perturbed_rank 1: the parent's weights plus the factors, never materialised) and materialised (perturbed_rank
    0), rounds alternating. The two round differently, so their episodes may differ a little in length."""
    cap = settings["max_episode_frames"]
    factored = Evaluator(game, name, subpopulations=2, slots=slots, max_episode_frames=cap, perturbed_rank=1)
    materialised = Evaluator(game, name, subpopulations=2, slots=slots, max_episode_frames=cap)
    candidates, elite_episodes = settings["elite"]
    population = settings["population"]
    config = GAConfig(
        population_size=population,
        truncation=max(2, population // 8),
        sigma=0.002,
        elite_candidates=candidates,
        elite_episodes=elite_episodes,
        mutation_rank=1,
    )
    ga = GeneticAlgorithm(config, factored.space, seed=7)
    warm = ga.ask()[: 2 * slots]
    factored.evaluate(warm, seed=98), materialised.evaluate(warm, seed=98)
    totals = {"perturbed": [0, 0.0], "materialised": [0, 0.0]}
    rounds = 0
    while ga.generation < max(2, settings["generations"]):  # generation 0 has no children: parents only
        requests = ga.ask()
        order = (("perturbed", factored), ("materialised", materialised))
        results = {}
        for label, evaluator in order if rounds % 2 == 0 else order[::-1]:
            results[label] = evaluator.evaluate(requests, seed=500 + rounds)
            if ga.generation > 0:
                totals[label][0] += evaluator.telemetry.frames
                totals[label][1] += evaluator.telemetry.wall_seconds
        ga.tell(results["perturbed"])
        rounds += 1
    factored.close(), materialised.close()
    perturbed_fps, materialised_fps = (totals[k][0] / totals[k][1] for k in ("perturbed", "materialised"))
    return {
        "perturbed_fps": round(perturbed_fps, 1),
        "materialised_fps": round(materialised_fps, 1),
        "perturbed_vs_materialised": round(perturbed_fps / materialised_fps, 3),
        "frames": {k: v[0] for k, v in totals.items()},
    }


RATIOS = ("vs_naive", "pipelined_vs_unpipelined", "vs_roofline", "idle_fraction")
FIGURES = ("naive_fps", "unpipelined_fps", "pipelined_fps", "roofline_fps", "inference_roofline_fps")


def bench_model(name, game, settings, slots, threads, smoke):
    """settings["repeats"] runs of the GA (seeds 0, 1, ...) on both evaluators, each with its naive loop; the medians,
    the spread (min, max) of the ratios, and every run."""
    max_episode_frames = settings["max_episode_frames"]
    pipelined = Evaluator(game, name, subpopulations=2, slots=slots, max_episode_frames=max_episode_frames)
    unpipelined = Evaluator(game, name, subpopulations=1, slots=2 * slots, max_episode_frames=max_episode_frames)
    warm = GeneticAlgorithm(
        GAConfig(population_size=max(2, 2 * slots), truncation=2, elite_candidates=1, elite_episodes=1), pipelined.space, seed=99
    ).ask()
    pipelined.evaluate(warm, seed=99), unpipelined.evaluate(warm, seed=99)  # traces the tf.functions
    model = pipelined.models[0]
    runs = []
    for repeat in range(settings["repeats"]):
        totals, rounds, config = bench_run(pipelined, unpipelined, game, settings, threads, smoke, seed=repeat)
        pipelined_fps, frames, pipelined_split = evaluator_summary(totals["pipelined"])
        unpipelined_fps, _, unpipelined_split = evaluator_summary(totals["unpipelined"])
        # the run's rooflines: its rounds' frames at the limits measured just before each round
        round_frames = sum(f for f, _ in rounds)
        roofline_fps = round_frames / sum(f / roofline(model, limits)[0] for f, limits in rounds)
        inference_fps = round_frames / sum(f / roofline(model, limits)[1] for f, limits in rounds)
        medians = {key: float(np.median([limits[key] for _, limits in rounds])) for key in rounds[0][1]}
        # the naive loop on a few members of this run's first generation (same genomes, same frame cap)
        naive = NaiveLoop(game, model, max_episode_frames)
        genomes = [r.genome for r in GeneticAlgorithm(config, pipelined.space, seed=repeat).ask()]
        genomes = genomes[: settings["naive_members"]]
        if repeat == 0:
            observation = np.random.default_rng(0).integers(0, 256, (1, 84, 84, 4), dtype=np.uint8)
            model.set_slot(0, pipelined.decoder.decode(genomes[0]))
            ours = model(observation, np.zeros(1, np.int32)).numpy()
            theirs = naive.keras_network(pipelined.decoder.decode(genomes[0]))(observation.astype(np.float32) / 255.0)
            assert np.allclose(ours, theirs.numpy(), rtol=1e-3, atol=1e-4 * np.abs(ours).max()), (
                "the Keras network differs from ours"
            )
        naive.run(genomes[:1], pipelined.decoder, repeat)  # warm-up (Keras traces its call)
        start = time.perf_counter()
        naive_frames = naive.run(genomes, pipelined.decoder, repeat + 1)
        naive_fps = naive_frames / (time.perf_counter() - start)
        runs.append(
            {
                "naive_fps": round(naive_fps, 1),
                "unpipelined_fps": round(unpipelined_fps, 1),
                "pipelined_fps": round(pipelined_fps, 1),
                "roofline_fps": round(roofline_fps, 1),
                "vs_naive": round(pipelined_fps / naive_fps, 3),
                "pipelined_vs_unpipelined": round(pipelined_fps / unpipelined_fps, 3),
                "vs_roofline": round(pipelined_fps / roofline_fps, 3),
                "idle_fraction": pipelined_split["idle"],
                "inference_roofline_fps": round(inference_fps, 1),
                "frames_per_evaluator": frames,
                "pipelined_time_split": pipelined_split,
                "unpipelined_time_split": unpipelined_split,
                "limits": {key: round(value, 2) for key, value in medians.items()},
            }
        )
    pipelined.close(), unpipelined.close()
    result = {key: round(float(np.median([run[key] for run in runs])), 3) for key in RATIOS + FIGURES}
    result["spread"] = {key: [min(run[key] for run in runs), max(run[key] for run in runs)] for key in RATIOS}
    middle = sorted(runs, key=lambda run: run["pipelined_fps"])[len(runs) // 2]  # the median run's time splits
    result.update(
        pipelined_time_split=middle["pipelined_time_split"],
        unpipelined_time_split=middle["unpipelined_time_split"],
        frames_per_evaluator=middle["frames_per_evaluator"],
        parameters=model.num_parameters,
        runs=runs,
    )
    return result


def main(argv=None):
    parser = common.parser(
        __doc__, quick="small population and frame budget (under 5 minutes)", smoke="tiny budget: checks the script runs"
    )
    parser.add_argument("--game", default="pong", help="Atari game (default pong)")
    parser.add_argument("--slots", type=int, default=16, help="episode slots per sub-population (default 16)")
    parser.add_argument("--models", nargs="+", default=["small", "large"], choices=["small", "large"])
    args = parser.parse_args(argv)
    if args.slots < 1:
        parser.error("--slots must be >= 1")
    mode_name = common.mode_of(args)
    settings = SETTINGS[mode_name]
    try:
        game = resolve_atari_game(args.game)
    except ValueError as error:
        parser.error(str(error))
    threads = tf.config.threading.get_intra_op_parallelism_threads() or os.cpu_count()
    limits = measure_limits(game, threads, args.smoke)
    print(
        f"{game}: emulation limit {limits['emulation_fps']:.0f} frames/s ({threads} threads), "
        f"read {limits['read_gbps']:.1f} GB/s, matmul peak {limits['peak_gflops']:.0f} GFLOP/s (at the start; "
        "each round's rooflines use the limits measured just before it)"
    )
    results = {}
    columns = ["naive_fps", "unpipelined_fps", "pipelined_fps", "roofline_fps"]
    print(f"{'model':<8}" + "".join(f"{c:>17}" for c in columns) + "   vs_naive pipe/unpipe vs_roofline idle")
    for name in args.models:
        r = bench_model(name, game, settings, args.slots, threads, args.smoke)
        results[name] = r
        print(
            f"{name:<8}"
            + "".join(f"{r[c]:>17.1f}" for c in columns)
            + f"   {r['vs_naive']:>8.2f} {r['pipelined_vs_unpipelined']:>11.2f} {r['vs_roofline']:>11.2f}"
            f" {r['idle_fraction']:>5.1%}"
        )
        print(f"{'':<8}time split pipelined {r['pipelined_time_split']}, unpipelined {r['unpipelined_time_split']}")
        print(f"{'':<8}medians of {len(r['runs'])} runs; spread (min, max): {r['spread']}")
        r["perturbed"] = bench_perturbed(name, game, settings, args.slots)
        p = r["perturbed"]
        print(
            f"{'':<8}low-rank children (mutation_rank 1): perturbed mode {p['perturbed_fps']:,.0f} frames/s, "
            f"materialised {p['materialised_fps']:,.0f} ({p['perturbed_vs_materialised']:.3f})"
        )
    summary = {
        "benchmark": "end_to_end",
        "mode": mode_name,
        "game": game,
        "unit": "frames/s",
        "threads": threads,
        "emulation_limit_fps": round(limits["emulation_fps"], 1),
        "read_gbps": round(limits["read_gbps"], 2),
        "peak_gflops": round(limits["peak_gflops"], 1),
        "targets": TARGETS,
        "results": results,
    }
    common.record(summary, args)
    return summary


if __name__ == "__main__":
    main()
