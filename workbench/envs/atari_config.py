"""AtariConfig: the emulation protocol of an Atari batch, validated once for every backend."""
import dataclasses

from workbench.envs.games import resolve_atari_game, rom_path


def _check_int(name, value, low, high=None):
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    if value < low or (high is not None and value > high):
        bound = f"in [{low}, {high}]" if high is not None else f">= {low}"
        raise ValueError(f"{name} must be {bound}, got {value}")


@dataclasses.dataclass(frozen=True)
class AtariConfig:
    """How an Atari batch emulates (defaults: the Deep GA protocol of REFERENCE.md).

    game: ale-py id or Gymnasium id ("pong", "ALE/Pong-v5").
    frameskip: frames per agent step (the action repeats; rewards are summed, unclipped).
    noop_max: episodes start with 1..noop_max no-op frames (0: none), drawn from the episode seed.
    repeat_action_probability: sticky actions; 0.0 = Deep GA protocol, 0.25 = Machado et al. 2018 / ALE v5.
    max_num_frames_per_episode: frame cap of an episode, no-ops included (None: no cap);
      the Deep GA trains with 20,000 frames (5,000 steps), ALE v5 caps at 108,000. A cap below
      the no-ops ends the episode during its reset (done at once, truncated).
    fire_reset: press FIRE for one frame after the no-ops when the game's action set has FIRE.
    screen_size: observations are screen_size x screen_size grayscale.
    stack_size: observations stack this many frames, oldest first.
    """

    game: str
    frameskip: int = 4
    noop_max: int = 30
    repeat_action_probability: float = 0.0
    max_num_frames_per_episode: int | None = 108_000
    fire_reset: bool = True
    screen_size: int = 84
    stack_size: int = 4

    def __post_init__(self):
        object.__setattr__(self, "game", resolve_atari_game(self.game))
        _check_int("frameskip", self.frameskip, 1, 1000)
        _check_int("noop_max", self.noop_max, 0, 100_000)
        p = self.repeat_action_probability
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 <= p <= 1.0:
            raise ValueError(f"repeat_action_probability must be a number in [0, 1], got {p!r}")
        object.__setattr__(self, "repeat_action_probability", float(p))
        if self.max_num_frames_per_episode is not None:
            _check_int("max_num_frames_per_episode", self.max_num_frames_per_episode, 1, 2**31 - 1)
        if not isinstance(self.fire_reset, bool):
            raise TypeError(f"fire_reset must be a bool, got {self.fire_reset!r}")
        _check_int("screen_size", self.screen_size, 1, 1024)
        _check_int("stack_size", self.stack_size, 1, 64)

    @property
    def rom_path(self):
        return rom_path(self.game)

    @property
    def frame_cap(self):
        """The cap as the ops take it: 0 for none."""
        return self.max_num_frames_per_episode or 0
