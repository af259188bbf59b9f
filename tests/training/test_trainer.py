"""Trainer: synchronous and background runs, live set(), stop within seconds, events, logs, checkpoints,
exact resume (also after kill -9 at random moments), error propagation, corrupt checkpoints."""

import json
import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from support import TESTS, cartpole_config, pong_config
from workbench.training import (
    CheckpointError,
    EventBus,
    RunConfig,
    RunInUseError,
    Trainer,
    TrainerError,
    list_checkpoints,
    load_checkpoint,
    save_checkpoint,
)

FITNESS_KEYS = ("generation", "max", "mean", "median", "elite", "elite_genome", "evaluations", "frames")


def fitness(history):
    return [{k: getattr(record, k) for k in FITNESS_KEYS} for record in history]


def trainer_threads():
    return [t for t in threading.enumerate() if t.name.startswith("workbench-")]


def test_synchronous_run_logs_every_generation(tmp_path):
    trainer = Trainer.from_config(cartpole_config(), run_dir=str(tmp_path))
    records = trainer.run(generations=3)
    assert [r.generation for r in records] == [0, 1, 2] and trainer.generation == 3
    lines = (tmp_path / "history.jsonl").read_text().splitlines()
    assert [json.loads(line)["generation"] for line in lines] == [0, 1, 2]
    assert os.listdir(tmp_path / "tensorboard") and (tmp_path / "config.json").exists()
    frame = trainer.history_frame()
    assert list(frame["generation"]) == [0, 1, 2] and (frame["frames"] > 0).all()
    assert abs(sum(records[-1].time_split.values()) - 1) < 1e-6
    assert trainer.run(frames=1)[0].generation == 3  # budgets count from the call
    with pytest.raises(ValueError, match="generations"):
        trainer.run(generations=0)
    with pytest.raises(ValueError, match="seconds"):
        trainer.run(seconds=-1)
    with pytest.raises(ValueError, match=r"run\(\) needs a budget"):  # the foreground would never return
        trainer.run()


def test_resume_continues_exactly(tmp_path):
    reference = Trainer.from_config(cartpole_config(), run_dir=str(tmp_path / "a"))
    reference.run(generations=4)
    interrupted = Trainer.from_config(cartpole_config(), run_dir=str(tmp_path / "b"))
    interrupted.run(generations=2)
    interrupted.set(sigma=0.05)
    interrupted.checkpoint()
    interrupted.close()
    resumed = Trainer.resume_from(str(tmp_path / "b"))
    assert resumed.generation == 2
    resumed.run(generations=2)
    reference2 = Trainer.from_config(cartpole_config(), run_dir=str(tmp_path / "c"))
    reference2.run(generations=2)
    reference2.set(sigma=0.05)
    reference2.run(generations=2)
    assert fitness(resumed.history) == fitness(reference2.history)
    assert fitness(resumed.history) != fitness(reference.history)  # the sigma change mattered
    assert resumed.strategy.hyperparameters.trail == [{"generation": 3, "sigma": 0.05}]


def test_background_run_live_set_pause_stop_and_events(tmp_path):
    trainer = Trainer.from_config(cartpole_config(), run_dir=str(tmp_path))
    events = trainer.events.subscribe()
    trainer.start()
    errors = []

    def tweak():
        try:
            trainer.set(sigma=0.2, population_size=12)
        except Exception as error:  # noqa: BLE001
            errors.append(error)

    thread = threading.Thread(target=tweak)
    thread.start()
    thread.join()
    assert not errors
    with pytest.raises(ValueError, match="sigma"):
        trainer.set(sigma=-1.0)
    deadline = time.monotonic() + 60
    while trainer.generation < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    trainer.pause()
    time.sleep(0.3)
    paused_at = trainer.generation
    time.sleep(0.5)
    assert trainer.generation <= paused_at + 1 and trainer.paused
    trainer.resume()
    start = time.monotonic()
    trainer.stop()
    assert time.monotonic() - start < 5 and not trainer.running and not trainer_threads()
    kinds = [e.kind for e in events.drain()]
    assert {"generation", "hyperparameters", "checkpoint", "state"} <= set(kinds)
    applied = [r for r in trainer.history if r.hyperparameters["sigma"] == 0.2]
    assert applied and applied[0].generation >= 1
    _, state = load_checkpoint(str(tmp_path))
    assert state["strategy"]["generation"] == trainer.generation


