"""Benchmark: MuJoCo locomotion tasks (Gymnasium v5), in environment steps per second.

The same task, number of simulations and thread count for every contender; each step's actions come
from a fixed policy-sized network (observation -> 64 tanh -> actions tanh, fixed random weights), so
every loop does realistic per-step work. Termination is off (terminate_when_unhealthy=False) and every
round starts from fresh episodes shorter than the 1,000-step limit, so no contender pays for resets
inside a round. Measured in the same run, in interleaved timing rounds (best round of each):
  raw_fps               the limit: MuJoCo's own step loop in C++ (workbench/bench/native/mujoco_raw_loop.cc,
                        built here against the installed libmujoco: the policy, frame_skip mj_step,
                        mj_rnePostConstraint; no observation or reward terms) on one thread, times
                        the thread count
  op_fps                our ops inside a tf.function loop (tf.while_loop of observation -> policy ->
                        step_and_observe; no Python per step), the evaluator's way
  op_python_fps         our ops driven from Python through MujocoBatch (numpy policy)
  envpool_sync_fps      EnvPool's task of the same name (its own v5 port), batch = all simulations
  envpool_async_fps     EnvPool asynchronous: half the simulations per recv()
  gymnasium_sync_fps    Gymnasium's SyncVectorEnv of the task
  gymnasium_async_fps   Gymnasium's AsyncVectorEnv (one spawned process per simulation, at most 8 here)
Ratios op_vs_raw, op_vs_envpool (against EnvPool's better mode) and op_vs_gymnasium_vector are what
to read; absolute numbers on shared machines are noise. Prints a table, then one JSON line.

  python -m workbench.bench.mujoco_steps [--quick | --smoke] [--task HalfCheetah-v5] [--simulations 64] [--threads 2]
"""

import functools
import hashlib
import os
import subprocess
import sys
import time

from workbench.bench import common

common.quiet_start()
HERE = common.HERE

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from workbench.envs import MujocoBatch, resolve_mujoco_task  # noqa: E402
from workbench.ops import mujoco_env  # noqa: E402

sys.path.append(os.path.join(common.CHECKOUT, "ops"))  # the checkout's build helpers
import build_mujoco  # noqa: E402  (ops/build_mujoco.py)

TARGETS = {"op_vs_raw": 0.8, "op_vs_envpool": 1.2}
HIDDEN = 64
CACHE = os.path.join(os.path.expanduser(os.environ.get("XDG_CACHE_HOME", "~/.cache")), "deep-neuroevolution-workbench")


def no_termination(task_id):
    """The keyword that turns termination off, for the tasks that terminate."""
    task = resolve_mujoco_task(task_id)
    return {"terminate_when_unhealthy": False} if "terminate_when_unhealthy" in task.defaults else {}


class Policy:
    """The fixed random network every contender computes its actions with (numpy and TF forms)."""

    def __init__(self, observation_size, action_size, low, high, seed=0):
        rng = np.random.default_rng(seed)
        self.w1 = (rng.standard_normal((observation_size, HIDDEN)) / np.sqrt(observation_size)).astype(np.float32)
        self.w2 = (rng.standard_normal((HIDDEN, action_size)) / np.sqrt(HIDDEN)).astype(np.float32)
        self.low, self.high = np.float32(low), np.float32(high)
        self.scale, self.center = (self.high - self.low) / 2, (self.high + self.low) / 2

    def numpy(self, observations):
        return (np.tanh(np.tanh(observations.astype(np.float32) @ self.w1) @ self.w2) * self.scale + self.center).astype(
            np.float32
        )

    def tensor(self, observations):
        return tf.tanh(tf.tanh(observations @ self.w1) @ self.w2) * self.scale + self.center


def raw_loop_binary():
    """workbench/bench/native/mujoco_raw_loop.cc compiled against the installed libmujoco (cached per MuJoCo version and
    install location: the binary's rpath points at that libmujoco)."""
    version, include, directory, library = build_mujoco.find_mujoco()
    location = hashlib.sha256(os.path.abspath(directory).encode()).hexdigest()[:12]
    binary = os.path.join(CACHE, f"mujoco_raw_loop-{version}-{location}")
    source = os.path.join(HERE, "native", "mujoco_raw_loop.cc")
    if not os.path.exists(binary) or os.path.getmtime(binary) < os.path.getmtime(source):
        os.makedirs(CACHE, exist_ok=True)
        subprocess.run(
            [
                "g++",
                "-std=c++17",
                "-O2",
                "-o",
                binary,
                source,
                f"-I{include}",
                f"-L{directory}",
                f"-l:{library}",
                f"-Wl,-rpath,{directory}",
            ],
            check=True,
        )
    return binary


