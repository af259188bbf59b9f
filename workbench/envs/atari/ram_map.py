"""Where some games keep the player's position in the console's RAM: descriptors for quality diversity.

The addresses are AtariARI's annotations (Anand et al. 2019, "Unsupervised State Representation Learning in Atari",
its RAM dictionary per game); the bounds cover the values the player's sprite takes on the screen (measured here
by random play, then widened to the screen: x within the 160 visible columns; Montezuma's Revenge counts y
downward from 255). Montezuma's Revenge is the classic game of deceptive reward: its first reward (the key) lies
behind a path that earns nothing, so a search on reward alone sees a flat landscape, while an archive of where
the player ended keeps every stepping stone.

    PLAYER_POSITION["montezuma_revenge"]   # PlayerPosition(x=42, y=43, bounds=((0, 160), (128, 256)))
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class PlayerPosition:
    """The RAM addresses of the player's x and y, and the (low, high) bounds of each."""

    x: int
    y: int
    bounds: tuple[tuple[float, float], tuple[float, float]]


PLAYER_POSITION = {
    "montezuma_revenge": PlayerPosition(x=42, y=43, bounds=((0.0, 160.0), (128.0, 256.0))),
    "frostbite": PlayerPosition(x=102, y=100, bounds=((0.0, 160.0), (0.0, 192.0))),
}
