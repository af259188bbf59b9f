"""Evaluator: exact against a plain loop, independent of sub-populations and slots, perturbed mode, telemetry,
behaviours, edge cases and bad input; a GA that solves CartPole through it."""

import threading

import numpy as np
import pytest
import tensorflow as tf

from workbench.envs import AtariBatch
from workbench.envs.rng import episode_seed
from workbench.evaluation import Evaluator
from workbench.evaluation.telemetry import OCCUPANCY_BINS, Telemetry, occupancy_profile
from workbench.evolution import (
    ESConfig,
    EvaluationRequest,
    EvolutionStrategy,
    GAConfig,
    GeneticAlgorithm,
    Genome,
    GenomeDecoder,
    NoiseTable,
)
from workbench.models import MLPModel, SmallModel

TABLE = NoiseTable.shared(2**20, seed=5)
ATARI_TABLE = NoiseTable.shared(2**22, seed=6)


def cartpole(subpopulations=1, slots=16, **kwargs):
    return Evaluator(
        "CartPole-v1",
        "mlp",
        subpopulations=subpopulations,
        slots=slots,
        noise=TABLE,
        model_options=dict(hidden_sizes=(16,)),
        **kwargs,
    )


def random_requests(space, count, episodes, rng, phase="population"):
    return [EvaluationRequest(Genome(space.sample_offset(rng)), episodes, phase) for _ in range(count)]


def test_ga_with_a_small_mlp_solves_cartpole():
    evaluator = cartpole(slots=64)
    ga = GeneticAlgorithm(
        GAConfig(population_size=64, truncation=8, sigma=0.1, elite_candidates=5, elite_episodes=5), evaluator.space, seed=0
    )
    while ga.generation < 15 and not (ga.history and ga.history[-1].elite >= 495):
        ga.tell(evaluator.evaluate(ga.ask(), seed=2 * ga.generation + (ga.phase == "elite candidate")))
    (test,) = evaluator.evaluate([EvaluationRequest(ga.elite, 20, "test")], seed=12345)
    assert test.returns.mean() >= 475, (ga.generation, test.returns)


@pytest.fixture(scope="module")
def pong_requests():
    rng = np.random.default_rng(3)
    with Evaluator("pong", "small", subpopulations=1, slots=1, noise=ATARI_TABLE, max_episode_frames=600) as probe:
        space = probe.space
    parents = [Genome(space.sample_offset(rng)) for _ in range(2)]
    # Children of shared parents, one genome twice, several episodes: slots get shared and refilled.
    genomes = parents + [parents[k % 2].child(space.sample_offset(rng), 0.01) for k in range(4)] + [parents[0]]
    return [EvaluationRequest(g, 1 + k % 3, "population") for k, g in enumerate(genomes)], space


def test_atari_results_equal_a_plain_loop_on_the_reference_backend(pong_requests):
    requests, space = pong_requests
    with Evaluator("pong", "small", subpopulations=2, slots=3, noise=ATARI_TABLE, max_episode_frames=600) as evaluator:
        results = evaluator.evaluate(requests, seed=11)
    # The plain loop: one genome and one episode at a time, ale-py reference backend, a one-member model (its act
    # traced once: eager calls would double the test's time). It replays the first four requests (a parent, its
    # children and 1 to 3 episodes each: 7 of the 13 episodes); the evaluator played all of them, sharing slots.
    env = AtariBatch("pong", 1, max_episode_frames=600, backend="reference")
    model = SmallModel(num_actions=env.num_actions, slots=1)
    act = tf.function(model.act)
    decoder = GenomeDecoder(space)
    for r, (request, result) in enumerate(zip(requests[:4], results)):
        model.set_slot(0, decoder.decode_full(request.genome))
        for e in range(request.episodes):
            observation = env.reset([0], [episode_seed(11, r, e)])
            total, steps, done = 0.0, 0, False
            while not done:
                reward, (done,) = env.step([0], act(observation, np.zeros(1, np.int32)).numpy())
                observation = env.observation([0])
                total, steps = total + float(reward[0]), steps + 1
            assert (result.returns[e], result.steps[e], result.frames[e]) == (total, steps, env.episode_frames([0])[0])
    assert all((r.frames <= 600).all() for r in results)


