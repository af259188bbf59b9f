"""The MuJoCo family's run defaults and presets, per task (sources and measured results: docs/continuous_control.md).

  paper     ARS: the paper's V2-t settings per task (linear policy, every state normalised, survival bonus
            removed); PGPE: ClipUp's (linear policy, normalised states, Humanoid v_max 0.015, population 200);
            ES / NS-ES / NSR-ES: OpenAI-ES's MuJoCo settings (64-64 tanh MLP, 256-256 on Humanoid; sigma 0.02,
            Adam 0.01, L2 0.005, states of 1 % of the episodes normalised, clip 5) at population 10,000;
            the GA: population 1,000 of the same MLP. CMA-ES and sep-CMA-ES (no paper): a linear policy, every
            state normalised as ARS's (and the mean mapped to the same policy at each merge: preserve_policy), the
            default population 4 + 3 ln n, sigma_init 0.03, from zero, and ARS's survival bonus removed from the
            returns they rank (Hopper, Walker2d, Ant 1, Humanoid 5). MAP-Elites
            (the "qd" group): PGA-ME's and QDax's 64-64 MLP, population 100, Iso+LineDD (0.005, 0.05), 1,024 CVT cells;
            CMA-ME and CMA-MAE (the "cma-qd" group): the same network and archive, 5 sep-CMA-ES emitters of 20.
  pc        the same methods sized for a 2-core computer (ES group population 200, GA 200).
  tutorial  small settings for the notebooks.

A run nobody chose a model, normalisation or cap for takes the paper preset's (mujoco_run_defaults). Settings
are per preset group (the algorithm registry's `preset_group`: "ga", "es", "ars", "pgpe", "cma", "qd", "cma-qd"); a task
variant (the humanoid trap) takes the settings of the Gymnasium task it runs.
"""

from __future__ import annotations

from typing import Any

from workbench.envs.mujoco.tasks import MAX_EPISODE_STEPS, resolve_mujoco_task

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
_GROUPS = {  # hyperparameters per preset and group, before the per-task entries
    "paper": dict(
        es=dict(_ES_MUJOCO, population_size=10_000, meta_population_size=5),
        ga=dict(population_size=1000, truncation=20, sigma=0.02, elite_candidates=10, elite_episodes=5),
        pgpe=dict(population_size=200, max_speed=0.15),
    ),
    "pc": dict(
        es=dict(_ES_MUJOCO, population_size=200, meta_population_size=3),
        ga=dict(population_size=200, truncation=20, sigma=0.02, elite_candidates=5, elite_episodes=3),
        pgpe=dict(population_size=100, max_speed=0.15),
    ),
    "tutorial": dict(
        es=dict(_ES_MUJOCO, population_size=40, meta_population_size=3),
        ga=dict(population_size=40, truncation=8, sigma=0.05, elite_candidates=3, elite_episodes=2),
        pgpe=dict(population_size=20, max_speed=0.15),
    ),
}
PRESET_NAMES = tuple(_GROUPS)
# MAP-Elites (the "qd" group): PGA-ME's MAP-Elites (population 100, Iso+LineDD with sigma_iso 0.005 and sigma_line 0.05,
# as QDax's examples too), a CVT archive of 1,024 cells; the descriptor: the family's (feet contact).
_QD_PAPER = dict(population_size=100, initial_population=100, variation="iso_line", sigma=0.005, line_sigma=0.05)
_QD = {
    "paper": dict(_QD_PAPER, archive="cvt", cells=1024),
    "pc": dict(_QD_PAPER, archive="cvt", cells=1024),
    "tutorial": dict(_QD_PAPER, population_size=32, initial_population=64, archive="cvt", cells=256),
}
# CMA-ME and CMA-MAE (the "cma-qd" group): the same network, archive and descriptor, 5 sep-CMA-ES emitters of 20 members
# (100 episodes a generation, as MAP-Elites's), from zero weights with sigma_init 0.05 (no paper: the CMA-ME paper's
# 15 emitters of 37 searched smaller problems; pyribs's and QDax's examples use 1 to 15 emitters).
_CMA_QD = {
    "paper": dict(emitters=5, population_size=20, sigma_init=0.05, archive="cvt", cells=1024),
    "pc": dict(emitters=5, population_size=20, sigma_init=0.05, archive="cvt", cells=1024),
    "tutorial": dict(emitters=2, population_size=16, sigma_init=0.05, archive="cvt", cells=256),
}
# QDax's per-step reward offsets of its "uni" tasks (its environments' reward_offset: "experimentally determined, should
# be sufficient to have only positive rewards"): the QD-score offset here is minus this times the episode cap, so an
# elite adds to the QD-score when its return is above -offset per step of a full episode. QDax adds the offset to
# every step's reward instead, which also favours longer episodes within a cell; here the objective stays the return.
QD_REWARD_OFFSET = {"Hopper-v5": 0.9, "Walker2d-v5": 1.413, "HalfCheetah-v5": 9.231, "Ant-v5": 3.24, "Humanoid-v5": 0.0}
_PGPE_TASKS = {"Humanoid-v5": dict(population_size=200, max_speed=0.015)}  # ClipUp's Humanoid


