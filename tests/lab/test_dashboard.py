"""TrainingDashboard without a browser: controls reach trainer.set, rejections show, events update the
plots and the frame viewer, buttons drive the trainer, callback errors reach the log."""

import time

import numpy as np
import pytest

from support import cartpole_config
from workbench.lab import TrainingDashboard
from workbench.training import RunConfig, Trainer


@pytest.fixture
def trainer(tmp_path):
    trainer = Trainer.from_config(cartpole_config(), run_dir=str(tmp_path / "run"))
    yield trainer
    trainer.close()


@pytest.fixture
def dashboard(trainer):
    dashboard = TrainingDashboard(trainer, generations=2, plot_interval=0.05)
    yield dashboard
    dashboard.close()


def wait_for(condition, timeout=60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


def test_slider_and_typed_values_reach_trainer_set(dashboard, trainer):
    controls = dashboard.controls
    assert set(controls.sliders) == {
        "sigma",
        "sigma_adaptation",
        "progressive_caps",
        "truncation",
        "population_size",
        "elite_episodes",
        "max_episode_frames",
    }
    controls.sliders["sigma"].value = 0.05
    assert trainer.strategy.hyperparameters.pending == {"sigma": 0.05}
    controls.inputs["truncation"].value = "3"
    assert trainer.strategy.hyperparameters.pending == {"sigma": 0.05, "truncation": 3}
    controls.sliders["max_episode_frames"].value = 150
    assert trainer.pending() == {"sigma": 0.05, "truncation": 3, "max_episode_frames": 150}
    assert "✓" in controls.statuses["sigma"].value
    trainer.run(generations=2)  # the changes apply from generation 1
    assert trainer.strategy.config.sigma == 0.05 and trainer.strategy.config.truncation == 3
    assert trainer.history[-1].hyperparameters["max_episode_frames"] == 150
    assert trainer.history[-1].hyperparameters["sigma"] == 0.05


def test_rejected_values_are_shown_with_the_reason_and_the_controls_revert(dashboard, trainer):
    controls = dashboard.controls
    controls.sliders["truncation"].value = 40  # more parents than the population of 16
    status = controls.statuses["truncation"].value
    assert "rejected" in status and "truncation" in status and "population_size" in status
    assert controls.sliders["truncation"].value == 4 and controls.inputs["truncation"].value == "4"
    assert trainer.strategy.hyperparameters.pending == {}
    controls.inputs["sigma"].value = "lots"
    assert "rejected" in controls.statuses["sigma"].value and "sigma must be a number" in controls.statuses["sigma"].value
    controls.inputs["max_episode_frames"].value = "5000"  # above the run's cap of 200
    assert "rejected" in controls.statuses["max_episode_frames"].value
    dashboard.update_now()
    assert "truncation = 40 rejected" in dashboard.log_view.value


def test_events_update_the_plots_and_the_frame_viewer(dashboard, trainer):
    before = dashboard.fitness_image.value
    trainer.run(generations=2)
    dashboard.update_now()
    x, y = dashboard.fitness_plot.data("mean")
    assert x == [0, 1] and y == [r.mean for r in trainer.history]
    assert dashboard.fitness_image.value != before
    assert "frames/s in generation 1" in dashboard.throughput_label.value
    assert "busy phase" in dashboard.throughput_label.value and "in 2 rounds" in dashboard.throughput_label.value
    times, shares = dashboard.throughput_plot.slots_line.get_data()  # slots running over the newest generation
    assert len(times) == len(shares) > 0 and times[-1] == pytest.approx(sum(r["seconds"] for r in trainer.history[-1].rounds))
    dashboard.axis_toggle.value = "frames"
    dashboard.update_now()
    assert dashboard.fitness_plot.data("mean")[0] == [r.frames_total for r in trainer.history]
    frame = np.zeros((210, 160, 3), np.uint8)
    frame[50:60, 40:50] = 255
    trainer.events.publish("frame", generation=2, request=3, episode=0, step=11, score=4.0, frame=frame)
    dashboard.update_now()
    assert dashboard.frame_image.value[:4] == b"\x89PNG"
    assert "step 11, score 4" in dashboard.frame_caption.value
    first = dashboard.frame_image.value
    frame[100:110, 40:50] = 255
    trainer.events.publish("frame", generation=2, request=3, episode=0, step=12, score=5.0, frame=frame)
    dashboard.update_now()
    assert dashboard.frame_image.value != first


def test_a_search_distribution_is_plotted_for_the_strategies_that_record_one(dashboard, tmp_path):
    assert dashboard.distribution_box.layout.display == "none"  # the GA records none
    assert not dashboard.buttons["watch elite"].disabled
    config = RunConfig(env="sphere-20", algorithm="sep-cma-es", noise_size=2**16)  # a function problem: no gameplay
    trainer = Trainer.from_config(config, run_dir=str(tmp_path / "cma"))
    board = TrainingDashboard(trainer, plot_interval=0.05)
    try:
        trainer.run(generations=3)
        board.update_now()
        x, y = board.distribution_plot.data("step_size")
        assert x == [0, 1, 2] and y == [r.extras["step_size"] for r in trainer.history]
        low, high = board.distribution_plot.data("scale_min")[1], board.distribution_plot.data("scale_max")[1]
        assert all(0 < a <= b for a, b in zip(low, high))
        assert board.distribution_box.layout.display is None and board.distribution_image.value[:4] == b"\x89PNG"
        assert board.buttons["watch elite"].disabled and "sphere-20 has no environment" in board.buttons["watch elite"].tooltip
        ranks, axes = board.distribution_plot.data("axes")  # the newest generation's principal axes, largest first
        assert ranks[0] == 0 and ranks[-1] == 1 and axes == list(trainer.distribution_axes()) and axes == sorted(axes)[::-1]
    finally:
        board.close()
        trainer.close()


def test_updates_are_throttled(trainer):
    dashboard = TrainingDashboard(trainer, plot_interval=30, frame_interval=30)
    try:
        frame = np.zeros((210, 160, 3), np.uint8)
        trainer.events.publish("frame", generation=0, request=0, episode=0, step=1, score=0.0, frame=frame)
        dashboard.update_now(throttle=True)  # the first frame shows at once
        shown = dashboard.frame_image.value
        assert shown[:4] == b"\x89PNG"
        frame[:10] = 255
        trainer.events.publish("frame", generation=0, request=0, episode=0, step=2, score=0.0, frame=frame)
        dashboard.update_now(throttle=True)  # within 30 s of the last one: not drawn yet
        assert dashboard.frame_image.value == shown
        dashboard.update_now(throttle=False)
        assert dashboard.frame_image.value != shown
    finally:
        dashboard.close()


def test_buttons_drive_a_background_run_and_the_updater_thread_follows_it(dashboard, trainer):
    dashboard.buttons["start"].click()
    assert wait_for(lambda: trainer.running)
    assert dashboard.buttons["start"].disabled or wait_for(lambda: dashboard.buttons["start"].disabled, 5)
    assert wait_for(lambda: not trainer.running)  # the budget of 2 generations
    assert wait_for(lambda: dashboard.fitness_plot.data("max")[0] == [0, 1], 10)  # drawn by the updater thread
    dashboard.buttons["checkpoint now"].click()
    assert wait_for(lambda: "checkpoint after 2 generations" in dashboard.log_view.value, 10)
    dashboard.buttons["start"].click()
    assert wait_for(lambda: trainer.running)
    dashboard.buttons["pause"].click()
    assert trainer.paused
    dashboard.buttons["resume"].click()
    assert not trainer.paused
    dashboard.buttons["stop"].click()
    assert not trainer.running


def test_callback_and_trainer_errors_reach_the_log(trainer, tmp_path):
    dashboard = TrainingDashboard(Trainer.from_config(cartpole_config()), plot_interval=0.05)
    try:
        dashboard.buttons["checkpoint now"].click()  # no run_dir
        assert "cannot write checkpoints" in dashboard.log_view.value
        dashboard.buttons["watch elite"].click()  # no generation yet
        assert "no elite yet" in dashboard.log_view.value
        dashboard.trainer.events.publish("error", error="RuntimeError('emulator exploded')", generation=3)
        dashboard.update_now()
        assert "emulator exploded" in dashboard.log_view.value and "#b00020" in dashboard.log_view.value
    finally:
        dashboard.close()
        dashboard.trainer.close()


def test_watch_elite_shows_an_agent_viewer(dashboard, trainer):
    trainer.run(generations=1)
    thread = dashboard.watch_elite(wait=True)
    assert not thread.is_alive()
    assert dashboard.elite_viewer is not None and dashboard.elite_area.children == (dashboard.elite_viewer.widget,)
    assert dashboard.elite_viewer.steps > 0


def test_score_elite_shows_mean_std_and_a_histogram(dashboard, trainer):
    with pytest.raises(ValueError, match="no elite yet"):
        dashboard.score_elite(episodes=2)
    trainer.run(generations=1)
    dashboard.score_episodes.value = 4
    thread = dashboard.score_elite(wait=True)
    assert not thread.is_alive() and dashboard.score.episodes == 4
    assert "±" in dashboard.score_view.value and "over 4 episodes" in dashboard.score_view.value
    assert dashboard.score_image.value[:4] == b"\x89PNG"
    with pytest.raises(ValueError, match="episodes"):
        dashboard.score_elite(episodes=0)


def test_bad_arguments_are_named(trainer):
    for kwargs, name in (
        (dict(plot_interval=0), "plot_interval"),
        (dict(x_axis="seconds"), "x_axis"),
        (dict(frame_scale=0), "frame_scale"),
        (dict(generations=-1), "generations"),
    ):
        with pytest.raises(ValueError, match=name):
            TrainingDashboard(trainer, **kwargs)
    with pytest.raises(TypeError, match="trainer must be a workbench.training.Trainer, got str"):
        TrainingDashboard("runs/frostbite")


def test_atari_frames_stream_from_a_real_run(tmp_path):
    config = RunConfig(
        env="pong",
        model="small",
        algorithm="ga",
        subpopulations=1,
        slots=4,
        max_episode_frames=400,
        noise_size=2**22,
        hyperparameters=dict(population_size=4, truncation=2, sigma=0.01, elite_candidates=1, elite_episodes=1),
    )
    trainer = Trainer.from_config(config)
    dashboard = TrainingDashboard(trainer, generations=1, frame_interval=0.01)
    try:
        dashboard.start()
        assert trainer.wait(timeout=120)
        dashboard.update_now()
        assert dashboard.monitor.frames_received > 0
        assert dashboard.frame_image.value[:4] == b"\x89PNG" and "generation 0" in dashboard.frame_caption.value
    finally:
        dashboard.close()
        trainer.close()


def test_mujoco_frames_stream_with_the_steps_velocity_and_reward_terms():
    config = RunConfig(
        env="Hopper-v5",
        model="linear",
        algorithm="ars",
        subpopulations=1,
        slots=4,
        max_episode_frames=200,
        noise_size=2**22,
        observation_normalization=True,
        hyperparameters=dict(directions=4, top_directions=2, center_episodes=1),
    )
    trainer = Trainer.from_config(config)
    dashboard = TrainingDashboard(trainer, generations=2, frame_interval=0.01)
    try:
        names = set(dashboard.controls.knobs)
        assert {"directions", "top_directions", "step_size", "noise", "survival_bonus"} <= names  # ARS's tunables
        dashboard.start()
        assert trainer.wait(timeout=300)
        deadline = time.monotonic() + 60  # MuJoCo frames are painted in a thread of their own: the last may lag
        while not dashboard.monitor.frames_received and time.monotonic() < deadline:
            time.sleep(0.2)
        dashboard.update_now()
        assert dashboard.monitor.frames_received > 0
        frame = dashboard.monitor.latest_frame
        assert frame.frame.shape[1] == 320 and "x_velocity" in frame.info  # a MuJoCo render and its info terms
        assert "x velocity" in dashboard.frame_caption.value and "reward ctrl" in dashboard.frame_caption.value
    finally:
        dashboard.close()
        trainer.close()


def test_an_archive_is_plotted_for_quality_diversity(dashboard, tmp_path):
    assert dashboard.archive_box.layout.display == "none"  # the GA keeps no archive
    config = RunConfig(
        env="sphere-4",
        algorithm="map-elites",
        noise_size=2**16,
        hyperparameters=dict(population_size=16, initial_population=16, sigma=0.2, cells=6, descriptor_bounds=[[-1, 1]] * 4),
    )
    trainer = Trainer.from_config(config, run_dir=str(tmp_path / "me"))
    board = TrainingDashboard(trainer, plot_interval=0.05)
    try:
        trainer.run(generations=3)
        board.update_now()
        x, qd = board.archive_plot.data("qd_score")
        assert x == [0, 1, 2] and qd == [r.extras["qd_score"] for r in trainer.history]
        coverage = board.archive_plot.data("coverage")[1]
        assert coverage == [100 * r.extras["coverage"] for r in trainer.history] and coverage == sorted(coverage)
        assert board.archive_box.layout.display is None and board.archive_image.value[:4] == b"\x89PNG"
        assert board.distribution_box.layout.display == "none"
        fitness = np.frombuffer(board.archive_view.canvas.fitness, np.float32)  # the live archive, as of the update
        assert (~np.isnan(fitness)).sum() == trainer.history[-1].extras["archive_size"]
        assert dashboard.archive_view is None  # the GA's dashboard has none
    finally:
        board.close()
        trainer.close()
