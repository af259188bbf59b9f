"""Warm starts: a new run whose policy starts where another run's elite is (its weights and observation statistics).

    source = "runs/humanoid-ars"                              # e.g. ARS that walks on open ground
    config = RunConfig.from_preset("pc", "es", env="HumanoidTrap-v5", init_from=source,
                                   **inherited_fields(source))  # the source's model and normalisation
    trainer = Trainer.from_config(config, run_dir="runs/trap-es")   # ES's center starts at the ARS policy

The weights are the source's newest elite (for ES, ARS, PGPE and novelty search: a center) and the
statistics are the source's observation statistics at that checkpoint; the new run keeps merging its own
states into them, as the source would have. For the weights to compute the same policy in the new run, the
model and its options, the parameter count, the observation size and the normalisation's clip and variance
floor must agree (a ValueError naming init_from says which does not); the fraction of episodes whose states
count may differ. Only strategies with a center start from weights (es, ns-es, nsr-es, ars, pgpe): the GA's
population is seed chains from random initialisations. A resumed run continues from its own checkpoint and
does not read the source again.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from workbench.checks import check_type
from workbench.evaluation.run_spec import RunSpec
from workbench.models.observation_normalization import ObservationNormalization, ObservationStatistics
from workbench.training.checkpoint import CheckpointError

INHERITED = ("model", "model_options", "observation_normalization")  # what fixes the function the weights compute


@dataclasses.dataclass(frozen=True)
class WarmStart:
    """A source run's elite as a starting point: weights float32 [n], the observation statistics (None without
    observation normalisation) and the generation whose elite it is."""

    run_dir: str
    weights: np.ndarray
    statistics: ObservationStatistics | None
    generation: int | None


def inherited_fields(run_dir: str) -> dict:
    """The RunConfig fields a warm start from `run_dir` needs to share with it: model, model_options and
    observation_normalization (pass them on to the new RunConfig)."""
    from workbench.training.run_config import RunConfig

    check_type("init_from", run_dir, str)
    source = RunConfig.from_run_dir(run_dir)
    return {name: getattr(source, name) for name in INHERITED}


def load_warm_start(run_dir: str, model: str, model_options: dict, spec: RunSpec) -> WarmStart:
    """The newest elite of `run_dir`, checked to compute the same policy in a run of `spec` with `model` and
    `model_options` (ValueError naming init_from otherwise; CheckpointError for a source that is not a run)."""
    from workbench.training.elites import load_elite

    check_type("init_from", run_dir, str)
    try:
        elite = load_elite(run_dir)
    except CheckpointError as error:
        raise ValueError(f"init_from {run_dir!r} is not a run directory with a checkpoint: {error}") from error
    source = elite.config
    if source.model != model or dict(source.model_options) != dict(model_options):
        raise ValueError(
            f"init_from {run_dir!r} trained model {source.model!r} with options {source.model_options}; "
            f"this run has {model!r} with {model_options}: give it the source's model "
            "(workbench.training.warm_start.inherited_fields)"
        )
    if elite.spec.observation_shape() != spec.observation_shape():
        raise ValueError(
            f"init_from {run_dir!r} observes {elite.spec.observation_shape()} ({source.env}); "
            f"this run's task observes {spec.observation_shape()} ({spec.env})"
        )
    size = spec.space().num_parameters
    if elite.space.num_parameters != size:
        raise ValueError(
            f"init_from {run_dir!r} has {elite.space.num_parameters} parameters ({source.env}); "
            f"this run's policy has {size} ({spec.env}): the action sizes differ"
        )
    _check_normalisation(run_dir, elite.spec.normalization, spec.normalization)
    weights = elite.decoder().decode(elite.genome)
    if not np.isfinite(weights).all():
        raise ValueError(f"init_from {run_dir!r}: its elite has non-finite weights")
    return WarmStart(run_dir, weights, elite.spec.observation_statistics, elite.generation)


def _check_normalisation(run_dir: str, source: ObservationNormalization | None, target: ObservationNormalization | None) -> None:
    if (source is None) != (target is None):
        has = "normalises" if source is not None else "does not normalise"
        raise ValueError(
            f"init_from {run_dir!r} {has} observations and this run "
            f"{'does not' if target is None else 'does'}: the weights would see other inputs; "
            "give this run the source's observation_normalization"
        )
    if (
        source is not None
        and target is not None
        and (source.clip, source.variance_floor)
        != (
            target.clip,
            target.variance_floor,
        )
    ):
        raise ValueError(
            f"init_from {run_dir!r} normalises observations with clip {source.clip} and variance floor "
            f"{source.variance_floor}, this run with {target.clip} and {target.variance_floor}: give "
            "this run the source's observation_normalization"
        )
