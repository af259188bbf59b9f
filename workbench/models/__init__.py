"""Population models: networks whose variables have a leading slot (population member) dimension."""

from __future__ import annotations

from typing import TYPE_CHECKING

from workbench.lazy_exports import lazy_exports

if TYPE_CHECKING:  # the public names; each loads with its submodule on first use (workbench/lazy_exports.py)
    from workbench.models.atari import ATARI_INPUT_SHAPE, LargeModel, SmallModel
    from workbench.models.layers import Conv2D, Dense
    from workbench.models.mlp import MLPModel
    from workbench.models.observation_normalization import ObservationNormalization, ObservationStatistics
    from workbench.models.population_model import PopulationModel

__all__ = [
    "ATARI_INPUT_SHAPE",
    "Conv2D",
    "Dense",
    "LargeModel",
    "MLPModel",
    "ObservationNormalization",
    "ObservationStatistics",
    "PopulationModel",
    "SmallModel",
]

__getattr__ = lazy_exports(__name__)
