"""Host arrays handed to TensorFlow: zero-copy only where TensorFlow accepts the memory, a copy otherwise."""

import numpy as np
import pytest

from workbench.ops.host_memory import ALIGNMENT, aligned_empty, as_tensor, zero_copy_eligible


@pytest.mark.parametrize("shape", [(1,), (3, 5), (2, 7, 11), (1, 1000, 33)])
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.uint8])
def test_aligned_empty_starts_on_the_boundary(shape, dtype):
    array = aligned_empty(shape, dtype)
    assert array.shape == shape and array.dtype == dtype and array.flags.c_contiguous
    assert array.ctypes.data % ALIGNMENT == 0


def test_an_aligned_array_is_taken_without_a_copy(rng):
    array = aligned_empty((4, 1000))
    array[...] = rng.standard_normal(array.shape)
    tensor = as_tensor(array)
    np.testing.assert_array_equal(tensor.numpy(), array)
    array[0, 0] = 12345.0  # the tensor is the array's memory (callers must not do this; the test shows why)
    assert tensor.numpy()[0, 0] == 12345.0


def test_the_tensor_keeps_the_array_alive():
    array = aligned_empty((256, 256))
    array[...] = 3.0
    tensor = as_tensor(array)
    del array
    assert float(np.asarray(tensor).sum()) == 3.0 * 256 * 256


@pytest.mark.parametrize(
    "make",
    [
        lambda a: a.reshape(-1)[1:],  # misaligned start (TensorFlow would abort the process on this one)
        lambda a: a[:, ::2],  # not contiguous
        lambda a: a[:0],  # empty
        lambda a: np.frombuffer(a.tobytes(), np.float32).reshape(a.shape),  # read-only
        lambda a: a.view(a.dtype.newbyteorder()),  # not in native byte order (the values read differently)
    ],
    ids=["misaligned", "strided", "empty", "read-only", "byte-swapped"],
)
def test_arrays_tensorflow_cannot_take_are_copied(make, rng):
    base = aligned_empty((8, 64))
    base[...] = rng.standard_normal(base.shape)
    array = make(base)
    assert not zero_copy_eligible(array)
    tensor = as_tensor(array)
    np.testing.assert_array_equal(tensor.numpy(), array)
    if array.size and array.flags.writeable:
        array[...] = 0.0
        assert np.any(tensor.numpy() != 0.0)  # a copy: the write did not reach it


@pytest.mark.parametrize("dtype", [np.bool_, object, np.dtype("V3")])
def test_aligned_empty_refuses_a_dtype_it_cannot_align(dtype):
    with pytest.raises(ValueError, match="dtype must be a numeric type"):
        aligned_empty((4,), dtype)
