"""The resource handles of the simulator ops (atari_env, mujoco_env): freeing one, the same way for both."""

from __future__ import annotations

import tensorflow as tf


def destroy(handle: tf.Tensor) -> None:
    """Frees a simulator batch (in-flight ops keep it alive until they finish), eagerly even when called while a
    tf.function is being traced: a garbage collection runs the batch's finalizer wherever it happens, and inside a
    trace the op would otherwise be added to the function's graph (never run) while the graph's lock is held
    (a deadlock seen in the tests)."""
    with tf.init_scope():
        tf.raw_ops.DestroyResourceOp(resource=handle, ignore_lookup_error=True)
