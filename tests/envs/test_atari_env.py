"""In-graph Atari emulation: the ops against the ale-py reference, determinism, every ROM, bad input, lifetime."""

import gc
import os
import subprocess
import sys
import threading

import numpy as np
import pytest
import tensorflow as tf
from ale_py import roms

from workbench.envs import AtariBatch, atari_game_ids
from workbench.envs.atari.games import rom_path, unsupported_rom_ids
from workbench.ops import atari_env

EQUIVALENCE_GAMES = ["pong", "breakout", "frostbite", "space_invaders", "seaquest"]
SHORT_GAMES = ["pong", "frostbite"]  # make test's short form plays these; the parity tier all of them
# The parity tier plays these too at full length: the nine games of the Deep GA paper's table (experiments/atari_suite.py).
PAPER_GAMES = ["asteroids", "assault", "asterix", "atlantis", "enduro", "gravitar", "venture"]


def run_same_actions(batches, steps, seed, check_screens_every=10):
    """Steps every batch with the same actions (resetting finished episodes with the same seeds)
    and asserts identical rewards, done flags, observations, RAM and (every few steps) screens."""
    first = batches[0]
    rng = np.random.default_rng(seed)
    observations = [b.reset(seeds=np.arange(b.batch_size) + seed) for b in batches]
    for other in observations[1:]:
        np.testing.assert_array_equal(other, observations[0])
    episodes = 0
    for t in range(steps):
        finished = np.flatnonzero(first.done())
        if finished.size:
            episodes += finished.size
            seeds = seed * 1000 + t * 10 + finished
            observations = [b.reset(finished, seeds) for b in batches]
            for other in observations[1:]:
                np.testing.assert_array_equal(other, observations[0])
        indices = np.arange(first.batch_size)
        actions = rng.integers(first.num_actions, size=indices.size)
        results = [b.step(indices, actions) for b in batches]
        observations = [b.observation(indices) for b in batches]
        for (rewards, done), obs in zip(results[1:], observations[1:]):
            np.testing.assert_array_equal(rewards, results[0][0], err_msg=f"rewards at step {t}")
            np.testing.assert_array_equal(done, results[0][1], err_msg=f"done at step {t}")
            np.testing.assert_array_equal(obs, observations[0], err_msg=f"observations at step {t}")
        rams = [b.ram() for b in batches]
        for ram in rams[1:]:
            np.testing.assert_array_equal(ram, rams[0], err_msg=f"RAM at step {t}")
        if t % check_screens_every == 0:
            screens = [b.screen() for b in batches]
            for screen in screens[1:]:
                np.testing.assert_array_equal(screen, screens[0], err_msg=f"screens at step {t}")
    statuses = [b.status() for b in batches]
    for status in statuses[1:]:
        for key, value in status.items():
            np.testing.assert_array_equal(value, statuses[0][key], err_msg=key)
    return episodes


SHORT, FULL = (300, 600), (1200, 3000)  # (steps, episode cap in frames): make test's form, the parity tier's


@pytest.mark.parametrize(
    "game,length",
    [(game, SHORT) for game in SHORT_GAMES]
    + [pytest.param(game, FULL, marks=pytest.mark.parity) for game in EQUIVALENCE_GAMES + PAPER_GAMES],
)
def test_ops_equal_the_reference_backend(game, length):
    """Steps of 2 emulators (4 frames each): identical frames (RGB and preprocessed), RAM, rewards and done,
    through game overs, resets and the episode cap (the cap is below the frames played, so episodes end)."""
    steps, cap = length
    ops = AtariBatch(game, 2, seed=0, backend="custom", max_episode_frames=cap)
    reference = AtariBatch(game, 2, seed=0, backend="reference", max_episode_frames=cap)
    assert ops.backend == "custom" and reference.backend == "reference"
    np.testing.assert_array_equal(ops.action_set, reference.action_set)
    assert run_same_actions([ops, reference], steps=steps, seed=7) >= 2  # episodes ended and were reset on the way


@pytest.mark.parametrize(
    "game,options",
    [
        pytest.param("breakout", dict(repeat_action_probability=0.25), marks=pytest.mark.parity),  # frostbite's are sticky too
        ("pong", dict(noop_max=0, fire_reset=False, frame_skip=3, stack_size=2, screen_size=42)),
        ("frostbite", dict(frameskip=1, max_num_frames_per_episode=300, repeat_action_probability=0.5)),
    ],
)
def test_ops_equal_the_reference_backend_under_other_protocols(game, options):
    ops = AtariBatch(game, 2, backend="custom", **options)
    reference = AtariBatch(game, 2, backend="reference", **options)
    episodes = run_same_actions([ops, reference], steps=400, seed=3)
    if options.get("max_num_frames_per_episode"):
        assert episodes > 0  # the frame cap ended episodes


