"""Public population ops: matmul and conv2d for many networks with their own weights.

Each function validates its arguments (errors name the argument), then runs
the custom C++ kernel or its pure-TF reference (workbench.ops.reference):
`backend="custom"` or `"reference"`, or by default the custom kernel unless
the environment variable WORKBENCH_PURE_TF=1 is set. Works eagerly and inside
tf.function. No gradients: evolution does not differentiate through them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import tensorflow as tf

from workbench.ops import _loader, reference
from workbench.ops._loader import BACKENDS

WEIGHT_DTYPES = (tf.float32, tf.bfloat16)
# How uint8 images become the [0, 1] floats networks see (Atari frames): float(x) * UINT8_SCALE, one rounding.
UINT8_SCALE = 1.0 / 255.0


@dataclass
class LowRankPerturbation:
    """Member b's weights become W[parent[b]] + sigmas[b] * factor_a[b] @ factor_b[b]^T.

    The rank-r form of EGGROLL (arXiv 2511.16652); its 1/sqrt(r) scale is left
    to the caller (fold it into sigmas).
    """

    sigmas: tf.Tensor  # [batch] float32
    factor_a: tf.Tensor  # [batch, K, rank] float32
    factor_b: tf.Tensor  # [batch, N, rank] float32
    bias_noise: tf.Tensor | None = None  # [batch, N] float32: bias += sigmas[b] * bias_noise[b]


def resolve_backend(backend: str | None = None) -> str:
    """The backend a call will use: the argument, else the environment's choice."""
    if backend is None:
        return "reference" if _loader.pure_tf_requested() else "custom"
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS} or None, got {backend!r}")
    return backend


def population_matmul(
    x: Any,
    weights: Any,
    indices: Any,
    bias: Any = None,
    relu: bool = False,
    perturbation: LowRankPerturbation | None = None,
    backend: str | None = None,
) -> tf.Tensor:
    """y[b] = x[b] @ weights[indices[b]] (+ bias[indices[b]]), optionally ReLU, float32 result.

    Args:
      x: float32 [batch, K] or [batch, rows, K].
      weights: float32 or bfloat16 [slots, K, N]; one slot per population member.
      indices: int32/int64 [batch], slot of each batch entry (the parent when
        `perturbation` is given). Entries that share a slot share its weight reads.
      bias: optional [slots, N] of the weights' dtype.
      relu: apply max(0, .) to the result.
      perturbation: optional LowRankPerturbation (the perturbed mode).
      backend: "custom", "reference" or None (see module docstring).
    """
    backend = resolve_backend(backend)
    x = _as_tensor(x, "x", (tf.float32,))
    weights = _as_tensor(weights, "weights", WEIGHT_DTYPES)
    _check_rank(x, "x", (2, 3), "[batch, K] or [batch, rows, K]")
    _check_rank(weights, "weights", (3,), "[slots, K, N]")
    _check_match(x.shape[-1], weights.shape[1], "x.shape[-1] (K)", "weights.shape[1]")
    indices, bias = _checked_slots_and_bias(x, weights, "weights", indices, bias, perturbation)
    if backend == "custom":
        return _run_custom("population_matmul", x, weights, indices, bias, perturbation, relu=relu)
    if perturbation is None:
        return reference.population_matmul(x, weights, indices, bias=bias, relu=relu)
    p = _validated_perturbation(perturbation, x, weights)
    return reference.perturbed_population_matmul(
        x, weights, indices, p.sigmas, p.factor_a, p.factor_b, bias=bias, bias_noise=p.bias_noise, relu=relu
    )


