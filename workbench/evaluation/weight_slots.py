"""WeightSlots: which weights each slot of a PopulationModel holds, shared by the episodes that need them.

Episodes of the same genome share a slot (an elite candidate's 30 episodes
read its weights once per step). In perturbed mode (rank r > 0) a genome whose
last mutation has rank r runs as its parent's slot plus that mutation's
low-rank factors (the inference op's perturbed mode), so the child is never
materialised and siblings share their parent's weight reads. A slot nobody
uses keeps its weights until another genome needs the space (least recently
used first), so parents reused across refills load once. Weights that are not
finite (a diverged policy) are not loaded: the slot is marked invalid (its
episodes end at once with the worst fitness, SubPopulation).
"""

from __future__ import annotations

import collections
from typing import Any

import numpy as np


class WeightSlots:
    def __init__(self, model: Any, decoder: Any, perturbed_rank: int = 0) -> None:
        self.model, self.decoder, self.rank = model, decoder, int(perturbed_rank)
        self._holder = [None] * model.slots  # key held by each slot
        self._users = np.zeros(model.slots, np.int64)
        self._where: dict[Any, int] = {}  # key -> slot
        self._unused = collections.OrderedDict((slot, None) for slot in range(model.slots))  # LRU of users == 0
        self._loads: list[tuple[int, Any]] = []  # (slot, key) to write at flush()
        self._invalid = np.zeros(model.slots, bool)  # slots whose genome's weights are not finite
        self.loads = 0  # slots written since creation

    def perturbation_of(self, genome: Any) -> tuple[Any, tuple[int, float] | None]:
        """(parent, (index, sigma)) when the genome runs perturbed, else (genome, None)."""
        if self.rank and genome.mutations and genome.mutations[-1][2] == self.rank:
            index, sigma, _ = genome.mutations[-1]
            return genome.parent, (index, sigma)
        return genome, None

    def acquire(self, key: Any) -> int:
        """The slot that holds (or will hold, after flush) the weights of genome `key`."""
        slot = self._where.get(key)
        if slot is None:
            if not self._unused:
                raise RuntimeError("no free weight slot: more running episodes than model slots")
            slot, _ = self._unused.popitem(last=False)
            if self._holder[slot] is not None:
                del self._where[self._holder[slot]]
            self._holder[slot], self._where[key] = key, slot
            self._loads.append((slot, key))
        elif self._users[slot] == 0:
            del self._unused[slot]
        self._users[slot] += 1
        return slot

    def release(self, slot: int) -> None:
        self._users[slot] -= 1
        if self._users[slot] == 0:
            self._unused[slot] = None

    def flush(self) -> None:
        """Decodes and writes the weights of the slots acquired since the last flush."""
        if self._loads:
            slots = np.array([slot for slot, _ in self._loads])
            rows = [self.decoder.decode(key) for _, key in self._loads]
            finite = np.array([np.isfinite(row).all() for row in rows], bool)
            self._invalid[slots] = ~finite
            self.model.set_slots(slots[finite], [row for row, ok in zip(rows, finite) if ok], check_finite=False)
            self.loads += len(slots)
            self._loads = []

    def invalid(self, slot: int) -> bool:
        """Whether `slot` holds a genome whose weights are not finite (it was not loaded)."""
        return bool(self._invalid[slot])
