"""Turning evaluation requests (genomes x episodes) into results on environment batches.

BaseEvaluator       the interface every evaluator has: spec, space, evaluate, telemetry, episode cap,
                    frame listeners, close (base.py)
RunSpec             environment, model, episode cap and noise table: builds batches, models and spaces
EvaluatorLayout     how an evaluator arranges its work: sub-populations, slots, perturbed mode, ... (layout.py)
Evaluator           sub-populations of episode slots, refilled as episodes end, run side by side so that
                    emulation and inference overlap; telemetry of where the time went
RayEvaluator        the same interface on Ray actors (workbench.evaluation.ray_evaluator; needs ray)
FunctionEvaluator   genomes on a function problem (workbench.envs.function): decoded, stacked, the objective called
make_evaluator      the local evaluator of a RunSpec: Evaluator, or the one its family names (factory.py)
SubPopulation       one environment batch and one model: the episode loop (its collaborators: observation_source,
                    observation_sums, low_rank_factors, action_noise, frame_stream, jobs)
EpisodeLengths      which episodes start first (the longest expected), so rounds end with short tails
WeightSlots         which genome (or parent, in perturbed mode) each model slot holds
Telemetry           frames and seconds per category (TIME_SPLIT) of an evaluation
behaviour_function  behaviour characterisations for novelty search and quality diversity ("final_ram", "feet_contact",
                    callables); Behaviour and register_behaviour declare one with its descriptor bounds
tune_allocator      glibc keeps freed megabyte buffers for reuse instead of returning them (allocator.py)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from workbench.lazy_exports import lazy_exports

if TYPE_CHECKING:  # the public names; each loads with its submodule on first use (workbench/lazy_exports.py)
    from workbench.evaluation.base import BaseEvaluator, EvaluationCancelled
    from workbench.evaluation.behaviour import Behaviour, behaviour_function, register_behaviour
    from workbench.evaluation.evaluator import Evaluator
    from workbench.evaluation.factory import make_evaluator
    from workbench.evaluation.function_evaluator import FunctionEvaluator
    from workbench.evaluation.layout import EvaluatorLayout
    from workbench.evaluation.ray_evaluator import RayEvaluator
    from workbench.evaluation.run_spec import MODELS, RunSpec, build_model
    from workbench.evaluation.subpopulation import SubPopulation
    from workbench.evaluation.telemetry import TIME_SPLIT, Telemetry
    from workbench.evaluation.weight_slots import WeightSlots

__all__ = [
    "BaseEvaluator",
    "Behaviour",
    "EvaluationCancelled",
    "Evaluator",
    "FunctionEvaluator",
    "EvaluatorLayout",
    "MODELS",
    "RayEvaluator",
    "RunSpec",
    "SubPopulation",
    "TIME_SPLIT",
    "Telemetry",
    "WeightSlots",
    "behaviour_function",
    "register_behaviour",
    "build_model",
    "make_evaluator",
]

__getattr__ = lazy_exports(__name__)
