"""Novelty search with evolution strategies: NS-ES and NSR-ES (Conti et al. 2018), ask/tell.

A meta-population of ES centers (each with its own Adam state) explores; an
archive holds behaviour characterisations (BCs: one vector per episode, e.g.
the final RAM of an Atari game, computed by the evaluator; a request's BC is the
mean over its episodes). novelty(b) = mean Euclidean distance from b to its k
nearest archive entries. A generation:

  1. pick center m with probability proportional to its novelty;
  2. "perturbation" round: mirrored perturbations of center m, with BCs;
     weights = reward_weight * centered_ranks(return) + (1 - reward_weight) * centered_ranks(novelty)
     (reward_weight 0 = NS-ES, 0.5 = NSR-ES); an OpenAI-ES Adam step for center m;
  3. "center" round: the updated center m, with BC; its BC joins the archive.

Before the first generation a "center" round evaluates every center and seeds
the archive with their BCs. The elite is the center with the best last return.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from workbench.checks import check_int, check_real
from workbench.evolution.es import Adam, ESConfig, adam_update
from workbench.evolution.genome import Genome, base_key
from workbench.evolution.hyperparameters import hyperparameter
from workbench.evolution.mirrored import checked_center
from workbench.evolution.space import ParameterSpace
from workbench.evolution.strategy import (
    EvaluationRequest,
    Strategy,
    centered_ranks,
    fitness_summary,
    shifted_returns,
)


@dataclasses.dataclass(frozen=True)
class NoveltyConfig(ESConfig):
    """NS-ES / NSR-ES hyperparameters: OpenAI-ES's (ESConfig) plus the three below; center_episodes must be
    at least 1 (each center evaluation's behaviour enters the archive)."""

    meta_population_size: int = hyperparameter(
        5, "meta-population", "ES centers explored in turn (the paper used 3-5)", scale="int"
    )
    k_nearest: int = hyperparameter(10, "k nearest", "neighbours in the novelty mean", scale="int")
    reward_weight: float = hyperparameter(
        0.0,
        "reward weight (NSR-ES)",
        "weight of the reward ranks against the novelty ranks (0 = NS-ES, 0.5 = NSR-ES)",
        low=0.0,
        high=1.0,
        step=0.05,
    )

    def validated(self) -> NoveltyConfig:
        super().validated()
        check_int("center_episodes", self.center_episodes, 1)
        check_int("meta_population_size", self.meta_population_size, 1)
        check_int("k_nearest", self.k_nearest, 1)
        check_real("reward_weight", self.reward_weight, 0, 1)
        return self

    @classmethod
    def ns_es(cls, **changes: Any) -> NoveltyConfig:
        return cls(**dict(dict(reward_weight=0.0), **changes))

    @classmethod
    def nsr_es(cls, **changes: Any) -> NoveltyConfig:
        return cls(**dict(dict(reward_weight=0.5), **changes))

    @classmethod
    def tutorial(cls) -> NoveltyConfig:
        return cls(population_size=64, sigma=0.05, learning_rate=0.03, meta_population_size=3)


def novelty(behaviours: np.ndarray, archive: np.ndarray, k: int) -> np.ndarray:
    """Mean distance of each row of behaviours [n, d] to its k nearest rows of archive [m, d]."""
    behaviours, archive = np.atleast_2d(behaviours), np.atleast_2d(archive)
    if archive.shape[0] == 0:
        return np.zeros(behaviours.shape[0])
    if behaviours.shape[1] != archive.shape[1]:
        raise ValueError(f"behaviours have {behaviours.shape[1]} dimensions, the archive {archive.shape[1]}")
    k = min(k, archive.shape[0])
    result = np.empty(behaviours.shape[0])
    for start in range(0, behaviours.shape[0], 256):  # bounded memory for large archives
        chunk = behaviours[start : start + 256]
        distances = np.sqrt(np.maximum((chunk**2).sum(1)[:, None] - 2 * chunk @ archive.T + (archive**2).sum(1)[None, :], 0.0))
        result[start : start + 256] = np.sort(np.partition(distances, k - 1, axis=1)[:, :k], axis=1).mean(axis=1)
    return result


class NoveltySearchES(Strategy):
    """NS-ES / NSR-ES on a ParameterSpace; `seed` drives the centers, the choices and every noise offset."""

    kind = "NoveltySearchES"
    config_class = NoveltyConfig
    rank_field = "perturbation_rank"
    EXTRAS = ("center", "novelty_mean", "novelty_max", "gradient_norm", "center_return", "archive_size")

    def __init__(self, config: NoveltyConfig, space: ParameterSpace, seed: int = 0) -> None:
        super().__init__(config, space, seed)
        self.indices = None
        m = self.config.meta_population_size
        self.centers = [self.space.initial(self.space.sample_offset(self.rng)) for _ in range(m)]
        self.adams = [Adam(self.space.num_parameters) for _ in range(m)]
        self.center_returns = [None] * m
        self.center_behaviours = [None] * m
        self.archive = np.zeros((0, 0))
        self.chosen = None
        self.phase_name = "center"  # the first round evaluates every center
        self._pending_record = None

    @property
    def phase(self) -> str:
        return self.phase_name

    def start_from(self, weights: np.ndarray) -> None:
        """Every center of the meta-population starts at `weights` (before the first round; see
        Strategy.start_from); they part as each is chosen and stepped on its own."""
        start = self._starting_weights(weights)
        self.centers = [start.copy() for _ in self.centers]

    # -- ask/tell -------------------------------------------------------------------------
    def _ask(self):
        config = self.config
        if self.phase_name == "perturbation":
            if self.chosen is None:
                self.chosen = self._choose_center()
                rank = config.perturbation_rank
                self.indices = [self.space.sample_offset(self.rng, rank) for _ in range(config.population_size // 2)]
            key = base_key(self.centers[self.chosen])
            return [
                EvaluationRequest(
                    Genome(key, ((index, sign * config.sigma, config.perturbation_rank),)),
                    config.episodes_per_member,
                    "perturbation",
                    behaviour=True,
                )
                for index in self.indices
                for sign in (1, -1)
            ]
        members = range(len(self.centers)) if self.chosen is None else [self.chosen]
        return [
            EvaluationRequest(Genome(base_key(self.centers[m])), config.center_episodes, "center", behaviour=True)
            for m in members
        ]

    def _check_results(self, results):
        dimensions = results[0].behaviours.shape[1] if results else 0
        if self.archive.size and dimensions != self.archive.shape[1]:
            raise ValueError(f"behaviours have {dimensions} dimensions, the archive {self.archive.shape[1]}")

    def _tell(self, requests, results, means):
        behaviours = np.stack([r.behaviours.mean(axis=0) for r in results])
        if self.phase_name == "perturbation":
            ranked = shifted_returns(results, self.config.survival_bonus) if self.config.survival_bonus else means
            self._update_center(means, ranked, behaviours, sum(r.episodes for r in requests))
            self.phase_name = "center"
            return
        members = range(len(self.centers)) if self.chosen is None else [self.chosen]
        for m, value, behaviour in zip(members, means, behaviours):
            self.center_returns[m], self.center_behaviours[m] = float(value), behaviour
        self.archive = np.concatenate([self.archive.reshape(-1, behaviours.shape[1]), behaviours])
        if self.chosen is not None:
            self._end_generation(sum(r.episodes for r in requests))
        self.phase_name = "perturbation"

    def _choose_center(self):
        scores = novelty(np.stack(self.center_behaviours), self.archive, self.config.k_nearest)
        if scores.sum() <= 0:
            return int(self.rng.integers(len(self.centers)))
        return int(self.rng.choice(len(self.centers), p=scores / scores.sum()))

    def _update_center(self, returns, ranked_returns, behaviours, episodes):
        """One ES step of the chosen center; returns are recorded, ranked_returns (minus the survival bonus) ranked."""
        config, m = self.config, self.chosen
        pairs = len(self.indices)
        scores = novelty(behaviours, self.archive, config.k_nearest)
        shaped = config.reward_weight * centered_ranks(ranked_returns) + (1 - config.reward_weight) * centered_ranks(scores)
        weights = (shaped[0::2] - shaped[1::2]).astype(np.float32)
        gradient = self.space.combine(self.indices, weights, config.perturbation_rank) / np.float32(2 * pairs)
        self._pending_record = dict(  # the record's perturbation half, completed by the center round
            **fitness_summary(returns),
            novelty_mean=float(scores.mean()),
            novelty_max=float(scores.max()),
            gradient_norm=float(np.linalg.norm(gradient)),
            evaluations=episodes,
        )
        self.centers[m] = adam_update(self.centers[m], self.adams[m], gradient, config)
        self.indices = None

    def _end_generation(self, episodes):
        pending = dict(self._pending_record)
        summary = {name: pending.pop(name) for name in ("max", "mean", "median")}
        evaluations = pending.pop("evaluations") + episodes
        best = int(np.argmax([-math.inf if r is None else r for r in self.center_returns]))
        self._record_generation(
            summary,
            self.center_returns[best],
            Genome(base_key(self.centers[best])),
            evaluations,
            center=self.chosen,
            center_return=self.center_returns[self.chosen],
            archive_size=int(self.archive.shape[0]),
            **pending,
        )
        self.chosen = None
        self._start_next_generation()

    # -- what evaluators and users read ---------------------------------------------------
    @property
    def elite(self) -> Genome:
        """The center with the best last return, as a genome on its base."""
        best = int(np.argmax([-math.inf if r is None else r for r in self.center_returns]))
        return Genome(base_key(self.centers[best]))

    def bases(self) -> dict[str, np.ndarray]:
        return {base_key(c): c for c in self.centers}

    def _validate(self, config):
        config = super()._validate(config)
        centers = vars(self).get("centers")  # None while the base class validates the first config
        if centers is not None and config.meta_population_size != len(centers):
            raise ValueError(f"meta_population_size cannot change during a run (it is {len(self.centers)})")
        return config

    # -- state ----------------------------------------------------------------------------
    def state_dict(self) -> dict:
        """Everything needed to continue exactly: JSON-able data plus numpy arrays (centers, moments, archive)."""
        return dict(
            self._common_state(),
            indices=None if self.indices is None else list(self.indices),
            centers=[c.copy() for c in self.centers],
            adams=[a.state() for a in self.adams],
            center_returns=list(self.center_returns),
            center_behaviours=[None if b is None else b.copy() for b in self.center_behaviours],
            archive=self.archive.copy(),
            chosen=self.chosen,
            phase=self.phase_name,
            pending_record=self._pending_record,
        )

    def _load(self, state):
        n, m = self.space.num_parameters, self.config.meta_population_size
        if len(state["centers"]) != m or len(state["adams"]) != m:
            raise ValueError(f"corrupt {self.kind} state: expected {m} centers")
        self.indices = None if state["indices"] is None else [int(i) for i in state["indices"]]
        self.centers = [checked_center(c, n, self.kind, f"center {k}") for k, c in enumerate(state["centers"])]
        for adam, saved in zip(self.adams, state["adams"]):
            adam.load(saved, n)
        self.center_returns = list(state["center_returns"])
        self.center_behaviours = [None if b is None else np.asarray(b, np.float64) for b in state["center_behaviours"]]
        self.archive = np.array(state["archive"], np.float64)
        self.chosen = state["chosen"]
        if state["phase"] not in ("center", "perturbation"):
            raise ValueError(f"corrupt {self.kind} state: unknown phase {state['phase']!r}")
        self.phase_name = state["phase"]
        self._pending_record = state["pending_record"]
