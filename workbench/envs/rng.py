"""SplitMix64: the random stream of the simulators' own randomness (Atari no-op counts and sticky actions, MuJoCo
reset noise), in pure Python.

It mirrors SplitMix64 in ops/cc/kernels/splitmix64.h bit for bit, so the
reference backends draw exactly what the ops draw. episode_seed() derives the
seed of an episode from a batch seed, an emulator index and an episode count.
"""

from __future__ import annotations

import math

_MASK = (1 << 64) - 1


class SplitMix64:
    def __init__(self, seed: int = 0) -> None:
        self.state = int(seed) & _MASK

    def next(self) -> int:
        self.state = (self.state + 0x9E3779B97F4A7C15) & _MASK
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
        return z ^ (z >> 31)

    def uniform(self) -> float:
        """A double in [0, 1) from the top 53 bits."""
        return (self.next() >> 11) * (1.0 / (1 << 53))

    def normal(self) -> float:
        """A standard normal draw from two uniforms (Box-Muller, cosine branch only, the C library's log and cos)."""
        u1, u2 = self.uniform(), self.uniform()
        return math.sqrt(-2.0 * math.log(1.0 - u1)) * math.cos(6.283185307179586 * u2)


def episode_seed(seed: int, index: int, episode: int) -> int:
    """A seed for episode `episode` of emulator `index` in a batch seeded with `seed` (int64 range)."""
    mixer = SplitMix64(seed)
    value = mixer.next() ^ (int(index) * 0xD1B54A32D192ED03 & _MASK) ^ (int(episode) * 0x8CB92BA72F3D8DD7 & _MASK)
    value = SplitMix64(value).next()
    return value - (1 << 64) if value >= (1 << 63) else value
