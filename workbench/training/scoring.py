"""Scoring agents the way papers do: an elite on fresh test episodes under a named protocol, mean ± std.

    score = evaluate_run("runs/frostbite", episodes=30, protocol="deep-ga")   # the newest elite
    score.mean, score.std, score.capped, score.returns        # and score.to_json() for the file
    trainer.evaluate_elite(episodes=30)                         # the same for a live trainer

Protocols are the environment family's (EnvFamily.test_protocols and test_setup). Atari's (docs/protocol.md,
workbench/envs/atari/protocols.py): "deep-ga" (Such et al. 2017: sticky actions off, 1-30 no-op starts, FIRE
at reset, frame skip 4, unclipped rewards) and "machado" (Machado et al. 2018: sticky actions 0.25, no no-ops,
full episodes). The test cap is explicit and recorded with the result: ALE's 108,000 frames by default for
Atari (the environment's own limit for MuJoCo and Gymnasium tasks), not the training cap. MuJoCo and Gymnasium
tasks have no protocol options; their result records protocol "gymnasium".

Test episodes never reuse a training seed: training round k of generation g evaluates with the seed
episode_seed(run seed, g, k) (generations and rounds are non-negative), and its episodes with
episode_seed(that seed, request, episode). A test evaluates with the seed
episode_seed(run seed ^ TEST_SALT, -1 - seed, 0): a negative "generation", which no training round
has, in a salted stream; score_genome checks that it equals none of the run's training round seeds.
Its episodes then differ from every training episode unless SplitMix64's 64-bit mix collides (about
n x m / 2**64 for n test and m training episodes).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from collections.abc import Callable, Mapping

import numpy as np

from workbench.checks import check_choice, check_int, check_positive_int
from workbench.envs import ENV_FAMILIES
from workbench.envs.atari.protocols import ALE_MAX_EPISODE_FRAMES, PROTOCOLS  # noqa: F401 (Atari's, named here too)
from workbench.envs.rng import episode_seed
from workbench.evaluation import RunSpec, make_evaluator
from workbench.evolution import EvaluationRequest, Genome
from workbench.training.elites import RunElite, load_elite

TEST_SALT = 0x7E57_5EED_0F_7E57  # separates the test seeds' stream from the training seeds'
MAX_TRAINING_ROUNDS = 4  # rounds per generation of any strategy (GA: 2; ES: 1; novelty search: 2, 3 at first)


@dataclasses.dataclass(frozen=True)
class Score:
    """An agent's test result: every episode's return, steps and frames, and their statistics."""

    env: str
    protocol: str
    episodes: int
    seed: int
    max_episode_frames: int | None
    returns: list
    steps: list
    frames: list
    run_dir: str | None = None
    generation: int | None = None
    algorithm: str | None = None
    final_positions: list | None = None  # MuJoCo: the main body's final (x, y) per episode
    first_episode: int = 0  # the test set's index of the first episode (a test extended or split in parts)

    @property
    def mean(self) -> float:
        return float(np.mean(self.returns))

    @property
    def std(self) -> float:
        return float(np.std(self.returns))

    @property
    def median(self) -> float:
        return float(np.median(self.returns))

    @property
    def capped(self) -> int:
        """Episodes that ended at the test cap instead of the game's end."""
        if self.max_episode_frames is None:
            return 0
        return int(sum(f >= self.max_episode_frames for f in self.frames))

    def summary(self) -> str:
        return (
            f"{self.mean:.1f} ± {self.std:.1f} over {self.episodes} episodes ({self.protocol}, cap "
            f"{self.max_episode_frames or 'none'}): median {self.median:g}, min {min(self.returns):g}, "
            f"max {max(self.returns):g}, {self.capped} at the cap"
        )

    def to_json(self) -> dict:
        return dict(
            dataclasses.asdict(self),
            mean=self.mean,
            std=self.std,
            median=self.median,
            min=float(min(self.returns)),
            max=float(max(self.returns)),
            capped=self.capped,
        )


def scoring_protocols() -> tuple[str, ...]:
    """Every protocol a registered environment family's tests take (EnvFamily.test_protocols)."""
    return tuple(dict.fromkeys(protocol for family in ENV_FAMILIES.values() for protocol in family.test_protocols))


def scoring_seed(run_seed: int, seed: int = 0) -> int:
    """The evaluation seed of test number `seed` of a run seeded `run_seed` (see the module docstring)."""
    check_int("seed", seed, 0, 2**31 - 1)
    return episode_seed(int(run_seed) ^ TEST_SALT, -1 - seed, 0)


def training_round_seeds(run_seed: int, generations: int) -> set[int]:
    """The evaluation seeds every training round of the first `generations` generations used (Trainer)."""
    return {episode_seed(run_seed, g, k) for g in range(generations + 1) for k in range(MAX_TRAINING_ROUNDS)}


def protocol_spec(spec: RunSpec, protocol: str = "deep-ga", max_episode_frames: int | None = None) -> tuple[RunSpec, str]:
    """The spec a test runs in: the protocol's options and the test cap of the spec's environment family
    (EnvFamily.test_setup); and the protocol's name as the result records it."""
    check_choice("protocol", protocol, scoring_protocols())
    setup = spec.family.test_setup(protocol, spec.env_options, max_episode_frames)
    return dataclasses.replace(spec, env_options=setup.env_options, max_episode_frames=setup.max_episode_frames), setup.protocol


