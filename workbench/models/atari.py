"""The Deep GA networks for Atari (Such et al. 2017), input uint8 [84, 84, 4], SAME padding."""

from __future__ import annotations

from typing import Any

from workbench.checks import check_choice, check_positive_int
from workbench.models.layers import FLATTEN_ORDERS, Conv2D, Dense
from workbench.models.population_model import PopulationModel

ATARI_INPUT_SHAPE = (84, 84, 4)
# flatten: the order in which the last convolution's maps enter the dense layer (workbench.models.layers):
# "channels_first" (the default: faster, its zero inputs come in runs) or "channels_last" (TensorFlow's
# reshape of NHWC: the order of the runs saved before the option existed).
DEFAULT_FLATTEN = "channels_first"


class LargeModel(PopulationModel):
    """Nature-DQN-like: conv 32@8x8/4, 64@4x4/2, 64@3x3/1, dense 512, dense n (4,052,658 at 18)."""

    def __init__(self, num_actions: int = 18, slots: int = 1, flatten: str = DEFAULT_FLATTEN, **kwargs: Any) -> None:
        layers = [
            Conv2D("conv1", 32, 8, 4),
            Conv2D("conv2", 64, 4, 2),
            Conv2D("conv3", 64, 3, 1),
            Dense("dense", 512, flatten=check_choice("flatten", flatten, FLATTEN_ORDERS)),
            Dense("logits", check_positive_int("num_actions", num_actions)),
        ]
        super().__init__(layers, ATARI_INPUT_SHAPE, slots, **kwargs)


class SmallModel(PopulationModel):
    """A3C-like: conv 16@8x8/4, 32@4x4/2, dense 256, dense n (1,008,450 at 18)."""

    def __init__(self, num_actions: int = 18, slots: int = 1, flatten: str = DEFAULT_FLATTEN, **kwargs: Any) -> None:
        layers = [
            Conv2D("conv1", 16, 8, 4),
            Conv2D("conv2", 32, 4, 2),
            Dense("dense", 256, flatten=check_choice("flatten", flatten, FLATTEN_ORDERS)),
            Dense("logits", check_positive_int("num_actions", num_actions)),
        ]
        super().__init__(layers, ATARI_INPUT_SHAPE, slots, **kwargs)