def test_stop_during_a_long_generation_returns_within_seconds(tmp_path):
    # 20,000 CartPole episodes of at least 8 steps each cannot finish in the half second the test waits once
    # evaluation has begun, on any machine this suite runs on.
    config = cartpole_config(
        max_episode_frames=500,
        hyperparameters=dict(population_size=20000, truncation=4, sigma=0.1, elite_candidates=2, elite_episodes=2),
    )
    trainer = Trainer.from_config(config, run_dir=str(tmp_path))
    evaluating, evaluate = threading.Event(), trainer.evaluator.evaluate

    def evaluate_and_signal(*args, **kwargs):
        evaluating.set()
        return evaluate(*args, **kwargs)

    trainer.evaluator.evaluate = evaluate_and_signal
    trainer.start()
    assert evaluating.wait(60)
    time.sleep(0.5)
    start = time.monotonic()
    trainer.stop()
    assert time.monotonic() - start < 5 and trainer.generation == 0 and not trainer_threads()


def test_errors_in_the_background_are_published_and_raised(tmp_path):
    trainer = Trainer.from_config(cartpole_config(), run_dir=str(tmp_path))
    events = trainer.events.subscribe(kinds={"error"})

    def broken(*args, **kwargs):
        raise RuntimeError("emulator exploded")

    trainer.evaluator.evaluate = broken
    trainer.start(generations=1)
    assert events.get(timeout=30).data.error.startswith("RuntimeError")
    deadline = time.monotonic() + 10
    while trainer.running and time.monotonic() < deadline:
        time.sleep(0.05)
    with pytest.raises(TrainerError, match="emulator exploded"):
        trainer.raise_if_failed()
    assert not trainer_threads()
    trainer.raise_if_failed()  # raised once


def test_event_bus_never_blocks_and_filters():
    bus = EventBus()
    slow = bus.subscribe(maxsize=3)
    errors_only = bus.subscribe(kinds={"error"})
    seen = []
    listener = bus.listen(lambda event: seen.append(event.data.state), kinds={"state"})
    for generation in range(10):
        bus.publish("state", state=f"state {generation}")
    bus.publish("error", error="x")
    assert [getattr(e.data, "state", None) for e in slow.drain()] == ["state 8", "state 9", None] and slow.dropped == 8
    assert seen == [f"state {g}" for g in range(10)]  # listeners see every event, in order, at once
    listener.close()
    with pytest.raises(TypeError, match="error"):
        bus.publish("error", status="x")  # not a field of the error payload
    assert [e.kind for e in errors_only.drain()] == ["error"]
    assert errors_only.get(timeout=0.01) is None
    with pytest.raises(ValueError, match="unknown event kinds"):
        bus.subscribe(kinds={"frames"})


def test_gameplay_frames_are_published_on_atari(tmp_path):
    config = RunConfig(
        env="pong",
        model="small",
        algorithm="ga",
        subpopulations=1,
        slots=2,
        max_episode_frames=400,
        noise_size=2**22,
        hyperparameters=dict(population_size=2, truncation=1, sigma=0.01, elite_candidates=1, elite_episodes=1),
    )
    trainer = Trainer.from_config(config)
    frames = trainer.events.subscribe(kinds={"frame"})
    trainer.run(generations=1)
    event = frames.get(timeout=1)
    assert event is not None and event.data.frame.shape == (210, 160, 3) and event.data.score >= 0


@pytest.mark.parametrize(
    "damage,match",
    [
        (lambda d: (d / "state.json").write_text("{not json"), "corrupt"),
        (lambda d: (d / "state.json").write_text(json.dumps({"format": "other"})), "not a workbench checkpoint"),
        (lambda d: (d / "arrays.npz").write_bytes(b"garbage"), "corrupt"),
        (lambda d: (d / "arrays.npz").write_bytes(b"PK\x03\x04 a zip's magic, then garbage"), "corrupt"),
        (lambda d: (d / "arrays.npz").write_bytes((d / "arrays.npz").read_bytes()[:-40]), "corrupt"),  # cut short
        (
            lambda d: (d / "state.json").write_text(json.dumps(dict(json.loads((d / "state.json").read_text()), version=99))),
            "version 99",
        ),
    ],
)
def test_corrupt_or_foreign_checkpoints_are_refused(tmp_path, damage, match):
    trainer = Trainer.from_config(cartpole_config(), run_dir=str(tmp_path))
    trainer.run(generations=1)
    trainer.close()
    (checkpoint,) = [p for p in (tmp_path / "checkpoints").iterdir() if p.name.startswith("generation-")]
    damage(checkpoint)
    with pytest.raises(CheckpointError, match=match):
        Trainer.resume_from(str(tmp_path))


