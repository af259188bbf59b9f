"""RayEvaluator: the Evaluator's interface on a Ray cluster, shipping seed chains instead of weights.

    evaluator = RayEvaluator("frostbite", "small", actors=2)                     # a local cluster on 127.0.0.1
    evaluator = RayEvaluator("frostbite", "small", address="10.0.0.5:6379")      # join a running cluster
    results = evaluator.evaluate(requests, seed=0, bases=strategy.bases())       # as Evaluator.evaluate

Each Ray actor hosts a full pipelined Evaluator (its own ops, model slots and
emulators) and builds the noise table itself from the shared (size, seed), so a
genome travels as its seed chain (Genome.to_bytes: a few bytes per mutation) and
each actor's GenomeDecoder caches the parents it has materialised. Dense bases
(ES centers) are put in Ray's object store once per generation; an actor fetches a
base only when it does not hold it yet. The master (this object) only splits the
requests into chunks, keeps every actor busy with up to two chunks at a time,
collects returns and counts the bytes that travel (`telemetry.bytes_shipped`).
Its telemetry's busy phase lasts while every actor has a chunk (it ends when the
first actor runs out of work); its occupancy is the share of actors with work;
tail_steps are the actors' own (each chunk's slots running dry).

Episodes are seeded by their global (request, episode) index, so the results
equal the local Evaluator's for the same genomes and seed, whatever the chunking.
The observation statistics in force (observation normalisation) go with every
chunk; each episode's observation sums come back with its returns.

Faults: when an actor dies mid-generation its chunks in flight go back to the
queue, a new actor replaces it, and the generation completes; each chunk's result
is taken once (a re-run chunk replaces nothing: the dead actor's call returned no
result). A task that fails for another reason (a bad genome, a bug) is raised, not
retried.

Safe defaults: a local cluster binds to 127.0.0.1, Ray's dashboard is off (pass
dashboard=True), and Ray's temporary files go under `temp_dir` (default
$WORKBENCH_RAY_TMPDIR or /tmp/ray-workbench-<uid>; Ray needs a short path for its
sockets). close() shuts down the cluster this object started, and nothing else.

A family with an evaluator of its own (a function problem's FunctionEvaluator) runs on the actors the same way;
a problem registered in this process is registered in each actor before it builds its evaluator.
"""

from __future__ import annotations

import collections
import dataclasses
import os
import pickle
import socket
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from workbench.checks import check_int, check_optional_positive_int, check_positive_int, check_real, check_type
from workbench.evaluation.base import BaseEvaluator, EvaluationCancelled
from workbench.evaluation.behaviour import behaviour_function
from workbench.evaluation.factory import make_evaluator, worker_setup
from workbench.evaluation.layout import EvaluatorLayout
from workbench.evaluation.run_spec import RunSpec
from workbench.evaluation.telemetry import Telemetry, occupancy_profile
from workbench.evolution import EvaluationRequest, EvaluationResult, Genome, GenomeDecoder
from workbench.evolution.noise import DEFAULT_SEED, DEFAULT_SIZE

IN_FLIGHT_PER_ACTOR = 2  # one chunk running, one queued on the actor: no idle gap between chunks


class _ActorLost(Exception):
    """An actor died with chunks in flight (a fault: they run again elsewhere)."""


def check_cluster_answers(address: str, timeout: float = 5.0) -> None:
    """A ValueError naming `address` when nothing accepts a connection at its host and port ("host:port" or
    "ray://host:port"; "auto" is left to Ray): Ray itself would keep retrying for minutes before it fails."""
    target = address.removeprefix("ray://")
    if target == "auto":
        return
    host, _, port = target.rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"address {address!r} must be 'auto', 'host:port' or 'ray://host:port'")
    try:
        with socket.create_connection((host, int(port)), timeout=timeout):
            pass
    except OSError as error:
        raise ValueError(
            f"address {address!r}: no Ray cluster answers there ({error.strerror or error}); start one with "
            "`ray start --head` on that machine, or leave the address out for a local cluster"
        ) from error


