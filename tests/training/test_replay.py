"""Replays: deterministic episodes, GIF and MP4 with the score, ES centers from checkpoints, clear errors."""

import numpy as np
import pytest

from workbench.evaluation import RunSpec
from workbench.evolution import Genome, GenomeDecoder, NoiseTable, ParameterSpace
from workbench.models import SmallModel
from workbench.training import RunConfig, Trainer
from workbench.training.replay import replay, replay_run, save_video


def test_replay_is_deterministic_and_exports_video(tmp_path):
    space = ParameterSpace.for_model(SmallModel(num_actions=6), NoiseTable.shared(2**22, seed=6))
    decoder = GenomeDecoder(space)
    genome = Genome(space.sample_offset(np.random.default_rng(0)))
    spec = RunSpec("pong", "small", noise_size=2**22, noise_seed=6)
    a = replay(genome, spec, decoder, seed=3, max_episode_frames=300)
    b = replay(genome, spec, decoder, seed=3, max_episode_frames=300)
    assert np.array_equal(a.actions, b.actions) and np.array_equal(a.frames, b.frames) and a.score == b.score
    assert a.frames.shape[0] == len(a.actions) + 1 and a.frames.shape[1:] == (210, 160, 3)
    assert a.observations.shape[1:] == (84, 84, 4) and a.action_meanings[0] == "NOOP"
    for name in ("episode.gif", "episode.mp4"):
        path = save_video(a, str(tmp_path / name))
        assert (tmp_path / name).stat().st_size > 1000, path
    with pytest.raises(ValueError, match=".gif or .mp4"):
        save_video(a, str(tmp_path / "episode.avi"))
    for seed in ("a", 1.5, None):
        with pytest.raises(ValueError, match="seed must be an integer"):
            replay(genome, spec, decoder, seed=seed, max_episode_frames=300)


def test_replay_of_an_es_run_uses_the_checkpointed_center(tmp_path):
    config = RunConfig(
        env="pong",
        model="small",
        algorithm="es",
        subpopulations=1,
        slots=4,
        max_episode_frames=150,
        noise_size=2**22,
        hyperparameters=dict(population_size=4, sigma=0.02),
    )
    trainer = Trainer.from_config(config, run_dir=str(tmp_path))
    trainer.run(generations=2)
    trainer.checkpoint()
    trainer.close()
    episode = replay_run(str(tmp_path))  # the newest center
    assert len(episode.actions) > 0
    assert len(replay_run(str(tmp_path), generation=1).actions) > 0  # the center generation 1 played: kept
    with pytest.raises(ValueError, match="no longer holds"):
        replay_run(str(tmp_path), generation=0)  # its center moved on twice
    with pytest.raises(ValueError, match="generation must be one of"):
        replay_run(str(tmp_path), generation=7)
