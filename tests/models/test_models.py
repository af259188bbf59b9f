"""Population models: exact parameter counts, slots in and out, each member against a plain per-member network."""

import numpy as np
import pytest
import tensorflow as tf

from support import assert_close_to_scale
from workbench.models import LargeModel, MLPModel, SmallModel
from workbench.ops import LowRankPerturbation


def plain_forward(model, parameters, observation):
    """One member, one observation, with tf.nn.conv2d and matmul on its own weights."""
    x = tf.convert_to_tensor(observation[None])
    x = tf.cast(x, tf.float32) / 255.0 if x.dtype == tf.uint8 else x
    layers = model.unflatten(parameters)
    for i, (layer, (kernel, bias)) in enumerate(zip(model.layers, layers)):
        if hasattr(layer, "kernel_size"):
            k = kernel.reshape(layer.kernel_size, layer.kernel_size, -1, layer.filters)
            x = tf.nn.conv2d(x, k, strides=layer.stride, padding="SAME") + bias
        else:
            if x.shape.rank == 4 and layer.flatten == "channels_first":  # rows in (channel, height, width) order
                x = np.transpose(x.numpy(), (0, 3, 1, 2))
            x = tf.matmul(tf.reshape(x, [1, -1]), kernel) + bias
        if i < len(layers) - 1:
            x = tf.nn.relu(x)
    return x.numpy()[0]


@pytest.mark.parametrize("cls, count", [(LargeModel, 4_052_658), (SmallModel, 1_008_450)])
def test_parameter_counts_match_the_paper(cls, count):
    model = cls(num_actions=18, slots=1)
    assert model.num_parameters == count
    assert sum(int(np.prod(v.shape[1:])) for v in model.kernels + model.biases) == count
    assert cls(num_actions=4).num_actions == 4


def test_mlp_parameter_count():
    model = MLPModel(observation_size=4, num_actions=2, hidden_sizes=(64, 64))
    assert model.num_parameters == 4 * 64 + 64 + 64 * 64 + 64 + 64 * 2 + 2


@pytest.mark.parametrize("backend", ["custom", "reference"])
@pytest.mark.parametrize("cls", [LargeModel, SmallModel])
def test_each_member_matches_plain_network(rng, cls, backend):
    model = cls(num_actions=6, slots=3, backend=backend)
    # Non-zero output biases, so a wrong bias slot would show.
    params = np.stack([model.initial_parameters(seed) for seed in range(3)])
    params[:, -6:] = rng.standard_normal((3, 6))
    model.set_slots([0, 1, 2], params)
    observations = rng.integers(0, 256, (5, 84, 84, 4), dtype=np.uint8)
    slots = np.array([2, 0, 1, 2, 0], np.int32)
    logits = model(observations, slots).numpy()
    expected = np.stack([plain_forward(model, params[s], o) for s, o in zip(slots, observations)])
    assert_close_to_scale(logits, expected)
    np.testing.assert_array_equal(model.act(observations, slots).numpy(), expected.argmax(-1))


@pytest.mark.parametrize("backend", ["custom", "reference"])
@pytest.mark.parametrize("cls", [LargeModel, SmallModel])
def test_the_flatten_orders_are_one_network_with_its_dense_rows_permuted(rng, cls, backend):
    first = cls(num_actions=5, slots=2, backend=backend)  # the default
    last = cls(num_actions=5, slots=2, flatten="channels_last", backend=backend)
    assert first.layers[-2].flatten == "channels_first" and last.layers[-2].flatten == "channels_last"
    params_last = np.stack([last.initial_parameters(seed) for seed in range(2)])
    params_first = params_last.copy()
    dense = len(last.layers) - 2
    height, width, channels = last.output_shapes[dense - 1]
    kernel_sizes = [depth * units + units for depth, units in last.kernel_shapes]
    start = sum(kernel_sizes[:dense])
    depth, units = last.kernel_shapes[dense]
    rows = params_last[:, start : start + depth * units].reshape(2, height, width, channels, units)
    params_first[:, start : start + depth * units] = rows.transpose(0, 3, 1, 2, 4).reshape(2, -1)
    first.set_slots([0, 1], params_first)
    last.set_slots([0, 1], params_last)
    observations = rng.integers(0, 256, (4, 84, 84, 4), dtype=np.uint8)
    slots = np.array([0, 1, 1, 0], np.int32)
    expected = last(observations, slots).numpy()
    assert_close_to_scale(first(observations, slots).numpy(), expected)
    first.set_slots([0, 1], params_last)  # the same parameters in the other order: another network
    assert not np.allclose(first(observations, slots).numpy(), expected, rtol=1e-3, atol=1e-3)


