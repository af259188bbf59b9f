"""RunConfig: everything that defines a run (environment, model, algorithm and its settings, evaluator), as
JSON-able data, so that a run directory can rebuild its trainer (Trainer.resume_from)."""

from __future__ import annotations

import dataclasses
import json
import os
from typing import Any

import numpy as np

from workbench.checks import check_bool, check_type
from workbench.evaluation import BaseEvaluator, Evaluator, EvaluatorLayout, RunSpec
from workbench.evaluation.run_spec import ATARI_MODELS
from workbench.evolution import ALGORITHMS, Strategy, algorithm_names, algorithm_spec
from workbench.models.atari import DEFAULT_FLATTEN
from workbench.models.observation_normalization import ObservationNormalization
from workbench.training.checkpoint import CheckpointError

REFERENCE_BATCH_SIZE = 128  # observations of the virtual batch normalisation's reference batch (Salimans et al. 2017)
__all__ = ["ALGORITHMS", "REFERENCE_BATCH_SIZE", "RunConfig"]  # ALGORITHMS: the registry (workbench.evolution)


@dataclasses.dataclass
class RunConfig:
    """A run: env (Atari game, MuJoCo task or Gymnasium id), model, algorithm (a name of the registry,
    workbench.evolution.ALGORITHMS) with `hyperparameters` (fields of its config dataclass; the papers' defaults
    otherwise), the evaluator's layout, the noise table and the seed.

    observation_normalization: None, True or a dict of ObservationNormalization's fields (fraction, clip,
    variance_floor): inputs normalised by the running statistics of the states seen (ARS V2, OpenAI-ES on
    MuJoCo). behaviour: the novelty-search BC (default "final_ram" on Atari, "final_position" on MuJoCo).
    init_from: a run directory whose newest elite (weights and observation statistics) a new run of a strategy
    with a center starts from (workbench.training.warm_start); a resumed run does not read it again.
    """

    env: str = "frostbite"
    model: str = "small"
    algorithm: str = "ga"
    hyperparameters: dict = dataclasses.field(default_factory=dict)
    subpopulations: int = EvaluatorLayout.subpopulations
    slots: int = EvaluatorLayout.slots
    max_episode_frames: int = 20_000
    perturbed_rank: int = EvaluatorLayout.perturbed_rank
    behaviour: str | None = None
    noise_size: int = 2**26
    noise_seed: int = 123
    seed: int = 0
    env_options: dict = dataclasses.field(default_factory=dict)
    model_options: dict = dataclasses.field(default_factory=dict)
    ray: bool = False  # evaluate on Ray actors (a local cluster unless ray_address is given)
    ray_address: str | None = None  # an existing Ray cluster to join ("auto", "host:6379"); implies ray
    ray_actors: int | None = None  # Ray actors, each a full pipelined evaluator (default: one per CPU of the cluster)
    virtual_batch_norm: bool = False  # normalise hidden layers by a reference batch of random play (ES on Atari)
    observation_normalization: Any = None  # normalise inputs by running statistics (continuous control)
    action_noise: float = EvaluatorLayout.action_noise  # training-only Gaussian noise on continuous actions (OpenAI-ES: 0.01)
    init_from: str | None = None  # a run directory whose elite the search starts from (warm start)

    def algorithm_config(self) -> Any:
        """The algorithm's config dataclass with this run's hyperparameters (validated)."""
        spec = algorithm_spec(self.algorithm)
        if not isinstance(self.hyperparameters, dict):
            raise ValueError(f"hyperparameters must be a dict, got {type(self.hyperparameters).__name__}")
        return spec.config_for(self.hyperparameters)

    def spec(self) -> RunSpec:
        """The RunSpec of this run: environment, model, episode cap, noise table, observation normalisation."""
        normalization = ObservationNormalization.from_options(self.observation_normalization)
        return RunSpec(
            self.env,
            self.model,
            env_options=self.env_options,
            model_options=self.model_options,
            max_episode_frames=self.max_episode_frames,
            noise_size=self.noise_size,
            noise_seed=self.noise_seed,
            observation_normalization=None if normalization is None else normalization.to_json(),
        )

    def layout(self, behaviour: str | None = None) -> EvaluatorLayout:
        """The EvaluatorLayout of this run (behaviour: the characterisation in force, when not the config's)."""
        return EvaluatorLayout(
            subpopulations=self.subpopulations,
            slots=self.slots,
            behaviour=self.behaviour if behaviour is None else behaviour,
            perturbed_rank=self.perturbed_rank,
            action_noise=self.action_noise,
        )

    def check(self) -> None:
        """ValueError naming the field when the algorithm, model and environment do not go together."""
        spec = self.spec()
        algorithm = algorithm_spec(self.algorithm)
        if algorithm.vector_only and spec.is_atari:
            raise ValueError(
                f'algorithm "{self.algorithm}" is for vector observations (MuJoCo and Gymnasium tasks, '
                f'models "linear" and "mlp"); for Atari use {", ".join(algorithm_names(vector_only=False))}'
            )
        if spec.normalization is not None and spec.is_atari:
            raise ValueError(
                "observation_normalization is for vector observations; Atari runs normalise hidden layers with virtual_batch_norm"
            )
        if self.init_from is not None:
            check_type("init_from", self.init_from, str, "a run directory")
            if not algorithm.has_center:
                raise ValueError(
                    f'init_from: algorithm "{self.algorithm}" cannot start from a run\'s weights (it has '
                    f"no center); {', '.join(algorithm_names(has_center=True))} can"
                )

    def reference_batch(self) -> np.ndarray | None:
        """The run's reference batch for virtual batch normalisation (128 observations of random play drawn from
        the run's seed), or None without it."""
        check_bool("virtual_batch_norm", self.virtual_batch_norm)
        return self.spec().collect_reference_batch(REFERENCE_BATCH_SIZE, self.seed) if self.virtual_batch_norm else None

    def build(self, reference_batch: np.ndarray | None = None) -> tuple[Strategy, BaseEvaluator]:
        """(strategy, evaluator) of this configuration; reference_batch: a checkpoint's, instead of collecting one."""
        config = self.algorithm_config()  # validate before building anything heavy
        self.check()
        spec = self.spec()
        if self.virtual_batch_norm:
            reference = self.reference_batch() if reference_batch is None else reference_batch
            spec = dataclasses.replace(spec, reference_batch=reference)
        behaviour = self.behaviour
        if behaviour is None and algorithm_spec(self.algorithm).needs_behaviour:
            behaviour = {"atari": "final_ram", "mujoco": "final_position"}.get(spec.family, "final_observation")
        check_bool("ray", self.ray)
        layout = self.layout(behaviour)
        evaluator: BaseEvaluator
        if self.ray or self.ray_address is not None:
            from workbench.evaluation.ray_evaluator import RayEvaluator

            evaluator = RayEvaluator.from_spec(spec, layout, actors=self.ray_actors, address=self.ray_address)
        else:
            evaluator = Evaluator.from_spec(spec, layout)
        strategy_class = algorithm_spec(self.algorithm).strategy
        try:
            return strategy_class(config, evaluator.space, seed=self.seed), evaluator
        except BaseException:
            evaluator.close()
            raise

    def to_json(self) -> dict:
        """The config as JSON data; an Atari model's flatten order is written out (run directories written before
        it existed are read as "channels_last" by from_run_dir)."""
        data = dataclasses.asdict(self)
        if self.model in ATARI_MODELS:
            data["model_options"].setdefault("flatten", DEFAULT_FLATTEN)
        return data

    @classmethod
    def from_preset(cls, name: str, algorithm: str = "ga", **fields: Any) -> RunConfig:
        """A RunConfig with preset `name`'s hyperparameters and layout (workbench.training.presets); `fields`
        override them (hyperparameters merge). A model other than the preset's drops the preset's model_options
        (they were chosen for its model, e.g. the hidden sizes of an MLP) unless `fields` gives its own."""
        from workbench.training.presets import preset_fields

        base = preset_fields(name, algorithm, fields.get("env", cls.env))
        if "model" in fields and fields["model"] != base.get("model", fields["model"]):
            base.pop("model_options", None)
        hyperparameters = dict(base.pop("hyperparameters"), **fields.pop("hyperparameters", {}))
        return cls(algorithm=algorithm, hyperparameters=hyperparameters, **dict(base, **fields))

    @classmethod
    def from_run_dir(cls, run_dir: str) -> RunConfig:
        """The config.json of a run directory (CheckpointError when it is missing or corrupt)."""
        try:
            with open(os.path.join(run_dir, "config.json")) as f:
                data = json.load(f)
            if (
                isinstance(data, dict)
                and data.get("model", cls.model) in ATARI_MODELS
                and "flatten" not in (data.get("model_options") or {})
            ):  # saved before the option existed
                data["model_options"] = dict(data.get("model_options") or {}, flatten="channels_last")
            return cls.from_json(data)
        except FileNotFoundError as error:
            raise CheckpointError(f"{run_dir} has no config.json: not a run directory") from error
        except (json.JSONDecodeError, ValueError, TypeError) as error:
            raise CheckpointError(f"{run_dir}/config.json is corrupt: {error}") from error

    @classmethod
    def from_json(cls, data: dict) -> RunConfig:
        if not isinstance(data, dict):
            raise ValueError(f"a run config is a dict, got {type(data).__name__}")
        unknown = set(data) - {f.name for f in dataclasses.fields(cls)}
        if unknown:
            raise ValueError(f"unknown run config fields {sorted(unknown)}")
        return cls(**data)
