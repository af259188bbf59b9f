"""NoiseTable: one large block of float32 N(0, 1) values that every genome indexes into.

Genomes store offsets into the table instead of weights (a child is its parent
plus sigma times the slice at one offset), so the table must be identical
everywhere a genome is decoded: it is drawn from one seed with numpy's PCG64
(the same values in every process and on every machine with the same numpy),
built once per process (NoiseTable.shared) and read-only, so threads share it
and later Ray workers rebuild it locally from the seed instead of receiving it.

Default size 2**26 values = 256 MB: it fits a laptop's memory beside
TensorFlow, takes about half a second to draw, and is 16 times the largest
network here (LargeModel, 4.05M parameters), so the slices of two random
offsets overlap little. The paper used 250M values (1 GB) drawn from seed 123.
"""

from __future__ import annotations

import threading

import numpy as np

from workbench.checks import check_int

DEFAULT_SIZE = 2**26
DEFAULT_SEED = 123

_shared: dict[tuple[int, int], NoiseTable] = {}  # (size, seed) -> the process's table
_shared_lock = threading.Lock()


class NoiseTable:
    """size float32 N(0, 1) values drawn from `seed`; read-only."""

    def __init__(self, size: int = DEFAULT_SIZE, seed: int = DEFAULT_SEED) -> None:
        check_int("size", size, 1, 2**32)
        check_int("seed", seed, 0)
        self.size = int(size)
        self.seed = int(seed)
        values = np.random.Generator(np.random.PCG64(self.seed)).standard_normal(self.size, dtype=np.float32)
        values.setflags(write=False)
        self.values = values

    @classmethod
    def shared(cls, size: int = DEFAULT_SIZE, seed: int = DEFAULT_SEED) -> NoiseTable:
        """The process-wide table of (size, seed), built on first use."""
        key = (int(size), int(seed))
        with _shared_lock:
            if key not in _shared:
                _shared[key] = cls(size, seed)
            return _shared[key]

    @property
    def nbytes(self) -> int:
        return self.values.nbytes

    def check_index(self, index: int, length: int, name: str = "index") -> int:
        """`index` as an int if [index, index + length) lies in the table, else a ValueError naming `name`."""
        if isinstance(index, bool) or not isinstance(index, (int, np.integer)):
            raise TypeError(f"{name} must be an integer, got {index!r}")
        if length > self.size:
            raise ValueError(f"slices of {length} values do not fit in a noise table of {self.size}")
        if not 0 <= index <= self.size - length:
            raise ValueError(f"{name} = {index} is out of range [0, {self.size - length}] for slices of {length}")
        return int(index)

    def slice(self, index: int, length: int) -> np.ndarray:
        """The read-only view values[index : index + length]."""
        index = self.check_index(index, length)
        return self.values[index : index + length]

    def sample_index(self, rng: np.random.Generator, length: int) -> int:
        """A uniformly random offset for a slice of `length` values."""
        if length > self.size:
            raise ValueError(f"slices of {length} values do not fit in a noise table of {self.size}")
        return int(rng.integers(0, self.size - length + 1))

    def __repr__(self):
        return f"NoiseTable(size={self.size}, seed={self.seed})"
