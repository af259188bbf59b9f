"""population_matmul: custom kernel vs pure-TF reference vs numpy, every kernel path, and bad input."""

import numpy as np
import pytest
import tensorflow as tf

from support import assert_close_to_scale
from workbench.ops import LowRankPerturbation, population_matmul


def numpy_matmul(x, weights, indices, bias=None, relu=False, perturbation=None):
    x, weights = np.asarray(x, np.float64), np.asarray(tf.cast(weights, tf.float32), np.float64)
    member_weights = weights[indices]
    if perturbation is not None:
        sig = np.asarray(perturbation.sigmas, np.float64)
        a, b = np.asarray(perturbation.factor_a, np.float64), np.asarray(perturbation.factor_b, np.float64)
        member_weights = member_weights + sig[:, None, None] * np.einsum("bkr,bnr->bkn", a, b)
    squeeze = x.ndim == 2
    x3 = x[:, None, :] if squeeze else x
    y = np.einsum("bmk,bkn->bmn", x3, member_weights)
    if bias is not None:
        member_bias = np.asarray(tf.cast(bias, tf.float32), np.float64)[indices]
        if perturbation is not None and perturbation.bias_noise is not None:
            member_bias = member_bias + sig[:, None] * np.asarray(perturbation.bias_noise, np.float64)
        y = y + member_bias[:, None, :]
    if relu:
        y = np.maximum(y, 0)
    return y[:, 0, :] if squeeze else y


def make_case(rng, batch, rows, depth, cols, slots, dtype=tf.float32, shared=False, rank=None):
    x_shape = (batch, depth) if rows is None else (batch, rows, depth)
    x = rng.standard_normal(x_shape).astype(np.float32)
    weights = tf.cast(rng.standard_normal((slots, depth, cols)).astype(np.float32), dtype)
    bias = tf.cast(rng.standard_normal((slots, cols)).astype(np.float32), dtype)
    indices = np.zeros(batch, np.int32) if shared else rng.integers(0, slots, batch).astype(np.int32)
    perturbation = None
    if rank is not None:
        perturbation = LowRankPerturbation(
            rng.uniform(0.01, 0.5, batch).astype(np.float32),
            rng.standard_normal((batch, depth, rank)).astype(np.float32),
            rng.standard_normal((batch, cols, rank)).astype(np.float32),
            rng.standard_normal((batch, cols)).astype(np.float32),
        )
    return x, weights, indices, bias, perturbation