def one_wave_slots(episodes: int, subpopulations: int = 2) -> int:
    """Episode slots per sub-population so that a generation's episodes start at once (8 to 128): MuJoCo's
    1,000-step episodes would otherwise leave a last wave of a few episodes running alone."""
    return max(8, min(128, -(-episodes // subpopulations)))


def mujoco_presets(name: str, env: str, preset_group: str, cores: int | None = None) -> dict[str, Any]:
    """The RunConfig fields of preset `name` for an algorithm of `preset_group` on the MuJoCo task `env` (the
    settings of the Gymnasium task a variant runs); KeyError for an unknown preset. `cores` is not used: these
    presets do not scale with the machine."""
    table, task = _GROUPS[name], resolve_mujoco_task(env).gymnasium_id
    fields: dict[str, Any] = dict(subpopulations=2, max_episode_frames=MAX_EPISODE_STEPS)
    if preset_group == "ars":
        hyperparameters = dict(ARS_PAPER[task], center_episodes=1)  # the policy's own return, for the curves
        if name == "tutorial":
            hyperparameters.update(
                directions=min(hyperparameters["directions"], 8), top_directions=min(hyperparameters["top_directions"], 4)
            )
        normalization = None if task in ARS_V1_TASKS else dict(ARS_NORMALIZATION)
        return dict(
            fields,
            model="linear",
            model_options={},
            hyperparameters=hyperparameters,
            observation_normalization=normalization,
            slots=one_wave_slots(2 * int(hyperparameters["directions"]) + 1),
        )
    if preset_group == "cma":  # no paper: the method's default population around a linear policy, as ARS's
        bonus = ARS_PAPER.get(task, {}).get("survival_bonus", 0.0)  # ARS's alive-bonus removal, as ARS's training
        cma: dict[str, Any] = dict(sigma_init=0.03, initial="zeros", center_episodes=1, survival_bonus=bonus)
        return dict(
            fields,
            model="linear",
            model_options={},
            hyperparameters=cma,
            observation_normalization=dict(ARS_NORMALIZATION, preserve_policy=True),  # a converged sigma needs it
            slots=16,
        )
    if preset_group in ("qd", "cma-qd"):  # QDax's and PGA-ME's locomotion settings: a 64-64 MLP, 1,024 CVT cells
        offset = QD_REWARD_OFFSET.get(task, 0.0) * MAX_EPISODE_STEPS
        qd: dict[str, Any] = dict((_QD if preset_group == "qd" else _CMA_QD)[name], qd_score_offset=-offset if offset else 0.0)
        members = int(qd["population_size"]) * int(qd.get("emitters", 1))
        return dict(
            fields,
            model="mlp",
            model_options=dict(hidden_sizes=[64, 64]),
            hyperparameters=qd,
            observation_normalization=None,
            slots=one_wave_slots(members),
        )
    if preset_group == "pgpe":
        hyperparameters = dict(table["pgpe"], **(_PGPE_TASKS.get(task, {}) if name != "tutorial" else {}), center_episodes=1)
        return dict(
            fields,
            model="linear",
            model_options={},
            hyperparameters=hyperparameters,
            observation_normalization=dict(PGPE_NORMALIZATION),
            slots=one_wave_slots(int(hyperparameters["population_size"]) + 1),
        )
    hyperparameters = dict(table[preset_group])
    return dict(
        fields,
        model="mlp",
        model_options=dict(hidden_sizes=[256, 256] if task == "Humanoid-v5" else [64, 64]),
        hyperparameters=hyperparameters,
        observation_normalization=dict(ES_NORMALIZATION),
        slots=one_wave_slots(int(hyperparameters["population_size"]) + 1),
    )


def mujoco_run_defaults(env: str, preset_group: str) -> dict[str, Any]:
    """A MuJoCo run's model, model options, observation normalisation and cap when nobody chose them: the paper
    preset's for the group (ARS and PGPE: a linear policy; the others: OpenAI-ES's MLP), 1,000 steps. A group
    the presets do not cover takes the MLP."""
    group = preset_group if preset_group in _GROUPS["paper"] or preset_group in ("ars", "cma", "qd", "cma-qd") else "es"
    fields = mujoco_presets("paper", env, group)
    return {name: fields[name] for name in ("model", "model_options", "observation_normalization", "max_episode_frames")}
