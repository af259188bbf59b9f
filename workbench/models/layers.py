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
    reads_uint8 = True  # apply() takes uint8 images (read as float(x) * UINT8_SCALE inside the op)

    def output_shape(self, input_shape: tuple[int, ...]) -> tuple[int, ...]:
        height, width, _ = input_shape
        return (-(-height // self.stride), -(-width // self.stride), self.filters)

    def kernel_shape(self, input_shape: tuple[int, ...]) -> tuple[int, int]:
        return (self.kernel_size * self.kernel_size * input_shape[-1], self.filters)

    def forward_one(self, x: tf.Tensor, kernel: Any, bias: Any) -> tf.Tensor:
        """The layer for one member (numpy kernel [K, N] and bias [N]), no ReLU: plain TensorFlow."""
        kernel = np.asarray(kernel, np.float32).reshape(self.kernel_size, self.kernel_size, -1, self.filters)
        return tf.nn.conv2d(x, kernel, strides=self.stride, padding="SAME") + np.asarray(bias, np.float32)

    def apply(
        self,
        x: tf.Tensor,
        kernel: tf.Variable,
        bias: tf.Variable,
        slots: tf.Tensor,
        relu: bool,
        perturbation: Any,
        backend: str | None,
    ) -> tf.Tensor:
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


# How a dense layer flattens a spatial input [height, width, channels] into the rows of its kernel:
# "channels_first" puts each channel's map in one run of rows (c, h, w), "channels_last" is TensorFlow's
# reshape of NHWC (h, w, c). Both are the same family of networks (a permutation of the kernel's rows); they
# differ in speed: the dense kernel skips the weight rows whose input is zero, and a ReLU'd feature map is zero
# in runs along a channel (uniform backgrounds), so channel-first makes the skipped rows contiguous and the
# memory system fetches fewer of them (docs/benchmarks.md, population inference).
FLATTEN_ORDERS = ("channels_first", "channels_last")


@dataclass(frozen=True)
class Dense:
    """Fully connected layer; flattens a spatial input in `flatten` order (FLATTEN_ORDERS)."""

    name: str
    units: int
    flatten: str = "channels_last"
    reads_uint8 = False

    def flat(self, x: tf.Tensor) -> tf.Tensor:
        """x [batch, ...] as [batch, features] in this layer's flatten order."""
        if x.shape.rank == 4 and self.flatten == "channels_first":
            x = tf.transpose(x, [0, 3, 1, 2])
        return tf.reshape(x, [tf.shape(x)[0], -1])

    def output_shape(self, input_shape: tuple[int, ...]) -> tuple[int, ...]:
        return (self.units,)

    def kernel_shape(self, input_shape: tuple[int, ...]) -> tuple[int, int]:
        size = 1
        for dim in input_shape:
            size *= dim
        return (size, self.units)

    def forward_one(self, x: tf.Tensor, kernel: Any, bias: Any) -> tf.Tensor:
        """The layer for one member (numpy kernel [K, N] and bias [N]), no ReLU: plain TensorFlow."""
        return tf.matmul(self.flat(x), np.asarray(kernel, np.float32)) + np.asarray(bias, np.float32)

    def apply(
        self,
        x: tf.Tensor,
        kernel: tf.Variable,
        bias: tf.Variable,
        slots: tf.Tensor,
        relu: bool,
        perturbation: Any,
        backend: str | None,
    ) -> tf.Tensor:
        if x.shape.rank != 2:
            x = tf.reshape(self.flat(x), [tf.shape(x)[0], kernel.shape[1]])
        return population_matmul(x, kernel, slots, bias=bias, relu=relu, perturbation=perturbation, backend=backend)
