"""The environment contract (workbench.envs.check_batch) on every family and backend: Atari on the ops (with ale-py as
its twin) and on ale-py, each MuJoCo task on the ops (with Gymnasium as its twin) and on Gymnasium, GymBatch with
discrete and Box actions; and batches that break a clause are caught."""

import numpy as np
import pytest

from workbench.envs import MUJOCO_TASKS, SCREEN, AtariBatch, BatchContractError, GymBatch, MujocoBatch, check_batch

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.mark.parametrize("backend,twin", [("custom", "reference"), ("reference", None)])
def test_atari_batches_keep_the_contract(backend, twin):
    options = dict(max_episode_frames=160, repeat_action_probability=0.25)
    batch = AtariBatch("breakout", 3, seed=4, backend=backend, **options)
    other = AtariBatch("breakout", 3, seed=4, backend=twin, **options) if twin else None
    clauses = check_batch(batch, twin=other, steps=25)
    assert clauses[-1] == ("twin" if twin else "bad_input")
    for b in (batch, other):
        if b is not None:
            b.close()


@pytest.mark.parametrize("task_id", list(MUJOCO_TASKS))
def test_mujoco_batches_keep_the_contract_on_both_backends(task_id):
    """Each task on the ops with Gymnasium as its twin, and Gymnasium's backend on its own; the renderer (a process
    per batch) is exercised on one task."""
    skip = () if task_id == "Hopper-v5" else (SCREEN,)
    options = dict(max_episode_steps=40, seed=2)
    batch = MujocoBatch(task_id, 3, backend="custom", render_size=(48, 64), **options)
    twin = MujocoBatch(task_id, 3, backend="reference", render_size=(48, 64), **options)
    check_batch(batch, twin=twin, skip=skip)
    check_batch(twin, skip=(SCREEN,))
    batch.close()
    twin.close()


@pytest.mark.parametrize("env_id", ["CartPole-v1", "Pendulum-v1"])
def test_gymnasium_batches_keep_the_contract(env_id):
    batch = GymBatch(env_id, 3, seed=5, max_episode_frames=30)
    assert batch.continuous_actions == (env_id == "Pendulum-v1")
    check_batch(batch)
    batch.close()


class _LeakyCartPole(GymBatch):
    """Breaks the indices clause: a step also advances the first environment that was not asked for."""

    def _step(self, indices, actions):
        rewards, done = super()._step(indices, actions)
        others = np.setdiff1d(np.arange(self.batch_size), indices)
        if others.size:
            self._observations[others[0]] += 1.0
        return rewards, done


class _UnseededCartPole(GymBatch):
    """Breaks the seeding clause: resets ignore the seeds they are given."""

    def _reset(self, indices, seeds):
        super()._reset(indices, np.random.default_rng().integers(1 << 30, size=len(indices)))


class _SilentCartPole(GymBatch):
    """Breaks the bad-input clause: an action out of range is clipped instead of refused."""

    def _check_actions(self, actions, n):
        return np.clip(np.asarray(actions, np.int64), 0, self.num_actions - 1).astype(np.int32)


@pytest.mark.parametrize(
    "broken,clause", [(_LeakyCartPole, "indices"), (_UnseededCartPole, "seeding"), (_SilentCartPole, "bad_input")]
)
def test_a_batch_that_breaks_a_clause_is_caught(broken, clause):
    batch = broken("CartPole-v1", 3, seed=1, max_episode_frames=30)
    with pytest.raises(BatchContractError, match=rf"(?m)^  {clause}: "):
        check_batch(batch)
    check_batch(batch, skip=(clause,))  # the other clauses hold
    batch.close()


def test_twins_that_differ_are_caught():
    ours = MujocoBatch("Hopper-v5", 2, seed=1, backend="custom")
    theirs = MujocoBatch("Hopper-v5", 2, seed=1, backend="reference", ctrl_cost_weight=0.5)  # another reward
    with pytest.raises(BatchContractError, match="twin: the twins differ at step 0"):
        check_batch(ours, twin=theirs, skip=(SCREEN,))


def test_bad_arguments_of_the_check_itself():
    batch = GymBatch("CartPole-v1", 1)
    with pytest.raises(TypeError, match="batch"):
        check_batch("CartPole-v1")
    with pytest.raises(ValueError, match="skip"):
        check_batch(batch, skip=("screne",))
    with pytest.raises(ValueError, match="steps"):
        check_batch(batch, steps=0)


