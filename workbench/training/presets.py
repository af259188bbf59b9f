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
            0.002 scored 1,270, 0.005 1,970, 0.01 826 (README, learning results); a population study
            (7 minutes each): 100 scored 511, 200 1,970, 400 236 (two generations only); truncation
            and elite rounds not swept yet. ES and novelty search: population 200 (100
            mirrored pairs), the paper's sigma and learning rate, virtual batch normalisation on:
            on Seaquest after about 20M frames (bench/learning.py --compare, 30 test episodes) ES
            with it scored 459 +- 210, without it 180 +- 0 (every member played the same episode).
  tutorial  the small settings of the notebooks (CartPole-sized problems, minutes on a laptop).

Random search ("random") takes the GA's settings with truncation 0.
"""
from __future__ import annotations

from typing import Any

from workbench.checks import check_choice

_GA_PAPER = dict(population_size=1000, truncation=20, sigma=0.002, elite_candidates=10, elite_episodes=30)
# random search is the GA with truncation 0 (set by its ALGORITHMS entry), so its presets leave truncation out


def _random(ga):
    return {name: value for name, value in ga.items() if name != "truncation"}


_ES_PAPER = dict(population_size=5000, sigma=0.02, learning_rate=0.01)
_GA_PC = dict(population_size=200, truncation=20, sigma=0.005, elite_candidates=5, elite_episodes=5)
_ES_PC = dict(population_size=200, sigma=0.02, learning_rate=0.01)
_GA_TUTORIAL = dict(population_size=64, truncation=8, sigma=0.05, elite_candidates=4, elite_episodes=5)
_ES_TUTORIAL = dict(population_size=64, sigma=0.05, learning_rate=0.03)

PRESETS: dict[str, dict[str, Any]] = {
    "paper": dict(
        hyperparameters={"ga": _GA_PAPER, "random": _random(_GA_PAPER), "es": _ES_PAPER,
                         "ns-es": dict(_ES_PAPER, meta_population_size=5),
                         "nsr-es": dict(_ES_PAPER, meta_population_size=5)},
        layout=dict(subpopulations=2, slots=16, max_episode_frames=20_000)),
    "pc": dict(
        hyperparameters={"ga": _GA_PC, "random": _random(_GA_PC), "es": _ES_PC,
                         "ns-es": dict(_ES_PC, meta_population_size=3),
                         "nsr-es": dict(_ES_PC, meta_population_size=3)},
        layout=dict(subpopulations=2, slots=16, max_episode_frames=20_000)),
    "tutorial": dict(
        hyperparameters={"ga": _GA_TUTORIAL, "random": _random(_GA_TUTORIAL), "es": _ES_TUTORIAL,
                         "ns-es": dict(_ES_TUTORIAL, meta_population_size=3),
                         "nsr-es": dict(_ES_TUTORIAL, meta_population_size=3)},
        layout=dict(subpopulations=2, slots=8, max_episode_frames=4_000)),
}


def preset_fields(name: str, algorithm: str) -> dict[str, Any]:
    """The RunConfig fields of preset `name` for `algorithm`: hyperparameters and the evaluator's layout (the
    evolution strategies of the paper and pc presets also normalise by a reference batch, as the paper's ES
    did: without it ES did not learn Seaquest here)."""
    check_choice("preset", name, sorted(PRESETS))
    preset = PRESETS[name]
    check_choice("algorithm", algorithm, sorted(preset["hyperparameters"]))
    fields = dict(preset["layout"], hyperparameters=dict(preset["hyperparameters"][algorithm]))
    if name in ("paper", "pc") and algorithm in ("es", "ns-es", "nsr-es"):
        fields["virtual_batch_norm"] = True
    return fields
