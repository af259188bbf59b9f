"""MAP-Elites (Mouret & Clune 2015): an archive of the best genome for every kind of behaviour, ask/tell.

The descriptor space (declared bounds, one (low, high) pair per dimension: `descriptor_bounds`, which a run fills
from its descriptor's declaration) is divided into cells by a grid archive (`cells` per dimension) or a CVT
archive (`cells` in all; centroids by k-means, fixed by the bounds and the cell count); workbench.evolution.archive
holds the elites. A generation is one "population" round:

  generation 0: initial_population random genomes (seed-chain initialisations, as the Deep GA's; again,
                population_size of them, while every candidate so far was rejected and the archive is empty);
  later:        population_size children of elites drawn uniformly from the archive, by the `variation`:
                "gaussian": the parent plus sigma times a noise slice (a seed chain one mutation longer);
                "iso_line": Iso+LineDD (Vassiliades & Mouret 2018), of two parents x_a and x_b,
                x_a + line_sigma N(0, 1) (x_b - x_a) + sigma eps: a LineChild node (workbench.evolution.lineage)
                of its two parents, shipped to the evaluator as one mutation on a dense base (x_a + alpha
                (x_b - x_a), which bases() holds for the round: 4 n bytes a child; on a million-parameter network
                the Gaussian variation ships seeds only).

Descriptors, rejected candidates and the archive's figures in the records: workbench.evolution.quality_diversity.
Records: the batch's fitness statistics; the elite is the archive's best; extras qd_score (objectives minus
qd_score_offset, summed), coverage, archive_size, new_cells (cells the generation filled), improved_cells (cells
whose elite it replaced), rejected. A cell's genome is a seed chain or a lineage node (a few bytes per mutation
and two parent references), never a dense weight vector; the checkpoint writes them as one lineage table.
"""

from __future__ import annotations

import dataclasses

from workbench.checks import check_int, check_real
from workbench.evolution import lineage
from workbench.evolution.genome import Genome
from workbench.evolution.hyperparameters import hyperparameter
from workbench.evolution.lineage import LineageDecoder, LineChild, Node
from workbench.evolution.quality_diversity import ArchiveSearch, ArchiveSettings
from workbench.evolution.space import ParameterSpace
from workbench.evolution.strategy import EvaluationRequest

VARIATIONS = ("gaussian", "iso_line")


@dataclasses.dataclass(frozen=True)
class MapElitesConfig(ArchiveSettings):
    """MAP-Elites hyperparameters. The archive's shape (ArchiveSettings: archive, cells, descriptor_bounds,
    qd_score_offset) is fixed for a run: set() refuses to change it."""

    population_size: int = hyperparameter(
        100, "population size", "children per generation (after generation 0)", scale="int", low=1, high=2000
    )
    initial_population: int = hyperparameter(
        100, "initial population", "random genomes in generation 0 (no slider: it counts when the run starts)", scale="int"
    )
    sigma: float = hyperparameter(
        0.005, "mutation power σ", "the noise scale of a child (iso_line: σ_iso)", scale="log", low=1e-4, high=1.0
    )
    variation: str = hyperparameter(
        "gaussian", "variation", '"gaussian" (parent + σ noise) or "iso_line" (Iso+LineDD: + line_sigma N(0,1) (x_b - x_a))'
    )
    line_sigma: float = hyperparameter(
        0.05, "line σ", "Iso+LineDD's step along the line between the two parents", scale="log", low=1e-3, high=1.0
    )
    episodes_per_member: int = hyperparameter(1, "episodes per member", "episodes of each member", scale="int")

    def validated(self) -> MapElitesConfig:
        self._validated_archive()
        check_int("population_size", self.population_size, 1)
        check_int("initial_population", self.initial_population, 1)
        check_real("sigma", self.sigma, 0, low_open=True)
        if self.variation not in VARIATIONS:
            raise ValueError(f"variation must be one of {VARIATIONS}, got {self.variation!r}")
        check_real("line_sigma", self.line_sigma, 0)
        check_int("episodes_per_member", self.episodes_per_member, 1)
        return self

    @classmethod
    def tutorial(cls) -> MapElitesConfig:
        return cls(population_size=32, initial_population=64, sigma=0.05, cells=16)


