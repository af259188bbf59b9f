"""RunSpec: what a genome needs to mean the same agent anywhere: environment, model, episode cap, noise table.

    spec = RunSpec("frostbite", "small", max_episode_frames=20_000)
    batch = spec.make_batch(16)                  # the environments, capped as the spec says
    model = spec.build_model(batch, slots=16)    # the population model for that batch
    space = spec.space()                         # genomes' parameter space (noise table + layer shapes)

An evaluator exposes the spec it was built from (`evaluator.spec`); replays, the
agent viewer and Ray actors rebuild environments, models and spaces from it
alone, and a run's RunConfig produces it. It is JSON-able (to_json / from_json)
unless the model is a callable.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from workbench.checks import check_int, check_optional_positive_int, check_real, check_type
from workbench.envs import EnvBatch, EnvFamily, find_env_family, make_batch
from workbench.evaluation import spec_cache
from workbench.evolution.noise import DEFAULT_SEED, DEFAULT_SIZE, NoiseTable
from workbench.evolution.space import ParameterSpace
from workbench.models import LargeModel, MLPModel, PopulationModel, SmallModel
from workbench.models.observation_normalization import ObservationNormalization, ObservationStatistics

ATARI_MODELS = ("small", "large")  # SmallModel, LargeModel (workbench.models.atari)
VECTOR_MODEL = "vector"  # no network: the weights are the parameter vector of a function problem
MODELS = ATARI_MODELS + ("mlp", "linear", VECTOR_MODEL)
ModelSpec = str | Callable[..., PopulationModel]


def _check_model_options(model: str, options: Mapping) -> None:
    """A TypeError naming the keys of model_options that built-in `model` does not take (the keywords of its class
    and of PopulationModel, but those build_model sets itself)."""
    model_class: type[PopulationModel] = {"small": SmallModel, "large": LargeModel, "mlp": MLPModel, "linear": MLPModel}[model]
    taken = {
        name
        for constructor in (model_class, PopulationModel)
        for name, parameter in inspect.signature(constructor).parameters.items()
        if parameter.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    } - {"self", "layers", "input_shape", "observation_size", "num_actions", "slots", "action_range"}
    unknown = sorted(set(options) - taken)
    if unknown:
        raise TypeError(f"model_options {unknown} are not options of model {model!r}; it takes {sorted(taken)}")


def build_model(model: ModelSpec, env: EnvBatch, slots: int, model_options: Mapping | None = None) -> PopulationModel:
    """A PopulationModel for env: "small", "large", "mlp", "linear" or a callable(observation_shape, num_actions, slots)
    ("vector", a function problem's, has none: ValueError).

    "mlp" has ReLU between its layers for discrete actions and tanh for continuous ones (OpenAI-ES's policy;
    model_options' activation wins); "linear" is an MLP without hidden layers (ARS's policy).
    """
    options = dict(model_options or {})
    if model == VECTOR_MODEL:
        raise ValueError(
            f'model "{VECTOR_MODEL}" is a function problem\'s parameter vector: it has no network to build for '
            f"{type(env).__name__}; use one of {', '.join(m for m in MODELS if m != VECTOR_MODEL)}"
        )
    if isinstance(model, str) and model in MODELS:
        _check_model_options(model, options)
    if callable(model) and not isinstance(model, str):
        network = model(tuple(env.observation_shape), env.num_actions, slots, **options)
    elif model in ATARI_MODELS:
        if len(env.observation_shape) != 3:
            raise ValueError(f'model "{model}" is an Atari network; for {type(env).__name__} use model="mlp"')
        if env.num_actions is None:
            raise ValueError(
                f'model "{model}" is an Atari network for discrete actions; {type(env).__name__} has '
                'continuous ones: use model="mlp"'
            )
        network = (SmallModel if model == "small" else LargeModel)(num_actions=env.num_actions, slots=slots, **options)
    elif model in ("mlp", "linear"):
        if len(env.observation_shape) != 1:
            raise ValueError(f'model "{model}" needs vector observations, got shape {tuple(env.observation_shape)}')
        if model == "linear":
            if "hidden_sizes" in options:
                raise ValueError('model "linear" has no hidden layers: leave hidden_sizes out (or use model="mlp")')
            options["hidden_sizes"] = ()
        if env.continuous_actions:
            options.setdefault("activation", "tanh")
            assert env.action_size is not None, "a continuous batch declares its action size"
            network = MLPModel(
                env.observation_shape[0], env.action_size, slots=slots, action_range=(env.action_low, env.action_high), **options
            )
        else:
            assert env.num_actions is not None, "a discrete batch declares its action count"
            network = MLPModel(env.observation_shape[0], env.num_actions, slots=slots, **options)
    else:
        raise ValueError(f"model must be one of {MODELS} or a callable(observation_shape, num_actions, slots), got {model!r}")
    if not isinstance(network, PopulationModel):
        raise TypeError(f"the model callable must return a PopulationModel, got {type(network).__name__}")
    if (
        network.input_shape != tuple(env.observation_shape)
        or network.num_actions != env.num_actions
        or network.action_size != env.action_size
    ):
        model_actions, env_actions = (
            f"{network.num_actions} actions" if network.action_size is None else f"actions of size {network.action_size}",
            f"{env.num_actions} actions" if not env.continuous_actions else f"actions of size {env.action_size}",
        )
        raise ValueError(
            f"the model takes {network.input_shape} -> {model_actions}, the environment "
            f"gives {tuple(env.observation_shape)} and {env_actions}"
        )
    return network


_SPEC_CAP = object()  # make_batch's default: the spec's own episode cap


@dataclasses.dataclass(frozen=True)
class RunSpec:
    """The environment and model genomes are evaluated in, and the noise table they index.

    env: an Atari game ("pong", "ALE/Pong-v5"), a MuJoCo task, a Gymnasium id ("CartPole-v1") or a function
      problem ("rastrigin-100": workbench.envs.function).
    model: "small" / "large" (Atari), "mlp" / "linear" (vector observations), "vector" (a function problem's
      parameter vector) or a callable
      (observation_shape, num_actions, slots, **model_options) -> PopulationModel.
    env_options: keywords of the environment batch (AtariBatch: frame_skip, noop_max, ...).
    model_options: keywords of the model (hidden_sizes, weight_dtype, ...).
    max_episode_frames: the episode cap the environments are built with (Atari: frames, no-ops
      included; Gymnasium: steps); None = the environment's own. A live cap can only be lower.
    noise_size, noise_seed: the shared noise table (workbench.evolution.NoiseTable).
    reference_batch: observations [n] + observation shape for virtual batch normalisation of the
      models (collect_reference_batch(); workbench/models/virtual_batch_norm.py); None = off. It is not
      part of to_json(): a run keeps it in its checkpoints.
    observation_normalization: None, or the options of normalising observations by running statistics
      (a dict of ObservationNormalization's fields; workbench/models/observation_normalization.py).
    observation_statistics: the ObservationStatistics the models normalise by (None: the identity); run
      state like reference_batch, so not part of to_json() (checkpoints hold it; with_observation_statistics()).
    """

    env: str
    model: ModelSpec = "small"
    env_options: Mapping = dataclasses.field(default_factory=dict)
    model_options: Mapping = dataclasses.field(default_factory=dict)
    max_episode_frames: int | None = None
    noise_size: int = DEFAULT_SIZE
    noise_seed: int = DEFAULT_SEED
    reference_batch: np.ndarray | None = dataclasses.field(default=None, compare=False, repr=False)
    observation_normalization: Mapping | None = None
    observation_statistics: ObservationStatistics | None = dataclasses.field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        check_type("env", self.env, str, "a game or Gymnasium id string")
        if not (callable(self.model) or self.model in MODELS):
            raise ValueError(
                f"model must be one of {MODELS} or a callable(observation_shape, num_actions, slots), got {self.model!r}"
            )
        for name in ("env_options", "model_options"):
            options = getattr(self, name) or {}
            check_type(name, options, Mapping, "a dict of keyword arguments")
            if "max_episode_frames" in options or "seed" in options:
                raise ValueError(f"{name} must not hold max_episode_frames or seed: they are set by the spec and the evaluator")
            object.__setattr__(self, name, dict(options))
        check_optional_positive_int("max_episode_frames", self.max_episode_frames)
        check_int("noise_size", self.noise_size, 1, 2**32)
        check_int("noise_seed", self.noise_seed, 0)
        if self.reference_batch is not None:
            object.__setattr__(self, "reference_batch", np.array(self.reference_batch))
            self.reference_batch.setflags(write=False)
        normalization = ObservationNormalization.from_options(self.observation_normalization)
        object.__setattr__(self, "observation_normalization", None if normalization is None else normalization.to_json())
        if self.observation_statistics is not None:
            check_type("observation_statistics", self.observation_statistics, ObservationStatistics)
            if normalization is None:
                raise ValueError("observation_statistics need observation_normalization")

    @property
    def normalization(self) -> ObservationNormalization | None:
        """The observation normalisation options (None: off)."""
        return ObservationNormalization.from_options(self.observation_normalization)

    def with_observation_statistics(self, statistics: ObservationStatistics | None) -> RunSpec:
        """The same spec normalising by other statistics."""
        return dataclasses.replace(self, observation_statistics=statistics)

    @property
    def family(self) -> EnvFamily:
        """The environment family of `env` (workbench.envs.find_env_family): what differs between Atari games,
        MuJoCo tasks and other Gymnasium ids."""
        return find_env_family(self.env)

    def noise(self) -> NoiseTable:
        """The process-wide noise table of this spec (built on first use)."""
        return NoiseTable.shared(self.noise_size, self.noise_seed)

    def make_batch(
        self, batch_size: int, *, seed: int = 0, max_episode_frames: Any = _SPEC_CAP, **extra_options: Any
    ) -> EnvBatch:
        """batch_size environments of this spec (episode cap: the spec's unless given; extra options win)."""
        cap = self.max_episode_frames if max_episode_frames is _SPEC_CAP else max_episode_frames
        options = dict(self.env_options, **extra_options)
        if cap is not None:
            options["max_episode_frames"] = cap
        return make_batch(self.env, batch_size, seed=seed, **options)

    def build_model(self, batch: EnvBatch, slots: int, **option_overrides: Any) -> PopulationModel:
        """The population model of this spec for `batch`, with `slots` weight slots."""
        options = dict(self.model_options, **option_overrides)
        if self.reference_batch is not None:
            options["reference_batch"] = self.reference_batch
        normalization = self.normalization
        if normalization is not None:
            options["observation_normalization"] = normalization
        model = build_model(self.model, batch, slots, options)
        if normalization is not None:
            model.set_observation_statistics(self.observation_statistics)
        return model

    def collect_reference_batch(self, size: int = 128, seed: int = 0, probability: float = 0.05) -> np.ndarray:
        """Observations of random play for virtual batch normalisation: each step's observation is kept with
        `probability` until `size` are kept (uniform random actions; deterministic given `seed`)."""
        check_int("size", size, 2)
        check_real("probability", probability, 0, 1, low_open=True)
        rng = np.random.default_rng(seed)
        batch = self.make_batch(1, seed=seed)
        kept: list[np.ndarray] = []
        try:
            observation = batch.reset()
            while len(kept) < size:
                if rng.random() < probability:
                    kept.append(observation[0])
                action: np.ndarray | list[int]
                if batch.continuous_actions:
                    low, high = batch.action_low, batch.action_high
                    assert low is not None and high is not None, "a continuous batch declares its action bounds"
                    action = rng.uniform(low, high)[None].astype(np.float32)
                else:
                    assert batch.num_actions is not None, "a discrete batch declares its action count"
                    action = [int(rng.integers(batch.num_actions))]
                _, done = batch.step([0], action)
                observation = batch.reset() if done[0] else batch.observation([0])
        finally:
            batch.close()
        return np.stack(kept)

    def observation_shape(self) -> tuple[int, ...]:
        """The shape of one observation of this spec's environment (read from a one-environment batch, once per
        process: spec_cache.py)."""

        def read() -> tuple[int, ...]:
            batch = self.make_batch(1)
            try:
                return tuple(int(d) for d in batch.observation_shape)
            finally:
                batch.close()

        return spec_cache.observation_shape(self, read)

    def space(self, model: PopulationModel | None = None) -> ParameterSpace:
        """The genomes' parameter space: the model's layers over this spec's noise table.

        Without a model, one is built with one slot (on a one-environment batch) to read its layers, once per
        process (spec_cache.py); a family with an evaluator of its own (function problems) says its space.
        """
        if model is not None:
            return ParameterSpace.for_model(model, self.noise())
        evaluator_module = self.evaluator_module()
        if evaluator_module is not None:
            return evaluator_module.space(self)

        def build() -> ParameterSpace:
            batch = self.make_batch(1)
            try:
                return ParameterSpace.for_model(self.build_model(batch, 1), self.noise())
            finally:
                batch.close()

        return spec_cache.space(self, build)

    def evaluator_module(self) -> Any:
        """The module of workbench.evaluation that evaluates this spec's family (EnvFamily.evaluator), or None:
        the pipelined Evaluator."""
        name = self.family.evaluator
        return None if name is None else importlib.import_module(f"workbench.evaluation.{name}")

    def with_max_episode_frames(self, frames: int | None) -> RunSpec:
        """The same spec with another built-in episode cap."""
        return dataclasses.replace(self, max_episode_frames=frames)

    def to_json(self) -> dict:
        if not isinstance(self.model, str):
            raise ValueError("a RunSpec with a model callable cannot be written as JSON; register it by name")
        return {
            field.name: getattr(self, field.name)
            for field in dataclasses.fields(self)
            if field.name not in ("reference_batch", "observation_statistics")
        }

    @classmethod
    def from_json(cls, data: Mapping) -> RunSpec:
        check_type("data", data, Mapping, "a dict")
        unknown = set(data) - {field.name for field in dataclasses.fields(cls)}
        if unknown:
            raise ValueError(f"unknown run spec fields {sorted(unknown)}")
        return cls(**data)
