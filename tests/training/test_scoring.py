"""Scoring elites the paper's way: every algorithm, Atari protocols, test seeds apart from training seeds,
determinism, the JSON file, the CLI, and clear errors."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from workbench.envs.rng import episode_seed
from workbench.evaluation import RunSpec
from workbench.training import RunConfig, Trainer
from workbench.training.elites import load_elite
from workbench.training.scoring import (
    ALE_MAX_EPISODE_FRAMES,
    PROTOCOLS,
    evaluate_run,
    protocol_spec,
    score_elite,
    scoring_seed,
    training_round_seeds,
)

CARTPOLE = dict(
    env="CartPole-v1",
    model="mlp",
    subpopulations=1,
    slots=4,
    max_episode_frames=100,
    noise_size=2**16,
    model_options=dict(hidden_sizes=[4]),
)
HYPERPARAMETERS = {
    "ga": dict(population_size=6, truncation=2, sigma=0.1, elite_candidates=2, elite_episodes=2),
    "es": dict(population_size=6, sigma=0.05, learning_rate=0.03),
    "nsr-es": dict(population_size=6, sigma=0.05, learning_rate=0.03, meta_population_size=2),
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Two-generation CartPole runs of the GA, ES and NSR-ES, and a one-generation Pong GA run."""
    root = tmp_path_factory.mktemp("runs")
    made = {}
    for algorithm, hyperparameters in HYPERPARAMETERS.items():
        config = RunConfig(
            algorithm=algorithm,
            hyperparameters=hyperparameters,
            seed=3,
            behaviour="final_observation" if algorithm == "nsr-es" else None,
            **CARTPOLE,
        )
        trainer = Trainer.from_config(config, run_dir=str(root / algorithm))
        trainer.run(generations=2)
        trainer.close()
        made[algorithm] = str(root / algorithm)
    pong = RunConfig(
        env="pong",
        model="small",
        algorithm="ga",
        subpopulations=1,
        slots=2,
        max_episode_frames=300,
        noise_size=2**22,
        hyperparameters=dict(population_size=3, truncation=1, elite_candidates=1, elite_episodes=1),
    )
    trainer = Trainer.from_config(pong, run_dir=str(root / "pong"))
    trainer.run(generations=1)
    trainer.close()
    made["pong"] = str(root / "pong")
    return made


@pytest.mark.parametrize("algorithm", sorted(HYPERPARAMETERS))
def test_every_algorithm_is_scored_and_the_score_is_deterministic(runs, algorithm, tmp_path):
    path = str(tmp_path / "score.json")
    score = evaluate_run(runs[algorithm], episodes=5, json_path=path)
    assert score.protocol == "gymnasium" and score.episodes == len(score.returns) == 5 and score.algorithm == algorithm
    assert score.generation == 1 and all(1 <= r <= 500 for r in score.returns)  # CartPole: 1 per step, 500 at most
    assert score.steps == [int(r) for r in score.returns]
    with open(path) as f:
        written = json.load(f)
    assert written["returns"] == score.returns and written["mean"] == pytest.approx(np.mean(score.returns))
    assert evaluate_run(runs[algorithm], episodes=5).returns == score.returns
    with pytest.raises(ValueError, match="exists already"):
        evaluate_run(runs[algorithm], episodes=5, json_path=path)
    assert evaluate_run(runs[algorithm], episodes=5, json_path=path, overwrite=True).returns == score.returns


def test_a_loaded_elite_scores_as_its_run_directory_does_on_each_test_set(runs):
    elite = load_elite(runs["ga"], 0)
    for seed in (0, 1):
        loaded = score_elite(elite, episodes=4, seed=seed)
        assert loaded.to_json() == evaluate_run(runs["ga"], 0, episodes=4, seed=seed).to_json()
        assert loaded.generation == 0 and loaded.run_dir == runs["ga"] and loaded.algorithm == "ga"
    assert score_elite(elite, episodes=4, seed=0).returns != score_elite(elite, episodes=4, seed=1).returns


