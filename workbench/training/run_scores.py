"""Scoring a whole run three ways: its final elite, its best elite chosen without bias, and the Deep GA paper's way.

    scores = score_run("runs/frostbite")                # 200 episodes per test
    scores.final.mean       # (a) the final elite on 200 fresh test episodes (test seed 0)
    scores.best.mean        # (b) the best elite on the selection set (seed 1), reported on 200 other episodes (seed 2)
    scores.paper_way.mean   # (c) the highest 200-episode selection-set mean among the run's elites: biased upward
    score_run("runs/frostbite", generation=budget_generation(history, 10_000_000))   # the run as a 10M budget ended it

The Deep GA paper (Such et al. 2017, arXiv 1712.06567v3) scored a run by its elites across all generations,
each measured on 200 episodes, and took the highest mean; that picks the luckiest of many noisy means on the
very episodes it reports, so it is biased upward (c). (b) makes the same choice on a selection set and reports
the chosen elite on a report set that the choice never saw. (a) needs no choice at all. The three test sets
are disjoint from each other and from every training episode (workbench.training.scoring).

Racing keeps (b) and (c) affordable: every distinct elite (a carried-over elite counts once) first plays the
first `screen_episodes` episodes of the selection set; those whose screen mean is within two standard errors
(of the difference) of the best screen mean go on to all `episodes` of it, at most `max_raced` of them, best
screen means first, and never fewer than min(3, elites). An elite the screen drops is below the best by more
than the screen's noise, so the highest full mean is very unlikely to be among them; screen_episodes=0 plays
every elite on the whole selection set (the paper's way exactly, at several times the frames).

Every played episode is kept in run_dir/elite_scores.json (written atomically after each test), so an
interrupted scoring resumes where it stopped and a test is never played twice; episode k of a test set is the
same episode whichever call plays it (score_genome's first_episode), which is what lets a 30-episode screen
grow into the 200-episode test.
"""

from __future__ import annotations

import dataclasses
import fcntl
import hashlib
import json
import math
import os
from collections.abc import Callable

import numpy as np

from workbench.checks import check_choice, check_int, check_path, check_positive_int
from workbench.evolution import Genome
from workbench.training.checkpoint import CheckpointError
from workbench.training.elites import RunElite, load_elite
from workbench.training.scoring import Score, score_elite, scoring_protocols

FINAL_SEED, SELECTION_SEED, REPORT_SEED = 0, 1, 2  # test seeds of (a), of the choice in (b) and (c), of (b)'s report
CACHE_FILE = "elite_scores.json"
CACHE_VERSION = 1
MIN_RACED = 3


@dataclasses.dataclass(frozen=True)
class EliteScreen:
    """One distinct elite of a run in the race: the generations it was elite of, its training score, its screen
    mean and (when it went on) its full selection-set mean."""

    generation: int  # the first generation it was elite of
    last_generation: int
    training: float | None
    screen_mean: float
    selection_mean: float | None

    def to_json(self) -> dict:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class RunScores:
    """The three scores of a run (see the module docstring) and how they were reached."""

    run_dir: str
    frames: int  # the training frames at the end of the last generation scored
    generation: int  # the last generation scored
    final: Score  # (a)
    best: Score | None  # (b): the picked elite on the report set (None: not asked for)
    paper_way: Score | None  # (c): the picked elite on the selection set (biased upward)
    picked_generation: int | None
    elites: list[EliteScreen]
    episodes_played: int  # episodes this call played (the rest came from the cache)
    frames_played: int

    def to_json(self) -> dict:
        def summary(score: Score | None) -> dict | None:
            if score is None:
                return None
            return dict(
                generation=score.generation,
                mean=round(score.mean, 1),
                std=round(score.std, 1),
                median=score.median,
                episodes=score.episodes,
                seed=score.seed,
                max_episode_frames=score.max_episode_frames,
                capped=score.capped,
            )

        return dict(
            frames=self.frames,
            generation=self.generation,
            final=summary(self.final),
            best=summary(self.best),
            paper_way=summary(self.paper_way),
            picked_generation=self.picked_generation,
            elites=[e.to_json() for e in self.elites],
            episodes_played=self.episodes_played,
            frames_played=self.frames_played,
        )


