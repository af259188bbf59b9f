"""Benchmark: a small MuJoCo generation through the evaluator, fused steps against one Python call per step.

A generation of CMA-ES's default size is a few dozen episodes (sep-CMA-ES on HalfCheetah's linear policy: 18
members and the mean, 19 episodes), so each of the evaluator's two sub-populations steps about ten simulations at
a time. With one Python call for the policy and one for the simulations per step, the calls' own cost was most
of a step. Fused steps run the policy and the simulations in one graph call of many steps
(workbench/evaluation/subpopulation.py). Measured in the same run, in interleaved rounds (best round of each):
  per_step   the evaluator, one Python call per step (SubPopulation.fused_steps = False): the baseline
  fused      the evaluator as it runs (fused steps)
  limit      the ops alone at the same number of simulations: one tf.while_loop of observation -> linear
             policy -> step over every simulation, no evaluator (workbench/bench/mujoco_steps.py's op loop)
Each round evaluates the same members (the linear policy, 2 sub-populations of 16 slots, the cma preset's
layout) for full 1,000-step episodes with termination off, so every round does the same work; the two
evaluator arms' returns must agree to the bit (a benchmark of different work is void). Ratios fused_vs_per_step
and fused_vs_limit are what to read. Ends with one JSON line.

  python -m workbench.bench.fused_steps [--quick | --smoke] [--task HalfCheetah-v5] [--episodes 19]
"""

import time

from workbench.bench import common

common.quiet_start()

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from workbench.bench.mujoco_steps import no_termination  # noqa: E402
from workbench.envs import MujocoBatch, resolve_mujoco_task  # noqa: E402
from workbench.evaluation import Evaluator, RunSpec  # noqa: E402
from workbench.evolution import EvaluationRequest, Genome, base_key  # noqa: E402
from workbench.ops import mujoco_env  # noqa: E402

TARGETS = {"fused_vs_per_step": 2.0, "fused_vs_limit": 0.7}
SUBPOPULATIONS, SLOTS = 2, 16  # the MuJoCo presets' layout on 2 cores


class EvaluatorArm:
    """The evaluator on `episodes` members of a fixed random linear policy, fused or one call per step."""

    def __init__(self, task_id, episodes, steps, fused):
        spec = RunSpec(task_id, "linear", env_options=no_termination(task_id), max_episode_frames=steps)
        self.evaluator = Evaluator.from_spec(spec, subpopulations=SUBPOPULATIONS, slots=SLOTS)
        for subpopulation in self.evaluator.subpopulations:
            subpopulation.fused_steps = fused
        rng = np.random.default_rng(0)
        members = [(0.1 * rng.standard_normal(self.evaluator.space.num_parameters)).astype(np.float32) for _ in range(episodes)]
        self.bases = {base_key(w): w for w in members}
        self.requests = [EvaluationRequest(Genome(key), 1, "perturbation") for key in self.bases]
        self.rounds, self.returns = 0, []

    def run(self):
        self.rounds += 1
        start = time.perf_counter()
        results = self.evaluator.evaluate(self.requests, seed=self.rounds, bases=self.bases)
        seconds = time.perf_counter() - start
        self.returns.append([result.returns.tolist() for result in results])
        return sum(int(result.steps.sum()) for result in results) / seconds

    def close(self):
        self.evaluator.close()


class OpLoop:
    """The ops in one tf.while_loop over `simulations` simulations with a linear policy: no evaluator at all."""

    def __init__(self, task_id, simulations, steps):
        self.batch = MujocoBatch(task_id, simulations, backend="custom", **no_termination(task_id))
        rng = np.random.default_rng(0)
        shape = (self.batch.observation_shape[0], self.batch.action_size)
        self.weights = tf.constant(0.1 * rng.standard_normal(shape), tf.float32)
        self.indices = tf.range(simulations, dtype=tf.int32)
        self.simulations, self.steps, self.calls = simulations, steps, 0
        self._loop = tf.function(self._run)

    def _run(self, steps):
        handle = self.batch.ops_handle

        def body(i, total):
            actions = tf.tanh(mujoco_env.observation(handle, self.indices) @ self.weights)
            rewards, _, _ = mujoco_env.step(handle, self.indices, actions)
            return i + 1, total + tf.reduce_sum(rewards)

        return tf.while_loop(lambda i, _: i < steps, body, [tf.constant(0), tf.constant(0.0)])[1]

    def run(self):
        self.calls += 1
        self.batch.reset(seeds=np.arange(self.simulations) + self.calls * self.simulations)
        start = time.perf_counter()
        self._loop(tf.constant(self.steps)).numpy()
        return self.steps * self.simulations / (time.perf_counter() - start)

    def close(self):
        self.batch.close()


def main(argv=None):
    parser = common.parser(__doc__, quick="fewer rounds and steps", smoke="tiny runs: checks the script runs")
    parser.add_argument("--task", default="HalfCheetah-v5", help="MuJoCo task (default HalfCheetah-v5)")
    parser.add_argument(
        "--episodes", type=common.positive_int, default=19, help="episodes per generation (default 19: sep-CMA-ES's)"
    )
    args = parser.parse_args(argv)
    try:
        task = resolve_mujoco_task(args.task)
    except ValueError as error:
        parser.error(f"--task: {error}")
    mode = common.mode_of(args)
    rounds = {"smoke": 1, "quick": 3, "full": 5}[mode]
    steps = {"smoke": 20, "quick": 300, "full": 1000}[mode]
    arms = {
        "per_step": EvaluatorArm(task.id, args.episodes, steps, fused=False),
        "fused": EvaluatorArm(task.id, args.episodes, steps, fused=True),
        "limit": OpLoop(task.id, args.episodes, steps),
    }
    measured = common.interleaved({name: arm.run for name, arm in arms.items()}, rounds)
    if arms["per_step"].returns != arms["fused"].returns:
        raise SystemExit("fused and per-step evaluations returned different returns: the benchmark is void")
    for arm in arms.values():
        arm.close()
    fps = {f"{name}_steps_per_second": max(values) for name, values in measured.items()}
    ratios = {
        "fused_vs_per_step": fps["fused_steps_per_second"] / fps["per_step_steps_per_second"],
        "fused_vs_limit": fps["fused_steps_per_second"] / fps["limit_steps_per_second"],
    }
    print(f"{task.id}: {args.episodes} episodes of {steps} steps, {SUBPOPULATIONS} x {SLOTS} slots, {rounds} rounds ({mode})")
    for name, value in fps.items():
        print(f"  {name:28s} {value:10,.0f}")
    for name, value in ratios.items():
        print(f"  {name:28s} {value:10.2f}   (target >= {TARGETS[name]})")
    report = {
        "benchmark": "fused_steps",
        "mode": mode,
        "task": task.id,
        "episodes": args.episodes,
        "steps": steps,
        "layout": {"subpopulations": SUBPOPULATIONS, "slots": SLOTS},
        "targets": TARGETS,
        **{k: round(v, 1) for k, v in fps.items()},
        **{k: round(v, 3) for k, v in ratios.items()},
    }
    common.record(report, args)


if __name__ == "__main__":
    main()
