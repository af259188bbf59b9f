"""Benchmark: Atari emulation with the Deep GA preprocessing, in frames per second.

The same game, batch size, thread count and preprocessing (frame skip 4, max of
the last two frames, grayscale, 84x84, stack of 4, no-op starts, FIRE reset,
no sticky actions), random actions. Frames count the skipped frames. Measured in
the same run, in interleaved timing rounds (best round of each):
  raw_ale_fps     the limit: ALE's own C++ frame-skip loop (ale-py ALEInterface with
                  frame_skip=4, no preprocessing) on one emulator, times the thread count
  op_fps          our ops inside a tf.function loop (tf.while_loop: reset of the episodes
                  the last step finished, then step_and_observe; no Python per step), the
                  evaluator's way
  op_python_fps   our ops driven from Python through AtariBatch (the notebook way)
  vector_env_fps  ale-py's AtariVectorEnv (C++ threads, OpenCV resize), same settings
  gymnasium_fps   one Gymnasium ALE/...-v5 env with AtariPreprocessing and
                  FrameStackObservation, stepped from Python
Ratios op_vs_vector_env and op_vs_raw_limit are what to read; absolute numbers
on shared machines are noise. Prints a table, then one JSON line.

  python -m workbench.bench.emulation [--quick | --smoke] [--game pong] [--batch 32] [--threads 2]
"""

from workbench.bench import common

common.quiet_start()

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from workbench.envs import AtariBatch, resolve_atari_game  # noqa: E402
from workbench.envs.atari.games import rom_path  # noqa: E402
from workbench.ops import atari_env  # noqa: E402

TARGETS = {"op_vs_vector_env": 1.3, "op_vs_raw_limit": 0.8}
FRAMESKIP = 4
NOOP_MAX = 30


class RawAle:
    """ALE's C++ frame-skip loop on one emulator; Python only calls act() once per 4 frames."""

    def __init__(self, game, seed):
        from ale_py import ALEInterface, LoggerMode

        ALEInterface.setLoggerMode(LoggerMode.Error)
        self.ale = ALEInterface()
        self.ale.setInt("frame_skip", FRAMESKIP)
        self.ale.setFloat("repeat_action_probability", 0.0)
        self.ale.setInt("random_seed", seed)
        self.ale.loadROM(rom_path(game))
        actions = self.ale.getMinimalActionSet()
        self.actions = [actions[i] for i in np.random.default_rng(seed).integers(len(actions), size=100_000)]
        self.cursor = 0

    def run(self, steps):
        ale, actions = self.ale, self.actions
        for _ in range(steps):
            ale.act(actions[self.cursor % len(actions)])
            self.cursor += 1
            if ale.game_over():
                ale.reset_game()
        return steps * FRAMESKIP


class OpInGraph:
    """Our ops in a tf.while_loop: reset the episodes the last step finished, step all, read the observations."""

    def __init__(self, game, batch, seed):
        self.batch = batch
        self.handle, action_set = atari_env.create(rom_path(game), batch, noop_max=NOOP_MAX, max_episode_frames=108_000)
        self.num_actions = int(action_set.shape[0])
        self.indices = tf.range(batch, dtype=tf.int32)
        atari_env.reset(self.handle, self.indices, tf.range(batch, dtype=tf.int64) + seed * batch)
        self.seed = seed
        self.calls = 0
        self._loop = tf.function(self._steps)

    def _steps(self, steps, call):
        handle, indices, batch = self.handle, self.indices, self.batch

        def body(i, done, checksum):
            finished = tf.cast(tf.where(done)[:, 0], tf.int32)
            seeds = tf.cast(finished, tf.int64) + (tf.cast(call, tf.int64) * 1_000_000 + tf.cast(i, tf.int64)) * batch
            reset = tf.cond(
                tf.size(finished) > 0,
                lambda: tf.group(atari_env.reset(handle, finished, seeds)),
                tf.no_op,
            )
            actions = tf.random.stateless_uniform([batch], [self.seed, call * 100_000 + i], 0, self.num_actions, tf.int32)
            with tf.control_dependencies([reset]):
                _, done, observations = atari_env.step_and_observe(handle, indices, actions)
            return i + 1, done, checksum + tf.reduce_sum(tf.cast(observations[:, 0, 0, -1], tf.int32))

        done = atari_env.status(handle, indices)[3]
        return tf.while_loop(lambda i, *_: i < steps, body, [tf.constant(0), done, tf.constant(0)])[2]

    def run(self, steps):
        self.calls += 1
        self._loop(tf.constant(steps), tf.constant(self.calls)).numpy()
        return steps * self.batch * FRAMESKIP


class OpFromPython:
    """Our ops through AtariBatch, one Python call per step (the notebook way)."""

    def __init__(self, game, batch, seed):
        self.env = AtariBatch(game, batch, noop_max=NOOP_MAX, seed=seed, backend="custom")
        self.env.reset()
        self.rng = np.random.default_rng(seed)

    def run(self, steps):
        env = self.env
        all_indices = np.arange(env.batch_size)
        for _ in range(steps):
            finished = all_indices[env.done()]
            if finished.size:
                env.reset(finished)
            env.step(all_indices, self.rng.integers(env.num_actions, size=env.batch_size))
            env.observation(all_indices)
        return steps * env.batch_size * FRAMESKIP