def population_conv2d(
    x: Any,
    filters: Any,
    indices: Any,
    *,
    kernel_size: Any = None,
    strides: Any = 1,
    padding: str = "SAME",
    bias: Any = None,
    relu: bool = False,
    perturbation: LowRankPerturbation | None = None,
    backend: str | None = None,
    input_scale: float | None = None,
) -> tf.Tensor:
    """2-D convolution where batch entry b uses the filters of slot indices[b].

    The custom kernel builds the im2col patches block by block in cache; the
    reference runs tf.image.extract_patches and the reference matmul. Only the
    batch entries passed are computed.

    Args:
      x: float32 [batch, height, width, channels] (NHWC), or uint8 images read as
        float(x) * input_scale (default UINT8_SCALE = 1/255) without a float copy of the batch.
      filters: [slots, kh, kw, channels, out] or, im2col-flattened,
        [slots, kh * kw * channels, out] together with `kernel_size`.
      indices, bias, relu, perturbation, backend: as population_matmul; a
        perturbation's factor_a is [batch, kh * kw * channels, rank].
      strides: int or (sh, sw). padding: "SAME" or "VALID" (as tf.nn.conv2d).
      input_scale: uint8 x only (see x).
    """
    x = _as_tensor(x, "x", (tf.float32, tf.uint8))
    input_scale = _input_scale(x, input_scale)
    filters = _as_tensor(filters, "filters", WEIGHT_DTYPES)
    _check_rank(x, "x", (4,), "[batch, height, width, channels]")
    _check_rank(filters, "filters", (3, 5), "[slots, kh, kw, channels, out] or [slots, kh*kw*channels, out]")
    if padding not in ("SAME", "VALID"):
        raise ValueError(f"padding must be 'SAME' or 'VALID', got {padding!r}")
    stride_h, stride_w = _pair(strides, "strides")
    channels = x.shape[-1]
    if filters.shape.rank == 5:
        kernel_h, kernel_w = filters.shape[1], filters.shape[2]
        if kernel_size is not None and tuple(_pair(kernel_size, "kernel_size")) != (kernel_h, kernel_w):
            raise ValueError(f"kernel_size {kernel_size} disagrees with filters.shape[1:3] = {(kernel_h, kernel_w)}")
        _check_match(channels, filters.shape[3], "x.shape[-1] (channels)", "filters.shape[3]")
        filters = tf.reshape(filters, [filters.shape[0], kernel_h * kernel_w * filters.shape[3], filters.shape[4]])
    else:
        if kernel_size is None:
            raise ValueError("kernel_size is required when filters are im2col-flattened [slots, kh*kw*channels, out]")
        kernel_h, kernel_w = _pair(kernel_size, "kernel_size")
    if channels is not None:
        _check_match(kernel_h * kernel_w * channels, filters.shape[1], "kh*kw*channels of x", "filters.shape[1]")
    if resolve_backend(backend) == "reference":
        if x.dtype == tf.uint8:
            x = tf.cast(x, tf.float32) * input_scale
        return _reference_conv2d(
            x, filters, indices, (kernel_h, kernel_w), (stride_h, stride_w), padding, bias, relu, perturbation
        )
    indices, bias = _checked_slots_and_bias(x, filters, "filters", indices, bias, perturbation)
    return _run_custom(
        "population_conv2d",
        x,
        filters,
        indices,
        bias,
        perturbation,
        kernel_size=[kernel_h, kernel_w],
        strides=[stride_h, stride_w],
        padding=padding,
        relu=relu,
        input_scale=input_scale,
    )


def _input_scale(x, input_scale):
    """The scale the conv reads x with: uint8 x's (UINT8_SCALE by default), 1.0 for float32 x."""
    if x.dtype != tf.uint8:
        if input_scale is not None and input_scale != 1.0:
            raise ValueError(f"input_scale applies to uint8 x; x is {x.dtype.name}, got input_scale={input_scale!r}")
        return 1.0
    if input_scale is None:
        return UINT8_SCALE
    if (
        isinstance(input_scale, bool)
        or not isinstance(input_scale, (int, float))
        or not np.isfinite(input_scale)
        or input_scale <= 0
    ):
        raise ValueError(f"input_scale must be a finite number > 0, got {input_scale!r}")
    return float(input_scale)


def _reference_conv2d(x, filters, indices, kernel_size, strides, padding, bias, relu, perturbation):
    """im2col with tf.image.extract_patches, then the matmul (validated there)."""
    patches = tf.image.extract_patches(
        x, sizes=[1, *kernel_size, 1], strides=[1, *strides, 1], rates=[1, 1, 1, 1], padding=padding
    )
    shape = tf.shape(patches)
    batch, out_h, out_w = shape[0], shape[1], shape[2]
    y = population_matmul(
        tf.reshape(patches, [batch, out_h * out_w, filters.shape[1]]),
        filters,
        indices,
        bias=bias,
        relu=relu,
        perturbation=perturbation,
        backend="reference",
    )
    return tf.reshape(y, [batch, out_h, out_w, filters.shape[2]])


def _library():
    return _loader.load_library()