def test_an_unknown_flatten_order_names_the_argument():
    with pytest.raises(ValueError, match="flatten must be one of"):
        SmallModel(num_actions=4, flatten="hwc")


def test_mlp_member_matches_plain_network(rng):
    model = MLPModel(observation_size=8, num_actions=3, hidden_sizes=(16, 16), slots=4)
    params = np.stack([model.initial_parameters(seed) for seed in range(4)])
    model.set_slots(np.arange(4), params)
    observations = rng.standard_normal((6, 8)).astype(np.float32)
    slots = np.array([3, 3, 0, 1, 2, 0])
    expected = np.stack([plain_forward(model, params[s], o) for s, o in zip(slots, observations)])
    assert_close_to_scale(model(observations, slots), expected)


def test_bfloat16_storage_matches_rounded_weights(rng):
    model16 = SmallModel(num_actions=4, slots=2, weight_dtype="bfloat16")
    params = np.stack([model16.initial_parameters(seed) for seed in range(2)])
    model16.set_slots([0, 1], params)
    rounded = np.stack([model16.get_slot(0), model16.get_slot(1)])
    assert np.abs(rounded - params).max() <= np.abs(params).max() * 2**-8
    observations = rng.integers(0, 256, (3, 84, 84, 4), dtype=np.uint8)
    slots = np.array([1, 0, 1])
    expected = np.stack([plain_forward(model16, rounded[s], o) for s, o in zip(slots, observations)])
    assert_close_to_scale(model16(observations, slots), expected)


def test_slots_round_trip_and_are_independent(rng):
    model = MLPModel(5, 2, slots=3)
    a, b = model.initial_parameters(1), model.initial_parameters(2)
    model.set_slot(0, a)
    model.set_slot(2, b)
    np.testing.assert_array_equal(model.get_slot(0), a)
    np.testing.assert_array_equal(model.get_slot(2), b)
    np.testing.assert_array_equal(model.get_slot(1), np.zeros_like(a))


def test_initialisation_follows_the_paper():
    model = LargeModel(num_actions=18)
    layers = model.unflatten(model.initial_parameters(np.random.default_rng(0)))
    for i, ((kernel, bias), (depth, _)) in enumerate(zip(layers, model.kernel_shapes)):
        std = 0.1 if i == len(layers) - 1 else 1.0
        assert abs(kernel.std() * np.sqrt(depth) / std - 1) < 0.05
        assert np.all(bias == 0)
    np.testing.assert_array_equal(model.initial_parameters(7), model.initial_parameters(7))


@pytest.mark.parametrize("backend", ["custom", "reference"])
def test_perturbed_forward_equals_materialised_member(rng, backend):
    model = SmallModel(num_actions=5, slots=2, backend=backend)
    params = np.stack([model.initial_parameters(seed) for seed in range(2)])
    model.set_slots([0, 1], params)
    parents = np.array([0, 1, 0], np.int32)
    perturbations = model.random_perturbations(sigmas=[0.01, 0.02, 0.05], rank=2, seed=3)
    observations = rng.integers(0, 256, (3, 84, 84, 4), dtype=np.uint8)
    logits = model(observations, parents, perturbations).numpy()
    expected = np.stack(
        [
            plain_forward(model, model.perturbed_parameters(params[p], perturbations, b), observations[b])
            for b, p in enumerate(parents)
        ]
    )
    assert_close_to_scale(logits, expected)


@pytest.mark.parametrize(
    "call, error, pattern",
    [
        (lambda m: SmallModel(slots=0), ValueError, "slots must be a positive integer"),
        (lambda m: SmallModel(num_actions=0), ValueError, "num_actions must be a positive integer"),
        (lambda m: SmallModel(weight_dtype="float16"), ValueError, "weight_dtype must be one of"),
        (lambda m: MLPModel(4, 2, hidden_sizes=(8, -1)), ValueError, "hidden_sizes entries"),
        (lambda m: m.set_slot(0, np.zeros(10, np.float32)), ValueError, "parameters must be \\[num_parameters\\]"),
        (lambda m: m.set_slot(2, m.initial_parameters(0)), ValueError, r"slots contains 2, out of range \[0, 2\)"),
        (lambda m: m.set_slot(0, np.full(m.num_parameters, np.nan)), ValueError, "NaN or infinite"),
        (lambda m: m.set_slots([0, 0], np.zeros((2, m.num_parameters))), ValueError, "must not repeat"),
        (lambda m: m.set_slots([0, 1], np.zeros((1, m.num_parameters))), ValueError, "slots has 2 entries"),
        (lambda m: m.get_slot(-1), ValueError, "slot contains -1"),
        (lambda m: m(np.zeros((1, 84, 84, 3), np.uint8), [0]), ValueError, "observations must be"),
        (lambda m: m(np.zeros((1, 84, 84, 4), np.float64), [0]), TypeError, "observations must be uint8 or float32"),
        (lambda m: m(np.zeros((1, 84, 84, 4), np.uint8), [5]), ValueError, r"indices\[0\] = 5 is out of range"),
        (lambda m: m(np.zeros((1, 84, 84, 4), np.uint8), [0], perturbations=[]), ValueError, "one entry per layer"),
        (lambda m: m.random_perturbations([0.1], rank=0, seed=0), ValueError, "rank must be a positive integer"),
    ],
)
def test_bad_input_names_the_argument(call, error, pattern):
    model = SmallModel(num_actions=3, slots=2)
    with pytest.raises(error, match=pattern):
        call(model)