def _loopback_only():
    """Makes a local Ray cluster bind its servers to 127.0.0.1 instead of every interface.

    Ray 2.x turns a loopback node address into the machine's address unless multi-node
    clusters are switched off (RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0, read when Ray is imported,
    and by the processes it starts); with them off, its servers listen on 127.0.0.1 only
    (tests/evaluation/test_ray.py checks every listening socket).
    """
    from ray._private import ray_constants

    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    ray_constants.ENABLE_RAY_CLUSTER = False


STARTUP_ATTEMPTS = 3  # tries of a local cluster's start-up (start_local_cluster)


def start_local_cluster(**init_options: Any) -> None:
    """ray.init(**init_options) of a new local cluster, tried again when Ray's start-up times out.

    A node's raylet stops if the node's dashboard agent (a Python process) has not written its port file within a
    fixed 15 s, which happens on a loaded machine; ray.init then raises "The current node timed out during
    startup". The processes that attempt started are stopped and the start is tried again, up to STARTUP_ATTEMPTS
    times in all; any other error is raised at once.
    """
    import ray  # noqa: I001 - before psutil: it puts its bundled psutil on the path
    import psutil

    me = psutil.Process()
    for attempt in range(1, STARTUP_ATTEMPTS + 1):
        before = {process.pid for process in me.children(recursive=True)}
        try:
            ray.init(**init_options)
            return
        except Exception as error:
            if "timed out during startup" not in str(error) or attempt == STARTUP_ATTEMPTS:
                raise
        ray.shutdown()
        leftovers = [process for process in me.children(recursive=True) if process.pid not in before]
        for process in leftovers:
            try:
                process.kill()
            except psutil.NoSuchProcess:
                pass
        psutil.wait_procs(leftovers, timeout=10)


def default_temp_dir() -> str:
    return os.environ.get("WORKBENCH_RAY_TMPDIR") or os.path.join(tempfile.gettempdir(), f"ray-workbench-{os.getuid()}")


class _EvaluatorActor:
    """Runs inside a Ray worker: one local evaluator (make_evaluator: the pipelined Evaluator, or the family's own),
    its decoder's cache, the bases it holds."""

    def __init__(self, spec, layout, threads, setup=None):
        import tensorflow as tf

        if threads:
            tf.config.threading.set_intra_op_parallelism_threads(threads)
            tf.config.threading.set_inter_op_parallelism_threads(threads)
        if setup is not None:  # what this process needs before it can build the spec's evaluator (factory.worker_setup)
            setup()
        self.evaluator = make_evaluator(spec, layout)
        self.bases = {}
        self._ids = []  # the global request indices of the chunk being evaluated (for frames)
        self._frame, self._frame_lock, self._watching = None, threading.Lock(), False

    def ready(self):
        return os.getpid()

    # Called in the actor's "frames" concurrency group: they run while evaluate() runs in the default one.
    def watch_frames(self, on):
        """Starts (on=True) or stops keeping the newest gameplay frame of this actor's evaluator."""
        if on and not self._watching:
            self.evaluator.add_frame_listener(self._keep_frame)
        elif not on and self._watching:
            self.evaluator.remove_frame_listener(self._keep_frame)
            with self._frame_lock:
                self._frame = None
        self._watching = bool(on)

    def latest_frame(self):
        """The newest frame since the last call (request: its global index), or None."""
        with self._frame_lock:
            frame, self._frame = self._frame, None
        return frame

    def _keep_frame(self, frame):
        ids = self._ids
        request = frame.get("request", 0)
        frame = dict(frame, request=ids[request] if request < len(ids) else request)
        with self._frame_lock:
            self._frame = frame

    def evaluate(self, payload, base_refs, max_episode_frames, observation_statistics=None):
        import ray

        chunk = pickle.loads(payload)
        if observation_statistics != self.evaluator.spec.observation_statistics:
            self.evaluator.set_observation_statistics(observation_statistics)
        fetched = 0
        wanted = {key: ref for key, ref in base_refs.items() if key not in self.bases}
        if wanted:
            for key, weights in zip(wanted, ray.get(list(wanted.values()))):
                self.bases[key] = weights
                fetched += weights.nbytes
        self.bases = {key: self.bases[key] for key in base_refs}
        if max_episode_frames != self.evaluator.max_episode_frames:
            self.evaluator.set_episode_cap(max_episode_frames)
        requests = [
            EvaluationRequest(Genome.from_bytes(g), episodes, phase, behaviour)
            for g, episodes, phase, behaviour in chunk["requests"]
        ]
        self._ids = list(chunk["ids"])
        results = self.evaluator.evaluate(
            requests, seed=chunk["seed"], bases=self.bases, request_ids=chunk["ids"], round_index=chunk["round"]
        )
        out = dict(
            results=[(r.returns, r.behaviours, r.steps, r.frames, r.observation_sums) for r in results],
            telemetry=dataclasses.asdict(self.evaluator.telemetry),
            fetched=fetched,
        )
        return pickle.dumps(out, protocol=pickle.HIGHEST_PROTOCOL)


