"""AgentViewer and compare_generations: scrubbing shows the frame, the network's input and the score at
each step; export writes GIF/MP4; two generations of a real run side by side."""

import numpy as np
import pytest

from workbench.lab import AgentViewer, Comparison, compare_generations
from workbench.lab.pictures import observation_strip, png
from workbench.lab.plots import timeline_figure, trap_positions_figure
from workbench.training import RunConfig, Trainer
from workbench.training.replay import Episode


def synthetic_episode(steps=6):
    rng = np.random.default_rng(0)
    frames = rng.integers(0, 255, (steps + 1, 210, 160, 3), dtype=np.uint8)
    observations = rng.integers(0, 255, (steps + 1, 84, 84, 4), dtype=np.uint8)
    rewards = np.array([0, 1, 0, 0, 2, 0][:steps], np.float32)
    return Episode(
        frames, np.arange(steps, dtype=np.int32) % 3, rewards, observations, float(rewards.sum()), ["NOOP", "FIRE", "UP"]
    )


def test_scrubbing_shows_each_step():
    episode = synthetic_episode()
    viewer = AgentViewer(episode, title="test")
    assert viewer.slider.max == 6 and viewer.play.max == 6
    assert viewer.frame_image.value == png(episode.frames[0], 2)
    viewer.slider.value = 5
    assert viewer.step == 5
    assert viewer.frame_image.value == png(episode.frames[5], 2)
    assert viewer.observation_image.value == png(observation_strip(episode.observations[5]), 2)
    assert "step 5 / 6" in viewer.caption.value and "action FIRE" in viewer.caption.value
    assert "score 3" in viewer.caption.value  # 0 + 1 + 0 + 0 + 2
    assert list(viewer.score_plot.cursor.get_xdata()) == [5, 5]


def test_observation_strip_puts_the_stack_side_by_side():
    stack = np.zeros((84, 84, 4), np.uint8)
    stack[:, :, 3] = 200
    strip = observation_strip(stack, gap=2)
    assert strip.shape == (84, 4 * 84 + 3 * 2)
    assert (strip[:, -84:] == 200).all() and (strip[:, :84] == 0).all()
    assert observation_strip(np.array([0.0, 0.5, 1.0], np.float32)).shape == (1, 3)
    with pytest.raises(ValueError, match="observations"):
        observation_strip(np.zeros((2, 2, 2, 2)))


def test_a_bad_title_or_comparison_is_named():
    episode = synthetic_episode()
    with pytest.raises(TypeError, match="title must be a string or None, got int"):
        AgentViewer(episode, title=3)
    with pytest.raises(ValueError, match="viewers must hold at least one AgentViewer"):
        Comparison([])
    with pytest.raises(TypeError, match=r"viewers\[1\] must be an AgentViewer, got Episode"):
        Comparison([AgentViewer(episode), episode])
    with pytest.raises(TypeError, match="viewers must be AgentViewers, got NoneType"):
        Comparison(None)


def test_export_writes_gif_and_mp4_and_reports_bad_paths(tmp_path):
    viewer = AgentViewer(synthetic_episode())
    assert viewer.save(str(tmp_path / "a.gif")).endswith("a.gif") and (tmp_path / "a.gif").stat().st_size > 0
    viewer.export_path.value = str(tmp_path / "b.mp4")
    viewer.export_button.click()
    assert "saved" in viewer.export_status.value and (tmp_path / "b.mp4").stat().st_size > 0
    viewer.export_path.value = str(tmp_path / "c.avi")
    viewer.export_button.click()
    assert ".gif or .mp4" in viewer.export_status.value


def test_bad_arguments_are_named():
    with pytest.raises(TypeError, match="episode"):
        AgentViewer("not an episode")
    with pytest.raises(ValueError, match="fps"):
        AgentViewer(synthetic_episode(), fps=0)
    with pytest.raises(ValueError, match="scale"):
        AgentViewer(synthetic_episode(), scale=100)


