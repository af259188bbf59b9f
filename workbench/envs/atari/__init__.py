"""The Atari family: games of ale-py with the Deep GA preprocessing, emulated inside TensorFlow ops (backend
"custom") or on ale-py itself (backend "reference").

batch.py        AtariBatch
config.py       AtariConfig: the emulation and preprocessing options, checked
games.py        game names (ale-py ids, Gymnasium ids) to ROMs
preprocessing.py  the frame preprocessing in numpy, bit for bit the ops'
ops_backend.py  the ops backend; reference.py its ale-py twin
presets.py      run defaults and the paper, pc and tutorial presets
protocols.py    the test protocols (deep-ga, machado) and ALE's test cap
"""

from __future__ import annotations

from workbench.envs.atari.batch import AtariBatch
from workbench.envs.atari.config import AtariConfig
from workbench.envs.atari.games import atari_game_ids, find_atari_game, resolve_atari_game
from workbench.envs.atari.presets import atari_presets, atari_run_defaults
from workbench.envs.atari.protocols import PROTOCOLS, atari_test_setup
from workbench.envs.families import EnvFamily, register_env_family

__all__ = ["ATARI", "AtariBatch", "AtariConfig", "atari_game_ids", "find_atari_game", "resolve_atari_game"]

ATARI = register_env_family(
    EnvFamily(
        name="atari",
        description="the games of ale-py (pong, ALE/Pong-v5)",
        find=find_atari_game,
        names=atari_game_ids,
        batch=AtariBatch,
        models=("small", "large"),
        vector_observations=False,
        run_defaults=atari_run_defaults,
        behaviour="final_ram",
        presets=atari_presets,
        test_protocols=tuple(PROTOCOLS),
        test_setup=atari_test_setup,
    )
)
