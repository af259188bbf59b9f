"""Trainer: runs evolution generation after generation, in the caller's thread or in the background.

    trainer = Trainer.from_config(RunConfig(env="frostbite", algorithm="ga"), run_dir="runs/frostbite")
    trainer.start(generations=50)          # returns at once; the notebook stays responsive
    trainer.set(sigma=0.005)               # validated now, applied at the next generation
    trainer.pause(); trainer.resume(); trainer.stop()   # stop() returns within seconds, thread joined
    trainer.run(generations=2)             # or synchronously, for scripts

Every generation is recorded (trainer.history, run_dir/history.jsonl, TensorBoard
scalars under run_dir/tensorboard) and published on trainer.events with its
metrics and the time split; gameplay frames, hyperparameter changes,
checkpoints, errors and state changes are published too. Checkpoints are
written every `checkpoint_every` generations and on stop(); Trainer.resume_from(run_dir)
continues exactly where the newest one left off. With observation normalisation
(the spec's), the states every episode saw are merged into the run's observation
statistics when a generation ends (in request order, so the statistics do not
depend on the evaluator's layout) and the evaluator normalises by them from the
next generation on; they are checkpointed with the run. An exception in the background
thread is recorded, published, and raised again by the next call (or by
raise_if_failed()). pause() takes effect between evaluation rounds; stop()
cancels the round in progress (its episodes are discarded).
"""

from __future__ import annotations

import dataclasses
import json
import os
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from workbench.checks import check_int, check_path, check_real
from workbench.envs.rng import episode_seed
from workbench.evaluation import BaseEvaluator, EvaluationCancelled, EvaluatorLayout
from workbench.evaluation.telemetry import time_split
from workbench.evolution.genome import Genome, GenomeDecoder
from workbench.evolution.records import GenerationRecord
from workbench.evolution.strategy import HyperparameterLog, Strategy
from workbench.models.observation_normalization import ObservationStatistics, preserving_map
from workbench.training.checkpoint import CheckpointError, list_checkpoints, load_checkpoint, save_checkpoint
from workbench.training.events import EventBus
from workbench.training.run_config import RunConfig
from workbench.training.run_lock import RunLock
from workbench.training.run_logger import RunLogger
from workbench.training.warm_start import load_warm_start

if TYPE_CHECKING:
    import pandas

    from workbench.training.scoring import Score

EVALUATOR_SETTINGS = ("max_episode_frames",)  # set() names that go to the evaluator, not the strategy


class TrainerError(RuntimeError):
    """The background thread failed; the original exception is the __cause__."""


class _Stopped(Exception):
    pass


@dataclasses.dataclass(frozen=True)
class Budget:
    """When a run() or start() stops: after this many generations, frames or seconds (None = no limit)."""

    generations: int | None = None
    frames: int | None = None
    seconds: float | None = None


@dataclasses.dataclass(frozen=True)
class TrainerSnapshot:
    """A consistent view of a trainer, taken under its lock (for dashboards and replays)."""

    generation: int
    phase: str
    elite: Genome | None
    bases: dict
    hyperparameters: dict  # the strategy's config and the evaluator settings in force
    pending: dict  # accepted by set(), not applied yet
    running: bool
    paused: bool


# The lists of a trainer's state that only grow: its generation records and its strategy's, kept in append-only
# journals beside the checkpoints (workbench/training/checkpoint.py), so a save costs the same at generation 10
# and 10,000.
JOURNALS = (("history",), ("strategy", "history"))


def _check_preserve_policy(strategy: Strategy, evaluator: BaseEvaluator) -> None:
    """ValueError when observation_normalization's preserve_policy is on for a strategy that cannot map its policy
    or a parameter space without layer shapes."""
    normalization = evaluator.spec.normalization
    if normalization is None or not normalization.preserve_policy:
        return
    if type(strategy).map_policy is Strategy.map_policy:
        strategy.map_policy(lambda weights: weights)  # raises the strategy's reason
    if strategy.space.layer_shapes is None:
        raise ValueError("observation_normalization preserve_policy needs a network's layer shapes (a model's parameter space)")


