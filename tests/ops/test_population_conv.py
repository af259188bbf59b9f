"""population_conv2d: each batch entry convolved with its slot's filters, against tf.nn.conv2d per member."""

import numpy as np
import pytest
import tensorflow as tf

from support import assert_close_to_scale
from workbench.ops import LowRankPerturbation, population_conv2d, population_matmul


def per_member_conv(x, filters, indices, stride, padding, bias=None, relu=False):
    outputs = []
    for b, slot in enumerate(indices):
        kernel = tf.cast(filters[slot], tf.float32)
        y = tf.nn.conv2d(x[b : b + 1], kernel, strides=stride, padding=padding)
        if bias is not None:
            y += tf.cast(bias[slot], tf.float32)
        outputs.append(tf.nn.relu(y) if relu else y)
    return tf.concat(outputs, 0).numpy()


@pytest.mark.parametrize("backend", ["custom", "reference"])
@pytest.mark.parametrize("padding", ["SAME", "VALID"])
@pytest.mark.parametrize("kernel_size, stride, size", [(8, 4, 84), (4, 2, 21), (3, 1, 11), (3, 2, 10)])
def test_matches_per_member_conv2d(rng, backend, padding, kernel_size, stride, size):
    channels, out, slots, batch = 4, 8, 3, 5
    x = rng.standard_normal((batch, size, size, channels)).astype(np.float32)
    filters = rng.standard_normal((slots, kernel_size, kernel_size, channels, out)).astype(np.float32)
    bias = rng.standard_normal((slots, out)).astype(np.float32)
    indices = np.array([2, 0, 2, 1, 1], np.int32)
    expected = per_member_conv(x, filters, indices, stride, padding, bias, relu=True)
    y = population_conv2d(x, filters, indices, strides=stride, padding=padding, bias=bias, relu=True, backend=backend)
    assert_close_to_scale(y, expected)
    flat = filters.reshape(slots, -1, out)
    y_flat = population_conv2d(
        x, flat, indices, kernel_size=kernel_size, strides=stride, padding=padding, bias=bias, relu=True, backend=backend
    )
    assert_close_to_scale(y_flat, expected)


@pytest.mark.parametrize("out", [5, 16, 32, 48, 64, 119])
@pytest.mark.parametrize("dtype", [tf.float32, tf.bfloat16], ids=["float32", "bfloat16"])
def test_every_output_width(rng, out, dtype):
    """Each column tile of the kernel (64, 32, 16 and the rest) and rows that do not fill a tile."""
    x = rng.standard_normal((3, 13, 11, 3)).astype(np.float32)
    filters = tf.cast(rng.standard_normal((2, 3, 2, 3, out)).astype(np.float32), dtype)
    bias = tf.cast(rng.standard_normal((2, out)).astype(np.float32), dtype)
    indices = np.array([1, 0, 1], np.int32)
    expected = per_member_conv(x, filters, indices, (2, 1), "SAME", bias, relu=True)
    assert_close_to_scale(population_conv2d(x, filters, indices, strides=(2, 1), bias=bias, relu=True), expected)


@pytest.mark.parametrize("backend", ["custom", "reference"])
def test_kernel_larger_than_image(rng, backend):
    x = rng.standard_normal((2, 4, 4, 2)).astype(np.float32)
    filters = rng.standard_normal((1, 5, 5, 2, 3)).astype(np.float32)
    indices = np.zeros(2, np.int32)
    same = population_conv2d(x, filters, indices, strides=3, backend=backend)
    assert_close_to_scale(same, per_member_conv(x, filters, indices, 3, "SAME"))
    assert population_conv2d(x, filters, indices, padding="VALID", backend=backend).shape == (2, 0, 0, 3)


def test_bfloat16_filters(rng):
    x = rng.standard_normal((3, 12, 12, 2)).astype(np.float32)
    filters = tf.cast(rng.standard_normal((2, 3, 3, 2, 16)).astype(np.float32), tf.bfloat16)
    indices = np.array([1, 0, 1], np.int32)
    assert_close_to_scale(population_conv2d(x, filters, indices), per_member_conv(x, filters, indices, 1, "SAME"))


@pytest.mark.parametrize("out, rank", [(5, 2), (32, 1), (16, 3)])  # patches built (5) or read in place
def test_perturbed_conv_equals_conv_with_materialised_filters(rng, out, rank):
    x = rng.standard_normal((4, 9, 9, 3)).astype(np.float32)
    filters = rng.standard_normal((2, 3, 3, 3, out)).astype(np.float32)
    parents = np.array([0, 0, 1, 0], np.int32)
    p = LowRankPerturbation(
        rng.uniform(0.1, 1, 4).astype(np.float32),
        rng.standard_normal((4, 27, rank)).astype(np.float32),
        rng.standard_normal((4, out, rank)).astype(np.float32),
    )
    materialised = np.stack(
        [filters[parents[b]] + p.sigmas[b] * (p.factor_a[b] @ p.factor_b[b].T).reshape(3, 3, 3, out) for b in range(4)]
    )
    expected = per_member_conv(x, materialised, np.arange(4), 2, "SAME")
    for backend in ("custom", "reference"):
        assert_close_to_scale(population_conv2d(x, filters, parents, strides=2, perturbation=p, backend=backend), expected)


