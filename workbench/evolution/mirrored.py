"""MirroredSearch: what OpenAI-ES, ARS and PGPE share: one dense center and mirrored perturbations of it.

The center reaches evaluators as a dense base (bases(): {key: base}; the base is the center [n], or
for PGPE the center and per-parameter scales [2, n]). A generation is one round: for each of the
generation's noise offsets the pair center + mutation and center - mutation ("perturbation"), and,
when center_episodes > 0, the center itself ("center", for reporting). A subclass says how big a
mutation is (mutation()), how many pairs a generation has (pairs()), updates its center in _tell()
and then calls _next_center().
"""

from __future__ import annotations

import numpy as np

from workbench.evolution.genome import Genome, base_key
from workbench.evolution.strategy import EvaluationRequest, Strategy


class MirroredSearch(Strategy):
    """The shared part of strategies with a dense center and mirrored sampling (see the module docstring).

    Attributes: center (float32 [n]), indices (this generation's noise offsets, None until asked),
    center_fitness (the center's last mean return, None without center episodes).
    """

    STATE_VERSIONS = (1, 2)  # 2: the base of the center the last generation played (version 1 kept none)

    def _start_center(self, center: np.ndarray) -> None:
        self._base_before: np.ndarray | None = None  # the base of the center the last generation played
        self.center = np.asarray(center, np.float32)
        self.indices: list[int] | None = None
        self.center_fitness: float | None = None
        self._rekey()

    def start_from(self, weights: np.ndarray) -> None:
        """The center starts at `weights` (before the first round; see Strategy.start_from)."""
        self._start_center(self._starting_weights(weights))

    def base(self) -> np.ndarray:
        """The dense base members start from: the center (PGPE: the center and its scales, [2, n])."""
        return self.center

    def _rekey(self):
        self._base = self.base()
        self._key = base_key(self._base)

    def pairs(self) -> int:
        """Mirrored pairs per generation."""
        return self.config.population_size // 2

    def mutation_rank(self) -> int:
        return 0

    def mutation(self, index: int, sign: int) -> tuple:
        """The (index, sigma[, rank]) mutation of the member on the `sign` side of pair `index`."""
        raise NotImplementedError

    def _ask(self):
        config = self.config
        if self.indices is None:
            rank = self.mutation_rank()
            self.indices = [self.space.sample_offset(self.rng, rank) for _ in range(self.pairs())]
        requests = [
            EvaluationRequest(Genome(self._key, (self.mutation(index, sign),)), config.episodes_per_member, "perturbation")
            for index in self.indices
            for sign in (1, -1)
        ]
        if config.center_episodes:
            requests.append(EvaluationRequest(Genome(self._key), config.center_episodes, "center"))
        return requests

    def _pair_fitness(self, means: np.ndarray) -> np.ndarray:
        """The members' mean returns as [pairs, 2] (+ then -); records the center's return when it was played."""
        assert self.indices is not None, "the round's indices are drawn in _ask"
        pairs = len(self.indices)
        if self.config.center_episodes:
            self.center_fitness = float(means[-1])
        return means[: 2 * pairs].reshape(pairs, 2)

    def _next_center(self, center: np.ndarray) -> None:
        """Moves to the updated center and starts the next generation (the center it leaves is the record's elite:
        elite_bases keeps its base)."""
        self._base_before = self._base
        self.center = np.asarray(center, np.float32)
        self._rekey()
        self.indices = None
        self._start_next_generation()

    @property
    def phase(self) -> str:
        return "perturbation"

    @property
    def elite(self) -> Genome:
        """The center, as a genome on its base (see bases())."""
        return Genome(self._key)

    def bases(self) -> dict[str, np.ndarray]:
        """{key: base} of the dense base the current requests and the elite refer to."""
        return {self._key: self._base}

    def elite_bases(self) -> dict[str, np.ndarray]:
        """bases() and the base of the center the last generation played (its record's elite)."""
        before = self._base_before
        return self.bases() if before is None else {**self.bases(), base_key(before): before}

    # -- state ----------------------------------------------------------------------------
    def _common_state(self) -> dict:
        return dict(
            super()._common_state(),
            indices=None if self.indices is None else list(self.indices),
            center=self.center.copy(),
            center_fitness=self.center_fitness,
            base_before=None if self._base_before is None else self._base_before.copy(),
        )

    def _load_center(self, state: dict) -> None:
        """indices, center and center_fitness of _common_state() (ValueError for a corrupt center)."""
        self.indices = None if state["indices"] is None else [int(i) for i in state["indices"]]
        self.center = checked_center(state["center"], self.space.num_parameters, self.kind, "the center")
        self.center_fitness = state["center_fitness"]
        before = state["base_before"] if state["version"] >= 2 else None
        self._base_before = None if before is None else np.array(before, np.float32)
        if self._base_before is not None and self._base_before.shape[-1] != self.space.num_parameters:
            raise ValueError(f"corrupt {self.kind} state: base_before must hold {self.space.num_parameters} values per row")


def checked_center(values: object, size: int, kind: str, what: str) -> np.ndarray:
    """A saved center as float32 [size], or a ValueError naming `what` in a corrupt `kind` state."""
    center = np.array(values, np.float32)
    if center.shape != (size,) or not np.isfinite(center).all():
        raise ValueError(f"corrupt {kind} state: {what} must be [{size}] finite values")
    return center
