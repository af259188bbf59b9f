"""SimulatorBatch: the template of a simulator family's batch (AtariBatch, MujocoBatch, the next family).

A family is an EnvBatch over a backend: the family's custom ops (simulators stepped inside TensorFlow on its
thread pool) or their reference twin (the ecosystem's own code from Python), chosen by `make_backend`. Both
backends keep the SimulatorBackend protocol below; what this base class derives from it, a family does not write
again: the capabilities (the family's own plus IN_GRAPH on the ops), `ops_handle`, `observe_in_graph`, `backend`,
the observation and close hooks and the repr. A new family writes its backends, its config checks, the
reset/step hooks (how its done flags are made) and its extras (screen, RAM, physics state).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

import numpy as np

from workbench.envs.backends import make_backend
from workbench.envs.batch import IN_GRAPH, EnvBatch

if TYPE_CHECKING:
    import tensorflow as tf


class SimulatorBackend(Protocol):
    """What a family's backends provide, on valid, deduplicated int32 indices (EnvBatch checks them first)."""

    name: str  # "custom" (the ops; it also has `handle`, the simulators' resource handle) or "reference"

    def reset(self, indices: np.ndarray, seeds: np.ndarray) -> Any: ...

    def step(self, indices: np.ndarray, actions: np.ndarray) -> tuple[np.ndarray, ...]: ...

    def step_and_observe(self, indices: np.ndarray, actions: np.ndarray) -> tuple[np.ndarray, ...]: ...

    def observation(self, indices: np.ndarray) -> np.ndarray: ...

    def status(self, indices: np.ndarray) -> dict[str, np.ndarray]: ...

    def close(self) -> None: ...


class SimulatorBatch(EnvBatch):
    """Base of the simulator families' batches; see the module docstring."""

    family_capabilities: ClassVar[frozenset[str]] = frozenset()  # on either backend (SCREEN, RAM, ...)
    ops_module: ClassVar[str] = ""  # workbench.ops.<ops_module>.observation(handle, indices) observes in graphs
    _backend: SimulatorBackend

    def _start_backend(
        self,
        backend: str | None,
        custom: Callable[[], SimulatorBackend],
        reference: Callable[[], SimulatorBackend],
        fallback: str,
    ) -> None:
        """Creates the backend (make_backend: `backend` "custom", "reference" or None = the ops, falling back to the
        reference with the warning `fallback: <reason>` when they cannot be loaded)."""
        self._backend = make_backend(backend, custom, reference, fallback)

    @property
    def capabilities(self) -> frozenset:
        """The family's capabilities; IN_GRAPH too on the ops backend."""
        extra = {IN_GRAPH} if self._backend.name == "custom" else set()
        return frozenset(self.family_capabilities | extra)

    @property
    def ops_handle(self) -> tf.Tensor:
        """The simulators' resource handle for use inside graphs (workbench.ops); needs IN_GRAPH."""
        self.require(IN_GRAPH, "ops_handle")
        return self._backend.handle  # type: ignore[attr-defined]  # the ops backend's, as IN_GRAPH says

    def observe_in_graph(self, indices: tf.Tensor) -> tf.Tensor:
        """The observations of `indices` made by the simulators' op inside a graph (needs IN_GRAPH); the same
        dtype and shape as observation()."""
        self.require(IN_GRAPH, "observe_in_graph()")
        ops = importlib.import_module(f"workbench.ops.{self.ops_module}")
        return ops.observation(self.ops_handle, indices)

    @property
    def backend(self) -> str:
        """ "custom" or "reference": the backend in use."""
        return self._backend.name

    def _label(self) -> str:
        """What the repr names: the game or task."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._label()!r}, {self.batch_size}, backend={self.backend!r})"

    # Hooks of EnvBatch that every family implements alike.
    def _observation(self, indices):
        return self._backend.observation(indices)

    def _close(self):
        self._backend.close()
