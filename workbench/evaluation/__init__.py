"""Turning evaluation requests (genomes x episodes) into results on environment batches.

  Evaluator           sub-populations of episode slots, refilled as episodes end, run side by side so that
                      emulation and inference overlap; telemetry of where the time went
  SubPopulation       one environment batch and one model: the episode loop
  WeightSlots         which genome (or parent, in perturbed mode) each model slot holds
  behaviour_function  behaviour characterisations for novelty search ("final_ram", "final_observation", callables)
"""
from workbench.evaluation.behaviour import behaviour_function
from workbench.evaluation.evaluator import EvaluationCancelled, Evaluator, build_model
from workbench.evaluation.subpopulation import SubPopulation
from workbench.evaluation.telemetry import Telemetry
from workbench.evaluation.weight_slots import WeightSlots

__all__ = ["EvaluationCancelled", "Evaluator", "SubPopulation", "Telemetry", "WeightSlots", "behaviour_function", "build_model"]
