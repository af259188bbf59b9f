"""Virtual batch normalisation (Salimans et al. 2016, 2017) folded into each member's weights.

A fixed reference batch of observations (collected once per run, e.g. 128 observations of random
play) fixes the normalisation statistics of every hidden layer: for a member, the pre-activations
y = layer(x) of the reference batch give a per-channel mean m and variance v, and the layer then
computes (y - m) / sqrt(v + epsilon) before its ReLU. The statistics come from the member's own
forward pass on the reference batch, layer after layer (the normalised outputs feed the next layer).

Folded form: kernel / s and (bias - m) / s per output channel, with s = sqrt(v + epsilon), is the
same function, so the population ops run unchanged; the folding happens once per member when its
weights are loaded into a slot (PopulationModel(reference_batch=...)). The normalisation has no scale
or shift parameters of its own, so a hidden layer's bias has no effect (it cancels in y - m); the
output layer is not normalised.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import tensorflow as tf

from workbench.ops.population import UINT8_SCALE

EPSILON = 1e-5


def reference_input(reference_batch: Any, input_shape: tuple) -> tf.Tensor:
    """The reference batch as the float32 input the model sees ([n] + input_shape; uint8 scaled to [0, 1])."""
    batch = np.asarray(reference_batch)
    if batch.ndim != len(input_shape) + 1 or tuple(batch.shape[1:]) != tuple(input_shape) or batch.shape[0] < 2:
        raise ValueError(f"reference_batch must be [n >= 2] + {list(input_shape)} observations, got shape {batch.shape}")
    if batch.dtype == np.uint8:
        return tf.constant(batch.astype(np.float32) * np.float32(UINT8_SCALE))
    if batch.dtype != np.float32 or not np.isfinite(batch).all():
        raise ValueError(f"reference_batch must be uint8 or finite float32, got {batch.dtype}")
    return tf.constant(batch)


def fold(layers: Any, layer_weights: list, reference: tf.Tensor, epsilon: float = EPSILON) -> list:
    """[(kernel, bias)] per layer with every hidden layer's statistics on `reference` folded in (float32 numpy)."""
    folded, x = [], reference
    last = len(layers) - 1
    for i, (layer, (kernel, bias)) in enumerate(zip(layers, layer_weights)):
        if i == last:
            folded.append((kernel, bias))
            break
        y = layer.forward_one(x, kernel, bias)
        axes = list(range(len(y.shape) - 1))
        mean, variance = tf.nn.moments(tf.cast(y, tf.float64), axes)
        scale = (1.0 / np.sqrt(variance.numpy() + epsilon)).astype(np.float32)
        mean = mean.numpy().astype(np.float32)
        folded.append(((kernel * scale[None, :]).astype(np.float32), ((bias - mean) * scale).astype(np.float32)))
        x = tf.nn.relu((y - mean) * scale)
    return folded
