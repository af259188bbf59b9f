"""The search side: the shared noise table, seed-chain genomes and the search strategies.

  NoiseTable        float32 N(0, 1) values from one seed, shared read-only per process
  Genome            (init, ((index, sigma), ...)) offsets into the table; JSON and compact bytes
  GenomeDecoder     genome -> float32 weights, with an LRU cache of materialised parents
  GeneticAlgorithm  the Deep GA and random search (GAConfig), through ask/tell (strategy.py)

Still to come (issue 4): OpenAI-ES, NS-ES / NSR-ES, low-rank mutations.
"""
from workbench.evolution.ga import GAConfig, GeneticAlgorithm
from workbench.evolution.genome import Genome, GenomeDecoder
from workbench.evolution.noise import DEFAULT_SEED, DEFAULT_SIZE, NoiseTable
from workbench.evolution.space import ParameterSpace
from workbench.evolution.strategy import EvaluationRequest

__all__ = [
    "DEFAULT_SEED",
    "DEFAULT_SIZE",
    "EvaluationRequest",
    "GAConfig",
    "GeneticAlgorithm",
    "Genome",
    "GenomeDecoder",
    "NoiseTable",
    "ParameterSpace",
]