class RawLoop:
    """MuJoCo's C++ step loop on one thread (a subprocess: no TensorFlow, no Python per step)."""

    def __init__(self, task, settings, simulations):
        self.command = [raw_loop_binary(), task.xml_path(settings), str(simulations)]
        self.frame_skip, self.simulations = settings["frame_skip"], simulations

    def run(self, steps):
        """Steps per second measured inside the loop (start-up and model compilation excluded)."""
        result = subprocess.run(self.command + [str(steps), str(self.frame_skip)], capture_output=True, text=True, check=True)
        return float(result.stdout.strip())


class OpInGraph:
    """Our ops in a tf.while_loop: observation -> policy -> step_and_observe, all inside one graph."""

    def __init__(self, task_id, simulations, policy):
        self.batch = MujocoBatch(task_id, simulations, backend="custom", **no_termination(task_id))
        self.indices = tf.range(simulations, dtype=tf.int32)
        self.policy, self.simulations, self.calls = policy, simulations, 0
        self._loop = tf.function(self._steps)

    def _steps(self, steps):
        handle = self.batch.ops_handle

        def body(i, observations, checksum):
            _, _, _, observations = mujoco_env.step_and_observe(handle, self.indices, self.policy.tensor(observations))
            return i + 1, observations, checksum + tf.reduce_sum(observations[:, 0])

        observations = mujoco_env.observation(handle, self.indices)
        return tf.while_loop(lambda i, *_: i < steps, body, [tf.constant(0), observations, tf.constant(0.0)])[2]

    def run(self, steps):
        self.calls += 1
        self.batch.reset(seeds=np.arange(self.simulations) + self.calls * self.simulations)
        start = time.perf_counter()
        self._loop(tf.constant(steps)).numpy()
        return steps * self.simulations / (time.perf_counter() - start)


class OpFromPython:
    """Our ops through MujocoBatch, one Python call per step (the notebook way)."""

    def __init__(self, task_id, simulations, policy):
        self.batch = MujocoBatch(task_id, simulations, backend="custom", **no_termination(task_id))
        self.policy, self.simulations = policy, simulations

    def run(self, steps):
        batch, everyone = self.batch, np.arange(self.simulations)
        observations = batch.reset()
        start = time.perf_counter()
        for _ in range(steps):
            _, _, observations = batch.step_and_observe(everyone, self.policy.numpy(observations))
        return steps * self.simulations / (time.perf_counter() - start)


