"""The algorithm registry: a registered algorithm (the toy of tests/support/toy_algorithm.py) gets command-line options
with help, validation, presets of its family and dashboard sliders without another file touched; the strategy
contract runs on it too (tests/evolution/test_strategy_contract.py). Bad registrations and unknown names are refused."""

import pytest

from support.toy_algorithm import ToyConfig, toy_registered
from workbench.cli import build_parser, run_config_from
from workbench.evolution import ALGORITHMS, AlgorithmSpec, GAConfig, GeneticAlgorithm, algorithm_names, algorithm_spec
from workbench.evolution import register as register_algorithm
from workbench.evolution.hyperparameters import Hyperparameter, describe, hyperparameter
from workbench.lab.controls import knobs_for
from workbench.training import RunConfig


def test_a_registered_algorithm_gets_options_help_validation_presets_and_sliders(tmp_path, capsys):
    with toy_registered() as toy:
        with pytest.raises(SystemExit):
            build_parser().parse_args(["train", "--help"])
        help_text = " ".join(capsys.readouterr().out.split())
        assert "hyperparameters of toy (ToyConfig)" in help_text
        assert "--boldness FLOAT a setting of the toy's own (it changes nothing) (slider 0.1 to 10, log scale); toy" in help_text
        args = build_parser().parse_args(
            [
                "train",
                "--algo",
                toy,
                "--boldness",
                "2.5",
                "--game",
                "CartPole-v1",
                "--model",
                "mlp",
                "--out",
                str(tmp_path / "run"),
            ]
        )
        config = run_config_from(args)
        settings = config.algorithm_config()
        assert isinstance(settings, ToyConfig) and settings.boldness == 2.5 and settings.population_size == 24
        config.hyperparameters["boldness"] = -1.0
        with pytest.raises(ValueError, match="boldness"):
            config.algorithm_config()
        pc = RunConfig.from_preset("pc", toy, env="frostbite")  # the GA family's pc settings
        assert pc.algorithm_config().population_size == 200 and pc.hyperparameters["truncation"] == 20
        knobs = {knob.name: knob for knob in knobs_for(ToyConfig, dict(boldness=1.0, sigma=0.1), 4000)}
        assert knobs["boldness"].label == "boldness" and knobs["boldness"].scale == "log"
        assert set(knobs) == {"boldness", "sigma", "max_episode_frames"}
    assert toy not in ALGORITHMS
    with pytest.raises(SystemExit):
        build_parser().parse_args(["train", "--algo", toy, "--out", str(tmp_path / "gone")])
    assert "invalid choice: 'toy'" in capsys.readouterr().err


def test_traits_and_names():
    assert algorithm_names(vector_only=True) == ["ars", "pgpe"]
    assert algorithm_names(needs_behaviour=True) == ["cma-mae", "cma-me", "map-elites", "ns-es", "nsr-es"]
    assert algorithm_names(has_center=False) == ["ga", "map-elites", "random"]
    assert algorithm_spec("random").config_for({}).truncation == 0  # a default the name sets
    assert algorithm_spec("random").config_for({"truncation": 5}).truncation == 5  # the run's own setting wins
    with pytest.raises(ValueError, match=r"--algo must be one of .*got 'nsr_es' \(did you mean nsr-es"):
        algorithm_spec("nsr_es", "--algo")
    with pytest.raises(ValueError, match=r"unknown ga hyperparameters \['learning_rate'\]"):
        algorithm_spec("ga").config_for({"learning_rate": 0.1})


def test_bad_registrations_are_refused():
    with pytest.raises(ValueError, match="registered already"):
        register_algorithm(ALGORITHMS["ga"])
    with pytest.raises(ValueError, match="Strategy subclass"):
        AlgorithmSpec("bad", dict, GAConfig, "not a strategy", "ga")
    with pytest.raises(ValueError, match=r"defaults \['nope'\] are not fields of GAConfig"):
        AlgorithmSpec("bad", GeneticAlgorithm, GAConfig, "a typo", "ga", defaults={"nope": 1})
    with pytest.raises(ValueError, match="lower-case"):
        AlgorithmSpec("Bad", GeneticAlgorithm, GAConfig, "a capital", "ga")
    with pytest.raises(ValueError, match="register takes an AlgorithmSpec"):
        register_algorithm("ga")


def test_hyperparameter_metadata():
    sigma = describe(GAConfig)["sigma"]
    assert sigma.label == "mutation power σ" and sigma.has_slider and sigma.scale == "log"
    assert describe(GAConfig)["elite_candidates"].has_slider is False
    with pytest.raises(ValueError, match="scale must be one of"):
        Hyperparameter("x", "y", scale="cubic")
    with pytest.raises(ValueError, match="low < high"):
        Hyperparameter("x", "y", low=2, high=1)
    with pytest.raises(ValueError, match="log scale needs low > 0"):
        hyperparameter(1.0, "x", "y", scale="log", low=0.0, high=1.0)
