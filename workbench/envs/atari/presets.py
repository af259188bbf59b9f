"""The Atari family's run defaults and presets: the papers' settings and settings for a personal computer.

  paper     the papers' Atari settings (docs/protocol.md): GA population 1,000, 20 parents, sigma 0.002,
            10 elite candidates x 30 episodes; ES population 5,000, sigma 0.02, Adam 0.01, virtual batch
            normalisation. On 2 cores one GA generation takes about half an hour.
  pc        scaled to a 2-core computer: GA population 200, 20 parents, sigma 0.005, 5 candidates x 5
            episodes, 20,000-frame training cap; ES and novelty search population 200 (100 mirrored pairs),
            the paper's sigma and learning rate, virtual batch normalisation on. The studies behind each
            value and what the preset learns: docs/learning.md and docs/atari_suite.md.
  tutorial  the small settings of the notebooks.

The pc preset scales with the machine (scaled_to_cores): the values above are for 2 cores; on c cores the
population, the parents and the episode slots per sub-population are c/2 times theirs (c from 1 to 10:
population 100 to 1,000, the paper's), so that each core keeps 8 episodes in flight and each slot plays about
6 members a generation (docs/learning.md). The elite rounds, the mutation power and the learning rate stay.
Verified on 2 cores only.

The CMA group (sep-CMA-ES) takes each preset's GA population, sigma_init 0.005 and the seeded network as its
initial mean; no paper ran it on Atari.

MAP-Elites (the "qd" group) takes each preset's GA population as its population and first generation, the GA's sigma and a
CVT archive of 1,024 cells (256 in the tutorial preset); no paper ran it on Atari. CMA-ME and CMA-MAE (the "cma-qd" group)
share the GA's population among sep-CMA-ES emitters over a CVT archive of 128 cells (each archived elite keeps a dense
base of its emitter).

Settings are per preset group (the algorithm registry's `preset_group`: "ga", "es", "cma", "qd", "cma-qd"); random search
takes the GA's with its own truncation 0 (the registry's defaults win, workbench.training.presets).
"""

from __future__ import annotations

import os
from typing import Any

from workbench.checks import check_int

ATARI_MAX_EPISODE_FRAMES = 20_000  # the training cap of the papers' GA (docs/protocol.md)

_GA_PAPER = dict(population_size=1000, truncation=20, sigma=0.002, elite_candidates=10, elite_episodes=30)
_ES_PAPER = dict(population_size=5000, sigma=0.02, learning_rate=0.01)
_GA_PC = dict(population_size=200, truncation=20, sigma=0.005, elite_candidates=5, elite_episodes=5)
_ES_PC = dict(population_size=200, sigma=0.02, learning_rate=0.01)
_GA_TUTORIAL = dict(population_size=64, truncation=8, sigma=0.05, elite_candidates=4, elite_episodes=5)
_ES_TUTORIAL = dict(population_size=64, sigma=0.05, learning_rate=0.03)
# The CMA family (sep-CMA-ES: a full covariance does not fit an Atari network): no paper ran it on Atari; the
# population is the GA's of each preset, sigma_init the pc GA's mutation power, the mean the seeded network.
_CMA = dict(sigma_init=0.005, initial="random", center_episodes=1)
# MAP-Elites (no paper ran it on Atari): each preset's GA population as its population and first generation, the GA's
# mutation power, a CVT archive of 1,024 cells over the family's descriptor.
_QD = dict(archive="cvt", cells=1024)
# CMA-ME and CMA-MAE (no paper ran them on Atari): sep-CMA-ES emitters sharing the GA's population (paper 10 x 100,
# pc 5 x 40, tutorial 2 x 32), the CMA group's start; 128 CVT cells (64 in the tutorial), as each archived elite
# keeps its emitter's [2, n] base: 128 x 13.6 MB at most for the 1.7M-parameter network.
_CMA_QD = dict(sigma_init=0.005, initial="random", archive="cvt", cells=128)

