"""RayEvaluator on a local Ray cluster (num_cpus=2): the same results as the local Evaluator, dense bases
shipped once, an actor killed mid-generation (its chunks re-run elsewhere, nothing lost or counted twice),
gameplay frames streamed from one actor while someone listens, a Trainer on Ray, safe defaults (127.0.0.1,
no dashboard, temp dir), clean shutdown."""

import pickle
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np
import psutil
import pytest

from support import module_available, requires_component
from workbench.evaluation import Evaluator, RunSpec
from workbench.evaluation.ray_evaluator import RayEvaluator
from workbench.evolution import (
    PGPE,
    ARSConfig,
    AugmentedRandomSearch,
    ESConfig,
    EvaluationRequest,
    EvolutionStrategy,
    Genome,
    NoiseTable,
    PGPEConfig,
)
from workbench.training import RunConfig, Trainer

pytestmark = pytest.mark.ray
NOISE = dict(noise_size=2**22, noise_seed=9)
PONG = dict(subpopulations=2, slots=2, max_episode_frames=400)


@pytest.fixture(scope="module", autouse=True)
def ray_installed():
    requires_component(module_available("ray"), "ray (pip install -e '.[ray]')")


@pytest.fixture(scope="module")
def temp_dir():
    return tempfile.mkdtemp(prefix="rwb-", dir="/tmp")  # Ray's socket paths must stay short


@pytest.fixture(scope="module")
def cluster(temp_dir):
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    evaluator = RayEvaluator("pong", "small", actors=2, num_cpus=2, temp_dir=temp_dir, chunks_per_actor=4, **NOISE, **PONG)
    yield evaluator, before
    evaluator.close()


@pytest.fixture(scope="module")
def local():
    with Evaluator("pong", "small", noise=NoiseTable.shared(NOISE["noise_size"], NOISE["noise_seed"]), **PONG) as e:
        yield e


def lineage_requests(space, count, rng):
    """Parents, children and grandchildren with 1-2 episodes each: shared parents in the actors' caches."""
    parents = [Genome(space.sample_offset(rng)) for _ in range(2)]
    genomes = parents + [parents[k % 2].child(space.sample_offset(rng), 0.01) for k in range(count - 2)]
    genomes[-1] = genomes[-2].child(space.sample_offset(rng), 0.01)
    return [EvaluationRequest(g, 1 + k % 2, "population") for k, g in enumerate(genomes)]


def assert_same(results, expected):
    assert len(results) == len(expected)
    for got, want in zip(results, expected):
        np.testing.assert_array_equal(got.returns, want.returns)
        np.testing.assert_array_equal(got.frames, want.frames)


def test_results_equal_the_local_evaluator(cluster, local):
    evaluator, _ = cluster
    requests = lineage_requests(evaluator.space, 10, np.random.default_rng(1))
    assert_same(evaluator.evaluate(requests, seed=3), local.evaluate(requests, seed=3))
    telemetry = evaluator.telemetry
    assert telemetry.episodes == sum(r.episodes for r in requests) and telemetry.frames > 0
    weights = evaluator.space.num_parameters * 4 * len(requests)
    assert 0 < telemetry.bytes_shipped < 0.01 * weights, telemetry.bytes_shipped


def test_dense_bases_travel_once_and_results_still_match(cluster, local):
    evaluator, _ = cluster
    es = EvolutionStrategy(ESConfig(population_size=6, sigma=0.02, center_episodes=1), evaluator.space, seed=0)
    requests = es.ask()
    first = evaluator.evaluate(requests, seed=5, bases=es.bases())
    shipped_first = evaluator.telemetry.bytes_shipped
    again = evaluator.evaluate(requests, seed=5, bases=es.bases())
    base_bytes = evaluator.space.num_parameters * 4
    assert shipped_first >= base_bytes  # the object store once, each actor's fetch counted
    assert evaluator.telemetry.bytes_shipped < base_bytes / 10  # already held: not shipped again
    expected = local.evaluate(requests, seed=5, bases=es.bases())
    assert_same(first, expected)
    assert_same(again, expected)