@pytest.mark.parametrize("weight_dtype", ["float32", "bfloat16"])
def test_logits_do_not_depend_on_the_rest_of_the_batch(rng, weight_dtype):
    """A member's logits are the same bits alone, in a batch, permuted, or beside siblings."""
    model = SmallModel(num_actions=18, slots=4, weight_dtype=weight_dtype)
    model.set_slots(np.arange(4), np.stack([model.initial_parameters(seed) for seed in range(4)]))
    observations = rng.integers(0, 256, (12, 84, 84, 4), dtype=np.uint8)
    slots = np.array([0, 1, 2, 3] * 3, np.int32)
    batch = model(observations, slots).numpy()
    order = rng.permutation(12)
    np.testing.assert_array_equal(model(observations[order], slots[order]).numpy(), batch[order])
    for b in (0, 7):
        np.testing.assert_array_equal(model(observations[b : b + 1], slots[b : b + 1]).numpy()[0], batch[b])
    siblings = np.zeros(12, np.int32)
    perturbations = model.random_perturbations(np.full(12, 0.01), rank=1, seed=5)
    children = model(observations, siblings, perturbations).numpy()
    alone = [LowRankPerturbation(*(t[3:4] for t in (p.sigmas, p.factor_a, p.factor_b, p.bias_noise))) for p in perturbations]
    np.testing.assert_array_equal(model(observations[3:4], siblings[:1], alone).numpy()[0], children[3])


@pytest.mark.parametrize("perturbed", [False, True])
@pytest.mark.parametrize("backend", ["custom", "reference"])
def test_uint8_frames_are_read_by_the_first_convolution_as_the_scaled_floats(rng, backend, perturbed):
    """The first conv reads uint8 frames itself (no float copy of the batch): the same bits as the frames
    scaled to [0, 1] first, as the model did before."""
    model = LargeModel(num_actions=6, slots=2, backend=backend)
    model.set_slots([0, 1], np.stack([model.initial_parameters(seed) for seed in range(2)]))
    frames = rng.integers(0, 256, (3, 84, 84, 4), dtype=np.uint8)
    slots = np.array([1, 0, 1], np.int32)
    perturbations = model.random_perturbations(np.full(3, 0.01), rank=1, seed=2) if perturbed else None
    scaled = tf.cast(frames, tf.float32) * (1.0 / 255.0)
    np.testing.assert_array_equal(model(frames, slots, perturbations).numpy(), model(scaled, slots, perturbations).numpy())


@pytest.mark.parametrize("weight_dtype", ["float32", "bfloat16"])
def test_rows_and_a_stacked_array_load_the_same_slots(weight_dtype):
    """set_slots takes n rows (as WeightSlots passes decoded genomes) or one [n, P] array, with the same result."""
    by_rows, by_array = (SmallModel(num_actions=4, slots=3, weight_dtype=weight_dtype) for _ in range(2))
    params = np.stack([by_rows.initial_parameters(seed) for seed in range(2)])
    params[:, -4:] = [[1, 2, 3, 4], [5, 6, 7, 8]]
    by_rows.set_slots([2, 0], [params[0], params[1]], check_finite=False)
    by_array.set_slots([2, 0], params)
    for slot in range(3):
        np.testing.assert_array_equal(by_rows.get_slot(slot), by_array.get_slot(slot))
    np.testing.assert_array_equal(by_rows.get_slot(1), np.zeros(by_rows.num_parameters))


def test_rows_are_checked_one_by_one():
    model = SmallModel(num_actions=3, slots=2)
    good = model.initial_parameters(0)
    with pytest.raises(ValueError, match=r"parameters\[1\] must be \[num_parameters\]"):
        model.set_slots([0, 1], [good, good[:-1]])
    with pytest.raises(ValueError, match=r"parameters\[1\] contains NaN"):
        model.set_slots([0, 1], [good, np.full_like(good, np.inf)])
    with pytest.raises(ValueError, match="slots has 2 entries but parameters has 1 rows"):
        model.set_slots([0, 1], [good])