def test_a_directory_without_a_run_is_refused_and_one_with_a_run_is_not_overwritten(tmp_path):
    with pytest.raises(CheckpointError, match="not a run directory"):
        Trainer.resume_from(str(tmp_path))
    with Trainer.from_config(cartpole_config(), run_dir=str(tmp_path)) as first:
        first.run(generations=1)
    with pytest.raises(ValueError, match="holds a run already"):
        Trainer.from_config(cartpole_config(), run_dir=str(tmp_path))
    for empty in ("", " "):  # not the current folder
        with pytest.raises(ValueError, match="run_dir must be a file or folder path"):
            Trainer.from_config(cartpole_config(), run_dir=empty)
        with pytest.raises(ValueError, match="run_dir must be a file or folder path"):
            Trainer.resume_from(empty)
    with pytest.raises(TypeError, match="run_dir must be a path"):
        Trainer.from_config(cartpole_config(), run_dir=5)


def test_one_trainer_writes_a_run_at_a_time(tmp_path):
    run_dir = str(tmp_path / "run")
    first = Trainer.from_config(cartpole_config(), run_dir=run_dir)
    first.run(generations=1)
    for attempt in (lambda: Trainer.resume_from(run_dir), lambda: Trainer.from_config(cartpole_config(), run_dir=run_dir)):
        with pytest.raises(RunInUseError, match="in use by another Trainer of this process"):
            attempt()
    script = (  # another process: refused, naming this one
        f"import sys; sys.path.insert(0, {TESTS!r}); from workbench.training import Trainer, RunInUseError\n"
        f"try:\n    Trainer.resume_from({run_dir!r})\nexcept RunInUseError as error:\n    print(error)\n"
    )
    other = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert f"in use by process {os.getpid()}" in other.stdout, other.stdout + other.stderr
    first.close()
    with Trainer.resume_from(run_dir) as again:  # closed: the next trainer takes the run
        assert again.run(generations=1)[0].generation == 1


KILL_SCRIPT = """
import os, sys, time
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"
sys.path.insert(0, {tests!r})
import numpy as np
from support import cartpole_config, pong_config
from workbench.training import Trainer, checkpoint
GENERATIONS = {generations!r}
KILL_CONFIGS = {{"cartpole": cartpole_config, "atari": pong_config}}
run_dir, kind = sys.argv[1], sys.argv[2]
savez = np.savez
def slow_savez(*args, **kwargs):  # the test kills some runs here: state.json written, arrays.npz not yet
    print("writing", flush=True)
    time.sleep(0.3)
    savez(*args, **kwargs)
checkpoint.np.savez = slow_savez
if os.path.exists(os.path.join(run_dir, "config.json")):
    trainer = Trainer.resume_from(run_dir)
else:
    trainer = Trainer.from_config(KILL_CONFIGS[kind](), run_dir=run_dir)
print("ready", flush=True)
if trainer.generation < GENERATIONS[kind]:
    trainer.run(generations=GENERATIONS[kind] - trainer.generation)
"""


KILL_CONFIGS = {"cartpole": cartpole_config, "atari": pong_config}
GENERATIONS = {"cartpole": 8, "atari": 2}  # enough that a run cannot finish between the kills


def run_until_killed(script, run_dir, kind, moment, rng):
    """Starts the training script and kills it with SIGKILL at `moment`: "ready" (soon after the trainer exists:
    usually before the first checkpoint), "writing" (in the middle of a checkpoint write) or "late" (at a random
    later time). Returns whether the kill happened."""
    process = subprocess.Popen([sys.executable, str(script), run_dir, kind], stdout=subprocess.PIPE, text=True)
    wanted = {"ready": "ready", "writing": "writing", "late": "ready"}[moment]
    for line in process.stdout:
        if line.strip() == wanted:
            break
    delay = {"ready": rng.uniform(0, 0.05), "writing": 0.1, "late": rng.uniform(0.1, 1.0)}[moment]
    time.sleep(delay)
    killed = process.poll() is None
    if killed:
        os.kill(process.pid, signal.SIGKILL)
    process.wait()
    process.stdout.close()
    return killed


