"""Seed-chain genomes and their decoding into weights with a cache of materialised parents.

A genome is (init, ((index, sigma, rank), ...)): offsets into the shared
NoiseTable, interpreted by a ParameterSpace (space.py). Its weights are

    theta = space.initial(init)                      (or a dense base, see below)
    theta = space.perturb(theta, index_k, sigma_k, rank_k)    for each mutation k

in that order, in float32; rank 0 is a full-rank mutation, rank r > 0 a
low-rank one. A child differs from its parent by one mutation, so with its
parent cached it costs one noise slice, and the result is bit for bit the
weights of the full chain (the same float32 operations in the same order).

`init` may instead be the key of a dense base vector ("sha256:..." of its
bytes), for strategies whose center is not a chain (OpenAI-ES after an Adam
step): the decoder must hold that base (GenomeDecoder.add_base); an ES member
is the center plus one mutation, and its mirror has the negated sigma. A base
may also carry per-parameter mutation scales: an array [2, n] of the weights
and the scales (PGPE's center and standard deviations); full-rank mutations of
a genome on such a base are theta + sigma * (scales * noise slice). A base
[3, n] adds a rank-one direction w (CR-FM-NES's covariance D (I + v v^T) D):
a mutation is theta + sigma * (scales * (z + (w . z) w)) with z the noise
slice (ParameterSpace.perturb says how the one dot product is taken).

Genomes serialise to JSON-able data (to_json / from_json) and to a compact
binary form (to_bytes), whose size is what a genome costs to store or ship.
Sigmas are kept as float32 values (the precision the weights use), so both
forms round-trip exactly.
"""

from __future__ import annotations

import collections
import dataclasses
import hashlib
import math
import re
import struct
import sys
import threading
from collections.abc import Collection, Iterable

import numpy as np

from workbench.checks import check_int
from workbench.evolution.space import ParameterSpace, check_rank

_BASE_PREFIX = "sha256:"
_HEX_DIGEST = re.compile("[0-9a-f]{64}")


def base_shapes(n: int) -> tuple[tuple[int, ...], ...]:
    """The shapes a dense base of n parameters may have: weights [n]; weights and per-parameter mutation scales
    [2, n]; those and a rank-one direction [3, n]."""
    return ((n,), (2, n), (3, n))


def base_key(weights: np.ndarray) -> str:
    """The key a dense base is known by: sha256 of its float32 bytes (weights [n], or weights and scales [2, n],
    and a direction [3, n])."""
    weights = np.ascontiguousarray(weights, np.float32)
    return _BASE_PREFIX + hashlib.sha256(weights.tobytes()).hexdigest()


def _check_offset(value, name):
    return check_int(name, value, 0, 2**32 - 1)


def _check_init(value):
    if isinstance(value, str):
        digest = value[len(_BASE_PREFIX) :]
        if not value.startswith(_BASE_PREFIX) or not _HEX_DIGEST.fullmatch(digest):
            raise ValueError(f"init must be a noise offset or a base key 'sha256:<64 hex digits>', got {value!r:.100}")
        return value
    return check_int("init (a noise offset, or a base key)", value, 0, 0xFFFFFFFF - 1)  # 0xFFFFFFFF marks a base


def _check_sigma(value, name):
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
        raise ValueError(f"{name} must be a number, got {value!r}")
    if not math.isfinite(float(value)) or abs(float(value)) > float(np.finfo(np.float32).max):
        raise ValueError(f"{name} must be finite in float32, got {value!r}")
    return float(np.float32(value))  # weights use float32 sigmas; storing them so makes every form exact


