"""Scoring a whole run three ways: a test extended equals one played whole, the race and the pick, the three test
sets apart, the episode cache (resume, no episode played twice, corrupt file named), frame marks, bad input, and
the benchmark script."""

import json
import os
import shutil

import numpy as np
import pytest

from support import cartpole_config, load_bench
from workbench.training import Trainer
from workbench.training.checkpoint import CheckpointError, load_checkpoint, save_checkpoint
from workbench.training.elites import load_elite
from workbench.training.run_scores import (
    CACHE_FILE,
    FINAL_SEED,
    REPORT_SEED,
    SELECTION_SEED,
    EpisodeCache,
    budget_generation,
    distinct_elites,
    generation_before,
    raced,
    score_run,
)
from workbench.training.scoring import score_elite
from workbench.training.trainer import JOURNALS

CARTPOLE = dict(  # a four-generation GA run on CartPole in seconds (support.cartpole_config, smaller)
    subpopulations=1,
    slots=4,
    noise_size=2**16,
    model_options=dict(hidden_sizes=[4]),
    hyperparameters=dict(population_size=8, truncation=3, sigma=0.3, elite_candidates=2, elite_episodes=2),
    seed=5,
)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """A four-generation CartPole GA run."""
    path = str(tmp_path_factory.mktemp("run") / "ga")
    with Trainer.from_config(cartpole_config(**CARTPOLE), run_dir=path) as trainer:
        trainer.run(generations=4)
    return path


def copy_run(run_dir, tmp_path):
    import shutil

    target = str(tmp_path / "run")
    shutil.copytree(run_dir, target, ignore=shutil.ignore_patterns(CACHE_FILE))
    return target


def test_an_extended_test_plays_the_episodes_a_whole_test_plays(run_dir):
    elite = load_elite(run_dir)
    whole = score_elite(elite, episodes=9, seed=1)
    first = score_elite(elite, episodes=4, seed=1)
    rest = score_elite(elite, episodes=5, seed=1, first_episode=4)
    assert first.returns + rest.returns == whole.returns and first.frames + rest.frames == whole.frames
    assert rest.first_episode == 4 and rest.to_json()["first_episode"] == 4
    with pytest.raises(ValueError, match="first_episode"):
        score_elite(elite, episodes=2, first_episode=-1)


def test_the_three_scores_and_the_race(run_dir, tmp_path):
    path = copy_run(run_dir, tmp_path)
    scores = score_run(path, episodes=12, screen_episodes=4, max_raced=2)
    newest = load_elite(path)
    spans = distinct_elites(newest)
    assert [e.generation for e in scores.elites] == [first for first, _ in spans]
    # (a): the final elite on test seed 0, the same episodes as scoring it directly
    final = score_elite(newest, episodes=12, seed=FINAL_SEED)
    assert scores.final.returns == final.returns and scores.final.generation == newest.history[-1].generation
    # the screen: every distinct elite on the first 4 selection episodes
    for screen in scores.elites:
        direct = score_elite(newest.of_generation(screen.generation), episodes=12, seed=SELECTION_SEED)
        assert screen.screen_mean == pytest.approx(np.mean(direct.returns[:4]), abs=0.01)
        if screen.selection_mean is not None:
            assert screen.selection_mean == pytest.approx(direct.mean, abs=0.01)
    went_on = [e for e in scores.elites if e.selection_mean is not None]
    assert 1 <= len(went_on) <= max(2, min(3, len(spans)))
    # (c): the highest full selection mean among those that went on; (b): that elite on the report set
    picked = max(went_on, key=lambda e: (e.selection_mean, e.generation))
    assert scores.picked_generation == picked.generation and scores.paper_way.mean == pytest.approx(
        picked.selection_mean, abs=0.01
    )
    report = score_elite(newest.of_generation(picked.generation), episodes=12, seed=REPORT_SEED)
    assert scores.best.returns == report.returns and scores.best.seed == REPORT_SEED and scores.paper_way.seed == SELECTION_SEED
    line = scores.to_json()
    assert line["final"]["episodes"] == line["best"]["episodes"] == line["paper_way"]["episodes"] == 12
    json.dumps(line)


def test_the_cache_resumes_and_never_plays_an_episode_twice(run_dir, tmp_path):
    path = copy_run(run_dir, tmp_path)
    first = score_run(path, episodes=6, screen_episodes=3, max_raced=1)
    assert first.episodes_played > 0 and os.path.exists(os.path.join(path, CACHE_FILE))
    again = score_run(path, episodes=6, screen_episodes=3, max_raced=1)
    assert again.episodes_played == 0 and again.to_json() | {"episodes_played": 0, "frames_played": 0} == first.to_json() | {
        "episodes_played": 0,
        "frames_played": 0,
    }
    longer = score_run(path, episodes=8, screen_episodes=3, max_raced=1)  # extends the kept tests by two episodes each
    assert longer.final.returns[:6] == first.final.returns
    assert longer.episodes_played == 2 * (2 + len([e for e in longer.elites if e.selection_mean is not None]))
    uncached = score_run(path, episodes=8, screen_episodes=3, max_raced=1, cache=False)
    assert uncached.to_json() | {"episodes_played": 0, "frames_played": 0} == longer.to_json() | {
        "episodes_played": 0,
        "frames_played": 0,
    }