def _checked_slots_and_bias(x, weights, weights_name, indices, bias, perturbation):
    """Validates the slot indices (parents in the perturbed mode) and the bias against the weights."""
    indices_name = "indices" if perturbation is None else "parents"
    indices = _as_indices(indices, indices_name)
    _check_dim(weights.shape[0], f"{weights_name}.shape[0] (slots)", lambda n: n > 0, "a population needs at least one slot")
    _check_match(x.shape[0], indices.shape[0], "x.shape[0] (batch)", f"{indices_name}.shape[0]")
    if bias is not None:
        bias = _as_tensor(bias, "bias", (weights.dtype,))
        _check_rank(bias, "bias", (2,), "[slots, N]")
        _check_match(bias.shape[0], weights.shape[0], "bias.shape[0] (slots)", f"{weights_name}.shape[0]")
        _check_match(bias.shape[1], weights.shape[2], "bias.shape[1] (N)", f"{weights_name}.shape[2]")
    _check_slots_in_range(indices, weights, indices_name)
    return indices, bias


def _run_custom(op, x, weights, indices, bias, perturbation, **attrs):
    """Runs the custom op `op`, or its Perturbed form when a perturbation is given."""
    library = _library()
    biases = [] if bias is None else [bias]
    if perturbation is None:
        return getattr(library, f"workbench_{op}")(x=x, weights=weights, indices=indices, biases=biases, **attrs)
    p = _validated_perturbation(perturbation, x, weights)
    return getattr(library, f"workbench_perturbed_{op}")(
        x=x,
        weights=weights,
        parents=indices,
        sigmas=p.sigmas,
        factor_a=p.factor_a,
        factor_b=p.factor_b,
        biases=biases,
        bias_noise=[] if p.bias_noise is None else [p.bias_noise],
        **attrs,
    )


def _as_tensor(value, name, dtypes):
    if isinstance(value, (np.ndarray, list, tuple)) or np.isscalar(value):
        array = np.asarray(value)
        if array.dtype == np.float64 and tf.float32 in dtypes and not isinstance(value, np.ndarray):
            array = array.astype(np.float32)  # plain Python floats
        value = array
    try:
        tensor = tf.convert_to_tensor(value)
    except (TypeError, ValueError) as error:
        raise TypeError(f"{name} must be a tensor or array, got {type(value).__name__}: {error}") from None
    if tensor.dtype not in dtypes:
        allowed = " or ".join(dtype.name for dtype in dtypes)
        raise TypeError(f"{name} must be {allowed}, got {tensor.dtype.name}")
    return tensor


def _as_indices(value, name):
    if isinstance(value, (list, tuple)):
        value = np.asarray(value, dtype=np.int64)
    tensor = tf.convert_to_tensor(value)
    if tensor.dtype not in (tf.int32, tf.int64):
        raise TypeError(f"{name} must be int32 or int64, got {tensor.dtype.name}")
    _check_rank(tensor, name, (1,), "[batch]")
    # Out-of-int32 values saturate, so they stay out of range and are reported.
    return tf.saturate_cast(tensor, tf.int32) if tensor.dtype == tf.int64 else tensor


def _check_rank(tensor, name, ranks, layout):
    rank = tensor.shape.rank
    if rank is not None and rank not in ranks:
        raise ValueError(f"{name} must be {layout} (rank {' or '.join(map(str, ranks))}), got shape {tensor.shape}")


def _check_dim(value, name, predicate, why):
    if value is not None and not predicate(value):
        raise ValueError(f"{name} is {value}: {why}")


def _check_match(a, b, name_a, name_b):
    if a is not None and b is not None and a != b:
        raise ValueError(f"{name_a} = {a} must equal {name_b} = {b}")


def _check_slots_in_range(indices, weights, name):
    """Eager calls check slot indices here; graph calls rely on the kernel's own check."""
    if not tf.executing_eagerly():
        return
    values = indices.numpy()
    if values.size == 0:
        return
    slots = weights.shape[0]
    bad = np.flatnonzero((values < 0) | (values >= slots))
    if bad.size:
        i = int(bad[0])
        raise ValueError(f"{name}[{i}] = {int(values[i])} is out of range [0, {slots}) (number of weight slots)")


