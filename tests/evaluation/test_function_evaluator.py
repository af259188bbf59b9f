"""Function problems: the built-in functions equal their formulas (and COCO's own BBOB values), a FunctionEvaluator's
results are -objective of each genome's decoded vector whatever the chunking, noisy problems draw per episode from
the episode seeds, every algorithm runs on one through RunConfig and the trainer (with exact resume), and bad
problems, names and settings are refused with errors that name them."""

import threading

import numpy as np
import pytest

from support import module_available
from workbench.envs import FunctionProblem, find_env_family, register_function_problem, unregister_function_problem
from workbench.envs.function import function_problem
from workbench.envs.rng import episode_seed
from workbench.evaluation import EvaluationCancelled, EvaluatorLayout, FunctionEvaluator, RunSpec, make_evaluator
from workbench.evolution import EvaluationRequest, Genome, algorithm_names
from workbench.training import RunConfig, Trainer

NOISE = dict(noise_size=2**16, noise_seed=5)
SMALL = dict(  # a few members a generation (the others: population_size 8)
    ars=dict(directions=4, top_directions=2),
    ga=dict(population_size=8, truncation=2, elite_candidates=2, elite_episodes=1),
    random=dict(population_size=8, elite_candidates=2, elite_episodes=1),
    **{
        "map-elites": dict(population_size=8, initial_population=8, cells=3, descriptor_bounds=[[-1, 1]] * 4),
        **dict.fromkeys(("cma-me", "cma-mae"), dict(emitters=2, population_size=4, cells=3, descriptor_bounds=[[-1, 1]] * 4)),
    },
)


@pytest.fixture
def registered():
    """A registered quadratic with its minimum at 0.5 (maximize=False), forgotten after the test."""
    problem = register_function_problem(
        FunctionProblem("shifted-quadratic", 4, lambda x: ((x - 0.5) ** 2).sum(axis=1), init_scale=0.5), replace=True
    )
    yield problem
    unregister_function_problem(problem.name)


def requests_of(count, episodes=1, behaviour=False):
    return [EvaluationRequest(Genome(100 * k, ((7 * k + 1, 0.1, 0),)), episodes, "population", behaviour) for k in range(count)]


def test_the_built_in_functions_are_their_formulas():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(5, 7))
    values = {name: function_problem(f"{name}-7").objective(x) for name in ("sphere", "ellipsoid", "rastrigin", "rosenbrock")}
    for k, row in enumerate(x):
        assert values["sphere"][k] == pytest.approx(sum(v * v for v in row))
        assert values["ellipsoid"][k] == pytest.approx(sum(10 ** (6 * i / 6) * row[i] ** 2 for i in range(7)))
        assert values["rastrigin"][k] == pytest.approx(70 + sum(v * v - 10 * np.cos(2 * np.pi * v) for v in row))
        assert values["rosenbrock"][k] == pytest.approx(
            sum(100 * (row[i + 1] - row[i] ** 2) ** 2 + (1 - row[i]) ** 2 for i in range(6))
        )
    assert function_problem("rosenbrock-7").objective(np.ones((1, 7)))[0] == 0
    assert function_problem("rastrigin-7").objective(np.zeros((1, 7)))[0] == 0
    assert function_problem("sphere-3").returns(np.array([[1.0, 2.0, 2.0]]))[0] == -9.0  # runs maximise -f


def test_bbob_problems_are_cocos_values():
    if not module_available("cocoex"):
        pytest.skip("coco-experiment is not installed (pip install -e '.[bench]')")
    import cocoex

    problem = function_problem("bbob-f8-i2-d5")
    suite = cocoex.Suite("bbob", "", "dimensions: 5 function_indices: 8 instance_indices: 2")
    reference = suite.get_problem(0)
    x = np.random.default_rng(1).uniform(-4, 4, size=(3, 5))
    assert np.array_equal(problem.objective(x), [reference(row) for row in x])
    assert problem.dimension == 5 and problem.init_scale == 2.0


