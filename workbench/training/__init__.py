"""Training runs: the trainer (foreground or background thread), its event stream, run configs, checkpoints.

Trainer          generations of a strategy on an evaluator; start/pause/resume/stop, live set(), history,
                 JSONL and TensorBoard logs, checkpoints, resume_from(run_dir)
RunConfig        what defines a run, as JSON-able data
EventBus         publish/subscribe that never blocks the trainer
save_checkpoint / load_checkpoint   JSON + npz, atomic, versioned
evaluate_run / score_run   an elite on fresh test episodes / a whole run scored three ways (run_scores.py)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from workbench.lazy_exports import lazy_exports

if TYPE_CHECKING:  # the public names; each loads with its submodule on first use (workbench/lazy_exports.py)
    from workbench.evolution.registry import ALGORITHMS
    from workbench.training.checkpoint import CheckpointError, list_checkpoints, load_checkpoint, save_checkpoint
    from workbench.training.events import Event, EventBus
    from workbench.training.replay import replay_run
    from workbench.training.run_config import RunConfig
    from workbench.training.run_lock import RunInUseError
    from workbench.training.run_scores import score_run
    from workbench.training.scoring import evaluate_run
    from workbench.training.trainer import Trainer, TrainerError

__all__ = [
    "ALGORITHMS",
    "CheckpointError",
    "Event",
    "EventBus",
    "RunConfig",
    "RunInUseError",
    "Trainer",
    "TrainerError",
    "evaluate_run",
    "list_checkpoints",
    "load_checkpoint",
    "replay_run",
    "save_checkpoint",
    "score_run",
]

__getattr__ = lazy_exports(__name__)