# (batch, rows, depth, cols, slots, shared): each line drives a different kernel path.
CASES = {
    "dense_distinct_stream": (16, None, 300, 70, 16, False),
    "dense_one_row_rank3": (5, 1, 64, 40, 3, False),
    "dense_shared_gather_gemm": (40, None, 200, 96, 4, True),
    "dense_few_shared_stream": (6, 1, 33, 20, 2, True),
    "mid_rows_single_member_gemm": (3, 12, 50, 33, 7, False),
    "conv_like_per_member_gemm": (5, 49, 72, 32, 3, False),
    "one_member_column_split": (1, None, 512, 1024, 1, False),
    "per_member_every_tile_width": (3, 37, 40, 119, 2, False),  # 64 + 32 + 16 + 7 columns
    "depth_not_multiple_of_unroll": (4, 3, 13, 9, 5, False),
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("dtype", [tf.float32, tf.bfloat16], ids=["float32", "bfloat16"])
@pytest.mark.parametrize("relu", [False, True], ids=["linear", "relu"])
def test_matches_reference_and_numpy(rng, case, dtype, relu):
    batch, rows, depth, cols, slots, shared = CASES[case]
    x, weights, indices, bias, _ = make_case(rng, batch, rows, depth, cols, slots, dtype, shared)
    expected = numpy_matmul(x, weights, indices, bias, relu)
    custom = population_matmul(x, weights, indices, bias=bias, relu=relu, backend="custom")
    pure_tf = population_matmul(x, weights, indices, bias=bias, relu=relu, backend="reference")
    assert custom.dtype == tf.float32 and custom.shape == expected.shape
    assert_close_to_scale(custom, expected)
    assert_close_to_scale(pure_tf, expected)


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("rank", [1, 4])
def test_perturbed_matches_reference_and_numpy(rng, case, rank):
    batch, rows, depth, cols, slots, shared = CASES[case]
    x, weights, indices, bias, perturbation = make_case(rng, batch, rows, depth, cols, slots, tf.float32, shared, rank)
    expected = numpy_matmul(x, weights, indices, bias, True, perturbation)
    for backend in ("custom", "reference"):
        y = population_matmul(x, weights, indices, bias=bias, relu=True, perturbation=perturbation, backend=backend)
        assert_close_to_scale(y, expected)


def test_perturbed_without_bias_noise_and_bfloat16(rng):
    x, weights, indices, bias, p = make_case(rng, 6, 2, 40, 24, 3, tf.bfloat16, rank=2)
    p = LowRankPerturbation(p.sigmas, p.factor_a, p.factor_b)
    expected = numpy_matmul(x, weights, indices, bias, False, p)
    assert_close_to_scale(population_matmul(x, weights, indices, bias=bias, perturbation=p), expected)


def test_without_bias(rng):
    x, weights, indices, _, _ = make_case(rng, 7, None, 30, 11, 4)
    assert_close_to_scale(population_matmul(x, weights, indices), numpy_matmul(x, weights, indices))


def test_rows_sharing_a_slot_equal_rows_with_copied_slots(rng):
    """Grouping by slot is an optimisation only: same numbers as distinct copies."""
    x, weights, _, bias, _ = make_case(rng, 12, None, 100, 40, 1)
    shared = population_matmul(x, weights, np.zeros(12, np.int32), bias=bias).numpy()
    copies = population_matmul(x, tf.tile(weights, [12, 1, 1]), np.arange(12), bias=tf.tile(bias, [12, 1])).numpy()
    assert_close_to_scale(shared, copies, 1e-6)


def test_inside_tf_function_with_unknown_batch(rng):
    x, weights, indices, bias, _ = make_case(rng, 9, 4, 20, 8, 3)

    @tf.function(input_signature=[tf.TensorSpec([None, 4, 20], tf.float32), tf.TensorSpec([None], tf.int32)])
    def run(x, indices):
        return population_matmul(x, weights, indices, bias=bias, relu=True)

    assert_close_to_scale(run(x, indices), numpy_matmul(x, weights, indices, bias, True))
    assert run(x[:0], indices[:0]).shape == (0, 4, 8)


@pytest.mark.parametrize("backend", ["custom", "reference"])
def test_empty_batches(rng, backend):
    _, weights, _, bias, _ = make_case(rng, 1, None, 10, 6, 2)
    y = population_matmul(np.zeros((0, 10), np.float32), weights, np.zeros(0, np.int32), bias=bias, backend=backend)
    assert y.shape == (0, 6)
    y = population_matmul(np.zeros((3, 0, 10), np.float32), weights, np.zeros(3, np.int32), backend=backend)
    assert y.shape == (3, 0, 6)


def test_zero_depth_gives_bias(rng):
    weights = tf.zeros([2, 0, 5])
    bias = rng.standard_normal((2, 5)).astype(np.float32)
    y = population_matmul(np.zeros((3, 0), np.float32), weights, [1, 0, 1], bias=bias)
    np.testing.assert_array_equal(y.numpy(), bias[[1, 0, 1]])


def test_non_contiguous_inputs(rng):
    x = rng.standard_normal((8, 40)).astype(np.float32)[:, ::2]  # strided view
    weights = np.asfortranarray(rng.standard_normal((3, 20, 6)).astype(np.float32))
    indices = np.arange(16, dtype=np.int64)[::2] % 3
    assert_close_to_scale(population_matmul(x, weights, indices), numpy_matmul(x, weights, indices))


# ----- bad input: a Python exception that names the argument, never a crash ------------------
W = np.ones((3, 4, 5), np.float32)
X = np.ones((2, 4), np.float32)
SLOTS = np.array([0, 2], np.int32)


@pytest.mark.parametrize("backend", ["custom", "reference"])
@pytest.mark.parametrize(
    "kwargs, error, pattern",
    [
        (dict(x=np.ones((2,), np.float32)), ValueError, "x must be"),
        (dict(x=np.ones((2, 1, 1, 4), np.float32)), ValueError, "x must be"),
        (dict(x=X.astype(np.float64)), TypeError, "x must be float32"),
        (dict(x=X.astype(np.int32)), TypeError, "x must be float32"),
        (dict(weights=W[0]), ValueError, "weights must be"),
        (dict(weights=W.astype(np.float16)), TypeError, "weights must be float32 or bfloat16"),
        (dict(weights=np.ones((0, 4, 5), np.float32)), ValueError, "slots"),
        (dict(x=np.ones((2, 3), np.float32)), ValueError, r"x.shape\[-1\] \(K\) = 3 must equal weights.shape\[1\] = 4"),
        (dict(indices=np.array([0, 3], np.int32)), ValueError, r"indices\[1\] = 3 is out of range \[0, 3\)"),
        (dict(indices=np.array([-1, 0], np.int32)), ValueError, r"indices\[0\] = -1 is out of range"),
        (dict(indices=np.array([0, 2**40])), ValueError, r"indices\[1\] = 2147483647 is out of range"),
        (
            dict(indices=np.array([0, 1, 2], np.int32)),
            ValueError,
            r"x.shape\[0\] \(batch\) = 2 must equal indices.shape\[0\] = 3",
        ),
        (dict(indices=np.array([0.0, 1.0])), TypeError, "indices must be int32 or int64"),
        (dict(indices=np.zeros((2, 1), np.int32)), ValueError, "indices must be"),
        (dict(bias=np.ones((3, 4), np.float32)), ValueError, r"bias.shape\[1\] \(N\) = 4 must equal weights.shape\[2\] = 5"),
        (dict(bias=np.ones((3, 5), np.float64)), TypeError, "bias must be float32"),
        (dict(backend="gpu"), ValueError, "backend must be one of"),
    ],
)
def test_bad_input_names_the_argument(backend, kwargs, error, pattern):
    args = dict(x=X, weights=W, indices=SLOTS, backend=backend)
    args.update(kwargs)
    with pytest.raises(error, match=pattern):
        population_matmul(**args)


@pytest.mark.parametrize(
    "field, value, pattern",
    [
        ("sigmas", np.ones((3,), np.float32), r"perturbation.sigmas.shape\[0\]"),
        ("factor_a", np.ones((2, 3, 1), np.float32), r"perturbation.factor_a.shape\[1\]"),
        ("factor_b", np.ones((2, 5, 2), np.float32), r"perturbation.factor_a.shape\[2\] \(rank\)"),
        ("factor_b", np.ones((2, 5, 1), np.float64), "perturbation.factor_b must be float32"),
        ("bias_noise", np.ones((2, 4), np.float32), r"perturbation.bias_noise.shape\[1\]"),
    ],
)
def test_bad_perturbation_names_the_field(field, value, pattern):
    fields = dict(
        sigmas=np.ones(2, np.float32),
        factor_a=np.ones((2, 4, 1), np.float32),
        factor_b=np.ones((2, 5, 1), np.float32),
        bias_noise=None,
    )
    fields[field] = value
    with pytest.raises((ValueError, TypeError), match=pattern):
        population_matmul(X, W, SLOTS, perturbation=LowRankPerturbation(**fields))
    with pytest.raises(TypeError, match="perturbation must be a LowRankPerturbation"):
        population_matmul(X, W, SLOTS, perturbation=(1, 2, 3))


def test_kernel_checks_indices_in_graph_mode():
    """Inside tf.function the values are unknown at trace time: the C++ kernel reports them."""

    @tf.function
    def run(indices):
        return population_matmul(X, W, indices)

    with pytest.raises(tf.errors.InvalidArgumentError, match=r"indices\[1\] = 7 is out of range \[0, 3\)"):
        run(tf.constant([0, 7], tf.int32))


def test_raw_op_shape_function_names_arguments():
    from workbench.ops import load_library

    library = load_library()
    with pytest.raises((ValueError, tf.errors.InvalidArgumentError), match="weights must be"):
        tf.function(lambda: library.workbench_population_matmul(x=X, weights=W[0], indices=SLOTS, biases=[]))()
    with pytest.raises((ValueError, tf.errors.InvalidArgumentError), match=r"x.shape\[-1\] and weights.shape\[1\]"):
        tf.function(lambda: library.workbench_population_matmul(x=X[:, :3], weights=W, indices=SLOTS, biases=[]))()
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"biases must have shape"):
        library.workbench_population_matmul(x=X, weights=W, indices=SLOTS, biases=[np.ones((3, 4), np.float32)])


