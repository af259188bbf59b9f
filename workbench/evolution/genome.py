"""Seed-chain genomes and their decoding into weights with a cache of materialised parents.

A genome is (init, ((index, sigma), ...)): offsets into the shared NoiseTable.
Its weights, computed in float32 in this order, are

    theta = init_scales * noise[init : init + n]
    theta = theta + float32(sigma_k) * noise[index_k : index_k + n]    for each mutation k

where init_scales holds each parameter's initial standard deviation (the
model's, e.g. PopulationModel.initial_scales(); 0 for biases). A child differs
from its parent by one mutation, so with its parent cached it costs one noise
slice, and the result is bit for bit the weights of the full chain (same float32
operations in the same order). Genomes serialise to JSON-able data (to_json /
from_json) and to a compact binary form (to_bytes: 4 bytes per offset and per
sigma), whose size is what a genome costs to store or ship. Sigmas are kept as
float32 values (the precision the weights use), so both forms round-trip exactly.
"""
import collections
import dataclasses
import math
import struct
import threading

import numpy as np


def _check_offset(value, name):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 0 <= value < 2**32:
        raise ValueError(f"{name} must be an integer in [0, 2**32), got {value!r}")
    return int(value)


def _check_sigma(value, name):
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
        raise ValueError(f"{name} must be a number, got {value!r}")
    if not math.isfinite(float(value)) or abs(float(value)) > float(np.finfo(np.float32).max):
        raise ValueError(f"{name} must be finite in float32, got {value!r}")
    return float(np.float32(value))  # weights use float32 sigmas; storing them so makes every form exact


@dataclasses.dataclass(frozen=True)
class Genome:
    """init offset and the chain of (offset, sigma) mutations; hashable, immutable."""

    init: int
    mutations: tuple = ()

    def __post_init__(self):
        object.__setattr__(self, "init", _check_offset(self.init, "init"))
        checked = []
        for k, mutation in enumerate(self.mutations):
            if not isinstance(mutation, (tuple, list)) or len(mutation) != 2:
                raise ValueError(f"mutations[{k}] must be an (index, sigma) pair, got {mutation!r}")
            checked.append((_check_offset(mutation[0], f"mutations[{k}] index"),
                            _check_sigma(mutation[1], f"mutations[{k}] sigma")))
        object.__setattr__(self, "mutations", tuple(checked))

    def child(self, index, sigma):
        """This genome plus one mutation."""
        return Genome(self.init, self.mutations + ((index, sigma),))

    @property
    def parent(self):
        """The genome without its last mutation (None for an initial genome)."""
        return Genome(self.init, self.mutations[:-1]) if self.mutations else None

    def __len__(self):
        return len(self.mutations)

    # -- serialisation -------------------------------------------------------------------
    def to_json(self):
        return {"init": self.init, "mutations": [[index, sigma] for index, sigma in self.mutations]}

    @classmethod
    def from_json(cls, data):
        if not isinstance(data, dict) or set(data) != {"init", "mutations"}:
            raise ValueError(f"a genome is a dict with keys 'init' and 'mutations', got {data!r:.200}")
        if not isinstance(data["mutations"], list):
            raise ValueError("genome 'mutations' must be a list of [index, sigma] pairs")
        return cls(data["init"], tuple(tuple(m) if isinstance(m, list) else m for m in data["mutations"]))

    def to_bytes(self):
        """Compact form: uint32 init, then uint32 index + float32 sigma per mutation (little-endian)."""
        return struct.pack(f"<I{'If' * len(self.mutations)}", self.init, *[v for m in self.mutations for v in m])

    @classmethod
    def from_bytes(cls, data):
        if not isinstance(data, (bytes, bytearray)) or len(data) < 4 or (len(data) - 4) % 8:
            raise ValueError("genome bytes must be 4 + 8 * k long (see Genome.to_bytes)")
        values = struct.unpack(f"<I{'If' * ((len(data) - 4) // 8)}", data)
        return cls(values[0], tuple(zip(values[1::2], values[2::2])))

    def encoded_bytes(self):
        return 4 + 8 * len(self.mutations)

    def compression_ratio(self, num_parameters):
        """How many times smaller the genome is than its float32 weights."""
        return 4 * num_parameters / self.encoded_bytes()


