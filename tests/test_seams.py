"""The seams are real: a toy evaluator and a toy strategy, written against the interfaces alone, run through
the Trainer, its logs and checkpoints and the RunMonitor; and run directories written before the typed
records still resume, continuing exactly as they would have."""

import dataclasses
import json
import os
import shutil

import numpy as np
import pytest

from support import DATA
from workbench.evaluation import BaseEvaluator, RunSpec, Telemetry
from workbench.evolution import (
    EvaluationRequest,
    EvaluationResult,
    Genome,
    GenomeDecoder,
    NoiseTable,
    ParameterSpace,
    Strategy,
)
from workbench.lab.run_monitor import RunMonitor
from workbench.training import RunConfig, Trainer, load_checkpoint
from workbench.training.run_logger import read_history

LEGACY = os.path.join(DATA, "legacy_runs")


class ToyEvaluator(BaseEvaluator):
    """Return = minus the squared norm of the genome's weights; one frame per episode; one gameplay frame."""

    def __init__(self):
        space = ParameterSpace(NoiseTable.shared(2**12, seed=1), np.ones(3, np.float32))
        super().__init__(RunSpec("toy-sphere", "mlp", noise_size=2**12, noise_seed=1), space, GenomeDecoder(space))

    def evaluate(self, requests, seed=0, bases=None, cancel=None):
        requests = self.check_requests(requests, bases, cancel)
        returns = [np.full(r.episodes, -float(np.sum(self.decoder.decode(r.genome) ** 2))) for r in requests]
        self._publish_frame(dict(request=0, episode=0, step=1, score=float(returns[0][0]), frame=np.zeros((2, 2, 3), np.uint8)))
        episodes = sum(r.episodes for r in requests)
        self.telemetry = Telemetry(wall_seconds=1e-3, emulation_seconds=5e-4, frames=episodes, episodes=episodes)
        return [EvaluationResult(values, None, np.ones(len(values)), np.ones(len(values))) for values in returns]


@dataclasses.dataclass(frozen=True)
class HillClimberConfig:
    sigma: float = 0.5
    children: int = 4

    def validated(self):
        if not self.sigma > 0:
            raise ValueError(f"sigma must be positive, got {self.sigma!r}")
        return self


class HillClimber(Strategy):
    """The best genome so far and `children` mutations of it per generation; keeps the best."""

    kind, config_class = "HillClimber", HillClimberConfig

    def __init__(self, config, space, seed=0):
        super().__init__(config, space, seed)
        self.best, self.best_fitness = Genome(space.sample_offset(self.rng)), None

    def _ask(self):
        children = [self.best.child(self.space.sample_offset(self.rng), self.config.sigma) for _ in range(self.config.children)]
        return [EvaluationRequest(g, 1, "population") for g in [self.best] + children]

    def _tell(self, requests, results, means):
        winner = int(np.argmax(means))
        self.best, self.best_fitness = requests[winner].genome, float(means[winner])
        self._record_generation(means, self.best_fitness, self.best, len(requests))
        self._start_next_generation()

    phase = "population"
    elite = property(lambda self: self.best)

    def state_dict(self):
        return dict(self._common_state(), best=self.best.to_json(), best_fitness=self.best_fitness)

    def _load(self, state):
        self.best, self.best_fitness = Genome.from_json(state["best"]), state["best_fitness"]


def test_a_toy_strategy_and_evaluator_run_through_the_trainer_logs_and_monitor(tmp_path):
    evaluator = ToyEvaluator()
    trainer = Trainer(HillClimber(HillClimberConfig(), evaluator.space), evaluator, run_dir=str(tmp_path))
    monitor, events = RunMonitor(), trainer.events.subscribe()
    trainer.set(sigma=0.1)
    records = trainer.run(generations=4)
    monitor.apply(events.drain())
    assert [r.generation for r in records] == [0, 1, 2, 3] and trainer.frames == sum(r.frames for r in records) == 20
    assert records[-1].elite >= records[0].elite  # the hill climber never gets worse
    assert [r.hyperparameters["sigma"] for r in records] == [0.5, 0.1, 0.1, 0.1]  # from the next generation
    assert monitor.generations == [0, 1, 2, 3] and monitor.fitness["elite"] == [r.elite for r in records]
    assert monitor.latest_frame.score <= 0 and monitor.time_split["emulation"][0] > 0
    assert read_history(str(tmp_path)) == records  # the RunLogger wrote every record
    trainer.checkpoint()
    _, state = load_checkpoint(str(tmp_path))
    resumed = HillClimber.from_state(state["strategy"], evaluator.space)
    assert resumed.elite == trainer.strategy.elite and resumed.history == trainer.strategy.history
    assert trainer.snapshot().elite == trainer.strategy.elite and trainer.pending() == {}
    trainer.close()


@pytest.mark.parametrize("algorithm", ["ga", "es", "nsr-es"])
def test_run_directories_from_before_the_typed_records_resume_exactly(algorithm, tmp_path):
    """The fixtures were written by the workbench before GenerationRecord (free-form dict records); the expected
    next generation is what that workbench computed when it resumed them."""
    run_dir = str(tmp_path / algorithm)
    shutil.copytree(os.path.join(LEGACY, algorithm), run_dir)
    with open(os.path.join(LEGACY, "expected_continuation.json")) as f:
        expected = json.load(f)[algorithm]
    trainer = Trainer.resume_from(run_dir)
    assert [r.generation for r in trainer.history] == [0, 1, 2] and trainer.history[0].time_split
    record = trainer.run(generations=1)[0]
    trainer.close()
    for name, value in expected.items():
        assert getattr(record, name) == value, name
    assert [r.generation for r in read_history(run_dir)] == [0, 1, 2, 3]  # old lines read, new line appended


def test_a_run_directory_from_before_the_environment_families_resumes_as_it_ran(tmp_path):
    """Written by the workbench before the families and the resolver (CartPole-v1 with the old default cap of 20,000
    steps in its config.json): it keeps that cap, not Gymnasium's 500, and continues as that workbench continued it;
    a config.json without the fields the family now fills is read with the values it had when written."""
    run_dir = str(tmp_path / "run")
    shutil.copytree(os.path.join(LEGACY, "before_families"), run_dir)
    with open(os.path.join(LEGACY, "before_families", "expected_continuation.json")) as f:
        expected = json.load(f)
    trainer = Trainer.resume_from(run_dir)
    assert trainer.config.max_episode_frames == 20_000 and trainer.generation == 3
    record = trainer.run(generations=1)[0]
    trainer.close()
    assert {name: getattr(record, name) for name in expected} == expected
    old = {"env": "Hopper-v5", "algorithm": "es", "model": "mlp", "max_episode_frames": 1000}
    os.makedirs(tmp_path / "old")
    with open(tmp_path / "old" / "config.json", "w") as f:
        json.dump(old, f)
    config = RunConfig.from_run_dir(str(tmp_path / "old"))
    assert config.observation_normalization is None and config.model_options == {}  # not the family's (on, 64-64)