@dataclasses.dataclass(frozen=True)
class Genome:
    """init (noise offset or base key) and the chain of (offset, sigma, rank) mutations; hashable, immutable.

    Mutations may be given as (index, sigma) pairs, meaning rank 0 (full rank).
    """

    init: int | str  # a noise offset, or a dense base's key (see base_key)
    mutations: tuple[tuple[int, float, int], ...] = ()

    def __post_init__(self):
        object.__setattr__(self, "init", _check_init(self.init))
        checked = []
        for k, mutation in enumerate(self.mutations):
            if not isinstance(mutation, (tuple, list)) or len(mutation) not in (2, 3):
                raise ValueError(f"mutations[{k}] must be an (index, sigma) pair or (index, sigma, rank), got {mutation!r}")
            checked.append(
                (
                    _check_offset(mutation[0], f"mutations[{k}] index"),
                    _check_sigma(mutation[1], f"mutations[{k}] sigma"),
                    check_rank(mutation[2] if len(mutation) == 3 else 0, f"mutations[{k}] rank"),
                )
            )
        object.__setattr__(self, "mutations", tuple(checked))

    def child(self, index: int, sigma: float, rank: int = 0) -> Genome:
        """This genome plus one mutation."""
        return Genome(self.init, self.mutations + ((index, sigma, rank),))

    @property
    def parent(self) -> Genome | None:
        """The genome without its last mutation (None for an initial genome)."""
        return Genome(self.init, self.mutations[:-1]) if self.mutations else None

    @property
    def has_base(self) -> bool:
        return isinstance(self.init, str)

    def __len__(self) -> int:
        return len(self.mutations)

    # -- serialisation -------------------------------------------------------------------
    def to_json(self) -> dict:
        """{"init": offset or base key, "mutations": [[index, sigma] or [index, sigma, rank], ...]}."""
        return {
            "init": self.init,
            "mutations": [[index, sigma] if rank == 0 else [index, sigma, rank] for index, sigma, rank in self.mutations],
        }

    @classmethod
    def from_json(cls, data: dict) -> Genome:
        if not isinstance(data, dict) or set(data) != {"init", "mutations"}:
            raise ValueError(f"a genome is a dict with keys 'init' and 'mutations', got {data!r:.200}")
        if not isinstance(data["mutations"], list):
            raise ValueError("genome 'mutations' must be a list of [index, sigma] or [index, sigma, rank] lists")
        return cls(data["init"], tuple(tuple(m) if isinstance(m, list) else m for m in data["mutations"]))

    def to_bytes(self) -> bytes:
        """Compact little-endian form: a uint32 offset (or 0xFFFFFFFF then the 32-byte base digest),
        then per mutation uint32 index, float32 sigma, uint16 rank."""
        head = (
            struct.pack("<I", self.init)
            if not isinstance(self.init, str)
            else (struct.pack("<I", 0xFFFFFFFF) + bytes.fromhex(self.init[len(_BASE_PREFIX) :]))
        )
        return head + b"".join(struct.pack("<IfH", *m) for m in self.mutations)

    @classmethod
    def from_bytes(cls, data: bytes) -> Genome:
        if not isinstance(data, (bytes, bytearray)) or len(data) < 4:
            raise ValueError("genome bytes must start with a 4-byte offset (see Genome.to_bytes)")
        (init,) = struct.unpack_from("<I", data)
        start = 4
        if init == 0xFFFFFFFF:
            if len(data) < 36:
                raise ValueError("genome bytes end inside the base digest")
            init, start = _BASE_PREFIX + bytes(data[4:36]).hex(), 36
        if (len(data) - start) % 10:
            raise ValueError("genome bytes must hold 10 bytes per mutation after the init (see Genome.to_bytes)")
        return cls(init, tuple(struct.unpack_from("<IfH", data, offset) for offset in range(start, len(data), 10)))

    def encoded_bytes(self) -> int:
        return (36 if self.has_base else 4) + 10 * len(self.mutations)

    def compression_ratio(self, num_parameters: int) -> float:
        """How many times smaller the genome is than its float32 weights."""
        return 4 * num_parameters / self.encoded_bytes()