@pytest.mark.slow
@pytest.mark.parametrize(
    "kind,moments",
    [
        ("cartpole", ["ready", "writing", "late"]),
        pytest.param("atari", ["ready", "writing"], marks=pytest.mark.long),  # the same moments, an emulator's run
    ],
)
def test_kill_9_at_any_moment_loses_at_most_the_generation_in_progress(tmp_path, kind, moments):
    """SIGKILL before the first checkpoint exists, while a checkpoint is being written, and at a random later
    moment: every restart resumes (a run without a checkpoint starts again from generation 0 with its
    config), nothing checkpointed is lost, and the finished run equals one that was never interrupted."""
    script = tmp_path / "train.py"
    script.write_text(KILL_SCRIPT.format(tests=TESTS, generations=GENERATIONS))
    run_dir = str(tmp_path / "run")
    rng = np.random.default_rng(0)
    states = set()
    for moment in moments:
        before = load_checkpoint(run_dir)[0] if list_checkpoints(run_dir) else 0
        assert run_until_killed(script, run_dir, kind, moment, rng), f"the run ended before the {moment!r} kill"
        has_config = os.path.exists(os.path.join(run_dir, "config.json"))
        checkpoints = list_checkpoints(run_dir)
        states.add("config, no checkpoint" if has_config and not checkpoints else "other")
        after = load_checkpoint(run_dir)[0] if checkpoints else 0
        assert after >= before  # nothing already checkpointed is lost
    assert "config, no checkpoint" in states  # a kill landed before the first checkpoint, and was resumed
    process = subprocess.run([sys.executable, str(script), run_dir, kind], capture_output=True, text=True, timeout=600)
    assert process.returncode == 0, process.stderr[-2000:]
    resumed = Trainer.resume_from(run_dir)
    reference = Trainer.from_config(KILL_CONFIGS[kind](), run_dir=str(tmp_path / "reference"))
    reference.run(generations=GENERATIONS[kind])
    assert fitness(resumed.history) == fitness(reference.history)
    lines = [json.loads(line) for line in open(os.path.join(run_dir, "history.jsonl"))]
    assert [line["generation"] for line in lines] == list(range(GENERATIONS[kind]))
    resumed.close()
    reference.close()


def test_a_checkpoint_keeps_arrays_and_numpy_scalars_wherever_they_sit(tmp_path):
    """Arrays nested in dicts, lists and tuples go to arrays.npz by reference, numpy scalars become Python numbers, and
    anything else that JSON cannot hold is refused naming its type."""
    state = {
        "weights": np.arange(6, dtype=np.float32).reshape(2, 3),
        "nested": [{"a": np.array([1, 2], np.int64)}, (np.float32(0.5), np.int64(7), np.bool_(True))],
        "plain": {"1": [1.5, None, "x"], "f64": np.float64(0.1)},
    }
    path = save_checkpoint(str(tmp_path), 4, state)
    with open(os.path.join(path, "state.json")) as f:
        document = json.load(f)
    assert document["state"]["nested"][1] == [0.5, 7, True] and document["state"]["plain"] == {"1": [1.5, None, "x"], "f64": 0.1}
    generation, loaded = load_checkpoint(path)
    assert generation == 4 and loaded["weights"].dtype == np.float32
    np.testing.assert_array_equal(loaded["weights"], state["weights"])
    np.testing.assert_array_equal(loaded["nested"][0]["a"], [1, 2])
    with pytest.raises(TypeError, match="not set"):
        save_checkpoint(str(tmp_path), 5, {"bad": {1, 2}})
    assert [os.path.basename(p) for p in list_checkpoints(str(tmp_path))] == ["generation-000004"]  # nothing half-written


def test_a_run_stopped_before_its_first_checkpoint_resumes_from_generation_0(tmp_path, capsys):
    """config.json and no checkpoint (killed during generation 0): resume_from starts the config again, dropping what
    the killed process had logged, and equals a fresh run; `python -m workbench resume` says so."""
    from workbench.cli import main

    run_dir = str(tmp_path / "run")
    Trainer.from_config(cartpole_config(), run_dir=run_dir).close()
    assert os.listdir(run_dir) and not list_checkpoints(run_dir)
    with open(os.path.join(run_dir, "history.jsonl"), "w") as f:
        f.write('{"generation": 0}\n')  # logged, then killed before its checkpoint
    trainer = Trainer.resume_from(run_dir)
    assert trainer.generation == 0 and trainer.history == []
    assert open(os.path.join(run_dir, "history.jsonl")).read() == ""
    trainer.run(generations=1)
    trainer.close()
    reference = Trainer.from_config(cartpole_config(), run_dir=str(tmp_path / "reference"))
    assert fitness(reference.run(generations=1)) == fitness(trainer.history)
    reference.close()
    fresh = str(tmp_path / "fresh")
    Trainer.from_config(cartpole_config(), run_dir=fresh).close()
    assert main(["resume", fresh, "--generations", "1"]) == 0
    assert "no checkpoint yet" in capsys.readouterr().out and len(list_checkpoints(fresh)) == 1