def test_same_seeds_and_actions_give_the_same_run_and_history_does_not_matter():
    a = AtariBatch("breakout", 3, backend="custom", repeat_action_probability=0.25)
    b = AtariBatch("breakout", 3, backend="custom", repeat_action_probability=0.25)
    # b plays an unrelated episode first: an episode depends only on its seed and actions.
    b.reset(seeds=[99, 98, 97])
    for _ in range(50):
        live = np.flatnonzero(~b.done())
        b.step(live, np.ones(live.size, int))
    run_same_actions([a, b], steps=300, seed=11)


def test_different_seeds_give_different_starts():
    batch = AtariBatch("pong", 8, backend="custom")
    batch.reset(seeds=np.arange(8))
    frames = batch.episode_frames()
    assert len(set(frames.tolist())) > 1  # no-op counts drawn from the seeds
    assert len({ram.tobytes() for ram in batch.ram()}) > 1


_THREADS_SCRIPT = """
import hashlib, sys
import numpy as np


def digest():
    from workbench.envs import AtariBatch

    batch = AtariBatch("frostbite", 6, backend="custom", repeat_action_probability=0.25, seed=5)
    digest = hashlib.sha256(batch.reset().tobytes())
    rng = np.random.default_rng(0)
    for t in range(150):
        finished = np.flatnonzero(batch.done())
        if finished.size:
            digest.update(batch.reset(finished).tobytes())
        rewards, done = batch.step(np.arange(6), rng.integers(batch.num_actions, size=6))
        digest.update(rewards.tobytes() + done.tobytes() + batch.observation().tobytes())
    return digest.hexdigest()


if __name__ == "__main__":
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(int(sys.argv[1]))
    print(digest())
"""


@pytest.mark.slow
def test_results_do_not_depend_on_the_thread_count():
    # one thread in a process of its own (the thread count is fixed when TensorFlow starts), against this
    # process's default of one thread per core
    result = subprocess.run(
        [sys.executable, "-c", _THREADS_SCRIPT, "1"],
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"),
    )
    assert result.returncode == 0, result.stderr[-2000:]
    namespace = {"__name__": "threads"}
    exec(_THREADS_SCRIPT, namespace)
    digests = [result.stdout.strip().splitlines()[-1], namespace["digest"]()]
    assert len(set(digests)) == 1, digests


@pytest.mark.parity
def test_every_rom_of_the_wheel_can_be_created_reset_and_stepped():
    """Every playable ROM works; the multi-player-only ROMs give a clear error (ale-py itself exits on them)."""
    games = atari_game_ids()
    assert len(games) >= 100
    assert len(games) + len(unsupported_rom_ids()) == len(roms.get_all_rom_ids())
    for game in unsupported_rom_ids():
        with pytest.raises(ValueError, match="multi-player-only"):
            AtariBatch(game, 1)
        with pytest.raises(tf.errors.InvalidArgumentError, match="not a ROM that ALE supports"):
            atari_env.create(rom_path(game), 1)
    rng = np.random.default_rng(0)
    for game in games:
        batch = AtariBatch(game, 1, backend="custom", max_episode_frames=2000)
        obs = batch.reset()
        assert obs.shape == (1, 84, 84, 4) and obs.dtype == np.uint8, game
        assert batch.num_actions >= 2, game
        for _ in range(5):
            if batch.done()[0]:
                batch.reset()
            rewards, done = batch.step([0], rng.integers(batch.num_actions, size=1))
            assert rewards.dtype == np.float32 and np.isfinite(rewards).all(), game
        assert batch.screen().shape[0] == 1 and batch.screen().shape[2:] == (160, 3), game
        batch.close()


def test_observation_layout_and_stack_order():
    batch = AtariBatch("pong", 1, backend="custom", noop_max=0)
    first = batch.reset()
    assert all(np.array_equal(first[0, ..., k], first[0, ..., 0]) for k in range(4))  # stack of copies
    history = [first[0, ..., -1]]
    for _ in range(6):
        batch.step([0], [2])
        history.append(batch.observation()[0, ..., -1])
    obs = batch.observation()[0]
    for k in range(4):  # oldest first, newest last
        np.testing.assert_array_equal(obs[..., k], history[-4 + k])