def test_results_do_not_depend_on_subpopulations_or_slots(pong_requests):
    requests, _ = pong_requests
    outcomes = []
    for subpopulations, slots in ((1, 7), (4, 2), (2, 16)):  # one slot each: the plain loop's test
        with Evaluator(
            "pong", "small", subpopulations=subpopulations, slots=slots, noise=ATARI_TABLE, max_episode_frames=600
        ) as evaluator:
            results = evaluator.evaluate(requests, seed=4)
            outcomes.append([(r.returns.tolist(), r.steps.tolist(), r.frames.tolist()) for r in results])
            telemetry = evaluator.telemetry
            assert telemetry.episodes == sum(r.episodes for r in requests)
            assert telemetry.frames == sum(sum(r.frames) for r in results) and telemetry.frames_per_second > 0
            assert telemetry.subpopulations == subpopulations
            fractions = telemetry.fractions()
            assert abs(sum(fractions.values()) - 1) < 1e-6 and fractions["inference"] > 0 and fractions["emulation"] > 0
    assert all(o == outcomes[0] for o in outcomes)


def test_perturbed_mode_never_materialises_children_and_stays_independent_of_layout():
    outcomes = []
    for subpopulations, slots in ((1, 8), (2, 3)):
        evaluator = cartpole(subpopulations, slots, perturbed_rank=2)
        space = evaluator.space
        parent = Genome(np.random.default_rng(1).integers(0, 1000).item())
        children = [parent.child(space.sample_offset(np.random.default_rng(k), 2), 0.5, 2) for k in range(8)]
        results = evaluator.evaluate([EvaluationRequest(c, 2, "population") for c in children], seed=3)
        assert not any(evaluator.decoder.cached(c) for c in children) and evaluator.decoder.cached(parent)
        outcomes.append([r.returns.tolist() for r in results])
        assert len({tuple(o) for o in outcomes[-1]}) > 1  # the perturbations change behaviour
    assert outcomes[0] == outcomes[1]
    # The factored forward pass acts like the materialised child (up to rounding): same returns on most episodes.
    dense = cartpole(1, 8).evaluate([EvaluationRequest(c, 2, "population") for c in children], seed=3)
    agree = np.mean([a == b for r, d in zip(outcomes[0], dense) for a, b in zip(r, d.returns)])
    assert agree >= 0.75, agree


def test_behaviours_caps_and_es_bases():
    evaluator = cartpole(2, 4, max_episode_frames=5, behaviour="final_observation")
    es = EvolutionStrategy(ESConfig(population_size=6, sigma=0.1), evaluator.space)
    requests = [EvaluationRequest(r.genome, 2, r.phase, behaviour=True) for r in es.ask()]
    results = evaluator.evaluate(requests, bases=es.bases())
    assert all((r.steps <= 5).all() and r.behaviours.shape == (2, 4) for r in results)
    assert evaluator.decoder.base_keys == sorted(es.bases())


def test_the_model_backend_can_be_chosen():
    evaluator = cartpole(1, 4, model_backend="reference")  # what a GPU machine gets by default
    assert all(model.backend == "reference" for model in evaluator.models)
    requests = random_requests(evaluator.space, 3, 2, np.random.default_rng(2))
    assert [len(r.returns) for r in evaluator.evaluate(requests)] == [2, 2, 2]


def test_final_ram_behaviour_on_atari():
    with Evaluator(
        "pong", "small", subpopulations=1, slots=2, noise=ATARI_TABLE, max_episode_frames=200, behaviour="final_ram"
    ) as evaluator:
        genome = Genome(evaluator.space.sample_offset(np.random.default_rng(0)))
        (result,) = evaluator.evaluate([EvaluationRequest(genome, 3, "x", behaviour=True)])
    assert result.behaviours.shape == (3, 128) and (result.behaviours >= 0).all() and (result.behaviours <= 255).all()