def test_run_configs_refuse_unknown_fields_and_values():
    with pytest.raises(ValueError, match="unknown run config fields"):
        RunConfig.from_json({"env": "pong", "populaton": 3})
    with pytest.raises(ValueError, match="algorithm must be one of"):
        RunConfig(algorithm="cma-ess").algorithm_config()
    with pytest.raises(ValueError, match="unknown ga hyperparameters"):
        RunConfig(hyperparameters={"learning_rate": 0.1}).algorithm_config()
    with pytest.raises(ValueError, match="truncation"):
        RunConfig(hyperparameters={"truncation": -1}).algorithm_config()
    with pytest.raises(ValueError, match="checkpoint_every"):
        Trainer.from_config(cartpole_config(), checkpoint_every=-1)
    for field, value, said in (  # each field's type, when the config is made (from JSON too)
        ("seed", "a", "seed must be an integer, got str"),
        ("seed", True, "seed must be an integer, got bool"),
        ("env", 5, "env must be a string"),
        ("hyperparameters", [1], "hyperparameters must be a dict"),
        ("ray", 1, "ray must be a bool"),
        ("behaviour", 3, "behaviour must be a string or None"),
        ("action_noise", "0.1", "action_noise must be a number"),
    ):
        with pytest.raises(TypeError, match=said):
            RunConfig.from_json({field: value})
    config = RunConfig(seed=np.int64(3), action_noise=0, ray_actors=None, observation_normalization=dict(clip=3.0))
    assert config.seed == 3  # numpy integers are integers, an int is a number, Any takes anything


def test_atari_run_directories_record_the_dense_layers_flatten_order(tmp_path):
    """New runs write the Atari model's flatten order into config.json; a run directory written before the option
    existed is read with the order its genomes were trained in ("channels_last")."""
    data = RunConfig(env="pong", model="large").to_json()
    assert data["model_options"] == {"flatten": "channels_first"}
    assert RunConfig(env="CartPole-v1", model="mlp").to_json()["model_options"] == {}
    for name, options, expected in (
        ("new", {"flatten": "channels_first"}, "channels_first"),
        ("old", {}, "channels_last"),
        ("old_mlp", None, None),
    ):
        os.makedirs(tmp_path / name)
        saved = dict(data, model_options=options) if options is not None else cartpole_config().to_json()
        with open(tmp_path / name / "config.json", "w") as f:
            json.dump(saved, f)
        config = RunConfig.from_run_dir(str(tmp_path / name))
        assert config.model_options.get("flatten") == expected
        if expected is not None:
            spec = config.spec()
            assert spec.build_model(spec.make_batch(2), 2).layers[-2].flatten == expected


def test_the_episode_cap_changes_live_and_survives_a_resume(tmp_path):
    trainer = Trainer.from_config(cartpole_config(), run_dir=str(tmp_path))
    trainer.run(generations=1)
    with pytest.raises(ValueError, match="max_episode_frames"):
        trainer.set(max_episode_frames=201)  # above the run's cap of 200
    with pytest.raises(ValueError, match="max_episode_frames"):
        trainer.set(max_episode_frames=0)
    trainer.set(max_episode_frames=20, sigma=0.05)  # both from generation 2 (generation 1 is under way)
    before, after = trainer.run(generations=2)
    assert before.hyperparameters["max_episode_frames"] == 200 and before.hyperparameters["sigma"] == 0.1
    assert after.hyperparameters["max_episode_frames"] == 20 and after.hyperparameters["sigma"] == 0.05
    assert after.max <= 20  # CartPole scores 1 per step
    assert trainer.settings.trail == [{"generation": 2, "max_episode_frames": 20}]
    trainer.close()
    resumed = Trainer.resume_from(str(tmp_path))
    assert resumed.evaluator.max_episode_frames == 20 and resumed.settings.trail == trainer.settings.trail
    assert resumed.run(generations=1)[0].max <= 20
    resumed.close()


