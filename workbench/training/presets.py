"""Named presets of hyperparameters and evaluator layout: the paper's settings, and settings for a personal computer.

    config = RunConfig.from_preset("pc", algorithm="ga", env="frostbite")   # then override any field
    python -m workbench train --preset pc --game frostbite --algo ga --minutes 30 --out runs/frostbite

  paper     the papers' Atari settings (docs/protocol.md): GA population 1,000, 20 parents, sigma 0.002,
            10 elite candidates x 30 episodes; ES population 5,000, sigma 0.02, Adam 0.01, virtual batch
            normalisation. On 2 cores one GA generation takes about half an hour.
  pc        scaled to a 2-core computer: GA population 200, 20 parents, sigma 0.005, 5 candidates x 5
            episodes, 20,000-frame training cap. Measured once on Frostbite (SmallModel, 2 cores): a
            re-evaluated elite of about 1,500 after 4M frames and about 2,900 after 5M frames, in about
            half an hour. A sigma study (bench/learning.py --study, 8 minutes each, 30 test episodes):
            0.002 scored 1,270, 0.005 1,970, 0.01 826 (docs/learning.md); a population study
            (7 minutes each): 100 scored 511, 200 1,970, 400 236 (two generations only); truncation
            (6.3M frames each) 10 1,722, 20 1,970, 40 1,224; elite episodes 1 1,364, 5 and 10 1,970.
            The full 2-hour benchmark: 3,182 +- 304 after 90.8M frames. ES and novelty search: population 200 (100
            mirrored pairs), the paper's sigma and learning rate, virtual batch normalisation on:
            on Seaquest after about 20M frames (bench/learning.py --compare, 30 test episodes) ES
            with it scored 459 +- 210, without it 180 +- 0 (every member played the same episode).
  tutorial  the small settings of the notebooks (CartPole-sized problems, minutes on a laptop).

On Atari the pc preset scales with the machine (scaled_to_cores): the values above are for 2 cores; on c cores
the population, the parents and the episode slots per sub-population are c/2 times theirs (c from 1 to 10:
population 100 to 1,000, the paper's), so that each core keeps 8 episodes in flight and each slot plays about
6 members a generation (fewer leave the slots idle at the end of every round: docs/learning.md). The elite
rounds, the mutation power and the learning rate stay. Verified on 2 cores only.

Random search ("random") takes the GA's settings with truncation 0.

On MuJoCo tasks (env a MuJoCo task) the presets are per task (continuous_presets(); sources and the
measured results in docs/continuous_control.md):
  paper     ARS: the paper's V2-t settings per task (linear policy, every state normalised, survival bonus
            removed); PGPE: ClipUp's (linear policy, normalised states, Humanoid v_max 0.015, population 200);
            ES / NS-ES / NSR-ES: OpenAI-ES's MuJoCo settings (64-64 tanh MLP, 256-256 on Humanoid; sigma 0.02,
            Adam 0.01, L2 0.005, states of 1 % of the episodes normalised, clip 5) at population 10,000;
            the GA: population 1,000 of the same MLP.
  pc        the same methods sized for a 2-core computer (ES family population 200, GA 200). Measured once on
            HalfCheetah-v5 (10 minutes, 2 cores, 100 test episodes): ES 4,121 (ARS's threshold 3,430 first
            reached after 6 minutes), PGPE 1,703 (docs/learning.md).
  tutorial  small settings for the notebooks.
"""

from __future__ import annotations

import os
from typing import Any

from workbench.checks import check_choice, check_int
from workbench.envs import env_family, find_mujoco_task, resolve_mujoco_task
from workbench.evolution import ALGORITHMS, algorithm_spec

_GA_PAPER = dict(population_size=1000, truncation=20, sigma=0.002, elite_candidates=10, elite_episodes=30)


def _for_algorithm(family_settings, spec):
    """A family's preset settings for the algorithm `spec`: without the fields its name sets (random search's
    truncation 0), with the meta-population of the novelty searches."""
    settings = {name: value for name, value in family_settings[spec.family].items() if name not in spec.defaults}
    if spec.needs_behaviour:
        settings["meta_population_size"] = family_settings["meta_population_size"]
    return settings


_ES_PAPER = dict(population_size=5000, sigma=0.02, learning_rate=0.01)
_GA_PC = dict(population_size=200, truncation=20, sigma=0.005, elite_candidates=5, elite_episodes=5)
_ES_PC = dict(population_size=200, sigma=0.02, learning_rate=0.01)
_GA_TUTORIAL = dict(population_size=64, truncation=8, sigma=0.05, elite_candidates=4, elite_episodes=5)
_ES_TUTORIAL = dict(population_size=64, sigma=0.05, learning_rate=0.03)

