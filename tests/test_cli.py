"""The command line end to end on a tiny budget: train, resume, replay, errors."""

import json
import os
import subprocess
import sys

import pytest

from support import REPO

ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
TINY = [
    "--game",
    "pong",
    "--algo",
    "ga",
    "--model",
    "small",
    "--population",
    "3",
    "--truncation",
    "1",
    "--elite-candidates",
    "1",
    "--elite-episodes",
    "1",
    "--max-episode-frames",
    "200",
    "--noise-size",
    str(2**22),
    "--subpopulations",
    "1",
    "--slots",
    "3",
]


def workbench(*args, timeout=600):
    return subprocess.run(
        [sys.executable, "-m", "workbench", *args], capture_output=True, text=True, timeout=timeout, env=ENV, cwd=REPO
    )


def in_process(capsys, *args):
    """(exit code, stdout, stderr) of main(args) in this process: a subprocess would spend its seconds importing
    TensorFlow first (the first command of test_train_resume_replay runs `python -m workbench` itself)."""
    from workbench.cli import main

    try:
        code = main(list(args))
    except SystemExit as stop:  # argparse (--help, an option it refuses) or a message (printed, exit code 1)
        code = stop.code
        if isinstance(code, str):
            print(code, file=sys.stderr)
            code = 1
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.slow
def test_train_resume_replay(tmp_path, capsys):
    run = str(tmp_path / "run")
    result = workbench("train", *TINY, "--generations", "2", "--out", run)  # the real entry point, once
    assert result.returncode == 0, result.stderr[-3000:]
    assert "generation    1" in result.stdout
    for name in ("config.json", "history.jsonl", "fitness.png", "elite.gif", "checkpoints", "tensorboard"):
        assert os.path.exists(os.path.join(run, name)), name
    code, _, err = in_process(capsys, "resume", run, "--generations", "1", "--no-gif")
    assert code == 0, err[-3000:]
    assert [json.loads(line)["generation"] for line in open(os.path.join(run, "history.jsonl"))] == [0, 1, 2]
    gif = str(tmp_path / "g0.gif")
    code, _, err = in_process(capsys, "replay", run, "--generation", "0", "--out", gif)
    assert code == 0 and os.path.getsize(gif) > 1000, err[-3000:]
    again = str(tmp_path / "g0b.gif")
    in_process(capsys, "replay", run, "--generation", "0", "--out", again)
    assert open(gif, "rb").read() == open(again, "rb").read()  # deterministic
    code, out, err = in_process(capsys, "train", *TINY, "--generations", "1", "--out", run)
    assert code != 0 and "already holds a run" in out + err