def score_genome(
    genome: Genome,
    spec: RunSpec,
    *,
    bases: Mapping[str, np.ndarray] | None = None,
    episodes: int = 30,
    protocol: str = "deep-ga",
    max_episode_frames: int | None = None,
    seed: int = 0,
    first_episode: int = 0,
    run_seed: int = 0,
    training_generations: int = 0,
    subpopulations: int = 2,
    slots: int = 16,
    progress: Callable[[int, int], None] | None = None,
) -> Score:
    """Plays `genome` for `episodes` fresh test episodes on the in-graph evaluator and returns its Score.

    first_episode: the index of the first episode in test `seed`'s sequence: episodes k..k+n-1 of a test are
    the same whichever call plays them, so a test can be extended (first_episode=30, episodes=170 makes a
    30-episode test a 200-episode one). run_seed / training_generations: the run's seed and finished
    generations, so that the test seed is checked against every training round seed. progress(done, total)
    is called after each batch.
    """
    check_positive_int("episodes", episodes)
    check_int("first_episode", first_episode, 0, 2**31 - 1 - episodes)
    tested, protocol_name = protocol_spec(spec, protocol, max_episode_frames)
    evaluation_seed = scoring_seed(run_seed, seed)
    if evaluation_seed in training_round_seeds(run_seed, training_generations):
        raise RuntimeError("the test seed equals a training seed; choose another seed")
    lanes = max(1, min(subpopulations, episodes))
    per_lane = max(1, min(slots, math.ceil(episodes / lanes)))
    returns, steps, frames = [], [], []
    behaviour = tested.family.test_behaviour  # MuJoCo: where each test episode left the body
    positions: list[list[float]] | None = [] if behaviour is not None else None
    batch = lanes * per_lane * 2  # episodes per evaluate() call: a progress step, slots kept full
    with make_evaluator(tested, subpopulations=lanes, slots=per_lane, behaviour=behaviour) as evaluator:
        for start in range(0, episodes, batch):
            count = min(batch, episodes - start)
            requests = [EvaluationRequest(genome, 1, "test", behaviour=behaviour is not None) for _ in range(count)]
            results = evaluator.evaluate(
                requests,
                seed=evaluation_seed,
                bases=bases,
                request_ids=range(first_episode + start, first_episode + start + count),
            )
            for result in results:
                assert result.steps is not None and result.frames is not None, "the local evaluator counts them"
                returns.append(float(result.returns[0]))
                steps.append(int(result.steps[0]))
                frames.append(int(result.frames[0]))
                if positions is not None:
                    assert result.behaviours is not None, "the test requests asked for the final position"
                    positions.append([float(v) for v in result.behaviours[0]])
            if progress is not None:
                progress(len(returns), episodes)
    return Score(
        tested.env,
        protocol_name,
        episodes,
        seed,
        tested.max_episode_frames,
        returns,
        steps,
        frames,
        final_positions=positions,
        first_episode=first_episode,
    )


def score_elite(
    elite: RunElite,
    *,
    episodes: int = 30,
    protocol: str = "deep-ga",
    max_episode_frames: int | None = None,
    seed: int = 0,
    first_episode: int = 0,
    progress: Callable[[int, int], None] | None = None,
) -> Score:
    """Scores an elite loaded from a run directory (workbench.training.elites.load_elite) on fresh test episodes:
    evaluate_run without loading it again, for scoring one elite on several test sets (first_episode: as in
    score_genome)."""
    config = elite.config
    score = score_genome(
        elite.genome,
        elite.spec,
        bases=elite.bases,
        episodes=episodes,
        protocol=protocol,
        max_episode_frames=max_episode_frames,
        seed=seed,
        first_episode=first_episode,
        run_seed=config.seed,
        training_generations=len(elite.history),
        subpopulations=config.subpopulations,
        slots=config.slots,
        progress=progress,
    )
    return dataclasses.replace(score, run_dir=elite.run_dir, generation=elite.generation, algorithm=config.algorithm)


def evaluate_run(
    run_dir: str,
    generation: int | None = None,
    *,
    episodes: int = 30,
    protocol: str = "deep-ga",
    max_episode_frames: int | None = None,
    seed: int = 0,
    json_path: str | None = None,
    overwrite: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> Score:
    """Scores the elite of `generation` of a run directory (None: the newest) on fresh test episodes.

    json_path: also write the Score's JSON there (an existing file only with overwrite=True).
    """
    if json_path is not None and os.path.exists(json_path) and not overwrite:
        raise ValueError(f"json_path {json_path!r} exists already; choose another file or overwrite it explicitly")
    check_positive_int("episodes", episodes)
    check_choice("protocol", protocol, scoring_protocols())
    elite = load_elite(run_dir, generation)
    score = score_elite(
        elite, episodes=episodes, protocol=protocol, max_episode_frames=max_episode_frames, seed=seed, progress=progress
    )
    if json_path is not None:
        directory = os.path.dirname(os.path.abspath(json_path))
        os.makedirs(directory, exist_ok=True)
        with open(json_path, "w") as f:
            json.dump(score.to_json(), f, indent=1)
    return score