# Settings per preset group (meta_population_size: the novelty searches' meta-population, taken by the
# algorithms whose config has it), and the evaluator's layout and training cap
PRESETS: dict[str, dict[str, Any]] = {
    "paper": dict(
        groups=dict(
            ga=_GA_PAPER,
            es=dict(_ES_PAPER, meta_population_size=5),
            cma=dict(_CMA, population_size=1000),
            qd=dict(_QD, population_size=1000, initial_population=1000, sigma=0.002),
            cma_qd=dict(_CMA_QD, emitters=10, population_size=100),
        ),
        layout=dict(subpopulations=2, slots=16, max_episode_frames=ATARI_MAX_EPISODE_FRAMES),
    ),
    "pc": dict(
        groups=dict(
            ga=_GA_PC,
            es=dict(_ES_PC, meta_population_size=3),
            cma=dict(_CMA, population_size=200),
            qd=dict(_QD, population_size=200, initial_population=200, sigma=0.005),
            cma_qd=dict(_CMA_QD, emitters=5, population_size=40),
        ),
        layout=dict(subpopulations=2, slots=16, max_episode_frames=ATARI_MAX_EPISODE_FRAMES),
    ),
    "tutorial": dict(
        groups=dict(
            ga=_GA_TUTORIAL,
            es=dict(_ES_TUTORIAL, meta_population_size=3),
            cma=dict(_CMA, population_size=64),
            qd=dict(_QD, population_size=64, initial_population=64, sigma=0.05, cells=256),
            cma_qd=dict(_CMA_QD, emitters=2, population_size=32, sigma_init=0.05, cells=64),
        ),
        layout=dict(subpopulations=2, slots=8, max_episode_frames=4_000),
    ),
}

PC_CORES = 2  # the machine the pc preset's values are for
MAX_PC_CORES = 10  # where its population reaches the paper's 1,000


def machine_cores() -> int:
    """The cores this process may run on (its CPU affinity, else the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def scaled_to_cores(fields: dict[str, Any], cores: int, mirrored: bool = False) -> dict[str, Any]:
    """The pc preset's fields (hyperparameters and layout, for PC_CORES cores) for a machine of `cores` cores:
    population (MAP-Elites's: its first generation too), parents and slots per sub-population times
    cores / PC_CORES, the cores counted up to MAX_PC_CORES; a `mirrored` population (the ES group's pairs) stays
    even."""
    check_int("cores", cores, 1)
    factor = min(cores, MAX_PC_CORES) / PC_CORES
    hyperparameters = dict(fields["hyperparameters"])
    for name in ("population_size", "truncation", "initial_population"):
        if hyperparameters.get(name):
            hyperparameters[name] = max(1, round(hyperparameters[name] * factor))
    if mirrored:
        hyperparameters["population_size"] += hyperparameters["population_size"] % 2
    return dict(fields, hyperparameters=hyperparameters, slots=max(1, round(fields["slots"] * factor)))


def atari_run_defaults(env: str, preset_group: str) -> dict[str, Any]:
    """An Atari run's model, options, normalisation and cap when nobody chose them: the small network of the Deep
    GA paper, no observation normalisation (virtual batch normalisation is the Atari ES's), 20,000 frames."""
    return dict(model="small", model_options={}, observation_normalization=None, max_episode_frames=ATARI_MAX_EPISODE_FRAMES)


def atari_presets(name: str, env: str, preset_group: str, cores: int | None) -> dict[str, Any]:
    """The fields of preset `name` for an algorithm of `preset_group` on an Atari game (KeyError for a group
    without settings): the group's hyperparameters and the layout, the pc preset scaled to `cores` (default:
    this machine's), and virtual batch normalisation for the ES group of the paper and pc presets, as the
    paper's ES had (without it ES did not learn Seaquest here: docs/learning.md)."""
    preset = PRESETS[name]
    fields = dict(preset["layout"], hyperparameters=dict(preset["groups"][preset_group.replace("-", "_")]))
    if name == "pc":
        fields = scaled_to_cores(fields, machine_cores() if cores is None else cores, mirrored=preset_group == "es")
    if name in ("paper", "pc") and preset_group == "es":
        fields["virtual_batch_norm"] = True
    return fields
