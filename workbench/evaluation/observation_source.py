"""Where a sub-population's policy reads its observations, chosen once per environment batch.

  InGraphObservations  simulators on the ops (Atari, MuJoCo): the inference graph reads the observations with
                       the simulator's own op; they never become numpy
  HostObservations     other batches (Gymnasium, the reference backends): a host array the environment fills,
                       fed to the graph as a tensor
Both start episodes, step them and hand the graph its observations: `graph_input(active)` is what the graph
function is called with, `in_graph(given, episode_slots)` what the policy reads inside it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np
import tensorflow as tf

from workbench.envs.batch import IN_GRAPH, EnvBatch


class ObservationSource(Protocol):
    input_spec: tf.TensorSpec | None  # the graph function's observation argument (None: it takes none)

    def graph_input(self, active: np.ndarray) -> tf.Tensor | None: ...

    def in_graph(self, given: tf.Tensor | None, episode_slots: tf.Tensor) -> tf.Tensor: ...

    def start(self, slots: Sequence[int], seeds: Sequence[int]) -> None: ...

    def step(self, active: np.ndarray, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray]: ...


class InGraphObservations:
    """The simulator's observation op inside the inference graph (the batch supports IN_GRAPH)."""

    input_spec = None

    def __init__(self, env: EnvBatch) -> None:
        self.env = env

    def graph_input(self, active: np.ndarray) -> None:
        return None

    def in_graph(self, given: tf.Tensor | None, episode_slots: tf.Tensor) -> tf.Tensor:
        return self.env.observe_in_graph(episode_slots)

    def start(self, slots: Sequence[int], seeds: Sequence[int]) -> None:
        self.env.start(slots, seeds)

    def step(self, active: np.ndarray, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return self.env.step(active, actions)


class HostObservations:
    """A host array of every slot's newest observation, fed to the graph."""

    def __init__(self, env: EnvBatch, input_shape: Sequence[int]) -> None:
        self.env = env
        self._observations = np.zeros((env.batch_size, *input_shape), env.observation_dtype)
        self.input_spec = tf.TensorSpec((None, *input_shape), tf.as_dtype(env.observation_dtype))

    def graph_input(self, active: np.ndarray) -> tf.Tensor:
        return tf.constant(self._observations[active])

    def in_graph(self, given: tf.Tensor | None, episode_slots: tf.Tensor) -> tf.Tensor:
        assert given is not None, "host observations are passed to the graph"
        return given

    def start(self, slots: Sequence[int], seeds: Sequence[int]) -> None:
        self._observations[slots] = self.env.reset(slots, seeds)

    def step(self, active: np.ndarray, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        rewards, done, self._observations[active] = self.env.step_and_observe(active, actions)
        return rewards, done


def observation_source(env: EnvBatch, input_shape: Sequence[int]) -> ObservationSource:
    """The batch's own op when it has one (IN_GRAPH), a host array otherwise."""
    return InGraphObservations(env) if env.supports(IN_GRAPH) else HostObservations(env, input_shape)