def test_an_actor_killed_mid_generation_loses_nothing_and_counts_nothing_twice(cluster, local):
    import ray

    evaluator, _ = cluster
    requests = lineage_requests(evaluator.space, 16, np.random.default_rng(2))
    outcome = {}

    def run():
        try:
            outcome["results"] = evaluator.evaluate(requests, seed=7)
        except BaseException as error:  # noqa: BLE001 - reported below
            outcome["error"] = error

    restarts = evaluator.restarts
    thread = threading.Thread(target=run)
    thread.start()
    deadline = time.monotonic() + 120
    while not 1 <= evaluator.progress[0] < evaluator.progress[1] and time.monotonic() < deadline:
        time.sleep(0.01)  # until some chunks are done and others are running
    done, total = evaluator.progress
    assert 1 <= done < total, (done, total)
    index = list(dict(evaluator.in_flight).values())[0][0]  # an actor with chunks in flight
    victim = evaluator.actors[index]
    ray.kill(victim, no_restart=True)
    thread.join(300)
    assert "error" not in outcome, outcome.get("error")
    assert evaluator.restarts == restarts + 1 and evaluator.actors[index] is not victim
    assert_same(outcome["results"], local.evaluate(requests, seed=7))
    assert evaluator.telemetry.episodes == sum(r.episodes for r in requests)  # no chunk counted twice


def test_gameplay_frames_stream_from_the_first_actor_only_while_someone_listens(cluster):
    evaluator, _ = cluster
    requests = lineage_requests(evaluator.space, 16, np.random.default_rng(4))
    frames = []
    evaluator.add_frame_listener(frames.append)
    try:
        first = evaluator.evaluate(requests, seed=6)
        assert frames, "no frame reached the master"
        for frame in frames:
            assert frame["frame"].shape == (210, 160, 3) and frame["frame"].dtype == np.uint8
            assert 0 <= frame["request"] < len(requests) and frame["step"] >= 0
        assert len(frames) <= 2 + 12 * evaluator.telemetry.wall_seconds  # throttled to about 10 per second
    finally:
        evaluator.remove_frame_listener(frames.append)
    frames.clear()
    assert_same(evaluator.evaluate(requests, seed=6), first)  # watching changes no result
    assert frames == []


def test_errors_inside_actors_are_raised_not_retried(cluster):
    evaluator, _ = cluster
    with pytest.raises(ValueError, match="requests\\[0\\]"):
        evaluator.evaluate([EvaluationRequest(Genome(2**30), 1, "population")], seed=0)  # beyond the noise table
    with pytest.raises(TypeError, match="requests\\[0\\]"):
        evaluator.evaluate(["not a request"])
    restarts = evaluator.restarts
    genome = Genome(evaluator.space.sample_offset(np.random.default_rng(0)))
    with pytest.raises(ValueError, match="behaviour"):  # raised by the actor's own Evaluator
        evaluator.evaluate([EvaluationRequest(genome, 1, "population", behaviour=True)], seed=0)
    assert evaluator.restarts == restarts


def test_a_local_cluster_listens_on_localhost_only_without_a_dashboard(cluster, temp_dir):
    import ray

    evaluator, before = cluster
    ray_processes = [p for p in psutil.Process().children(recursive=True) if p.pid not in before]
    assert ray_processes
    listening = set()  # (address, port) of every listening socket of the cluster's processes
    for process in ray_processes:
        try:
            listening |= {
                (c.laddr.ip, c.laddr.port) for c in process.net_connections(kind="inet") if c.status == psutil.CONN_LISTEN
            }
        except psutil.NoSuchProcess:
            pass
    addresses = {address for address, _ in listening}
    assert addresses and addresses <= {"127.0.0.1", "::ffff:127.0.0.1", "::1"}, addresses
    commands = [" ".join(p.cmdline()) for p in ray_processes if p.is_running()]
    dashboards = [c for c in commands if "dashboard/dashboard.py" in c]  # Ray keeps a minimal head process
    assert all("--minimal" in c and "--disable-frontend" in c for c in dashboards), dashboards
    ports = {port for _, port in listening}
    assert 8265 not in ports  # Ray's dashboard port
    assert ray.get_runtime_context().gcs_address.startswith("127.0.0.1")
    assert any(temp_dir in command for command in commands)


def test_actors_run_at_the_drivers_priority(cluster):
    evaluator, _ = cluster
    import ray

    pids = ray.get([actor.ready.remote() for actor in evaluator.actors])
    assert [psutil.Process(pid).nice() for pid in pids] == [psutil.Process().nice()] * len(pids)  # Ray's default: 15