class Trainer:
    """Drives `strategy` (ask/tell) with `evaluator`; see the module docstring."""

    keep_checkpoints = 3  # the newest checkpoints kept in run_dir (set on an instance to keep another number)

    def __init__(
        self,
        strategy: Strategy,
        evaluator: BaseEvaluator,
        *,
        run_dir: str | None = None,
        seed: int = 0,
        checkpoint_every: int = 1,
        config: RunConfig | None = None,
        _resuming: bool = False,
    ) -> None:
        if not isinstance(strategy, Strategy):
            raise TypeError(f"strategy must be a workbench.evolution.Strategy, got {type(strategy).__name__}")
        if not isinstance(evaluator, BaseEvaluator):
            raise TypeError(f"evaluator must be a workbench.evaluation.BaseEvaluator, got {type(evaluator).__name__}")
        check_int("checkpoint_every", checkpoint_every, 0)
        run_dir = None if run_dir is None else check_path("run_dir", run_dir)
        _check_preserve_policy(strategy, evaluator)
        self.strategy, self.evaluator, self.run_dir = strategy, evaluator, run_dir
        self.seed, self.checkpoint_every, self.config = int(seed), checkpoint_every, config
        self.events = EventBus()
        self.history: list[GenerationRecord] = []
        self.frames = 0
        self.settings = HyperparameterLog()  # the evaluator's settings (the live episode cap), as the strategy's
        self._round = 0
        self._lock = threading.RLock()  # strategy access: the loop's ask/tell and set() from other threads
        self._thread: threading.Thread | None = None
        self._cancel = threading.Event()
        self._stopping = threading.Event()
        self._unpaused = threading.Event()
        self._unpaused.set()
        self._error = None
        self._closed = False  # close() frees the evaluator: no more generations
        self._checkpointed = None  # _position() of the newest checkpoint written by this trainer
        self._pending_observations = None  # ObservationStatistics of this generation's episodes so far
        self.logger: RunLogger | None = None
        self._run_lock: RunLock | None = None
        if run_dir is not None:
            self._run_lock = RunLock.acquire(run_dir)  # RunInUseError while another trainer writes the run
            if not _resuming and list_checkpoints(run_dir):
                self._run_lock.release()
                raise ValueError(
                    f"run_dir {run_dir!r} holds a run already: continue it with Trainer.resume_from, or choose another directory"
                )
            if config is not None:
                self._write_json("config.json", config.to_json())
            self.logger = RunLogger(run_dir)
            self.logger.attach(self.events)
        # Gameplay frames are made (read from the emulators, rendered for MuJoCo) only while someone
        # receives "frame" events: a dashboard, a notebook's subscription.
        self._frames_on = False
        self.events.watch(self._follow_frame_subscribers)

    # -- construction ---------------------------------------------------------------------
    @classmethod
    def from_config(
        cls,
        config: RunConfig,
        run_dir: str | None = None,
        checkpoint_every: int = 1,
        _resuming: bool = False,
        _reference_batch: Any = None,
    ) -> Trainer:
        """A new run of `config` (run_dir: where its logs and checkpoints go; None = nowhere). RunInUseError when
        another trainer writes run_dir."""
        if not isinstance(config, RunConfig):
            raise TypeError(f"config must be a RunConfig, got {type(config).__name__}")
        if run_dir is not None:
            RunLock.check(check_path("run_dir", run_dir))  # before building anything heavy
        strategy, evaluator = config.build(reference_batch=_reference_batch)
        try:
            if config.init_from is not None and not _resuming:  # a resumed run has its own checkpoint
                start = load_warm_start(config.init_from, config.model, config.model_options, evaluator.spec)
                strategy.start_from(start.weights)
                if start.statistics is not None:
                    evaluator.set_observation_statistics(start.statistics)
            return cls(
                strategy,
                evaluator,
                run_dir=run_dir,
                seed=config.seed,
                checkpoint_every=checkpoint_every,
                config=config,
                _resuming=_resuming,
            )
        except BaseException:
            evaluator.close()
            raise

    @classmethod
    def resume_from(cls, run_dir: str, checkpoint_every: int = 1) -> Trainer:
        """The trainer of a run directory, continuing from its newest checkpoint. A run stopped before its first
        checkpoint (config.json and no checkpoint) starts again from generation 0 with its config; whatever its
        first generation had logged is dropped. RunInUseError when another trainer writes run_dir."""
        RunLock.check(check_path("run_dir", run_dir))
        config = RunConfig.from_run_dir(run_dir)
        if not list_checkpoints(run_dir):
            trainer = cls.from_config(config, run_dir=run_dir, checkpoint_every=checkpoint_every)
            assert trainer.logger is not None, "a trainer with a run directory logs"
            trainer.logger.restart([])
            return trainer
        generation, state = load_checkpoint(run_dir)
        if config.virtual_batch_norm and state.get("reference_batch") is None:
            raise CheckpointError(
                f"the checkpoint of generation {generation} in {run_dir} lacks the run's reference batch (virtual_batch_norm)"
            )
        trainer = cls.from_config(
            config,
            run_dir=run_dir,
            checkpoint_every=checkpoint_every,
            _resuming=True,
            _reference_batch=state.get("reference_batch"),
        )
        try:
            trainer._load(state)
        except (KeyError, TypeError, ValueError) as error:
            trainer.close()
            raise CheckpointError(
                f"the checkpoint of generation {generation} in {run_dir} does not fit its run: {error}"
            ) from error
        return trainer

    # -- synchronous use ------------------------------------------------------------------
    def step(self) -> GenerationRecord:
        """Runs one generation in this thread; returns its record."""
        return self.run(generations=1)[-1]

    def run(
        self, generations: int | None = None, frames: int | None = None, seconds: float | None = None
    ) -> list[GenerationRecord]:
        """Runs generations in this thread until a budget (counted from this call) is spent; returns their records."""
        self._check_open()
        self.raise_if_failed()
        if self.running:
            raise RuntimeError("the trainer is running in the background; stop() it first")
        budget = self.check_budget(generations, frames, seconds)
        if budget == Budget():  # would block this thread for good; start() trains until stop()
            raise ValueError(
                "run() needs a budget: generations, frames or seconds (start() without one trains in the background)"
            )
        return self._loop(budget)

    # -- background use -------------------------------------------------------------------
    def start(self, generations: int | None = None, frames: int | None = None, seconds: float | None = None) -> None:
        """Starts training in a background thread and returns at once (no budget: until stop())."""
        self._check_open()
        self.raise_if_failed()
        if self.running:
            raise RuntimeError("the trainer is already running")
        budget = self.check_budget(generations, frames, seconds)
        self._stopping.clear()
        self._cancel.clear()
        self._unpaused.set()
        self._thread = threading.Thread(target=self._background, args=(budget,), name="workbench-trainer", daemon=True)
        self._thread.start()
        self.events.publish("state", state="running")

    def pause(self) -> None:
        """Pauses after the evaluation round in progress."""
        self._unpaused.clear()
        self.events.publish("state", state="paused")

    def resume(self) -> None:
        self._unpaused.set()
        self.events.publish("state", state="running" if self.running else "idle")

    def stop(self, timeout: float = 5.0) -> None:
        """Stops the background thread (cancelling the round in progress), joins it, writes a checkpoint."""
        timeout = check_real("timeout", timeout, 0)
        thread = self._thread
        if thread is not None:
            self._stopping.set()
            self._cancel.set()
            self._unpaused.set()
            thread.join(timeout)
            if thread.is_alive():
                raise TimeoutError(f"the trainer thread did not stop within {timeout} s")
            self._thread = None
        if self.run_dir is not None and self._error is None and self._checkpointed != self._position():
            self.checkpoint()
        self.events.publish("state", state="stopped")
        self.raise_if_failed()

    def wait(self, timeout: float | None = None) -> bool:
        """Waits for a background run to finish its budget; True if it has."""
        if timeout is not None:
            timeout = check_real("timeout", timeout, 0)
        thread = self._thread
        if thread is not None:
            thread.join(timeout)
            if thread.is_alive():
                return False
            self._thread = None
        self.raise_if_failed()
        return True

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("this trainer is closed; a run with a run_dir continues in Trainer.resume_from(run_dir)")

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    @property
    def paused(self) -> bool:
        return not self._unpaused.is_set()

    def raise_if_failed(self) -> None:
        """Raises the background thread's exception (once) as a TrainerError."""
        error, self._error = self._error, None
        if error is not None:
            raise TrainerError(f"training failed: {error!r}") from error

    def _background(self, budget):
        try:
            self._loop(budget)
        except BaseException as error:  # recorded, published, re-raised to the caller later
            self._error = error
            self.events.publish("error", error=repr(error), generation=self.generation)
        finally:
            self.events.publish("state", state="finished")

    # -- hyperparameters ------------------------------------------------------------------
    def set(self, **changes: Any) -> None:
        """Changes hyperparameters from any thread: validated now (ValueError), applied at the next generation.

        Besides the strategy's hyperparameters, `max_episode_frames` caps episodes (up to the run's
        configured cap; the environments are built with it).
        """
        self.raise_if_failed()
        settings = {name: changes.pop(name) for name in EVALUATOR_SETTINGS if name in changes}
        with self._lock:
            if "max_episode_frames" in settings:
                if settings["max_episode_frames"] is None:
                    raise ValueError("max_episode_frames must be a positive integer, got None")
                self.evaluator.check_episode_cap(settings["max_episode_frames"])
            if changes or not settings:
                self.strategy.set(**changes)
            applies = self.strategy.generation + 1  # as the strategy's own changes
            self.settings.request(settings, due=applies)
        changes.update(settings)
        self.events.publish("hyperparameters", changes=dict(changes), applies_at_generation=applies)

    def pending(self) -> dict:
        """Changes set() accepted that have not been applied yet: {name: value}."""
        with self._lock:
            return dict(self.strategy.hyperparameters.pending, **self.settings.pending)

    def hyperparameters(self) -> dict:
        """The settings in force: the strategy's config and the evaluator's settings."""
        with self._lock:
            return dict(dataclasses.asdict(self.strategy.config), max_episode_frames=self.evaluator.max_episode_frames)

    def snapshot(self) -> TrainerSnapshot:
        """Generation, phase, elite, bases and settings taken together under the trainer's lock."""
        with self._lock:
            strategy = self.strategy
            return TrainerSnapshot(
                strategy.generation,
                strategy.phase,
                strategy.elite,
                dict(strategy.bases()),
                self.hyperparameters(),
                self.pending(),
                self.running,
                self.paused,
            )

    @property
    def generation(self) -> int:
        return self.strategy.generation

    # -- the loop -------------------------------------------------------------------------
    @staticmethod
    def check_budget(generations: int | None = None, frames: int | None = None, seconds: float | None = None) -> Budget:
        """The Budget of run()/start() arguments (ValueError naming a bad one)."""
        if generations is not None:
            check_int("generations", generations, 1)
        if frames is not None:
            check_int("frames", frames, 1)
        if seconds is not None:
            check_real("seconds", seconds, 0, low_open=True)
        return Budget(generations, frames, seconds)

    def _loop(self, budget):
        start, start_frames, records = time.monotonic(), self.frames, []
        while True:
            if budget.generations is not None and len(records) >= budget.generations:
                break
            if budget.frames is not None and self.frames - start_frames >= budget.frames:
                break
            if budget.seconds is not None and time.monotonic() - start >= budget.seconds:
                break
            try:
                records.append(self._generation())
            except _Stopped:
                break
        return records

    def _apply_settings(self):
        """Applies the pending evaluator settings once their generation starts (recorded in settings.trail)."""
        with self._lock:
            changes = self.settings.take(self.strategy.generation)
        if "max_episode_frames" in changes:
            self.evaluator.set_episode_cap(changes["max_episode_frames"])

    def _generation(self):
        self._apply_settings()
        target = self.strategy.generation + 1
        start, parts = time.monotonic(), []
        while self.strategy.generation < target:
            self._unpaused.wait()
            if self._stopping.is_set():
                raise _Stopped
            with self._lock:
                phase = self.strategy.phase
                requests = self.strategy.ask()
                bases = self.strategy.bases()
                round_cap = self.strategy.round_episode_cap
            seed = episode_seed(self.seed, self.strategy.generation, self._round)
            try:
                results = self._evaluate_round(requests, seed, bases, round_cap)
            except EvaluationCancelled:
                raise _Stopped from None
            with self._lock:
                self.strategy.tell(results)
                self._round += 1
                self._collect_observations(results)
            parts.append((phase, self.evaluator.telemetry))
            self.frames += self.evaluator.telemetry.frames
        self._round = 0
        self._merge_observations()
        record = self._record(parts, time.monotonic() - start)
        self.history.append(record)
        self.events.publish("generation", record)
        if self.run_dir is not None and self.checkpoint_every and self.strategy.generation % self.checkpoint_every == 0:
            self.checkpoint()
        return record

    def _evaluate_round(self, requests, seed, bases, round_cap):
        """The round's results, its episodes capped at the strategy's round cap when that is below the cap in force
        (which is restored after the round)."""
        live = self.evaluator.max_episode_frames
        if round_cap is None or (live is not None and round_cap >= live):
            return self.evaluator.evaluate(requests, seed=seed, bases=bases, cancel=self._cancel)
        self.evaluator.set_episode_cap(round_cap)
        try:
            return self.evaluator.evaluate(requests, seed=seed, bases=bases, cancel=self._cancel)
        finally:
            self.evaluator.set_episode_cap(live)

    def _record(self, rounds, seconds):
        """The strategy's record of the generation that just ended, with the evaluation's measurements.

        rounds: (phase, Telemetry) of each evaluation round. seconds: the generation's wall time (rounds,
        ask/tell and observation statistics; checkpointing and logging come after it).
        """
        parts = [telemetry for _, telemetry in rounds]
        frames = sum(t.frames for t in parts)
        busy_seconds = sum(t.busy_seconds for t in parts)
        strategy_record = self.strategy.history[-1]
        return strategy_record.with_evaluation(
            frames=frames,
            frames_total=self.frames,
            seconds=seconds,
            bytes_shipped=sum(t.bytes_shipped for t in parts),
            frames_per_second=frames / seconds if seconds > 0 else 0.0,
            time_split=time_split(parts),
            busy_frames_per_second=sum(t.busy_frames for t in parts) / busy_seconds if busy_seconds > 0 else 0.0,
            tail_seconds=sum(t.tail_seconds for t in parts),
            rounds=[telemetry.round_record(phase) for phase, telemetry in rounds],
            hyperparameters=dict(strategy_record.hyperparameters, max_episode_frames=self.evaluator.max_episode_frames),
        )

    # -- observation statistics -----------------------------------------------------------
    @property
    def observation_statistics(self) -> ObservationStatistics | None:
        """The statistics observations are normalised by (None without observation normalisation)."""
        spec = self.evaluator.spec
        if spec.normalization is None:
            return None
        return spec.observation_statistics or ObservationStatistics.empty(int(np.prod(spec.observation_shape())))

    def _collect_observations(self, results):
        """Adds the round's episodes, in request order, to the generation's pending statistics."""
        episodes = [
            (n, total, squares)
            for result in results
            if result.observation_sums is not None
            for n, total, squares in zip(*result.observation_sums)
        ]
        if episodes:
            pending = self._pending_observations or ObservationStatistics.empty(len(episodes[0][1]))
            self._pending_observations = pending.merged(episodes)

    def _merge_observations(self):
        """The generation's states join the run's statistics; the evaluator normalises by them from now on (and with
        preserve_policy the strategy's mean is mapped to stay the same policy under them)."""
        statistics, pending = self.observation_statistics, self._pending_observations
        if statistics is None or pending is None:
            return
        merged = statistics.merged([(pending.count, pending.sum, pending.sum_squares)])
        normalization = self.evaluator.spec.normalization
        with self._lock:
            if normalization is not None and normalization.preserve_policy:
                floor = normalization.variance_floor
                layers = self.strategy.space.layer_shapes
                assert layers is not None, "checked when the trainer was built"
                self.strategy.map_policy(preserving_map(layers, statistics.mean_and_std(floor), merged.mean_and_std(floor)))
            self.evaluator.set_observation_statistics(merged)
            self._pending_observations = None

    def _observation_state(self):
        statistics = self.observation_statistics
        if statistics is None:
            return None
        pending = self._pending_observations
        return {"statistics": statistics.state(), "pending": None if pending is None else pending.state()}

    def _load_observation_state(self, state):
        if self.evaluator.spec.normalization is None:
            if state is not None:
                raise ValueError("the checkpoint holds observation statistics but the run does not normalise")
            return
        if state is None:
            raise ValueError("the checkpoint lacks the run's observation statistics (observation_normalization)")
        size = int(np.prod(self.evaluator.spec.observation_shape()))
        self.evaluator.set_observation_statistics(ObservationStatistics.from_state(state["statistics"], size))
        pending = state.get("pending")
        self._pending_observations = None if pending is None else ObservationStatistics.from_state(pending, size)

    # -- checkpoints ----------------------------------------------------------------------
    def state_dict(self) -> dict:
        with self._lock:
            return {
                "strategy": self.strategy.state_dict(),
                "history": [r.to_json() for r in self.history],
                "frames": self.frames,
                "round": self._round,
                "seed": self.seed,
                "settings": dict(self.settings.state(), max_episode_frames=self.evaluator.max_episode_frames),
                "algorithm": None if self.config is None else self.config.algorithm,
                "reference_batch": self.evaluator.spec.reference_batch,
                "observations": self._observation_state(),
            }

    def _load(self, state):
        strategy_class = type(self.strategy)
        self.strategy = strategy_class.from_state(state["strategy"], self.evaluator.space)
        self.history = [GenerationRecord.from_json(record) for record in state["history"]]
        self.frames = int(state["frames"])
        self._round, self.seed = int(state["round"]), int(state["seed"])
        settings = state.get("settings", {"pending": {}, "due": 0, "trail": []})
        # checkpoints written before the settings log named the live cap "episode_cap"
        cap = settings.get("max_episode_frames", settings.get("episode_cap", self.evaluator.spec.max_episode_frames))
        self.evaluator.set_episode_cap(cap)
        self.settings.load(settings)
        self._load_observation_state(state.get("observations"))
        if self.logger is not None:  # the log holds exactly the checkpoint's generations
            self.logger.restart(self.history)

    def checkpoint(self) -> str:
        """Writes a checkpoint now (run_dir needed); returns its path."""
        if self.run_dir is None:
            raise ValueError("checkpoints need a run_dir")
        path = save_checkpoint(
            self.run_dir, self.strategy.generation, self.state_dict(), keep=self.keep_checkpoints, journals=JOURNALS
        )
        self._checkpointed = self._position()
        self.events.publish("checkpoint", path=path, generation=self.strategy.generation)
        return path

    def _position(self):
        """Where the run stands: (generation, evaluation round within it)."""
        return self.strategy.generation, self._round

    def _write_json(self, name, data):
        path = os.path.join(self.run_dir, name)
        with open(path + ".tmp", "w") as f:
            json.dump(data, f, indent=1)
            f.flush()
            os.fsync(f.fileno())
        os.replace(path + ".tmp", path)

    def _on_frame(self, frame):
        self.events.publish("frame", generation=self.strategy.generation, **frame)

    def _follow_frame_subscribers(self):
        with self._lock:
            wanted = self.events.wants("frame")
            if wanted == self._frames_on:
                return
            self._frames_on = wanted
            if wanted:
                self.evaluator.add_frame_listener(self._on_frame)
            else:
                self.evaluator.remove_frame_listener(self._on_frame)

    def evaluate_elite(
        self,
        episodes: int = 30,
        protocol: str = "deep-ga",
        max_episode_frames: int | None = None,
        seed: int = 0,
        progress: Callable[[int, int], None] | None = None,
    ) -> Score:
        """Scores the current elite on fresh test episodes (workbench.training.scoring; safe while training runs)."""
        from workbench.training.scoring import score_genome

        snapshot = self.snapshot()
        if snapshot.elite is None:
            raise ValueError("there is no elite yet: wait for the first generation to finish")
        layout = (
            (self.config.subpopulations, self.config.slots)
            if self.config is not None
            else (EvaluatorLayout.subpopulations, EvaluatorLayout.slots)
        )
        score = score_genome(
            snapshot.elite,
            self.evaluator.spec,
            bases=snapshot.bases,
            episodes=episodes,
            protocol=protocol,
            max_episode_frames=max_episode_frames,
            seed=seed,
            run_seed=self.seed,
            training_generations=snapshot.generation,
            subpopulations=layout[0],
            slots=layout[1],
            progress=progress,
        )
        last = self.history[-1].generation if self.history else None
        return dataclasses.replace(
            score, run_dir=self.run_dir, generation=last, algorithm=None if self.config is None else self.config.algorithm
        )

    def elite_weights(self) -> np.ndarray:
        """The current elite's weights (float32 [n]: a network's flat weights, a function problem's parameter
        vector), decoded from its genome and the strategy's bases; ValueError before there is an elite."""
        snapshot = self.snapshot()
        if snapshot.elite is None:
            raise ValueError("there is no elite yet: wait for the first generation to finish")
        decoder = GenomeDecoder(self.evaluator.space, cache_bytes=0)
        if isinstance(snapshot.elite.init, str):  # a genome on a dense base
            decoder.add_base(snapshot.elite.init, snapshot.bases[snapshot.elite.init])
        return decoder.decode_full(snapshot.elite)

    def distribution_axes(self) -> np.ndarray | None:
        """The search distribution's standard deviations along its principal axes, largest first, for the
        strategies with an adapted Gaussian (DistributionSearch.axes); None for the others."""
        with self._lock:
            axes = getattr(self.strategy, "axes", None)
            return None if axes is None else axes()

    def history_frame(self) -> pandas.DataFrame:
        """The history as a pandas DataFrame (one row per generation, the columns of history.jsonl)."""
        import pandas

        return pandas.DataFrame([record.to_json() for record in self.history])

    def close(self) -> None:
        """Stops a running generation loop, closes the logs and frees the evaluator; safe to call twice.
        `with Trainer.from_config(...) as trainer:` calls it on the way out."""
        if self.running:
            self.stop()
        if self.logger is not None:
            self.logger.close()
        self.evaluator.close()
        if self._run_lock is not None:
            self._run_lock.release()
        self._closed = True

    def __enter__(self) -> Trainer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = ["Trainer", "TrainerError"]