def test_edge_cases_long_and_short_episodes_small_populations_tiny_caps():
    evaluator = cartpole(2, 16)
    rng = np.random.default_rng(5)
    requests = random_requests(evaluator.space, 3, 1, rng)  # fewer episodes than slots
    assert [len(r.returns) for r in evaluator.evaluate(requests)] == [1, 1, 1]
    assert evaluator.evaluate([]) == [] and evaluator.telemetry.episodes == 0
    # A cap below the no-op start: every Atari episode ends during its reset, with zero steps.
    with Evaluator(
        "pong", "small", subpopulations=2, slots=2, noise=ATARI_TABLE, max_episode_frames=1, env_options=dict(noop_max=30)
    ) as atari:
        results = atari.evaluate(random_requests(atari.space, 3, 2, rng))
    assert all((r.steps == 0).all() and (r.returns == 0).all() and (r.frames <= 1).all() for r in results)


def test_a_failing_subpopulation_stops_the_others_and_raises():
    calls = []

    def failing(env, index):
        calls.append(threading.current_thread().name)
        raise RuntimeError("behaviour function failed")

    evaluator = cartpole(2, 2, behaviour=failing)
    requests = [
        EvaluationRequest(r.genome, 1, "x", behaviour=True)
        for r in random_requests(evaluator.space, 20, 1, np.random.default_rng(0))
    ]
    with pytest.raises(RuntimeError, match="behaviour function failed"):
        evaluator.evaluate(requests)
    assert len(calls) <= 4  # no sub-population kept working through the queue
    assert not [t for t in threading.enumerate() if t.name.startswith("workbench-subpopulation")]


def test_bad_input_is_refused():
    evaluator = cartpole(1, 2)
    with pytest.raises(ValueError, match="behaviour"):
        evaluator.evaluate([EvaluationRequest(Genome(0), 1, "x", behaviour=True)])
    with pytest.raises(TypeError, match="requests\\[0\\]"):
        evaluator.evaluate([Genome(0)])
    with pytest.raises(ValueError, match="requests\\[1\\] has a genome that cannot be decoded"):
        evaluator.evaluate([EvaluationRequest(Genome(0), 1, "x"), EvaluationRequest(Genome(TABLE.size - 1), 1, "x")])
    with pytest.raises(ValueError, match="does not hold"):
        evaluator.evaluate([EvaluationRequest(Genome("sha256:" + "0" * 64), 1, "x")])
    with pytest.raises(ValueError, match="subpopulations"):
        cartpole(0)
    with pytest.raises(ValueError, match="max_episode_frames"):
        cartpole(max_episode_frames=0)
    with pytest.raises(ValueError, match="Atari network"):
        Evaluator("CartPole-v1", "small")
    with pytest.raises(ValueError, match="model must be one of"):
        Evaluator("CartPole-v1", "resnet")
    with pytest.raises(TypeError, match=r"model_options \['hidden'\] are not options of model 'mlp'; it takes .*hidden_sizes"):
        Evaluator("CartPole-v1", "mlp", model_options=dict(hidden=[8]))
    with pytest.raises(ValueError, match="env 'pongg' is in no environment family .* Did you mean: pong"):
        Evaluator("pongg", "small")
    with pytest.raises(ValueError, match="needs layer shapes|rank"):
        cartpole(perturbed_rank=-1)
    with pytest.raises(ValueError, match="takes"):
        Evaluator("CartPole-v1", lambda shape, actions, slots: MLPModel(3, actions, slots=slots))
    with pytest.raises(ValueError, match="needs an Atari batch"):
        cartpole(1, 2, behaviour="final_ram").evaluate([EvaluationRequest(Genome(0), 1, "x", behaviour=True)])
    with pytest.raises(ValueError, match="round_index"):
        evaluator.evaluate([EvaluationRequest(Genome(0), 1, "x")], round_index=-1)


def test_each_evaluation_is_a_round_of_the_decoders_cache():
    evaluator, rng = cartpole(1, 4), np.random.default_rng(3)
    old = random_requests(evaluator.space, 2, 1, rng)
    evaluator.evaluate(old)
    assert all(evaluator.decoder.cached(r.genome) for r in old)
    for _ in range(evaluator.decoder.keep_rounds):  # rounds in which the old genomes are not used
        evaluator.evaluate(random_requests(evaluator.space, 2, 1, rng))
    assert not any(evaluator.decoder.cached(r.genome) for r in old)
    chunk = random_requests(evaluator.space, 1, 1, rng)
    evaluator.evaluate(chunk, round_index=50)
    evaluator.evaluate(random_requests(evaluator.space, 1, 1, rng), round_index=50)  # same round: kept
    evaluator.evaluate(random_requests(evaluator.space, 1, 1, rng), round_index=52)
    assert evaluator.decoder.cached(chunk[0].genome)