PRESETS: dict[str, dict[str, Any]] = {  # Atari: settings per algorithm family (registry trait), and the layout
    "paper": dict(
        families=dict(ga=_GA_PAPER, es=_ES_PAPER, meta_population_size=5),
        layout=dict(subpopulations=2, slots=16, max_episode_frames=20_000),
    ),
    "pc": dict(
        families=dict(ga=_GA_PC, es=_ES_PC, meta_population_size=3),
        layout=dict(subpopulations=2, slots=16, max_episode_frames=20_000),
    ),
    "tutorial": dict(
        families=dict(ga=_GA_TUTORIAL, es=_ES_TUTORIAL, meta_population_size=3),
        layout=dict(subpopulations=2, slots=8, max_episode_frames=4_000),
    ),
}


# Each preset's revision, raised whenever its values change, so that a result names the values it was made with
# (the Atari suite puts it in each line and in its run folders' names: bench/atari_suite.py).
PRESET_REVISIONS = {"paper": 1, "pc": 1, "tutorial": 1}

PC_CORES = 2  # the machine the pc preset's Atari values are for
MAX_PC_CORES = 10  # where its population reaches the paper's 1,000


def machine_cores() -> int:
    """The cores this process may run on (its CPU affinity, else the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def scaled_to_cores(fields: dict[str, Any], cores: int, mirrored: bool = False) -> dict[str, Any]:
    """The pc preset's Atari fields (hyperparameters and layout, for PC_CORES cores) for a machine of `cores`
    cores: population, parents and slots per sub-population times cores / PC_CORES, the cores counted up to
    MAX_PC_CORES; a `mirrored` population (the ES family's pairs) stays even."""
    check_int("cores", cores, 1)
    factor = min(cores, MAX_PC_CORES) / PC_CORES
    hyperparameters = dict(fields["hyperparameters"])
    for name in ("population_size", "truncation"):
        if hyperparameters.get(name):
            hyperparameters[name] = max(1, round(hyperparameters[name] * factor))
    if mirrored:
        hyperparameters["population_size"] += hyperparameters["population_size"] % 2
    return dict(fields, hyperparameters=hyperparameters, slots=max(1, round(fields["slots"] * factor)))


# -- MuJoCo: per task ---------------------------------------------------------------------------------
# ARS V2-t (Mania et al. 2018, table of hyperparameters): directions N, kept b, step alpha, noise nu, and the
# survival bonus removed in training. Swimmer's best was V1 (no normalisation). InvertedPendulum is not in
# the paper (ours).
ARS_PAPER = {
    "Swimmer-v5": dict(directions=1, top_directions=1, step_size=0.02, noise=0.01, survival_bonus=0.0),
    "Hopper-v5": dict(directions=8, top_directions=4, step_size=0.01, noise=0.025, survival_bonus=1.0),
    "HalfCheetah-v5": dict(directions=32, top_directions=4, step_size=0.02, noise=0.03, survival_bonus=0.0),
    "Walker2d-v5": dict(directions=40, top_directions=30, step_size=0.025, noise=0.01, survival_bonus=1.0),
    "Ant-v5": dict(directions=60, top_directions=20, step_size=0.015, noise=0.025, survival_bonus=1.0),
    "Humanoid-v5": dict(directions=230, top_directions=230, step_size=0.02, noise=0.0075, survival_bonus=5.0),
    "InvertedPendulum-v5": dict(directions=4, top_directions=4, step_size=0.02, noise=0.03, survival_bonus=0.0),
}
ARS_V1_TASKS = ("Swimmer-v5",)
ARS_NORMALIZATION = dict(fraction=1.0, clip=None, variance_floor=1e-2)  # every state; ARS does not clip
ES_NORMALIZATION = dict(fraction=0.01, clip=5.0, variance_floor=1e-2)  # OpenAI-ES: 1 % of the episodes
PGPE_NORMALIZATION = dict(fraction=1.0, clip=5.0, variance_floor=1e-2)
_ES_MUJOCO = dict(sigma=0.02, learning_rate=0.01, l2_coefficient=0.005)
_CONTINUOUS = {  # (hyperparameters, model) per preset and algorithm, before the per-task entries
    "paper": dict(
        es=dict(_ES_MUJOCO, population_size=10_000),
        ga=dict(population_size=1000, truncation=20, sigma=0.02, elite_candidates=10, elite_episodes=5),
        pgpe=dict(population_size=200, max_speed=0.15),
    ),
    "pc": dict(
        es=dict(_ES_MUJOCO, population_size=200),
        ga=dict(population_size=200, truncation=20, sigma=0.02, elite_candidates=5, elite_episodes=3),
        pgpe=dict(population_size=100, max_speed=0.15),
    ),
    "tutorial": dict(
        es=dict(_ES_MUJOCO, population_size=40),
        ga=dict(population_size=40, truncation=8, sigma=0.05, elite_candidates=3, elite_episodes=2),
        pgpe=dict(population_size=20, max_speed=0.15),
    ),
}
_PGPE_TASKS = {"Humanoid-v5": dict(population_size=200, max_speed=0.015)}  # ClipUp's Humanoid


def one_wave_slots(episodes: int, subpopulations: int = 2) -> int:
    """Episode slots per sub-population so that a generation's episodes start at once (8 to 128): MuJoCo's
    1,000-step episodes would otherwise leave a last wave of a few episodes running alone."""
    return max(8, min(128, -(-episodes // subpopulations)))


def continuous_presets(name: str, algorithm: str, task: str) -> dict[str, Any]:
    """The RunConfig fields of preset `name` for `algorithm` on the MuJoCo task `task` (a Gymnasium id; the
    humanoid trap takes Humanoid-v5's)."""
    table, family = _CONTINUOUS[name], algorithm_spec(algorithm).family
    fields = dict(subpopulations=2, max_episode_frames=1000)
    if family == "ars":
        hyperparameters = dict(ARS_PAPER[task], center_episodes=1)  # the policy's own return, for the curves
        if name == "tutorial":
            hyperparameters.update(
                directions=min(hyperparameters["directions"], 8), top_directions=min(hyperparameters["top_directions"], 4)
            )
        normalization = None if task in ARS_V1_TASKS else dict(ARS_NORMALIZATION)
        return dict(
            fields,
            model="linear",
            hyperparameters=hyperparameters,
            observation_normalization=normalization,
            slots=one_wave_slots(2 * int(hyperparameters["directions"]) + 1),
        )
    if family == "pgpe":
        hyperparameters = dict(table["pgpe"], **(_PGPE_TASKS.get(task, {}) if name != "tutorial" else {}), center_episodes=1)
        return dict(
            fields,
            model="linear",
            hyperparameters=hyperparameters,
            observation_normalization=dict(PGPE_NORMALIZATION),
            slots=one_wave_slots(int(hyperparameters["population_size"]) + 1),
        )
    hidden = [256, 256] if task == "Humanoid-v5" else [64, 64]
    hyperparameters = _for_algorithm(dict(table, meta_population_size=3 if name != "paper" else 5), algorithm_spec(algorithm))
    return dict(
        fields,
        model="mlp",
        model_options=dict(hidden_sizes=hidden),
        hyperparameters=hyperparameters,
        observation_normalization=dict(ES_NORMALIZATION),
        slots=one_wave_slots(int(hyperparameters["population_size"]) + 1),
    )


FAMILY_FIELDS = ("model", "model_options", "observation_normalization", "max_episode_frames")


def family_defaults(algorithm: str, env: str) -> dict[str, Any]:
    """The fields of FAMILY_FIELDS a run of `algorithm` on `env` takes when neither a preset nor the user chose
    them: on a MuJoCo task the paper preset's model, observation normalisation and 1,000-step cap; on another
    Gymnasium id a linear policy for the vector-only algorithms, an MLP otherwise; on Atari nothing (RunConfig's
    own defaults are Atari's). ValueError for an unknown env (env_family)."""
    family = env_family(env)
    if family == "mujoco":
        fields = continuous_presets("paper", algorithm, resolve_mujoco_task(env).gymnasium_id)
        return {name: fields[name] for name in FAMILY_FIELDS if name in fields}
    if family == "atari":
        return {}
    return dict(model="linear" if algorithm_spec(algorithm).vector_only else "mlp")


def preset_fields(name: str, algorithm: str, env: str | None = None, cores: int | None = None) -> dict[str, Any]:
    """The RunConfig fields of preset `name` for `algorithm` on `env`: hyperparameters and the evaluator's layout
    (and, on MuJoCo tasks, the model and the observation normalisation). The evolution strategies of the Atari
    paper and pc presets also normalise by a reference batch, as the paper's ES did: without it ES did not
    learn Seaquest here. The Atari pc preset is scaled to `cores` (default: this machine's; scaled_to_cores)."""
    check_choice("preset", name, sorted(PRESETS))
    if cores is not None:
        check_int("cores", cores, 1)  # also where the preset does not scale: a bad value is never ignored
    task = find_mujoco_task(env) if env is not None else None
    if task is not None:
        algorithm_spec(algorithm)  # ValueError for an unknown name
        return continuous_presets(name, algorithm, task.gymnasium_id)  # variants take their rules' task settings
    preset, spec = PRESETS[name], algorithm_spec(algorithm)
    if spec.family not in preset["families"]:
        raise ValueError(
            f'algorithm "{algorithm}" is for vector observations; on Atari the presets cover '
            f"{', '.join(n for n in sorted(ALGORITHMS) if ALGORITHMS[n].family in preset['families'])}"
        )
    fields = dict(preset["layout"], hyperparameters=_for_algorithm(preset["families"], spec))
    if name == "pc":
        fields = scaled_to_cores(fields, machine_cores() if cores is None else cores, mirrored=spec.family == "es")
    if name in ("paper", "pc") and spec.family == "es":
        fields["virtual_batch_norm"] = True
    return fields