def test_compare_two_generations_of_a_real_atari_run(tmp_path):
    config = RunConfig(
        env="pong",
        model="small",
        algorithm="ga",
        subpopulations=1,
        slots=4,
        max_episode_frames=300,
        noise_size=2**22,
        hyperparameters=dict(population_size=4, truncation=2, sigma=0.01, elite_candidates=1, elite_episodes=1),
    )
    run_dir = str(tmp_path / "run")
    trainer = Trainer.from_config(config, run_dir=run_dir)
    trainer.run(generations=2)
    trainer.close()
    comparison = compare_generations(run_dir, 0, 1)
    first, second = comparison.viewers
    assert "generation 0" in first.title and "generation 1" in second.title
    assert first.episode.frames.shape[1:] == (210, 160, 3) and first.episode.observations.shape[1:] == (84, 84, 4)
    comparison.slider.value = 10
    assert first.step == 10 and second.step == 10
    comparison.slider.value = comparison.slider.max  # the longer episode's end; the shorter stays on its last frame
    assert {first.step, second.step} <= {first.steps, second.steps, comparison.slider.max}
    newest = AgentViewer.from_run(run_dir)
    assert newest.steps == len(newest.episode.actions)
    with pytest.raises(ValueError, match="generation"):
        AgentViewer.from_run(run_dir, generation=7)


def test_a_continuous_control_episode_shows_its_velocity_reward_terms_and_actions():
    rng = np.random.default_rng(1)
    steps = 5
    info = {
        "x_position": np.arange(steps) * 0.1,
        "x_velocity": rng.normal(size=steps),
        "reward_forward": rng.normal(size=steps),
        "reward_ctrl": -rng.random(steps),
    }
    episode = Episode(
        rng.integers(0, 255, (steps + 1, 240, 320, 3), dtype=np.uint8),
        rng.uniform(-1, 1, (steps, 6)).astype(np.float32),
        rng.normal(size=steps).astype(np.float32),
        rng.normal(size=(steps + 1, 17)).astype(np.float32),
        1.0,
        None,
        info,
    )
    viewer = AgentViewer(episode)
    assert viewer.continuous and viewer.frame_image.value == png(episode.frames[0], 1)  # renders shown unscaled
    viewer.slider.value = 3
    caption = viewer.caption.value
    assert "action [" in caption and "x velocity" in caption and "x position" in caption
    assert list(viewer.info_plot.cursor.get_xdata()) == [3, 3]
    plotted = {line.get_label() for line in viewer.info_plot.axes.get_lines()}
    assert {"x velocity", "reward forward", "reward ctrl"} <= plotted and "x position" not in plotted


def test_timeline_figure_draws_a_timeline_and_names_a_bad_entry():
    figure = timeline_figure([(0, "emulation", 0.0, 0.5), (1, "inference", 0.2, 0.4)])
    assert len(figure.axes[0].collections) == 2
    with pytest.raises(TypeError, match="timeline must be a sequence"):
        timeline_figure(None)
    for bad in ([1, 2, 3], [(0, "emulation", 0.5, 0.1)], [(-1, "idle", 0, 1)], [(0, "idle", 0, float("nan"))]):
        with pytest.raises(ValueError, match=r"timeline\[0\] must be"):
            timeline_figure(bad)
    good = [(0, "emulation", 0.0, 0.5)]
    for options, match in [
        (dict(lanes=0), "lanes must be a positive integer"),
        (dict(window=(1.0, 0.5)), "window must be"),
        (dict(window=(0.0,)), "window must be"),
        (dict(window="ab"), "window must be"),
        (dict(width=0), "width must be"),
        (dict(height="tall"), "height must be"),
    ]:
        with pytest.raises(ValueError, match=match):
            timeline_figure(good, **options)


def test_trap_positions_figure_names_bad_positions():
    figure = trap_positions_figure({"es": [(0.5, 0.1), (-2.0, 1.0)], "none": []})
    assert len(figure.axes[0].collections) == 3  # two labels and the origin
    with pytest.raises(TypeError, match="positions must be a dict"):
        trap_positions_figure([(0.0, 0.0)])
    for bad in ([[1.0]], [(0.0, float("nan"))], [("a", "b")], 3.0):
        with pytest.raises(ValueError, match=r"positions\['es'\] must be finite \(x, y\) pairs"):
            trap_positions_figure({"es": bad})


def test_pictures_name_their_bad_arguments():
    with pytest.raises(ValueError, match="gap must be an integer >= 0"):
        observation_strip(np.zeros((2, 2, 2), np.uint8), gap=-1)
    for bad in (np.zeros((0, 3)), np.array(["a", "b"]), np.array([True, False]), np.array([0.0, np.nan])):
        with pytest.raises(ValueError, match="observation must be"):
            observation_strip(bad)
    with pytest.raises(ValueError, match="scale must be a positive integer"):
        png(np.zeros((2, 2), np.uint8), scale=0)
