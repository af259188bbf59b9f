"""ParameterSpace: how noise-table offsets become initial weights and mutations of one architecture.

Every search strategy and every decoder of one run shares a ParameterSpace: the
noise table, each parameter's initial scale and the layer shapes. It defines

    initial(init)                  = init_scales * noise[init : init + n]
    perturb(theta, i, sigma, 0)    = theta + float32(sigma) * noise[i : i + n]          (full rank)
    perturb(theta, i, sigma, r)    = theta + sigma / sqrt(r) * (A_l B_l^T, b_l per layer) (rank r)

where for rank r the slice at i holds, layer after layer, A_l [K, r], B_l [N, r]
and a bias vector b_l [N] (mutation_length(r) values, far fewer than n): the
low-rank (EGGROLL) perturbation that the inference op's perturbed mode applies
without materialising the child (low_rank_factors gives its factors). The
flat layout is the model's: per layer the [K, N] kernel then the [N] bias.
All arithmetic is elementwise float32 in a fixed order, so every process and
machine that shares the noise table reconstructs identical weights.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from workbench.checks import check_int
from workbench.evolution.noise import NoiseTable

MAX_RANK = 2**16 - 1  # ranks travel as uint16 in Genome.to_bytes


def check_rank(rank: int, name: str = "rank") -> int:
    """`rank` as an int in [0, MAX_RANK] (0 = full rank), else a ValueError naming `name`: the one rank bound."""
    try:
        return check_int(name, rank, 0, MAX_RANK)
    except ValueError:
        raise ValueError(f"{name} must be an integer in [0, {MAX_RANK}] (0 = full rank), got {rank!r}") from None


def rank_one_noise(z: np.ndarray, direction: np.ndarray) -> np.ndarray:
    """z + (w . z) w in float32 for a noise slice z and a direction w (float32 [n]): the dot product in float64
    with numpy's pairwise summation, rounded to float32 once. It is the one reduction in decoding: the same in
    every process of a machine and, rounded to float32, across machines unless the float64 sums straddle a
    float32 rounding boundary (they differ in the last bits only where summation orders differ)."""
    dot = np.float32(np.add.reduce(z.astype(np.float64) * direction.astype(np.float64)))
    return z + dot * direction


class ParameterSpace:
    """The weight geometry of one architecture over a noise table.

    Args:
      noise: the NoiseTable genomes index into.
      init_scales: float32 [n], each parameter's initial standard deviation (0 for biases).
      layer_shapes: [(K, N), ...] kernel shapes in the flat layout (kernel then bias per
        layer); needed only for low-rank mutations (rank > 0).
    """

    def __init__(self, noise: NoiseTable, init_scales: np.ndarray, layer_shapes: Sequence[tuple[int, int]] | None = None) -> None:
        if not isinstance(noise, NoiseTable):
            raise TypeError(f"noise must be a NoiseTable, got {type(noise).__name__}")
        self.noise = noise
        self.init_scales = np.array(init_scales, np.float32)
        if self.init_scales.ndim != 1 or self.init_scales.size == 0:
            raise ValueError(f"init_scales must be a non-empty vector, got shape {self.init_scales.shape}")
        if not np.isfinite(self.init_scales).all():
            raise ValueError("init_scales must be finite")
        self.init_scales.setflags(write=False)
        self.num_parameters = int(self.init_scales.size)
        if self.num_parameters > noise.size:
            raise ValueError(f"{self.num_parameters} parameters do not fit in a noise table of {noise.size} values")
        self.layer_shapes: list[tuple[int, int]] | None = None
        if layer_shapes is not None:
            given = [tuple(int(d) for d in shape) for shape in layer_shapes]
            if not given or any(len(s) != 2 or min(s) < 1 for s in given):
                raise ValueError(f"layer_shapes must be a non-empty list of (K, N) pairs, got {layer_shapes!r}")
            shapes = [(s[0], s[1]) for s in given]
            total = sum(k * n + n for k, n in shapes)
            if total != self.num_parameters:
                raise ValueError(f"layer_shapes hold {total} parameters (kernels and biases), init_scales {self.num_parameters}")
            self.layer_shapes = shapes

    @classmethod
    def for_model(cls, model: Any, noise: NoiseTable | None = None) -> ParameterSpace:
        """The space of a PopulationModel's weights (default noise: the shared default table)."""
        return cls(noise if noise is not None else NoiseTable.shared(), model.initial_scales(), model.kernel_shapes)

    def describe(self) -> dict:
        """What must match for genomes and states to mean the same weights (JSON-able)."""
        return {
            "num_parameters": self.num_parameters,
            "noise_size": self.noise.size,
            "noise_seed": self.noise.seed,
            "layer_shapes": None if self.layer_shapes is None else [list(s) for s in self.layer_shapes],
        }

    def check_compatible(self, description: dict, what: str = "state") -> None:
        """ValueError when a saved description() belongs to another space."""
        if description != self.describe():
            raise ValueError(f"this {what} belongs to another parameter space: {description!r:.300} != {self.describe()!r:.300}")

    # -- mutations ---------------------------------------------------------------------------
    def check_rank(self, rank: int, name: str = "rank") -> int:
        """`rank` if it is a valid rank (check_rank) that this space can apply (low ranks need layer shapes)."""
        check_rank(rank, name)
        if rank:
            self._layers(f"{name} = {rank}")
        return int(rank)

    def _layers(self, what: str = "a low-rank mutation") -> list[tuple[int, int]]:
        """The layer shapes; ValueError naming `what` when the space was built without them."""
        if self.layer_shapes is None:
            raise ValueError(f"{what} needs layer shapes: build the space with layer_shapes (ParameterSpace.for_model)")
        return self.layer_shapes

    def mutation_length(self, rank: int = 0) -> int:
        """Noise values one mutation of this rank reads."""
        rank = self.check_rank(rank)
        if rank == 0:
            return self.num_parameters
        return sum(k * rank + n * rank + n for k, n in self._layers())

    def sample_offset(self, rng: np.random.Generator, rank: int = 0) -> int:
        """A uniformly random offset for an initial genome (rank 0) or a mutation of this rank."""
        return self.noise.sample_index(rng, self.mutation_length(rank))

    def check_offset(self, index: int, rank: int = 0, name: str = "index") -> int:
        return self.noise.check_index(index, self.mutation_length(rank), name)

    def initial(self, init: int) -> np.ndarray:
        """The initial weights of offset `init` (a new float32 vector)."""
        return self.init_scales * self.noise.slice(init, self.num_parameters)

    def perturb(
        self,
        theta: np.ndarray,
        index: int,
        sigma: float,
        rank: int = 0,
        scales: np.ndarray | None = None,
        out: np.ndarray | None = None,
        direction: np.ndarray | None = None,
    ) -> np.ndarray:
        """theta plus one mutation (a new float32 vector, or `out`, a float32 [n] other than theta, filled
        with it; see the module docstring); scales: per-parameter factors of a full-rank mutation's noise
        (theta + sigma * (scales * noise)), None = 1; direction: a rank-one direction w [n] (with scales) that
        the noise slice z becomes z + (w . z) w before scaling (rank_one_noise)."""
        if rank == 0:
            noise = self.noise.slice(index, self.num_parameters)
            if direction is not None:
                if scales is None:
                    raise ValueError("a rank-one direction comes with per-parameter scales")
                noise = rank_one_noise(noise, direction)
            if scales is not None:
                noise = scales * noise
            step, delta = np.float32(sigma), noise
        else:
            if scales is not None:
                raise ValueError("per-parameter mutation scales apply to full-rank mutations only (rank 0)")
            step, delta = self.low_rank_scale(sigma, rank), self._low_rank_delta(index, rank)
        if out is None:
            return theta + step * delta
        if out is theta or out.dtype != np.float32 or out.shape != (self.num_parameters,):
            raise ValueError(
                f"out must be a float32 [{self.num_parameters}] other than theta, got "
                f"{'theta' if out is theta else f'{out.dtype} {out.shape}'}"
            )
        np.multiply(step, delta, out=out)  # the same float32 operations as theta + step * delta
        return np.add(theta, out, out=out)

    def direction(self, index: int, rank: int = 0) -> np.ndarray:
        """The unit-sigma perturbation epsilon of offset `index`: perturb(theta, i, s, r) = theta + s * epsilon."""
        if rank == 0:
            return self.noise.slice(index, self.num_parameters)
        return self._low_rank_delta(index, rank) * self.low_rank_scale(1.0, rank)

    def combine(self, indices: Sequence[int], weights: np.ndarray, rank: int = 0, chunk: int = 64) -> np.ndarray:
        """sum_i weights[i] * direction(indices[i], rank) as float32 [n]: an ES gradient estimate.

        Full rank: chunks of noise slices times the weights (BLAS). Rank r: per layer
        one [K, P r] @ [P r, N] product of the stacked factors, never a dense direction each.
        """
        weights = np.asarray(weights, np.float32)
        indices = [int(i) for i in indices]
        if weights.shape != (len(indices),):
            raise ValueError(f"weights must be [{len(indices)}] (one per index), got shape {weights.shape}")
        rank = self.check_rank(rank)
        if rank == 0:
            total = np.zeros(self.num_parameters, np.float64)
            for start in range(0, len(indices), chunk):
                rows = np.stack([self.noise.slice(i, self.num_parameters) for i in indices[start : start + chunk]])
                total += weights[start : start + chunk] @ rows
            return total.astype(np.float32)
        scale = self.low_rank_scale(1.0, rank)
        factors = [self.low_rank_factors(i, rank) for i in indices]
        pieces = []
        for layer in range(len(self._layers())):
            a = np.concatenate([f[layer][0] * w for f, w in zip(factors, weights)], axis=1)  # [K, P r]
            b = np.concatenate([f[layer][1] for f in factors], axis=1)  # [N, P r]
            bias = weights @ np.stack([f[layer][2] for f in factors])
            pieces += [(a @ b.T).ravel() * scale, bias * scale]
        return np.concatenate(pieces).astype(np.float32)

    @staticmethod
    def low_rank_scale(sigma: float, rank: int) -> np.float32:
        """float32 sigma / sqrt(rank): the scale the perturbed inference op gets."""
        return np.float32(sigma) / np.float32(np.sqrt(rank))

    def low_rank_factors(self, index: int, rank: int) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """[(A [K, r], B [N, r], b [N]) per layer]: read-only views of the mutation's noise slice."""
        rank = self.check_rank(rank)
        if rank == 0:
            raise ValueError("low_rank_factors needs rank >= 1")
        values = self.noise.slice(index, self.mutation_length(rank))
        factors, offset = [], 0
        for k, n in self._layers():
            a = values[offset : offset + k * rank].reshape(k, rank)
            offset += k * rank
            b = values[offset : offset + n * rank].reshape(n, rank)
            offset += n * rank
            factors.append((a, b, values[offset : offset + n]))
            offset += n
        return factors

    def _low_rank_delta(self, index, rank):
        """Flat (A_l B_l^T, b_l) per layer; the outer products are summed in column order, elementwise."""
        pieces = []
        for a, b, bias in self.low_rank_factors(index, rank):
            kernel = np.zeros((a.shape[0], b.shape[0]), np.float32)
            for column in range(rank):
                kernel += np.multiply.outer(a[:, column], b[:, column])
            pieces += [kernel.ravel(), bias]
        return np.concatenate(pieces)

    def __repr__(self):
        layers = "" if self.layer_shapes is None else f", {len(self.layer_shapes)} layers"
        return f"ParameterSpace({self.num_parameters} parameters{layers}, {self.noise!r})"
