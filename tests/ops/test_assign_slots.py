"""assign_slots: whole-slot writes in place, against the reference, copy-on-write, zero-copy reads, bad input."""

import time

import numpy as np
import pytest
import tensorflow as tf

from workbench.ops import assign_slots


@pytest.mark.parametrize("backend", ["custom", "reference"])
@pytest.mark.parametrize("dtype", [tf.float32, tf.bfloat16])
def test_writes_the_given_slots_and_nothing_else(backend, dtype, rng):
    start = rng.standard_normal((6, 3, 4)).astype(np.float32)
    variable = tf.Variable(tf.cast(start, dtype))
    values = rng.standard_normal((2, 3, 4)).astype(np.float32)
    assign_slots(variable, [4, 1], tf.cast(values, dtype), backend=backend)
    expected = start.copy()
    expected[[4, 1]] = values
    np.testing.assert_array_equal(tf.cast(variable, tf.float32).numpy(), tf.cast(tf.cast(expected, dtype), tf.float32).numpy())
    assign_slots(variable, [], np.zeros((0, 3, 4), np.float32), backend=backend)  # nothing to write


def test_a_tensor_read_before_the_write_keeps_its_values(rng):
    variable = tf.Variable(np.zeros((3, 5), np.float32))
    before = variable.read_value()  # shares the variable's buffer
    assign_slots(variable, [0], np.ones((1, 5), np.float32), backend="custom")
    assert before.numpy().sum() == 0 and variable.numpy()[0].sum() == 5


def test_reads_stay_zero_copy_after_slot_writes():
    # A scatter update puts the variable in copy-on-read mode: every read then copies 64 MB.
    size = (16, 1024, 1024)
    timings = {}
    for name in ("assign_slots", "scatter"):
        variable = tf.Variable(tf.zeros(size))
        if name == "assign_slots":
            assign_slots(variable, [3], np.ones((1,) + size[1:], np.float32), backend="custom")
        else:
            variable.scatter_nd_update([[3]], tf.ones((1,) + size[1:]))
        read = tf.function(lambda v=variable: v[3, 0, 0] + tf.identity(v.read_value())[0, 0, 0])
        read()
        start = time.perf_counter()
        for _ in range(20):
            read().numpy()
        timings[name] = time.perf_counter() - start
    assert timings["assign_slots"] * 3 < timings["scatter"], timings


@pytest.mark.parametrize("backend", ["custom", "reference"])
def test_bad_input_is_refused(backend):
    variable = tf.Variable(np.zeros((3, 2), np.float32))
    with pytest.raises(ValueError, match="out of range"):
        assign_slots(variable, [3], np.zeros((1, 2), np.float32), backend=backend)
    with pytest.raises(ValueError, match="repeat"):
        assign_slots(variable, [1, 1], np.zeros((2, 2), np.float32), backend=backend)
    with pytest.raises(ValueError, match="values must be"):
        assign_slots(variable, [1], np.zeros((1, 3), np.float32), backend=backend)
    with pytest.raises(TypeError, match="tf.Variable"):
        assign_slots(np.zeros((3, 2)), [1], np.zeros((1, 2)), backend=backend)


def test_the_raw_op_checks_its_arguments():
    from workbench.ops import load_library

    variable = tf.Variable(np.zeros((3, 2), np.float32))
    op = load_library().workbench_assign_slots
    with pytest.raises(tf.errors.InvalidArgumentError, match="out of range"):
        op(resource=variable.handle, slots=tf.constant([-1]), values=tf.zeros((1, 2)))
    with pytest.raises(tf.errors.InvalidArgumentError, match="slot shape"):
        op(resource=variable.handle, slots=tf.constant([0]), values=tf.zeros((1, 4)))
    with pytest.raises(tf.errors.InvalidArgumentError, match="dtype"):
        op(resource=variable.handle, slots=tf.constant([0]), values=tf.zeros((1, 2), tf.bfloat16))