class EpisodeCache:
    """The test episodes played for a run's elites, by (genome, test seed, cap, protocol), in run_dir/elite_scores.json."""

    def __init__(self, run_dir: str) -> None:
        self.path = os.path.join(run_dir, CACHE_FILE)
        self.entries: dict[str, dict] = self._read()

    def _read(self) -> dict[str, dict]:
        if not os.path.exists(self.path):
            return {}
        try:
            with open(self.path) as f:
                data = json.load(f)
            if data.get("version") != CACHE_VERSION or not isinstance(data.get("entries"), dict):
                raise ValueError(f"not a version-{CACHE_VERSION} episode cache")
            for entry in data["entries"].values():
                if not (len(entry["returns"]) == len(entry["steps"]) == len(entry["frames"])):
                    raise ValueError("an entry's returns, steps and frames differ in length")
            return data["entries"]
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
            raise CheckpointError(
                f"{self.path} is corrupt ({error}); move it away to score the run again from the start"
            ) from None

    @staticmethod
    def key(elite: RunElite, seed: int, cap: int | None, protocol: str) -> str:
        text = json.dumps([elite.genome.to_json(), seed, cap, protocol], sort_keys=True)
        return hashlib.sha1(text.encode()).hexdigest()[:20]

    def save(self) -> None:
        """Writes the entries, merged with what another process scoring the same run wrote meanwhile (the longer of
        two entries of one test: both hold the same first episodes), under a lock, atomically."""
        with open(self.path + ".lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            for key, entry in self._read().items():
                if len(entry["returns"]) > len(self.entries.get(key, {}).get("returns", ())):
                    self.entries[key] = entry
            temporary = self.path + ".tmp"
            with open(temporary, "w") as f:
                json.dump(dict(version=CACHE_VERSION, entries=self.entries), f, separators=(",", ":"))
            os.replace(temporary, self.path)


class _Scorer:
    """Plays tests of a run's elites through the cache, counting what it plays."""

    def __init__(self, cache: EpisodeCache | None, protocol: str, cap: int | None) -> None:
        self.cache, self.protocol, self.cap = cache, protocol, cap
        self.episodes_played = 0
        self.frames_played = 0

    def score(self, elite: RunElite, seed: int, episodes: int) -> Score:
        """Episodes 0..episodes-1 of test `seed` for `elite`, playing only those the cache lacks."""
        key = EpisodeCache.key(elite, seed, self.cap, self.protocol)
        entry = self.cache.entries.get(key) if self.cache is not None else None
        entry = entry or dict(generation=elite.generation, seed=seed, returns=[], steps=[], frames=[])
        have = len(entry["returns"])
        if have < episodes:
            played = score_elite(
                elite,
                episodes=episodes - have,
                protocol=self.protocol,
                max_episode_frames=self.cap,
                seed=seed,
                first_episode=have,
            )
            for field in ("returns", "steps", "frames"):
                entry[field] = entry[field] + list(getattr(played, field))
            self.episodes_played += played.episodes
            self.frames_played += int(sum(played.frames))
            if self.cache is not None:
                self.cache.entries[key] = entry
                self.cache.save()
        returns, steps, frames = (entry[f][:episodes] for f in ("returns", "steps", "frames"))
        return Score(
            elite.spec.env,
            elite.spec.family.test_setup(self.protocol, elite.spec.env_options, self.cap).protocol,
            episodes,
            seed,
            self.cap,
            [float(r) for r in returns],
            [int(s) for s in steps],
            [int(f) for f in frames],
            run_dir=elite.run_dir,
            generation=elite.generation,
            algorithm=elite.config.algorithm,
        )


def budget_generation(history: list, frames: int) -> int | None:
    """The generation a budget of `frames` training frames ends a run at: the first whose frames reach it (a run
    stops at the end of that generation; the suite's runs), or the run's last when none does (it stopped short)."""
    check_positive_int("frames", frames)
    for record in history:
        if record.frames_total >= frames:
            return record.generation
    return history[-1].generation if history else None


def generation_before(history: list, frames: int) -> int | None:
    """The last generation that ended at or before `frames` training frames (None: none did): how the logs of the
    Deep GA paper's code mark a run at 10M, 25M, 50M frames."""
    check_positive_int("frames", frames)
    before = [record.generation for record in history if record.frames_total <= frames]
    return before[-1] if before else None


def distinct_elites(elite: RunElite, generation: int | None = None) -> list[tuple[int, int]]:
    """(first, last) generation of each distinct elite in the run's history up to `generation` (None: all), in
    order of appearance. Elites the checkpoint does not hold (ES centers of earlier generations) are left out;
    ValueError naming run_dir and the generation when a generation recorded no elite or a corrupt one."""
    spans: dict[str, list[int]] = {}
    for record in elite.history:
        if generation is not None and record.generation > generation:
            break
        if record.elite_genome is None:
            raise ValueError(f"run_dir {elite.run_dir!r}: generation {record.generation} recorded no elite genome")
        try:
            genome = Genome.from_json(record.elite_genome)
        except (ValueError, TypeError) as error:
            raise ValueError(
                f"run_dir {elite.run_dir!r}: generation {record.generation}'s elite genome is corrupt: {error}"
            ) from None
        if genome.has_base and genome.init not in elite.bases:
            continue  # an ES center of an earlier generation: not kept
        key = json.dumps(record.elite_genome, sort_keys=True)
        spans.setdefault(key, [record.generation, record.generation])[1] = record.generation
    return [(first, last) for first, last in spans.values()]


def raced(screens: list[tuple[float, float, int]], screen_episodes: int, max_raced: int) -> list[int]:
    """Indices of the screened elites that go on: (mean, sample std, index) each; within two standard errors of
    the best mean (of the difference of the two means), best first, at most max_raced, at least min(3, all)."""
    order = sorted(range(len(screens)), key=lambda i: (-screens[i][0], -screens[i][2]))
    best_mean, best_std, _ = screens[order[0]]
    chosen = []
    for rank, i in enumerate(order):
        mean, std, _ = screens[i]
        margin = 2 * math.sqrt((std**2 + best_std**2) / screen_episodes)
        if rank < MIN_RACED or mean >= best_mean - margin:
            chosen.append(i)
    return chosen[: max(max_raced, min(MIN_RACED, len(screens)))]


def score_run(
    run_dir: str,
    *,
    generation: int | None = None,
    episodes: int = 200,
    screen_episodes: int = 20,
    max_raced: int = 5,
    protocol: str = "deep-ga",
    max_episode_frames: int | None = None,
    pick: bool = True,
    cache: bool = True,
    log: Callable[[str], None] | None = None,
) -> RunScores:
    """The three scores of the run in run_dir (the module docstring), as it stood at the end of `generation`
    (None: its newest; budget_generation and generation_before find the generation of a frame mark).

    max_episode_frames: the test cap (default: the run's training cap, as the paper's tests). cache: keep the
    played episodes in run_dir/elite_scores.json and reuse them. pick=False scores (a) only. ValueError naming
    the argument for bad values or a run without an elite by the mark; CheckpointError naming the file for a
    corrupt run or cache.
    """
    check_path("run_dir", run_dir)
    check_positive_int("episodes", episodes)
    check_int("screen_episodes", screen_episodes, 0, episodes)
    check_positive_int("max_raced", max_raced)
    check_choice("protocol", protocol, scoring_protocols())
    if generation is not None:
        check_int("generation", generation, 0)
    if not os.path.isdir(run_dir):
        raise ValueError(f"run_dir {run_dir!r} is not a directory")
    log = log or (lambda line: None)
    newest = load_elite(run_dir)
    records = [r for r in newest.history if generation is None or r.generation <= generation]
    if generation is not None and (not newest.history or generation > newest.history[-1].generation):
        last = newest.history[-1].generation if newest.history else -1
        raise ValueError(f"generation must be one of 0..{last} (the generations of {run_dir}), got {generation}")
    spans = distinct_elites(newest, generation)
    if not spans:
        raise ValueError(f"run_dir {run_dir!r} has no elite in its history up to generation {records[-1].generation}")
    last_record = records[-1]
    cap = max_episode_frames if max_episode_frames is not None else newest.config.max_episode_frames
    scorer = _Scorer(EpisodeCache(run_dir) if cache else None, protocol, cap)
    training = {r.generation: r.elite for r in newest.history}
    final = scorer.score(newest.of_generation(last_record.generation), FINAL_SEED, episodes)
    log(f"final elite (generation {last_record.generation}): {final.mean:.1f} over {episodes} episodes")
    if not pick:
        return RunScores(
            run_dir, last_record.frames_total, last_record.generation, final, None, None, None, [],
            scorer.episodes_played, scorer.frames_played,
        )  # fmt: skip

    elites = [newest.of_generation(first) for first, _ in spans]
    first_pass = screen_episodes if screen_episodes else episodes
    screens = []
    for index, elite in enumerate(elites):
        score = scorer.score(elite, SELECTION_SEED, first_pass)
        screens.append((score.mean, float(np.std(score.returns, ddof=1)) if first_pass > 1 else 0.0, index))
        log(f"  elite of generation {elite.generation}: {score.mean:.1f} on the first {first_pass} selection episodes")
    going_on = raced(screens, first_pass, max_raced) if screen_episodes else list(range(len(elites)))
    selection = {i: scorer.score(elites[i], SELECTION_SEED, episodes) for i in going_on}
    picked = max(selection, key=lambda i: (selection[i].mean, elites[i].generation))
    best = scorer.score(elites[picked], REPORT_SEED, episodes)
    log(
        f"picked generation {elites[picked].generation}: {selection[picked].mean:.1f} on the selection set (biased), "
        f"{best.mean:.1f} on the report set"
    )
    return RunScores(
        run_dir=run_dir,
        frames=last_record.frames_total,
        generation=last_record.generation,
        final=final,
        best=best,
        paper_way=selection[picked],
        picked_generation=elites[picked].generation,
        elites=[
            EliteScreen(
                generation=first,
                last_generation=last,
                training=training.get(first),
                screen_mean=round(screens[i][0], 2),
                selection_mean=round(selection[i].mean, 2) if i in selection else None,
            )
            for i, (first, last) in enumerate(spans)
        ],
        episodes_played=scorer.episodes_played,
        frames_played=scorer.frames_played,
    )
