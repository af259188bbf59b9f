"""Layer descriptions of population models: shapes, fan-in and how each layer runs for a population."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import tensorflow as tf

from workbench.ops import population_conv2d, population_matmul


@dataclass(frozen=True)
class Conv2D:
    """Convolution with SAME padding; its kernel is stored im2col-flattened [kh*kw*in, filters]."""

    name: str
    filters: int
    kernel_size: int
    stride: int

    def output_shape(self, input_shape: tuple[int, ...]) -> tuple[int, ...]:
        height, width, _ = input_shape
        return (-(-height // self.stride), -(-width // self.stride), self.filters)

    def kernel_shape(self, input_shape: tuple[int, ...]) -> tuple[int, int]:
        return (self.kernel_size * self.kernel_size * input_shape[-1], self.filters)

    def forward_one(self, x: tf.Tensor, kernel: Any, bias: Any) -> tf.Tensor:
        """The layer for one member (numpy kernel [K, N] and bias [N]), no ReLU: plain TensorFlow."""
        kernel = np.asarray(kernel, np.float32).reshape(self.kernel_size, self.kernel_size, -1, self.filters)
        return tf.nn.conv2d(x, kernel, strides=self.stride, padding="SAME") + np.asarray(bias, np.float32)

    def apply(self, x: tf.Tensor, kernel: tf.Variable, bias: tf.Variable, slots: tf.Tensor, relu: bool,
              perturbation: Any, backend: str | None) -> tf.Tensor:
        return population_conv2d(
            x,
            kernel,
            slots,
            kernel_size=self.kernel_size,
            strides=self.stride,
            padding="SAME",
            bias=bias,
            relu=relu,
            perturbation=perturbation,
            backend=backend,
        )


@dataclass(frozen=True)
class Dense:
    """Fully connected layer; flattens a spatial input (height, width, channels order)."""

    name: str
    units: int

    def output_shape(self, input_shape: tuple[int, ...]) -> tuple[int, ...]:
        return (self.units,)

    def kernel_shape(self, input_shape: tuple[int, ...]) -> tuple[int, int]:
        size = 1
        for dim in input_shape:
            size *= dim
        return (size, self.units)

    def forward_one(self, x: tf.Tensor, kernel: Any, bias: Any) -> tf.Tensor:
        """The layer for one member (numpy kernel [K, N] and bias [N]), no ReLU: plain TensorFlow."""
        x = tf.reshape(x, [tf.shape(x)[0], -1])
        return tf.matmul(x, np.asarray(kernel, np.float32)) + np.asarray(bias, np.float32)

    def apply(self, x: tf.Tensor, kernel: tf.Variable, bias: tf.Variable, slots: tf.Tensor, relu: bool,
              perturbation: Any, backend: str | None) -> tf.Tensor:
        if x.shape.rank != 2:
            x = tf.reshape(x, [tf.shape(x)[0], kernel.shape[1]])
        return population_matmul(x, kernel, slots, bias=bias, relu=relu, perturbation=perturbation, backend=backend)
