"""RunMonitor: the dashboard's data, fed by events, without widgets."""

import math

import numpy as np
import pytest

from support import generation_record
from workbench.lab.run_monitor import RunMonitor
from workbench.training.events import Event, FrameShown, HyperparametersChanged, StateChanged, TrainingFailed


def generation_event(g, **values):
    return Event("generation", generation_record(g, **values), 0.0)


def test_generations_fill_the_series_in_order():
    monitor = RunMonitor()
    changed = monitor.apply([generation_event(0), generation_event(1)])
    assert {"fitness", "throughput"} <= changed
    assert monitor.generations == [0, 1]
    assert monitor.fitness["max"] == [10.0, 11.0] and monitor.fitness["elite"] == [8.0, 9.0]
    assert monitor.x_values("frames") == [1000, 2000]
    assert monitor.time_split["emulation"] == [0.5, 0.5]
    assert monitor.hyperparameters == {"sigma": 0.01}
    assert "generation 1" in monitor.summary()
    assert math.isnan(monitor.busy_frames_per_second[0]) and monitor.tail_seconds == [0.0, 0.0]  # no rounds given
    rounds = [
        dict(
            phase="population",
            episodes=10,
            frames=900,
            seconds=0.2,
            busy_frames_per_second=6000.0,
            tail_seconds=0.05,
            occupancy=[1.0, 0.5],
        )
    ]
    monitor.apply([generation_event(2, busy_frames_per_second=6000.0, tail_seconds=0.05, rounds=rounds)])
    assert monitor.busy_frames_per_second[-1] == 6000.0 and monitor.tail_seconds[-1] == 0.05
    assert monitor.latest_rounds[0]["occupancy"] == (1.0, 0.5)


def test_missing_and_infinite_values_become_nan_gaps():
    monitor = RunMonitor()
    monitor.apply([generation_event(0, elite=None, mean=-math.inf)])
    assert math.isnan(monitor.fitness["elite"][0]) and math.isnan(monitor.fitness["mean"][0])


def test_history_seeds_the_series():
    monitor = RunMonitor(history=[generation_event(g).data for g in range(3)])
    assert monitor.generations == [0, 1, 2]


def test_frames_errors_notices_and_state():
    monitor = RunMonitor()
    frame = np.zeros((210, 160, 3), np.uint8)
    changed = monitor.apply(
        [
            Event("frame", FrameShown(frame=frame, score=3.0, step=7, generation=0, request=1, episode=0), 0.0),
            Event("hyperparameters", HyperparametersChanged(changes={"sigma": 0.005}, applies_at_generation=2), 0.0),
            Event("error", TrainingFailed(error="RuntimeError('boom')", generation=1), 0.0),
            Event("state", StateChanged(state="running"), 0.0),
        ]
    )
    assert changed == {"frame", "notices", "log", "state"}
    assert monitor.latest_frame.step == 7 and monitor.frames_received == 1
    assert "sigma = 0.005 (applies at generation 2)" in monitor.notices[-1]
    assert any(level == "error" and "boom" in text for _, level, text in monitor.log)
    assert monitor.state == "running"


def test_bad_axis_is_named():
    with pytest.raises(ValueError, match="axis"):
        RunMonitor().x_values("seconds")


def test_bad_history_or_log_length_is_named():
    with pytest.raises(TypeError, match=r"history\[1\] must be a GenerationRecord, got dict"):
        RunMonitor(history=[generation_event(0).data, {"generation": 1}])
    with pytest.raises(TypeError, match="history must be GenerationRecords"):
        RunMonitor(history="history.jsonl")
    for bad in (0, -1, 2.5, None):
        with pytest.raises(ValueError, match="log_lines must be a positive integer"):
            RunMonitor(log_lines=bad)


def test_log_is_bounded():
    monitor = RunMonitor(log_lines=5)
    for k in range(20):
        monitor.add_log("info", f"line {k}")
    assert len(monitor.log) == 5 and monitor.log[-1][2] == "line 19"


def test_restarts_repairs_and_non_finite_returns_of_a_search_distribution_reach_the_log():
    monitor = RunMonitor()
    counts = [
        dict(restarts=0, repairs=0, nonfinite=0),
        dict(restarts=1, repairs=0, nonfinite=0),
        dict(restarts=1, repairs=3, nonfinite=2),
    ]
    changed = [monitor.apply([generation_event(g, extras=dict(step_size=0.1, **c))]) for g, c in enumerate(counts)]
    assert "log" not in changed[0] and "log" in changed[1] and "log" in changed[2]
    lines = [(level, text) for _, level, text in monitor.log]
    assert lines[0] == ("info", lines[0][1]) and "generation 1: the search distribution restarted (restart 1" in lines[0][1]
    assert "generation 2: 3 eigenvalues or scales were raised to their floor" in lines[1][1]
    assert lines[2] == ("error", "generation 2: 2 members returned non-finite fitness (ranked last)")


def test_an_archive_is_followed_and_its_rejected_candidates_reach_the_log():
    monitor = RunMonitor()
    assert not monitor.has_archive
    extras = [
        dict(qd_score=10.0, coverage=0.1, archive_size=5, rejected=0),
        dict(qd_score=12.5, coverage=0.2, archive_size=9, rejected=3),
    ]
    changed = [monitor.apply([generation_event(g, extras=e)]) for g, e in enumerate(extras)]
    assert monitor.has_archive and monitor.archive == dict(qd_score=[10.0, 12.5], coverage=[0.1, 0.2], archive_size=[5, 9])
    assert "log" not in changed[0] and "log" in changed[1]
    assert monitor.log[-1][1:] == (
        "error",
        "generation 1: 3 candidates left out of the archive (a non-finite return or descriptor)",
    )