class RayEvaluator(BaseEvaluator):
    """Evaluator.evaluate on Ray actors; see the module docstring.

    Args:
      env, model, max_episode_frames, env_options, model_options, noise_size, noise_seed: the RunSpec
        (or build it from one: RayEvaluator.from_spec(spec, actors=2)); every actor rebuilds it.
      subpopulations, slots, behaviour, perturbed_rank, cache_bytes, model_backend, action_noise: each actor's
        local Evaluator.
      actors: number of actors (each a full pipelined evaluator); default: the cluster's CPUs / cpus_per_actor.
      cpus_per_actor: CPUs Ray reserves per actor (also its TensorFlow thread count).
      address: an existing cluster to join ("auto", "host:port", "ray://..."); None = start a local one.
      num_cpus: CPUs of a local cluster (default: all); dashboard: start Ray's dashboard (local cluster only).
      temp_dir: where a local cluster keeps its files (see default_temp_dir()).
      max_restarts: actor replacements allowed over this evaluator's life (default 3 per actor).
      ready_timeout: seconds to wait for the actors to start (build their evaluators) before giving up.
      chunks_per_actor: requests are split into about this many chunks per actor. 1 (default) fills each
        actor's episode slots best (an actor runs one chunk at a time, and a chunk's last episodes leave
        slots idle); more balance uneven actors and lose less work to a dead actor.
      frame_interval: while frame listeners are added, the first actor keeps its newest gameplay frame
        and the master fetches it at most every frame_interval seconds during evaluate() (one actor
        streams; none while nobody listens).
    """

    def __init__(
        self,
        env: str,
        model: str | Callable = "small",
        *,
        max_episode_frames: int | None = None,
        env_options: Mapping | None = None,
        model_options: Mapping | None = None,
        noise_size: int | None = None,
        noise_seed: int | None = None,
        **options: Any,
    ) -> None:
        spec = RunSpec(
            env,
            model,
            env_options=env_options or {},
            model_options=model_options or {},
            max_episode_frames=max_episode_frames,
            noise_size=DEFAULT_SIZE if noise_size is None else noise_size,
            noise_seed=DEFAULT_SEED if noise_seed is None else noise_seed,
        )
        self._build(spec, **options)

    @classmethod
    def from_spec(cls, spec: RunSpec, layout: EvaluatorLayout | None = None, **options: Any) -> RayEvaluator:
        """The Ray evaluator of a RunSpec; `layout`: each actor's EvaluatorLayout (or its fields among `options`,
        the keywords of RayEvaluator other than the spec's own)."""
        evaluator = cls.__new__(cls)
        evaluator._build(spec, layout, **options)
        return evaluator

    def _build(
        self,
        spec,
        layout=None,
        *,
        actors=None,
        cpus_per_actor=1,
        address=None,
        num_cpus=None,
        dashboard=False,
        temp_dir=None,
        chunks_per_actor=1,
        max_restarts=None,
        ready_timeout=600,
        frame_interval=0.1,
        **options,
    ):
        check_optional_positive_int("actors", actors)
        check_positive_int("cpus_per_actor", cpus_per_actor)
        check_positive_int("chunks_per_actor", chunks_per_actor)
        check_real("frame_interval", frame_interval, 0, low_open=True)
        if "frame_listener" in options or "noise" in options:
            raise ValueError(
                "RayEvaluator takes noise_size/noise_seed (each actor builds its table) and no "
                "frame_listener argument (add listeners with add_frame_listener)"
            )
        if layout is None:
            layout = EvaluatorLayout.from_options(options, "RayEvaluator (for the actors' evaluators)")
        elif options:
            raise TypeError(f"RayEvaluator got a layout and the layout keywords {sorted(options)}")
        check_type("layout", layout, EvaluatorLayout)
        if address is not None and not isinstance(address, str):
            raise TypeError(f"address must be a string such as 'auto' or 'host:6379', got {type(address).__name__}")
        space = spec.space()
        # A family's own evaluator (FunctionEvaluator) checks the behaviours it has when each actor builds it.
        behaviour = layout.behaviour if spec.evaluator_module() is not None else behaviour_function(layout.behaviour)
        # The master's decoder only checks genomes before they travel (it never decodes).
        super().__init__(spec, space, GenomeDecoder(space, cache_bytes=0), behaviour)
        self._worker_setup = worker_setup(spec, layout)
        self.chunks_per_actor, self.cpus_per_actor = chunks_per_actor, cpus_per_actor
        self.frame_interval = float(frame_interval)
        self._frame_ref, self._last_frame_poll = None, 0.0
        self.layout = layout
        self.owns_cluster = False
        self.actors = []
        try:
            actors = self._start_actors(actors, address, num_cpus, dashboard, temp_dir, ready_timeout)
        except BaseException:
            self.close()
            raise
        self.max_restarts = 3 * actors if max_restarts is None else max_restarts
        self.telemetry = Telemetry(subpopulations=actors * self.layout.subpopulations)
        self.restarts = 0  # actors replaced after dying
        self.progress = (0, 0)  # (chunks done, chunks) of the evaluation in progress or the last one
        self.rounds = 0  # evaluate() calls so far: the actors' decoders age their caches by these rounds
        self.in_flight = {}  # chunks submitted and not yet returned: ObjectRef -> (actor index, chunk index)
        self._base_refs = {}

    def _start_actors(self, actors, address, num_cpus, dashboard, temp_dir, ready_timeout):
        """Connects to (or starts) the cluster and starts the actors; returns how many."""
        import ray

        started = False  # a local cluster started here
        if not ray.is_initialized():
            if address is None:
                temp_dir = temp_dir or default_temp_dir()
                os.makedirs(temp_dir, exist_ok=True)
                _loopback_only()
                # Ray lowers its workers' priority (nice 15) by default; the actors are the evaluators doing
                # the run's work, so they keep the driver's (the local Evaluator's threads have it too).
                start_local_cluster(
                    num_cpus=num_cpus,
                    include_dashboard=bool(dashboard),
                    _node_ip_address="127.0.0.1",
                    _temp_dir=temp_dir,
                    log_to_driver=False,
                    configure_logging=False,
                    _system_config={"worker_niceness": 0},
                )
                started = True
            else:
                check_cluster_answers(address)
                ray.init(address=address, log_to_driver=False, configure_logging=False)
            self.owns_cluster = True
        cpus = self.cpus_per_actor
        if started:  # a new cluster reports its CPUs a moment after ray.init (seen under load: none free at first)
            deadline = time.monotonic() + 30
            while ray.available_resources().get("CPU", 0) < (actors or 1) * cpus and time.monotonic() < deadline:
                time.sleep(0.1)
        if actors is None:
            actors = max(1, int(ray.cluster_resources().get("CPU", 1) // cpus))
        free = ray.available_resources().get("CPU", 0)
        if actors * cpus > free:
            raise ValueError(
                f"actors: {actors} actors of {cpus} CPU need {actors * cpus} CPUs; the Ray cluster has {free:g} free"
            )
        self._remote = ray.remote(num_cpus=cpus, max_restarts=0, concurrency_groups={"frames": 1})(_EvaluatorActor)
        self.actors = [self._new_actor() for _ in range(actors)]
        ray.get([actor.ready.remote() for actor in self.actors], timeout=ready_timeout)
        return actors

    def _new_actor(self):
        return self._remote.remote(self.spec, self.layout, self.cpus_per_actor, self._worker_setup)

    # -- evaluation -----------------------------------------------------------------------
    def evaluate(
        self,
        requests: Sequence[EvaluationRequest],
        seed: int = 0,
        bases: Mapping[str, np.ndarray] | None = None,
        cancel: threading.Event | None = None,
        request_ids: Sequence[int] | None = None,
        round_index: int | None = None,
    ) -> list[EvaluationResult]:
        """As Evaluator.evaluate, on the actors; sets self.telemetry (bytes_shipped included). round_index: the
        round the actors' decoders age their caches by (default: this evaluator's count of calls)."""
        requests = self.check_requests(requests, bases, cancel)
        ids = self.check_request_ids(request_ids, len(requests))
        if round_index is not None:
            check_int("round_index", round_index, 0)
        start = time.perf_counter()
        shipped = self._put_bases(bases or {})
        self.rounds += 1
        chunks = self._chunks(requests, seed, self.rounds if round_index is None else round_index, ids)
        self.progress = (0, len(chunks))
        pending = collections.deque(range(len(chunks)))
        in_flight = self.in_flight = {}  # ObjectRef -> (actor index, chunk index)
        load = [0] * len(self.actors)  # chunks in flight per actor
        outputs: dict[int, Any] = {}
        times: list[float] = []  # actors with work over time; the end of the busy phase
        working: list[int] = []
        dry_at = None
        while pending or in_flight:
            if cancel is not None and cancel.is_set():
                self._cancel(list(in_flight))
                raise EvaluationCancelled("the evaluation was cancelled")
            for level in range(1, IN_FLIGHT_PER_ACTOR + 1):  # round robin: every actor busy before any queues
                for index in range(len(self.actors)):
                    if not pending:
                        break
                    if load[index] < level:
                        chunk = pending.popleft()
                        in_flight[self._submit(index, chunks[chunk])] = (index, chunk)
                        load[index] += 1
                        shipped += len(chunks[chunk])
            busy_actors = sum(1 for n in load if n)
            if not working or working[-1] != busy_actors:
                times.append(time.perf_counter())
                working.append(busy_actors)
            if dry_at is None and not pending and busy_actors < len(self.actors):
                dry_at = time.perf_counter()
            watching = self.has_frame_listeners
            ready = self._ready(list(in_flight), self.frame_interval if watching else 0.2)
            if watching:
                self._poll_frame()
            for ref in ready:
                if ref not in in_flight:
                    continue  # re-queued with its dead actor's other chunks
                index, chunk = in_flight.pop(ref)
                load[index] -= 1
                try:
                    payload = self._fetch(ref)
                except _ActorLost:  # the actor died: its chunks go back to the queue, a new actor takes its place
                    lost = [chunk]
                    for other, (owner, other_chunk) in list(in_flight.items()):
                        if owner == index:
                            del in_flight[other]
                            lost.append(other_chunk)
                    load[index] = 0
                    pending.extendleft(sorted(lost, reverse=True))
                    self._replace(index)
                    continue
                shipped += len(payload)
                out = pickle.loads(payload)
                shipped += out["fetched"]
                outputs.setdefault(chunk, out)
                self.progress = (len(outputs), len(chunks))
        end = time.perf_counter()
        self.telemetry = self._telemetry(
            [outputs[c]["telemetry"] for c in range(len(chunks))],
            end - start,
            shipped,
            (end if dry_at is None else dry_at) - start,
            occupancy_profile([(times, working)], start, end, len(self.actors)),
        )
        results = []
        for c in range(len(chunks)):
            for returns, behaviours, steps, frames, observation_sums in outputs[c]["results"]:
                results.append(EvaluationResult(returns, behaviours, steps, frames, observation_sums))
        return results

    # -- the transport: what evaluate() asks of Ray (workbench/bench/ray_scaling.py replaces it to time the master alone)
    def _submit(self, index, chunk):
        """Starts actor `index` on a pickled chunk; returns the reference of its result."""
        return self.actors[index].evaluate.remote(
            chunk, self._base_refs, self.max_episode_frames, self.spec.observation_statistics
        )

    def _ready(self, refs, timeout):
        """The references among `refs` whose results are ready: waits up to `timeout` s for the first, then
        takes every other one ready by then."""
        import ray

        ready, rest = ray.wait(refs, num_returns=1, timeout=timeout)
        if ready and rest:
            more, _ = ray.wait(rest, num_returns=len(rest), timeout=0)
            ready += more
        return ready

    def _fetch(self, ref):
        """A ready result's bytes; _ActorLost when its actor died (an error raised inside the actor is raised)."""
        import ray
        from ray.exceptions import RayActorError, RayTaskError

        try:
            return ray.get(ref)
        except RayTaskError as error:  # raised inside the actor: a real error, not a fault
            raise error.as_instanceof_cause() from None
        except RayActorError as error:
            raise _ActorLost from error

    def _cancel(self, refs):
        import ray

        for ref in refs:
            ray.cancel(ref, force=False)

    def _put(self, value):
        """A value in the object store, for every actor to fetch."""
        import ray

        return ray.put(value)

    def _chunks(self, requests, seed, round_index, request_ids=None):
        """Pickled chunks of consecutive requests with about equal numbers of episodes (of round `round_index`);
        each carries its requests' ids for the episode seeds (request_ids, default their positions)."""
        request_ids = range(len(requests)) if request_ids is None else request_ids
        total = sum(r.episodes for r in requests)
        target = max(1, -(-total // (len(self.actors) * self.chunks_per_actor)))
        chunks, current, episodes = [], [], 0
        for index, request in enumerate(requests):
            current.append(index)
            episodes += request.episodes
            if episodes >= target:
                chunks.append(current)
                current, episodes = [], 0
        if current:
            chunks.append(current)
        return [
            pickle.dumps(
                dict(
                    seed=seed,
                    round=round_index,
                    ids=[request_ids[i] for i in positions],
                    requests=[
                        (requests[i].genome.to_bytes(), requests[i].episodes, requests[i].phase, requests[i].behaviour)
                        for i in positions
                    ],
                ),
                protocol=pickle.HIGHEST_PROTOCOL,
            )
            for positions in chunks
        ]

    def _put_bases(self, bases):
        """Puts new dense bases in the object store (once each); returns their bytes."""
        added = 0
        refs = {}
        for key, weights in bases.items():
            if key not in self._base_refs:
                weights = np.ascontiguousarray(weights, np.float32)
                self._base_refs[key] = self._put(weights)
                added += weights.nbytes
            refs[key] = self._base_refs[key]
        self._base_refs = refs
        return added

    def _replace(self, index):
        import ray

        self.restarts += 1
        if self.restarts > self.max_restarts:
            raise RuntimeError(f"Ray actors died {self.restarts} times; giving up (max_restarts={self.max_restarts})")
        try:
            ray.kill(self.actors[index], no_restart=True)
        except Exception:  # noqa: BLE001 - it is dead already
            pass
        self.actors[index] = self._new_actor()
        if index == 0:
            self._frame_ref = None
            if self.has_frame_listeners:
                self._watch_frames(True)

    # -- gameplay frames ------------------------------------------------------------------
    def _listeners_changed(self):
        if self.actors:
            self._watch_frames(self.has_frame_listeners)

    def _watch_frames(self, on):
        self.actors[0].watch_frames.options(concurrency_group="frames").remote(on)
        if not on:
            self._frame_ref = None

    def _poll_frame(self):
        """Publishes the first actor's newest frame, fetched without waiting (at most every frame_interval)."""
        import ray
        from ray.exceptions import RayError

        if self._frame_ref is not None:
            ready, _ = ray.wait([self._frame_ref], timeout=0)
            if not ready:
                return
            ref, self._frame_ref = self._frame_ref, None
            try:
                frame = ray.get(ref)
            except RayError:  # the actor died; _replace starts the stream again on its successor
                return
            if frame is not None:
                self._publish_frame(frame)
        now = time.monotonic()
        if now - self._last_frame_poll >= self.frame_interval:
            self._last_frame_poll = now
            self._frame_ref = self.actors[0].latest_frame.options(concurrency_group="frames").remote()

    def _telemetry(self, parts, wall_seconds, shipped, busy_seconds, occupancy):
        lanes = len(self.actors) * self.layout.subpopulations
        return Telemetry.combine(
            [Telemetry.from_dict(part) for part in parts], wall_seconds, lanes, shipped, busy_seconds, occupancy
        )

    # -- lifetime -------------------------------------------------------------------------
    def close(self) -> None:
        """Kills the actors; shuts Ray down when this object started the cluster."""
        import ray

        if not ray.is_initialized():
            return
        for actor in self.actors:
            try:
                ray.kill(actor, no_restart=True)
            except Exception:  # noqa: BLE001 - already gone
                pass
        self.actors = []
        if self.owns_cluster:
            ray.shutdown()
            self.owns_cluster = False
