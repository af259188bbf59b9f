"""A toy algorithm, added the way a new one is: a config dataclass with described fields, a Strategy, and one
registration. The registry tests and the strategy contract run on it (registered only while they do)."""

import contextlib
import dataclasses

from workbench.checks import check_real
from workbench.evolution import AlgorithmSpec, GAConfig, GeneticAlgorithm, register
from workbench.evolution.hyperparameters import hyperparameter
from workbench.evolution.registry import unregister

NAME = "toy"


@dataclasses.dataclass(frozen=True)
class ToyConfig(GAConfig):
    population_size: int = hyperparameter(24, "population size", "members per generation", scale="int", low=2, high=100)
    boldness: float = hyperparameter(
        1.0, "boldness", "a setting of the toy's own (it changes nothing)", scale="log", low=0.1, high=10.0, step=0.1
    )

    def validated(self):
        check_real("boldness", self.boldness, 0, low_open=True)
        return super().validated()


class ToySearch(GeneticAlgorithm):
    kind = "ToySearch"
    config_class = ToyConfig


@contextlib.contextmanager
def toy_registered():
    register(AlgorithmSpec(NAME, ToySearch, ToyConfig, "a toy: the GA with a boldness", preset_group="ga"))
    try:
        yield NAME
    finally:
        unregister(NAME)
