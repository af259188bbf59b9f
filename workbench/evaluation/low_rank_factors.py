"""Perturbed mode: per episode slot, the low-rank factors of the mutation its episode's child adds to its parent's
weights (written when the episode starts, gathered by the inference graph), so that children are never
materialised. An unperturbed episode's slot holds zeros."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import tensorflow as tf

from workbench.evolution import ParameterSpace
from workbench.ops import LowRankPerturbation, assign_slots


class LowRankFactors:
    """Scale and per-layer factors (a [k, rank], b [n, rank], bias [n]) per slot as TF variables."""

    def __init__(self, space: ParameterSpace, kernel_shapes: Sequence[tuple[int, int]], slots: int, rank: int) -> None:
        self.space, self.rank = space, rank
        self._scale = tf.Variable(tf.zeros([slots]), trainable=False)
        self._factors = [
            (
                tf.Variable(tf.zeros([slots, k, rank]), trainable=False),
                tf.Variable(tf.zeros([slots, n, rank]), trainable=False),
                tf.Variable(tf.zeros([slots, n]), trainable=False),
            )
            for k, n in kernel_shapes
        ]

    def perturbations(self, episode_slots: tf.Tensor) -> list[LowRankPerturbation]:
        """The running episodes' perturbation per layer (inside the graph)."""
        scale = tf.gather(self._scale, episode_slots)
        return [
            LowRankPerturbation(scale, tf.gather(a, episode_slots), tf.gather(b, episode_slots), tf.gather(bias, episode_slots))
            for a, b, bias in self._factors
        ]

    def write(self, slots: Sequence[int], mutations: Sequence[Any]) -> None:
        """Loads the factors of the episodes starting in `slots`: a mutation (offset, sigma) each, None when the
        episode runs its weights unperturbed."""
        scales = [0.0 if m is None else self.space.low_rank_scale(m[1], self.rank) for m in mutations]
        assign_slots(self._scale, slots, np.asarray(scales, np.float32))
        per_slot = [self.space.low_rank_factors(m[0], self.rank) if m is not None else None for m in mutations]
        for layer, variables in enumerate(self._factors):
            for part, variable in enumerate(variables):
                shape = tuple(variable.shape[1:])
                values = np.stack([f[layer][part] if f is not None else np.zeros(shape, np.float32) for f in per_slot])
                assign_slots(variable, slots, values)
