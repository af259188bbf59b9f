"""MLPModel: a population of multilayer perceptrons for vector observations (CartPole, Acrobot...)."""
from workbench.models.layers import Dense
from workbench.models.population_model import PopulationModel, positive_int


class MLPModel(PopulationModel):
    """Dense layers with ReLU between them; input float32 [batch, observation_size]."""

    def __init__(self, observation_size, num_actions, hidden_sizes=(64, 64), slots=1, **kwargs):
        positive_int(observation_size, "observation_size")
        sizes = [positive_int(size, "hidden_sizes entries") for size in hidden_sizes]
        layers = [Dense(f"dense{i + 1}", size) for i, size in enumerate(sizes)]
        layers.append(Dense("logits", positive_int(num_actions, "num_actions")))
        super().__init__(layers, (observation_size,), slots, **kwargs)