@pytest.mark.parametrize("dtype", [tf.float32, tf.bfloat16], ids=["float32", "bfloat16"])
@pytest.mark.parametrize("batch, shared", [(6, False), (5, True)])
def test_sparse_inputs_skip_weight_rows_without_changing_sums(rng, dtype, batch, shared):
    """The streaming kernel skips weight rows whose inputs are all zero (ReLU outputs)."""
    x, weights, indices, bias, _ = make_case(rng, batch, None, 203, 40, 3, dtype, shared)
    x[rng.random(x.shape) < 0.8] = 0.0
    x[0] = 0.0  # a row with no active input at all: the output is the bias
    x[1, ::2] = -0.0
    expected = numpy_matmul(x, weights, indices, bias)
    y = population_matmul(x, weights, indices, bias=bias).numpy()
    assert_close_to_scale(y, expected)
    np.testing.assert_array_equal(y[0], np.asarray(tf.cast(bias, tf.float32))[indices[0]])


def test_non_finite_inputs_propagate_like_the_reference(rng):
    x, weights, indices, _, _ = make_case(rng, 3, None, 16, 8, 2)
    x[1, 5] = np.nan
    x[2, 3] = np.inf
    custom = population_matmul(x, weights, indices).numpy()
    reference = population_matmul(x, weights, indices, backend="reference").numpy()
    np.testing.assert_array_equal(np.isnan(custom), np.isnan(reference))
    assert np.isnan(custom[1]).all() and np.isfinite(custom[0]).all()


