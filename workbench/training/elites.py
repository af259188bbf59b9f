"""The elite of a run directory: its genome, the dense bases it needs, and the run's spec, from the newest checkpoint.

    elite = load_elite("runs/demo", generation=None)   # the newest elite; or the elite of generation 3
    elite.genome, elite.spec, elite.decoder()          # what replays and scoring need

For the strategies with a center (ES, ARS, PGPE, the CMA family, novelty search) the elite
is a center: a checkpoint keeps the current one and the one its last generation played
(Strategy.elite_bases), so the elites of earlier generations of those runs cannot be
rebuilt (a clear error says so).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from workbench.evaluation.run_spec import RunSpec
from workbench.evolution import Genome, GenomeDecoder, algorithm_spec
from workbench.evolution.records import GenerationRecord
from workbench.evolution.space import ParameterSpace
from workbench.models.observation_normalization import ObservationStatistics
from workbench.training.checkpoint import CheckpointError, load_checkpoint
from workbench.training.run_config import RunConfig


@dataclasses.dataclass(frozen=True)
class RunElite:
    """An elite of a run: `generation` is the generation it was elite of (None: none finished yet)."""

    run_dir: str
    config: RunConfig
    spec: RunSpec
    space: ParameterSpace
    genome: Genome
    bases: dict
    generation: int | None
    history: list

    def of_generation(self, generation: int) -> RunElite:
        """The elite of `generation` of the same run (its genome from the history; the bases, spec and history
        shared): ValueError when the generation is not in the history, recorded no elite, or its elite is an ES
        center the checkpoint no longer holds."""
        if isinstance(generation, bool) or not isinstance(generation, int):
            raise ValueError(f"generation must be an integer, got {generation!r}")
        matches = [r for r in self.history if r.generation == generation]
        if not matches:
            last = self.history[-1].generation if self.history else -1
            raise ValueError(f"generation must be one of 0..{last}, got {generation!r}")
        elite_genome = matches[0].elite_genome
        if elite_genome is None:
            raise ValueError(f"generation {generation} of {self.run_dir} recorded no elite")
        genome = Genome.from_json(elite_genome)
        if genome.has_base and genome.init not in self.bases:
            raise ValueError(
                f"generation {generation}'s elite is an ES center the checkpoint no longer holds; "
                "only the newest centers are kept (leave out the generation)"
            )
        return dataclasses.replace(self, genome=genome, generation=generation)

    def decoder(self) -> GenomeDecoder:
        """A decoder holding the bases the genome starts from."""
        decoder = GenomeDecoder(self.space)
        for key, weights in self.bases.items():
            decoder.add_base(key, np.asarray(weights, np.float32))
        return decoder


def load_elite(run_dir: str, generation: int | None = None) -> RunElite:
    """The elite of `generation` of a run directory (None: the strategy's current elite).

    ValueError when the run has no elite yet, the generation is not in its history, or the
    elite is an ES center the checkpoint no longer holds; CheckpointError for a corrupt run.
    """
    config = RunConfig.from_run_dir(run_dir)
    _, state = load_checkpoint(run_dir)
    spec = config.spec()
    if state.get("reference_batch") is not None:  # virtual batch normalisation: the run's own reference batch
        spec = dataclasses.replace(spec, reference_batch=state["reference_batch"])
    if spec.normalization is not None:  # observation normalisation: the run's statistics at its checkpoint
        observations = state.get("observations")
        if observations is None:
            raise CheckpointError(f"the checkpoint of {run_dir} lacks the run's observation statistics")
        try:
            statistics = ObservationStatistics.from_state(observations["statistics"])
        except (KeyError, TypeError, ValueError) as error:
            raise CheckpointError(f"the checkpoint of {run_dir} has corrupt observation statistics: {error}") from error
        spec = spec.with_observation_statistics(statistics)
    space = spec.space()
    strategy = algorithm_spec(config.algorithm).strategy.from_state(state["strategy"], space)
    bases = strategy.elite_bases()
    history = [GenerationRecord.from_json(record) for record in state["history"]]
    if strategy.elite is None:
        raise ValueError(f"{run_dir} has no elite yet (no finished generation)")
    newest = RunElite(run_dir, config, spec, space, strategy.elite, bases, history[-1].generation if history else None, history)
    return newest if generation is None else newest.of_generation(generation)
