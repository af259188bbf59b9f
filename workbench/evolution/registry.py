"""The algorithm registry: one AlgorithmSpec per algorithm name, the only place an algorithm is declared.

    spec = algorithm_spec("nsr-es")        # ValueError listing the names (and close matches) for an unknown one
    spec.strategy, spec.config, spec.defaults  # NoveltySearchES, NoveltyConfig, {"reward_weight": 0.5}
    spec.config_for({"sigma": 0.01})          # the validated config: the dataclass's defaults, the name's, the changes

Everything above the evolution layer reads it: the run configuration (which strategy and config a name
builds, which traits it has), the presets (which preset group's settings a name takes), the command line (choices),
the dashboard and the strategy contract test. Adding an algorithm is a module with its Strategy and config
dataclass, and one register() call (the built-in ones are registered at the end of this module).

Traits:
  preset_group     the group whose preset settings a name takes ("ga", "es", "ars", "pgpe", "cma": the CMA family
                   and the other adapted-Gaussian strategies, SNES and CEM; "qd": MAP-Elites; "cma-qd": CMA-ME and
                   CMA-MAE; an environment
                   family's presets give settings per group)
  has_center       a weight vector the search moves (it can start from another run's weights: init_from)
  vector_only      for vector observations only (not Atari screens)
  needs_behaviour  a behaviour characterisation per episode (novelty search; quality diversity's descriptors)
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from workbench.evolution.ars import ARSConfig, AugmentedRandomSearch
from workbench.evolution.cem import CEM, CEMConfig
from workbench.evolution.cma_es import CMAES, CMAConfig, SepCMAES
from workbench.evolution.cma_me import CMAME, CMAMEConfig
from workbench.evolution.crfmnes import CRFMNES, CRFMNESConfig
from workbench.evolution.es import ESConfig, EvolutionStrategy
from workbench.evolution.ga import GAConfig, GeneticAlgorithm
from workbench.evolution.map_elites import MapElites, MapElitesConfig
from workbench.evolution.novelty import NoveltyConfig, NoveltySearchES
from workbench.evolution.pgpe import PGPE, PGPEConfig
from workbench.evolution.snes import SNES, SNESConfig
from workbench.evolution.strategy import Strategy, check_known_fields
from workbench.evolution.xnes import XNES


@dataclasses.dataclass(frozen=True)
class AlgorithmSpec:
    """One algorithm name: its Strategy class, its config dataclass, the defaults the name sets, its traits."""

    name: str
    strategy: type[Strategy]
    config: type
    description: str
    preset_group: str
    defaults: Mapping[str, Any] = dataclasses.field(default_factory=dict)  # config fields the name sets
    has_center: bool = False
    vector_only: bool = False
    needs_behaviour: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name or self.name != self.name.strip().lower():
            raise ValueError(f"an algorithm name is a non-empty lower-case string, got {self.name!r}")
        if not (isinstance(self.strategy, type) and issubclass(self.strategy, Strategy)):
            raise ValueError(f"{self.name}: strategy must be a Strategy subclass, got {self.strategy!r}")
        if not dataclasses.is_dataclass(self.config) or not hasattr(self.config, "validated"):
            raise ValueError(f"{self.name}: config must be a dataclass with validated(), got {self.config!r}")
        unknown = set(self.defaults) - set(self.hyperparameter_names())
        if unknown:
            raise ValueError(f"{self.name}: defaults {sorted(unknown)} are not fields of {self.config.__name__}")
        object.__setattr__(self, "defaults", MappingProxyType(dict(self.defaults)))

    def hyperparameter_names(self) -> tuple[str, ...]:
        """The fields of the config dataclass, in their order."""
        return tuple(field.name for field in dataclasses.fields(self.config))

    def config_for(self, hyperparameters: Mapping[str, Any] | None = None) -> Any:
        """The validated config: the dataclass's defaults, then the name's, then `hyperparameters` (ValueError
        naming unknown names)."""
        hyperparameters = dict(hyperparameters or {})
        check_known_fields(self.config, hyperparameters, owner=self.name)
        return self.config(**dict(self.defaults, **hyperparameters)).validated()


ALGORITHMS: dict[str, AlgorithmSpec] = {}


def register(spec: AlgorithmSpec) -> AlgorithmSpec:
    """Adds `spec` to the registry (ValueError when its name is taken); returns it."""
    if not isinstance(spec, AlgorithmSpec):
        raise ValueError(f"register takes an AlgorithmSpec, got {type(spec).__name__}")
    if spec.name in ALGORITHMS:
        raise ValueError(f"algorithm {spec.name!r} is registered already")
    ALGORITHMS[spec.name] = spec
    return spec


def unregister(name: str) -> None:
    """Removes `name` from the registry (a test's toy algorithm); KeyError when it is not there."""
    del ALGORITHMS[name]


def algorithm_names(**traits: Any) -> list[str]:
    """The registered names, sorted; with traits (e.g. has_center=True), only the names that have them."""
    return sorted(
        name for name, spec in ALGORITHMS.items() if all(getattr(spec, trait) == value for trait, value in traits.items())
    )


def algorithm_spec(name: str, argument: str = "algorithm") -> AlgorithmSpec:
    """The spec of `name`; ValueError naming `argument`, the registered names and the close matches otherwise."""
    spec = ALGORITHMS.get(name) if isinstance(name, str) else None
    if spec is None:
        close = difflib.get_close_matches(str(name), list(ALGORITHMS), n=3)
        raise ValueError(
            f"{argument} must be one of {algorithm_names()}, got {name!r}"
            + (f" (did you mean {' or '.join(close)}?)" if close else "")
        )
    return spec


for _spec in (
    AlgorithmSpec("ga", GeneticAlgorithm, GAConfig, "the Deep GA: truncation selection, seed-chain genomes", "ga"),
    AlgorithmSpec(
        "random",
        GeneticAlgorithm,
        GAConfig,
        "random search: the GA with no parents (truncation 0)",
        "ga",
        defaults={"truncation": 0},
    ),
    AlgorithmSpec("es", EvolutionStrategy, ESConfig, "OpenAI-ES: mirrored sampling, centered ranks, Adam", "es", has_center=True),
    AlgorithmSpec(
        "ns-es",
        NoveltySearchES,
        NoveltyConfig,
        "NS-ES: ES on novelty, a meta-population of centers",
        "es",
        defaults={"reward_weight": 0.0},
        has_center=True,
        needs_behaviour=True,
    ),
    AlgorithmSpec(
        "nsr-es",
        NoveltySearchES,
        NoveltyConfig,
        "NSR-ES: ES on novelty and reward, ranked half and half",
        "es",
        defaults={"reward_weight": 0.5},
        has_center=True,
        needs_behaviour=True,
    ),
    AlgorithmSpec(
        "ars",
        AugmentedRandomSearch,
        ARSConfig,
        "ARS: top-b directions, steps scaled by the reward std",
        "ars",
        has_center=True,
        vector_only=True,
    ),
    AlgorithmSpec(
        "pgpe", PGPE, PGPEConfig, "PGPE with ClipUp: learned per-parameter sigma", "pgpe", has_center=True, vector_only=True
    ),
    AlgorithmSpec(
        "cma-es",
        CMAES,
        CMAConfig,
        "CMA-ES: full covariance, rank-one and rank-mu updates (a few thousand parameters)",
        "cma",
        has_center=True,
    ),
    AlgorithmSpec("sep-cma-es", SepCMAES, CMAConfig, "sep-CMA-ES: diagonal covariance, any network size", "cma", has_center=True),
    AlgorithmSpec(
        "snes", SNES, SNESConfig, "SNES: separable natural evolution strategy, per-parameter sigma", "cma", has_center=True
    ),
    AlgorithmSpec("cem", CEM, CEMConfig, "CEM: the cross-entropy method with a diagonal Gaussian", "cma", has_center=True),
    AlgorithmSpec(
        "xnes", XNES, CMAConfig, "xNES: full covariance by natural gradients (a few thousand parameters)", "cma", has_center=True
    ),
    AlgorithmSpec(
        "cr-fm-nes",
        CRFMNES,
        CRFMNESConfig,
        "CR-FM-NES: diagonal plus rank-one covariance, linear in n (a million parameters)",
        "cma",
        has_center=True,
    ),
    AlgorithmSpec(
        "map-elites",
        MapElites,
        MapElitesConfig,
        "MAP-Elites: an archive of the best genome per descriptor cell, Gaussian or Iso+LineDD variation",
        "qd",
        needs_behaviour=True,
    ),
    AlgorithmSpec(
        "cma-me",
        CMAME,
        CMAMEConfig,
        "CMA-ME: CMA-ES emitters ranked by what entered the archive, restarted when nothing did",
        "cma-qd",
        has_center=True,
        needs_behaviour=True,
    ),
    AlgorithmSpec(
        "cma-mae",
        CMAME,
        CMAMEConfig,
        "CMA-MAE: CMA-ES emitters climbing soft archive thresholds (archive learning rate 0.01)",
        "cma-qd",
        defaults={"ranker": "imp", "selection_rule": "mu", "restart_rule": "basic", "archive_learning_rate": 0.01},
        has_center=True,
        needs_behaviour=True,
    ),
):
    register(_spec)