class MapElites(ArchiveSearch):
    """MAP-Elites on a ParameterSpace; `seed` drives the initial genomes, the parents drawn and every mutation."""

    kind = "MapElites"
    config_class = MapElitesConfig

    def __init__(self, config: MapElitesConfig, space: ParameterSpace, seed: int = 0) -> None:
        super().__init__(config, space, seed)
        self.batch: list[Node] | None = None  # this generation's genomes (seed chains or lineage nodes), once asked
        self.decoder = LineageDecoder(space)  # the archive's lineage nodes: parents of line children, the elite
        self._shipped_round: tuple[list[Genome], dict] | None = None  # the batch as the evaluator gets it, its bases

    # -- ask/tell -------------------------------------------------------------------------
    def _ask(self):
        config = self.config
        if self.batch is None:  # drawn once per generation and kept in the state until told
            if self.generation == 0 or self.archive.size == 0:
                count = config.initial_population if self.generation == 0 else config.population_size
                self.batch = [Genome(self.space.sample_offset(self.rng)) for _ in range(count)]
            elif config.variation == "gaussian":
                parents = [self.archive.genomes[int(cell)] for cell in self.archive.sample(self.rng, config.population_size)]
                self.batch = [self._mutated(parent, self.space.sample_offset(self.rng)) for parent in parents]
            else:
                pairs = self.archive.sample(self.rng, 2 * config.population_size).reshape(config.population_size, 2)
                steps = config.line_sigma * self.rng.normal(size=config.population_size)
                self.batch = [
                    LineChild(
                        self.archive.genomes[int(a)],
                        self.archive.genomes[int(b)],
                        float(step),
                        self.space.sample_offset(self.rng),
                        config.sigma,
                    )
                    for (a, b), step in zip(pairs, steps)
                ]
            self._shipped_round = None
        genomes, _ = self._shipped_batch()
        return [EvaluationRequest(g, config.episodes_per_member, "population", behaviour=True) for g in genomes]

    def _mutated(self, parent: Node, offset: int) -> Node:
        """parent + sigma slice(offset): a seed chain one mutation longer, or a line child of the parent with
        itself (alpha 0) when the parent is a lineage node."""
        if isinstance(parent, Genome):
            return parent.child(offset, self.config.sigma)
        return LineChild(parent, parent, 0.0, offset, self.config.sigma)

    def _shipped(self, genome: Node) -> tuple[Genome, dict]:
        return self.decoder.shipped(genome)

    def _shipped_batch(self) -> tuple[list[Genome], dict]:
        """The batch's genomes as evaluators decode them, and the dense bases they need (line children's)."""
        if self._shipped_round is None:
            genomes, bases = [], {}
            for node in self.batch or []:
                genome, node_bases = self.decoder.shipped(node)
                genomes.append(genome)
                bases.update(node_bases)
            self._shipped_round = (genomes, bases)
        return self._shipped_round

    def _tell(self, requests, results, means):
        objectives, descriptors = self._candidates(results, means)
        added = self.archive.add(list(self.batch or []), objectives, descriptors, self.generation)
        self._record_archive_generation(requests, means, added)
        self.batch, self._shipped_round = None, None
        self._start_next_generation()

    def bases(self) -> dict:
        """The dense bases of the round's line children (none for Gaussian children)."""
        return dict(self._shipped_batch()[1]) if self.batch is not None else {}

    # -- state ----------------------------------------------------------------------------
    def state_dict(self) -> dict:
        """The common state, the archive (its cells' genomes as indices into the lineage table) and the asked batch."""
        cells = self.archive.occupied_cells()
        roots = [self.archive.genomes[int(c)] for c in cells] + list(self.batch or [])
        table = lineage.to_json(roots)
        index = {id(root): position for root, position in zip(roots, table["roots"])}
        archive = self.archive.state_dict(encode=lambda genome: index[id(genome)])
        batch = None if self.batch is None else [index[id(node)] for node in self.batch]
        return dict(self._common_state(), lineage=dict(table, roots=[]), archive=archive, batch=batch)

    def _load(self, state):
        nodes = lineage.nodes_from_json(state["lineage"])

        def node(position):
            if isinstance(position, bool) or not isinstance(position, int) or not 0 <= position < len(nodes):
                raise ValueError(f"corrupt {self.kind} state: lineage index {position!r} of {len(nodes)} nodes")
            return nodes[position]

        self.archive.load_state(state["archive"], decode=node)
        self.batch = None if state["batch"] is None else [node(position) for position in state["batch"]]
