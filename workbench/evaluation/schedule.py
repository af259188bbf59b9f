"""EpisodeLengths: which episodes to start first so that a round's tail is short.

A round ends when its last episode does; slots that run dry before then sit idle
(the tail; evaluation.telemetry measures it). Starting the longest episodes first
(longest-processing-time-first scheduling) leaves the short ones to fill the gaps
at the end. Episode lengths are not known in advance, but a genome's own earlier
episodes (an elite candidate was played in the population round) or its parent's
(a GA child, an ES member and its center) predict them well. The evaluator records
the mean frames of every genome it plays and orders the next requests by what it
knows, longest first; requests it knows nothing about sit at the mean of the known
ones. Only the order in which episodes start changes: episodes are seeded by their
(request, episode) index and the kernels are batch invariant, so results do not.
"""

from __future__ import annotations

import collections
from collections.abc import Sequence

import numpy as np

from workbench.evolution.genome import Genome


class EpisodeLengths:
    """Mean episode frames per genome (the newest `capacity` genomes, keyed by hash) and the longest-first order."""

    def __init__(self, capacity: int = 50_000) -> None:
        self.capacity = int(capacity)
        self._frames: collections.OrderedDict[int, float] = collections.OrderedDict()  # hash(genome) -> mean frames

    def __len__(self) -> int:
        return len(self._frames)

    def record(self, genomes: Sequence, frames: Sequence[np.ndarray]) -> None:
        """Remembers the mean of each genome's episode frames."""
        for genome, episode_frames in zip(genomes, frames):
            if len(episode_frames):
                key = _key(genome.init, genome.mutations)
                self._frames[key] = float(np.mean(episode_frames))
                self._frames.move_to_end(key)
        while len(self._frames) > self.capacity:
            self._frames.popitem(last=False)

    def expected(self, genome: Genome) -> float | None:
        """The genome's own mean frames, else its parent's, else None."""
        frames = self._frames.get(_key(genome.init, genome.mutations))
        if frames is None and genome.mutations:  # the parent's key, without building (and checking) the parent
            frames = self._frames.get(_key(genome.init, genome.mutations[:-1]))
        return frames

    def longest_first(self, genomes: Sequence) -> list[int]:
        """Indices of `genomes`, the longest expected first (ties and unknowns keep their order)."""
        expected = [self.expected(genome) for genome in genomes]
        known = [value for value in expected if value is not None]
        if not known:
            return list(range(len(genomes)))
        middle = float(np.mean(known))
        keys = [-(middle if value is None else value) for value in expected]
        return sorted(range(len(genomes)), key=keys.__getitem__)


def _key(init: object, mutations: tuple) -> int:
    """The key of the genome (init, mutations) in EpisodeLengths."""
    return hash((init, mutations))
