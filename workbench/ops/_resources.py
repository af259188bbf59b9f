"""The resource handles of the simulator ops (atari_env, mujoco_env): freeing one, and owning one, the same way for
both."""

from __future__ import annotations

import weakref
from typing import Any

import tensorflow as tf


def destroy(handle: tf.Tensor) -> None:
    """Frees a simulator batch (in-flight ops keep it alive until they finish), eagerly even when called while a
    tf.function is being traced: a garbage collection runs the batch's finalizer wherever it happens, and inside a
    trace the op would otherwise be added to the function's graph (never run) while the graph's lock is held
    (a deadlock seen in the tests)."""
    with tf.init_scope():
        tf.raw_ops.DestroyResourceOp(resource=handle, ignore_lookup_error=True)


class OwnedResource:
    """A backend that owns one simulator op's resource handle: freed once, on close() or when the backend is
    garbage-collected (the custom-op Atari and MuJoCo backends)."""

    handle: tf.Tensor

    def _own(self, handle: tf.Tensor) -> None:
        self.handle = handle
        self._finalizer = weakref.finalize(self, destroy, handle)
        self._finalizer.atexit = False  # TensorFlow may be torn down by then; the process frees all

    @staticmethod
    def _indices(indices: Any) -> tf.Tensor:
        return tf.constant(indices, tf.int32)

    def close(self) -> None:
        self._finalizer()  # destroys the resource once
