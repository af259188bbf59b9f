"""Environment families are declared once: the registry answers for every name, and a toy family registered in
one file (tests/support/toy_family.py) runs through the resolver, the contract checker, the trainer, its
checkpoints and the dashboard's data path without an edit anywhere else."""

import dataclasses

import numpy as np
import pytest

from support.toy_family import CAP, FAMILY, toy_family_registered
from workbench.envs import (
    ENV_FAMILIES,
    FAMILY_FIELDS,
    EnvFamily,
    check_batch,
    env_family,
    env_family_names,
    find_env_family,
    make_batch,
    register_env_family,
)
from workbench.envs.backends import BACKENDS
from workbench.lab.run_monitor import RunMonitor
from workbench.ops import BACKENDS as OPS_BACKENDS
from workbench.training import RunConfig, Trainer
from workbench.training.checkpoint import load_checkpoint


def test_the_built_in_families_answer_for_their_names():
    assert env_family_names() == ("atari", "function", "mujoco", "gymnasium")  # the fallback last
    for name, family in (("pong", "atari"), ("ALE/Pong-v5", "atari"), ("hopper", "mujoco"), ("HumanoidTrap-v5", "mujoco")):
        assert env_family(name) == family
    assert env_family("CartPole-v1") == "gymnasium" and find_env_family("Pendulum-v1").fallback
    assert find_env_family("HalfCheetah-v5").name == "mujoco"  # Gymnasium registers it too: the ops' family wins
    assert find_env_family("pong").ops_module == "atari_env" and find_env_family("CartPole-v1").ops_module is None
    assert BACKENDS == OPS_BACKENDS  # named twice so that importing the families does not import TensorFlow
    for name in ENV_FAMILIES:
        family = ENV_FAMILIES[name]
        probe = {"atari": "pong", "function": "sphere-3", "mujoco": "Hopper-v5", "gymnasium": "CartPole-v1"}[name]
        assert set(family.run_defaults(probe, "ga")) == set(FAMILY_FIELDS)
    with pytest.raises(ValueError, match=r"env 'hoper' is in no environment family .*Did you mean: hopper"):
        find_env_family("hoper")
    with pytest.raises(TypeError, match="env must be a game, task or Gymnasium id string, got int"):
        find_env_family(3)


def test_a_gymnasium_id_keeps_its_registered_episode_limit(tmp_path):
    assert RunConfig(env="CartPole-v1", algorithm="ga").max_episode_frames == 500
    assert RunConfig(env="Pendulum-v1", algorithm="es").max_episode_frames == 200
    assert RunConfig(env="CartPole-v1", max_episode_frames=50).max_episode_frames == 50  # unless the run asks
    assert RunConfig(env="pong").max_episode_frames == 20_000 and RunConfig(env="hopper").max_episode_frames == 1000


def test_a_bad_family_registration_is_refused():
    find_env_family("pong")  # claims are checked at registration once a lookup has run (before: at the first one)
    with toy_family_registered():
        with pytest.raises(ValueError, match="'toy' is registered already"):
            register_env_family(FAMILY)
    thief = dataclasses.replace(
        FAMILY, name="thief", names=lambda: ("pong", "toy-thief"), find=lambda n: n if n == "pong" else None
    )
    with pytest.raises(ValueError, match="'thief' and 'atari' both recognise 'pong'"):
        register_env_family(thief)
    assert "thief" not in ENV_FAMILIES and env_family("pong") == "atari"
    with pytest.raises(ValueError, match="there is a fallback family already"):
        register_env_family(dataclasses.replace(FAMILY, name="other", fallback=True))
    with pytest.raises(ValueError, match="non-empty lower-case string"):
        dataclasses.replace(FAMILY, name="Toy")
    with pytest.raises(ValueError, match="find must be callable"):
        dataclasses.replace(FAMILY, find=None)
    with pytest.raises(ValueError, match="register_env_family takes an EnvFamily"):
        register_env_family("toy")
    assert isinstance(FAMILY, EnvFamily) and "toy" not in ENV_FAMILIES


def test_a_toy_family_runs_through_the_resolver_contract_trainer_and_monitor(tmp_path):
    with toy_family_registered():
        assert env_family("toy-walk") == "toy"
        batch = make_batch("toy-walk", 3, seed=1)
        assert "twin" in check_batch(batch, twin=make_batch("toy-walk", 3, seed=1))  # raises for a broken clause
        batch.close()
        config = RunConfig(env="toy-walk", algorithm="ga", hyperparameters=dict(population_size=8, truncation=3))
        assert (config.model, config.model_options, config.max_episode_frames) == ("mlp", dict(hidden_sizes=[4]), CAP)
        assert RunConfig(env="toy-walk", algorithm="ars").model == "linear"
        preset = RunConfig.resolve("tutorial", env="toy-walk", algorithm="random", slots=2, noise_size=2**14)
        assert preset.hyperparameters == dict(population_size=8, elite_candidates=2, elite_episodes=2)  # its own 0 truncation
        assert (preset.subpopulations, preset.slots) == (1, 2)
        with pytest.raises(ValueError, match="preset 'paper' of the toy family has no settings for ga's group 'ga'"):
            RunConfig.resolve("paper", env="toy-walk", algorithm="ga")
        with pytest.raises(ValueError, match=r"model 'small' does not fit toy-walk \(the toy family\)"):
            RunConfig.resolve(env="toy-walk", model="small")
        trainer = Trainer.from_config(preset, run_dir=str(tmp_path))
        monitor, events = RunMonitor(), trainer.events.subscribe()
        records = trainer.run(generations=3)
        monitor.apply(events.drain())
        assert monitor.generations == [0, 1, 2] and all(np.isfinite(r.max) for r in records)
        assert monitor.latest_frame is not None and monitor.latest_frame.frame.shape == (1, 21, 3)  # gameplay
        assert all(0 < r.frames <= (8 + 2 * 2) * CAP for r in records)
        trainer.checkpoint()
        trainer.close()
        resumed = Trainer.resume_from(str(tmp_path))
        assert resumed.generation == 3 and resumed.strategy.elite == trainer.strategy.elite
        resumed.close()
        _, state = load_checkpoint(str(tmp_path))
        assert state["strategy"]["generation"] == 3
