"""Benchmark: the same GA generations on the local Evaluator and on a RayEvaluator, and the master's own cost.

Measured in the same run, round by round (the two alternate, so both see the same machine load):
  throughput   a GA generation at throughput: a population of 8x the local evaluator's slots (2 x 16), episodes of
               realistic length, the elite round included. local_fps: the local pipelined Evaluator (2
               sub-populations, all cores), the baseline and on one machine also the limit (Ray adds processes
               and messages, not cores); ray_fps: a local Ray cluster of `--actors` 1-CPU actors, each a full
               pipelined evaluator with its share of the slots, the genomes shipped as seed chains.
               ray_vs_local = ray_fps / local_fps (target >= 0.9).
  straggler    the old sizing (population 32 on 32 slots, 2,000-frame episodes): every round is one wave of
               episodes, so both evaluators wait for the slowest one; what it measures is the straggler.
  bytes_per_generation   what travelled between the master and the actors per generation (chunks of genomes,
               results, dense bases; RayEvaluator.telemetry.bytes_shipped); bytes_ratio: that over the bytes of
               the population's weights (population * parameters * 4), target <= 0.01.
  master       the master without simulators: RayEvaluator's own loop with in-process stand-in actors that answer
               at once (chunking and pickling genomes, scheduling, unpickling and assembling results), for
               populations of 1,000 and 10,000 and 16-256 actors: genomes/s it hands out and collects, seconds
               and bytes per generation; plus Ray's own cost per task, measured on real Ray actors that answer
               at once (the driver's CPU time per task; 4 actors x 16 chunks each). From those and the
               measured per-actor rate and tail, the expected frames/s of a cluster: frames / (frames /
               (actors x per-actor rate) + tail + master seconds).
The results of the two evaluators must be identical (checked). Ends with one JSON line.

  python -m workbench.bench.ray_scaling [--quick | --smoke] [--game pong] [--model small] [--actors 2] [--master-only]
"""

import dataclasses
import os
import pickle
import sys
import tempfile
import time

from workbench.bench import common

common.quiet_start()

import numpy as np  # noqa: E402

from workbench.evaluation import Evaluator, RunSpec  # noqa: E402
from workbench.evaluation.ray_evaluator import RayEvaluator, _loopback_only, start_local_cluster  # noqa: E402
from workbench.evaluation.telemetry import Telemetry  # noqa: E402
from workbench.evolution import EvaluationRequest, GAConfig, GeneticAlgorithm, Genome, NoiseTable  # noqa: E402

TARGETS = {"ray_vs_local": 0.9, "bytes_ratio": 0.01}
SLOTS = 16  # episode slots per sub-population of the local evaluator; the actors share them
WORKLOADS = {  # population, generations, frame cap per episode, elite candidates x episodes
    "smoke": {
        "throughput": dict(population=12, generations=1, max_episode_frames=200, elite=(2, 1)),
        "straggler": dict(population=4, generations=1, max_episode_frames=200, elite=(2, 1)),
    },
    "quick": {
        "throughput": dict(population=256, generations=1, max_episode_frames=4000, elite=(5, 5)),
        "straggler": dict(population=32, generations=1, max_episode_frames=2000, elite=(2, 2)),
    },
    "full": {
        "throughput": dict(population=256, generations=2, max_episode_frames=20000, elite=(5, 5)),
        "straggler": dict(population=32, generations=2, max_episode_frames=2000, elite=(2, 2)),
    },
}
MASTER = {  # stand-in tables; "answering": real Ray actors that answer at once x chunks per actor (Ray per task)
    "smoke": dict(populations=(100,), actors=(4, 16), repeats=1, chain=5, answering=(2, 4)),
    "quick": dict(populations=(1000, 10000), actors=(16, 64, 256), repeats=2, chain=50, answering=(4, 16)),
    "full": dict(populations=(1000, 10000), actors=(16, 64, 256), repeats=3, chain=50, answering=(4, 16)),
}


