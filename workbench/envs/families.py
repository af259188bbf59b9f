"""The environment-family registry: one EnvFamily per kind of environment, the only place a family is declared.

    family = find_env_family("ALE/Pong-v5")   # EnvFamily "atari"; ValueError with close matches for an unknown name
    family.batch("pong", 16, seed=0)            # its EnvBatch
    family.run_defaults("pong", "ga")           # the RunConfig fields a run takes when nobody chose them

Everything that differs between Atari games, MuJoCo tasks and other Gymnasium ids is a field here, read by
the layers above instead of naming a family: which names a family recognises, its batch class (and through it
the ops library), the models that fit its observations, a run's default model, model options, observation
normalisation and episode cap (run_defaults: per algorithm preset group, the registry's `preset_group`), its
presets (settings per preset name and preset group), the behaviour characterisation novelty search uses by
default, its test protocols and what a test records, and the batch options of a replay. A family is a
subpackage of workbench.envs that ends with one register_env_family() call (workbench/envs/atari/,
mujoco/, gymnasium/; docs/architecture.md says how to add one).

Names are claimed once: a family recognising a name another family already recognises is refused (checked
at registration once the registry is in use, and for the built-in families at the first lookup, so that
importing workbench.envs stays light). A fallback family (Gymnasium: any registered id) is asked last and
claims what the others leave.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType
from typing import Any

from workbench.checks import close_matches
from workbench.envs.batch import EnvBatch

# RunConfig fields a family chooses when nobody else did (run_defaults returns each of them)
FAMILY_FIELDS = ("model", "model_options", "observation_normalization", "max_episode_frames")


@dataclasses.dataclass(frozen=True)
class ProtocolSetup:
    """How a test episode runs under a protocol: the batch options (the run's, with the protocol's on top), the
    test cap (None: the environment's own) and the protocol's name as results record it."""

    env_options: Mapping[str, Any]
    max_episode_frames: int | None
    protocol: str


def _plain_test_setup(protocol: str, env_options: Mapping[str, Any], max_episode_frames: int | None) -> ProtocolSetup:
    """A family without protocol options: the run's options and the cap given (else the environment's own),
    recorded as protocol "gymnasium"."""
    return ProtocolSetup(dict(env_options), max_episode_frames, "gymnasium")


@dataclasses.dataclass(frozen=True)
class EnvFamily:
    """One environment family.

    find(name): the family's canonical name for `name`, or None when the family does not recognise it.
    names(): the names it knows (close matches in errors; the claim check between families).
    batch: the EnvBatch class, called batch(name, batch_size, seed=..., **options); its `ops_module`, when it
      has one, names the family's ops library (workbench.ops.<module>).
    models: the built-in models (workbench.evaluation.run_spec.MODELS) its observations fit.
    vector_observations: observations are vectors (the vector-only algorithms and observation normalisation
      need them).
    run_defaults(env, preset_group): the FAMILY_FIELDS of a run of an algorithm of that preset group on `env`
      when neither the user nor a preset chose them (max_episode_frames None: the environment has no limit of
      its own, and the run must give one).
    presets(preset, env, preset_group, cores): the RunConfig fields of a preset (hyperparameters of the group,
      the evaluator's layout, and what else the family's presets set); KeyError for a preset group it has no
      settings for; None: the family has no presets.
    behaviour: novelty search's behaviour characterisation by default.
    descriptor: quality diversity's by default (a behaviour that declares bounds), or None: the same as behaviour.
    test_protocols: the protocols its tests take, the default first; test_setup(protocol, env_options, cap)
      the ProtocolSetup of one; test_behaviour: what a test records per episode besides its return (MuJoCo: the
      final position), or None.
    replay_options: batch options a replay adds (Gymnasium: render_mode "rgb_array").
    evaluator: the module of workbench.evaluation that evaluates the family's runs when the pipelined Evaluator
      cannot (the function family: "function_evaluator"); it provides from_spec(spec, layout) and space(spec).
      None: the pipelined Evaluator over the family's batches.
    environments: the family has environments to step and render (replays, elite.gif, the agent viewer); a
      function problem has none.
    fallback: asked after every other family, and exempt from the claim check (it claims what they leave).
    """

    name: str
    description: str
    find: Callable[[str], str | None]
    names: Callable[[], Iterable[str]]
    batch: Callable[..., EnvBatch]
    models: tuple[str, ...]
    vector_observations: bool
    run_defaults: Callable[[str, str], Mapping[str, Any]]
    behaviour: str
    presets: Callable[[str, str, str, int | None], dict[str, Any]] | None = None
    test_protocols: tuple[str, ...] = ("gymnasium",)
    test_setup: Callable[[str, Mapping[str, Any], int | None], ProtocolSetup] = _plain_test_setup
    test_behaviour: str | None = None
    replay_options: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    evaluator: str | None = None
    descriptor: str | None = None
    environments: bool = True
    fallback: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name or self.name != self.name.strip().lower():
            raise ValueError(f"an environment family's name is a non-empty lower-case string, got {self.name!r}")
        for field in ("find", "names", "batch", "run_defaults", "test_setup"):
            if not callable(getattr(self, field)):
                raise ValueError(f"environment family {self.name!r}: {field} must be callable")
        if not self.test_protocols:
            raise ValueError(f"environment family {self.name!r}: test_protocols must name at least one protocol")
        if self.evaluator is not None and (not isinstance(self.evaluator, str) or not self.evaluator.isidentifier()):
            raise ValueError(
                f"environment family {self.name!r}: evaluator names a module of workbench.evaluation, got {self.evaluator!r}"
            )
        object.__setattr__(self, "models", tuple(self.models))
        object.__setattr__(self, "replay_options", MappingProxyType(dict(self.replay_options)))

    @property
    def ops_module(self) -> str | None:
        """The family's ops library (a module of workbench.ops), from its batch class; None without one."""
        return getattr(self.batch, "ops_module", None)

    def make_batch(self, name: str, batch_size: int, *, seed: int = 0, **options: Any) -> EnvBatch:
        """batch_size environments of `name`, a name this family recognises."""
        return self.batch(name, batch_size, seed=seed, **options)