def test_every_chunk_carries_the_round_its_actor_ages_its_cache_by():
    evaluator = RayEvaluator.__new__(RayEvaluator)  # the chunking alone: no cluster
    evaluator.actors, evaluator.chunks_per_actor = [None, None], 2
    requests = [EvaluationRequest(Genome(k), 1, "population") for k in range(8)]
    chunks = [pickle.loads(chunk) for chunk in evaluator._chunks(requests, 3, 7)]
    assert len(chunks) == 4 and all(chunk["round"] == 7 and chunk["seed"] == 3 for chunk in chunks)
    assert sorted(i for chunk in chunks for i in chunk["ids"]) == list(range(8))
    given = [pickle.loads(chunk) for chunk in evaluator._chunks(requests, 3, 7, list(range(100, 108)))]
    assert [i for chunk in given for i in chunk["ids"]] == list(range(100, 108))  # scoring's global episode ids


def test_an_address_where_no_cluster_answers_is_refused_at_once():
    import socket

    from workbench.evaluation.ray_evaluator import check_cluster_answers

    with socket.socket() as server:  # something answers: passes
        server.bind(("127.0.0.1", 0))
        server.listen()
        check_cluster_answers(f"127.0.0.1:{server.getsockname()[1]}")
        check_cluster_answers(f"ray://127.0.0.1:{server.getsockname()[1]}")
        port = server.getsockname()[1]
    start = time.monotonic()
    with pytest.raises(ValueError, match=f"address '127.0.0.1:{port}': no Ray cluster answers there"):
        check_cluster_answers(f"127.0.0.1:{port}")  # closed now
    assert time.monotonic() - start < 6
    for address in ("head", "head:port", ":6379"):
        with pytest.raises(ValueError, match="must be 'auto', 'host:port' or 'ray://host:port'"):
            check_cluster_answers(address)
    check_cluster_answers("auto")  # left to Ray


def test_bad_arguments_are_named(cluster):
    with pytest.raises(ValueError, match="actors"):
        RayEvaluator("pong", "small", actors=0, **NOISE)
    with pytest.raises(TypeError, match="address"):
        RayEvaluator("pong", "small", address=6379, **NOISE)
    with pytest.raises(ValueError, match="frame_interval"):
        RayEvaluator("pong", "small", frame_interval=0, **NOISE)
    with pytest.raises(TypeError, match="longest_first"):  # an actor keyword, checked by the actors' evaluator
        Evaluator("pong", "small", longest_first=1)
    with pytest.raises(ValueError, match="noise_size"):
        RayEvaluator("pong", "small", noise=NoiseTable.shared(2**20, 1))
    evaluator, _ = cluster
    with pytest.raises(ValueError, match="max_episode_frames"):
        evaluator.set_episode_cap(10_000)
    genome = Genome(evaluator.space.sample_offset(np.random.default_rng(0)))
    with pytest.raises(ValueError, match="requests\\[0\\] asks for a behaviour"):  # as the local evaluator
        evaluator.evaluate([EvaluationRequest(genome, 1, "population", behaviour=True)])


def test_close_shuts_the_cluster_down_and_leaves_no_process(cluster):
    import ray

    evaluator, before = cluster
    started = [p for p in psutil.Process().children(recursive=True) if p.pid not in before]
    evaluator.close()
    assert not ray.is_initialized()
    gone, alive = psutil.wait_procs(started, timeout=30)
    assert not alive, [(p.pid, p.name()) for p in alive]


def pong_on_ray():
    return RunConfig(
        env="pong",
        model="small",
        algorithm="ga",
        ray=True,
        ray_actors=2,
        subpopulations=2,
        slots=2,
        max_episode_frames=400,
        noise_size=NOISE["noise_size"],
        noise_seed=NOISE["noise_seed"],
        hyperparameters=dict(population_size=6, truncation=2, sigma=0.01, elite_candidates=2, elite_episodes=1),
    )


def test_a_trainer_runs_on_ray_and_reports_bytes_per_generation(tmp_path):
    import ray

    trainer = Trainer.from_config(pong_on_ray(), run_dir=str(tmp_path / "run"))  # starts a local cluster of its own
    try:
        records = trainer.run(generations=2)
        assert all(0 < r.bytes_shipped < 100_000 for r in records), [r.bytes_shipped for r in records]
        assert trainer.evaluator.owns_cluster
    finally:
        trainer.close()
    assert not ray.is_initialized()