@pytest.mark.parametrize("dtype", [tf.float32, tf.bfloat16], ids=["float32", "bfloat16"])
@pytest.mark.parametrize(
    "size, kernel, stride, channels, out, padding",
    [
        (84, 8, 4, 4, 32, "SAME"),
        (21, 4, 2, 8, 64, "SAME"),
        (11, 3, 1, 4, 16, "SAME"),
        (10, 3, 2, 3, 16, "VALID"),
        (13, 3, 2, 5, 48, "SAME"),
        (4, 5, 3, 2, 16, "SAME"),
        (6, 2, 2, 3, 80, "VALID"),
    ],
)
def test_patches_read_in_place_give_the_bits_of_built_patches(rng, dtype, size, kernel, stride, channels, out, padding):
    """Output widths that are multiples of 16 read the patches in place from a padded image; the sums are the
    matmul op's over tf.image.extract_patches, bit for bit (depth summed in order either way)."""
    x = rng.standard_normal((5, size, size, channels)).astype(np.float32)
    filters = tf.cast(rng.standard_normal((3, kernel * kernel * channels, out)).astype(np.float32), dtype)
    indices = np.array([2, 0, 2, 1, 1], np.int32)
    y = population_conv2d(x, filters, indices, kernel_size=kernel, strides=stride, padding=padding, backend="custom")
    patches = tf.image.extract_patches(x, [1, kernel, kernel, 1], [1, stride, stride, 1], [1, 1, 1, 1], padding)
    height, width = patches.shape[1:3]
    y_matmul = population_matmul(tf.reshape(patches, [5, height * width, -1]), filters, indices, backend="custom")
    np.testing.assert_array_equal(y.numpy(), tf.reshape(y_matmul, y.shape).numpy())


@pytest.mark.parametrize("out", [5, 32])
@pytest.mark.parametrize("backend", ["custom", "reference"])
def test_uint8_images_are_read_as_scaled_floats(rng, backend, out):
    x = rng.integers(0, 256, (3, 12, 10, 4), dtype=np.uint8)
    filters = rng.standard_normal((2, 3, 3, 4, out)).astype(np.float32)
    indices = np.array([1, 0, 1], np.int32)
    for scale in (None, 0.5):
        y = population_conv2d(x, filters, indices, strides=2, input_scale=scale, backend=backend)
        floats = tf.cast(x, tf.float32) * (1.0 / 255.0 if scale is None else scale)
        np.testing.assert_array_equal(y.numpy(), population_conv2d(floats, filters, indices, strides=2, backend=backend).numpy())


@pytest.mark.parametrize(
    "kwargs, error, pattern",
    [
        (dict(x=np.ones((2, 8, 8), np.float32)), ValueError, "x must be"),
        (
            dict(filters=np.ones((2, 3, 3, 5, 4), np.float32)),
            ValueError,
            r"x.shape\[-1\] \(channels\) = 3 must equal filters.shape\[3\] = 5",
        ),
        (dict(filters=np.ones((2, 27, 4), np.float32)), ValueError, "kernel_size is required"),
        (dict(filters=np.ones((2, 27, 4), np.float32), kernel_size=2), ValueError, "kh\\*kw\\*channels"),
        (dict(padding="same"), ValueError, "padding must be"),
        (dict(strides=0), ValueError, "strides must be"),
        (dict(kernel_size=5), ValueError, "kernel_size"),
        (dict(indices=np.array([0, 5], np.int32)), ValueError, r"indices\[1\] = 5 is out of range"),
        (dict(x=np.ones((2, 8, 8, 3), np.int32)), TypeError, "x must be float32 or uint8"),
        (dict(input_scale=0.5), ValueError, "input_scale applies to uint8 x"),
        (dict(x=np.ones((2, 8, 8, 3), np.uint8), input_scale=float("nan")), ValueError, "input_scale must be a finite"),
        (dict(x=np.ones((2, 8, 8, 3), np.uint8), input_scale=0), ValueError, "input_scale must be a finite"),
    ],
)
def test_bad_input_names_the_argument(kwargs, error, pattern):
    args = dict(
        x=np.ones((2, 8, 8, 3), np.float32), filters=np.ones((2, 3, 3, 3, 4), np.float32), indices=np.array([0, 1], np.int32)
    )
    args.update(kwargs)
    with pytest.raises(error, match=pattern):
        population_conv2d(**args)


def test_raw_conv_op_validates_geometry():
    from workbench.ops import load_library

    library = load_library()
    images = np.ones((2, 8, 8, 3), np.float32)
    expected = r"kernel_h \* kernel_w \* x.shape\[3\] and weights.shape\[1\]"
    with pytest.raises((ValueError, tf.errors.InvalidArgumentError), match=expected):
        tf.function(
            lambda: library.workbench_population_conv2d(
                x=images,
                weights=np.ones((1, 26, 4), np.float32),
                indices=[0, 0],
                biases=[],
                kernel_size=[3, 3],
                strides=[1, 1],
                padding="SAME",
            )
        )()
    expected = "kernel_size and strides must each be two positive integers"
    with pytest.raises((ValueError, tf.errors.InvalidArgumentError), match=expected):
        tf.function(
            lambda: library.workbench_population_conv2d(
                x=images,
                weights=np.ones((1, 27, 4), np.float32),
                indices=[0, 0],
                biases=[],
                kernel_size=[3, 3],
                strides=[0, 1],
                padding="SAME",
            )
        )()
    with pytest.raises((ValueError, tf.errors.InvalidArgumentError), match="x must be"):
        library.workbench_population_conv2d(
            x=images[0],
            weights=np.ones((1, 27, 4), np.float32),
            indices=[0],
            biases=[],
            kernel_size=[3, 3],
            strides=[1, 1],
            padding="SAME",
        )
    y = library.workbench_population_conv2d(
        x=images,
        weights=np.ones((1, 27, 4), np.float32),
        indices=[0, 0],
        biases=[],
        kernel_size=[3, 3],
        strides=[2, 2],
        padding="VALID",
    )
    assert y.shape == (2, 3, 3, 4) and np.all(y.numpy() == 27.0)