@pytest.mark.slow
def test_a_run_in_training_is_not_resumed_or_trained_again_by_another_process(tmp_path, capsys):
    import time

    run = str(tmp_path / "run")
    live = subprocess.Popen(
        [sys.executable, "-m", "workbench", "train", *TINY, "--generations", "1000", "--out", run, "--no-gif"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV, cwd=REPO,
    )  # fmt: skip
    try:
        lock = os.path.join(run, "trainer.lock")
        deadline = time.monotonic() + 300
        while not (os.path.exists(lock) and open(lock).read()) and time.monotonic() < deadline:
            time.sleep(0.2)
        code, out, err = in_process(capsys, "resume", run, "--generations", "1", "--no-gif")
        assert code == 2 and f"in use by process {live.pid}" in err, out + err
        code, out, err = in_process(capsys, "train", *TINY, "--generations", "1", "--out", run)
        assert code != 0 and ("already holds a run" in out + err or "in use by process" in err), out + err
    finally:
        live.kill()
        live.wait()
    code, out, err = in_process(capsys, "resume", run, "--generations", "1", "--no-gif")  # killed: its lock went with it
    assert code == 0, err[-3000:]


def test_errors_name_the_argument(tmp_path, capsys):
    code, _, err = in_process(capsys, "train", *TINY, "--sigma", "-1", "--generations", "1", "--out", str(tmp_path / "x"))
    assert code == 2 and "sigma" in err
    code, _, err = in_process(
        capsys,
        "train",
        "--game",
        "pong",
        "--algo",
        "ga",
        "--learning-rate",
        "0.1",
        "--generations",
        "1",
        "--out",
        str(tmp_path / "y"),
    )
    assert code == 2 and "learning_rate" in err
    code, _, err = in_process(capsys, "train", "--game", "pongg", "--generations", "1", "--out", str(tmp_path / "z"))
    assert code == 2 and "pong" in err
    code, _, err = in_process(capsys, "replay", str(tmp_path), "--out", str(tmp_path / "a.gif"))
    assert code == 2 and "error" in err
    code, _, err = in_process(capsys, "replay", str(tmp_path), "--out", str(tmp_path / "a.png"))
    assert code == 2 and "--out must end in .gif or .mp4" in err  # before the run is read or played
    code, _, err = in_process(capsys, "train", *TINY, "--generations", "1", "--out", "")
    assert code == 2 and "--out must be a file or folder path, got ''" in err  # not the current folder
    for command in (["evaluate", ""], ["resume", "", "--generations", "1"]):
        code, _, err = in_process(capsys, *command)
        assert code == 2 and "run_dir must be a file or folder path, got ''" in err, (command, err)
    code, out, _ = in_process(capsys, "train", "--help")
    assert code == 0 and "--truncation" in out and "--minutes" in out
    for name in ("emulatoin", "../bench/emulation", "__init__", "common"):  # checked before any benchmark runs
        code, _, err = in_process(capsys, "bench", "emulation", name)
        assert code == 1 and f"unknown benchmark {name!r}" in err
        assert "the benchmarks: archive_bookkeeping, distribution_updates, emulation, " in err
        assert ("did you mean emulation?" in err) == ("emulat" in name)
    assert not os.listdir(tmp_path)  # no run directory was started


def test_a_bad_config_file_or_budget_is_named_and_leaves_no_run_directory(tmp_path, capsys):
    """--config files that are not a RunConfig's JSON (not JSON, not an object, unknown fields, fields of the wrong
    type) are refused naming the file, bad budgets with the option's name, before a run directory is written; an unknown game
    is refused before its family's defaults are printed."""
    out = str(tmp_path / "run")
    files = {
        "missing.json": None,
        "text.json": "not json",
        "list.json": "[]",
        "unknown.json": '{"foo": 1}',
        "hyperparameters.json": '{"hyperparameters": [1]}',
        "env.json": '{"env": 5}',
        "seed.json": '{"seed": "a"}',
    }
    for name, text in files.items():
        path = tmp_path / name
        if text is not None:
            path.write_text(text)
        for preset in ([], ["--preset", "pc"]):
            code, _, err = in_process(capsys, "train", "--config", str(path), *preset, "--generations", "1", "--out", out)
            assert code == 2 and f"config file {path}" in err, (name, err)
            assert "Traceback" not in err
    for budget, said in (
        (["--minutes", "-1"], "--minutes must be"),
        (["--minutes", "nan"], "--minutes must be"),
        (["--frames", "0"], "frames must be"),
        (["--generations", "0"], "generations must be"),
        ([], "give a budget"),
    ):
        code, _, err = in_process(capsys, "train", *TINY, *budget, "--out", out)
        assert code in (1, 2) and said in err, (budget, err)
    code, _, err = in_process(capsys, "train", "--game", "frostbit", "--generations", "1", "--out", out)
    assert code == 2 and "frostbite" in err and "defaults of its family" not in err
    assert not os.path.exists(out)
    # writable, but the run cannot start (no cluster at that address: refused at once, Ray would retry for
    # minutes); the folders the check made are gone again
    nested = tmp_path / "new" / "run"
    code, _, err = in_process(capsys, "train", *TINY, "--ray-address", "127.0.0.1:1", "--generations", "1", "--out", str(nested))
    assert code == 2 and "address '127.0.0.1:1': no Ray cluster answers there" in err, err
    assert not (tmp_path / "new").exists()
    a_file = tmp_path / "a_file"
    a_file.write_text("")
    for where in (a_file, a_file / "run"):  # a file, and a folder inside a file
        code, _, err = in_process(capsys, "train", *TINY, "--generations", "1", "--out", str(where))
        assert code == 2 and f"--out {where}: cannot be written" in err, err
    for command in (
        ["replay", str(tmp_path), "--out", str(a_file / "a.gif")],
        ["evaluate", str(tmp_path), "--json", str(a_file / "a.json")],
    ):
        code, _, err = in_process(capsys, *command)
        assert code == 2 and "cannot be written" in err, err  # before the run is read and played


def test_the_benchmarks_run_as_modules_of_the_installed_package(tmp_path):
    """`python -m workbench.bench.NAME` (what `python -m workbench bench` and the tutorials run) from outside the
    checkout: the benchmarks install with the package (setup.py maps bench/ to workbench.bench)."""
    result = subprocess.run(
        [sys.executable, "-m", "workbench.bench.emulation", "--game", "pongg"], cwd=tmp_path, capture_output=True, text=True
    )
    assert result.returncode == 2 and "pong" in result.stderr, result.stderr[-2000:]


@pytest.mark.slow
def test_a_mujoco_run_trains_evaluates_and_replays(tmp_path, capsys):
    run = str(tmp_path / "cheetah")
    code, _, err = in_process(
        capsys,
        "train",
        "--env",
        "HalfCheetah-v5",
        "--algo",
        "ars",
        "--preset",
        "tutorial",
        "--generations",
        "2",
        "--max-episode-frames",
        "40",
        "--noise-size",
        str(2**22),
        "--center-episodes",
        "1",
        "--out",
        run,
    )
    assert code == 0, err[-3000:]
    config = json.load(open(os.path.join(run, "config.json")))
    assert config["model"] == "linear" and config["observation_normalization"]["fraction"] == 1.0
    assert os.path.getsize(os.path.join(run, "elite.gif")) > 1000  # rendered MuJoCo frames
    scores = str(tmp_path / "test.json")
    code, _, err = in_process(capsys, "evaluate", run, "--episodes", "3", "--max-episode-frames", "40", "--json", scores)
    assert code == 0, err[-3000:]
    score = json.load(open(scores))
    assert score["episodes"] == 3 and len(score["final_positions"]) == 3 and score["algorithm"] == "ars"
    video = str(tmp_path / "cheetah.mp4")
    code, _, err = in_process(capsys, "replay", run, "--out", video)
    assert code == 0 and os.path.getsize(video) > 1000, err[-3000:]


def test_without_a_preset_the_environment_family_chooses_the_model_and_says_so(tmp_path, capsys):
    """A user who names a MuJoCo task and a continuous-control algorithm gets that family's model, observation
    normalisation and cap (not the Atari network), told on stderr; what the user chose stays."""
    from workbench.cli import build_parser, run_config_from
    from workbench.training import Trainer

    def config_of(*options):
        return run_config_from(build_parser().parse_args(["train", *options, "--out", str(tmp_path / "run")]))

    config = config_of("--env", "HalfCheetah-v5", "--algo", "ars")
    said = capsys.readouterr().err
    assert config.model == "linear" and config.max_episode_frames == 1000
    assert config.observation_normalization["fraction"] == 1.0
    assert "HalfCheetah-v5: the defaults of its family for ars: model 'linear'" in said and "--preset" in said
    config = config_of("--env", "Hopper-v5", "--algo", "es", "--max-episode-frames", "50")
    said = capsys.readouterr().err
    assert config.model == "mlp" and config.model_options == dict(hidden_sizes=[64, 64])
    assert config.max_episode_frames == 50 and "max_episode_frames" not in said
    config = config_of("--env", "Hopper-v5", "--algo", "ars", "--model", "mlp", "--no-observation-normalization")
    assert config.model == "mlp" and config.model_options == {} and config.observation_normalization is None
    assert config_of("--env", "CartPole-v1", "--algo", "ga").model == "mlp"
    capsys.readouterr()
    assert config_of("--env", "pong").model == "small"
    assert "pong: the defaults of its family for ga: model 'small'" in capsys.readouterr().err
    config = config_of(
        "--env",
        "HalfCheetah-v5",
        "--algo",
        "ars",
        "--directions",
        "2",
        "--top-directions",
        "1",
        "--max-episode-frames",
        "30",
        "--noise-size",
        str(2**22),
    )
    trainer = Trainer.from_config(config)
    try:
        trainer.run(generations=1)
        assert trainer.history[-1].frames == 4 * 30  # 2 directions, + and -, 30 steps each (HalfCheetah never ends)
        assert trainer.evaluator.spec.model == "linear"
    finally:
        trainer.close()


def test_help_does_not_import_tensorflow():
    """--help and option errors answer without TensorFlow (it is imported when work starts): under a second."""
    probe = (
        "import sys\nfrom workbench.cli import main\nfor argv in (['--help'], ['train', '--help'], "
        "['train', '--algo', 'gaa', '--out', 'x']):\n    try:\n        main(argv)\n    except SystemExit:\n"
        "        pass\nfrom workbench.training import RunConfig\nfrom workbench.evaluation import EvaluatorLayout\n"
        "RunConfig().layout()\nassert 'tensorflow' not in sys.modules, 'tensorflow imported'\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, env=ENV)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "hyperparameters of ga, random (GAConfig)" in result.stdout and "invalid choice: 'gaa'" in result.stderr


def test_every_run_setting_is_an_option_that_sets_its_field(tmp_path, capsys):
    """train's run-setting options are RunConfig's fields that declare one: each appears in --help with its help,
    and given on the command line it lands in the run's config (init_from is covered by the warm-start tests)."""
    import dataclasses

    from workbench.cli import build_parser, run_config_from, run_setting_options
    from workbench.training import RunConfig

    options = run_setting_options()
    fields = {field.name for field in dataclasses.fields(RunConfig)}
    assert set(options) == fields - {"hyperparameters", "env_options", "model_options"}
    _, help_text, _ = in_process(capsys, "train", "--help")
    for name, option in options.items():
        assert (option.flags or ("--" + name.replace("_", "-"),))[0] in help_text, name
    given = dict(
        env=["--game", "pong"],
        model=["--model", "large"],
        algorithm=["--algo", "es"],
        subpopulations=["--subpopulations", "3"],
        slots=["--slots", "5"],
        max_episode_frames=["--max-episode-frames", "1234"],
        perturbed_rank=["--perturbed-rank", "2"],
        behaviour=["--behaviour", "final_ram"],
        noise_size=["--noise-size", str(2**20)],
        noise_seed=["--noise-seed", "7"],
        seed=["--seed", "11"],
        ray=["--ray"],
        ray_address=["--ray-address", "auto"],
        ray_actors=["--ray-actors", "3"],
        virtual_batch_norm=["--virtual-batch-norm"],
        action_noise=["--action-noise", "0.25"],
    )
    assert set(given) == set(options) - {"observation_normalization", "init_from"}
    argv = ["train", *[word for words in given.values() for word in words], "--out", str(tmp_path / "run")]
    config = run_config_from(build_parser().parse_args(argv))
    expected = dict(
        env="pong", model="large", algorithm="es", subpopulations=3, slots=5, max_episode_frames=1234, perturbed_rank=2,
        behaviour="final_ram", noise_size=2**20, noise_seed=7, seed=11, ray=True, ray_address="auto", ray_actors=3,
        virtual_batch_norm=True, action_noise=0.25,
    )  # fmt: skip
    assert {name: getattr(config, name) for name in expected} == expected
    config = run_config_from(build_parser().parse_args(["train", "--no-virtual-batch-norm", "--out", "x"]))
    assert config.virtual_batch_norm is False


def test_map_elites_options_are_checked_by_name(tmp_path, capsys):
    base = ["train", "--env", "Walker2d-v5", "--algo", "map-elites", "--generations", "1", "--out", str(tmp_path / "x")]
    code, _, err = in_process(capsys, *base, "--descriptor-bounds", "[[0, 1]")
    assert code == 2 and "--descriptor-bounds: not JSON" in err
    for option, value, named in (
        ("--descriptor-bounds", "[[1, 0], [0, 1]]", "descriptor_bounds[0] must have low < high"),
        ("--variation", "crossover", "variation must be one of"),
        ("--archive", "hexagon", "archive must be one of"),
    ):
        code, _, err = in_process(capsys, *base, option, value)
        assert code == 2 and named in err, (option, err)
    code, _, err = in_process(capsys, "train", "--env", "Swimmer-v5", "--algo", "map-elites", "--out", str(tmp_path / "y"))
    assert code == 2 and "descriptor_bounds: the behaviour 'feet_contact' declares no bounds on Swimmer-v5" in err
    assert not os.listdir(tmp_path)  # refused before any run directory was made


def test_cma_me_options_are_checked_by_name(tmp_path, capsys):
    base = ["train", "--env", "Walker2d-v5", "--algo", "cma-me", "--generations", "1", "--out", str(tmp_path / "x")]
    for option, value, named in (
        ("--ranker", "best", "ranker must be one of ('2imp', 'imp')"),
        ("--selection-rule", "all", "selection_rule must be one of"),
        ("--es", "lm-ma-es", "es must be one of"),
        ("--emitters", "0", "emitters must be an integer"),
        ("--threshold-min", "0", "threshold_min applies to CMA-MAE's soft thresholds"),
    ):
        code, _, err = in_process(capsys, *base, option, value)
        assert code == 2 and named in err, (option, err)
    code, _, err = in_process(capsys, *base, "--algo", "cma-mae", "--archive-learning-rate", "0", "--out", str(tmp_path / "y"))
    assert code == 2 and "archive_learning_rate" in err, err
    assert not os.listdir(tmp_path)  # refused before any run directory was made


def test_a_boolean_hyperparameter_is_a_flag_with_its_negation():
    from workbench.cli import build_parser, run_config_from

    def parsed(*options):
        argv = ["train", "--env", "HalfCheetah-v5", "--algo", "sep-cma-es", *options, "--out", "x"]
        return run_config_from(build_parser().parse_args(argv)).hyperparameters.get("noise_handling")

    assert parsed("--noise-handling") is True
    assert parsed("--no-noise-handling") is False
    assert parsed() is None  # the preset's or the default