def test_two_processes_scoring_one_run_keep_each_others_episodes(run_dir, tmp_path):
    path = copy_run(run_dir, tmp_path)
    first, second = EpisodeCache(path), EpisodeCache(path)  # both loaded before either wrote
    entry = dict(generation=0, seed=0, returns=[1.0], steps=[1], frames=[4])
    first.entries["a"] = entry
    first.save()
    second.entries["b"] = dict(entry, returns=[2.0])
    second.entries["a"] = dict(entry, returns=[])  # a shorter copy of a test loses to the longer one
    second.entries["a"].update(steps=[], frames=[])
    second.save()
    assert EpisodeCache(path).entries == {"a": entry, "b": dict(entry, returns=[2.0])}


def test_a_corrupt_cache_is_named(run_dir, tmp_path):
    path = copy_run(run_dir, tmp_path)
    for text in (
        "{not json",
        json.dumps(dict(version=99, entries={})),
        json.dumps(dict(version=1, entries={"k": {"returns": [1]}})),
    ):
        with open(os.path.join(path, CACHE_FILE), "w") as f:
            f.write(text)
        with pytest.raises(CheckpointError, match=CACHE_FILE):
            score_run(path, episodes=2, screen_episodes=1)


@pytest.mark.parametrize("damage", [None, {"init": "nonsense"}])
def test_a_run_whose_history_lacks_an_elite_is_named(run_dir, tmp_path, damage):
    path = copy_run(run_dir, tmp_path)
    generation, state = load_checkpoint(path)  # a consistent checkpoint whose history says so (not a damaged file)
    state["history"][1]["elite_genome"] = damage
    shutil.rmtree(os.path.join(path, "checkpoints"))
    save_checkpoint(path, generation, state, journals=JOURNALS)
    with pytest.raises(ValueError, match=r"run_dir .*generation 1"):
        score_run(path, episodes=2, screen_episodes=1)


def test_frame_marks_choose_the_generation(run_dir, tmp_path):
    history = load_elite(run_dir).history
    totals = [r.frames_total for r in history]
    assert budget_generation(history, 1) == 0 and budget_generation(history, totals[1]) == 1
    assert budget_generation(history, totals[1] + 1) == 2 and budget_generation(history, 10**12) == history[-1].generation
    assert generation_before(history, totals[1]) == 1 and generation_before(history, totals[1] + 1) == 1
    assert generation_before(history, totals[0] - 1) is None
    path = copy_run(run_dir, tmp_path)
    scores = score_run(path, generation=1, episodes=3, screen_episodes=0)
    assert scores.generation == 1 and scores.frames == totals[1] and all(e.generation <= 1 for e in scores.elites)
    assert all(e.selection_mean is not None for e in scores.elites)  # no screen: every elite on the whole set


def test_the_race_keeps_the_close_ones():
    # (mean, std, index): the best, one within two standard errors, two far below
    screens = [(100.0, 10.0, 0), (95.0, 10.0, 1), (10.0, 1.0, 2), (5.0, 1.0, 3), (1.0, 0.0, 4)]
    assert raced(screens, 30, 10) == [0, 1, 2]  # the close one, and at least three
    assert raced(screens, 30, 1) == [0, 1, 2]
    assert raced([(1.0, 0.0, 0)], 30, 10) == [0]
    assert raced([(5.0, 100.0, 0), (1.0, 100.0, 1), (0.0, 100.0, 2), (-1.0, 100.0, 3)], 4, 10) == [0, 1, 2, 3]
    assert raced([(5.0, 100.0, 0), (1.0, 100.0, 1), (0.0, 100.0, 2), (-1.0, 100.0, 3)], 4, 2) == [0, 1, 2]


def test_bad_input_is_named(run_dir, tmp_path):
    for kwargs, name in (
        (dict(episodes=0), "episodes"),
        (dict(screen_episodes=5, episodes=4), "screen_episodes"),
        (dict(max_raced=0), "max_raced"),
        (dict(generation=99), "generation"),
        (dict(generation=-1), "generation"),
    ):
        with pytest.raises(ValueError, match=name):
            score_run(run_dir, cache=False, **kwargs)
    with pytest.raises(ValueError, match="run_dir"):
        score_run(str(tmp_path / "missing"))
    with pytest.raises(TypeError, match="run_dir"):
        score_run(3)
    with pytest.raises(ValueError, match="frames"):
        budget_generation([], 0)


@pytest.mark.slow
def test_the_benchmark_scores_each_run_once_and_names_a_broken_one(run_dir, tmp_path, capsys):
    """experiments/run_scores.py's main() in this process (a subprocess per call would import TensorFlow each)."""
    script = load_bench("run_scores")
    path = copy_run(run_dir, tmp_path)
    broken = str(tmp_path / "broken")
    os.makedirs(broken)
    results = str(tmp_path / "run_scores.jsonl")
    common = ["--smoke", "--results", results]
    with pytest.raises(SystemExit, match="not scored") as stop:
        script.main(common + [path, broken])
    assert "broken" in str(stop.value) and "cannot be scored" in capsys.readouterr().err
    lines = [json.loads(line) for line in open(results)]
    assert len(lines) == 1 and lines[0]["rule"] == "run" and lines[0]["final"]["episodes"] == 2
    script.main(common + [path, "--before", "1"])
    assert "no generation ended" in capsys.readouterr().err
    script.main(common + [path])
    assert "already" in capsys.readouterr().err and len(open(results).readlines()) == 1
    with pytest.raises(SystemExit) as stop:
        script.main(common + [path, "--screen-episodes", "3"])
    assert stop.value.code == 2 and "--screen-episodes" in capsys.readouterr().err