@pytest.mark.parametrize("family", ["atari", "mujoco"])
def test_a_batch_freed_while_a_function_is_traced_is_freed_at_once(family):
    """A garbage collection runs a dropped batch's finalizer wherever it happens, also while a tf.function is being
    traced: the resource is destroyed eagerly there, not added to the function's graph (where it would never run and,
    with the graph's lock held, hung the tests)."""
    import tensorflow as tf

    from workbench.ops import atari_env, mujoco_env

    if family == "atari":
        batch, ops = AtariBatch("pong", 2, backend="custom"), atari_env
    else:
        batch, ops = MujocoBatch("Hopper-v5", 2, backend="custom"), mujoco_env
    handle = batch.ops_handle

    @tf.function
    def traced():
        ops.destroy(handle)  # what the finalizer does when a collection runs during the trace
        return tf.constant(0)

    traced.get_concrete_function()
    with pytest.raises(tf.errors.OpError):
        ops.reset(handle, np.array([0], np.int32), np.array([1], np.int64))
    batch.close()  # the finalizer's second destroy finds nothing and is quiet


@pytest.mark.parametrize("family", ["atari", "mujoco"])
def test_the_batch_ops_infer_their_shapes_in_a_graph(family):
    """Traced with an unknown number of indices, the batch ops' outputs have the rank they will have, [n] first, and
    the sizes fixed by the op (MuJoCo's 10 info terms); an input with the wrong rank or another number of rows than
    indices fails the trace, before anything runs."""
    import tensorflow as tf

    from workbench.ops import atari_env, mujoco_env

    if family == "atari":
        batch, ops = AtariBatch("pong", 2, backend="custom"), atari_env
        per_row = tf.TensorSpec([None], tf.int32)  # actions
    else:
        batch, ops = MujocoBatch("Hopper-v5", 2, backend="custom"), mujoco_env
        per_row = tf.TensorSpec([None, None], tf.float32)
    handle = batch.ops_handle
    indices_spec = tf.TensorSpec([None], tf.int32)

    @tf.function(input_signature=[indices_spec, per_row])
    def traced(indices, actions):
        seeds = tf.cast(indices, tf.int64)
        reset = ops.reset(handle, indices, seeds)
        return reset, ops.step(handle, indices, actions), ops.status(handle, indices), ops.observation(handle, indices)

    reset, step, status, observation = traced.get_concrete_function().structured_outputs
    if family == "atari":
        assert reset.shape.as_list() == [None]  # the lives of each index
        assert [t.shape.as_list() for t in step] == [[None], [None]]
        assert [t.shape.as_list() for t in status] == [[None]] * 5
        assert observation.shape.as_list() == [None] * 4  # [n, size, size, stack]: the sizes are attributes
    else:
        assert reset.shape.as_list() == [None, None]  # observation rows
        assert [t.shape.as_list() for t in step] == [[None]] * 3
        assert [t.shape.as_list() for t in status] == [[None]] * 5 + [[None, 10]]
        assert observation.shape.as_list() == [None, None]
    wrong_rank = tf.TensorSpec([None, 1] if family == "atari" else [None], per_row.dtype)
    with pytest.raises(ValueError, match="rank"):
        tf.function(lambda i, a: ops.step(handle, i, a)).get_concrete_function(indices_spec, wrong_rank)
    with pytest.raises(ValueError, match="Dimensions must be equal"):
        rows = tf.TensorSpec([3] + per_row.shape.as_list()[1:], per_row.dtype)
        tf.function(lambda i, a: ops.step(handle, i, a)).get_concrete_function(tf.TensorSpec([2], tf.int32), rows)
    batch.close()


class _DoublingHopper(MujocoBatch):
    """Breaks the capabilities clause: its steps inside graphs pay twice the reward step() pays."""

    def step_in_graph(self, indices, actions):
        rewards, done = super().step_in_graph(indices, actions)
        return 2 * rewards, done


def test_a_batch_whose_graph_steps_differ_from_its_steps_is_caught():
    batch = _DoublingHopper("Hopper-v5", 2, backend="custom", max_episode_steps=40, seed=2)
    with pytest.raises(BatchContractError, match=r"step_in_graph\(\) and record_graph_steps\(\) differ from step\(\)"):
        check_batch(batch, skip=(SCREEN,))
    batch.close()


def test_record_graph_steps_refuses_flags_that_do_not_fit_the_indices():
    batch = MujocoBatch("Hopper-v5", 2, backend="custom", max_episode_steps=40, seed=2)
    batch.reset()
    with pytest.raises(ValueError, match=r"done must be bool \[2\]"):
        batch.record_graph_steps([0, 1], [True])
    with pytest.raises(ValueError, match=r"done must be bool \[1\]"):
        batch.record_graph_steps([0], np.array([1]))
    with pytest.raises(ValueError, match="out of range"):
        batch.record_graph_steps([5], np.array([False]))
    batch.record_graph_steps([1], np.array([True]))
    assert batch.done().tolist() == [False, True]
    batch.close()
