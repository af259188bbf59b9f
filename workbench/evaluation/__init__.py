"""Turning evaluation requests (genomes x episodes) into results on environment batches.

  BatchedLoopEvaluator  a plain synchronous loop: one episode per model slot, refilled as episodes end
  behaviour_function    behaviour characterisations for novelty search ("final_ram", "final_observation", callables)
"""
from workbench.evaluation.behaviour import behaviour_function
from workbench.evaluation.batched_loop import BatchedLoopEvaluator

__all__ = ["BatchedLoopEvaluator", "behaviour_function"]
