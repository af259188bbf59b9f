"""Lineage genomes: children of two parents (Iso+LineDD), kept as a graph of small nodes, never as dense vectors.

The Iso+LineDD variation of MAP-Elites (Vassiliades & Mouret 2018) makes a child of two archive elites x_a, x_b:

    x = x_a + alpha (x_b - x_a) + sigma eps,     alpha = line_sigma N(0, 1),  eps a noise-table slice

A seed chain cannot say "x_b - x_a", so such a child is a LineChild node: its two parents (seed-chain Genomes or
LineChild nodes), alpha, and the mutation (offset, sigma): about 16 bytes and two references. An archive's cells
hold nodes; parents are shared, so the nodes form a directed acyclic graph over the run's history (its size is
bounded by the candidates that ever entered the archive, and only the ancestors of living elites are kept).

LineageDecoder turns a node into float32 weights exactly as an evaluator decodes the node's shipped form:
shipped(node) is Genome(base_key(y), ((offset, sigma, 0),)) on the dense base y = x_a + alpha (x_b - x_a), and
the evaluator's GenomeDecoder computes perturb(y, offset, sigma); so does decode(node), bit for bit. Decoding
walks the graph from the newest cached ancestors (an LRU cache of decoded nodes, bounded in bytes; without it,
a node's cost is its ancestry's size times the parameters).

to_json / from_json write a set of nodes as one table, parents before children, so shared ancestors are written
once (a checkpoint holds the archive's cells as indices into it).
"""

from __future__ import annotations

import collections
import dataclasses
import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from workbench.checks import check_int
from workbench.evolution.genome import Genome, GenomeDecoder, base_key
from workbench.evolution.space import ParameterSpace


@dataclasses.dataclass(frozen=True, eq=False)  # identity: a node is equal only to itself (no deep comparisons)
class LineChild:
    """x_first + alpha (x_second - x_first) + sigma slice(offset); parents are Genomes or LineChild nodes."""

    first: Genome | LineChild
    second: Genome | LineChild
    alpha: float
    offset: int
    sigma: float

    def __post_init__(self) -> None:
        for name in ("first", "second"):
            if not isinstance(getattr(self, name), (Genome, LineChild)):
                raise TypeError(f"a LineChild's {name} parent must be a Genome or a LineChild, got {type(getattr(self, name))}")
        for name in ("alpha", "sigma"):
            value = float(getattr(self, name))
            if not math.isfinite(value):
                raise ValueError(f"a LineChild's {name} must be finite, got {value}")
            object.__setattr__(self, name, float(np.float32(value)))  # the weights' precision, exactly
        object.__setattr__(self, "offset", check_int("offset", self.offset, 0, 2**32 - 1))


Node = Genome | LineChild


def ancestry(roots: Iterable[Node]) -> list[Node]:
    """Every node reachable from `roots` (themselves included), each once, parents before their children."""
    order: list[Node] = []
    seen: set[int] = set()
    for root in roots:
        stack: list[tuple[Node, bool]] = [(root, False)]
        while stack:
            node, expanded = stack.pop()
            if id(node) in seen:
                continue
            if expanded or isinstance(node, Genome):
                seen.add(id(node))
                order.append(node)
                continue
            stack.append((node, True))
            stack.extend((parent, False) for parent in (node.second, node.first) if id(parent) not in seen)
    return order


def to_json(roots: Sequence[Node]) -> dict:
    """{"nodes": [...], "roots": [index, ...]}: the nodes reachable from `roots`, parents first; a node is
    {"genome": Genome JSON} or {"line": [first, second], "alpha", "offset", "sigma"} with parent indices."""
    nodes = ancestry(roots)
    index = {id(node): k for k, node in enumerate(nodes)}
    table: list[dict[str, Any]] = []
    for node in nodes:
        if isinstance(node, Genome):
            table.append({"genome": node.to_json()})
        else:
            table.append(
                {
                    "line": [index[id(node.first)], index[id(node.second)]],
                    "alpha": node.alpha,
                    "offset": node.offset,
                    "sigma": node.sigma,
                }
            )
    return {"nodes": table, "roots": [index[id(root)] for root in roots]}