@pytest.mark.slow
def test_episodes_do_not_depend_on_the_episodes_before_them_in_an_emulator():
    # Frostbite keeps console state across ALE's reset_game: before every reset restored the console as loaded,
    # request 12 started differently after 12 earlier episodes in one emulator than in a fresh one.
    outcomes = []
    for slots in (1, 3):
        with Evaluator("frostbite", "small", subpopulations=1, slots=slots, max_episode_frames=1500) as evaluator:
            requests = [
                EvaluationRequest(Genome(evaluator.space.sample_offset(np.random.default_rng(k))), 1, "p") for k in range(13)
            ]
            outcomes.append([(r.returns.tolist(), r.frames.tolist()) for r in evaluator.evaluate(requests, seed=5)])
    assert outcomes[0] == outcomes[1]


def test_a_live_episode_cap_shortens_episodes_until_lifted(pong_requests):
    requests, _ = pong_requests
    with Evaluator("pong", "small", subpopulations=2, slots=2, noise=ATARI_TABLE, max_episode_frames=600) as evaluator:
        full = evaluator.evaluate(requests, seed=4)
        evaluator.set_episode_cap(120)
        capped = evaluator.evaluate(requests, seed=4)
        frame_skip = 4  # the cap is checked after whole steps
        assert all(120 <= f <= 120 + frame_skip - 1 for r in capped for f in r.frames)
        assert all((c.steps <= f.steps).all() for c, f in zip(capped, full))
        with pytest.raises(ValueError, match="max_episode_frames"):
            evaluator.set_episode_cap(601)  # the environments were built with 600
        with pytest.raises(ValueError, match="max_episode_frames"):
            evaluator.set_episode_cap(0)
        evaluator.set_episode_cap(None)
        again = evaluator.evaluate(requests, seed=4)
        assert all(np.array_equal(a.returns, f.returns) and np.array_equal(a.frames, f.frames) for a, f in zip(again, full))


def test_the_timeline_records_every_timed_call_of_each_subpopulation():
    evaluator = cartpole(subpopulations=2, slots=4, max_episode_frames=50)
    requests = random_requests(evaluator.space, 8, 1, np.random.default_rng(0))
    evaluator.evaluate(requests, seed=0)
    assert evaluator.timeline is None  # off by default
    evaluator.record_timeline()
    evaluator.evaluate(requests, seed=0)
    timeline, wall = evaluator.timeline, evaluator.telemetry.wall_seconds
    assert {lane for lane, *_ in timeline} == {0, 1}
    assert {category for _, category, *_ in timeline} == {"emulation", "inference", "weight_loading"}
    assert all(0 <= start <= end <= wall + 1e-3 for _, _, start, end in timeline)
    for lane in (0, 1):
        busy = sum(end - start for k, category, start, end in timeline if k == lane and category == "inference")
        assert busy <= evaluator.telemetry.inference_seconds + 1e-6
    evaluator.record_timeline(False)
    evaluator.evaluate(requests, seed=0)
    assert evaluator.timeline is None


