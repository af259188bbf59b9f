"""Named presets of hyperparameters and evaluator layout: the papers' settings, and settings for a personal computer.

    config = RunConfig.from_preset("pc", algorithm="ga", env="frostbite")   # then override any field
    python -m workbench train --preset pc --game frostbite --algo ga --minutes 30 --out runs/frostbite

  paper     the papers' settings
  pc        scaled to a 2-core computer (on Atari, to this machine's cores)
  tutorial  the small settings of the notebooks

Each environment family declares its presets (EnvFamily.presets: workbench/envs/atari/presets.py and
workbench/envs/mujoco/presets.py hold the values, their sources and what they learn); Gymnasium ids have none.
A family gives settings per preset group (the algorithm registry's `preset_group`); this module fits them to
one algorithm: the names the algorithm sets itself win (random search's truncation 0), and settings its config
does not have are left out (the novelty searches' meta_population_size, for ES).
"""

from __future__ import annotations

from typing import Any

from workbench.checks import check_int, close_matches
from workbench.envs import find_env_family
from workbench.envs.atari.presets import MAX_PC_CORES, PC_CORES, machine_cores, scaled_to_cores
from workbench.evolution import ALGORITHMS, algorithm_spec

PRESET_NAMES = ("paper", "pc", "tutorial")

# Each preset's revision, raised whenever its values change, so that a result names the values it was made with
# (the Atari suite puts it in each line and in its run folders' names: experiments/atari_suite.py).
PRESET_REVISIONS = {"paper": 1, "pc": 1, "tutorial": 1}

__all__ = [
    "MAX_PC_CORES",
    "PC_CORES",
    "PRESET_NAMES",
    "PRESET_REVISIONS",
    "machine_cores",
    "preset_fields",
    "scaled_to_cores",
]


def preset_fields(name: str, algorithm: str, env: str, cores: int | None = None) -> dict[str, Any]:
    """The RunConfig fields of preset `name` for `algorithm` on `env`: hyperparameters and the evaluator's layout
    (and whatever else the environment family's presets set: the model and observation normalisation on MuJoCo,
    virtual batch normalisation for ES on Atari). The Atari pc preset is sized for `cores` (default: this
    machine's). ValueError naming the preset, algorithm or environment that do not go together."""
    if name not in PRESET_NAMES:
        close = close_matches(str(name), PRESET_NAMES, count=2) if isinstance(name, str) else []
        hint = f" (did you mean {' or '.join(close)}?)" if close else ""
        raise ValueError(f"preset must be one of {', '.join(map(repr, PRESET_NAMES))}, got {name!r}{hint}")
    if cores is not None:
        check_int("cores", cores, 1)  # also where the preset does not scale: a bad value is never ignored
    spec, family = algorithm_spec(algorithm), find_env_family(env)
    if family.presets is None:
        raise ValueError(
            f"preset {name!r}: {env} is in the {family.name} family, which has no presets; give the hyperparameters "
            "(the algorithm's defaults otherwise)"
        )
    if spec.vector_only and not family.vector_observations:
        covered = [n for n in sorted(ALGORITHMS) if not ALGORITHMS[n].vector_only]
        raise ValueError(
            f'algorithm "{algorithm}" is for vector observations; {env} is in the {family.name} family: its presets '
            f"cover {', '.join(covered)}"
        )
    try:
        fields = family.presets(name, env, spec.preset_group, cores)
    except KeyError as error:
        raise ValueError(
            f"preset {name!r} of the {family.name} family has no settings for {algorithm}'s group {spec.preset_group!r}"
        ) from error
    names = spec.hyperparameter_names()
    hyperparameters = {
        key: value for key, value in fields.get("hyperparameters", {}).items() if key in names and key not in spec.defaults
    }
    return dict(fields, hyperparameters=hyperparameters)