class EnvPool:
    """EnvPool's C++ thread pool: synchronous (batch = all) or asynchronous (half the simulations per recv)."""

    def __init__(self, task_id, simulations, threads, policy, asynchronous):
        import envpool

        self.batch_size = simulations // 2 if asynchronous else simulations
        self.env = envpool.make(
            task_id,
            env_type="gymnasium",
            num_envs=simulations,
            batch_size=self.batch_size,
            num_threads=threads,
            seed=0,
            **no_termination(task_id),
        )
        self.policy, self.simulations, self.asynchronous = policy, simulations, asynchronous

    def run(self, steps):
        env = self.env
        if self.asynchronous:
            env.async_reset()
            start = time.perf_counter()
            for _ in range(steps * 2):  # two half-batches make one step of every simulation
                observations, _, _, _, info = env.recv()
                env.send(self.policy.numpy(observations), info["env_id"])
            seconds = time.perf_counter() - start
            for _ in range(self.simulations // self.batch_size):  # every simulation idle before the next reset
                env.recv()
            return steps * self.simulations / seconds
        observations, _ = env.reset()
        start = time.perf_counter()
        for _ in range(steps):
            observations = env.step(self.policy.numpy(observations))[0]
        return steps * self.simulations / (time.perf_counter() - start)

    def close(self):
        self.env.close()


class GymnasiumVector:
    """Gymnasium's own vector env of the task: SyncVectorEnv, or AsyncVectorEnv (subprocesses)."""

    def __init__(self, task_id, simulations, policy, asynchronous):
        import gymnasium

        # Async workers start by spawn: forking a process that runs TensorFlow's threads is unsafe.
        self.env = gymnasium.make_vec(
            task_id,
            num_envs=simulations,
            vectorization_mode="async" if asynchronous else "sync",
            vector_kwargs=dict(context="spawn") if asynchronous else None,
            **no_termination(task_id),
        )
        self.policy, self.simulations = policy, simulations

    def run(self, steps):
        observations, _ = self.env.reset(seed=0)
        start = time.perf_counter()
        for _ in range(steps):
            observations = self.env.step(self.policy.numpy(observations))[0]
        return steps * self.simulations / (time.perf_counter() - start)

    def close(self):
        self.env.close()


def main(argv=None):
    parser = common.parser(__doc__, quick="fewer rounds (about a minute per task)", smoke="tiny runs: checks the script runs")
    parser.add_argument("--task", action="append", help="MuJoCo task (repeatable; default HalfCheetah-v5 and Humanoid-v5)")
    parser.add_argument("--simulations", type=common.positive_int, default=64, help="simulations per batch (default 64)")
    parser.add_argument("--threads", type=common.positive_int, default=2, help="threads (default 2)")
    args = parser.parse_args(argv)
    try:
        tasks = [resolve_mujoco_task(name) for name in (args.task or ["HalfCheetah-v5", "Humanoid-v5"])]
    except ValueError as error:
        parser.error(f"--task: {error}")
    if args.simulations < 2:
        parser.error("--simulations must be at least 2 (EnvPool's asynchronous mode takes half of them)")
    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    mode = common.mode_of(args)
    rounds = {"smoke": 1, "quick": 3, "full": 5}[mode]
    batched_steps = {"smoke": 3, "quick": 100, "full": 200}[mode]
    results = [measure(task, args.simulations, args.threads, rounds, batched_steps, mode) for task in tasks]
    report = {
        "benchmark": "mujoco",
        "mode": mode,
        "simulations": args.simulations,
        "threads": args.threads,
        "mujoco": mujoco_env.installed_mujoco_version(),
        "envpool": envpool_version(),
        "targets": TARGETS,
        "tasks": {summary.pop("task"): summary for summary in results},
    }
    common.record(report, args)


def envpool_version():
    try:
        import envpool
    except ImportError:
        return None
    return envpool.__version__


def measure(task, simulations, threads, rounds, batched_steps, mode):
    """One task's table and summary dict."""
    probe = MujocoBatch(task.id, 1, backend="custom")
    policy = Policy(probe.observation_shape[0], probe.action_size, probe.action_low, probe.action_high)
    settings = dict(probe.settings, **no_termination(task.id))
    probe.close()
    gymnasium_envs = min(simulations, 8)  # Python loops: fewer simulations and steps, same per-step work
    candidates = {
        "raw": RawLoop(task, settings, simulations),
        "op": OpInGraph(task.id, simulations, policy),
        "op_python": OpFromPython(task.id, simulations, policy),
        "gymnasium_sync": GymnasiumVector(task.id, gymnasium_envs, policy, asynchronous=False),
        "gymnasium_async": GymnasiumVector(task.id, gymnasium_envs, policy, asynchronous=True),
    }
    envpool_note = None
    try:
        candidates["envpool_sync"] = EnvPool(task.id, simulations, threads, policy, asynchronous=False)
        candidates["envpool_async"] = EnvPool(task.id, simulations, threads, policy, asynchronous=True)
    except ImportError:
        envpool_note = "envpool is not installed (pip install envpool; for Python 3.11 the newest wheel is 1.2.5)"
    steps = {name: batched_steps for name in candidates}
    steps["gymnasium_sync"] = steps["gymnasium_async"] = max(2, batched_steps // 4)
    steps["raw"] = max(2, batched_steps // threads)
    runs = {name: functools.partial(runner.run, steps[name]) for name, runner in candidates.items()}  # each gives its rate
    warmups = {name: functools.partial(runner.run, max(1, steps[name] // 10)) for name, runner in candidates.items()}
    best = {name: max(rates) for name, rates in common.interleaved(runs, rounds, warmups).items()}
    for runner in candidates.values():
        if hasattr(runner, "close"):
            runner.close()
    fps = {
        "raw_fps": best["raw"] * threads,
        "raw_one_thread_fps": best["raw"],
        "op_fps": best["op"],
        "op_python_fps": best["op_python"],
    }
    if envpool_note is None:
        fps.update(envpool_sync_fps=best["envpool_sync"], envpool_async_fps=best["envpool_async"])
    fps.update(gymnasium_sync_fps=best["gymnasium_sync"], gymnasium_async_fps=best["gymnasium_async"])
    ratios = {"op_vs_raw": fps["op_fps"] / fps["raw_fps"]}
    if envpool_note is None:
        ratios["op_vs_envpool"] = fps["op_fps"] / max(fps["envpool_sync_fps"], fps["envpool_async_fps"])
    ratios["op_vs_gymnasium_vector"] = fps["op_fps"] / max(fps["gymnasium_sync_fps"], fps["gymnasium_async_fps"])
    ratios["op_python_vs_op"] = fps["op_python_fps"] / fps["op_fps"]
    print(
        f"{task.id}: {simulations} simulations, {threads} threads, {rounds} rounds ({mode}); Gymnasium's vector "
        f"envs with {gymnasium_envs}",
        file=sys.stderr,
    )
    for name, value in fps.items():
        print(f"  {name:24s} {value:12,.0f} steps/s", file=sys.stderr)
    for name, value in ratios.items():
        target = TARGETS.get(name)
        print(f"  {name:24s} {value:12.2f}" + (f"   (target >= {target})" if target else ""), file=sys.stderr)
    if envpool_note:
        print(f"  {envpool_note}", file=sys.stderr)
    summary = {"task": task.id, "gymnasium_vector_envs": gymnasium_envs}
    summary.update({k: round(v, 1) for k, v in fps.items()})
    summary.update({k: round(v, 3) for k, v in ratios.items()})
    return summary


if __name__ == "__main__":
    main()
