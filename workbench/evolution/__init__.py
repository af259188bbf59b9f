"""The search side: the shared noise table, seed-chain genomes and (next) the algorithms.

  NoiseTable     float32 N(0, 1) values from one seed, shared read-only per process
  Genome         (init, ((index, sigma), ...)) offsets into the table; JSON and compact bytes
  GenomeDecoder  genome -> float32 weights, with an LRU cache of materialised parents
"""
from workbench.evolution.genome import Genome, GenomeDecoder
from workbench.evolution.noise import DEFAULT_SEED, DEFAULT_SIZE, NoiseTable

__all__ = ["DEFAULT_SEED", "DEFAULT_SIZE", "Genome", "GenomeDecoder", "NoiseTable"]
