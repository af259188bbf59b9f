"""The Atari family's test protocols (docs/protocol.md): how a test episode is emulated and capped.

  deep-ga   Such et al. 2017: sticky actions off, 1-30 no-op starts, FIRE at reset, frame skip 4
  machado   Machado et al. 2018: sticky actions 0.25, no no-ops, full episodes

The test cap is explicit and recorded with the result: ALE's 108,000 frames unless given, not the training cap.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from workbench.checks import check_choice, check_positive_int
from workbench.envs.families import ProtocolSetup

PROTOCOLS = {
    "deep-ga": dict(repeat_action_probability=0.0, noop_max=30, fire_reset=True, frame_skip=4),
    "machado": dict(repeat_action_probability=0.25, noop_max=0, fire_reset=True, frame_skip=4),
}
ALE_MAX_EPISODE_FRAMES = 108_000  # ALE's cap: 30 minutes of play at 60 frames/s


def atari_test_setup(protocol: str, env_options: Mapping[str, Any], max_episode_frames: int | None) -> ProtocolSetup:
    """The protocol's emulation options over the run's, and the test cap (ALE's unless given); ValueError when the
    cap leaves no frame after the longest start the protocol allows (no-ops and FIRE)."""
    check_choice("protocol", protocol, PROTOCOLS)
    cap = ALE_MAX_EPISODE_FRAMES if max_episode_frames is None else check_positive_int("max_episode_frames", max_episode_frames)
    options = dict(env_options, **PROTOCOLS[protocol])
    starts = options["noop_max"] + (1 if options["fire_reset"] else 0)
    if cap <= starts:
        raise ValueError(
            f"max_episode_frames must exceed the {starts} frames an episode can spend starting "
            f"(no-ops and FIRE) under the {protocol} protocol, got {cap}"
        )
    return ProtocolSetup(options, cap, protocol)