ENV_FAMILIES: dict[str, EnvFamily] = {}
_claims_checked = False  # the claim check ran over every registered family (it runs at the first lookup)


def _check_claims(family: EnvFamily) -> None:
    """ValueError when `family` recognises a name another (non-fallback) family recognises, or the reverse."""
    if family.fallback:
        return
    for other in ENV_FAMILIES.values():
        if other is family or other.fallback:
            continue
        for claimant, names in ((other, family.names()), (family, other.names())):
            taken = [name for name in names if claimant.find(name) is not None]
            if taken:
                owner = family if claimant is other else other
                raise ValueError(
                    f"environment families {owner.name!r} and {claimant.name!r} both recognise "
                    f"{', '.join(repr(name) for name in taken[:5])}: a name belongs to one family"
                )


def register_env_family(family: EnvFamily) -> EnvFamily:
    """Adds `family` to the registry (ValueError when its name is taken, when a second fallback family is
    registered, or when it claims another family's names); returns it. Claims are checked at the first lookup
    (find_env_family), so that importing the built-in families lists no names: a family registered before any
    lookup is refused then, one registered later at once."""
    global _claims_checked
    if not isinstance(family, EnvFamily):
        raise ValueError(f"register_env_family takes an EnvFamily, got {type(family).__name__}")
    if family.name in ENV_FAMILIES:
        raise ValueError(f"environment family {family.name!r} is registered already")
    if family.fallback and any(other.fallback for other in ENV_FAMILIES.values()):
        raise ValueError(f"environment family {family.name!r}: there is a fallback family already")
    ENV_FAMILIES[family.name] = family
    if _claims_checked:
        try:
            _check_claims(family)
        except ValueError:
            del ENV_FAMILIES[family.name]
            raise
    return family


def unregister_env_family(name: str) -> None:
    """Removes the family called `name` (a test's toy family); KeyError when there is none."""
    del ENV_FAMILIES[name]


def _ordered() -> list[EnvFamily]:
    global _claims_checked
    if not _claims_checked:
        for family in ENV_FAMILIES.values():
            _check_claims(family)
        _claims_checked = True
    return [f for f in ENV_FAMILIES.values() if not f.fallback] + [f for f in ENV_FAMILIES.values() if f.fallback]


def find_env_family(name: str) -> EnvFamily:
    """The family that recognises `name` (the fallback family last); TypeError for a non-string, ValueError with
    close matches over every family's names for an unknown one."""
    if not isinstance(name, str):
        raise TypeError(f"env must be a game, task or Gymnasium id string, got {type(name).__name__}")
    families = _ordered()
    for family in families:
        if family.find(name) is not None:
            return family
    suggestions = close_matches(name, [known for family in families for known in family.names()])
    hint = f" Did you mean: {', '.join(suggestions)}?" if suggestions else ""
    described = "; ".join(f"{family.name}: {family.description}" for family in families)
    raise ValueError(f"env {name!r} is in no environment family ({described}).{hint}")


def env_family_names() -> tuple[str, ...]:
    """The registered families' names, in the order they are asked."""
    return tuple(family.name for family in _ordered())
