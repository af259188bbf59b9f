"""Training-time exploration for continuous actions (OpenAI-ES): N(0, scale^2) added to every action, clipped to
the control range again, drawn from a generator per episode seeded by the episode's seed, so that an episode
gets the same noise on any evaluator layout."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


class ActionNoise:
    """One generator per episode slot, reseeded when an episode starts there."""

    def __init__(self, scale: float, slots: int, low: np.ndarray, high: np.ndarray) -> None:
        self.scale, self.low, self.high = float(scale), low, high
        self._generators: list[np.random.Generator | None] = [None] * slots

    def begin(self, slots: Sequence[int], seeds: Sequence[int]) -> None:
        for slot, seed in zip(slots, seeds):
            self._generators[slot] = np.random.default_rng(seed & 0xFFFFFFFFFFFFFFFF)

    def apply(self, active: np.ndarray, actions: np.ndarray) -> np.ndarray:
        """The running episodes' actions [len(active), size] with their noise, clipped, float32."""
        noise = np.stack([self._generator(slot).standard_normal(actions.shape[1]) for slot in active])
        return np.clip(actions + self.scale * noise, self.low, self.high).astype(np.float32)

    def _generator(self, slot: int) -> np.random.Generator:
        generator = self._generators[slot]
        assert generator is not None, f"episode slot {slot} has not started an episode"
        return generator
