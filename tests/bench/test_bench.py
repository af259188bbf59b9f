"""The benchmarks run end to end (tiny sizes) and end with the documented JSON line.

A benchmark runs in this process (load_bench, json_line_of: no TensorFlow start-up of its own) unless it sets
TensorFlow's thread pools (population_inference, emulation, end_to_end, mujoco_steps), measures its own process
(soak) or starts a Ray cluster (ray_scaling: started from the test process at the run's busiest moment, its raylet
missed Ray's 30-second start-up wait once): those run in a subprocess."""

import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from support import REPO, TESTS, bench_script, load_bench, module_available, requires_component

BENCH = bench_script("population_inference.py")


def json_line_of(bench, arguments, capsys):
    """Runs bench.main(arguments) in this process (no TensorFlow start-up of its own) and returns the JSON line it
    ended with."""
    bench.main(arguments)  # a failure raises (SystemExit with a message, or the error itself)
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


def assert_refused(bench, arguments, message, capsys):
    """main(arguments) stops with argparse's exit code 2 and an error that contains `message`."""
    with pytest.raises(SystemExit) as stop:
        bench.main(arguments)
    stderr = capsys.readouterr().err
    assert stop.value.code == 2 and message in stderr, (arguments, stderr[-500:])


@pytest.mark.long  # make test runs this smoke run in the batched-inference tutorial (02), which reads its line
def test_smoke_run_prints_ratios_as_json():
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    result = subprocess.run([sys.executable, BENCH, "--smoke"], capture_output=True, text=True, timeout=600, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["benchmark"] == "population_inference" and summary["mode"] == "smoke"
    assert summary["read_gbps"] > 0 and summary["peak_gflops"] > 0
    for model in ("LargeModel", "SmallModel"):
        entry = summary["results"][model]["2"]
        for key in ("homogeneous", "puretf", "op_fp32", "op_bf16", "op_lowrank", "roofline"):
            assert entry["obs_per_s"][key] > 0
        for ratio in (
            "op_vs_puretf",
            "op_vs_roofline",
            "bf16_vs_fp32",
            "lowrank_vs_homogeneous",
            "dense_layer_bf16_vs_fp32",
            "conv_op_vs_im2col",
        ):
            assert entry[ratio] > 0
            assert entry["spread"][ratio][0] <= entry[ratio] <= entry["spread"][ratio][1]
        assert len(entry["runs"]) == summary["runs"] == 1
        assert 0.0 <= entry["dense_input_zero_fraction"] <= 1.0
    assert summary["observations"] == "frames" and summary["targets_large_p128"]["dense_layer_bf16_vs_fp32"] == 1.7


def test_bad_arguments_are_refused(capsys):
    assert_refused(load_bench("population_inference"), ["--rank", "0"], "--rank must be >= 1", capsys)


EMULATION_BENCH = bench_script("emulation.py")


@pytest.mark.long  # make test runs this smoke run in the emulation tutorial (03), which reads its line
def test_emulation_smoke_run_prints_ratios_as_json():
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    result = subprocess.run(
        [sys.executable, EMULATION_BENCH, "--smoke", "--batch", "4"], capture_output=True, text=True, timeout=600, env=env
    )
    assert result.returncode == 0, result.stderr[-3000:]
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["benchmark"] == "emulation" and summary["mode"] == "smoke" and summary["game"] == "pong"
    for key in (
        "raw_ale_fps",
        "op_fps",
        "op_python_fps",
        "vector_env_fps",
        "gymnasium_fps",
        "op_vs_vector_env",
        "op_vs_raw_limit",
    ):
        assert summary[key] > 0, key


def test_emulation_bench_refuses_an_unknown_game(capsys):
    assert_refused(load_bench("emulation"), ["--game", "frostbyte"], "frostbite", capsys)


END_TO_END_BENCH = bench_script("end_to_end.py")


@pytest.mark.parametrize(
    "models",
    [pytest.param(("small",), marks=pytest.mark.slow), pytest.param(("small", "large"), marks=pytest.mark.long)],
    ids=["small", "both"],
)
def test_end_to_end_smoke_run_prints_ratios_as_json(models):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    result = subprocess.run(
        [sys.executable, END_TO_END_BENCH, "--smoke", "--slots", "2", "--models", *models],
        capture_output=True,
        text=True,
        timeout=900,
        env=env,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["benchmark"] == "end_to_end" and summary["mode"] == "smoke" and summary["emulation_limit_fps"] > 0
    assert set(summary["results"]) == set(models)
    for model in models:
        entry = summary["results"][model]
        for key in (
            "naive_fps",
            "unpipelined_fps",
            "pipelined_fps",
            "roofline_fps",
            "vs_naive",
            "pipelined_vs_unpipelined",
            "vs_roofline",
        ):
            assert entry[key] > 0, (model, key)
        assert abs(sum(entry["pipelined_time_split"].values()) - 1) < 0.01
        assert entry["idle_fraction"] == entry["pipelined_time_split"]["idle"]
        assert len(entry["runs"]) == 1 and entry["spread"]["vs_roofline"] == [entry["vs_roofline"]] * 2
        assert entry["perturbed"]["perturbed_fps"] > 0 and entry["perturbed"]["perturbed_vs_materialised"] > 0
    assert summary["targets"]["idle_fraction"] == 0.05 and "pipelined_vs_unpipelined" not in summary["targets"]


@pytest.mark.slow
def test_end_to_end_bench_refuses_bad_arguments(capsys):
    bench = load_bench("end_to_end")
    assert_refused(bench, ["--game", "frostbyte"], "frostbite", capsys)
    assert_refused(bench, ["--slots", "0"], "--slots", capsys)


@pytest.mark.ray
@pytest.mark.long
def test_ray_scaling_smoke_run_prints_ratios_as_json():
    requires_component(module_available("ray"), "ray (pip install -e '.[ray]')")
    bench = bench_script("ray_scaling.py")
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    result = subprocess.run([sys.executable, bench, "--smoke"], capture_output=True, text=True, timeout=600, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["benchmark"] == "ray_scaling" and summary["mode"] == "smoke"
    for workload in ("throughput", "straggler"):
        assert summary[workload]["ray_fps"] > 0 and summary[workload]["local_fps"] > 0
    assert summary["ray_vs_local"] == summary["throughput"]["ray_vs_local"] and 0 < summary["bytes_ratio"] < 0.01
    assert summary["throughput"]["population"] >= 3 * summary["straggler"]["population"]
    table = summary["master"]["table"]
    assert {(row["population"], row["actors"]) for row in table} == {(100, 4), (100, 16)}
    assert all(row["genomes_per_second"] > 0 and row["bytes_per_generation"] > 0 for row in table)
    assert summary["master"]["ray_task_cpu_ms"] > 0 and len(summary["expected_scaling"]) == len(table)


@pytest.mark.slow
def test_learning_smoke_run_scores_the_elite_and_compares_with_the_paper(tmp_path, capsys):
    bench = load_bench("learning")
    summary = json_line_of(bench, ["--smoke", "--out", str(tmp_path)], capsys)
    assert summary["benchmark"] == "learning" and summary["mode"] == "smoke" and summary["game"] == "frostbite"
    assert summary["paper"]["GA 1B"] == 4536 and summary["paper"]["DQN"] == 797  # read from docs/protocol.md
    assert summary["test_ale_cap"]["episodes"] == 2 and set(summary["ratios"]) == set(summary["paper"])
    for name in ("curve.png", "curve.csv", "test_training_cap.json", "test_ale_cap.json"):
        assert (tmp_path / name).stat().st_size > 0, name
    again = json_line_of(bench, ["--smoke", "--rescore", "--out", str(tmp_path)], capsys)  # the same run, no training
    assert again["frames"] == summary["frames"] and again["test_ale_cap"] == summary["test_ale_cap"]


@pytest.mark.slow
def test_learning_comparison_trains_every_arm_at_equal_budgets(tmp_path, capsys):
    arguments = ["--smoke", "--game", "seaquest", "--compare", "es+vbn,random,ga+lowrank", "--out", str(tmp_path)]
    summary = json_line_of(load_bench("learning"), arguments, capsys)
    assert summary["compare"] == ["es+vbn", "random", "ga+lowrank"] and summary["game"] == "seaquest"
    assert summary["paper"]["ES"] == 1390 and summary["paper"]["RS 1B"] == 503
    assert all(summary["results"][arm]["test"]["episodes"] == 2 for arm in summary["compare"])
    configs = {arm: json.load(open(tmp_path / arm / "config.json")) for arm in summary["compare"]}
    assert configs["es+vbn"]["virtual_batch_norm"] and not configs["random"]["virtual_batch_norm"]
    assert configs["ga+lowrank"]["perturbed_rank"] == 1 and configs["ga+lowrank"]["hyperparameters"]["mutation_rank"] == 1
    assert (tmp_path / "curve.png").stat().st_size > 0


@pytest.mark.slow
def test_learning_bench_refuses_bad_arguments(tmp_path, capsys):
    bench = load_bench("learning")
    cases = (
        (["--game", "frostbyte"], "frostbite"),
        (["--preset", "laptop"], "pc"),
        (["--study", "sigma"], "--study"),
        (["--study", ""], "--study"),  # an empty option is refused, not taken for its default
        (["--compare", ""], "--compare"),
        (["--preset", ""], "--preset"),
        (["--set", ""], "--set"),
        (["--out", ""], "--out: must be a path"),
        (["--minutes", "0"], "--minutes"),
        (["--compare", "es+bn"], "--compare"),
        (["--compare", "es,ppo"], "--compare"),
        (["--compare", "es+lowrank"], "--compare"),
        (["--set", "sigma"], "--set"),
        (["--algo", "ga", "--set", "step_size=0.1"], "--set"),
        (["--seed", "-1"], "--seed: must be >= 0"),
        (["--set", "sigma=-1"], "sigma must be a finite number > 0"),
        (["--study", "sigma=-1,0.1"], "sigma must be a finite number > 0"),
        (["--env", "Hopper-v5", "--algo", "es", "--init-from", str(tmp_path / "nowhere")], "not a run directory"),
    )
    out = tmp_path / "out"
    for arguments, message in cases:
        assert_refused(bench, ["--smoke", "--out", str(out), *arguments], message, capsys)
    assert not os.listdir(tmp_path)  # refused before anything was written


@pytest.mark.slow
def test_learning_on_mujoco_scores_the_policy_against_ars_threshold(tmp_path, capsys):
    bench = load_bench("learning")
    summary = json_line_of(bench, ["--smoke", "--game", "Hopper-v5", "--out", str(tmp_path)], capsys)
    assert summary["game"] == "Hopper-v5" and summary["algorithm"] == "ars" and summary["model"] == "linear"
    assert summary["ars_threshold"] == 3120 and summary["target_minutes"] == 30  # read from docs/continuous_control.md
    assert summary["test"]["episodes"] == 2 and summary["steps_per_second"] > 0 and not summary["target_met"]
    config = json.load(open(tmp_path / "run" / "config.json"))
    assert config["hyperparameters"]["survival_bonus"] == 1.0 and config["observation_normalization"]["fraction"] == 1
    arguments = ["--smoke", "--game", "HumanoidTrap-v5", "--compare", "es,ns-es", "--out", str(tmp_path / "trap")]
    summary = json_line_of(bench, arguments, capsys)
    assert {arm["model"] for arm in summary["results"].values()} == {"mlp"} and summary["model"] == "mlp"
    assert all("final_x" in arm and "final_y" in arm for arm in summary["results"].values())
    assert all(sum(arm["regions"].values()) == pytest.approx(1) for arm in summary["results"].values())
    assert os.path.getsize(summary["positions"]) > 0  # the figure of where the episodes ended
    arguments = ["--smoke", "--game", "Hopper-v5", "--compare", "es,ns-es", "--init-from", str(tmp_path / "run")]
    arguments += ["--set", "sigma=0.0075,learning_rate=0.002", "--out", str(tmp_path / "warm")]
    summary = json_line_of(bench, arguments, capsys)
    assert summary["init_from"] == str(tmp_path / "run") and summary["model"] == "linear"  # the source's model
    start = summary["results"]["start"]  # the source policy scored on this task, before any arm trains
    assert start["frames"] == 0 and start["test"]["episodes"] == 2
    for arm in ("es", "ns-es"):
        config = json.load(open(tmp_path / "warm" / arm / "config.json"))
        assert config["init_from"] == str(tmp_path / "run") and config["hyperparameters"]["sigma"] == 0.0075
    arguments = ["--smoke", "--game", "Hopper-v5", "--algo", "sep-cma-es", "--frames", "1500", "--out", str(tmp_path / "cma")]
    first = json_line_of(bench, arguments, capsys)  # a budget in frames alone: a stopped or shorter run resumes
    bench.main(arguments[:-3] + ["3000", "--out", str(tmp_path / "cma")])
    out, err = capsys.readouterr()
    second = json.loads(out.strip().splitlines()[-1])
    assert "resuming" in err and second["generations"] > first["generations"] and second["frames"] >= 3000


@pytest.mark.long
def test_mujoco_smoke_run_measures_every_contender(capsys):
    bench = bench_script("mujoco_steps.py")
    result = subprocess.run(
        [sys.executable, bench, "--smoke", "--task", "InvertedPendulum-v5", "--simulations", "4"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["benchmark"] == "mujoco" and summary["mujoco"] == "4.0.1" and summary["envpool"]
    entry = summary["tasks"]["InvertedPendulum-v5"]
    for key in (
        "raw_fps",
        "op_fps",
        "op_python_fps",
        "envpool_sync_fps",
        "envpool_async_fps",
        "gymnasium_sync_fps",
        "gymnasium_async_fps",
    ):
        assert entry[key] > 0, key
    assert entry["op_vs_raw"] > 0 and entry["op_vs_envpool"] > 0 and entry["op_vs_gymnasium_vector"] > 0
    assert_refused(load_bench("mujoco_steps"), ["--smoke", "--task", "halfchetah"], "HalfCheetah-v5", capsys)


def test_fused_steps_smoke_run_measures_the_evaluator_both_ways_and_the_ops_alone(capsys):
    summary = json_line_of(load_bench("fused_steps"), ["--smoke", "--episodes", "5"], capsys)
    assert summary["benchmark"] == "fused_steps" and summary["episodes"] == 5 and summary["task"] == "HalfCheetah-v5"
    for arm in ("per_step", "fused", "limit"):
        assert summary[f"{arm}_steps_per_second"] > 0, arm
    ratio = summary["fused_steps_per_second"] / summary["per_step_steps_per_second"]
    assert summary["fused_vs_per_step"] == pytest.approx(ratio, rel=1e-2)
    assert_refused(load_bench("fused_steps"), ["--smoke", "--task", "halfchetah"], "HalfCheetah-v5", capsys)
    assert_refused(load_bench("fused_steps"), ["--smoke", "--episodes", "0"], "--episodes", capsys)


def test_distribution_updates_smoke_run_times_each_update_against_the_floor_and_a_generation(capsys):
    summary = json_line_of(load_bench("distribution_updates"), ["--smoke", "--generation-seconds", "100"], capsys)
    assert summary["benchmark"] == "distribution_updates" and summary["parameters"] == 20_000
    assert set(summary["strategies"]) == {"sep-cma-es", "snes", "cem", "cr-fm-nes"} and summary["limit_seconds"] > 0
    for entry in summary["strategies"].values():
        assert entry["update_seconds"] > 0 and entry["of_generation"] == pytest.approx(entry["update_seconds"] / 100, abs=1e-4)
    assert summary["target_met"] == (summary["worst_of_generation"] <= 0.05)
    assert_refused(load_bench("distribution_updates"), ["--smoke", "--generation-seconds", "0"], "--generation-seconds", capsys)
    assert_refused(load_bench("distribution_updates"), ["--smoke", "--game", "frostbyte"], "--game", capsys)


def test_archive_bookkeeping_smoke_run_times_ours_pyribs_and_the_floor_against_a_generation(capsys):
    summary = json_line_of(load_bench("archive_bookkeeping"), ["--smoke"], capsys)
    assert summary["benchmark"] == "archive_bookkeeping" and summary["generation_seconds"] > 0
    assert set(summary["archives"]) == {"grid 2-D", "cvt 4-D"} and summary["generation_episodes"] == 8
    for entry in summary["archives"].values():
        assert entry["occupied"] > 0.9 * entry["cells"] and entry["ours_seconds"] > 0 and entry["limit_seconds"] > 0
        rounding = 5e-4 / summary["generation_seconds"] + 5e-7 / entry["ours_seconds"]  # rounded to 3 and 6 decimals
        assert entry["of_generation"] == pytest.approx(
            entry["ours_seconds"] / summary["generation_seconds"], rel=0.01 + rounding, abs=2e-5
        )
        assert entry["reference_seconds"] > 0  # pyribs is a test dependency
    assert summary["target_met"] == (summary["worst_of_generation"] <= 0.05)
    assert_refused(load_bench("archive_bookkeeping"), ["--smoke", "--rounds", "0"], "--rounds", capsys)


@pytest.mark.slow
def test_training_runs_smoke_run_compares_a_training_run_with_the_evaluator_loop(capsys):
    summary = json_line_of(load_bench("training_runs"), ["--smoke", "--games", "pong"], capsys)
    assert summary["benchmark"] == "training_runs" and summary["mode"] == "smoke"
    pong = summary["results"]["pong"]
    for key in ("training_fps", "training_record_fps", "evaluator_fps", "busy_fps", "training_vs_evaluator"):
        assert pong[key] > 0, key
    assert set(pong["rounds"]) == {"population", "elite candidate"}
    assert pong["rounds"]["elite candidate"]["tail_share"] > 0.9  # 4 episodes on 8 slots: no busy phase
    assert pong["in_order_fps"] > 0 and pong["longest_first_vs_in_order"] > 0
    assert set(pong["in_order_rounds"]) == set(pong["rounds"])


def test_training_runs_bench_refuses_bad_arguments(capsys):
    bench = load_bench("training_runs")
    for arguments, message in (
        (["--generations", "0"], "--generations must be >= 1"),
        (["--games", "frostbyte"], "frostbite"),
        (["--warmup", "-1"], "--warmup"),
        (["--seed", "-3"], "--seed: must be >= 0"),
        (["--seed", "x"], "--seed: invalid integer >= 0 value"),
        (["--from-run", "/nonexistent"], "--from-run"),
        (["--from-run", TESTS, "--games", "pong", "frostbite"], "--from-run"),
    ):
        assert_refused(bench, arguments, message, capsys)


SOAK_BENCH = bench_script("soak.py")


@pytest.mark.long
def test_soak_smoke_run_samples_memory_files_and_threads_every_generation(capsys):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    result = subprocess.run([sys.executable, SOAK_BENCH, "--smoke"], capture_output=True, text=True, timeout=900, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["benchmark"] == "soak" and summary["generations"] == 12 and summary["frames_shown"] > 0
    assert summary["rss_mib"]["settled"] > 100 and summary["files"]["settled"] > 0 and summary["threads"]["max"] > 1
    assert set(summary["growth"]) == set(summary["peak_growth"]) == {"rss", "files", "threads"}
    assert summary["growth"]["rss"] == summary["peak_growth"]["rss"]  # memory: the largest sample counts
    assert len(summary["heap_in_use_mib_every_10"]) == len(summary["rss_mib_every_10"]) == 2
    assert all(mib > 0 for mib in summary["heap_in_use_mib_every_10"])  # glibc: the C heap holds the arrays
    assert_refused(load_bench("soak"), ["--generations", "5", "--settle", "5"], "--settle", capsys)


@pytest.mark.slow
def test_atari_suite_smoke_run_resumes_skips_refuses_and_renders(tmp_path, capsys, monkeypatch):
    """One tiny generation of Pong: one JSON line per game in the results file; a finished game is not run again; a
    game whose line was lost (a suite stopped while scoring) resumes from its checkpoint without training again;
    lines of another seed are refused without --append; the page is generated from the file; a finished game whose
    run was made with other settings, or whose config.json is corrupt, is refused; a new revision of the preset
    makes runs and lines of its own."""
    bench = load_bench("atari_suite")
    results, runs = tmp_path / "suite.jsonl", tmp_path / "atari_runs"  # the folder the studies page reads beside it
    common = ["--smoke", "--results", str(results), "--runs", str(runs)]
    bench.main(common)
    printed = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    (stored,) = [json.loads(line) for line in open(results)]
    assert printed["game"] == stored["game"] == "pong" and stored["suite_version"] == 3 and stored["mode"] == "smoke"
    assert stored["frames"] > 0 and stored["generations"] == 1 and stored["test_ale_cap"]["episodes"] == 2
    scores = stored["scores"]  # (a), (b), (c): the final elite, the best elite unbiased, the paper's way
    assert scores["final"]["episodes"] == scores["best"]["episodes"] == scores["paper_way"]["episodes"] == 2
    assert scores["final"]["mean"] == stored["test_training_cap"]["mean"] and scores["generation"] == 0
    assert stored["curve"][-1][0] == stored["frames"] and stored["commit"] is not None
    bench.main(common)
    assert "already" in capsys.readouterr().err and len(open(results).readlines()) == 1
    results.unlink()  # as if the suite stopped after training, before the line was written
    bench.main(common)
    (again,) = [json.loads(line) for line in open(results)]
    assert (again["generations"], again["frames"]) == (stored["generations"], stored["frames"])  # not trained twice
    with pytest.raises(SystemExit, match="--append"):
        bench.main(common + ["--seed", "1"])
    page = tmp_path / "suite.md"
    bench.main(["--render", "--results", str(results), "--page", str(page)])
    text = page.read_text()
    assert "| pong |" in text and "preset pc" in text and len(list((tmp_path / "suite").iterdir())) == 1
    pong_row = next(line for line in text.splitlines() if line.startswith("| pong |"))
    assert re.search(r"\| \d+% / \d+% \| \d+% \| [^|]+ \|$", pong_row), pong_row  # its rounds, from its run's history
    # a larger budget continues the same run (the budget is where it stops, not its name) ...
    bench.main(common + ["--frames", str(stored["frames"] + 1), "--append"])
    longer = json.loads(open(results).readlines()[-1])
    assert longer["generations"] == 2 and longer["curve"][0] == stored["curve"][0]
    # ... and a run that went on past a budget is scored as the budget ended it, its own files untouched
    run_dir = runs / "ga-pc-seed0" / "pong"
    kept = {path: path.read_bytes() for path in run_dir.rglob("*") if path.is_file() and "checkpoints" in path.parts}
    own_test = (run_dir / "test_training_cap.json").read_bytes()
    bench.main(common + ["--rerun", "pong", "--append"])
    rescored = json.loads(open(results).readlines()[-1])
    assert (rescored["generations"], rescored["frames"], rescored["scores"]["generation"]) == (1, stored["frames"], 0)
    assert rescored["scores"]["final"] == stored["scores"]["final"]
    assert {path: path.read_bytes() for path in kept} == kept and (run_dir / "test_training_cap.json").read_bytes() == own_test
    assert json.load(open(run_dir / "test_training_cap-generation0.json"))["generation"] == 0
    assert json.load(open(run_dir / "test_ale_cap-generation0.json"))["generation"] == 0
    # ... and an arm with --set changes is a run of its own, compared with the preset on the studies page
    bench.main(
        common + ["--append", "--no-ale-cap", "--scores", "final", "--set", "mutation_rank=1", "--set", "perturbed_rank=1"]
    )
    arm = json.loads(open(results).readlines()[-1])
    assert arm["changes"] == {"mutation_rank": 1, "perturbed_rank": 1} and arm["test_ale_cap"] is None
    assert arm["scores"]["best"] is None and arm["scores"]["final"]["episodes"] == 2
    assert sorted(os.listdir(runs)) == ["ga-pc-mutation_rank=1-perturbed_rank=1-seed0", "ga-pc-seed0"]
    config = json.load(open(runs / "ga-pc-mutation_rank=1-perturbed_rank=1-seed0" / "pong" / "config.json"))
    assert config["hyperparameters"]["mutation_rank"] == 1 and config["perturbed_rank"] == 1
    kept = os.listdir(runs / "ga-pc-seed0" / "pong" / "checkpoints")
    assert len([name for name in kept if name.startswith("generation-")]) == 1  # the newest only (and its journals)
    render = load_bench("render_atari_suite")
    studies = tmp_path / "studies.md"
    render.main(["--studies", "--results", str(results), "--page", str(studies)])
    text = studies.read_text()
    assert "## pong, 1 frames" in text and "| ga, pc + mutation_rank=1, perturbed_rank=1 |" in text
    arm_row = next(line for line in text.splitlines() if line.startswith("| ga, pc + mutation_rank=1") and "(seed 0)" in line)
    assert re.search(r"\| \d+% / \d+% \|$", arm_row), arm_row  # its time in tails, read from its run's history
    assert len(list((tmp_path / "studies").iterdir())) == 2  # one figure per game and budget
    # a new revision of the preset (its values changed) makes runs and lines of its own, beside the old ones
    from workbench.training import presets

    monkeypatch.setitem(presets.PRESET_REVISIONS, "pc", 2)
    with pytest.raises(SystemExit, match="preset_revision"):  # the file's lines are revision 1's
        bench.main(common)
    bench.main(common + ["--append"])
    revised = json.loads(open(results).readlines()[-1])
    assert revised["preset_revision"] == 2 and (runs / "ga-pc-revision2-seed0" / "pong" / "config.json").exists()
    bench.main(["--render", "--results", str(results), "--page", str(page)])
    assert "## ga, preset pc revision 2, 1 frames" in page.read_text() and "## ga, preset pc, 1 frames" in page.read_text()
    monkeypatch.setitem(presets.PRESET_REVISIONS, "pc", 1)
    # a finished game whose run was made with other settings of the preset (the preset changed since) is refused
    saved = runs / "ga-pc-seed0" / "pong" / "config.json"
    changed = dict(json.load(open(saved)))
    changed["hyperparameters"] = dict(changed["hyperparameters"], sigma=0.123)
    saved.write_text(json.dumps(changed))
    with pytest.raises(SystemExit, match=r"other settings of preset pc \(hyperparameters.sigma: 0.123 -> "):
        bench.main(common + ["--frames", str(stored["frames"] + 1), "--append"])
    saved.write_text("{not json")  # ... and a corrupt config.json is named, not a traceback
    with pytest.raises(SystemExit, match="config.json is corrupt"):
        bench.main(common + ["--frames", str(stored["frames"] + 1), "--append"])


def test_atari_suite_refuses_bad_arguments(tmp_path, capsys):
    bench = load_bench("atari_suite")
    assert_refused(bench, ["--games", "frostbyte"], "frostbite", capsys)
    assert_refused(bench, ["--games", "pong,Pong"], "twice", capsys)
    assert_refused(bench, ["--games", ""], "empty game name", capsys)  # not the default nine games
    assert_refused(bench, ["--games", "pong,"], "empty game name", capsys)
    assert_refused(bench, ["--results", ""], "--results: must be a path", capsys)  # not the default file
    assert_refused(bench, ["--runs", " "], "--runs: must be a path", capsys)
    assert_refused(bench, ["--algo", "ars"], "MuJoCo", capsys)
    assert_refused(bench, ["--frames", "0"], "--frames", capsys)
    assert_refused(bench, ["--seed", "-1"], "--seed: must be >= 0", capsys)
    assert_refused(bench, ["--games", "frostbite", "--rerun", "pong"], "--rerun pong: not among", capsys)
    assert_refused(bench, ["--set", "mutatoin_rank=1"], "did you mean mutation_rank", capsys)
    assert_refused(bench, ["--set", "sigma"], "NAME=VALUE", capsys)
    assert_refused(bench, ["--set", "slots=abc"], "--set slots must be an integer", capsys)
    with pytest.raises(SystemExit, match="--set mutation_rank=-1.*mutation_rank must be"):
        bench.main(["--smoke", "--set", "mutation_rank=-1", "--results", str(tmp_path / "r.jsonl")])
    assert_refused(bench, ["--set", "sigma=0.1", "--set", "sigma=0.2"], "twice", capsys)
    assert_refused(bench, ["--render", "--results", str(tmp_path / "none.jsonl")], "does not exist", capsys)
    with pytest.raises(SystemExit, match="below one generation"):
        bench.main(["--games", "pong", "--frames", "1000", "--results", str(tmp_path / "r.jsonl")])
    corrupt = tmp_path / "corrupt.jsonl"
    corrupt.write_text('{"benchmark": "atari_suite"}\nnot json\n')
    with pytest.raises(SystemExit, match="line 2 is not JSON"):
        bench.main(["--smoke", "--results", str(corrupt), "--runs", str(tmp_path / "runs")])
    assert not (tmp_path / "runs").exists() and not (tmp_path / "r.jsonl").exists()  # nothing written


def test_the_committed_atari_pages_are_generated_from_the_committed_results(tmp_path):
    """docs/atari_studies.md (and docs/atari_suite.md once the suite has lines) are what the renderer makes of
    the committed results files: a new line without the page rendered again fails here."""
    render = load_bench("render_atari_suite")
    root = REPO
    for results, page, write in (
        (render.STUDIES, render.STUDIES_PAGE, render.render_studies),
        (render.RESULTS, render.PAGE, render.render),
    ):
        if not os.path.exists(results):
            assert not os.path.exists(page), f"{page} has no results file to come from"
            continue
        fresh = tmp_path / os.path.basename(page)
        write(results, str(fresh))
        assert fresh.read_text() == open(page).read(), (
            f"{os.path.relpath(page, root)} is stale: run python experiments/render_atari_suite.py"
            + (" --studies" if write is render.render_studies else "")
        )


def test_the_results_pages_and_the_readme_summary_are_generated_from_the_committed_results():
    """docs/results.md, the README's "results at a glance" and the JSON lines quoted in the docs are what
    experiments/render_results.py makes of the committed results files: a new line without the pages rendered again, or
    a number typed into a generated region, fails here."""
    render = load_bench("render_results")
    for page, text in render.rendered(REPO).items():
        with open(os.path.join(REPO, page)) as f:
            assert f.read() == text, f"{page} is stale: run python experiments/render_results.py"


def test_the_results_renderer_reads_lines_and_regions_as_documented(tmp_path):
    render = load_bench("render_results")
    entries = [
        {"benchmark": "b", "mode": "full", "game": "pong", "recorded": "2026-01-01T00:00:00Z", "x": 1.0},
        {"benchmark": "b", "mode": "full", "game": "pong", "recorded": "2026-01-02T00:00:00Z", "x": 2.0},
        {"benchmark": "b", "mode": "quick", "game": "pong", "recorded": "2026-01-03T00:00:00Z", "x": 3.0},
        {"benchmark": "b", "mode": "full", "compare": ["ga", "ga+lowrank"], "recorded": "2026-01-04T00:00:00Z"},
    ]
    assert [e["x"] for e in render.newest_per_setting(entries[:3])] == [2.0, 3.0]  # the newest of each setting
    assert render.matches(entries[3], {"compare": "ga,ga+lowrank"}) and not render.matches(entries[0], {"compare": "x"})
    assert render.matches(entries[0], {"compare": "", "mode": "quick|full"})  # absent; one of two values
    block = render.json_lines({"b": entries}, "b?mode=full&game=pong&lines=all")
    assert block.count('{"benchmark"') == 2 and '"x":3.0' not in block
    assert "no line" in render.json_lines({"b": entries}, "b?game=frostbite")
    with_targets = {"targets": {"r": 1.0, "idle_fraction": 0.05}, "results": {"a": {"r": 1.2, "idle_fraction": 0.07}}}
    figures = render.targeted_figures(with_targets)
    assert figures == [("a r", 1.2, 1.0), ("a idle_fraction", 0.07, 0.05)]
    assert [render.met(*figure) for figure in figures] == [True, False]  # idle_fraction is an upper bound
    page = "text\n<!-- results:json:b?mode=quick -->\nold\n<!-- /results -->\nmore\n"
    filled = render.fill_regions(page, "docs/x.md", {"b": entries}, [])
    assert filled.startswith("text\n<!-- results:json:b?mode=quick -->\n```\n{") and filled.endswith("<!-- /results -->\nmore\n")
    emulation = dict(
        entries[0],
        benchmark="emulation",
        game="pong",
        raw_ale_fps=40000.0,
        op_fps=32000.0,
        op_python_fps=28000.0,
        vector_env_fps=25000.0,
        gymnasium_fps=9000.0,
        op_vs_raw_limit=0.8,
        op_vs_vector_env=1.28,
        commit="abc",
    )
    table = render.fill_regions(
        "<!-- results:table:emulation -->\n<!-- /results -->\n", "docs/x.md", {"emulation": [emulation]}, []
    )
    assert "| pong | 40,000 | 32,000 | 28,000 | 25,000 | 9,000 | 0.8 | 1.28 |" in table and "commit `abc`" in table
    assert "no run of the kind" in render.fill_regions("<!-- results:table:emulation -->\n<!-- /results -->\n", "x", {}, [])
    with pytest.raises(ValueError, match="unknown results region 'table:nonsense'"):
        render.fill_regions("<!-- results:table:nonsense -->\n<!-- /results -->\n", "docs/x.md", {}, [])
    with pytest.raises(ValueError, match="unknown results region 'nonsense'"):
        render.fill_regions("<!-- results:nonsense -->\n<!-- /results -->\n", "docs/x.md", {}, [])
    corrupt = tmp_path / "results"
    corrupt.mkdir()
    (corrupt / "b.jsonl").write_text('{"benchmark": "b"}\n[1, 2]\n')
    with pytest.raises(ValueError, match="b.jsonl line 2 is not a JSON object"):
        render.load_results(str(corrupt))


def test_the_cma_mujoco_table_shows_every_seed_against_ars_run_that_set_the_budget():
    render = load_bench("render_results")
    common = dict(benchmark="learning", mode="full", game="HalfCheetah-v5", preset="paper", ars_threshold=3430.0)
    ars = dict(common, algorithm="ars", budget_minutes=10.0, target_minutes=10.0, frames=24440000, recorded="2026-01-01")
    ars.update(test={"mean": 5633.0}, threshold_reached_in_training_steps=3705000)
    preserving = {"fraction": 1.0, "clip": None, "variance_floor": 0.01, "preserve_policy": True}
    runs = [
        dict(common, algorithm="sep-cma-es", budget_minutes=None, budget_steps=24440000, seed=seed, recorded=when)
        | {"test": {"mean": mean}, "threshold_reached_in_training_steps": reached, "observation_normalization": normalization}
        for seed, mean, reached, when, normalization in (
            (1, 3000.0, None, "2026-01-02", preserving),
            (0, 1.0, None, "2026-01-02", preserving),  # replaced by the newer run of seed 0
            (0, 4000.0, 3e6, "2026-01-03", preserving),
            (2, 3600.0, 5e6, "2026-01-03", preserving),
            (2, 9999.0, 1e6, "2026-01-04", dict(preserving, preserve_policy=False)),  # from before preserve_policy
        )
    ]
    other = dict(common, game="Hopper-v5", algorithm="ars", budget_minutes=30.0, target_minutes=30.0)  # no CMA run
    table = render.fill_regions(
        "<!-- results:table:cma_mujoco -->\n<!-- /results -->\n", "docs/x.md", {"learning": [ars, other] + runs}, []
    )
    assert "| HalfCheetah-v5, threshold 3,430 | 24.4M steps (10 min) | `ars` | ARS's run (seed 0) | 5,633 |" in table
    assert "| `sep-cma-es` | 0, 1, 2 | 4,000 / 3,000 / 3,600 | **3,600** | 2 of 3 | 3.0M / never / 5.0M |" in table
    assert "Hopper" not in table and table.index("`ars`") < table.index("`sep-cma-es`")


def test_a_benchmark_line_is_printed_even_when_its_results_file_cannot_be_written(tmp_path, capsys):
    common = load_bench("common")
    args = common.parser(None, quick="q", smoke="s").parse_args(["--results", str(tmp_path)])  # a folder
    with pytest.raises(SystemExit, match=f"--results: cannot append to {tmp_path}"):
        common.record({"benchmark": "b", "mode": "full", "x": 1}, args)
    printed = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert printed["x"] == 1 and printed["recorded"] and "machine" in printed
    written = tmp_path / "b.jsonl"
    args = common.parser(None, quick="q", smoke="s").parse_args(["--results", str(written)])
    common.record({"benchmark": "b", "mode": "full", "x": 2}, args)
    assert [line["x"] for line in common.read_lines(str(written))] == [2]
    benchmark, experiment = common.parser(None, quick="q", smoke="s"), common.parser(None, quick="q", smoke="s", record=True)
    assert common.results_file("b", "full", benchmark.parse_args([])) is None  # a benchmark records when asked
    assert common.results_file("b", "full", benchmark.parse_args(["--record"])).endswith("b.jsonl")
    assert common.results_file("b", "full", experiment.parse_args([])).endswith("b.jsonl")  # an experiment unless told
    assert common.results_file("b", "full", experiment.parse_args(["--no-record"])) is None
    assert common.results_file("b", "smoke").endswith(os.path.join("smoke", "b.jsonl"))
    with pytest.raises(SystemExit):
        benchmark.parse_args(["--no-record"])


def test_a_line_recorded_into_the_committed_results_renders_the_pages(tmp_path, monkeypatch, capsys):
    """--record appends to the checkout's results folder and runs its renderer, so that no page is left stale; a
    line recorded elsewhere (--results, the tests' folder) does not."""
    common = load_bench("common")
    checkout = tmp_path / "checkout"
    (checkout / "experiments" / "results").mkdir(parents=True)
    marker = tmp_path / "rendered"
    (checkout / "experiments" / "render_results.py").write_text(f"open({str(marker)!r}, 'a').write('x')\n")
    monkeypatch.setattr(common, "CHECKOUT", str(checkout))
    monkeypatch.setattr(common, "IN_CHECKOUT", True)
    monkeypatch.setattr(common, "RESULTS_DIR", str(checkout / "experiments" / "results"))
    monkeypatch.delenv(common.RESULTS_VARIABLE, raising=False)
    benchmark = common.parser(None, quick="q", smoke="s")
    common.record({"benchmark": "b", "mode": "full"}, benchmark.parse_args([]))  # printed only
    assert not (checkout / "experiments" / "results" / "b.jsonl").exists() and not marker.exists()
    common.record({"benchmark": "b", "mode": "full"}, benchmark.parse_args(["--record"]))
    assert len(common.read_lines(str(checkout / "experiments" / "results" / "b.jsonl"))) == 1 and marker.read_text() == "x"
    common.record({"benchmark": "b", "mode": "full"}, benchmark.parse_args(["--results", str(tmp_path / "elsewhere.jsonl")]))
    assert marker.read_text() == "x"  # not rendered again


def test_the_results_renderer_names_a_corrupt_results_file(tmp_path, monkeypatch):
    render = load_bench("render_results")
    monkeypatch.setattr(render, "rendered", lambda: render.load_results(str(tmp_path)))
    (tmp_path / "b.jsonl").write_text("not json\n")
    with pytest.raises(SystemExit, match="b.jsonl line 1 is not JSON"):
        render.main(["--check"])


def test_the_readme_suite_row_counts_only_the_newest_preset_revision():
    """Lines of two revisions of the preset are two tables: the README's row counts the newest revision's games, at
    the goal's budget (a longer run of one game after the suite is not the suite)."""
    render = load_bench("render_results")

    def line(game, revision, mean, budget=50_000_000):
        entry = dict(
            benchmark="atari_suite", mode="full", algorithm="ga", preset="pc", budget_frames=budget, seed=0,
            changes={}, game=game, recorded="2026-01-01T00:00:00Z", test_ale_cap=dict(mean=mean), ratios={"RS 1B": 2.0},
        )  # fmt: skip
        return dict(entry, preset_revision=revision) if revision > 1 else entry  # revision 1's lines have no field

    suite = [line("asterix", 1, 1_000.0), line("atlantis", 1, 50_000.0), line("enduro", 2, 40.0)]
    text = render.glance({}, suite, lambda page: page)
    assert "`pc revision 2`" in text and "enduro 40" in text and "asterix" not in text, text
    assert "; 8 of the paper's games to go" in text and "not settled" not in text
    text = render.glance({}, suite + [line("enduro", 2, 45.0, budget=100_000_000)], lambda page: page)
    assert "50M frames per game" in text and "enduro 40" in text and "enduro 45" not in text, text


def test_the_suite_page_leads_with_the_median_over_seeds_and_shows_every_seed(tmp_path):
    """Score (a) of every seed and their median lead the page (a picture, a compact table, the goal's counts); the
    three scores of each seed and their medians follow, with one figure of every seed's curve per game."""
    render = load_bench("render_atari_suite")
    paper = {"RS 1B": 1_000.0, "GA 1B": 2_000.0}

    def line(game, seed, final, best=None):
        score = lambda mean: None if mean is None else dict(mean=mean, std=1.0, generation=9)  # noqa: E731
        return dict(
            benchmark="atari_suite", suite_version=3, mode="full", algorithm="ga", preset="pc", budget_frames=50_000_000,
            seed=seed, changes={}, game=game, paper=paper, curve=[[1, 1.0, 0.5], [2, 2.0, 1.0]],
            scores=dict(final=score(final), best=score(best), paper_way=score(best and best + 100)),
        )  # fmt: skip

    entries = [line("asterix", 0, 900.0, 950.0), line("asterix", 1, 1_500.0, 1_400.0), line("asterix", 2, 2_500.0, 2_600.0)]
    entries.append(line("enduro", 0, 3_000.0))  # one seed so far, (b) and (c) not asked for
    lead = "\n".join(render.lead_lines(entries, [], str(tmp_path)))
    assert "| asterix | 1,500 | 900 (0), 1,500 (1), 2,500 (2) | 1,000 | 2,000 | 1.50 | 0.75 |" in lead, lead
    assert "median over 1 or 3 seeds" in lead and "above RS 1B on 2 (goal 8: asterix, enduro)" in lead, lead
    assert "above GA 1B on 1 (goal 3: enduro)" in lead and (tmp_path / "lead.png").exists()
    seeds = "\n".join(render.seed_lines(entries, str(tmp_path)))
    assert "| asterix | 1 | 1,500 (9) | 1,400 (9) | 1,500 (9) | | |" in seeds, seeds
    assert "| **asterix** | **median of 3** | **1,500** | 1,400 | 1,500 | 1.50 | 0.75 |" in seeds, seeds
    assert "| enduro | 0 | 3,000 (9) | not scored | not scored | | |" in seeds, seeds
    assert (tmp_path / "seeds-asterix.png").exists() and (tmp_path / "seeds-enduro.png").exists()
    assert render.seed_lines([dict(e, suite_version=2) for e in entries], str(tmp_path)) == []


def test_the_suite_page_says_how_far_each_goal_is():
    """The goals' sentence names the games above the paper and the ratios of the others, nearest first (three
    decimals where two would round a shortfall up to 1.00), and the games whose verdict lies within two standard
    errors of the test mean; Frostbite's own goal lists every full run of the
    preset within 100M frames, fewest frames first, and ignores studies and longer budgets."""
    render = load_bench("render_atari_suite")

    def line(game, rs, ga, mean=1_000.0, budget=50_000_000, changes=None):
        return dict(
            benchmark="atari_suite", mode="full", algorithm="ga", preset="pc", budget_frames=budget, seed=0,
            changes=changes or {}, game=game, frames=budget, test_ale_cap=dict(mean=mean),
            ratios={"RS 1B": rs, "GA 1B": ga}, paper={"GA 1B": 4_536.0},
        )  # fmt: skip

    games = {g: line(g, rs, ga) for g, rs, ga in [("assault", 1.2, 0.9961), ("enduro", 0.8, 0.5), ("asterix", 0.95, 1.1)]}
    text = render.goals_line(games)
    assert "above RS 1B on 1 of the 3 games scored (assault), the goal is 7 of the paper's 9" in text, text
    assert "the others reach asterix 0.95, enduro 0.80 of it" in text, text
    assert "Above GA 1B on 1 of the 3 games scored (asterix)" in text and "reach assault 0.996, enduro 0.50 of it." in text
    assert "not settled" not in text  # no std recorded: nothing to judge by
    assert "the goal is" not in render.goals_line(games, goal=False)  # a section of another budget
    games["enduro"]["test_ale_cap"] = dict(mean=40.0, std=22.0, episodes=30)  # 2 SE = 8.03 around 40
    games["enduro"]["paper"] = {"RS 1B": 48.0, "GA 1B": 60.0}
    text = render.goals_line(games)
    assert "of it; within two standard errors of it, so not settled by the test: enduro. Above GA 1B" in text, text
    assert text.endswith("enduro 0.50 of it."), text  # 60 is more than two standard errors away
    assert render.frostbite_goal_line(list(games.values())) is None
    runs = [
        line("frostbite", 2.0, 0.6, mean=2_700.0),
        line("frostbite", 2.0, 0.9, mean=4_100.0, changes={"sigma": 0.01}),  # a study's arm
        line("frostbite", 2.0, 0.95, mean=4_300.0, budget=200_000_000),  # beyond the goal's frames
        line("frostbite", 2.0, 0.7, mean=3_200.0, budget=100_000_000),
    ]
    text = render.frostbite_goal_line(runs)
    assert text.startswith("Frostbite within 100M frames (the goal: at or above the paper's GA 1B, 4,536): 2,700 after 50"), text
    assert "0.60 of it; 3,200 after 100.0M frames (pc, 100M budget), 0.70 of it. Not reached." in text, text
    assert "4,100" not in text and "4,300" not in text, text
    runs.append(line("frostbite", 2.5, 1.02, mean=4_600.0, budget=100_000_000))
    assert render.frostbite_goal_line(runs).endswith("1 of these 3 tests reach it."), render.frostbite_goal_line(runs)


def test_elite_retest_scores_the_newest_distinct_elites_on_two_test_sets(tmp_path, capsys):
    """Three generations of a tiny GA run on Pong: the smoke re-test scores its two newest distinct elites on the
    selection set and the report set, picks the best on the selection set, and records one line; a folder that
    holds no run, and a bad count, are refused naming the argument."""
    from workbench.training import RunConfig, Trainer

    config = RunConfig(
        env="pong", model="small", algorithm="ga", subpopulations=1, slots=2, max_episode_frames=400, noise_size=2**22,
        hyperparameters=dict(population_size=4, truncation=2, sigma=0.01, elite_candidates=2, elite_episodes=1),
    )  # fmt: skip
    run_dir = tmp_path / "run"
    trainer = Trainer.from_config(config, run_dir=str(run_dir))
    trainer.run(generations=3)
    history = trainer.history
    trainer.close()
    bench = load_bench("elite_retest")
    line = json_line_of(bench, ["--smoke", str(run_dir), "--results", str(tmp_path / "retest.jsonl")], capsys)
    assert line["benchmark"] == "elite_retest" and line["game"] == "pong" and line["mode"] == "smoke"
    assert line["run"] == str(run_dir) and line["run_generations"] == 3 and line["max_episode_frames"] == 400
    genomes = [json.dumps(history[row["generation"]].elite_genome, sort_keys=True) for row in line["elites"]]
    assert 1 <= len(line["elites"]) <= 2 and len(set(genomes)) == len(genomes)  # distinct elites, newest first
    assert line["final_generation"] == line["elites"][0]["generation"] and genomes[0] == json.dumps(
        history[-1].elite_genome, sort_keys=True
    )
    generations = [row["generation"] for row in line["elites"]]
    assert generations == sorted(generations, reverse=True)
    best = max(line["elites"], key=lambda row: row["selection"]["mean"])
    assert line["picked_generation"] == best["generation"]
    assert all(row["selection"]["episodes"] == row["report"]["episodes"] == 2 and row["frames"] > 0 for row in line["elites"])
    assert json.loads(open(tmp_path / "retest.jsonl").read())["frames"] == line["frames"]
    assert line["final_own_test"] is None  # the run has no test of its own
    own = run_dir / "test_training_cap.json"
    own.write_text(json.dumps(dict(max_episode_frames=400, seed=0, generation=2, mean=5.0, returns=[4.0, 6.0])))
    assert bench.own_test(str(run_dir), 400, 2) == dict(mean=5.0, episodes=2)
    assert bench.own_test(str(run_dir), 400, 1) is None and bench.own_test(str(run_dir), 20_000, 2) is None
    own.write_text("{not json")
    assert bench.own_test(str(run_dir), 400, 2) is None
    with pytest.raises(SystemExit, match="run_dir: .* not a run directory"):
        bench.main(["--smoke", str(tmp_path), "--no-record"])
    assert_refused(bench, ["--smoke", str(run_dir), "--elites", "0"], "--elites", capsys)


def test_bbob_runs_ours_and_a_reference_packs_each_run_once_and_compares_them(tmp_path, capsys):
    """experiments/bbob.py on two functions in 2-D (our CMA-ES and pycma): COCO's data packed into one archive per
    run, a finished run skipped, a run of another dimension packed apart; render_bbob reads the archives, merges
    each algorithm's and compares the two."""
    bbob = load_bench("bbob")
    for algorithm in ("cma-es", "pycma"):
        summary = json_line_of(bbob, [algorithm, "--smoke", "--out", str(tmp_path)], capsys)
        assert summary["problems"] == 2 and summary["evaluations"] >= 2 * 100 and summary["archive"] == f"{algorithm}-b50.tar.gz"
        assert (tmp_path / f"{algorithm}-b50.tar.gz").exists()
    bbob.main(["cma-es", "--smoke", "--out", str(tmp_path)])
    assert "done already" in capsys.readouterr().err
    for algorithm in ("cma-es", "pycma"):  # another dimension: an archive of its own, merged on the page
        summary = json_line_of(bbob, [algorithm, "--smoke", "--dimensions", "3", "--out", str(tmp_path)], capsys)
        assert summary["archive"] == f"{algorithm}-b50-d3.tar.gz"
        arguments = [algorithm, "--smoke", "--dimensions", "5", "--functions", "2", "--out", str(tmp_path)]
        summary = json_line_of(bbob, arguments, capsys)  # one function group: an archive of its own too
        assert summary["archive"] == f"{algorithm}-b50-d5-f2.tar.gz" and summary["problems"] == 1
    page = load_bench("render_bbob").render(str(tmp_path), figures=False)
    assert "## `cma-es` against `pycma`" in page and "| all 24 functions |" in page
    # rows per dimension, naming the functions that ran where not all 24 have
    assert "| dimension 2 (f1, f8 so far) |" in page and "| dimension 3 (f1, f8 so far) |" in page
    assert "| dimension 5 (f2 so far) |" in page
    render = load_bench("render_bbob")
    assert render._dimension_label(40, set(range(1, 25))) == "dimension 40"
    assert render._dimension_label(40, {1, 2, 3, 6, 8, 9}) == "dimension 40 (f1-f3, f6, f8-f9 so far)"
    assert "`cma-es` (budget 50 n)" in page
    assert_refused(bbob, ["cma", "--smoke"], "algorithm", capsys)
    assert_refused(bbob, ["cma-es", "--budget", "0"], "--budget", capsys)


def test_the_committed_bbob_page_is_generated_from_the_committed_runs():
    load_bench("render_bbob").main(["--check"])


def _run_folder(path, generation, history_lines):
    """A small run folder as the suites leave one: config, history, the newest checkpoint, TensorBoard, a lock."""
    checkpoint = path / "checkpoints" / f"generation-{generation:06d}"
    checkpoint.mkdir(parents=True)
    (checkpoint / "state.json").write_text(json.dumps({"generation": generation}))
    (path / "config.json").write_text("{}")
    (path / "history.jsonl").write_text("".join(f'{{"generation": {g}}}\n' for g in range(history_lines)))
    (path / "tensorboard").mkdir()
    (path / "tensorboard" / "events").write_text("x")
    (path / "trainer.lock").write_text("1")


def test_park_copies_unfinished_runs_newest_checkpoint_only_and_finished_runs_as_markers(tmp_path):
    """experiments/park.py: run folders cross to this checkout without TensorBoard or locks; a resumed run's newer
    checkpoint replaces the parked one; a finished MuJoCo run is parked as its marker; nothing goes back to an
    older checkpoint; the JSON lines are not touched."""
    park = load_bench("park")
    source, here = tmp_path / "source", tmp_path / "here"
    atari = source / "atari_runs" / "ga-pc-seed0" / "frostbite"
    _run_folder(atari, 3, 3)
    _run_folder(source / "cma_mujoco" / "Hopper-v5-sep-cma-es-seed0" / "run", 20, 21)
    _run_folder(source / "cma_mujoco" / "Walker2d-v5-sep-cma-es-seed0" / "run", 40, 41)
    (source / "cma_mujoco" / "Walker2d-v5-sep-cma-es-seed0" / "done").write_text("")
    (source / "learning.jsonl").write_text('{"a": 1}\n')
    here.mkdir()
    (here / "learning.jsonl").write_text("")
    changed = park.park(str(source), str(here))
    assert changed == [
        "atari_runs/ga-pc-seed0/frostbite",
        "cma_mujoco/Hopper-v5-sep-cma-es-seed0: parked",
        "cma_mujoco/Walker2d-v5-sep-cma-es-seed0: finished (its done marker)",
    ]
    parked = here / "atari_runs" / "ga-pc-seed0" / "frostbite"
    assert sorted(p.name for p in parked.iterdir()) == ["checkpoints", "config.json", "history.jsonl"]
    assert os.listdir(here / "cma_mujoco" / "Walker2d-v5-sep-cma-es-seed0") == ["done"]
    assert (here / "learning.jsonl").read_text() == ""
    assert park.park(str(source), str(here)) == []  # nothing new
    # the run went on: its newer checkpoint replaces the parked one
    shutil.rmtree(atari / "checkpoints")
    newer = atari / "checkpoints" / "generation-000005"
    newer.mkdir(parents=True)
    (newer / "state.json").write_text("{}")
    assert park.park(str(source), str(here)) == ["atari_runs/ga-pc-seed0/frostbite"]
    assert os.listdir(parked / "checkpoints") == ["generation-000005"]
    # an older source (another worktree behind this checkout) does not replace it
    older = tmp_path / "older"
    _run_folder(older / "atari_runs" / "ga-pc-seed0" / "frostbite", 4, 4)
    assert park.park(str(older), str(here)) == []
    assert os.listdir(parked / "checkpoints") == ["generation-000005"]
    # the QD comparison: our unfinished run with its newest checkpoint only; pyribs's not; a finished one removed
    qd = source / "qd_runs"
    _run_folder(qd / "Ant-v5-cma-me-seed0" / "run", 10, 11)
    (qd / "Ant-v5-cma-me-seed0" / "run" / "checkpoints" / "generation-000005").mkdir()
    _run_folder(qd / "Ant-v5-ribs-cma-me-seed0" / "run", 10, 11)
    (qd / "Ant-v5-map-elites-seed1" / "run").mkdir(parents=True)  # started, no checkpoint yet: nothing to park
    assert park.park(str(source), str(here)) == [
        "qd_runs/Ant-v5-cma-me-seed0: parked",
        "qd_runs/Ant-v5-ribs-cma-me-seed0: not parked (pyribs's state is a pickle of tens of MB; it runs again)",
    ]
    assert os.listdir(here / "qd_runs" / "Ant-v5-cma-me-seed0" / "run" / "checkpoints") == ["generation-000010"]
    (source / "qd_compare.jsonl").write_text(json.dumps({"task": "Ant-v5", "method": "cma-me", "seed": 0}) + "\n")
    assert park.park(str(source), str(here))[0] == "qd_runs/Ant-v5-cma-me-seed0: finished (its parked copy removed)"
    assert not (here / "qd_runs" / "Ant-v5-cma-me-seed0").exists()
    with pytest.raises(SystemExit):
        park.main([str(tmp_path / "nowhere")])


def test_the_qd_comparison_page_gives_each_pair_its_verdict_and_names_what_has_not_run(tmp_path):
    """docs/qd_compare.md from qd_compare lines: the median and every seed per method; ours against pyribs's as a
    ratio of medians and where our median falls among pyribs's seeds; the methods without a run named."""

    def line(task, method, seed, qd_score, episodes=100):
        curve = [
            dict(episodes=50, qd_score=qd_score / 2, coverage=0.1, best=1.0),
            dict(episodes=episodes, qd_score=qd_score, coverage=0.2, best=2.0),
        ]
        return dict(
            task=task,
            method=method,
            seed=seed,
            episodes=episodes,
            qd_score=qd_score,
            coverage=0.2,
            best=2.0,
            nonfinite=0,
            curve=curve,
        )

    lines = [line("Ant-v5", "ribs-map-elites", s, q) for s, q in enumerate((90.0, 110.0, 100.0))]
    lines += [line("Ant-v5", "map-elites", s, q) for s, q in enumerate((95.0, 105.0, 102.0))]  # median 102: inside
    lines += [line("Ant-v5", "ribs-cma-me", s, q) for s, q in enumerate((50.0, 60.0))]
    lines += [line("Ant-v5", "cma-me", s, q) for s, q in enumerate((70.0, 61.0))]  # median 65.5: ahead of both
    lines += [line("Ant-v5", "ribs-cma-mae", s, q) for s, q in enumerate((50.0, 60.0))]
    lines += [line("Ant-v5", "cma-mae", s, q) for s, q in enumerate((40.0, 45.0))]  # median 42.5: behind both
    lines += [line("Walker2d-v5", "map-elites", 0, 10.0), line("Walker2d-v5", "ribs-map-elites", 0, 20.0)]
    lines += [line("Walker2d-v5", "nsr-es", s, q) for s, q in enumerate((4.0, 6.0))]
    lines += [line("Walker2d-v5", "map-elites", 1, 999.0, episodes=50)]  # a smaller budget: not on the page
    results = tmp_path / "qd_compare.jsonl"
    results.write_text("".join(json.dumps(entry) + "\n" for entry in lines))
    page = tmp_path / "qd_compare.md"
    load_bench("render_qd_compare").render(str(results), str(page))
    text = page.read_text()
    assert "| map-elites | 3 | 102 (95, 105, 102) |" in text
    assert (
        "- map-elites: median QD-score 1.020 of pyribs's (3 and 3 seeds), within the spread of pyribs's seeds; rank-sum "
        "test (Mann-Whitney, exact, two-sided) p = 1.00." in text
    )
    assert "- cma-me: median QD-score 1.191 of pyribs's (2 and 2 seeds), ahead of every pyribs seed." in text
    assert "- map-elites: median QD-score 0.500 of pyribs's (1 and 1 seeds), too few seeds yet for a spread." in text
    assert "- nsr-es (every member it played, filed into the same cells): median QD-score 0.500 of map-elites's." in text
    assert "999" not in text
    assert "- cma-mae: median QD-score 0.773 of pyribs's (2 and 2 seeds), behind every pyribs seed." in text
    assert "Not run on Ant-v5 yet: nsr-es (" in text
    assert "Not run on Walker2d-v5 yet: cma-me, ribs-cma-me, cma-mae, ribs-cma-mae (" in text
    assert (tmp_path / "qd_compare" / "Ant-v5.png").exists() and (tmp_path / "qd_compare" / "Walker2d-v5.png").exists()
    rank_sum_p = load_bench("render_qd_compare").rank_sum_p
    assert rank_sum_p([1.0, 2.0, 3.0], [4.0, 5.0, 6.0]) == pytest.approx(0.1)  # the most extreme of 20 splits, both ways
    assert rank_sum_p([1.0, 2.0, 3.0, 4.0, 5.0], [6.0, 7.0, 8.0, 9.0, 10.0]) == pytest.approx(2 / 252)
    assert rank_sum_p([1.0, 1.0, 1.0], [1.0, 1.0, 1.0]) == 1.0  # all tied
    assert rank_sum_p([1.0, 2.0], [3.0, 4.0, 5.0]) is None  # below 3 a side


def test_a_study_arm_is_compared_with_the_arm_it_extends():
    render = load_bench("render_atari_suite")

    def seeds(changes, *means):
        return {seed: {"changes": changes, "test_training_cap": {"mean": mean}} for seed, mean in enumerate(means)}

    arms = {
        "ga, pc": seeds({}, 100.0, 120.0),
        "ga, pc + caps=1.2": seeds({"caps": 1.2}, 200.0, 220.0),
        "ga, pc + caps=1.2, elites=3": seeds({"caps": 1.2, "elites": 3}, 150.0),
    }
    lines = "\n".join(render.study_summary({(200, "frostbite", 1e7): arms}))
    assert "| ga, pc + caps=1.2 | frostbite, 10M | 200 | 210 | ga, pc | 110 | 1.91 (every seed ahead) | 2, 2 |" in lines
    assert "| ga, pc + caps=1.2, elites=3 | frostbite, 10M | 200 | 150 | ga, pc + caps=1.2 | 210 | 0.71 | 1, 2 |" in lines
