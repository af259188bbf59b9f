"""RunLogger: writes a run's generations to run_dir/history.jsonl and TensorBoard, as an event-bus listener.

    logger = RunLogger(run_dir)
    logger.attach(trainer.events)     # every "generation" event from now on is written before the trainer goes on
    logger.restart(history)           # the log holds exactly these records (a resume from a checkpoint)

history.jsonl has one GenerationRecord.to_json() object per line (pandas:
pd.read_json(path, lines=True)); TensorBoard gets the scalars in SCALARS per
generation under run_dir/tensorboard.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from workbench.evolution.records import TIME_SPLIT, GenerationRecord

if TYPE_CHECKING:
    from workbench.training.events import EventBus, Listener

SCALARS = (
    "max",
    "mean",
    "median",
    "elite",
    "frames_per_second",
    "busy_frames_per_second",
    "tail_seconds",
    "frames_total",
) + tuple(f"{name}_fraction" for name in TIME_SPLIT)


class RunLogger:
    """JSONL and TensorBoard logs of one run directory; see the module docstring."""

    def __init__(self, run_dir: str) -> None:
        self.run_dir = run_dir
        self.path = os.path.join(run_dir, "history.jsonl")
        self._tensorboard: Any = None  # a tf.summary writer, made on the first write (TensorFlow imported then)
        self._listener: Listener | None = None

    def attach(self, bus: EventBus) -> None:
        """Listens to bus's "generation" events (synchronously: a failed write fails the generation)."""
        self._listener = bus.listen(lambda event: self.write(event.data), kinds={"generation"})

    def detach(self) -> None:
        if self._listener is not None:
            self._listener.close()
            self._listener = None

    def write(self, record: GenerationRecord) -> None:
        data = record.to_json()
        with open(self.path, "a") as f:
            f.write(json.dumps(data) + "\n")
        import tensorflow as tf

        if self._tensorboard is None:
            self._tensorboard = tf.summary.create_file_writer(os.path.join(self.run_dir, "tensorboard"))
        with self._tensorboard.as_default(step=record.generation):
            for name in SCALARS:
                value = data.get(name)
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    tf.summary.scalar(name, value)
        self._tensorboard.flush()

    def restart(self, history: Iterable[GenerationRecord]) -> None:
        """Rewrites history.jsonl to hold exactly `history` (TensorBoard keeps its events; it shows the newest)."""
        with open(self.path, "w") as f:
            f.writelines(json.dumps(record.to_json()) + "\n" for record in history)

    def close(self) -> None:
        self.detach()
        if self._tensorboard is not None:
            self._tensorboard.close()
            self._tensorboard = None


def read_history(run_dir: str) -> list[GenerationRecord]:
    """The GenerationRecords of run_dir/history.jsonl (ValueError naming the line when one is corrupt)."""
    path = os.path.join(run_dir, "history.jsonl")
    records = []
    with open(path) as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                records.append(GenerationRecord.from_json(json.loads(line)))
            except (json.JSONDecodeError, ValueError, TypeError) as error:
                raise ValueError(f"{path} line {number} is not a generation record: {error}") from error
    return records
