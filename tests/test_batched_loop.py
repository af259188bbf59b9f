"""BatchedLoopEvaluator: a GA that solves CartPole, results independent of slots, behaviours, caps and bad input."""
import numpy as np
import pytest

from workbench.envs import AtariBatch, GymBatch
from workbench.envs.rng import episode_seed
from workbench.evaluation import BatchedLoopEvaluator
from workbench.evolution import GAConfig, GeneticAlgorithm, Genome, GenomeDecoder, NoiseTable, ParameterSpace
from workbench.evolution.es import ESConfig, EvolutionStrategy
from workbench.evolution.strategy import EvaluationRequest
from workbench.models import MLPModel

TABLE = NoiseTable.shared(2**20, seed=5)


def cartpole(slots, hidden=(16,), batch=None, **kwargs):
    model = MLPModel(4, 2, hidden, slots=slots)
    space = ParameterSpace.for_model(model, TABLE)
    env = GymBatch("CartPole-v1", batch or slots)
    return BatchedLoopEvaluator(env, model, GenomeDecoder(space), **kwargs), space


def test_ga_with_a_small_mlp_solves_cartpole():
    evaluator, space = cartpole(64)
    ga = GeneticAlgorithm(GAConfig(population_size=64, truncation=8, sigma=0.1, elite_candidates=5, elite_episodes=5),
                          space, seed=0)
    while ga.generation < 15 and not (ga.history and ga.history[-1]["elite"] >= 495):
        ga.tell(evaluator.evaluate(ga.ask(), seed=2 * ga.generation + (ga.phase == "elite candidate")))
    (test,) = evaluator.evaluate([EvaluationRequest(ga.elite, 20, "test")], seed=12345)
    assert test.returns.mean() >= 475, (ga.generation, test.returns)


def test_results_do_not_depend_on_slots_and_match_a_plain_loop():
    requests = [EvaluationRequest(Genome(TABLE.sample_index(np.random.default_rng(k), 100)), 3, "population")
                for k in range(5)]
    one, space = cartpole(1)
    many, _ = cartpole(16)
    few, _ = cartpole(3, batch=8)  # fewer model slots than environments
    results = [[r.returns for r in e.evaluate(requests, seed=7)] for e in (one, many, few)]
    np.testing.assert_array_equal(results[0], results[1])
    np.testing.assert_array_equal(results[0], results[2])
    # One genome, one episode at a time, stepped by hand.
    decoder, model = GenomeDecoder(space), MLPModel(4, 2, (16,), slots=1)
    env = GymBatch("CartPole-v1", 1)
    for r, request in enumerate(requests):
        model.set_slot(0, decoder.decode(request.genome))
        for e in range(3):
            env.reset([0], [episode_seed(7, r, e)])
            total, done = 0.0, False
            while not done:
                action = model.act(env.observation([0]), np.zeros(1, np.int32)).numpy()
                reward, (done,) = env.step([0], action)
                total += float(reward[0])
            assert total == results[0][r][e]


def test_episode_cap_and_final_observation_behaviours():
    evaluator, space = cartpole(4, max_steps=5, behaviour="final_observation")
    genome = Genome(space.sample_offset(np.random.default_rng(0)))
    (result,) = evaluator.evaluate([EvaluationRequest(genome, 6, "x", behaviour=True)])
    assert (result.returns <= 5).all() and result.behaviours.shape == (6, 4)
    assert len({tuple(b) for b in result.behaviours}) > 1  # different episodes, different end states


def test_es_centres_arrive_as_bases():
    evaluator, space = cartpole(8)
    es = EvolutionStrategy(ESConfig(population_size=8, sigma=0.1), space)
    for _ in range(2):
        es.tell(evaluator.evaluate(es.ask(), seed=es.generation, bases=es.bases()))
    previous = evaluator.decoder.base_keys
    assert len(previous) == 1 and previous != sorted(es.bases())  # the centre moved after the last evaluation
    evaluator.evaluate(es.ask(), bases=es.bases())
    assert evaluator.decoder.base_keys == sorted(es.bases())  # the previous centre was dropped


def test_final_ram_behaviour_on_atari():
    from workbench.models import SmallModel

    env = AtariBatch("pong", 2, max_num_frames_per_episode=200, backend="reference")
    model = SmallModel(num_actions=env.num_actions, slots=2, backend="reference")
    space = ParameterSpace.for_model(model, NoiseTable.shared(2**23, seed=1))
    evaluator = BatchedLoopEvaluator(env, model, GenomeDecoder(space), behaviour="final_ram")
    genome = Genome(space.sample_offset(np.random.default_rng(0)))
    (result,) = evaluator.evaluate([EvaluationRequest(genome, 3, "x", behaviour=True)])
    assert result.behaviours.shape == (3, 128) and (result.behaviours >= 0).all() and (result.behaviours <= 255).all()


def test_bad_input_is_refused():
    evaluator, space = cartpole(2)
    with pytest.raises(ValueError, match="behaviour function"):
        evaluator.evaluate([EvaluationRequest(Genome(0), 1, "x", behaviour=True)])
    with pytest.raises(TypeError, match="requests\\[0\\]"):
        evaluator.evaluate([Genome(0)])
    with pytest.raises(ValueError, match="init = .* out of range"):
        evaluator.evaluate([EvaluationRequest(Genome(TABLE.size - 1), 1, "x")])
    with pytest.raises(ValueError, match="do not fit the model input"):
        BatchedLoopEvaluator(GymBatch("Acrobot-v1", 2), MLPModel(4, 2, slots=2), evaluator.decoder)
    with pytest.raises(ValueError, match="max_steps"):
        BatchedLoopEvaluator(evaluator.env, evaluator.model, evaluator.decoder, max_steps=0)
    with pytest.raises(ValueError, match="behaviour must be"):
        BatchedLoopEvaluator(evaluator.env, evaluator.model, evaluator.decoder, behaviour="final_position")
    with pytest.raises(ValueError, match="needs an Atari batch"):
        BatchedLoopEvaluator(evaluator.env, evaluator.model, evaluator.decoder, behaviour="final_ram").evaluate(
            [EvaluationRequest(Genome(0), 1, "x", behaviour=True)])