@pytest.mark.long
def test_a_ray_run_resumes_on_a_cluster_of_its_own(tmp_path):
    with Trainer.from_config(pong_on_ray(), run_dir=str(tmp_path / "run")) as trainer:
        trainer.run(generations=2)
    resumed = Trainer.resume_from(str(tmp_path / "run"))
    try:
        assert isinstance(resumed.evaluator, RayEvaluator) and resumed.generation == 2
        with pytest.raises(ValueError, match="actors"):  # its 2 actors hold the cluster's CPUs
            RayEvaluator("pong", "small", actors=1, **NOISE)
    finally:
        resumed.close()


@pytest.mark.long
def test_observation_statistics_are_the_same_on_1_and_2_actors_and_locally():
    """ARS V2 and PGPE on Hopper with every state normalised: the merged statistics (and so every return) are
    bit-identical whether one actor, two actors or the local evaluator ran the episodes; PGPE's scaled
    bases travel to the actors as well. Both Ray layouts share one local cluster of 3 CPUs: the 1-actor
    evaluator starts it, the 2-actor one joins it."""
    import ray

    spec = RunSpec("Hopper-v5", "linear", max_episode_frames=60, observation_normalization=True, **NOISE)
    layout = dict(subpopulations=1, slots=3)
    algorithms = {
        "ars": lambda space: AugmentedRandomSearch(ARSConfig(directions=4, top_directions=2, center_episodes=1), space),
        "pgpe": lambda space: PGPE(PGPEConfig(population_size=6, center_episodes=1), space),
    }
    evaluators = {}
    try:
        evaluators["local"] = Evaluator.from_spec(spec, **layout)
        evaluators["1 actor"] = RayEvaluator.from_spec(spec, actors=1, num_cpus=3, **layout)
        evaluators["2 actors"] = RayEvaluator.from_spec(spec, actors=2, **layout)
        assert evaluators["1 actor"].owns_cluster and not evaluators["2 actors"].owns_cluster
        outcomes = {}
        for label, evaluator in evaluators.items():
            for algorithm, make in algorithms.items():
                evaluator.set_observation_statistics(None)  # each run starts from the identity
                trainer = Trainer(make(evaluator.space), evaluator)
                trainer.run(generations=2)
                outcomes[label, algorithm] = (
                    trainer.observation_statistics,
                    [r.max for r in trainer.history],
                    [r.elite for r in trainer.history],
                )
    finally:
        for evaluator in reversed(evaluators.values()):  # the cluster's owner last
            evaluator.close()
    assert not ray.is_initialized()
    for algorithm in algorithms:
        reference = outcomes["local", algorithm]
        assert reference[0].count > 0
        for label in ("1 actor", "2 actors"):
            statistics, maxima, elites = outcomes[label, algorithm]
            assert statistics == reference[0], (label, algorithm)
            assert maxima == reference[1] and elites == reference[2], (label, algorithm)


