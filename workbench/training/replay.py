"""Replays of evolved agents: one episode of a genome, its frames, actions and rewards, as GIF or MP4.

    episode = replay_run("runs/demo", generation=None)      # the newest elite of a run
    episode = replay(genome, RunSpec("frostbite", "small"), decoder, seed=0)   # or evaluator.spec
    save_video(episode, "elite.gif")                         # or .mp4; the score is drawn in

Deterministic: the same genome and seed give the same episode (the emulation
ops are seeded per episode; the network is deterministic).
"""

from __future__ import annotations

import dataclasses
import os

import numpy as np

from workbench.checks import check_int
from workbench.envs import SCREEN
from workbench.envs.rng import episode_seed
from workbench.evaluation.run_spec import RunSpec
from workbench.evolution import Genome, GenomeDecoder


@dataclasses.dataclass
class Episode:
    """frames uint8 [T+1, H, W, 3] (RGB, the start then after each step), actions [T] (int32, or float32
    [T, action size] for continuous actions), rewards [T],
    observations [T+1, ...] (what the network saw before normalisation), score = sum of rewards,
    info: {name: float64 [T]} of each step's info terms (MuJoCo: x_velocity, reward components; {} otherwise)."""

    frames: np.ndarray | None  # None: the environment renders no screen
    actions: np.ndarray
    rewards: np.ndarray
    observations: np.ndarray
    score: float
    action_meanings: list | None = None
    info: dict = dataclasses.field(default_factory=dict)


def replay(
    genome: Genome | np.ndarray,
    spec: RunSpec,
    decoder: GenomeDecoder,
    *,
    seed: int = 0,
    max_episode_frames: int | None = None,
    max_steps: int = 100_000,
) -> Episode:
    """One episode of `genome` (a Genome, or a flat weight vector) in the environment and model of `spec`.

    max_episode_frames: a cap below the spec's own (an evaluator's live cap); None = the spec's.
    """
    if not isinstance(spec, RunSpec):
        raise TypeError(f"spec must be a RunSpec (evaluator.spec, RunConfig.spec()), got {type(spec).__name__}")
    seed = check_int("seed", seed)  # any integer: it is mixed into the episode's seed
    cap = spec.max_episode_frames if max_episode_frames is None else max_episode_frames
    batch = spec.make_batch(1, max_episode_frames=cap, **spec.family.replay_options)
    try:
        network = spec.build_model(batch, 1)
        weights = decoder.decode(genome) if isinstance(genome, Genome) else np.asarray(genome, np.float32)
        network.set_slot(0, weights)
        observation = batch.reset([0], [episode_seed(seed, 0, 0)])
        screen = _screen_reader(batch)
        frames, observations = [screen()], [observation[0]]
        steps: list[np.ndarray] = []
        rewards: list[float] = []
        info: list[dict[str, np.ndarray]] = []
        done = bool(batch.done([0])[0])
        while not done and len(steps) < max_steps:
            action = network.act(observation, np.zeros(1, np.int32)).numpy()[0]
            reward, (done,) = batch.step([0], action[None] if batch.continuous_actions else [int(action)])
            observation = batch.observation([0])
            frames.append(screen())
            observations.append(observation[0])
            steps.append(action)
            rewards.append(float(reward[0]))
            info.append(batch.step_info([0]))
        meanings = batch.action_meanings
    finally:
        batch.close()
    actions = np.array(steps, np.float32 if batch.continuous_actions else np.int32)
    names = info[0].keys() if info else ()
    return Episode(
        None if frames[0] is None else np.stack(frames),
        actions,
        np.array(rewards, np.float32),
        np.stack(observations),
        float(np.sum(rewards)),
        None if meanings is None else list(meanings),
        {name: np.array([float(step[name][0]) for step in info]) for name in names},
    )


def _screen_reader(batch):
    """A function returning the RGB screen, or None when the environment cannot render (e.g. no pygame)."""
    if not batch.supports(SCREEN):
        return lambda: None
    try:
        batch.screen([0])
    except Exception:  # noqa: BLE001 - Gymnasium's renderers raise their own dependency errors
        return lambda: None
    return lambda: batch.screen([0])[0]


def replay_run(run_dir: str, generation: int | None = None, seed: int = 0) -> Episode:
    """The elite of `generation` of a run directory (default: the strategy's current elite), for one episode.

    For ES and novelty search the current elite is the newest center; the centers of earlier
    generations are not kept in checkpoints, so only the newest can be replayed.
    """
    from workbench.training.elites import load_elite

    elite = load_elite(run_dir, generation)
    return replay(elite.genome, elite.spec, elite.decoder(), seed=seed)


VIDEO_EXTENSIONS = (".gif", ".mp4")


def check_video_path(name: str, path: str) -> str:
    """The extension of `path` (one of VIDEO_EXTENSIONS, lower case), else a ValueError naming the argument `name`."""
    extension = os.path.splitext(path)[1].lower()
    if extension not in VIDEO_EXTENSIONS:
        raise ValueError(f"{name} must end in .gif or .mp4, got {path!r}")
    return extension


def save_video(episode: Episode, path: str, fps: float = 15, scale: int | None = None) -> str:
    """Writes the episode as a GIF or MP4 (by extension), the running score drawn in the corner.

    scale: pixel enlargement (default: 2 for Atari's 160-pixel screens, 1 for larger renders such as MuJoCo's)."""
    import imageio.v3 as iio
    from PIL import Image, ImageDraw

    if episode.frames is None:
        raise ValueError(
            "this episode has no frames: its environment cannot render RGB (for Gymnasium's classic "
            "control install pygame: pip install 'gymnasium[classic-control]')"
        )
    extension = check_video_path("path", path)
    scores = np.concatenate([[0.0], np.cumsum(episode.rewards)])
    if scale is None:
        scale = 2 if episode.frames.shape[2] <= 200 else 1
    frames = []
    for frame, score in zip(episode.frames, scores):
        image = Image.fromarray(frame).resize((frame.shape[1] * scale, frame.shape[0] * scale), Image.Resampling.NEAREST)
        draw = ImageDraw.Draw(image)
        text = f"score {score:g}"
        draw.rectangle([0, 0, 8 + 7 * len(text), 16], fill=(0, 0, 0))
        draw.text((4, 3), text, fill=(255, 255, 0))
        frames.append(np.asarray(image))
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    if extension == ".gif":
        iio.imwrite(path, np.stack(frames), duration=1000 / fps, loop=0)
    else:
        _write_mp4(path, frames, fps)
    return path


def _write_mp4(path, frames, fps):
    import imageio

    with imageio.get_writer(path, fps=fps, codec="libx264", macro_block_size=1) as writer:
        for frame in frames:
            writer.append_data(frame)