def test_the_evaluator_returns_minus_the_objective_of_each_decoded_vector(registered):
    evaluator = FunctionEvaluator("shifted-quadratic", behaviour="parameters", **NOISE)
    requests = requests_of(5, episodes=3, behaviour=True)
    results = evaluator.evaluate(requests, seed=4)
    for request, result in zip(requests, results):
        x = evaluator.decoder.decode_full(request.genome).astype(np.float64)
        assert np.array_equal(result.returns, np.full(3, -((x - 0.5) ** 2).sum()))  # evaluated once, every episode
        assert list(result.frames) == [1, 0, 0] and np.array_equal(result.behaviours, np.tile(x, (3, 1)))
    assert evaluator.telemetry.frames == 5 and evaluator.telemetry.episodes == 15
    chunked = FunctionEvaluator.from_spec(evaluator.spec, EvaluatorLayout(behaviour="parameters"), rows_per_call=2)
    again = chunked.evaluate(requests, seed=4)
    assert all(np.array_equal(a.returns, b.returns) for a, b in zip(results, again))


def test_a_noisy_problem_is_called_per_episode_with_the_episode_seeds():
    calls = []

    def noisy(x, seeds):
        calls.append(len(x))
        return x.sum(axis=1) + seeds % 1000

    register_function_problem(FunctionProblem("noisy-sum", 3, noisy, maximize=True, noisy=True), replace=True)
    try:
        evaluator = FunctionEvaluator("noisy-sum", rows_per_call=4, **NOISE)
        requests = requests_of(3, episodes=2)
        results = evaluator.evaluate(requests, seed=8, request_ids=[10, 11, 12])
        assert calls == [4, 2]  # six rows, four per call
        for k, (request, result) in enumerate(zip(requests, results)):
            total = evaluator.decoder.decode_full(request.genome).astype(np.float64).sum()
            expected = [total + episode_seed(8, 10 + k, e) % 2**64 % 1000 for e in range(2)]
            assert result.returns == pytest.approx(expected) and list(result.frames) == [1, 1]
    finally:
        unregister_function_problem("noisy-sum")


def test_a_cancelled_evaluation_raises(registered):
    evaluator = FunctionEvaluator("shifted-quadratic", rows_per_call=1, **NOISE)
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(EvaluationCancelled):
        evaluator.evaluate(requests_of(2), cancel=cancel)


@pytest.mark.parametrize("algorithm", algorithm_names())
def test_every_algorithm_runs_on_a_function_problem_and_resumes_exactly(tmp_path, registered, algorithm):
    config = RunConfig(env="shifted-quadratic", algorithm=algorithm, **NOISE)
    assert (config.model, config.max_episode_frames, config.observation_normalization) == ("vector", 1, None)
    config.hyperparameters = SMALL.get(algorithm, dict(population_size=8))
    strategy, evaluator = config.build()
    assert isinstance(evaluator, FunctionEvaluator) and evaluator.space.num_parameters == 4
    with Trainer(strategy, evaluator, config=config) as straight:
        records = straight.run(generations=4)
    strategy, evaluator = config.build()
    with Trainer(strategy, evaluator, run_dir=str(tmp_path / "run"), config=config) as first:
        first.run(generations=2)
    with Trainer.resume_from(str(tmp_path / "run")) as resumed:
        again = resumed.run(generations=2)
    assert [r.max for r in again] == [r.max for r in records[2:]], algorithm
    assert all(r.frames > 0 for r in records)


def test_a_distribution_search_solves_a_built_in_function():
    config = RunConfig(env="ellipsoid-6", algorithm="cma-es", hyperparameters=dict(sigma_init=1.0), **NOISE)
    strategy, evaluator = config.build()
    with Trainer(strategy, evaluator, config=config) as trainer:
        records = trainer.run(generations=250)
        mean = trainer.elite_weights()
    assert records[0].max < -1e3 and max(r.max for r in records) > -1e-8, [r.max for r in records[::25]]
    assert mean.dtype == np.float32 and np.abs(mean).max() < 1e-3  # the distribution's mean, at the optimum


def test_the_family_declares_its_evaluator_and_no_environments():
    family = find_env_family("rastrigin-30")
    assert family.name == "function" and family.evaluator == "function_evaluator" and not family.environments
    spec = RunSpec("rastrigin-30", "vector", max_episode_frames=1, **NOISE)
    assert spec.space().num_parameters == 30
    with make_evaluator(spec) as evaluator:
        assert isinstance(evaluator, FunctionEvaluator)
    with pytest.raises(ValueError, match="rastrigin-30 is a function problem: it has no environments"):
        spec.make_batch(1)


