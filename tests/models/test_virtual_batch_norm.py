"""Virtual batch normalisation folded into each member's weights: equal to the explicit normalisation
(numpy for MLPs, plain TensorFlow per member for the Atari networks), deterministic, hidden biases cancel."""

import numpy as np
import pytest
import tensorflow as tf

from support import assert_close_to_scale
from workbench.models import MLPModel, SmallModel
from workbench.models.virtual_batch_norm import EPSILON


def numpy_vbn_logits(weights, reference, observations):
    """Explicit VBN forward of one member: statistics of each hidden layer from the reference batch."""
    h_ref, h = reference.astype(np.float64), observations.astype(np.float64)
    for kernel, bias in weights[:-1]:
        y_ref, y = h_ref @ kernel + bias, h @ kernel + bias
        mean, variance = y_ref.mean(0), y_ref.var(0)
        h_ref = np.maximum((y_ref - mean) / np.sqrt(variance + EPSILON), 0)
        h = np.maximum((y - mean) / np.sqrt(variance + EPSILON), 0)
    kernel, bias = weights[-1]
    return h @ kernel + bias


def test_mlp_vbn_equals_the_numpy_reference(rng):
    reference = rng.standard_normal((64, 4)).astype(np.float32) * 3 + 1
    model = MLPModel(4, 3, hidden_sizes=(6, 5), slots=3, reference_batch=reference)
    parameters = rng.standard_normal((3, model.num_parameters)).astype(np.float32)
    model.set_slots([0, 1, 2], parameters)
    observations = rng.standard_normal((6, 4)).astype(np.float32)
    slots = np.array([0, 1, 2, 2, 1, 0], np.int32)
    logits = model(observations, slots).numpy()
    plain = MLPModel(4, 3, hidden_sizes=(6, 5), slots=1)
    for b, slot in enumerate(slots):
        expected = numpy_vbn_logits(plain.unflatten(parameters[slot]), reference, observations[b : b + 1])
        assert_close_to_scale(logits[b : b + 1], expected, 1e-4)


def test_atari_vbn_equals_an_explicit_per_member_normalisation(rng):
    reference = rng.integers(0, 256, (16, 84, 84, 4), dtype=np.uint8)
    model = SmallModel(num_actions=4, slots=2, reference_batch=reference)
    parameters = np.stack([model.initial_parameters(seed) for seed in (1, 2)])
    model.set_slots([0, 1], parameters)
    observations = rng.integers(0, 256, (2, 84, 84, 4), dtype=np.uint8)
    logits = model(observations, np.array([0, 1], np.int32)).numpy()
    for member in range(2):
        weights = model.unflatten(parameters[member])
        x_ref = tf.constant(reference.astype(np.float32) / 255.0)
        x = tf.constant(observations[member : member + 1].astype(np.float32) / 255.0)
        for layer, (kernel, bias) in zip(model.layers[:-1], weights[:-1]):
            y_ref, y = layer.forward_one(x_ref, kernel, bias), layer.forward_one(x, kernel, bias)
            axes = list(range(len(y_ref.shape) - 1))
            mean, variance = tf.nn.moments(y_ref, axes)
            x_ref = tf.nn.relu((y_ref - mean) / tf.sqrt(variance + EPSILON))
            x = tf.nn.relu((y - mean) / tf.sqrt(variance + EPSILON))
        expected = model.layers[-1].forward_one(x, *weights[-1]).numpy()
        assert_close_to_scale(logits[member : member + 1], expected, 1e-3)


def test_statistics_are_deterministic_and_hidden_biases_cancel(rng):
    reference = rng.standard_normal((32, 4)).astype(np.float32)
    model = MLPModel(4, 2, hidden_sizes=(5,), slots=1, reference_batch=reference)
    parameters = rng.standard_normal(model.num_parameters).astype(np.float32)
    assert np.array_equal(model.normalized(parameters), model.normalized(parameters.copy()))
    other = MLPModel(4, 2, hidden_sizes=(5,), slots=1, reference_batch=reference.copy())
    assert np.array_equal(other.normalized(parameters), model.normalized(parameters))
    shifted = parameters.copy()
    shifted[4 * 5 : 4 * 5 + 5] += 3.0  # the hidden layer's bias
    np.testing.assert_allclose(model.normalized(shifted), model.normalized(parameters), atol=1e-5)


def test_bad_reference_batches_are_refused():
    with pytest.raises(ValueError, match="reference_batch"):
        MLPModel(4, 2, reference_batch=np.zeros((8, 5), np.float32))
    with pytest.raises(ValueError, match="reference_batch"):
        MLPModel(4, 2, reference_batch=np.zeros((1, 4), np.float32))
    with pytest.raises(ValueError, match="reference_batch"):
        MLPModel(4, 2, reference_batch=np.full((8, 4), np.nan, np.float32))
    with pytest.raises(ValueError, match="reference_batch"):
        MLPModel(4, 2).normalized(np.zeros(MLPModel(4, 2).num_parameters, np.float32))


def test_an_es_run_with_vbn_keeps_its_reference_batch_through_checkpoint_and_resume(tmp_path):
    from workbench.training import RunConfig, Trainer, load_checkpoint
    from workbench.training.replay import replay_run

    config = RunConfig(
        env="CartPole-v1",
        model="mlp",
        algorithm="es",
        subpopulations=1,
        slots=4,
        max_episode_frames=60,
        noise_size=2**16,
        model_options=dict(hidden_sizes=[4]),
        virtual_batch_norm=True,
        seed=2,
        hyperparameters=dict(population_size=6, sigma=0.05, learning_rate=0.03),
    )
    reference = Trainer.from_config(config)
    uninterrupted = reference.run(generations=3)
    reference.close()
    first = Trainer.from_config(config, run_dir=str(tmp_path))
    first.run(generations=2)
    first.close()
    _, state = load_checkpoint(str(tmp_path))
    assert state["reference_batch"].shape == (128, 4)
    np.testing.assert_array_equal(state["reference_batch"], config.reference_batch())  # deterministic from the seed
    resumed = Trainer.resume_from(str(tmp_path))
    np.testing.assert_array_equal(resumed.evaluator.spec.reference_batch, state["reference_batch"])
    assert resumed.run(generations=1)[0].max == uninterrupted[2].max
    assert [r.mean for r in resumed.history] == [r.mean for r in uninterrupted]
    resumed.close()
    assert len(replay_run(str(tmp_path)).actions) > 0  # replays use the run's reference batch


def test_reference_batches_of_atari_play_and_perturbed_mode_refused():
    from workbench.evaluation import Evaluator, RunSpec

    spec = RunSpec("pong", "small", max_episode_frames=2000, noise_size=2**22)
    batch = spec.collect_reference_batch(16, seed=1, probability=0.2)
    assert batch.shape == (16, 84, 84, 4) and batch.dtype == np.uint8
    np.testing.assert_array_equal(batch, spec.collect_reference_batch(16, seed=1, probability=0.2))
    with pytest.raises(ValueError, match="perturbed_rank cannot be combined"):
        Evaluator.from_spec(
            RunSpec("CartPole-v1", "mlp", noise_size=2**16, reference_batch=np.zeros((4, 4), np.float32)),
            slots=2,
            perturbed_rank=1,
        )
