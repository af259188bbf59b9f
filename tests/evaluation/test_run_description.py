"""One description of a run: the EvaluatorLayout both evaluators take (its checks name the field, unknown
keywords are refused), and the values a process works out once per RunSpec kept in a cache keyed by the
spec's fields, never on the frozen spec."""

import dataclasses
import pickle

import numpy as np
import pytest

from workbench.evaluation import Evaluator, EvaluatorLayout, RunSpec
from workbench.evolution import EvaluationRequest, Genome
from workbench.training import RunConfig

NOISE = dict(noise_size=2**16, noise_seed=5)


@pytest.mark.parametrize(
    "field, value, error",
    [
        ("subpopulations", 0, ValueError),
        ("slots", 1.5, ValueError),
        ("perturbed_rank", -1, ValueError),
        ("action_noise", -0.1, ValueError),
        ("cache_bytes", -1, ValueError),
        ("longest_first", "yes", TypeError),
    ],
)
def test_a_bad_layout_field_is_named(field, value, error):
    with pytest.raises(error, match=field):
        EvaluatorLayout(**{field: value})


def test_unknown_layout_keywords_are_refused_with_the_known_ones():
    spec = RunSpec("CartPole-v1", "mlp", **NOISE)
    with pytest.raises(TypeError, match=r"\['slot'\].*subpopulations"):
        Evaluator.from_spec(spec, slot=4)
    with pytest.raises(TypeError, match="a layout and the layout keywords"):
        Evaluator.from_spec(spec, EvaluatorLayout(), slots=4)
    with pytest.raises(TypeError, match="layout"):
        Evaluator.from_spec(spec, dict(slots=4))


def test_the_layout_and_its_keywords_build_the_same_evaluator_as_a_run_config():
    config = RunConfig(env="CartPole-v1", model="mlp", subpopulations=1, slots=3, **NOISE)
    assert config.layout() == EvaluatorLayout(subpopulations=1, slots=3)
    spec, requests = config.spec(), None
    returns = []
    for make in (
        lambda: Evaluator.from_spec(spec, config.layout()),
        lambda: Evaluator.from_spec(spec, subpopulations=1, slots=3),
    ):
        with make() as evaluator:
            assert evaluator.layout == config.layout()
            if requests is None:
                rng = np.random.default_rng(0)
                requests = [EvaluationRequest(Genome(evaluator.space.sample_offset(rng)), 2, "population") for _ in range(3)]
            returns.append([r.returns for r in evaluator.evaluate(requests, seed=4)])
    np.testing.assert_array_equal(returns[0], returns[1])


def test_equal_specs_share_their_space_and_a_spec_carries_nothing_built():
    spec = RunSpec("CartPole-v1", "mlp", model_options=dict(hidden_sizes=[8]), **NOISE)
    space = spec.space()
    assert RunSpec("CartPole-v1", "mlp", model_options=dict(hidden_sizes=[8]), **NOISE).space() is space
    assert spec.with_max_episode_frames(50).space() is space  # the cap does not shape the network
    wider = RunSpec("CartPole-v1", "mlp", model_options=dict(hidden_sizes=[16]), **NOISE).space()
    assert wider.num_parameters > space.num_parameters
    assert spec.observation_shape() == (4,)
    assert set(vars(spec)) == {field.name for field in dataclasses.fields(spec)}  # nothing stashed on the spec
    assert pickle.loads(pickle.dumps(spec)) == spec
