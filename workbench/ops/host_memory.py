"""Host arrays handed to TensorFlow without a copy: 64-byte aligned numpy buffers and zero-copy tensors of them.

`tf.convert_to_tensor` copies a numpy array, and for buffers of megabytes (a population's weights on their way
into its slots) at about half the rate of numpy's own copy. DLPack hands TensorFlow the array's memory instead,
but TensorFlow requires the alignment of Eigen's widest vectors and aborts the process on a misaligned buffer,
so `as_tensor` takes that path only for arrays that qualify (`aligned_empty` makes them) and copies otherwise.
The tensor keeps the array alive; the caller must not write the array while the tensor lives.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

ALIGNMENT = 64  # bytes: Eigen's widest vectors (AVX-512)


def aligned_empty(shape: tuple[int, ...], dtype: np.dtype | type = np.float32) -> np.ndarray:
    """An uninitialised C-contiguous array whose data starts on an ALIGNMENT-byte boundary."""
    dtype = np.dtype(dtype)
    if dtype.kind not in "fiu" or ALIGNMENT % dtype.itemsize:
        raise ValueError(f"dtype must be a numeric type whose size divides {ALIGNMENT} bytes, got {dtype}")
    count = int(np.prod(shape, dtype=np.int64))
    spare = ALIGNMENT // dtype.itemsize
    buffer = np.empty(count + spare, dtype)
    start = (-buffer.ctypes.data % ALIGNMENT) // dtype.itemsize
    return buffer[start : start + count].reshape(shape)


def zero_copy_eligible(array: np.ndarray) -> bool:
    """Whether TensorFlow can take the array's memory as it is (numeric in native byte order, aligned,
    C-contiguous, writeable, not empty)."""
    return (
        isinstance(array, np.ndarray)
        and array.dtype.kind in "fiu"
        and array.dtype.isnative
        and array.size > 0
        and array.flags.c_contiguous
        and array.flags.writeable
        and array.ctypes.data % ALIGNMENT == 0
    )


def as_tensor(array: np.ndarray) -> tf.Tensor:
    """A CPU tensor of the array: its memory itself when zero_copy_eligible, else a copy."""
    if zero_copy_eligible(array):
        return tf.experimental.dlpack.from_dlpack(array.__dlpack__())
    return tf.convert_to_tensor(array)
