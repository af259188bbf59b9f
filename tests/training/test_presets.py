"""Presets: every preset gives every algorithm a valid configuration; overrides win; unknown names are listed."""

import pytest

from workbench.cli import build_parser, run_config_from
from workbench.envs.atari.presets import PRESETS
from workbench.envs.mujoco.presets import ARS_PAPER
from workbench.envs.mujoco.tasks import TASKS
from workbench.evolution import algorithm_names
from workbench.training import ALGORITHMS, RunConfig
from workbench.training.presets import PRESET_NAMES


@pytest.mark.parametrize("preset", PRESET_NAMES)
@pytest.mark.parametrize("algorithm", algorithm_names(vector_only=False))
def test_every_preset_configures_every_atari_algorithm(preset, algorithm):
    config = RunConfig.from_preset(preset, algorithm, env="frostbite")
    settings = config.algorithm_config()
    assert config.max_episode_frames == PRESETS[preset]["layout"]["max_episode_frames"]
    if algorithm == "random":
        assert settings.truncation == 0  # random search draws every generation fresh
    assert RunConfig.from_json(config.to_json()).to_json() == config.to_json()  # JSON (what config.json holds) round-trips


def test_the_pc_preset_and_overrides():
    config = RunConfig.from_preset("pc", "ga", cores=2, env="pong", hyperparameters=dict(sigma=0.01), slots=8)
    assert config.hyperparameters == dict(population_size=200, truncation=20, sigma=0.01, elite_candidates=5, elite_episodes=5)
    assert config.slots == 8 and config.env == "pong"
    with pytest.raises(ValueError, match="preset must be one of 'paper', 'pc', 'tutorial'"):
        RunConfig.from_preset("laptop")
    with pytest.raises(
        ValueError,
        match=r'"ars" is for vector observations; pong is in the atari family: its presets cover cem, cma-es, cma-mae, cma-me, ',
    ):
        RunConfig.from_preset("pc", "ars", env="pong")
    with pytest.raises(ValueError, match=r"algorithm must be one of .*got 'gaa' \(did you mean ga\?\)"):
        RunConfig.from_preset("pc", "gaa", env="pong")


def test_the_command_line_starts_from_a_preset(tmp_path):
    args = build_parser().parse_args(
        ["train", "--preset", "pc", "--cores", "2", "--game", "frostbite", "--sigma", "0.01", "--out", str(tmp_path)]
    )
    config = run_config_from(args)
    assert config.hyperparameters["population_size"] == 200 and config.hyperparameters["sigma"] == 0.01
    args = build_parser().parse_args(["train", "--preset", "pc", "--cores", "4", "--truncation", "7", "--out", str(tmp_path)])
    config = run_config_from(args)
    assert (config.hyperparameters["population_size"], config.hyperparameters["truncation"], config.slots) == (400, 7, 32)
    args = build_parser().parse_args(["train", "--preset", "nope", "--out", str(tmp_path)])
    with pytest.raises(ValueError, match="preset"):
        run_config_from(args)
    for bad, message in (
        (["--cores", "4"], "--cores sizes a preset: give --preset too"),
        (["--preset", "pc", "--cores", "0"], "cores must be"),
    ):
        with pytest.raises(ValueError, match=message):
            run_config_from(build_parser().parse_args(["train", *bad, "--out", str(tmp_path)]))


@pytest.mark.parametrize("algorithm", ["ga", "random", "es", "ns-es"])
def test_the_atari_pc_preset_scales_with_the_cores(algorithm):
    """Population, parents and slots per sub-population grow with the cores (x cores/2, counted up to 10); the
    elite rounds, sigma and the layout's other fields stay; ES populations stay even; the default is this
    machine's cores; the paper and tutorial presets and MuJoCo's presets do not scale."""
    from workbench.training.presets import machine_cores

    def fields(cores, preset="pc", env="frostbite"):
        config = RunConfig.from_preset(preset, algorithm, cores=cores, env=env)
        return config.hyperparameters, config.slots, config.subpopulations, config.max_episode_frames

    (base, slots, subpopulations, cap) = fields(2)
    for cores, factor in ((1, 0.5), (3, 1.5), (4, 2), (10, 5), (64, 5)):
        scaled, scaled_slots, scaled_subpopulations, scaled_cap = fields(cores)
        population = round(base["population_size"] * factor)
        assert scaled["population_size"] == population + population % 2 * (algorithm in ("es", "ns-es")), cores
        assert scaled.get("truncation") == (round(base["truncation"] * factor) if "truncation" in base else None)
        assert scaled_slots == round(slots * factor) and (scaled_subpopulations, scaled_cap) == (subpopulations, cap)
        assert {k: v for k, v in scaled.items() if k not in ("population_size", "truncation")} == {
            k: v for k, v in base.items() if k not in ("population_size", "truncation")
        }
    assert fields(None) == fields(machine_cores())
    assert fields(7, "paper") == fields(1, "paper") and fields(7, "tutorial") == fields(1, "tutorial")
    if algorithm != "random":
        assert fields(8, env="Hopper-v5") == fields(1, env="Hopper-v5")
    for preset, env in (("pc", "frostbite"), ("paper", "frostbite"), ("pc", "Hopper-v5")):
        with pytest.raises(ValueError, match="cores must be an integer >= 1, got 0"):
            RunConfig.from_preset(preset, algorithm, cores=0, env=env)
    with pytest.raises(ValueError, match="cores must be an integer"):
        RunConfig.from_preset("pc", algorithm, cores="4", env="frostbite")