def test_status_lives_frames_returns_and_episode_cap():
    batch = AtariBatch("breakout", 2, backend="custom", max_episode_frames=100, noop_max=0)
    batch.reset()
    assert batch.lives().tolist() == [5, 5]
    total = np.zeros(2, np.float32)
    while not batch.done().all():
        live = np.flatnonzero(~batch.done())
        rewards, _ = batch.step(live, np.full(live.size, 1))
        total[live] += rewards
    status = batch.status()
    assert status["truncated"].all() and status["done"].all()
    assert (status["episode_frames"] == 100).all()
    np.testing.assert_array_equal(status["episode_return"], total)


def test_an_episode_can_end_during_its_reset():
    for backend in ("custom", "reference"):
        batch = AtariBatch("pong", 4, backend=backend, max_episode_frames=3, noop_max=30)
        batch.reset(seeds=[0, 1, 2, 3])
        assert batch.done().all() and batch.status()["truncated"].all()  # 1-30 no-ops hit the 3-frame cap
        with pytest.raises(ValueError, match="end of its episode"):
            batch.step([0], [0])


def test_ram_is_a_behaviour_characterisation():
    batch = AtariBatch("pong", 2, backend="custom")
    batch.reset(seeds=[1, 2])
    ram = batch.ram()
    assert ram.shape == (2, 128) and ram.dtype == np.uint8


def test_names_of_games_and_actions():
    batch = AtariBatch("ALE/Pong-v5", 1, backend="custom")
    assert batch.game == "pong"
    assert batch.action_meanings == ["NOOP", "FIRE", "RIGHT", "LEFT", "RIGHTFIRE", "LEFTFIRE"]
    assert "AtariBatch('pong'" in repr(batch)


# -- bad input -------------------------------------------------------------------------------


def test_unknown_game_lists_close_matches():
    with pytest.raises(ValueError, match="frostbite"):
        AtariBatch("frostbyte", 1)
    with pytest.raises(ValueError, match="pong"):
        AtariBatch("ALE/Pongg-v5", 1)
    with pytest.raises(TypeError, match="game"):
        AtariBatch(3, 1)


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(batch_size=0), "batch_size"),
        (dict(frameskip=0), "frameskip"),
        (dict(noop_max=-1), "noop_max"),
        (dict(repeat_action_probability=1.5), "repeat_action_probability"),
        (dict(repeat_action_probability="0.25"), "repeat_action_probability"),
        (dict(max_num_frames_per_episode=0), "max_num_frames_per_episode"),
        (dict(screen_size=0), "screen_size"),
        (dict(stack_size=2.5), "stack_size"),
        (dict(fire_reset=1), "fire_reset"),
        (dict(backend="gpu"), "backend"),
        (dict(seed="x"), "seed"),
    ],
)
def test_invalid_configuration_is_refused(kwargs, match):
    arguments = dict(batch_size=1)
    arguments.update(kwargs)
    batch_size = arguments.pop("batch_size")
    with pytest.raises((ValueError, TypeError), match=match):
        AtariBatch("pong", batch_size, **arguments)


@pytest.mark.parametrize("backend", ["custom", "reference"])
def test_unreset_and_closed_batches_refuse_calls(backend):
    """(Bad indices, actions and seeds, and stepping a finished episode: the contract, tests/envs/test_env_contract.py.)"""
    batch = AtariBatch("breakout", 3, backend=backend, noop_max=0, max_episode_frames=40)
    with pytest.raises(ValueError, match="has not been reset"):
        batch.step([0], [0])
    batch.reset([1])
    with pytest.raises(ValueError, match=r"indices\[1\] = 2 has not been reset"):
        batch.observation([1, 2])
    batch.close()
    batch.close()
    with pytest.raises(RuntimeError, match="closed"):
        batch.observation()


def test_raw_ops_validate_and_never_crash():
    handle, action_set = atari_env.create(rom_path("pong"), 2)
    indices = tf.constant([0, 1], tf.int32)
    with pytest.raises(tf.errors.InvalidArgumentError, match="has not been reset"):
        atari_env.step(handle, indices, tf.constant([0, 0], tf.int32))
    done = atari_env.reset(handle, indices, tf.constant([1, 2], tf.int64))
    assert done.dtype == tf.bool and done.numpy().tolist() == [False, False]
    cases = [
        (lambda: atari_env.step(handle, tf.constant([2], tf.int32), tf.constant([0], tf.int32)), "out of range"),
        (lambda: atari_env.step(handle, tf.constant([0, 0], tf.int32), tf.constant([0, 0], tf.int32)), "repeated"),
        (lambda: atari_env.step(handle, tf.constant([0], tf.int32), tf.constant([6], tf.int32)), "actions\\[0\\] = 6"),
        (lambda: atari_env.step(handle, tf.constant([0], tf.int32), tf.constant([0, 1], tf.int32)), "actions|Dimensions"),
        (lambda: atari_env.reset(handle, tf.constant([0], tf.int32), tf.constant([1, 2], tf.int64)), "seeds|Dimensions"),
        (lambda: atari_env.observation(handle, tf.constant([[0]], tf.int32)), "rank|vector"),
    ]
    for call, match in cases:
        with pytest.raises((tf.errors.InvalidArgumentError, ValueError), match=match):
            call()
    with pytest.raises(tf.errors.InvalidArgumentError, match="rom_path"):
        atari_env.create("/nonexistent/game.bin", 1)
    with pytest.raises(tf.errors.InvalidArgumentError, match="not a ROM that ALE supports"):
        atari_env.create(__file__, 1)
    with pytest.raises(tf.errors.InvalidArgumentError, match="repeat_action_probability"):
        atari_env.create(rom_path("pong"), 1, repeat_action_probability=2.0)
    atari_env.destroy(handle)
    with pytest.raises(tf.errors.NotFoundError):
        atari_env.status(handle, indices)