class GenomeDecoder:
    """Turns genomes into float32 weight vectors, keeping recently decoded ones (parents) in an LRU cache.

    cache_bytes bounds the cache (default 1 GB: 64 LargeModel members); thread-safe.
    """

    def __init__(self, noise, init_scales, cache_bytes=2**30):
        self.noise = noise
        self.init_scales = np.asarray(init_scales, np.float32)
        if self.init_scales.ndim != 1 or self.init_scales.size == 0:
            raise ValueError(f"init_scales must be a non-empty vector, got shape {self.init_scales.shape}")
        if self.init_scales.size > noise.size:
            raise ValueError(f"{self.init_scales.size} parameters do not fit in a noise table of {noise.size} values")
        if not np.isfinite(self.init_scales).all():
            raise ValueError("init_scales must be finite")
        self.init_scales.setflags(write=False)
        self.num_parameters = int(self.init_scales.size)
        self.capacity = max(1, int(cache_bytes) // (4 * self.num_parameters))
        self._cache = collections.OrderedDict()
        self._lock = threading.Lock()
        self.slices_applied = 0  # noise slices added since creation (a cache-efficiency figure)

    def sample_index(self, rng):
        """A random offset for a new mutation or initial genome of this decoder's size."""
        return self.noise.sample_index(rng, self.num_parameters)

    def check(self, genome):
        """ValueError naming the offset when a genome does not fit this decoder's noise table."""
        if not isinstance(genome, Genome):
            raise TypeError(f"expected a Genome, got {type(genome).__name__}")
        n = self.num_parameters
        self.noise.check_index(genome.init, n, "init")
        for k, (index, _) in enumerate(genome.mutations):
            self.noise.check_index(index, n, f"mutations[{k}] index")

    def decode(self, genome):
        """The genome's weights (a read-only float32 vector, shared with the cache)."""
        if not isinstance(genome, Genome):
            raise TypeError(f"expected a Genome, got {type(genome).__name__}")
        with self._lock:
            cached = self._cache.get(genome)
            if cached is not None:
                self._cache.move_to_end(genome)
                return cached
        self.check(genome)
        # The longest cached prefix of the chain, then one slice per remaining mutation.
        with self._lock:
            start, theta = 0, None
            for depth in range(len(genome.mutations) - 1, -1, -1):
                prefix = Genome(genome.init, genome.mutations[:depth])
                if prefix in self._cache:
                    start, theta = depth, self._cache[prefix]
                    break
        if theta is None:
            theta = self._initial(genome)
        theta = self._mutate(theta, genome.mutations[start:])
        self.slices_applied += len(genome.mutations) - start
        theta.setflags(write=False)
        self._remember(genome, theta)
        return theta

    def decode_full(self, genome):
        """The weights from the whole chain, without the cache (the definition; for checks)."""
        self.check(genome)
        return self._mutate(self._initial(genome), genome.mutations)

    def _initial(self, genome):
        return self.init_scales * self.noise.slice(genome.init, self.num_parameters)

    def _mutate(self, theta, mutations):
        """theta + float32(sigma) * slice, mutation after mutation (the definition's order)."""
        for index, sigma in mutations:
            theta = theta + np.float32(sigma) * self.noise.slice(index, self.num_parameters)
        return theta

    def _remember(self, genome, theta):
        with self._lock:
            self._cache[genome] = theta
            self._cache.move_to_end(genome)
            while len(self._cache) > self.capacity:
                self._cache.popitem(last=False)

    def cached(self, genome):
        with self._lock:
            return genome in self._cache

    def clear(self):
        with self._lock:
            self._cache.clear()