def compare(local, remote, workload, seed=0):
    """Both evaluators on the same GA generations (rounds alternate in order); frames/s, bytes, tails."""
    candidates, episodes = workload["elite"]
    population = workload["population"]
    ga = GeneticAlgorithm(
        GAConfig(
            population_size=population,
            truncation=max(2, population // 8),
            sigma=0.005,
            elite_candidates=candidates,
            elite_episodes=episodes,
        ),
        local.space,
        seed=seed,
    )
    totals = {"local": [0, 0.0], "ray": [0, 0.0]}
    shipped, rounds, ray_parts, episodes_run = 0, 0, [], 0
    while ga.generation < workload["generations"]:
        requests, round_seed = ga.ask(), 1000 + rounds
        order = (("local", local), ("ray", remote)) if rounds % 2 == 0 else (("ray", remote), ("local", local))
        results = {}
        for name, evaluator in order:
            start = time.perf_counter()
            results[name] = evaluator.evaluate(requests, seed=round_seed)
            totals[name][1] += time.perf_counter() - start
            totals[name][0] += evaluator.telemetry.frames
        shipped += remote.telemetry.bytes_shipped
        ray_parts.append(remote.telemetry)
        episodes_run += remote.telemetry.episodes
        for a, b in zip(results["ray"], results["local"]):
            if not (np.array_equal(a.returns, b.returns) and np.array_equal(a.frames, b.frames)):
                raise SystemExit("the Ray evaluator's results differ from the local evaluator's")
        ga.tell(results["local"])
        rounds += 1
    generations = workload["generations"]
    local_fps, ray_fps = (totals[k][0] / totals[k][1] for k in ("local", "ray"))
    bytes_per_generation = shipped / generations
    weights_bytes = population * local.space.num_parameters * 4
    return {
        "population": population,
        "generations": generations,
        "max_episode_frames": workload["max_episode_frames"],
        "elite": list(workload["elite"]),
        "rounds": rounds,
        "frames": totals["ray"][0],
        "local_fps": round(local_fps, 1),
        "ray_fps": round(ray_fps, 1),
        "ray_vs_local": round(ray_fps / local_fps, 3),
        "ray_tail_seconds_per_generation": round(sum(t.tail_seconds for t in ray_parts) / generations, 2),
        "frames_per_episode": round(totals["ray"][0] / max(1, episodes_run), 1),
        "bytes_per_generation": round(bytes_per_generation),
        "population_weights_bytes": weights_bytes,
        "bytes_ratio": float(f"{bytes_per_generation / weights_bytes:.3g}"),
        "bytes_vs_one_network": float(f"{bytes_per_generation / (local.space.num_parameters * 4):.3g}"),
        "generation_seconds": round(totals["ray"][1] / generations, 2),
    }


# -- the master alone -------------------------------------------------------------------------------------
_EMPTY_TELEMETRY = dataclasses.asdict(Telemetry())  # a plain dict: the answering actors need no workbench import


def _answer(chunk):
    """What an actor would send back for a pickled chunk: one zero return per episode, a telemetry, no fetch."""
    requests = pickle.loads(chunk)["requests"]
    telemetry = dict(_EMPTY_TELEMETRY, episodes=sum(episodes for _, episodes, _, _ in requests))
    results = [
        (np.zeros(episodes), None, np.zeros(episodes, np.int64), np.zeros(episodes, np.int64), None)
        for _, episodes, _, _ in requests
    ]
    return pickle.dumps(dict(results=results, telemetry=telemetry, fetched=0), protocol=pickle.HIGHEST_PROTOCOL)


class StandInMaster(RayEvaluator):
    """RayEvaluator's master loop with in-process stand-in actors that answer at once (no Ray, no simulator).

    The stand-ins' own work (reading a chunk, writing its answer) is timed apart in standin_seconds, so
    evaluate()'s wall time minus it is the master's.
    """

    def _start_actors(self, actors, *unused):
        self.actors = list(range(actors))
        self._answers, self._next, self.standin_seconds = {}, 0, 0.0
        return actors

    def _submit(self, index, chunk):
        start = time.perf_counter()
        self._next += 1
        self._answers[self._next] = _answer(chunk)
        self.standin_seconds += time.perf_counter() - start
        return self._next

    def _ready(self, refs, timeout):
        return list(refs)

    def _fetch(self, ref):
        return self._answers.pop(ref)

    def _put(self, value):
        return id(value)

    def close(self):
        self.actors = []


class _AnsweringActor:
    """A Ray actor that answers a chunk at once (Ray's per-task cost, without simulators)."""

    def __init__(self, *unused):
        pass

    def ready(self):
        return os.getpid()

    def evaluate(self, chunk, *unused):
        return _answer(chunk)


class AnsweringRayEvaluator(RayEvaluator):
    """RayEvaluator on real Ray actors that answer at once, on the cluster this process has (or a new one)."""

    def _start_actors(self, actors, address, num_cpus, dashboard, temp_dir, ready_timeout):
        import ray

        if not ray.is_initialized():
            _loopback_only()
            start_local_cluster(
                num_cpus=num_cpus,
                include_dashboard=False,
                _node_ip_address="127.0.0.1",
                _temp_dir=temp_dir,
                log_to_driver=False,
                configure_logging=False,
            )
        self.owns_cluster = True  # shut down by close(), whoever started it
        remote = ray.remote(num_cpus=1)(_AnsweringActor)
        self.actors = [remote.remote() for _ in range(actors)]
        ray.get([actor.ready.remote() for actor in self.actors], timeout=ready_timeout)
        return actors


def lineage(space, population, chain, rng):
    """`population` genomes with seed chains `chain` mutations long (as a run's genomes after `chain` generations)."""
    ancestors = [Genome(space.sample_offset(rng))]
    for _ in range(chain - 1):
        ancestors.append(ancestors[-1].child(space.sample_offset(rng), 0.005))
    parents = ancestors[-20:]
    return [
        EvaluationRequest(parents[k % len(parents)].child(space.sample_offset(rng), 0.005), 1, "population")
        for k in range(population)
    ]


def master_overhead(spec, settings, temp_dir):
    """The master's seconds, genomes/s and bytes per generation with stand-in actors; Ray's CPU time per task.

    The answering actors run on the Ray cluster this process already has (its actors gone), or on a new one."""
    rng = np.random.default_rng(0)
    table = []
    for population in settings["populations"]:
        requests = lineage(spec.space(), population, settings["chain"], rng)
        for actors in settings["actors"]:
            master = StandInMaster.from_spec(spec, actors=actors)
            best = None
            for _ in range(settings["repeats"]):
                master.standin_seconds = 0.0
                start = time.perf_counter()
                master.evaluate(requests, seed=1)
                seconds = time.perf_counter() - start - master.standin_seconds
                best = seconds if best is None else min(best, seconds)
            table.append(
                dict(
                    population=population,
                    actors=actors,
                    tasks=actors * master.chunks_per_actor,
                    master_seconds=round(best, 4),
                    genomes_per_second=round(population / best),
                    bytes_per_generation=master.telemetry.bytes_shipped,
                )
            )
            master.close()
    # Ray's own cost per task: 4 answering actors, many small chunks, the driver's CPU time per task
    actors, chunks = settings["answering"]
    answering = AnsweringRayEvaluator.from_spec(spec, actors=actors, chunks_per_actor=chunks, num_cpus=actors, temp_dir=temp_dir)
    try:
        requests = lineage(spec.space(), 10 * actors * chunks, settings["chain"], rng)
        answering.evaluate(requests, seed=0)  # warm-up
        cpu, wall = time.process_time(), time.perf_counter()
        for k in range(settings["repeats"] * 3):
            answering.evaluate(requests, seed=k)
        tasks = settings["repeats"] * 3 * actors * chunks
        ray_task_cpu = (time.process_time() - cpu) / tasks
        ray_task_wall = (time.perf_counter() - wall) / tasks
    finally:
        answering.close()
    return table, ray_task_cpu, ray_task_wall


def expected_scaling(table, ray_task_cpu, per_actor_fps, tail_seconds, frames_per_episode):
    """Expected frames/s of clusters of the table's sizes (one episode per member, the throughput run's
    episodes, per-actor rate and tail), with the master's measured seconds; efficiency against actors x rate."""
    rows = []
    for entry in table:
        frames = entry["population"] * frames_per_episode
        master = entry["master_seconds"] + entry["tasks"] * ray_task_cpu
        ideal = entry["actors"] * per_actor_fps
        seconds = frames / ideal + tail_seconds + master
        rows.append(
            dict(
                population=entry["population"],
                actors=entry["actors"],
                master_seconds=round(master, 3),
                generation_seconds=round(seconds, 2),
                frames_per_second=round(frames / seconds),
                efficiency=round(frames / seconds / ideal, 3),
            )
        )
    return rows


def main():
    parser = common.parser(
        __doc__, quick="one generation at throughput (a few minutes)", smoke="tiny budget: checks the script runs"
    )
    parser.add_argument("--game", default="pong")
    parser.add_argument("--model", default="small", choices=["small", "large"])
    parser.add_argument("--actors", type=int, default=2)
    parser.add_argument("--master-only", action="store_true", help="only the master's overhead (no simulators)")
    args = parser.parse_args()
    if args.actors < 1:
        parser.error("--actors must be at least 1")
    name = common.mode_of(args)
    noise_size = 2**22 if args.smoke else 2**26
    temp_dir = tempfile.mkdtemp(prefix="rwb-", dir="/tmp")  # Ray's socket paths must stay short
    report = {
        "benchmark": "ray_scaling",
        "mode": name,
        "game": args.game,
        "model": args.model,
        "actors": args.actors,
        "cpus": os.cpu_count(),
        "targets": TARGETS,
    }
    if not args.master_only:
        noise = NoiseTable.shared(noise_size, 123)
        local = Evaluator(args.game, args.model, subpopulations=2, slots=SLOTS, noise=noise, max_episode_frames=20000)
        remote = RayEvaluator(  # its cluster has room for the answering actors, which run on it next
            args.game,
            args.model,
            actors=args.actors,
            num_cpus=max(os.cpu_count(), MASTER[name]["answering"][0]),
            slots=max(1, SLOTS // args.actors),
            subpopulations=2,
            max_episode_frames=20000,
            noise_size=noise_size,
            noise_seed=123,
            temp_dir=temp_dir,
        )
        try:
            warm = GeneticAlgorithm(
                GAConfig(population_size=4, truncation=2, elite_candidates=1, elite_episodes=1), local.space
            ).ask()[:2]
            local.evaluate(warm, seed=999)  # traces the TensorFlow functions of both before timing
            remote.evaluate(warm, seed=999)
            for workload in ("throughput", "straggler"):
                settings = WORKLOADS[name][workload]
                for evaluator in (local, remote):
                    evaluator.set_episode_cap(settings["max_episode_frames"])
                report[workload] = compare(local, remote, settings)
                r = report[workload]
                print(
                    f"{workload}: population {r['population']}, cap {r['max_episode_frames']}: local "
                    f"{r['local_fps']:,.0f} frames/s, Ray {r['ray_fps']:,.0f} (ray_vs_local {r['ray_vs_local']:.3f}); "
                    f"{r['bytes_per_generation']:,} bytes per generation",
                    file=sys.stderr,
                )
            report["ray_vs_local"] = report["throughput"]["ray_vs_local"]
            report["bytes_ratio"] = report["throughput"]["bytes_ratio"]
            report["actor_restarts"] = remote.restarts
            remote.owns_cluster = False  # its actors go; the cluster stays for the answering actors
        finally:
            remote.close()
            local.close()
    spec = RunSpec(args.game, args.model, noise_size=noise_size, noise_seed=123)
    table, ray_task_cpu, ray_task_wall = master_overhead(spec, MASTER[name], temp_dir)
    report["master"] = dict(
        table=table, ray_task_cpu_ms=round(ray_task_cpu * 1e3, 3), ray_task_wall_ms=round(ray_task_wall * 1e3, 3)
    )
    for row in table:
        print(
            f"master: population {row['population']:>6,}, {row['actors']:>3} actors: {row['master_seconds']:.3f} s "
            f"per generation, {row['genomes_per_second']:,} genomes/s, {row['bytes_per_generation']:,} bytes",
            file=sys.stderr,
        )
    print(
        f"Ray per task: {ray_task_cpu * 1e3:.2f} ms of the driver's CPU, {ray_task_wall * 1e3:.2f} ms of wall time",
        file=sys.stderr,
    )
    if "throughput" in report:
        throughput = report["throughput"]
        scaling = expected_scaling(
            table,
            ray_task_cpu,
            throughput["ray_fps"] / args.actors,
            throughput["ray_tail_seconds_per_generation"],
            throughput["frames_per_episode"],
        )
        report["expected_scaling"] = scaling
        for row in scaling:
            print(
                f"expected: population {row['population']:>6,} on {row['actors']:>3} machines-worth of actors: "
                f"{row['frames_per_second']:>10,} frames/s, efficiency {row['efficiency']:.0%}",
                file=sys.stderr,
            )
    common.record(report, args)


if __name__ == "__main__":
    main()