def from_json(data: Any) -> list[Node]:
    """The roots of to_json() output (ValueError for a corrupt table: a parent after its child, a bad entry)."""
    nodes = nodes_from_json(data)
    try:
        return [nodes[int(i)] for i in data["roots"]]
    except (KeyError, TypeError, IndexError) as error:
        raise ValueError(f"corrupt lineage: {error!r}") from error


def nodes_from_json(data: Any) -> list[Node]:
    """Every node of to_json() output, in its table's order (ValueError for a corrupt table)."""
    try:
        nodes: list[Node] = []
        for k, entry in enumerate(data["nodes"]):
            if "genome" in entry:
                nodes.append(Genome.from_json(entry["genome"]))
                continue
            first, second = (int(i) for i in entry["line"])
            if not (0 <= first < k and 0 <= second < k):
                raise ValueError(f"lineage node {k} names parents {first} and {second}: parents come first")
            nodes.append(LineChild(nodes[first], nodes[second], entry["alpha"], entry["offset"], entry["sigma"]))
        return nodes
    except (KeyError, TypeError, IndexError) as error:
        raise ValueError(f"corrupt lineage: {error!r}") from error


class LineageDecoder:
    """Nodes -> float32 weights of `space`; decoded LineChild nodes are kept in an LRU cache of `cache_bytes`
    (seed chains in a GenomeDecoder of their own)."""

    def __init__(self, space: ParameterSpace, cache_bytes: int = 2**28) -> None:
        self.space = space
        self.chains = GenomeDecoder(space, cache_bytes=cache_bytes)
        self.capacity = max(2, int(cache_bytes) // (4 * space.num_parameters))
        self._cache: collections.OrderedDict[int, tuple[LineChild, np.ndarray]] = collections.OrderedDict()

    def line_base(self, node: LineChild) -> np.ndarray:
        """y = x_first + alpha (x_second - x_first), float32: the dense base node's shipped form starts from."""
        first, second = self.decode(node.first), self.decode(node.second)
        return (first + np.float32(node.alpha) * (second - first)).astype(np.float32, copy=False)

    def decode(self, node: Node) -> np.ndarray:
        """The node's weights (float32 [n], read-only)."""
        if isinstance(node, Genome):
            return self.chains.decode(node)
        cached = self._cache.get(id(node))
        if cached is not None and cached[0] is node:
            self._cache.move_to_end(id(node))
            return cached[1]
        # Depth first from the node, down to the ancestors already decoded (seed chains decode on their own), then
        # back up: each line child is computed once its parents are in the cache.
        stack: list[tuple[LineChild, bool]] = [(node, False)]
        weights = None
        while stack:
            current, expanded = stack.pop()
            if self._holds(current):
                continue
            if not expanded:
                stack.append((current, True))
                stack.extend(
                    (parent, False)
                    for parent in (current.second, current.first)
                    if isinstance(parent, LineChild) and not self._holds(parent)
                )
                continue
            weights = self.space.perturb(self.line_base(current), current.offset, current.sigma)
            weights.setflags(write=False)
            self._remember(current, weights)
        cached = self._cache.get(id(node))
        if cached is not None:
            return cached[1]
        assert weights is not None  # the node was not cached, so the walk computed it last
        return weights

    def shipped(self, node: Node) -> tuple[Genome, dict[str, np.ndarray]]:
        """(the genome an evaluator decodes to the node's weights, the dense bases it needs): a seed chain is its own
        genome; a line child is one mutation on the base line_base(node)."""
        if isinstance(node, Genome):
            return node, {}
        base = self.line_base(node)
        key = base_key(base)
        return Genome(key, ((node.offset, node.sigma, 0),)), {key: base}

    def _holds(self, node: LineChild) -> bool:
        cached = self._cache.get(id(node))
        return cached is not None and cached[0] is node

    def _remember(self, node: LineChild, weights: np.ndarray) -> None:
        self._cache[id(node)] = (node, weights)  # the node is held too: its id cannot be reused while cached
        self._cache.move_to_end(id(node))
        while len(self._cache) > self.capacity:
            self._cache.popitem(last=False)
