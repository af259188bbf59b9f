"""PopulationModel: one network architecture with the weights of many population members.

Every variable has a leading slot dimension; batch entry b runs with the
weights of slot slots[b] through the population ops, so a caller computes only
the members whose episodes are still going. A member's weights move in and
out of a slot as one flat float32 vector (the layout evolution works on).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import tensorflow as tf

from workbench.checks import check_choice, check_positive_int
from workbench.models.observation_normalization import ObservationNormalization, ObservationStatistics
from workbench.models.virtual_batch_norm import fold, reference_input
from workbench.ops import LowRankPerturbation, assign_slots
from workbench.ops.host_memory import aligned_empty, as_tensor
from workbench.ops.population import UINT8_SCALE

WEIGHT_DTYPES = {"float32": tf.float32, "bfloat16": tf.bfloat16}
ACTIVATIONS = ("relu", "tanh")  # between hidden layers
ACTION_SCALINGS = ("clip", "tanh")  # continuous actions: the outputs clipped to the range, or tanh-squashed onto it


class PopulationModel(tf.Module):
    """A stack of Conv2D/Dense layers (ReLU between them) for `slots` members.

    Args:
      layers: layer descriptions (workbench.models.layers), the last one the output.
      input_shape: shape of one observation, e.g. (84, 84, 4) or (4,).
      slots: how many members the model holds at once.
      weight_dtype: "float32" or "bfloat16" storage of the weights (sums stay float32).
      output_init_std: initialisation scale of the output layer (Such et al. 2017): standard normal * std /
        sqrt(fan_in); biases start at 0.
      hidden_init_std: the same for the hidden layers.
      backend: "custom", "reference" or None (environment decides), for every op.
      reference_batch: observations [n] + input_shape for virtual batch normalisation of every hidden
        layer (virtual_batch_norm.py): folded into each member's weights when its slot is loaded; None = off.
      action_range: None for discrete actions (act() = argmax of the outputs), or (low, high) float
        vectors with one entry per output for continuous actions (act() = the outputs clipped to them).
      activation: "relu" (default; the population ops fuse it) or "tanh" between layers.
      action_scaling: continuous actions only: "clip" (default: the outputs clipped to action_range) or
        "tanh" (low + (tanh(y) + 1) / 2 * (high - low)).
      observation_normalization: an ObservationNormalization (observation_normalization.py) or None: the
        input is normalised by statistics shared by every slot (set_observation_statistics; identity first).
    """

    def __init__(
        self,
        layers: Sequence[Any],
        input_shape: Sequence[int],
        slots: int,
        weight_dtype: str = "float32",
        hidden_init_std: float = 1.0,
        output_init_std: float = 0.1,
        backend: str | None = None,
        name: str | None = None,
        reference_batch: Any = None,
        action_range: Any = None,
        activation: str = "relu",
        action_scaling: str = "clip",
        observation_normalization: ObservationNormalization | None = None,
    ) -> None:
        super().__init__(name=name)
        check_positive_int("slots", slots)
        self.activation = check_choice("activation", activation, ACTIVATIONS)
        self.action_scaling = check_choice("action_scaling", action_scaling, ACTION_SCALINGS)
        if weight_dtype not in WEIGHT_DTYPES:
            raise ValueError(f"weight_dtype must be one of {sorted(WEIGHT_DTYPES)}, got {weight_dtype!r}")
        self.layers = tuple(layers)
        self.input_shape = tuple(int(d) for d in input_shape)
        self.slots = int(slots)
        self.weight_dtype = weight_dtype
        self.backend = backend
        self._init_stds = [hidden_init_std] * (len(self.layers) - 1) + [output_init_std]
        self.kernel_shapes, self.output_shapes = [], []
        shape = self.input_shape
        for layer in self.layers:
            self.kernel_shapes.append(layer.kernel_shape(shape))
            shape = layer.output_shape(shape)
            self.output_shapes.append(shape)
        dtype = WEIGHT_DTYPES[weight_dtype]
        with self.name_scope:
            self.kernels = [
                tf.Variable(tf.zeros((self.slots,) + k, dtype), trainable=False, name=f"{layer.name}_kernel")
                for layer, k in zip(self.layers, self.kernel_shapes)
            ]
            self.biases = [
                tf.Variable(tf.zeros((self.slots, k[1]), dtype), trainable=False, name=f"{layer.name}_bias")
                for layer, k in zip(self.layers, self.kernel_shapes)
            ]
        self._sizes = []
        for depth, units in self.kernel_shapes:
            self._sizes += [depth * units, units]
        self.reference = None if reference_batch is None else reference_input(reference_batch, self.input_shape)
        if self.reference is not None and self.activation != "relu":
            raise ValueError("virtual batch normalisation (reference_batch) needs activation='relu'")
        self.action_range = None if action_range is None else self._check_action_range(action_range)
        if action_scaling != "clip" and self.action_range is None:
            raise ValueError("action_scaling applies to continuous actions: give an action_range")
        self.observation_normalization = None
        if observation_normalization is not None:
            if len(self.input_shape) != 1:
                raise ValueError(f"observation_normalization needs vector observations, got shape {self.input_shape}")
            self.observation_normalization = ObservationNormalization.from_options(observation_normalization)
            size = self.input_shape[0]
            with self.name_scope:
                self.observation_mean = tf.Variable(tf.zeros([size]), trainable=False, name="observation_mean")
                self.observation_scale = tf.Variable(tf.ones([size]), trainable=False, name="observation_scale")

    # ----- parameters ---------------------------------------------------------------------
    @property
    def num_actions(self) -> int | None:
        """Size of the discrete action set (None for continuous actions)."""
        return None if self.action_range is not None else self.output_shapes[-1][-1]

    @property
    def action_size(self) -> int | None:
        """Length of an action vector (None for discrete actions)."""
        return self.output_shapes[-1][-1] if self.action_range is not None else None

    @property
    def num_parameters(self) -> int:
        """Parameters of one member (kernels and biases)."""
        return int(sum(self._sizes))

    def initial_parameters(self, seed: int | np.random.Generator) -> np.ndarray:
        """A member's flat initial parameters: N(0, 1) * std / sqrt(fan_in), biases 0."""
        rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
        pieces = []
        for (depth, units), std in zip(self.kernel_shapes, self._init_stds):
            pieces.append((rng.standard_normal(depth * units) * (std / np.sqrt(depth))).astype(np.float32))
            pieces.append(np.zeros(units, np.float32))
        return np.concatenate(pieces)

    def initial_scales(self) -> np.ndarray:
        """Per-parameter standard deviation of initial_parameters (float32; 0 for biases).

        Genomes start from initial_scales() * noise (workbench.evolution.GenomeDecoder).
        """
        pieces = []
        for (depth, units), std in zip(self.kernel_shapes, self._init_stds):
            pieces.append(np.full(depth * units, std / np.sqrt(depth), np.float32))
            pieces.append(np.zeros(units, np.float32))
        return np.concatenate(pieces)

    def unflatten(self, parameters: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
        """Flat vector -> [(kernel [K, N], bias [N]) per layer] (numpy views)."""
        parameters = self._check_parameters(parameters, "parameters", 1)
        arrays = np.split(parameters, np.cumsum(self._sizes)[:-1])
        return [(arrays[2 * i].reshape(k), arrays[2 * i + 1]) for i, k in enumerate(self.kernel_shapes)]

    def set_slots(
        self, slots: Sequence[int] | np.ndarray, parameters: np.ndarray | Sequence[np.ndarray], check_finite: bool = True
    ) -> None:
        """Loads members' flat parameters into slots [n]: an array [n, num_parameters] or n rows [num_parameters].

        Rows are written into each layer's variable without stacking them first. check_finite=False
        skips the NaN/infinity check, for callers that have just made it (WeightSlots). With a reference
        batch, each member's virtual batch normalisation is folded in first, so the slots (and get_slot)
        hold the folded weights.
        """
        if isinstance(parameters, np.ndarray) or not isinstance(parameters, (list, tuple)):
            rows = list(self._check_parameters(parameters, "parameters", 2, check_finite))
        else:
            rows = [self._check_parameters(row, f"parameters[{i}]", 1, check_finite) for i, row in enumerate(parameters)]
        slots = self._check_slot_indices(slots, "slots")
        if len(slots) != len(rows):
            raise ValueError(f"slots has {len(slots)} entries but parameters has {len(rows)} rows")
        if len(np.unique(slots)) != len(slots):
            raise ValueError("slots must not repeat: each slot receives one member")
        if len(slots) == 0:
            return
        if self.reference is not None:
            rows = [self.normalized(row) for row in rows]
        offsets = np.concatenate([[0], np.cumsum(self._sizes)])
        variables = [v for pair in zip(self.kernels, self.biases) for v in pair]
        for i, variable in enumerate(variables):
            piece = aligned_empty((len(rows),) + tuple(variable.shape[1:]))
            for j, row in enumerate(rows):
                piece[j] = row[offsets[i] : offsets[i + 1]].reshape(piece.shape[1:])
            piece = as_tensor(piece)  # the one copy above, none here
            if variable.dtype != tf.float32:
                piece = tf.cast(piece, variable.dtype)
            # In place, keeping reads zero-copy (a scatter update would make every inference copy the variable).
            assign_slots(variable, slots, piece, backend=self.backend)

    def normalized(self, parameters: np.ndarray) -> np.ndarray:
        """A member's flat parameters with virtual batch normalisation folded in (needs reference_batch)."""
        if self.reference is None:
            raise ValueError("normalized() needs a model built with a reference_batch")
        folded = fold(self.layers, self.unflatten(parameters), self.reference)
        return np.concatenate([piece.ravel() for pair in folded for piece in pair]).astype(np.float32)

    def set_slot(self, slot: int, parameters: np.ndarray) -> None:
        """Loads one member's flat parameters into `slot`."""
        self.set_slots([slot], [self._check_parameters(parameters, "parameters", 1)], check_finite=False)  # just checked

    def get_slot(self, slot: int) -> np.ndarray:
        """The flat float32 parameters held in `slot`."""
        (slot,) = self._check_slot_indices([slot], "slot")
        pieces = []
        for kernel, bias in zip(self.kernels, self.biases):
            pieces += [tf.cast(kernel[slot], tf.float32).numpy().ravel(), tf.cast(bias[slot], tf.float32).numpy()]
        return np.concatenate(pieces)

    # ----- observation normalisation ------------------------------------------------------
    def set_observation_statistics(self, statistics: ObservationStatistics | None) -> None:
        """Normalises inputs by these statistics from now on (None: the identity); needs observation_normalization."""
        if self.observation_normalization is None:
            raise ValueError("set_observation_statistics() needs a model built with observation_normalization")
        size = self.input_shape[0]
        if statistics is None:
            statistics = ObservationStatistics.empty(size)
        if not isinstance(statistics, ObservationStatistics) or statistics.size != size:
            raise ValueError(f"observation statistics must be an ObservationStatistics of size {size}, got {statistics!r}")
        mean, std = statistics.mean_and_std(self.observation_normalization.variance_floor)
        self.observation_mean.assign(mean)
        self.observation_scale.assign((1.0 / std).astype(np.float32))

    def normalize_observations(self, x: tf.Tensor) -> tf.Tensor:
        """clip((x - mean) / std, -clip, clip) with the statistics in force (x float32 [batch, d])."""
        options = self.observation_normalization
        x = (x - self.observation_mean) * self.observation_scale
        clip = None if options is None else options.clip
        return x if clip is None else tf.clip_by_value(x, -clip, clip)

    # ----- forward ------------------------------------------------------------------------
    def __call__(self, observations: Any, slots: Any, perturbations: Sequence[Any] | None = None) -> tf.Tensor:
        """Logits [batch, num_actions] of each observation under its slot's weights.

        observations: uint8 (scaled to [0, 1]: float(x) * UINT8_SCALE, by the first layer's op when it
        reads uint8, a convolution) or float32, [batch] + input_shape.
        slots: int [batch]. perturbations: optional list of LowRankPerturbation, one per
        layer, making entry b's weights those of slot slots[b] plus its perturbation.
        """
        x = self._check_observations(observations)
        if perturbations is not None:
            perturbations = list(perturbations)
            if len(perturbations) != len(self.layers):
                raise ValueError(f"perturbations must have one entry per layer ({len(self.layers)}), got {len(perturbations)}")
        if x.dtype == tf.uint8 and not self.layers[0].reads_uint8:
            x = tf.cast(x, tf.float32) * UINT8_SCALE
        if self.observation_normalization is not None:
            x = self.normalize_observations(x)
        last = len(self.layers) - 1
        for i, (layer, kernel, bias) in enumerate(zip(self.layers, self.kernels, self.biases)):
            perturbation = perturbations[i] if perturbations is not None else None
            relu = i < last and self.activation == "relu"
            x = layer.apply(x, kernel, bias, slots, relu=relu, perturbation=perturbation, backend=self.backend)
            if i < last and self.activation == "tanh":
                x = tf.tanh(x)
        return x

    def act(self, observations: Any, slots: Any, perturbations: Sequence[Any] | None = None) -> tf.Tensor:
        """Greedy actions: argmax of the outputs, int32 [batch]; or, with an action_range, the outputs clipped
        to it (or tanh-squashed onto it), float32 [batch, action_size]."""
        outputs = self(observations, slots, perturbations)
        if self.action_range is not None:
            low, high = self.action_range
            if self.action_scaling == "tanh":
                return low + (tf.tanh(outputs) + 1.0) * 0.5 * (high - low)
            return tf.clip_by_value(outputs, low, high)
        return tf.argmax(outputs, axis=-1, output_type=tf.int32)

    # ----- low-rank perturbations (EGGROLL) -------------------------------------------------
    def random_perturbations(self, sigmas: np.ndarray, rank: int, seed: int) -> list:
        """Random rank-`rank` perturbations for a batch (one per entry of sigmas), per layer.

        Factors are N(0, 1); the EGGROLL scale 1/sqrt(rank) is folded into sigmas.
        """
        sigmas = np.asarray(sigmas, np.float32)
        if sigmas.ndim != 1:
            raise ValueError(f"sigmas must be [batch], got shape {sigmas.shape}")
        check_positive_int("rank", rank)
        rng = np.random.default_rng(seed)
        batch, scaled = len(sigmas), sigmas / np.float32(np.sqrt(rank))
        return [
            LowRankPerturbation(
                tf.constant(scaled),
                tf.constant(rng.standard_normal((batch, depth, rank), dtype=np.float32)),
                tf.constant(rng.standard_normal((batch, units, rank), dtype=np.float32)),
                tf.constant(rng.standard_normal((batch, units), dtype=np.float32)),
            )
            for depth, units in self.kernel_shapes
        ]

    def perturbed_parameters(self, parameters: np.ndarray, perturbations: Sequence[Any], index: int) -> np.ndarray:
        """Materialises entry `index`'s flat parameters: parent + sigma * A @ B^T (for checks)."""
        pieces = []
        for (kernel, bias), p in zip(self.unflatten(parameters), perturbations):
            sigma = float(np.asarray(p.sigmas)[index])
            a, b = np.asarray(p.factor_a)[index], np.asarray(p.factor_b)[index]
            pieces.append((kernel + sigma * a @ b.T).ravel())
            noise = 0.0 if p.bias_noise is None else sigma * np.asarray(p.bias_noise)[index]
            pieces.append(bias + noise)
        return np.concatenate(pieces).astype(np.float32)

    # ----- validation -----------------------------------------------------------------------
    def _check_action_range(self, action_range):
        units = self.output_shapes[-1][-1]
        try:
            low, high = (np.asarray(bound, np.float32).reshape(-1) for bound in action_range)
        except (TypeError, ValueError):
            raise ValueError(f"action_range must be a (low, high) pair of vectors, got {action_range!r}") from None
        if low.shape != (units,) or high.shape != (units,):
            raise ValueError(f"action_range must have {units} entries per bound (one per output), got {low.size} and {high.size}")
        if np.isnan(low).any() or np.isnan(high).any() or (low > high).any():
            raise ValueError("action_range must have low <= high everywhere, without NaN")
        return tf.constant(low), tf.constant(high)

    def _check_parameters(self, parameters, name, rank, check_finite=True):
        array = np.asarray(parameters)
        if array.ndim != rank or array.shape[-1] != self.num_parameters:
            expected = "[num_parameters]" if rank == 1 else "[n, num_parameters]"
            raise ValueError(f"{name} must be {expected} with num_parameters={self.num_parameters}, got shape {array.shape}")
        if not np.issubdtype(array.dtype, np.floating):
            raise TypeError(f"{name} must be floating point, got {array.dtype}")
        if check_finite and not np.all(np.isfinite(array)):
            raise ValueError(f"{name} contains NaN or infinite values")
        return array.astype(np.float32, copy=False)

    def _check_slot_indices(self, slots, name):
        array = np.asarray(slots)
        if array.ndim != 1 or not (array.size == 0 or np.issubdtype(array.dtype, np.integer)):
            raise ValueError(f"{name} must be a 1-D sequence of integers, got {slots!r}")
        bad = array[(array < 0) | (array >= self.slots)]
        if bad.size:
            raise ValueError(f"{name} contains {int(bad[0])}, out of range [0, {self.slots})")
        return array.astype(np.int64)

    def _check_observations(self, observations):
        """observations as a tensor, uint8 or float32 (uint8 is scaled by the first layer or before it)."""
        x = tf.convert_to_tensor(observations)
        if x.dtype not in (tf.uint8, tf.float32):
            raise TypeError(f"observations must be uint8 or float32, got {x.dtype.name}")
        if x.shape.rank is not None and tuple(x.shape[1:]) != self.input_shape and None not in x.shape[1:]:
            raise ValueError(f"observations must be [batch] + {list(self.input_shape)}, got shape {x.shape}")
        return x
