"""RunConfig: everything that defines a run (environment, model, algorithm and its settings, evaluator), as
JSON-able data, so that a run directory can rebuild its trainer (Trainer.resume_from)."""

from __future__ import annotations

import copy
import dataclasses
import json
import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from workbench.checks import check_annotated, check_path
from workbench.envs import FAMILY_FIELDS, find_env_family
from workbench.evaluation.layout import EvaluatorLayout
from workbench.evolution import ALGORITHMS, Strategy, algorithm_names, algorithm_spec
from workbench.evolution.noise import DEFAULT_SEED, DEFAULT_SIZE
from workbench.training.checkpoint import CheckpointError

if TYPE_CHECKING:
    from workbench.evaluation import BaseEvaluator, RunSpec


@dataclasses.dataclass(frozen=True)
class CommandLineOption:
    """How a RunConfig field appears on the command line (workbench/cli.py builds the option from it): help,
    flags (default --field-name), the value's kind (default: the field's type), choices (read when the parser is
    built) and metavar."""

    help: str
    flags: tuple[str, ...] = ()
    kind: type | None = None
    choices: Callable[[], list[str]] | None = None
    metavar: str | None = None
    show_default: bool = True  # False where the environment family chooses the default (EnvFamily.run_defaults)


def _setting(default: Any, help: str, *flags: str, **option: Any) -> Any:
    """A RunConfig field with a default and its command-line option."""
    return dataclasses.field(default=default, metadata={"option": CommandLineOption(help, flags, **option)})


class _FamilyDefault:
    """The default of a field the environment family chooses (EnvFamily.run_defaults): RunConfig replaces it
    when it is built, so no RunConfig, config.json or JSON form ever holds it."""

    def __repr__(self) -> str:
        return "<the environment family's>"

    def __copy__(self) -> _FamilyDefault:
        return self

    def __deepcopy__(self, memo: dict) -> _FamilyDefault:
        return self


FAMILY_DEFAULT: Any = _FamilyDefault()


# The values of the FAMILY_FIELDS a config.json written before they were left to the environment family meant
# when one of them is missing (RunConfig's defaults then): from_run_dir reads old run directories as they ran.
STORED_DEFAULTS: dict[str, Any] = dict(model="small", model_options={}, observation_normalization=None, max_episode_frames=20_000)
REFERENCE_BATCH_SIZE = 128  # observations of the virtual batch normalisation's reference batch (Salimans et al. 2017)
__all__ = [
    "ALGORITHMS",
    "FAMILY_DEFAULT",
    "REFERENCE_BATCH_SIZE",
    "CommandLineOption",
    "RunConfig",
]  # ALGORITHMS: the registry (workbench.evolution)