def test_evolution_strategies_normalise_by_a_reference_batch_in_the_atari_presets(tmp_path):
    for preset in ("paper", "pc"):
        assert RunConfig.from_preset(preset, "es", env="seaquest").virtual_batch_norm
        assert not RunConfig.from_preset(preset, "ga", env="seaquest").virtual_batch_norm
    with pytest.raises(ValueError, match="CartPole-v1 is in the gymnasium family, which has no presets"):
        RunConfig.from_preset("tutorial", "es", env="CartPole-v1")
    args = build_parser().parse_args(
        ["train", "--preset", "pc", "--game", "seaquest", "--algo", "es", "--no-virtual-batch-norm", "--out", str(tmp_path)]
    )
    assert not run_config_from(args).virtual_batch_norm


@pytest.mark.parametrize("preset", PRESET_NAMES)
@pytest.mark.parametrize("algorithm", sorted(ALGORITHMS))
@pytest.mark.parametrize("task", sorted(TASKS))
def test_every_preset_configures_every_algorithm_on_every_mujoco_task(preset, algorithm, task):
    quality_diversity = ALGORITHMS[algorithm].preset_group in ("qd", "cma-qd")
    if quality_diversity and not TASKS[task].feet:  # no feet: no descriptor with declared bounds
        with pytest.raises(ValueError, match="descriptor_bounds: the behaviour 'feet_contact' declares no bounds on"):
            RunConfig.from_preset(preset, algorithm, env=task)
        config = RunConfig.from_preset(
            preset, algorithm, env=task, behaviour="final_position", hyperparameters=dict(descriptor_bounds=[[-5, 5]] * 2)
        )
        assert config.algorithm_config().descriptor_bounds == [[-5, 5]] * 2
        return
    config = RunConfig.from_preset(preset, algorithm, env=task)
    config.algorithm_config()
    config.check()
    assert config.model in ("linear", "mlp") and config.max_episode_frames == 1000
    assert RunConfig.from_json(config.to_json()) == config
    if quality_diversity:  # QDax's per-step reward offset times the cap, as the QD-score's offset
        expected = {"Walker2d-v5": -1413.0, "Ant-v5": -3240.0, "Humanoid-v5": 0.0}.get(TASKS[task].gymnasium_id)
        assert expected is None or config.hyperparameters["qd_score_offset"] == expected
    if algorithm == "ars" and preset == "paper":
        assert config.hyperparameters == dict(ARS_PAPER[TASKS[task].gymnasium_id], center_episodes=1)
        assert (config.observation_normalization is None) == (task == "Swimmer-v5")  # V1 there, V2-t elsewhere


def test_a_model_other_than_the_presets_drops_its_model_options():
    config = RunConfig.from_preset("pc", "ns-es", env="HumanoidTrap-v5", model="linear")  # the MLP's hidden sizes
    assert config.model == "linear" and not config.model_options
    config.check()
    config = RunConfig.from_preset("pc", "es", env="Hopper-v5", model="mlp", model_options=dict(hidden_sizes=[8]))
    assert config.model_options == dict(hidden_sizes=[8])  # given with the model: kept
    assert RunConfig.from_preset("pc", "es", env="Hopper-v5", model="mlp").model_options == dict(hidden_sizes=[64, 64])
    args = build_parser().parse_args(
        ["train", "--env", "HumanoidTrap-v5", "--algo", "es", "--preset", "pc", "--model", "linear", "--out", "unused"]
    )
    config = run_config_from(args)  # the command line too
    assert config.model == "linear" and not config.model_options


def test_the_command_line_trains_mujoco_from_a_preset(tmp_path):
    args = build_parser().parse_args(
        ["train", "--env", "Hopper-v5", "--algo", "ars", "--preset", "paper", "--noise", "0.02", "--out", str(tmp_path)]
    )
    config = run_config_from(args)
    assert config.model == "linear" and config.hyperparameters["noise"] == 0.02
    assert config.hyperparameters["survival_bonus"] == 1.0 and config.observation_normalization["fraction"] == 1.0
    args = build_parser().parse_args(
        [
            "train",
            "--env",
            "Hopper-v5",
            "--algo",
            "ars",
            "--preset",
            "paper",
            "--no-observation-normalization",
            "--out",
            str(tmp_path),
        ]
    )
    assert run_config_from(args).observation_normalization is None
    args = build_parser().parse_args(["train", "--env", "pong", "--algo", "pgpe", "--out", str(tmp_path)])
    with pytest.raises(ValueError, match="vector observations"):
        run_config_from(args)
    args = build_parser().parse_args(
        ["train", "--env", "Hopper-v5", "--algo", "pgpe", "--max-speed", "0", "--out", str(tmp_path)]
    )
    with pytest.raises(ValueError, match="max_speed"):
        run_config_from(args)