def _validated_perturbation(p, x, weights):
    if not isinstance(p, LowRankPerturbation):
        raise TypeError(f"perturbation must be a LowRankPerturbation, got {type(p).__name__}")
    sigmas = _as_tensor(p.sigmas, "perturbation.sigmas", (tf.float32,))
    factor_a = _as_tensor(p.factor_a, "perturbation.factor_a", (tf.float32,))
    factor_b = _as_tensor(p.factor_b, "perturbation.factor_b", (tf.float32,))
    _check_rank(sigmas, "perturbation.sigmas", (1,), "[batch]")
    _check_rank(factor_a, "perturbation.factor_a", (3,), "[batch, K, rank]")
    _check_rank(factor_b, "perturbation.factor_b", (3,), "[batch, N, rank]")
    batch = x.shape[0]
    _check_match(sigmas.shape[0], batch, "perturbation.sigmas.shape[0]", "x.shape[0] (batch)")
    _check_match(factor_a.shape[0], batch, "perturbation.factor_a.shape[0]", "x.shape[0] (batch)")
    _check_match(factor_b.shape[0], batch, "perturbation.factor_b.shape[0]", "x.shape[0] (batch)")
    _check_match(factor_a.shape[1], weights.shape[1], "perturbation.factor_a.shape[1]", "weights.shape[1] (K)")
    _check_match(factor_b.shape[1], weights.shape[2], "perturbation.factor_b.shape[1]", "weights.shape[2] (N)")
    _check_match(factor_a.shape[2], factor_b.shape[2], "perturbation.factor_a.shape[2] (rank)", "perturbation.factor_b.shape[2]")
    bias_noise = None
    if p.bias_noise is not None:
        bias_noise = _as_tensor(p.bias_noise, "perturbation.bias_noise", (tf.float32,))
        _check_rank(bias_noise, "perturbation.bias_noise", (2,), "[batch, N]")
        _check_match(bias_noise.shape[0], batch, "perturbation.bias_noise.shape[0]", "x.shape[0] (batch)")
        _check_match(bias_noise.shape[1], weights.shape[2], "perturbation.bias_noise.shape[1]", "weights.shape[2] (N)")
    return LowRankPerturbation(sigmas, factor_a, factor_b, bias_noise)


def _pair(value, name):
    if isinstance(value, int):
        value = (value, value)
    if len(value) != 2 or not all(isinstance(v, int) and v > 0 for v in value):
        raise ValueError(f"{name} must be a positive int or a pair of positive ints, got {value!r}")
    return tuple(value)


tf.no_gradient("Workbench>PopulationMatmul")
tf.no_gradient("Workbench>PerturbedPopulationMatmul")
tf.no_gradient("Workbench>PopulationConv2D")
tf.no_gradient("Workbench>PerturbedPopulationConv2D")


def assign_slots(variable: tf.Variable, slots: Any, values: Any, backend: str | None = None) -> None:
    """Writes values[i] into slot slots[i] of a population weight variable [S, ...], in place.

    TensorFlow's partial writes (scatter updates, sliced assigns) put a variable in
    copy-on-read mode for good, and then every read (every inference call) copies the
    whole variable. The custom op writes the slots under the variable's lock and keeps
    reads zero-copy; the reference backend assigns the whole updated variable (a dense
    write: reads stay zero-copy, but each call copies the variable once).
    """
    if not isinstance(variable, tf.Variable):
        raise TypeError(f"variable must be a tf.Variable, got {type(variable).__name__}")
    slots = tf.convert_to_tensor(np.asarray(slots, np.int32))
    values = tf.convert_to_tensor(values, variable.dtype)
    if slots.shape.rank != 1 or values.shape[:1] != slots.shape or values.shape[1:] != variable.shape[1:]:
        raise ValueError(
            f"values must be [len(slots)={slots.shape[0]}] + {variable.shape[1:].as_list()}, got {values.shape.as_list()}"
        )
    bad = [int(s) for s in slots.numpy() if not 0 <= s < variable.shape[0]]
    if bad:
        raise ValueError(f"slots contains {bad[0]}, out of range [0, {variable.shape[0]})")
    if len(set(slots.numpy().tolist())) != slots.shape[0]:
        raise ValueError("slots must not repeat: each slot receives one member")
    if resolve_backend(backend) == "custom":
        _library().workbench_assign_slots(resource=variable.handle, slots=slots, values=values)
    else:
        variable.assign(tf.tensor_scatter_nd_update(variable, slots[:, None], values))