def test_bad_problems_names_and_settings_are_named(registered):
    with pytest.raises(ValueError, match="dimension must be"):
        FunctionProblem("x", 0, np.sum)
    with pytest.raises(TypeError, match="objective must be callable"):
        FunctionProblem("x", 2, 3)
    with pytest.raises(ValueError, match="name must be a non-empty lower-case"):
        FunctionProblem("My Loss", 2, np.sum)
    with pytest.raises(ValueError, match="init_scale"):
        FunctionProblem("x", 2, np.sum, init_scale=0.0)
    with pytest.raises(ValueError, match="'rastrigin-5' is a built-in"):
        register_function_problem(FunctionProblem("rastrigin-5", 5, np.sum))
    with pytest.raises(ValueError, match="registered already"):
        register_function_problem(FunctionProblem("shifted-quadratic", 4, np.sum))
    with pytest.raises(ValueError, match="BBOB has functions 1 to 24"):
        find_env_family("bbob-f25-i1-d10")
    with pytest.raises(ValueError, match="BBOB's dimensions are"):
        find_env_family("bbob-f1-i1-d7")
    with pytest.raises(ValueError, match="Did you mean: rastrigin-10"):
        find_env_family("rastrign-10")
    for name, objective, returned in (
        ("wrong-shape", lambda x: x, r"shape \(2, 2\) and dtype float64"),
        ("wrong-dtype", lambda x: np.array(["a", "b"]), r"shape \(2,\) and dtype <U1"),
        ("complex", lambda x: x[:, 0] * 1j, r"shape \(2,\) and dtype complex128"),
    ):
        register_function_problem(FunctionProblem(name, 2, objective), replace=True)
        try:
            with pytest.raises(ValueError, match=rf"'{name}': objective must return one real value per row.*{returned}"):
                FunctionEvaluator(name, **NOISE).evaluate(requests_of(2))
        finally:
            unregister_function_problem(name)
    for fields, message in (
        (dict(observation_normalization=True), "observation_normalization: a function problem has no observations"),
        (dict(perturbed_rank=1), "perturbed_rank: a function problem has no layers"),
        (dict(action_noise=0.1), "action_noise: a function problem has no actions"),
        (dict(behaviour="final_ram"), "behaviour: a function problem's behaviour characterisation is"),
    ):
        with pytest.raises(ValueError, match=message):
            RunConfig(env="shifted-quadratic", algorithm="es", **fields, **NOISE).build()
    with pytest.raises(ValueError, match="model 'mlp' does not fit shifted-quadratic"):
        RunConfig(env="shifted-quadratic", model="mlp").check()
    with pytest.raises(ValueError, match="fit in a noise table"):
        FunctionEvaluator("sphere-70000", **NOISE)


def test_the_command_line_trains_a_built_in_problem_without_a_gif_and_shows_the_distribution(tmp_path, capsys):
    from workbench.cli import main

    run_dir = tmp_path / "run"
    assert main(["train", "--env", "sphere-4", "--algo", "sep-cma-es", "--generations", "2", "--out", str(run_dir)]) == 0
    out = capsys.readouterr().out
    assert "step size" in out and "elite.gif" not in out and not (run_dir / "elite.gif").exists()
    assert (run_dir / "fitness.png").exists() and (run_dir / "history.jsonl").exists()


def test_the_last_generations_elite_of_a_distribution_search_is_rebuilt_from_its_checkpoint(tmp_path):
    from workbench.training.elites import load_elite

    config = RunConfig(env="sphere-6", algorithm="sep-cma-es", hyperparameters=dict(center_episodes=1), **NOISE)
    with Trainer.from_config(config, run_dir=str(tmp_path / "run")) as trainer:
        records = trainer.run(generations=2)
    elite = load_elite(str(tmp_path / "run")).of_generation(1)  # the mean generation 1 played, since moved on
    weights = elite.decoder().decode(elite.genome).astype(np.float64)
    assert -float(weights @ weights) == records[-1].elite
