"""MLPModel: a population of multilayer perceptrons for vector observations (CartPole, Acrobot, MuJoCo tasks...)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from workbench.checks import check_positive_int
from workbench.models.layers import Dense
from workbench.models.population_model import PopulationModel


class MLPModel(PopulationModel):
    """Dense layers with ReLU (or tanh: activation="tanh") between them; input float32 [batch, observation_size].

    Discrete actions: num_actions outputs, act() = argmax. Continuous actions: action_range=(low, high)
    with one entry per action dimension; the num_actions argument is then the action size (the model's
    action_size; its num_actions property is None) and act() clips the outputs to the range (or
    squashes them onto it: action_scaling="tanh"). hidden_sizes=() is a linear policy (ARS).
    Keywords of PopulationModel (activation, observation_normalization, ...) pass through.
    """

    def __init__(
        self, observation_size: int, num_actions: int, hidden_sizes: Sequence[int] = (64, 64), slots: int = 1, **kwargs: Any
    ) -> None:
        check_positive_int("observation_size", observation_size)
        sizes = [check_positive_int("hidden_sizes entries", size) for size in hidden_sizes]
        layers = [Dense(f"dense{i + 1}", size) for i, size in enumerate(sizes)]
        layers.append(Dense("logits", check_positive_int("num_actions", num_actions)))
        super().__init__(layers, (observation_size,), slots, **kwargs)