def test_atari_protocols_and_the_test_cap(runs):
    deep_ga = evaluate_run(runs["pong"], episodes=3, max_episode_frames=400)
    assert deep_ga.protocol == "deep-ga" and deep_ga.max_episode_frames == 400
    assert all(f >= 400 for f in deep_ga.frames) and deep_ga.capped == 3  # a random Pong agent outlives 400 frames
    machado = evaluate_run(runs["pong"], episodes=2, protocol="machado", max_episode_frames=400)
    assert machado.protocol == "machado"
    spec = RunSpec("pong", "small", max_episode_frames=300, env_options=dict(noop_max=5))
    tested, name = protocol_spec(spec, "machado")
    assert name == "machado" and tested.max_episode_frames == ALE_MAX_EPISODE_FRAMES  # not the training cap
    assert {k: tested.env_options[k] for k in PROTOCOLS["machado"]} == PROTOCOLS["machado"]
    tested, _ = protocol_spec(spec, "deep-ga")
    assert tested.env_options["noop_max"] == 30 and tested.env_options["repeat_action_probability"] == 0.0


def test_test_seeds_never_equal_the_seeds_training_used(runs, monkeypatch):
    """The Trainer seeds its rounds as training_round_seeds says, and test episodes use none of those seeds."""
    used = []
    config = RunConfig(algorithm="ga", hyperparameters=HYPERPARAMETERS["ga"], seed=3, **CARTPOLE)
    trainer = Trainer.from_config(config)
    evaluate = trainer.evaluator.evaluate
    monkeypatch.setattr(
        trainer.evaluator,
        "evaluate",
        lambda requests, seed, **kw: (used.append((seed, [r.episodes for r in requests])), evaluate(requests, seed=seed, **kw))[
            1
        ],
    )
    trainer.run(generations=3)
    trainer.close()
    round_seeds = training_round_seeds(config.seed, 3)
    assert len(used) == 6 and {seed for seed, _ in used} <= round_seeds  # 3 generations of 2 rounds
    training_episodes = {
        episode_seed(seed, r, e) for seed, episodes in used for r, count in enumerate(episodes) for e in range(count)
    }
    for test in range(3):
        evaluation = scoring_seed(config.seed, test)
        assert evaluation not in round_seeds
        assert not {episode_seed(evaluation, r, 0) for r in range(100)} & training_episodes


def test_a_live_trainer_scores_its_elite():
    trainer = Trainer.from_config(RunConfig(algorithm="ga", hyperparameters=HYPERPARAMETERS["ga"], **CARTPOLE))
    with pytest.raises(ValueError, match="no elite yet"):
        trainer.evaluate_elite(episodes=2)
    trainer.run(generations=1)
    seen = []
    score = trainer.evaluate_elite(episodes=6, progress=lambda done, total: seen.append((done, total)))
    assert score.episodes == 6 and score.generation == 0 and seen[-1] == (6, 6)
    trainer.close()


def test_bad_input_is_refused_with_the_argument_named(runs, tmp_path):
    with pytest.raises(ValueError, match="protocol"):
        evaluate_run(runs["ga"], protocol="sticky")
    with pytest.raises(ValueError, match="episodes"):
        evaluate_run(runs["ga"], episodes=0)
    with pytest.raises(ValueError, match="max_episode_frames must exceed"):
        evaluate_run(runs["pong"], max_episode_frames=31)  # 30 no-ops and FIRE
    with pytest.raises(ValueError, match="generation must be one of 0..1"):
        evaluate_run(runs["ga"], generation=9)
    with pytest.raises(ValueError, match="no longer holds"):
        evaluate_run(runs["es"], generation=0)  # its center moved on
    with pytest.raises(ValueError, match="not a run directory"):
        evaluate_run(str(tmp_path))
    with pytest.raises(ValueError, match="seed"):
        evaluate_run(runs["ga"], seed=-1)


@pytest.mark.slow
def test_the_command_line_prints_the_score_and_writes_the_episodes(runs, tmp_path, capsys):
    path = str(tmp_path / "test.json")
    command = [
        sys.executable,
        "-m",
        "workbench",
        "evaluate",
        runs["pong"],
        "--episodes",
        "2",
        "--max-episode-frames",
        "400",
        "--json",
        path,
    ]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300, env=dict(os.environ))
    assert result.returncode == 0, result.stderr[-2000:]
    assert "± " in result.stdout and "over 2 episodes (deep-ga, cap 400)" in result.stdout
    assert "oneDNN" not in result.stderr  # TensorFlow's start-up lines are silenced
    assert len(json.load(open(path))["returns"]) == 2
    from workbench.cli import main  # refused before any work: in this process

    assert main(command[3:]) == 2
    err = capsys.readouterr().err
    assert "--json" in err and "exists already" in err