@pytest.mark.parametrize("dtype", [tf.float32, tf.bfloat16], ids=["float32", "bfloat16"])
@pytest.mark.parametrize("rows, cols", [(None, 18), (None, 100), (3, 37), (20, 50)])
@pytest.mark.parametrize("perturbed", [False, True], ids=["plain", "perturbed"])
def test_a_member_gets_the_same_bits_whatever_else_is_in_the_batch(rng, dtype, rows, cols, perturbed):
    """Batch invariance: how members are grouped (alone, with siblings on one slot, among
    others) never changes a member's result, so evaluations can be re-batched freely."""
    batch = 24
    x, weights, _, bias, p = make_case(rng, batch, rows, 300, cols, 4, dtype, rank=2 if perturbed else None)
    x[x < 0] = 0.0  # ReLU-like inputs exercise the skipping of zero rows
    shared = np.zeros(batch, np.int32)
    together = population_matmul(x, weights, shared, bias=bias, relu=True, perturbation=p).numpy()
    for b in (0, 5, 23):
        alone_p = (
            None if p is None else LowRankPerturbation(*(t[b : b + 1] for t in (p.sigmas, p.factor_a, p.factor_b, p.bias_noise)))
        )
        alone = population_matmul(x[b : b + 1], weights, shared[:1], bias=bias, relu=True, perturbation=alone_p).numpy()
        np.testing.assert_array_equal(alone[0], together[b])
    mixed = np.array([0 if b % 3 == 0 else 1 + b % 3 for b in range(batch)], np.int32)
    mixed_out = population_matmul(x, weights, mixed, bias=bias, relu=True, perturbation=p).numpy()
    for b in range(0, batch, 3):
        np.testing.assert_array_equal(mixed_out[b], together[b])


def test_concurrent_calls_from_threads_give_sequential_results(rng):
    """The trainer calls the ops from background threads: per-thread scratch, no shared state."""
    import threading

    cases = [make_case(rng, 9, rows, 120, 70, 3, dtype) for rows in (None, 20) for dtype in (tf.float32, tf.bfloat16)]
    expected = [population_matmul(x, w, i, bias=b, relu=True).numpy() for x, w, i, b, _ in cases]
    results, errors = {}, []

    def worker(k):
        try:
            for _ in range(20):
                x, w, i, b, _ = cases[k % len(cases)]
                results.setdefault(k, []).append(population_matmul(x, w, i, bias=b, relu=True).numpy())
        except Exception as error:  # noqa: BLE001 - reported below
            errors.append(error)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert not errors
    for k, outputs in results.items():
        for output in outputs:
            np.testing.assert_array_equal(output, expected[k % len(cases)])