def test_a_strategy_caps_one_round_and_the_cap_in_force_returns_after_it(tmp_path):
    hyperparameters = dict(
        population_size=16, truncation=4, sigma=0.1, elite_candidates=2, elite_episodes=2, initial_population=40,
        initial_episode_frames=12,
    )  # fmt: skip
    trainer = Trainer.from_config(cartpole_config(hyperparameters=hyperparameters), run_dir=str(tmp_path))
    first, second = trainer.run(generations=2)
    population, candidates = first.rounds
    assert population["episodes"] == 40 and population["frames"] <= 40 * 12 and first.max <= 12  # 1 per step
    assert candidates["episodes"] == 2 * 2 and first.elite > 12  # the elite candidates at the run's cap of 200
    assert second.rounds[0]["episodes"] == 16 and second.max > 12  # later generations: the run's size and cap
    assert trainer.evaluator.max_episode_frames == 200 and first.hyperparameters["max_episode_frames"] == 200
    trainer.close()


def test_frames_are_made_only_while_someone_receives_them(tmp_path):
    trainer = Trainer.from_config(cartpole_config(), run_dir=str(tmp_path))
    listeners = trainer.evaluator._frame_listeners
    assert listeners == []  # the run logger listens to generations only
    frames = trainer.events.subscribe(kinds={"frame"})
    assert listeners == [trainer._on_frame]
    everything = trainer.events.subscribe()
    frames.close()
    assert listeners == [trainer._on_frame]
    everything.close()
    assert listeners == []
    trainer.close()


def test_each_generation_records_its_rounds_busy_phases_and_tails(tmp_path):
    from workbench.evolution.records import ROUND_FIELDS, GenerationRecord

    trainer = Trainer.from_config(cartpole_config(), run_dir=str(tmp_path))
    record = trainer.step()
    assert [r["phase"] for r in record.rounds] == ["population", "elite candidate"]
    population, elite = record.rounds
    assert population["episodes"] == 16 and elite["episodes"] == 2 * 2 and set(population) == set(ROUND_FIELDS)
    assert sum(r["frames"] for r in record.rounds) == record.frames
    assert 0 < population["tail_seconds"] < population["seconds"] and population["busy_frames_per_second"] > 0
    assert elite["busy_frames_per_second"] == 0  # 4 episodes on 16 slots: all tail
    assert record.tail_seconds == pytest.approx(sum(r["tail_seconds"] for r in record.rounds))
    assert record.busy_frames_per_second > 0 and len(population["occupancy"]) > 0
    line = json.loads((tmp_path / "history.jsonl").read_text().splitlines()[0])
    assert line["rounds"][0]["phase"] == "population" and GenerationRecord.from_json(line) == record
    with pytest.raises(ValueError, match=r"rounds\[0\]"):
        GenerationRecord.from_json(dict(line, rounds=[{"phase": "population"}]))
    with pytest.raises(ValueError, match="tail_seconds"):
        GenerationRecord.from_json(dict(line, rounds=[dict(line["rounds"][0], tail_seconds="long")]))
    old = {k: v for k, v in line.items() if k not in ("rounds", "busy_frames_per_second", "tail_seconds")}
    assert GenerationRecord.from_json(old).rounds == ()  # records written before the breakdown
    trainer.close()


def test_stop_and_wait_name_a_bad_timeout():
    with Trainer.from_config(cartpole_config()) as trainer:
        for bad in (-1, float("nan"), "5"):
            with pytest.raises(ValueError, match="timeout must be a finite number >= 0"):
                trainer.stop(timeout=bad)
            with pytest.raises(ValueError, match="timeout must be a finite number >= 0"):
                trainer.wait(timeout=bad)
        assert trainer.wait(timeout=None) and trainer.wait(timeout=0)


def test_a_trainer_is_a_context_manager_that_stops_and_closes_on_the_way_out():
    """Leaving a `with` block, normally or by an error, stops a generation loop still running in the background
    and closes the trainer; closing again is harmless."""
    with Trainer.from_config(cartpole_config()) as trainer:
        trainer.start(generations=10_000)
        assert trainer.running
    assert not trainer.running and trainer.generation < 10_000
    trainer.close()
    for train in (lambda: trainer.step(), lambda: trainer.start(generations=1)):  # refused, not started and failing
        with pytest.raises(RuntimeError, match="this trainer is closed"):
            train()
    assert not trainer.running
    with pytest.raises(RuntimeError, match="inside"):
        with Trainer.from_config(cartpole_config()) as failing:
            failing.start(generations=10_000)
            raise RuntimeError("inside the block")
    assert not failing.running
