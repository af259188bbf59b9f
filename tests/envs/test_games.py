"""Game-name resolution (ale-py ids and Gymnasium ids) and the SplitMix64 twin of the C++ stream."""

import pytest

from workbench.envs.atari.games import atari_game_ids, find_atari_game, resolve_atari_game
from workbench.envs.rng import SplitMix64, episode_seed


@pytest.mark.parametrize(
    "name,game",
    [
        ("pong", "pong"),
        ("Pong", "pong"),
        ("ALE/Pong-v5", "pong"),
        ("PongNoFrameskip-v4", "pong"),
        ("ALE/MontezumaRevenge-v5", "montezuma_revenge"),
        ("montezuma_revenge", "montezuma_revenge"),
        ("ALE/SpaceInvaders-v5", "space_invaders"),
        ("ALE/Pitfall2-v5", "pitfall2"),
        ("CartPole-v1", None),
    ],
)
def test_names_resolve_to_ale_ids(name, game):
    assert find_atari_game(name) == game


def test_unknown_names_suggest_close_matches():
    with pytest.raises(ValueError, match="Did you mean: frostbite"):
        resolve_atari_game("frostbyte")
    assert "frostbite" in atari_game_ids() and list(atari_game_ids()) == sorted(atari_game_ids())


def test_splitmix64_matches_the_reference_values():
    # Published SplitMix64 outputs for seed 1234567 (the C++ stream uses the same constants).
    rng = SplitMix64(1234567)
    assert [rng.next() for _ in range(3)] == [6457827717110365317, 3203168211198807973, 9817491932198370423]
    assert 0.0 <= SplitMix64(5).uniform() < 1.0


def test_episode_seeds_differ_by_index_and_episode():
    seeds = {episode_seed(0, i, e) for i in range(20) for e in range(20)}
    assert len(seeds) == 400
    assert all(-(2**63) <= s < 2**63 for s in seeds)
    assert episode_seed(3, 1, 2) == episode_seed(3, 1, 2)