@dataclasses.dataclass
class RunConfig:
    """A run: env (Atari game, MuJoCo task or Gymnasium id), model, algorithm (a name of the registry,
    workbench.evolution.ALGORITHMS) with `hyperparameters` (fields of its config dataclass; the papers' defaults
    otherwise), the evaluator's layout, the noise table and the seed.

    observation_normalization: None, True or a dict of ObservationNormalization's fields (fraction, clip,
    variance_floor, preserve_policy): inputs normalised by the running statistics of the states seen (ARS V2, OpenAI-ES on
    MuJoCo). behaviour: the BC of novelty search and quality diversity (default "final_ram" on Atari, "final_position"
    on MuJoCo; quality diversity's on MuJoCo "feet_contact"; workbench.evaluation.behaviour lists them).
    init_from: a run directory whose newest elite (weights and observation statistics) a new run of a strategy
    with a center starts from (workbench.training.warm_start); a resumed run does not read it again.

    model, model_options, observation_normalization and max_episode_frames left out are filled when the config is
    made: from the init_from run, else from the environment family (EnvFamily.run_defaults), as the command line
    fills them; RunConfig.resolve adds presets and config files (workbench.training.resolve).
    """

    env: str = _setting(
        "frostbite", "Atari game (frostbite, ALE/Pong-v5), MuJoCo task (HalfCheetah-v5) or Gymnasium id", "--game", "--env"
    )
    model: str = _setting(
        FAMILY_DEFAULT,
        'network: "small", "large" (Atari), "mlp" or "linear" (default: the environment family\'s)',
        show_default=False,
    )
    algorithm: str = _setting("ga", "search algorithm", "--algo", choices=lambda: sorted(ALGORITHMS))
    hyperparameters: dict = dataclasses.field(default_factory=dict)  # options of their own, from the registry
    subpopulations: int = _setting(EvaluatorLayout.subpopulations, "sub-populations of the evaluator, run side by side")
    slots: int = _setting(EvaluatorLayout.slots, "episode slots per sub-population")
    max_episode_frames: int = _setting(
        FAMILY_DEFAULT,
        "frame cap of a training episode (default: the environment family's: Atari 20,000 frames, a Gymnasium "
        "id its registered limit)",
        show_default=False,
    )
    perturbed_rank: int = _setting(
        EvaluatorLayout.perturbed_rank, "evaluate children as parent + low-rank perturbation up to this mutation rank"
    )
    behaviour: str | None = _setting(
        None, 'behaviour characterisation for novelty search and quality diversity ("final_ram", "feet_contact", ...)'
    )
    noise_size: int = _setting(DEFAULT_SIZE, "floats in the shared noise table")
    noise_seed: int = _setting(DEFAULT_SEED, "seed of the shared noise table")
    seed: int = _setting(0, "seed of the search")
    env_options: dict = dataclasses.field(default_factory=dict)  # --config only
    model_options: dict = dataclasses.field(default=FAMILY_DEFAULT)  # --config only
    ray: bool = _setting(False, "evaluate on Ray actors on a local cluster (127.0.0.1, no dashboard) unless --ray-address")
    ray_address: str | None = _setting(None, "join a running Ray cluster (e.g. head:6379, auto)")
    ray_actors: int | None = _setting(None, "Ray actors, each a full pipelined evaluator (default: one per CPU of the cluster)")
    virtual_batch_norm: bool = _setting(
        False,
        "normalise hidden layers by a reference batch of random play (the paper's ES on Atari; on for ES with the "
        "paper and pc presets)",
    )
    observation_normalization: Any = _setting(
        FAMILY_DEFAULT,
        "normalise inputs by the running mean and std of the states seen (continuous control; default: the environment "
        "family's, on for MuJoCo)",
        kind=bool,
        show_default=False,
    )
    action_noise: float = _setting(
        EvaluatorLayout.action_noise, "std of Gaussian noise on continuous actions in training (OpenAI-ES: 0.01)"
    )
    init_from: str | None = _setting(
        None,
        "start from that run's newest elite and observation statistics (es, ns-es, nsr-es, ars, pgpe); its model and "
        "observation normalisation are taken over",
        metavar="RUN_DIR",
    )

    def __post_init__(self) -> None:
        """Fills the fields left to the environment family (FAMILY_FIELDS: _fill_family_fields), then a TypeError
        naming the first field whose value does not have its type, before any value is used."""
        if any(getattr(self, name) is FAMILY_DEFAULT for name in FAMILY_FIELDS):
            self._fill_family_fields()
        for field in dataclasses.fields(self):
            check_annotated(field.name, getattr(self, field.name), str(field.type))

    def _fill_family_fields(self) -> None:
        """The FAMILY_FIELDS nobody chose: the model, its options and the observation normalisation of the
        init_from run when there is one (so that its weights compute the same policy here), else the environment
        family's defaults for the algorithm's preset group (EnvFamily.run_defaults); the episode cap is the
        family's. Model options go with the model they were chosen for: a model given without options takes the
        family's options only when it is the family's model."""
        for name, annotation in (("env", "str"), ("algorithm", "str"), ("init_from", "str | None")):
            check_annotated(name, getattr(self, name), annotation)
        family = find_env_family(self.env)
        defaults = dict(family.run_defaults(self.env, algorithm_spec(self.algorithm).preset_group))
        if self.init_from is not None and FAMILY_DEFAULT in (self.model, self.model_options, self.observation_normalization):
            from workbench.training.warm_start import inherited_fields  # reads the source's config.json

            defaults.update(inherited_fields(self.init_from))
        if self.model is not FAMILY_DEFAULT and self.model_options is FAMILY_DEFAULT and self.model != defaults["model"]:
            self.model_options = {}
        for name in FAMILY_FIELDS:
            if getattr(self, name) is FAMILY_DEFAULT:
                setattr(self, name, copy.deepcopy(defaults[name]))
        if self.max_episode_frames is None:
            raise ValueError(
                f"max_episode_frames: {self.env} has no episode limit of its own (Gymnasium registers none): give one"
            )

    def algorithm_config(self) -> Any:
        """The algorithm's config dataclass with this run's hyperparameters (validated); a quality-diversity
        algorithm's descriptor_bounds, when not given, are those the behaviour in force declares on the env."""
        spec = algorithm_spec(self.algorithm)
        hyperparameters = dict(self.hyperparameters)
        if "descriptor_bounds" in spec.hyperparameter_names() and hyperparameters.get("descriptor_bounds") is None:
            hyperparameters["descriptor_bounds"] = self.descriptor_bounds()
        return spec.config_for(hyperparameters)

    def behaviour_in_force(self) -> str | None:
        """The behaviour characterisation the run's evaluator computes: the config's, else the environment family's
        default for an algorithm that needs one (novelty search: its behaviour; quality diversity: its descriptor,
        when it has one), else None."""
        spec = algorithm_spec(self.algorithm)
        if self.behaviour is None and spec.needs_behaviour:
            family = find_env_family(self.env)
            quality_diversity = "descriptor_bounds" in spec.hyperparameter_names()
            return family.descriptor if quality_diversity and family.descriptor else family.behaviour
        return self.behaviour

    def descriptor_bounds(self) -> list[list[float]]:
        """The bounds the behaviour in force declares on this run's environment (ValueError naming
        descriptor_bounds and the behaviour when it declares none)."""
        from workbench.evaluation.behaviour import behaviour_bounds

        behaviour = self.behaviour_in_force()
        bounds = behaviour_bounds(behaviour, self.env)
        if bounds is None:
            raise ValueError(
                f"descriptor_bounds: the behaviour {behaviour!r} declares no bounds on {self.env}; give them in the "
                "hyperparameters (descriptor_bounds=[[low, high], ...], one pair per descriptor dimension) or choose a "
                "behaviour that declares them (feet_contact on a MuJoCo task with feet, final_position on Ant, final_ram, "
                "player_position on Montezuma's Revenge and Frostbite)"
            )
        return bounds

    def spec(self) -> RunSpec:
        """The RunSpec of this run: environment, model, episode cap, noise table, observation normalisation."""
        from workbench.evaluation import RunSpec  # TensorFlow: this module stays light for the CLI's --help
        from workbench.models.observation_normalization import ObservationNormalization

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
        family = find_env_family(self.env)
        algorithm = algorithm_spec(self.algorithm)
        if algorithm.vector_only and not family.vector_observations:
            raise ValueError(
                f'algorithm "{self.algorithm}" is for vector observations (models "linear" and "mlp"); {self.env} is in '
                f"the {family.name} family: use {', '.join(algorithm_names(vector_only=False))}"
            )
        if isinstance(self.model, str) and self.model not in family.models:
            raise ValueError(
                f"model {self.model!r} does not fit {self.env} (the {family.name} family): its models are "
                f"{', '.join(family.models)}"
            )
        if self.observation_normalization not in (None, False) and not family.vector_observations:
            raise ValueError(
                f"observation_normalization is for vector observations; {self.env} is in the {family.name} family "
                "(Atari runs normalise hidden layers with virtual_batch_norm)"
            )
        if self.init_from is not None:
            if not algorithm.has_center:
                raise ValueError(
                    f'init_from: algorithm "{self.algorithm}" cannot start from a run\'s weights (it has '
                    f"no center); {', '.join(algorithm_names(has_center=True))} can"
                )

    def reference_batch(self) -> np.ndarray | None:
        """The run's reference batch for virtual batch normalisation (128 observations of random play drawn from
        the run's seed), or None without it."""
        return self.spec().collect_reference_batch(REFERENCE_BATCH_SIZE, self.seed) if self.virtual_batch_norm else None

    def build(self, reference_batch: np.ndarray | None = None) -> tuple[Strategy, BaseEvaluator]:
        """(strategy, evaluator) of this configuration; reference_batch: a checkpoint's, instead of collecting one."""
        from workbench.evaluation import make_evaluator

        config = self.algorithm_config()  # validate before building anything heavy
        self.check()
        spec = self.spec()
        if self.virtual_batch_norm:
            reference = self.reference_batch() if reference_batch is None else reference_batch
            spec = dataclasses.replace(spec, reference_batch=reference)
        layout = self.layout(self.behaviour_in_force())
        evaluator: BaseEvaluator
        if self.ray or self.ray_address is not None:
            from workbench.evaluation.ray_evaluator import RayEvaluator

            evaluator = RayEvaluator.from_spec(spec, layout, actors=self.ray_actors, address=self.ray_address)
        else:
            evaluator = make_evaluator(spec, layout)
        strategy_class = algorithm_spec(self.algorithm).strategy
        try:
            return strategy_class(config, evaluator.space, seed=self.seed), evaluator
        except BaseException:
            evaluator.close()
            raise

    def to_json(self) -> dict:
        """The config as JSON data; an Atari model's flatten order is written out (run directories written before
        it existed are read as "channels_last" by from_run_dir)."""
        from workbench.evaluation.run_spec import ATARI_MODELS
        from workbench.models.atari import DEFAULT_FLATTEN

        data = dataclasses.asdict(self)
        if self.model in ATARI_MODELS:
            data["model_options"].setdefault("flatten", DEFAULT_FLATTEN)
        return data

    @classmethod
    def resolve(
        cls, preset: str | None = None, *, config: str | Mapping[str, Any] | None = None, cores: int | None = None, **fields: Any
    ) -> RunConfig:
        """The run that `preset`, a config file (its path, or its data as a dict), the init_from run and `fields`
        describe together, each over the ones before it, on the environment family's defaults: the same run the
        command line builds from the same words (workbench.training.resolve says the precedence and its rules).
        The Atari pc preset is sized for `cores` cores (default: this machine's)."""
        from workbench.training.resolve import resolve_run

        return resolve_run(preset, config=config, cores=cores, **fields).config

    @classmethod
    def from_preset(cls, name: str, algorithm: str = "ga", cores: int | None = None, **fields: Any) -> RunConfig:
        """RunConfig.resolve(name, algorithm=algorithm, cores=cores, **fields): preset `name`'s hyperparameters and
        layout for `algorithm`, overridden by `fields` (hyperparameters merge)."""
        return cls.resolve(name, cores=cores, algorithm=algorithm, **fields)

    @classmethod
    def from_run_dir(cls, run_dir: str) -> RunConfig:
        """The config.json of a run directory (CheckpointError when it is missing or corrupt)."""
        from workbench.evaluation.run_spec import ATARI_MODELS

        run_dir = check_path("run_dir", run_dir)
        try:
            with open(os.path.join(run_dir, "config.json")) as f:
                data = json.load(f)
            if isinstance(data, dict):  # what a config.json without a field meant when it was written
                data = dict(STORED_DEFAULTS, **data)
            if (
                isinstance(data, dict)
                and data.get("model") in ATARI_MODELS
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
