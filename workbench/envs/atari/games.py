"""Game names: ale-py ids ("pong", "montezuma_revenge") and Gymnasium ids ("ALE/Pong-v5") to ROMs.

ROMs come from the installed ale-py wheel. Its ROM folder also holds a few
multi-player-only games (combat, joust, maze_craze, warlords in 0.12.1) that
ALE's single-agent interface cannot load (ale-py's loadROM exits the process on
them, and ale-py registers no environment for them); they are left out of
atari_game_ids() and their names raise a ValueError that says why. Unknown
names raise a ValueError listing the closest known names.
"""

from __future__ import annotations

import functools
import re

from workbench.checks import close_matches

_GYM_ATARI_ID = re.compile(r"^(?:ALE/)?(?P<name>[A-Za-z0-9]+?)(?:NoFrameskip|Deterministic)?(?:-ram)?(?:-v\d+)?$")


@functools.cache
def _rom_ids_by_support():
    from ale_py import ALEInterface, roms

    supported, unsupported = [], []
    for game in sorted(roms.get_all_rom_ids()):
        (supported if ALEInterface.isSupportedROM(roms.get_rom_path(game)) else unsupported).append(game)
    return tuple(supported), tuple(unsupported)


def atari_game_ids() -> tuple[str, ...]:
    """The ale-py ids of the games ALE can play, sorted ("adventure", ..., "zaxxon")."""
    return _rom_ids_by_support()[0]


def unsupported_rom_ids() -> tuple[str, ...]:
    """ROMs of the wheel that ALE's single-agent interface cannot load (multi-player only)."""
    return _rom_ids_by_support()[1]


@functools.cache
def _by_pascal_name():
    from ale_py.registration import rom_id_to_name

    return {rom_id_to_name(game).lower(): game for game in atari_game_ids()}


def find_atari_game(name: str) -> str | None:
    """The ale-py id of an Atari game name, or None when `name` names no Atari game."""
    if not isinstance(name, str):
        raise TypeError(f"game must be a string such as 'pong' or 'ALE/Pong-v5', got {type(name).__name__}")
    ids = atari_game_ids()
    candidate = name.strip()
    if candidate.lower() in ids:
        return candidate.lower()
    match = _GYM_ATARI_ID.match(candidate)
    if match:
        return _by_pascal_name().get(match.group("name").lower())
    return None


def resolve_atari_game(name: str) -> str:
    """The ale-py id of `name`; ValueError listing close matches when it is unknown."""
    game = find_atari_game(name)
    if game is None and str(name).strip().lower() in unsupported_rom_ids():
        raise ValueError(
            f"game {name!r} is a multi-player-only ROM of the ale-py wheel that ALE's single-agent "
            "interface cannot load (ale-py registers no environment for it either)"
        )
    if game is None:
        key = _GYM_ATARI_ID.match(name.strip())
        probe = key.group("name") if key else name
        suggestions = close_matches(probe, atari_game_ids()) or close_matches(name, atari_game_ids())
        hint = f" Did you mean: {', '.join(suggestions)}?" if suggestions else ""
        raise ValueError(
            f"game {name!r} is not an Atari game of the installed ale-py ({len(atari_game_ids())} games; "
            f"see workbench.envs.atari_game_ids()).{hint}"
        )
    return game


def rom_path(game: str) -> str:
    """Path of the ROM file of an ale-py game id."""
    from ale_py import roms

    path = roms.get_rom_path(game)
    if path is None:
        raise ValueError(f"game {game!r} has no ROM in the installed ale-py wheel")
    return str(path)