class VectorEnv:
    """ale-py's AtariVectorEnv with the same preprocessing (autoreset)."""

    def __init__(self, game, batch, threads, seed):
        from ale_py.vector_env import AtariVectorEnv

        self.env = AtariVectorEnv(
            game,
            batch,
            num_threads=threads,
            repeat_action_probability=0.0,
            frameskip=FRAMESKIP,
            noop_max=NOOP_MAX,
            use_fire_reset=True,
            reward_clipping=False,
            img_height=84,
            img_width=84,
            stack_num=4,
            grayscale=True,
            maxpool=True,
            max_num_frames_per_episode=108_000,
        )
        self.env.reset(seed=seed)
        self.batch = batch
        self.num_actions = int(self.env.single_action_space.n)
        self.rng = np.random.default_rng(seed)

    def run(self, steps):
        for _ in range(steps):
            self.env.step(self.rng.integers(self.num_actions, size=self.batch))
        return steps * self.batch * FRAMESKIP

    def close(self):
        self.env.close()


class GymnasiumLoop:
    """One Gymnasium ALE/...-v5 env with AtariPreprocessing + FrameStackObservation, from Python."""

    def __init__(self, game, seed):
        import ale_py
        import gymnasium as gym
        from ale_py.registration import rom_id_to_name

        gym.register_envs(ale_py)
        env = gym.make(f"ALE/{rom_id_to_name(game)}-v5", frameskip=1, repeat_action_probability=0.0)
        env = gym.wrappers.AtariPreprocessing(env, noop_max=NOOP_MAX, frame_skip=FRAMESKIP, screen_size=84)
        self.env = gym.wrappers.FrameStackObservation(env, 4)
        self.env.reset(seed=seed)
        self.rng = np.random.default_rng(seed)
        self.num_actions = int(self.env.action_space.n)

    def run(self, steps):
        for _ in range(steps):
            _, _, terminated, truncated, _ = self.env.step(int(self.rng.integers(self.num_actions)))
            if terminated or truncated:
                self.env.reset()
        return steps * FRAMESKIP

    def close(self):
        self.env.close()


def main(argv=None):
    parser = common.parser(__doc__, quick="fewer rounds (about a minute)", smoke="tiny runs: checks the script runs")
    parser.add_argument("--game", default="pong", help="Atari game (default pong)")
    parser.add_argument("--batch", type=common.positive_int, default=32, help="emulators per batch (default 32)")
    parser.add_argument("--threads", type=common.positive_int, default=2, help="threads (default 2)")
    args = parser.parse_args(argv)
    try:
        game = resolve_atari_game(args.game)
    except ValueError as error:
        parser.error(f"--game: {error}")
    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    mode = common.mode_of(args)
    rounds = {"smoke": 1, "quick": 3, "full": 7}[mode]
    batched_steps = {"smoke": 2, "quick": 60, "full": 120}[mode]  # steps of the whole batch per round
    frames_per_round = batched_steps * args.batch * FRAMESKIP
    single_steps = frames_per_round // (FRAMESKIP * args.threads)  # the single-emulator candidates

    candidates = {
        "raw_ale": RawAle(game, seed=0),
        "op": OpInGraph(game, args.batch, seed=1),
        "op_python": OpFromPython(game, args.batch, seed=2),
        "vector_env": VectorEnv(game, args.batch, args.threads, seed=3),
        "gymnasium": GymnasiumLoop(game, seed=4),
    }
    steps = {name: batched_steps for name in candidates}
    steps["raw_ale"] = steps["gymnasium"] = single_steps
    best = common.best_rate({name: runner.run for name, runner in candidates.items()}, steps, rounds)
    for runner in candidates.values():
        if hasattr(runner, "close"):
            runner.close()

    fps = {
        "raw_ale_fps": best["raw_ale"] * args.threads,
        "raw_ale_one_thread_fps": best["raw_ale"],
        "op_fps": best["op"],
        "op_python_fps": best["op_python"],
        "vector_env_fps": best["vector_env"],
        "gymnasium_fps": best["gymnasium"],
    }
    ratios = {
        "op_vs_vector_env": fps["op_fps"] / fps["vector_env_fps"],
        "op_vs_raw_limit": fps["op_fps"] / fps["raw_ale_fps"],
        "op_python_vs_vector_env": fps["op_python_fps"] / fps["vector_env_fps"],
        "op_vs_gymnasium": fps["op_fps"] / fps["gymnasium_fps"],
    }
    print(f"game {game}, batch {args.batch}, threads {args.threads}, {rounds} rounds ({mode})")
    for name, value in fps.items():
        print(f"  {name:24s} {value:12,.0f} frames/s")
    for name, value in ratios.items():
        target = TARGETS.get(name)
        print(f"  {name:24s} {value:12.2f}" + (f"   (target >= {target})" if target else ""))
    summary = {"benchmark": "emulation", "mode": mode, "game": game, "batch": args.batch, "threads": args.threads}
    summary.update({k: round(v, 1) for k, v in fps.items()})
    summary.update({k: round(v, 3) for k, v in ratios.items()})
    summary["targets"] = TARGETS
    common.record(summary, args)


if __name__ == "__main__":
    main()