class GenomeDecoder:
    """Turns genomes into float32 weight vectors, keeping recently used ones (decoded, or the parent a child was
    just decoded from) in an LRU cache.

    space: the run's ParameterSpace. cache_bytes bounds the cache (default 1 GB:
    64 LargeModel members). keep_rounds: with rounds counted (start_round, which
    evaluators call once per round of evaluations), a genome not used in the
    last keep_rounds rounds, the current one included, is dropped: a GA parent
    is decoded in its generation's population round and used again two rounds
    later (after the elite round), and every genome no child was decoded from
    by then leaves the cache, so memory follows the population, not the cap.
    Without start_round calls the cache is a plain LRU. The weights of a genome
    that leaves the cache while nobody else holds them become the buffer of a
    later decode (spares count against cache_bytes): the cache's churn reuses
    its memory instead of fragmenting the C heap. Dense bases (add_base)
    are held apart from the cache and never evicted. Thread-safe.
    """

    def __init__(self, space: ParameterSpace, cache_bytes: int = 2**30, keep_rounds: int = 3) -> None:
        if not isinstance(space, ParameterSpace):
            raise TypeError(f"space must be a ParameterSpace, got {type(space).__name__}")
        check_int("keep_rounds", keep_rounds, 1)
        self.space = space
        self.num_parameters = space.num_parameters
        self.capacity = max(1, int(cache_bytes) // (4 * self.num_parameters))
        self.keep_rounds = keep_rounds
        self._round = 0
        self._cache: collections.OrderedDict[Genome, np.ndarray] = collections.OrderedDict()  # least recent first
        self._last_round: dict[Genome, int] = {}  # genome -> the round it was last used in
        self._spares: list[np.ndarray] = []  # buffers of dropped genomes that nobody else held, for the next decodes
        self._bases: dict[str, np.ndarray] = {}
        self._lock = threading.Lock()
        self.slices_applied = 0  # mutations applied since creation (a cache-efficiency figure)

    # -- dense bases ---------------------------------------------------------------------
    def add_base(self, key: str, weights: np.ndarray) -> None:
        """Makes a dense base available to genomes whose init is `key` (= base_key(weights)): weights [n],
        weights and per-parameter mutation scales [2, n], or those and a rank-one direction [3, n]."""
        weights = np.array(weights, np.float32)
        n = self.num_parameters
        if weights.shape not in base_shapes(n):
            raise ValueError(
                f"a base must be weights [{n}], weights and scales [2, {n}] or those and a direction [3, {n}], "
                f"got shape {weights.shape}"
            )
        if base_key(weights) != key:
            raise ValueError(f"base weights do not match their key {key!r:.80} (corrupt or different weights)")
        if not np.isfinite(weights[1:] if weights.ndim == 2 else 0.0).all():
            raise ValueError("a base's mutation scales and direction must be finite")
        weights.setflags(write=False)
        with self._lock:
            self._bases[key] = weights

    def retain_bases(self, keys: Iterable[str]) -> None:
        """Drops the bases not in `keys` (e.g. the centers of past generations)."""
        keys = set(keys)
        with self._lock:
            for key in [k for k in self._bases if k not in keys]:
                del self._bases[key]
                for genome in [g for g in self._cache if g.init == key]:
                    self._drop(genome)

    @property
    def base_keys(self) -> list[str]:
        with self._lock:
            return sorted(self._bases)

    # -- decoding ------------------------------------------------------------------------
    def check(self, genome: Genome, bases: Collection[str] = ()) -> None:
        """ValueError naming the offset when a genome does not fit this decoder's space (or its base is missing).

        bases: keys of dense bases that count as held besides this decoder's own (about to be added).
        """
        if not isinstance(genome, Genome):
            raise TypeError(f"expected a Genome, got {type(genome).__name__}")
        if isinstance(genome.init, str):  # genome.has_base
            with self._lock:
                if genome.init not in self._bases and genome.init not in bases:
                    raise ValueError(f"genome init {genome.init!r:.80} is a base this decoder does not hold (add_base)")
                scaled = genome.init in self._bases and self._bases[genome.init].ndim == 2
            if scaled and any(rank for _, _, rank in genome.mutations):
                raise ValueError("a base with per-parameter mutation scales takes full-rank mutations only (rank 0)")
        else:
            self.space.check_offset(genome.init, 0, "init")
        for k, (index, _, rank) in enumerate(genome.mutations):
            self.space.check_offset(index, self.space.check_rank(rank, f"mutations[{k}] rank"), f"mutations[{k}] index")

    def decode(self, genome: Genome) -> np.ndarray:
        """The genome's weights (a read-only float32 vector, shared with the cache)."""
        if not isinstance(genome, Genome):
            raise TypeError(f"expected a Genome, got {type(genome).__name__}")
        with self._lock:
            cached = self._cache.get(genome)
            if cached is not None:
                self._touch(genome)
                return cached
        self.check(genome)
        # The longest cached prefix of the chain, then one mutation after another.
        with self._lock:
            start, theta = 0, None
            for depth in range(len(genome.mutations) - 1, -1, -1):
                prefix = Genome(genome.init, genome.mutations[:depth])
                if prefix in self._cache:
                    start, theta = depth, self._cache[prefix]
                    self._touch(prefix)  # a parent in use is recent: its children come next
                    break
        if theta is None:
            theta = self._initial(genome)
        scales, depth = self._scales(genome), len(genome.mutations)
        self.slices_applied += depth - start
        if depth - 1 > start:  # the parent is not cached either: keep it too, its siblings come next
            theta = self._mutate(theta, genome.mutations[start : depth - 1], scales)
            theta.setflags(write=False)
            self._remember(Genome(genome.init, genome.mutations[: depth - 1]), theta)
            start = depth - 1
        theta = self._mutate(theta, genome.mutations[start:], scales)
        theta.setflags(write=False)
        self._remember(genome, theta)
        return theta

    def decode_full(self, genome: Genome) -> np.ndarray:
        """The weights from the whole chain, without the cache (the definition; for checks)."""
        self.check(genome)
        initial = self._initial(genome)
        theta = self._mutate(initial, genome.mutations, self._scales(genome))
        return theta.copy() if theta is initial and genome.has_base else theta

    def _initial(self, genome):
        if isinstance(genome.init, str):  # genome.has_base
            with self._lock:
                base = self._bases[genome.init]
            return base[0] if base.ndim == 2 else base
        return self.space.initial(genome.init)

    def _scales(self, genome):
        """The per-parameter mutation scales of the genome's base and its rank-one direction: (scales, direction),
        either None when the base has none."""
        if not genome.has_base:
            return None, None
        with self._lock:
            base = self._bases[genome.init]
        if base.ndim == 1:
            return None, None
        return base[1], (base[2] if len(base) == 3 else None)

    def _mutate(self, theta, mutations, scaling=(None, None)):
        """theta after `mutations`, each into a spare buffer when there is one (the steps between go back);
        scaling: the base's (scales, direction)."""
        scales, direction = scaling
        ours = False  # theta is a buffer of this call's own (an intermediate step)
        for index, sigma, rank in mutations:
            with self._lock:
                out = self._spares.pop() if self._spares else None
            if out is not None:
                out.setflags(write=True)
            result = self.space.perturb(theta, index, sigma, rank, scales, out=out, direction=direction)
            if ours:
                with self._lock:
                    self._spares.append(theta)
            theta, ours = result, True
        return theta

    def _drop(self, genome, reuse=True):
        """Removes a genome from the cache (the caller holds the lock); with `reuse`, its weights become a
        spare buffer when nobody else holds them (the two references counted are this function's and
        getrefcount's)."""
        theta = self._cache.pop(genome)
        del self._last_round[genome]
        if reuse and theta.flags.owndata and sys.getrefcount(theta) <= 2:
            self._spares.append(theta)

    def _touch(self, genome):
        """Marks a cached genome as used now (the caller holds the lock)."""
        self._cache.move_to_end(genome)
        self._last_round[genome] = self._round

    def _remember(self, genome, theta):
        if genome.has_base and not genome.mutations:
            return  # a base itself: already held
        with self._lock:
            self._cache[genome] = theta
            self._touch(genome)
            while self._spares and len(self._cache) + len(self._spares) > self.capacity:
                self._spares.pop()
            while len(self._cache) > self.capacity:  # at the cap: no spares, the evicted weights are freed
                self._drop(next(iter(self._cache)), reuse=False)

    def start_round(self, index: int | None = None) -> None:
        """A new round of evaluations begins: drops the genomes not used in the last keep_rounds rounds.

        index: the round's number as the caller counts them (a Ray actor, which sees one round as one or
        more chunks, passes the master's); None: the round after the current one. A call with the current
        round's number changes nothing.
        """
        with self._lock:
            if index is None:
                index = self._round + 1
            index = check_int("index", index, 0)
            if index == self._round:
                return
            self._round = index
            oldest = index - self.keep_rounds + 1
            for genome in [g for g, used in self._last_round.items() if not oldest <= used <= index]:
                self._drop(genome)

    def cached(self, genome: Genome) -> bool:
        with self._lock:
            return genome in self._cache

    def clear(self) -> None:
        """Empties the parent cache (bases stay)."""
        with self._lock:
            self._cache.clear()
            self._last_round.clear()
            self._spares.clear()
