"""One resolver: the notebook's door (RunConfig.resolve, RunConfig(...)) and the command line's (train) give the
same run for the same words, for every environment family, algorithm and preset; the precedence holds; errors
name the field and its source."""

import json

import pytest

from workbench.cli import main
from workbench.evolution import algorithm_names
from workbench.training import RunConfig
from workbench.training.presets import PRESET_NAMES
from workbench.training.resolve import resolve_run

ENVS = ("frostbite", "HalfCheetah-v5", "rastrigin-10", "CartPole-v1")  # one name per built-in family


def command_line(capsys, *argv):
    """(config JSON, None) of `train --dry-run`, or (None, its error)."""
    code = main(["train", *argv, "--out", "unused", "--dry-run"])
    out, err = capsys.readouterr()
    return (json.loads(out), None) if code == 0 else (None, err.strip().removeprefix("error: "))


def python(preset, **fields):
    """(config JSON, None) of RunConfig.resolve, or (None, its error)."""
    try:
        return RunConfig.resolve(preset, **fields).to_json(), None
    except (ValueError, TypeError) as error:
        return None, str(error)


@pytest.mark.parametrize("preset", (None,) + PRESET_NAMES)
@pytest.mark.parametrize("env", ENVS)
def test_both_doors_resolve_every_family_algorithm_and_preset_alike(capsys, env, preset):
    for algorithm in algorithm_names():
        argv = ["--env", env, "--algo", algorithm] + (["--preset", preset, "--cores", "2"] if preset else [])
        cores = dict(cores=2) if preset else {}
        assert command_line(capsys, *argv) == python(preset, env=env, algorithm=algorithm, **cores), (env, algorithm, preset)
        argv += ["--seed", "3", "--sigma", "0.5"] if algorithm in ("ga", "es") else ["--seed", "3"]
        given = dict(seed=3) | (dict(hyperparameters=dict(sigma=0.5)) if algorithm in ("ga", "es") else {})
        assert command_line(capsys, *argv) == python(preset, env=env, algorithm=algorithm, **cores, **given)


def test_the_new_users_line_builds_from_python():
    config = RunConfig(env="HalfCheetah-v5", algorithm="ars")
    assert (config.model, config.max_episode_frames, config.observation_normalization["fraction"]) == ("linear", 1000, 1.0)
    strategy, evaluator = config.build()
    try:
        assert evaluator.spec.max_episode_frames == 1000 and type(strategy).__name__ == "AugmentedRandomSearch"
    finally:
        evaluator.close()


def test_the_precedence_is_family_preset_config_init_from_options(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(
        json.dumps(dict(env="Hopper-v5", algorithm="es", slots=5, hyperparameters=dict(sigma=0.03, population_size=20)))
    )
    resolved = resolve_run("pc", config=str(path), hyperparameters=dict(sigma=0.04), max_episode_frames=77)
    config, sources = resolved.config, resolved.sources
    assert config.hyperparameters["sigma"] == 0.04 and sources["hyperparameters.sigma"] == "options"
    assert config.hyperparameters["population_size"] == 20 and sources["hyperparameters.population_size"] == f"config file {path}"
    assert config.hyperparameters["l2_coefficient"] == 0.005 and sources["hyperparameters.l2_coefficient"] == "preset 'pc'"
    assert config.slots == 5 and config.max_episode_frames == 77 and config.model_options == dict(hidden_sizes=[64, 64])
    plain = resolve_run(env="Hopper-v5", algorithm="ars")
    assert plain.family_defaults() == dict(
        model="linear",
        model_options={},
        observation_normalization=dict(fraction=1.0, clip=None, variance_floor=0.01),
        max_episode_frames=1000,
    )
    # a model other than the one below drops the options chosen for it; True keeps the options below it
    changed = RunConfig.resolve("pc", env="Humanoid-v5", algorithm="es", model="linear", observation_normalization=True)
    assert changed.model_options == {} and changed.observation_normalization["fraction"] == 0.01
    assert (
        RunConfig.resolve("pc", env="Humanoid-v5", algorithm="es", observation_normalization=None).observation_normalization
        is None
    )
    # RunConfig(...) itself fills what nobody chose from the family, as the resolver does
    assert RunConfig(env="Hopper-v5", algorithm="es").to_json() == RunConfig.resolve(env="Hopper-v5", algorithm="es").to_json()
    assert RunConfig(env="Hopper-v5", algorithm="es", model="mlp").model_options == dict(hidden_sizes=[64, 64])
    assert RunConfig(env="Hopper-v5", algorithm="es", model="linear").model_options == {}


def test_errors_name_the_field_and_its_source(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(dict(seed="a")))
    for call, message in (
        (lambda: resolve_run(config=str(path)), rf"seed must be an integer.*\(from config file {path}\)"),
        (lambda: resolve_run(config=dict(hyperparameters=dict(sigma=-1))), r"sigma must be .*\(from config\)"),
        (lambda: resolve_run("pc", hyperparameters=dict(sigma=-1)), r"sigma must be .*\(from options\)"),
        (lambda: resolve_run(modle="mlp"), r"options: 'modle' is not a run config field \(did you mean model\?\)"),
        (lambda: resolve_run(sigma=0.1), r"'sigma' is not a run config field \(it is a hyperparameter"),
        (lambda: resolve_run(config=dict(env="pongg")), r"env 'pongg' is in no environment family .*\(from config\)"),
        (lambda: resolve_run("laptop"), "preset must be one of 'paper', 'pc', 'tutorial'"),
        (lambda: resolve_run("pcc"), r"got 'pcc' \(did you mean pc\?\)"),
        (lambda: resolve_run(cores=2), "cores sizes a preset: give a preset too"),
        (lambda: resolve_run(config=str(tmp_path / "none.json")), "config file .*none.json: .*No such file"),
        (lambda: resolve_run(init_from=str(tmp_path), algorithm="es"), "init_from .* is not a run directory"),
    ):
        with pytest.raises((ValueError, TypeError), match=message):
            call()
