"""The one resolver of a run: from a preset, a config file, a run to start from and explicit fields to a RunConfig.

    config = RunConfig.resolve("pc", env="HalfCheetah-v5", algorithm="ars")   # the notebook's door
    python -m workbench train --preset pc --env HalfCheetah-v5 --algo ars ...   # the command line's: the same run

Precedence, lowest first; each source overrides the ones before it, field by field (hyperparameters merge
name by name):

  1. the environment family's defaults   model, model options, observation normalisation and episode cap
                                         (EnvFamily.run_defaults), for the fields no source below gives
  2. the preset                          preset_fields(preset, algorithm, env, cores)
  3. the config file                     a RunConfig as JSON (a path, or its data as a dict)
  4. the init_from run                   its model, model options and observation normalisation
                                         (warm_start.inherited_fields), so that its weights mean the same here
  5. the explicit fields                 keyword arguments; on the command line, the options

Two rules hold across sources. Model options go with the model they were chosen for: a source that sets a
different model without model options drops the options below it. observation_normalization=True turns the
normalisation on with the options below it when they have some (a preset's fraction and clip), else with the
defaults; None turns it off.

The environment and the algorithm the preset and the family are asked for are the highest source's that gives
them (RunConfig's defaults otherwise: frostbite, ga). Errors name the field and the source of its value, and
unknown fields get close matches.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Mapping
from typing import Any

from workbench.checks import check_annotated, check_int, close_matches
from workbench.envs import FAMILY_FIELDS, find_env_family
from workbench.evolution import ALGORITHMS, algorithm_spec
from workbench.training.checkpoint import CheckpointError
from workbench.training.presets import preset_fields
from workbench.training.run_config import RunConfig

__all__ = ["ResolvedRun", "resolve_run"]

OPTIONS = "options"  # the source name of the explicit fields


@dataclasses.dataclass(frozen=True)
class ResolvedRun:
    """A resolved run: the RunConfig and, per field (hyperparameters as "hyperparameters.NAME"), the source its
    value came from ("preset 'pc'", "config file x.json", "init_from runs/a", "options", "the atari family's
    defaults"); fields with RunConfig's own defaults are not listed."""

    config: RunConfig
    sources: Mapping[str, str]

    def family_defaults(self) -> dict[str, Any]:
        """The fields the environment family chose, with their values."""
        return {name: getattr(self.config, name) for name, source in self.sources.items() if source.endswith("family's defaults")}


def _config_data(config: str | Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """(source name, data) of a config file given by path or as data; ValueError naming it when it cannot be read."""
    if isinstance(config, Mapping):
        return "config", dict(config)
    if not isinstance(config, str | os.PathLike):
        raise TypeError(f"config must be a path to a JSON file or a dict, got {type(config).__name__}")
    name = f"config file {os.fspath(config)}"
    try:
        with open(config) as f:
            data = json.load(f)
    except (OSError, json.JSONDecodeError) as error:
        raise ValueError(f"{name}: {error}") from error
    if not isinstance(data, dict):
        raise ValueError(f"{name}: a run config is a JSON object, got {type(data).__name__}")
    return name, data


def _check_names(source: str, data: Mapping[str, Any]) -> None:
    """ValueError naming `source` and the close field names for a name that is no RunConfig field."""
    known = [field.name for field in dataclasses.fields(RunConfig)]
    for name in data:
        if name not in known:
            if any(name in spec.hyperparameter_names() for spec in ALGORITHMS.values()):
                hint = f" (it is a hyperparameter: give hyperparameters={{{name!r}: ...}})"
            else:
                close = close_matches(str(name), known, count=3)
                hint = f" (did you mean {' or '.join(close)}?)" if close else ""
            raise ValueError(f"{source}: {name!r} is not a run config field{hint}")
    if "hyperparameters" in data and not isinstance(data["hyperparameters"], Mapping):
        raise TypeError(f"{source}: hyperparameters must be a dict, got {type(data['hyperparameters']).__name__}")


def _merge(layers: list[tuple[str, Mapping[str, Any]]]) -> tuple[dict[str, Any], dict[str, str]]:
    """The fields of `layers` (lowest first) merged by the module's rules, and each field's source."""
    merged: dict[str, Any] = {}
    sources: dict[str, str] = {}
    hyperparameters: dict[str, Any] = {}
    for source, layer in layers:
        for name, value in layer.items():
            if name == "hyperparameters":
                for key, setting in value.items():
                    hyperparameters[key] = setting
                    sources[f"hyperparameters.{key}"] = source
                continue
            if name == "model" and "model" in merged and value != merged["model"] and "model_options" not in layer:
                merged.pop("model_options", None)  # chosen for the model below
                sources.pop("model_options", None)
            if name == "observation_normalization" and value is True and isinstance(merged.get(name), Mapping):
                continue  # on, with the options below
            merged[name] = value
            sources[name] = source
    if hyperparameters:
        merged["hyperparameters"] = hyperparameters
    return merged, sources


def _named(error: Exception, sources: Mapping[str, str]) -> Exception:
    """`error` with the source of the field it names (the longest field name found in its message)."""
    message = str(error)
    for name in sorted(sources, key=len, reverse=True):
        short = name.removeprefix("hyperparameters.")
        if short in message:
            return type(error)(f"{message} (from {sources[name]})")
    return error


def resolve_run(
    preset: str | None = None, *, config: str | Mapping[str, Any] | None = None, cores: int | None = None, **fields: Any
) -> ResolvedRun:
    """The run `preset`, `config` (a JSON file's path, or its data), the init_from run and `fields` (RunConfig
    fields) describe, by the module's precedence; `cores` sizes the Atari pc preset (default: this machine's).
    The config is validated (hyperparameters, and whether the algorithm, model and environment go together)."""
    _check_names(OPTIONS, fields)
    file_source, data = _config_data(config) if config is not None else ("config", {})
    _check_names(file_source, data)
    if cores is not None:
        check_int("cores", cores, 1)
        if preset is None:
            raise ValueError("cores sizes a preset: give a preset too")
    early: dict[str, str] = {
        name: OPTIONS if name in fields else file_source for name in ("env", "algorithm") if name in fields or name in data
    }
    env = fields.get("env", data.get("env", RunConfig.env))
    algorithm = fields.get("algorithm", data.get("algorithm", RunConfig.algorithm))
    try:
        algorithm_spec(algorithm)  # ValueError listing the names and close matches
        family = find_env_family(env)  # TypeError or ValueError with close matches
    except (TypeError, ValueError) as error:
        raise _named(error, early) from error
    layers: list[tuple[str, Mapping[str, Any]]] = []
    if preset is not None:
        layers.append((f"preset {preset!r}", preset_fields(preset, algorithm, env, cores)))
    if data:
        layers.append((file_source, data))
    init_from = fields.get("init_from", data.get("init_from"))
    if init_from is not None:
        check_annotated("init_from", init_from, "str | None")
        from workbench.training.warm_start import inherited_fields  # reads the source's config.json

        try:
            inherited = inherited_fields(init_from)
        except CheckpointError as error:
            raise ValueError(f"init_from {init_from!r} is not a run directory: {error}") from error
        layers.append((f"init_from {init_from}", inherited))
    layers.append((OPTIONS, fields))
    merged, sources = _merge(layers)
    for name in FAMILY_FIELDS:
        if name not in merged:
            sources[name] = f"the {family.name} family's defaults"
    try:
        resolved = RunConfig(**merged)
        resolved.algorithm_config()  # the hyperparameters, validated
        resolved.check()
    except (TypeError, ValueError) as error:
        raise _named(error, sources) from error
    return ResolvedRun(resolved, sources)
