"""GymBatch (Gymnasium environments behind the EnvBatch interface) and make_batch. The contract every batch keeps
(seeding, per-index stepping, bad indices and actions) is checked on GymBatch by tests/envs/test_env_contract.py."""

import numpy as np
import pytest

from workbench.envs import AtariBatch, GymBatch, env_family, make_batch


def test_cartpole_batch_shapes_and_per_index_stepping():
    batch = GymBatch("CartPole-v1", 4, seed=3)
    obs = batch.reset()
    assert obs.shape == (4, 4) and obs.dtype == np.float32
    assert batch.num_actions == 2 and batch.observation_shape == (4,)
    rewards, done = batch.step([1, 3], [0, 1])
    assert rewards.tolist() == [1.0, 1.0] and done.tolist() == [False, False]
    status = batch.status()
    assert status["episode_steps"].tolist() == [0, 1, 0, 1]
    assert status["episode_return"].tolist() == [0.0, 1.0, 0.0, 1.0]


def test_the_batch_seed_and_the_episode_count_choose_the_episodes():
    a, b = GymBatch("CartPole-v1", 3, seed=9), GymBatch("CartPole-v1", 3, seed=10)
    first = a.reset()
    assert not np.array_equal(first, b.reset())  # another batch seed
    assert not np.array_equal(first, a.reset())  # the next episodes of the same environments


def test_episode_limit_truncates():
    batch = GymBatch("CartPole-v1", 1, max_episode_frames=5)
    batch.reset()
    for _ in range(5):
        _, done = batch.step([0], [0]) if not batch.done()[0] else (None, None)
    assert batch.done()[0]
    with pytest.raises(ValueError, match="end of its episode"):
        batch.step([0], [0])


def test_bad_environments_and_arguments():
    with pytest.raises(ValueError, match="CartPole-v1"):
        GymBatch("CartPol-v1", 2)
    with pytest.raises(ValueError, match="batch_size"):
        GymBatch("CartPole-v1", 0)
    with pytest.raises(ValueError, match="max_episode_frames"):
        GymBatch("CartPole-v1", 1, max_episode_frames=0)
    with pytest.raises(ValueError, match="max_episode_steps"):  # Gymnasium's spelling is accepted and named
        GymBatch("CartPole-v1", 1, max_episode_steps=0)
    assert GymBatch("CartPole-v1", 1, max_episode_steps=3).envs[0].spec.max_episode_steps == 3
    batch = GymBatch("Acrobot-v1", 2)
    batch.reset()
    with pytest.raises(ValueError, match="render_mode"):
        batch.screen()


def test_make_batch_picks_the_kind_from_the_name():
    assert isinstance(make_batch("CartPole-v1", 1), GymBatch)
    atari = make_batch("ALE/Breakout-v5", 1, backend="reference")
    assert isinstance(atari, AtariBatch) and atari.game == "breakout"
    with pytest.raises(ValueError, match="Did you mean"):
        make_batch("CartPol-v1", 1)
    assert [env_family(name) for name in ("pong", "ALE/Pong-v5", "hopper", "HalfCheetah-v5", "CartPole-v1")] == [
        "atari",
        "atari",
        "mujoco",
        "mujoco",
        "gymnasium",
    ]
    with pytest.raises(ValueError, match="Did you mean: .*CartPole-v1"):
        env_family("CartPol-v1")
    with pytest.raises(TypeError, match="env must be a game, task or Gymnasium id string"):
        env_family(5)


def test_box_actions_step_gymnasiums_continuous_tasks():
    import gymnasium

    batch = GymBatch("Pendulum-v1", 2, seed=3)
    assert batch.continuous_actions and batch.num_actions is None and batch.action_size == 1
    assert batch.action_low.tolist() == [-2.0] and batch.action_high.tolist() == [2.0]
    observations = batch.reset([0, 1], seeds=[7, 8])
    env = gymnasium.make("Pendulum-v1")
    assert np.array_equal(observations[0], env.reset(seed=7)[0].astype(np.float32))
    actions = np.array([[1.5], [-0.5]], np.float32)
    rewards, done, observations = batch.step_and_observe([0, 1], actions)
    observation, reward, *_ = env.step(actions[0])
    assert np.array_equal(observations[0], observation.astype(np.float32)) and rewards[0] == np.float32(reward)
