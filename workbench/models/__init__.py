"""Population models: networks whose variables have a leading slot (population member) dimension."""

from __future__ import annotations

from workbench.models.atari import ATARI_INPUT_SHAPE, LargeModel, SmallModel
from workbench.models.layers import Conv2D, Dense
from workbench.models.mlp import MLPModel
from workbench.models.population_model import PopulationModel

__all__ = ["ATARI_INPUT_SHAPE", "Conv2D", "Dense", "LargeModel", "MLPModel", "PopulationModel", "SmallModel"]