def test_a_round_splits_into_its_busy_phase_and_its_tail():
    evaluator = cartpole(subpopulations=2, slots=4, max_episode_frames=120)
    requests = random_requests(evaluator.space, 24, 1, np.random.default_rng(1))
    evaluator.evaluate(requests, seed=0)
    t = evaluator.telemetry
    assert 0 < t.busy_seconds < t.wall_seconds and abs(t.busy_seconds + t.tail_seconds - t.wall_seconds) < 1e-9
    assert 0 < t.tail_steps < t.steps and 0 < t.busy_frames < t.frames and t.busy_frames_per_second > 0
    assert len(t.occupancy) == OCCUPANCY_BINS and all(0 <= share <= 1 for share in t.occupancy)
    # every slot of each subpopulation runs from its start: checked per lane, as the two threads need not overlap
    # in time on a loaded machine (the combined profile was once 0.5 a quarter into the round); one lane's full
    # slots are half the capacity, so some slice of the profile shows nearly that much
    assert [s.occupancy_trace[1][0] for s in evaluator.subpopulations] == [4, 4]
    assert max(t.occupancy) >= 0.4
    assert t.occupancy[-1] < 1.0  # slots run dry at the end
    # fewer episodes than slots: no busy phase, and at most that share of the slots ever runs
    evaluator.evaluate(requests[:3], seed=0)
    t = evaluator.telemetry
    # the busy phase is only the threads' start-up before the first take (a few ms; 5 % of the wall time
    # was once exceeded on a loaded CI machine), and no step falls in it
    assert t.busy_seconds < 0.25 * t.wall_seconds
    assert t.tail_steps == t.steps and t.busy_frames_per_second == 0
    assert max(t.occupancy) <= 3 / 8 + 1e-6
    as_dict = t.as_dict()
    assert as_dict["tail_seconds"] == t.tail_seconds and Telemetry.from_dict(as_dict) == t


def test_occupancy_profile_against_a_hand_computed_trace():
    # one lane of 4 slots: 4 running from 0 to 2, 2 from 2 to 3, none from 3 to 4; a second lane idle throughout
    lanes = [([0.0, 2.0, 3.0], [4, 2, 0]), ([], [])]
    assert occupancy_profile(lanes, 0.0, 4.0, capacity=8, bins=4) == (0.5, 0.5, 0.25, 0.0)
    # bins that cut steps in two, and a trace that starts late
    assert occupancy_profile([([1.0, 1.5], [2, 1])], 0.0, 2.0, capacity=2, bins=2) == (0.0, 0.75)
    assert occupancy_profile(lanes, 1.0, 1.0, capacity=8) == ()


def test_longest_expected_episodes_start_first_and_results_do_not_change():
    rng = np.random.default_rng(5)
    scheduled = cartpole(subpopulations=2, slots=4, max_episode_frames=300)
    in_order = cartpole(subpopulations=2, slots=4, max_episode_frames=300, longest_first=False)
    parents = random_requests(scheduled.space, 12, 1, rng)
    first = scheduled.evaluate(parents, seed=1)
    assert in_order.episode_lengths is None and len(scheduled.episode_lengths) == 12
    lengths = [float(r.frames[0]) for r in first]
    children = [EvaluationRequest(p.genome.child(scheduled.space.sample_offset(rng), 0.01), 2, "population") for p in parents]
    order = scheduled.episode_lengths.longest_first([c.genome for c in children])
    assert [lengths[k] for k in order] == sorted(lengths, reverse=True)  # by the parents' lengths, stable on ties
    for a, b in zip(scheduled.evaluate(children, seed=2), in_order.evaluate(children, seed=2)):
        np.testing.assert_array_equal(a.returns, b.returns)
        np.testing.assert_array_equal(a.frames, b.frames)
    with pytest.raises(TypeError, match="longest_first"):
        cartpole(longest_first="yes")


def test_episode_lengths_remember_the_newest_genomes_and_place_unknown_ones_at_the_mean():
    from workbench.evaluation.schedule import EpisodeLengths

    genomes = [Genome(k) for k in range(4)]
    lengths = EpisodeLengths(capacity=3)
    lengths.record(genomes[:3], [np.array([10, 30]), np.array([100]), np.array([50])])
    assert lengths.expected(genomes[0]) == 20 and lengths.expected(genomes[0].child(7, 0.1)) == 20
    assert lengths.expected(genomes[3]) is None
    # known 20, 100, 50 (mean 56.7); the unknown genome sits between 100 and 50
    assert lengths.longest_first([genomes[0], genomes[1], genomes[2], genomes[3]]) == [1, 3, 2, 0]
    lengths.record([genomes[3]], [np.array([5])])  # a fourth genome: the oldest is forgotten
    assert len(lengths) == 3 and lengths.expected(genomes[0]) is None
    assert EpisodeLengths().longest_first(genomes) == [0, 1, 2, 3]  # nothing known: request order
