"""Deep-neuroevolution workbench: evolve deep networks that play Atari on one computer.

Subpackages:
  workbench.ops     custom TensorFlow ops for a population of networks (and their
                    pure-TF references)
  workbench.models  population models (LargeModel, SmallModel, MLPModel)
  workbench.evolution  noise table and seed-chain genomes (the algorithms come next)
  workbench.envs    environment batches: Atari games emulated inside TensorFlow ops
                    (AtariBatch) and Gymnasium environments (GymBatch)
"""

__version__ = "0.1.0"
