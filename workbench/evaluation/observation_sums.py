"""Per episode slot, float64 sums of the raw observations a sampled episode's policy read (observation
normalisation): accumulated inside the inference graph, reset when an episode starts, read when it ends.
Whether an episode is sampled is the normalisation's choice from the episode's seed (the same on any layout)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import tensorflow as tf

from workbench.models.observation_normalization import ObservationNormalization


class ObservationSums:
    """count flag, sum and sum of squares per slot as TF variables; see the module."""

    def __init__(self, normalization: ObservationNormalization, slots: int, size: int) -> None:
        self.normalization, self.size = normalization, size
        self._sampled = tf.Variable(tf.zeros([slots], tf.float64), trainable=False)
        self._sums = tf.Variable(tf.zeros([slots, size], tf.float64), trainable=False)
        self._squares = tf.Variable(tf.zeros([slots, size], tf.float64), trainable=False)

    def accumulate(self, observations: tf.Tensor, episode_slots: tf.Tensor) -> None:
        """Adds the observations of sampled episodes to their slots' sums (inside the graph)."""
        x = tf.cast(tf.reshape(observations, [tf.shape(observations)[0], -1]), tf.float64)
        x = x * tf.gather(self._sampled, episode_slots)[:, None]
        self._sums.scatter_add(tf.IndexedSlices(x, episode_slots))
        self._squares.scatter_add(tf.IndexedSlices(x * x, episode_slots))

    def begin(self, slots: Sequence[int] | np.ndarray, seeds: Sequence[int]) -> None:
        """Zeroes the sums of the episodes starting in `slots` and marks those the normalisation samples."""
        index = tf.constant(np.asarray(slots, np.int32))
        sampled = [1.0 if self.normalization.sampled(seed) else 0.0 for seed in seeds]
        self._sampled.scatter_update(tf.IndexedSlices(tf.constant(sampled, tf.float64), index))
        zeros = tf.zeros((len(slots), self.size), tf.float64)
        self._sums.scatter_update(tf.IndexedSlices(zeros, index))
        self._squares.scatter_update(tf.IndexedSlices(zeros, index))

    def read(self, slots: Sequence[int] | np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(sampled flag [k], sums [k, d], sums of squares [k, d]) of the episodes in `slots`."""
        index = tf.constant(np.asarray(slots, np.int32))
        return (
            tf.gather(self._sampled, index).numpy(),
            tf.gather(self._sums, index).numpy(),
            tf.gather(self._squares, index).numpy(),
        )
