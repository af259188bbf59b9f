"""The ask/tell protocol shared by every search strategy, and the hyperparameter audit trail.

A strategy never runs environments. Each round it is asked for evaluations and
told their results, until a generation ends:

    while not done:
        requests = strategy.ask()                   # [EvaluationRequest]
        returns = [evaluate(r.genome, r.episodes) for r in requests]   # one list of returns each
        strategy.tell(returns)                      # may end the generation

The objective is maximised; a NaN return counts as the worst possible.
Hyperparameters change between generations through set(): validated at once,
applied when the next generation starts, recorded with that generation number.
"""
import dataclasses
import math

import numpy as np


@dataclasses.dataclass(frozen=True)
class EvaluationRequest:
    """Evaluate `genome` for `episodes` episodes; `role` says why ("population", "elite candidate")."""

    genome: object
    episodes: int
    role: str


def fitness_value(value):
    """A finite float for ranking: NaN becomes -inf (the worst)."""
    value = float(value)
    return -math.inf if math.isnan(value) else value


def mean_return(returns):
    """Mean of one request's returns with NaN as the worst (any NaN makes the mean -inf)."""
    values = [fitness_value(v) for v in np.atleast_1d(np.asarray(returns, np.float64))]
    if not values:
        raise ValueError("a request's returns must not be empty")
    return -math.inf if any(v == -math.inf for v in values) else float(np.mean(values))


def check_returns(returns, requests):
    """One non-empty list of returns per request, with the requested number of episodes."""
    if len(returns) != len(requests):
        raise ValueError(f"tell() needs one result per request: {len(requests)} asked, {len(returns)} given")
    checked = []
    for k, (result, request) in enumerate(zip(returns, requests)):
        values = np.atleast_1d(np.asarray(result, np.float64))
        if values.ndim != 1 or values.size != request.episodes:
            raise ValueError(f"returns[{k}] must hold {request.episodes} episode returns, got shape {values.shape}")
        checked.append(values)
    return checked


class HyperparameterLog:
    """Pending changes (applied at the next generation) and the audit trail of applied ones."""

    def __init__(self):
        self.pending = {}
        self.trail = []  # [{"generation": g, "name": value, ...}] in order

    def request(self, changes):
        self.pending.update(changes)

    def apply(self, config, generation, validate):
        """The config with the pending changes (validated again), recorded under `generation`."""
        if not self.pending:
            return config
        config = validate(dataclasses.replace(config, **self.pending))
        self.trail.append(dict(generation=generation, **self.pending))
        self.pending = {}
        return config

    def state(self):
        return {"pending": dict(self.pending), "trail": [dict(entry) for entry in self.trail]}

    def load(self, state):
        self.pending = dict(state["pending"])
        self.trail = [dict(entry) for entry in state["trail"]]
