"""Pure-TensorFlow reference implementations of the population ops.

They gather each member's weights and use batched matmuls: correct, device
agnostic (they run wherever TensorFlow places them, GPU included), and the
baseline the custom kernels are compared with. Inputs are assumed validated
(see workbench.ops.population).
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf


def population_matmul(x: Any, weights: Any, indices: Any, bias: Any = None, relu: bool = False) -> tf.Tensor:
    """y[b] = x[b] @ weights[indices[b]] (+ bias[indices[b]]), x of rank 2 or 3."""
    member_weights = tf.cast(tf.gather(weights, indices), tf.float32)
    y = _batched_matmul(x, member_weights)
    if bias is not None:
        y += _broadcast_rows(tf.cast(tf.gather(bias, indices), tf.float32), x)
    return tf.nn.relu(y) if relu else y


def perturbed_population_matmul(
    x: Any,
    weights: Any,
    parents: Any,
    sigmas: Any,
    factor_a: Any,
    factor_b: Any,
    bias: Any = None,
    bias_noise: Any = None,
    relu: bool = False,
) -> tf.Tensor:
    """population_matmul with member b's weights W[parents[b]] + sigmas[b] * A[b] @ B[b]^T.

    Computed as x W + sigma (x A) B^T, without forming any member's weights.
    """
    y = population_matmul(x, weights, parents, bias=bias)
    projected = _batched_matmul(x, factor_a)  # [B, (M,) R]
    lowrank = _batched_matmul(projected, tf.linalg.matrix_transpose(factor_b))
    scale = sigmas[:, None] if x.shape.rank == 2 else sigmas[:, None, None]
    y += scale * lowrank
    if bias_noise is not None:
        y += _broadcast_rows(sigmas[:, None] * bias_noise, x)
    return tf.nn.relu(y) if relu else y


def _batched_matmul(x, member_matrices):
    if x.shape.rank == 2:
        return tf.squeeze(tf.matmul(x[:, None, :], member_matrices), axis=1)
    return tf.matmul(x, member_matrices)


def _broadcast_rows(per_member, x):
    """[B, N] -> broadcastable against y of x's rank."""
    return per_member if x.shape.rank == 2 else per_member[:, None, :]
