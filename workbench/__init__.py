"""Deep-neuroevolution workbench: evolve deep networks that play Atari on one computer.

Subpackages:
  workbench.ops     custom TensorFlow ops for a population of networks (and their
                    pure-TF references)
  workbench.models  population models (LargeModel, SmallModel, MLPModel)
  workbench.evolution  noise table, seed-chain genomes and the search algorithms (GA, ES,
                    novelty search) behind one ask/tell interface
  workbench.envs    environment batches: Atari games emulated inside TensorFlow ops
                    (AtariBatch) and Gymnasium environments (GymBatch)
  workbench.evaluation  the Evaluator: genomes x episodes -> returns, pipelined sub-populations
  workbench.training    the Trainer (background thread, events, logs, checkpoints), replays
  python -m workbench   the command line (workbench/cli.py)
"""

from __future__ import annotations

__version__ = "0.1.0"
