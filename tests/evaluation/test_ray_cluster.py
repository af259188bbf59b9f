"""A multi-node rehearsal on one machine: a Ray cluster of several nodes on 127.0.0.1 (ray.cluster_utils), one
RayEvaluator actor per node, and a node removed mid-generation: the generation completes on the nodes left
with every result counted once and equal to the local evaluator's."""

import os
import tempfile
import threading
import time

import numpy as np
import pytest

from support import module_available, requires_component
from workbench.evaluation import Evaluator
from workbench.evaluation.ray_evaluator import RayEvaluator
from workbench.evolution import EvaluationRequest, Genome, NoiseTable

pytestmark = pytest.mark.ray
NOISE = dict(noise_size=2**22, noise_seed=9)
PONG = dict(subpopulations=2, slots=2, max_episode_frames=400)


@pytest.fixture(scope="module")
def nodes():
    requires_component(module_available("ray"), "ray (pip install -e '.[ray]')")
    import ray
    from ray._private import ray_constants
    from ray.cluster_utils import Cluster

    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"  # every node on the loopback address
    ray_constants.ENABLE_RAY_CLUSTER = False
    if ray.is_initialized():
        ray.shutdown()
    base = tempfile.mkdtemp(prefix="rwc-", dir="/tmp")  # Ray's socket paths must stay short
    temp_dir = os.path.join(base, "ray")
    os.makedirs(temp_dir)
    previous = os.environ.get("RAY_TMPDIR")
    os.environ["RAY_TMPDIR"] = base  # where cluster_utils writes the cluster's address (default /tmp/ray)
    local = dict(node_ip_address="127.0.0.1", object_store_memory=100 * 2**20)
    cluster = Cluster(initialize_head=True, head_node_args=dict(num_cpus=0, include_dashboard=False, temp_dir=temp_dir, **local))
    workers = [cluster.add_node(num_cpus=1, **local) for _ in range(3)]  # two for the actors, one spare
    cluster.wait_for_nodes()
    yield cluster, workers
    if ray.is_initialized():
        ray.shutdown()
    cluster.shutdown()
    if previous is None:
        os.environ.pop("RAY_TMPDIR", None)
    else:
        os.environ["RAY_TMPDIR"] = previous


def node_of(actor):
    import ray

    return ray.get(actor.__ray_call__.remote(lambda self: ray.get_runtime_context().get_node_id()))


@pytest.mark.long  # about 3 minutes of a serial Ray chain: CI runs it after make test (make test-long)
def test_a_node_removed_mid_generation_loses_nothing_and_counts_nothing_twice(nodes):
    cluster, workers = nodes
    evaluator = RayEvaluator("pong", "small", address=cluster.address, actors=2, chunks_per_actor=4, **NOISE, **PONG)
    try:
        homes = [node_of(actor) for actor in evaluator.actors]
        assert len(set(homes)) == 2, "the two actors share a node"  # one CPU per node: one actor each
        rng = np.random.default_rng(3)
        parents = [Genome(evaluator.space.sample_offset(rng)) for _ in range(2)]
        requests = [
            EvaluationRequest(parents[k % 2].child(evaluator.space.sample_offset(rng), 0.01), 1, "population") for k in range(16)
        ]
        outcome = {}

        def run():
            try:
                outcome["results"] = evaluator.evaluate(requests, seed=11)
            except BaseException as error:  # noqa: BLE001 - reported below
                outcome["error"] = error

        thread = threading.Thread(target=run)
        thread.start()
        deadline = time.monotonic() + 180
        while not 1 <= evaluator.progress[0] < evaluator.progress[1] and time.monotonic() < deadline:
            time.sleep(0.01)  # until some chunks are done and others are running
        assert 1 <= evaluator.progress[0] < evaluator.progress[1], evaluator.progress
        index = list(dict(evaluator.in_flight).values())[0][0]  # an actor with chunks in flight
        victim_node = next(node for node in workers if node.node_id == homes[index])
        cluster.remove_node(victim_node)
        thread.join(300)
        assert not thread.is_alive() and "error" not in outcome, outcome.get("error")
        assert evaluator.restarts == 1
        assert node_of(evaluator.actors[index]) not in (homes[index],)  # the replacement runs on the spare node
        assert evaluator.telemetry.episodes == sum(r.episodes for r in requests)  # no chunk counted twice
        with Evaluator("pong", "small", noise=NoiseTable.shared(NOISE["noise_size"], NOISE["noise_seed"]), **PONG) as local:
            expected = local.evaluate(requests, seed=11)
        for got, want in zip(outcome["results"], expected, strict=True):
            np.testing.assert_array_equal(got.returns, want.returns)
            np.testing.assert_array_equal(got.frames, want.frames)
    finally:
        evaluator.close()