def test_a_cluster_start_that_times_out_is_tried_again_and_its_processes_stopped(monkeypatch):
    """Ray's start-up timeout (a raylet that stopped waiting for a slow dashboard agent) is tried again after the
    attempt's processes are stopped; any other error is raised at once; the third timeout is raised."""
    import ray

    from workbench.evaluation.ray_evaluator import STARTUP_ATTEMPTS, start_local_cluster

    attempts, leftovers = [], []

    def init_timing_out(times, error="The current node timed out during startup."):
        def init(**options):
            attempts.append(options)
            if len(attempts) <= times:
                leftovers.append(subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"]))
                raise Exception(error)

        return init

    monkeypatch.setattr(ray, "init", init_timing_out(1))
    start_local_cluster(num_cpus=1)
    assert len(attempts) == 2 and attempts[1] == {"num_cpus": 1}
    assert leftovers[0].wait(timeout=10) is not None  # the failed attempt's process was stopped
    attempts.clear()
    monkeypatch.setattr(ray, "init", init_timing_out(STARTUP_ATTEMPTS))
    with pytest.raises(Exception, match="timed out during startup"):
        start_local_cluster(num_cpus=1)
    assert len(attempts) == STARTUP_ATTEMPTS
    attempts.clear()
    monkeypatch.setattr(ray, "init", init_timing_out(1, error="Address already in use"))
    with pytest.raises(Exception, match="already in use"):
        start_local_cluster(num_cpus=1)
    assert len(attempts) == 1
    for process in leftovers:
        process.kill()
        process.wait()


@pytest.mark.long
def test_a_function_problem_registered_here_runs_on_the_actors_as_locally(tmp_path):
    from workbench.envs import FunctionProblem, register_function_problem, unregister_function_problem

    problem = FunctionProblem("ray-quadratic", 5, lambda x: ((x - 0.25) ** 2).sum(axis=1))  # a lambda: pickled by value
    register_function_problem(problem, replace=True)
    try:
        # CR-FM-NES's members: signed offsets on a [mean, scales, direction] base, decoded by the actors
        crfmnes = RunConfig(env="ray-quadratic", algorithm="cr-fm-nes", **NOISE)
        strategy, local = crfmnes.build()
        requests, bases = strategy.ask(), strategy.bases()
        with local, RayEvaluator.from_spec(local.spec, actors=2, num_cpus=2) as remote:
            assert [list(r.returns) for r in remote.evaluate(requests, seed=3, bases=bases)] == [
                list(r.returns) for r in local.evaluate(requests, seed=3, bases=bases)
            ]
        config = RunConfig(env="ray-quadratic", algorithm="sep-cma-es", **NOISE)
        strategy, evaluator = config.build()
        with Trainer(strategy, evaluator, config=config) as local:
            expected = [r.max for r in local.run(generations=3)]
        config.ray, config.ray_actors = True, 2
        with Trainer.from_config(config, run_dir=str(tmp_path / "run")) as remote:
            assert isinstance(remote.evaluator, RayEvaluator)
            assert [r.max for r in remote.run(generations=3)] == expected
    finally:
        unregister_function_problem("ray-quadratic")


@pytest.mark.long
def test_map_elites_with_a_behaviour_registered_here_runs_on_the_actors_as_locally():
    from workbench.evaluation.behaviour import Behaviour, register_behaviour, unregister_behaviour

    def torso(env, index):  # the final torso (x, z): a user's descriptor, pickled by value to the actors
        return env.physics_state([index])[0][0, :2]

    register_behaviour(Behaviour("torso-xz", torso, [[-2.0, 2.0], [0.0, 2.0]]), replace=True)
    try:
        config = RunConfig(
            env="Walker2d-v5",
            algorithm="map-elites",
            behaviour="torso-xz",
            max_episode_frames=40,
            slots=8,
            hyperparameters=dict(
                population_size=8, initial_population=12, sigma=0.1, cells=5, variation="iso_line", line_sigma=0.5
            ),
            **NOISE,
        )
        assert_same_qd_scores_on_two_actors(config)
    finally:
        unregister_behaviour("torso-xz")


def assert_same_qd_scores_on_two_actors(config):
    """Three generations of `config` locally and on two Ray actors: the same QD-scores."""
    with Trainer.from_config(config) as local:
        expected = [r.to_json()["qd_score"] for r in local.run(generations=3)]
    config.ray, config.ray_actors = True, 2
    with Trainer.from_config(config) as remote:
        assert isinstance(remote.evaluator, RayEvaluator)
        assert [r.to_json()["qd_score"] for r in remote.run(generations=3)] == expected


@pytest.mark.long
def test_cma_mae_with_a_step_behaviour_registered_here_runs_on_the_actors_as_locally():
    from workbench.evaluation.behaviour import Behaviour, register_behaviour, unregister_behaviour

    def posture(env, slots):  # the torso's height and angle after each step, averaged: pickled by value to the actors
        return np.asarray(env.observation(slots))[:, :2]

    register_behaviour(Behaviour("posture", step=posture, bounds=[[0.8, 1.4], [-1.0, 1.0]]), replace=True)
    try:
        config = RunConfig(
            env="Walker2d-v5",
            algorithm="cma-mae",
            behaviour="posture",
            max_episode_frames=40,
            slots=8,
            hyperparameters=dict(emitters=2, population_size=5, sigma_init=0.1, cells=5, qd_score_offset=-50.0),
            **NOISE,
        )
        assert_same_qd_scores_on_two_actors(config)
    finally:
        unregister_behaviour("posture")
