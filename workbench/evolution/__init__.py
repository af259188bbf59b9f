"""The search side: the shared noise table, seed-chain genomes and the search strategies.

  NoiseTable         float32 N(0, 1) values from one seed, shared read-only per process
  ParameterSpace     how offsets become initial weights and (full- or low-rank) mutations of one architecture
  Genome             (init, ((index, sigma, rank), ...)); init is an offset or a dense base's key; JSON and bytes
  GenomeDecoder      genome -> float32 weights, with an LRU cache of materialised parents and the dense bases
  GeneticAlgorithm   the Deep GA and random search (GAConfig)
  EvolutionStrategy  OpenAI-ES (ESConfig): mirrored sampling, centered ranks, Adam, L2
  NoveltySearchES    NS-ES and NSR-ES (NoveltyConfig): archive, k-nearest novelty, meta-population
  AugmentedRandomSearch  ARS V1 / V2 / V1-t / V2-t (ARSConfig): top-b directions, reward-std scaling
  PGPE               PGPE with ClipUp (PGPEConfig): learned per-parameter sigma, normalised momentum steps
  CMAES, SepCMAES    CMA-ES (full covariance) and sep-CMA-ES (diagonal) (CMAConfig); their update in cma_update.py
  SNES, CEM          separable NES (SNESConfig) and the cross-entropy method (CEMConfig), diagonal Gaussians
  XNES               xNES (CMAConfig): a full covariance by natural gradients, for a few thousand parameters
  CRFMNES            CR-FM-NES (CRFMNESConfig): diagonal plus rank-one covariance, for a million parameters
  MapElites          MAP-Elites (MapElitesConfig): an archive of the best genome per descriptor cell; Gaussian or
                     Iso+LineDD variation (lineage.py: children of two parents as graph nodes, not dense vectors)
  CMAME              CMA-ME and CMA-MAE (CMAMEConfig): CMA-ES emitters ranked by archive improvement, restarts,
                     CMA-MAE's soft thresholds
  GridArchive, CVTArchive  quality-diversity archives (archive.py), equal to pyribs's insertion by insertion
  Strategy           the interface (and bookkeeping) they share: ask/tell, elite, bases, set, state
  GenerationRecord   one generation's typed record, with its JSON form
  ALGORITHMS         the registry: one AlgorithmSpec per name (strategy, config, defaults, traits)

Every strategy speaks the ask/tell protocol of strategy.py and holds no environment code.
"""

from __future__ import annotations

from workbench.evolution.archive import CVTArchive, GridArchive
from workbench.evolution.ars import ARSConfig, AugmentedRandomSearch
from workbench.evolution.cem import CEM, CEMConfig
from workbench.evolution.cma_es import CMAES, CMAConfig, SepCMAES
from workbench.evolution.cma_me import CMAME, CMAMEConfig
from workbench.evolution.crfmnes import CRFMNES, CRFMNESConfig
from workbench.evolution.es import ESConfig, EvolutionStrategy
from workbench.evolution.ga import GAConfig, GeneticAlgorithm
from workbench.evolution.genome import Genome, GenomeDecoder, base_key
from workbench.evolution.map_elites import MapElites, MapElitesConfig
from workbench.evolution.noise import DEFAULT_SEED, DEFAULT_SIZE, NoiseTable
from workbench.evolution.novelty import NoveltyConfig, NoveltySearchES
from workbench.evolution.pgpe import PGPE, PGPEConfig
from workbench.evolution.records import TIME_SPLIT, GenerationRecord
from workbench.evolution.registry import ALGORITHMS, AlgorithmSpec, algorithm_names, algorithm_spec, register
from workbench.evolution.snes import SNES, SNESConfig
from workbench.evolution.space import ParameterSpace
from workbench.evolution.strategy import EvaluationRequest, EvaluationResult, Strategy, centered_ranks
from workbench.evolution.xnes import XNES

__all__ = [
    "ALGORITHMS",
    "ARSConfig",
    "AlgorithmSpec",
    "CEM",
    "CEMConfig",
    "CMAConfig",
    "CMAES",
    "CRFMNES",
    "CRFMNESConfig",
    "CVTArchive",
    "AugmentedRandomSearch",
    "DEFAULT_SEED",
    "DEFAULT_SIZE",
    "ESConfig",
    "EvaluationRequest",
    "EvaluationResult",
    "EvolutionStrategy",
    "GAConfig",
    "GenerationRecord",
    "GeneticAlgorithm",
    "Genome",
    "GenomeDecoder",
    "GridArchive",
    "MapElites",
    "CMAME",
    "CMAMEConfig",
    "MapElitesConfig",
    "NoiseTable",
    "NoveltyConfig",
    "NoveltySearchES",
    "PGPE",
    "PGPEConfig",
    "ParameterSpace",
    "SNES",
    "SNESConfig",
    "SepCMAES",
    "XNES",
    "Strategy",
    "TIME_SPLIT",
    "algorithm_names",
    "algorithm_spec",
    "base_key",
    "centered_ranks",
    "register",
]
