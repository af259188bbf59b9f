"""AtariConfig: the emulation protocol of an Atari batch, validated once for every backend."""

from __future__ import annotations

import dataclasses

from workbench.checks import check_bool, check_int, check_real
from workbench.envs.atari.games import resolve_atari_game, rom_path

# ALE's and Gymnasium's ALE/...-v5 spellings, accepted where users type them (AtariBatch keywords)
# and mapped once onto the workbench's names (Gymnasium's AtariPreprocessing uses frame_skip too).
ALE_SPELLINGS = {"frameskip": "frame_skip", "max_num_frames_per_episode": "max_episode_frames"}


@dataclasses.dataclass(frozen=True)
class AtariConfig:
    """How an Atari batch emulates (defaults: the Deep GA protocol of docs/protocol.md).

    game: ale-py id or Gymnasium id ("pong", "ALE/Pong-v5").
    frame_skip: frames per agent step (the action repeats; rewards are summed, unclipped).
    noop_max: episodes start with 1..noop_max no-op frames (0: none), drawn from the episode seed.
    repeat_action_probability: sticky actions; 0.0 = Deep GA protocol, 0.25 = Machado et al. 2018 / ALE v5.
    max_episode_frames: frame cap of an episode, no-ops included (None: no cap); the Deep GA trains
      with 20,000 frames (5,000 steps), ALE v5 caps at 108,000. A cap below the no-ops ends the
      episode during its reset (done at once, truncated).
    fire_reset: press FIRE for one frame after the no-ops when the game's action set has FIRE.
    screen_size: observations are screen_size x screen_size grayscale.
    stack_size: observations stack this many frames, oldest first.
    """

    game: str
    frame_skip: int = 4
    noop_max: int = 30
    repeat_action_probability: float = 0.0
    max_episode_frames: int | None = 108_000
    fire_reset: bool = True
    screen_size: int = 84
    stack_size: int = 4

    def __post_init__(self) -> None:
        object.__setattr__(self, "game", resolve_atari_game(self.game))
        check_int("frame_skip", self.frame_skip, 1, 1000)
        check_int("noop_max", self.noop_max, 0, 100_000)
        probability = check_real("repeat_action_probability", self.repeat_action_probability, 0.0, 1.0)
        object.__setattr__(self, "repeat_action_probability", probability)
        if self.max_episode_frames is not None:
            check_int("max_episode_frames", self.max_episode_frames, 1, 2**31 - 1)
        check_bool("fire_reset", self.fire_reset)
        check_int("screen_size", self.screen_size, 1, 1024)
        check_int("stack_size", self.stack_size, 1, 64)

    @property
    def rom_path(self) -> str:
        return rom_path(self.game)