def test_ops_run_inside_tf_function():
    handle, action_set = atari_env.create(rom_path("pong"), 4)
    indices = tf.range(4, dtype=tf.int32)

    @tf.function
    def play(steps):
        atari_env.reset(handle, indices, tf.range(4, dtype=tf.int64))
        total = tf.zeros([4])
        for _ in tf.range(steps):
            rewards, _ = atari_env.step(handle, indices, tf.fill([4], 2))
            total += rewards
        return total, atari_env.observation(handle, indices)

    total, observations = play(tf.constant(20))
    assert total.shape == (4,) and observations.shape == (4, 84, 84, 4)
    assert atari_env.status(handle, indices)[1].numpy().min() >= 80  # 20 steps of 4 frames happened
    atari_env.destroy(handle)


def test_step_and_observe_equals_step_then_observation():
    handles = [atari_env.create(rom_path("breakout"), 3)[0] for _ in range(2)]
    indices = tf.constant([2, 0], tf.int32)
    for handle in handles:
        atari_env.reset(handle, tf.range(3, dtype=tf.int32), tf.constant([5, 6, 7], tf.int64))
    rng = np.random.default_rng(1)
    for _ in range(40):
        actions = tf.constant(rng.integers(4, size=2), tf.int32)
        rewards, done, observations = atari_env.step_and_observe(handles[0], indices, actions)
        expected_rewards, expected_done = atari_env.step(handles[1], indices, actions)
        np.testing.assert_array_equal(rewards, expected_rewards)
        np.testing.assert_array_equal(done, expected_done)
        np.testing.assert_array_equal(observations, atari_env.observation(handles[1], indices))
        if done.numpy().any():
            break
    for handle in handles:
        atari_env.destroy(handle)


def test_batches_step_concurrently_from_threads():
    batches = [AtariBatch("pong", 4, backend="custom", seed=s) for s in range(3)]
    errors = []

    def play(batch):
        try:
            batch.reset()
            for _ in range(30):
                batch.step(np.arange(4), np.full(4, 2))
        except Exception as error:  # pragma: no cover - reported below
            errors.append(error)

    threads = [threading.Thread(target=play, args=(b,)) for b in batches]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert all((b.episode_frames() >= 120).all() for b in batches)


def _rss_megabytes():
    with open("/proc/self/statm") as stream:
        return int(stream.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


@pytest.mark.long
def test_creating_and_dropping_batches_does_not_leak():
    def cycle():
        batch = AtariBatch("pong", 4, backend="custom")
        batch.reset()
        batch.step(np.arange(4), np.zeros(4, int))
        del batch
        gc.collect()

    for _ in range(3):
        cycle()
    threads_before = threading.active_count()
    rss_before = _rss_megabytes()
    for _ in range(25):
        cycle()
    assert threading.active_count() == threads_before
    # 25 batches x 4 emulators would hold well over 100 MB if they were not freed.
    assert _rss_megabytes() - rss_before < 40


@pytest.mark.slow
def test_fallback_to_the_reference_backend_without_the_ops_library():
    script = (
        "import warnings, workbench.ops._loader as l\n"
        "def broken(*args): raise l.OpsLibraryError('no library here')\n"
        "l.load_library = broken\n"
        "from workbench.envs import AtariBatch\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        "    b = AtariBatch('pong', 1)\n"
        "print(b.backend, any('falls back' in str(w.message) for w in caught))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"),
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == ["reference", "True"]
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", WORKBENCH_PURE_TF="1")
    result = subprocess.run(
        [sys.executable, "-c", "from workbench.envs import AtariBatch; print(AtariBatch('pong', 1).backend)"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert result.stdout.split() == ["reference"], result.stderr[-2000:]
