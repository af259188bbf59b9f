"""MuJoCo in TensorFlow ops against Gymnasium's own v5 environments: bit-equal episodes for all seven tasks,
the reference backend as twin, layout and history independence, instability, bad input, and a task's rules on
other models (xml_file).

Measured tolerance: zero. Same libmujoco, same steps, rewards summed in numpy's order and rounding
(the MuJoCo library is compiled without fused multiply-adds): observations (float32), rewards (float32),
episode returns and the info terms (float64) are identical to Gymnasium's, so the tests assert equality.
One exception: `distance_from_origin`, which Gymnasium computes with np.linalg.norm, a BLAS dot whose rounding
depends on numpy's OpenBLAS build and the CPU (numpy 2.4.6's OpenBLAS 0.3.31 fuses the second product into the
sum on AVX-512 machines; the op computes x*x + y*y): it is compared to within one unit in the last place.
"""

import glob
import inspect
import os
import time
import warnings

import gymnasium
import gymnasium.envs.mujoco
import numpy as np
import pytest
import tensorflow as tf

from support import DATA
from workbench.envs import BODY_POSITION, FEET_CONTACT, IN_GRAPH, PHYSICS_STATE, RAM, MujocoBatch, make_batch
from workbench.envs.mujoco.reference import reset_noise
from workbench.envs.mujoco.tasks import INFO_TERMS, TASKS, find_mujoco_task, resolve_mujoco_task
from workbench.ops import mujoco_env

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")
TASK_IDS = list(TASKS)
TERMINATING = ("Hopper-v5", "Walker2d-v5", "Ant-v5", "Humanoid-v5", "InvertedPendulum-v5")


def info_equal(name, ours, theirs):
    """Equality, except distance_from_origin to within one ulp (numpy's norm rounds as its BLAS does; module doc)."""
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    if name == "distance_from_origin":
        return (ours == theirs) | (np.abs(ours - theirs) <= np.spacing(np.abs(theirs)))
    return (ours == theirs) | (np.isnan(ours) & np.isnan(theirs))


def random_actions(batch, rng, n, margin=1.2):
    """Uniform actions up to 20 % beyond the control range (MuJoCo clamps them; the control cost does not)."""
    low, high = batch.action_low * margin, batch.action_high * margin
    return rng.uniform(low, high, size=(n, batch.action_size)).astype(np.float32)


def gymnasium_twin(batch, index):
    """A Gymnasium env of the batch's task and settings, put into simulation `index`'s current physics state."""
    kwargs = dict(batch.settings, xml_file=batch.task.xml_path(batch.settings))
    env = gymnasium.make(batch.task.gymnasium_id, max_episode_steps=batch.max_episode_steps, **kwargs)
    env.reset(seed=0)
    qpos, qvel = batch.physics_state([index])
    env.unwrapped.set_state(qpos[0], qvel[0])
    return env


def play_against_gymnasium(task_id, steps, seed=0, **kwargs):
    """Plays `steps` steps (episode after episode) on the ops and on Gymnasium from the same states; asserts equality."""
    batch = MujocoBatch(task_id, 1, seed=seed, backend="custom", **kwargs)
    rng = np.random.default_rng(seed)
    played = episodes = 0
    while played < steps:
        observation = batch.reset()[0]
        env = gymnasium_twin(batch, 0)
        assert np.array_equal(observation, env.unwrapped._get_obs().astype(np.float32))
        episodes += 1
        episode_return = 0.0
        while played < steps:
            action = random_actions(batch, rng, 1)
            reward, done, observation = batch.step_and_observe([0], action)
            expected = env.step(action[0])
            played += 1
            episode_return += float(expected[1])
            status = batch.status([0])
            assert np.array_equal(observation[0], expected[0].astype(np.float32)), (task_id, played)
            assert reward[0] == np.float32(expected[1]), (task_id, played, reward[0], expected[1])
            assert (status["terminated"][0], status["truncated"][0]) == (expected[2], expected[3]), (task_id, played)
            assert status["episode_return"][0] == episode_return
            for name in batch.task.info:
                assert info_equal(name, status[name][0], expected[4][name]), (
                    task_id,
                    played,
                    name,
                    status[name][0],
                    expected[4][name],
                )
            if done[0]:
                break
        env.close()
    batch.close()
    return episodes


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_episodes_equal_gymnasium_bit_for_bit(task_id):
    play_against_gymnasium(task_id, 1000)


@pytest.mark.parity
@pytest.mark.parametrize("task_id", TASK_IDS)
def test_many_episodes_equal_gymnasium_bit_for_bit(task_id):
    """The parity tier: 10,000 steps from each of three more seeds (episodes of every length, many resets)."""
    for seed in (1, 2, 5):
        play_against_gymnasium(task_id, 10000, seed=seed)


@pytest.mark.parametrize("task_id", TERMINATING[:4])
def test_long_episodes_equal_gymnasium_without_termination(task_id):
    """1,000 steps in one episode of a task that usually terminates early under random actions."""
    assert play_against_gymnasium(task_id, 1000, seed=3, terminate_when_unhealthy=False) == 1


def test_changed_settings_reach_the_simulation():
    play_against_gymnasium(
        "HalfCheetah-v5",
        200,
        forward_reward_weight=2.5,
        ctrl_cost_weight=0.3,
        reset_noise_scale=0.5,
        exclude_current_positions_from_observation=False,
    )
    play_against_gymnasium(
        "Ant-v5",
        200,
        include_cfrc_ext_in_observation=False,
        healthy_z_range=(0.1, 2.0),
        contact_cost_weight=1e-3,
        main_body="torso",
    )
    play_against_gymnasium("Humanoid-v5", 100, include_cinert_in_observation=False, contact_cost_range=(0.0, 1.0))


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_the_reference_backend_is_the_twin_of_the_ops(task_id, rng):
    batches = [MujocoBatch(task_id, 3, seed=11, backend=backend) for backend in ("custom", "reference")]
    observations = [b.reset() for b in batches]
    assert np.array_equal(*observations)
    for _ in range(60):
        live = np.flatnonzero(~batches[0].done())
        if not live.size:
            break
        indices = rng.permutation(live)[: rng.integers(1, live.size + 1)]
        actions = random_actions(batches[0], rng, indices.size)
        results = [b.step_and_observe(indices, actions) for b in batches]
        for ours, theirs in zip(*results):
            assert np.array_equal(ours, theirs)
    status = [b.status() for b in batches]
    for name in status[0]:
        assert np.all(info_equal(name, status[0][name], status[1][name])), (name, status[0][name], status[1][name])
    np.testing.assert_array_equal(batches[0].body_position([0]), batches[1].body_position([0]))
    if batches[0].task.feet:
        np.testing.assert_array_equal(batches[0].feet_contact(), batches[1].feet_contact())
    for b in batches:
        b.close()


@pytest.mark.parametrize("task_id", ["Hopper-v5", "Walker2d-v5", "Ant-v5"])
def test_feet_contact_is_counted_in_the_op_as_the_reference_counts_it(task_id, rng):
    """QDax's descriptor: each foot's share of the steps that ended with it on the ground, counted inside the op;
    the reference counts the same contacts from Gymnasium's own simulation."""
    batches = [MujocoBatch(task_id, 4, seed=2, backend=backend) for backend in ("custom", "reference")]
    for b in batches:
        b.reset()
        assert b.supports(FEET_CONTACT) and b.feet_contact().tolist() == [[0.0] * len(b.task.feet)] * 4
    steps = np.zeros(4)
    for _ in range(150):
        live = np.flatnonzero(~batches[0].done())
        if not live.size:
            break
        actions = random_actions(batches[0], rng, live.size)
        for b in batches:
            b.step(live, actions)
        steps[live] += 1
    contact = batches[0].feet_contact()
    np.testing.assert_array_equal(contact, batches[1].feet_contact())
    assert contact.shape == (4, len(TASKS[task_id].feet)) and ((contact >= 0) & (contact <= 1)).all()
    assert contact.max() > 0.1 and np.allclose(contact * steps[:, None], np.round(contact * steps[:, None]))
    batches[0].reset([0])
    assert batches[0].feet_contact([0]).tolist() == [[0.0] * len(TASKS[task_id].feet)]  # a new episode starts at 0
    for b in batches:
        b.close()


def test_feet_contact_needs_a_task_with_feet():
    batch = MujocoBatch("Swimmer-v5", 1)
    batch.reset()
    assert not batch.supports(FEET_CONTACT)
    with pytest.raises(ValueError, match=r"feet_contact\(\) needs a batch with the 'feet_contact' capability"):
        batch.feet_contact()
    with pytest.raises(tf.errors.InvalidArgumentError, match="feet contact of Swimmer-v5: the task Swimmer-v5 has no feet"):
        mujoco_env.feet_contact(batch._backend.handle, tf.constant([0], tf.int32))


def test_reset_noise_follows_the_documented_generator():
    batch = MujocoBatch("HalfCheetah-v5", 2, backend="custom")
    batch.reset([0, 1], seeds=[5, -9])
    qpos, qvel = batch.physics_state()
    task = TASKS["HalfCheetah-v5"]
    for k, seed in enumerate((5, -9)):
        expected = reset_noise(task, batch.settings, mujoco_model(task).qpos0, qvel.shape[1], seed)
        assert np.array_equal(qpos[k], expected[0]) and np.array_equal(qvel[k], expected[1])
    assert np.abs(qpos[0] - mujoco_model(task).qpos0).max() <= 0.1  # uniform in +-reset_noise_scale


def mujoco_model(task):
    import mujoco

    return mujoco.MjModel.from_xml_path(task.xml_path(task.settings()))


def test_episodes_do_not_depend_on_layout_or_history(rng):
    """The same seeds give the same episodes whatever else the batch did before and whichever indices step."""
    seeds = [101, 202, 303]
    actions = [random_actions(MujocoBatch("Hopper-v5", 1), np.random.default_rng(k), 40) for k in range(3)]

    def play(batch, slots):
        batch.reset(slots, seeds=seeds)
        trace = {k: [] for k in range(3)}
        for t in range(40):
            live = [k for k in range(3) if not batch.done([slots[k]])[0]]
            if not live:
                break
            rows = np.array([actions[k][t] for k in live])
            rewards, _, observations = batch.step_and_observe([slots[k] for k in live], rows)
            for j, k in enumerate(live):
                trace[k].append((rewards[j], observations[j].tobytes()))
        return trace

    fresh = play(MujocoBatch("Hopper-v5", 3, backend="custom"), [0, 1, 2])
    used = MujocoBatch("Hopper-v5", 6, backend="custom")
    used.reset()
    for _ in range(25):  # other episodes first, in the same slots
        live = np.flatnonzero(~used.done())
        if live.size:
            used.step(live, random_actions(used, rng, live.size))
    assert play(used, [5, 0, 3]) == fresh


_THREADS_SCRIPT = """
import hashlib, sys
import numpy as np


def digest():
    from workbench.envs import MujocoBatch

    b = MujocoBatch("Ant-v5", 8, seed=4, backend="custom", terminate_when_unhealthy=False)
    h = hashlib.sha256(b.reset().tobytes())
    rng = np.random.default_rng(0)
    for _ in range(50):
        r, d, o = b.step_and_observe(range(8), rng.uniform(-1, 1, (8, 8)).astype(np.float32))
        h.update(r.tobytes())
        h.update(o.tobytes())
    return h.hexdigest()


if __name__ == "__main__":
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(int(sys.argv[1]))
    print(digest())
"""


def test_same_results_with_one_thread_and_one_per_core():
    import subprocess
    import sys

    # one thread in a process of its own (the thread count is fixed when TensorFlow starts), against this
    # process's default of one thread per core
    single = subprocess.run([sys.executable, "-c", _THREADS_SCRIPT, "1"], capture_output=True, text=True, check=True, timeout=300)
    namespace = {"__name__": "threads"}
    exec(_THREADS_SCRIPT, namespace)
    assert single.stdout.strip().splitlines()[-1] == namespace["digest"]()


@pytest.mark.parametrize("backend", ["custom", "reference"])
def test_an_unstable_simulation_ends_its_episode_without_nan(backend):
    batch = MujocoBatch("HalfCheetah-v5", 2, backend=backend)
    batch.reset()
    qpos, qvel = batch.physics_state()
    qvel[1] = 1e30  # MuJoCo flags the velocities as bad at the next step
    batch.set_physics_state([1], qpos[1:], qvel[1:])
    rewards, done, observations = batch.step_and_observe([0, 1], np.zeros((2, 6), np.float32))
    status = batch.status()
    assert done.tolist() == [False, True] and status["unstable"].tolist() == [False, True]
    assert status["truncated"][1] and not status["terminated"][1]
    assert rewards[1] == 0 and np.all(observations[1] == 0) and np.all(np.isfinite(observations))
    with pytest.raises(ValueError, match="end of its episode"):
        batch.step([1], np.zeros((1, 6), np.float32))
    batch.reset([1])
    assert not batch.status([1])["unstable"][0]


def test_the_time_limit_truncates_like_gymnasium():
    batch = MujocoBatch("swimmer", 1, max_episode_steps=7, backend="custom")
    batch.reset()
    for t in range(7):
        _, done = batch.step([0], np.zeros((1, 2), np.float32))
        assert done[0] == (t == 6)
    status = batch.status()
    assert status["truncated"][0] and not status["terminated"][0] and status["episode_steps"][0] == 7
    assert batch.episode_frames().tolist() == [7]


def test_capabilities_names_and_make_batch():
    batch = make_batch("half_cheetah", 2, seed=1)
    assert isinstance(batch, MujocoBatch) and batch.task.id == "HalfCheetah-v5" and batch.backend == "custom"
    assert batch.supports(IN_GRAPH) and batch.supports(PHYSICS_STATE) and batch.supports(BODY_POSITION)
    assert not batch.supports(RAM) and batch.continuous_actions and batch.num_actions is None
    assert batch.observation_shape == (17,) and batch.action_size == 6 and batch.action_low.tolist() == [-1.0] * 6
    assert not MujocoBatch("ant", 1, backend="reference").supports(IN_GRAPH)
    for name, expected in (
        ("Walker2d-v5", "Walker2d-v5"),
        ("walker", "Walker2d-v5"),
        ("HUMANOID", "Humanoid-v5"),
        ("inverted_pendulum", "InvertedPendulum-v5"),
        ("hopper-v5", "Hopper-v5"),
    ):
        assert find_mujoco_task(name).id == expected
    assert find_mujoco_task("Pendulum-v1") is None and find_mujoco_task("pong") is None


def test_task_defaults_are_gymnasiums():
    for task in TASKS.values():
        env = gymnasium.make(task.gymnasium_id)
        signature = inspect.signature(type(env.unwrapped).__init__)
        expected = {
            name: p.default
            for name, p in signature.parameters.items()
            if p.default is not inspect.Parameter.empty and name != "default_camera_config"
        }
        if task.rules is not None:  # a variant: its rules' task on another model
            expected["xml_file"] = task.defaults["xml_file"]
        assert task.defaults == expected, task.id
        assert gymnasium.spec(task.gymnasium_id).max_episode_steps == 1000
        assert set(task.info) <= set(INFO_TERMS)
        env.close()


def test_bad_input_names_the_argument():
    with pytest.raises(ValueError, match="halfcheetah|HalfCheetah"):
        resolve_mujoco_task("halfcheetta")
    with pytest.raises(ValueError, match="ctrl_cost_weight"):
        MujocoBatch("hopper", 1, ctrl_cost_wieght=0.1)
    with pytest.raises(TypeError, match="healthy_z_range"):
        MujocoBatch("hopper", 1, healthy_z_range=0.5)
    with pytest.raises(ValueError, match="healthy_z_range"):
        MujocoBatch("hopper", 1, healthy_z_range=(2.0, 1.0))
    with pytest.raises(ValueError, match="reset_noise_scale"):
        MujocoBatch("hopper", 1, reset_noise_scale=-1)
    with pytest.raises(ValueError, match="main_body"):
        MujocoBatch("ant", 1, main_body="tail")
    with pytest.raises(ValueError, match="xml_file"):
        MujocoBatch("ant", 1, xml_file="no_such_model.xml")
    with pytest.raises(ValueError, match="max_episode_steps"):
        MujocoBatch("ant", 1, max_episode_steps=0)
    batch = MujocoBatch("hopper", 2)  # (bad indices and actions in general: the contract, tests/envs/test_env_contract.py)
    batch.reset()
    with pytest.raises(ValueError, match=r"actions\[0, 0\] = inf is not finite"):  # float64 beyond float32
        batch.step([0, 1], np.full((2, 3), 1e39))
    with pytest.raises(ValueError, match="qvel"):
        batch.set_physics_state([0], np.zeros((1, 6)), np.full((1, 6), np.inf))


def test_the_ops_refuse_bad_calls_themselves():
    task = TASKS["Hopper-v5"]
    settings = task.settings()
    handle, sizes, _ = mujoco_env.create(task.id, task.xml_path(settings), 2, task.parameters(settings), frame_skip=4)
    indices = np.array([0], np.int32)

    for call, message in (
        (lambda: mujoco_env.step(handle, indices, np.zeros((1, 3), np.float32)), "reset"),
        (lambda: mujoco_env.reset(handle, np.array([3], np.int32), np.zeros(1, np.int64)), "out of range"),
        (lambda: mujoco_env.reset(handle, np.array([0, 0], np.int32), np.zeros(2, np.int64)), "repeated"),
        (
            lambda: mujoco_env.create("Hopper-v9", task.xml_path(settings), 1, task.parameters(settings), frame_skip=4),
            "Hopper-v9",
        ),
        (lambda: mujoco_env.create(task.id, "/nonexistent.xml", 1, task.parameters(settings), frame_skip=4), "nonexistent"),
        (lambda: mujoco_env.create(task.id, task.xml_path(settings), 1, np.zeros(3), frame_skip=4), "parameters"),
    ):
        with pytest.raises(tf.errors.InvalidArgumentError, match=message):
            call()
    mujoco_env.reset(handle, indices, np.zeros(1, np.int64))
    with pytest.raises(tf.errors.InvalidArgumentError, match="actions"):
        mujoco_env.step(handle, indices, np.full((1, 3), np.inf, np.float32))
    with pytest.raises(tf.errors.InvalidArgumentError, match="actions"):
        mujoco_env.step(handle, indices, np.zeros((1, 4), np.float32))
    mujoco_env.destroy(handle)
    with pytest.raises(tf.errors.NotFoundError):
        mujoco_env.observation(handle, indices)


def test_a_library_built_for_another_mujoco_is_refused(monkeypatch):
    from workbench.ops import _loader

    monkeypatch.setattr(_loader, "_components_checked", set())
    monkeypatch.setattr(mujoco_env, "installed_mujoco_version", lambda: "3.9.9")
    with pytest.raises(_loader.OpsLibraryError, match=r"MuJoCo 4\.0\.1.*3\.9\.9.*make install"):
        mujoco_env._library()


def hopper_requests(space, rng):
    from workbench.evolution import EvaluationRequest, Genome

    parents = [Genome(space.sample_offset(rng)) for _ in range(2)]
    genomes = parents + [parents[k % 2].child(space.sample_offset(rng), 0.05) for k in range(3)]
    return [EvaluationRequest(g, 1 + k % 2, "population") for k, g in enumerate(genomes)]


def test_the_evaluator_runs_mujoco_in_graph_equal_to_a_plain_gymnasium_loop(rng):
    """Policies read observations inside the graph (IN_GRAPH) and write continuous actions; the returns equal
    a plain loop on Gymnasium's own Hopper-v5, and do not depend on sub-populations or slots."""
    from workbench.envs.rng import episode_seed
    from workbench.evaluation import Evaluator
    from workbench.evaluation.observation_source import InGraphObservations
    from workbench.evolution import GenomeDecoder, NoiseTable
    from workbench.models import MLPModel

    table = NoiseTable.shared(2**20, seed=8)
    options = dict(model_options=dict(hidden_sizes=(16,)), noise=table, max_episode_frames=150)
    outcomes = []
    for subpopulations, slots in ((1, 3), (2, 8)):
        with Evaluator("Hopper-v5", "mlp", subpopulations=subpopulations, slots=slots, **options) as evaluator:
            assert isinstance(evaluator.subpopulations[0].observations, InGraphObservations)  # they stay in the graph
            if not outcomes:
                space = evaluator.space
                requests = hopper_requests(space, rng)
            results = evaluator.evaluate(requests, seed=5)
            outcomes.append([(r.returns.tolist(), r.steps.tolist()) for r in results])
    assert outcomes[0] == outcomes[1]
    reference = MujocoBatch("Hopper-v5", 1, max_episode_steps=150, backend="reference")
    model = MLPModel(
        11, 3, hidden_sizes=(16,), action_range=(reference.action_low, reference.action_high), activation="tanh"
    )  # "mlp" on continuous actions: tanh between layers
    decoder = GenomeDecoder(space)
    for r, request in enumerate(requests):
        model.set_slot(0, decoder.decode_full(request.genome))
        for e in range(request.episodes):
            observation = reference.reset([0], [episode_seed(5, r, e)])
            total, steps, done = 0.0, 0, False
            while not done:
                reward, (done,) = reference.step([0], model.act(observation, np.zeros(1, np.int32)).numpy())
                observation = reference.observation([0])
                total, steps = total + float(reward[0]), steps + 1
            assert outcomes[0][r][0][e] == total and outcomes[0][r][1][e] == steps


def test_the_default_camera_keeps_a_running_agent_in_the_frame(task_id="HalfCheetah-v5"):
    """Gymnasium's cameras for HalfCheetah and Ant stay where the agent started: at x = 4.26 and x = 20 they show the
    same empty floor. The default camera tracks the torso: the agent is in the frame wherever it is."""
    frames = {}
    for camera in ("track", "gymnasium"):
        batch = MujocoBatch(task_id, 1, render_size=(72, 96), render_camera=camera)
        batch.reset()
        qpos, qvel = batch.physics_state()
        moved = np.repeat(qpos, 3, axis=0)
        moved[:, 0] = [0.0, 4.26, 20.0]
        frames[camera] = batch.render_states(moved, np.repeat(qvel, 3, axis=0)).astype(float)
        batch.close()
    track, gym = frames["track"], frames["gymnasium"]
    empty_floor = gym[2]
    assert np.abs(gym[1] - empty_floor).mean() < 0.5  # Gymnasium's camera: the agent has left the picture
    for k in range(3):
        assert np.abs(track[k] - empty_floor).mean() > 20, k  # ours: the agent is there
    assert np.abs(track[2] - track[0]).mean() < 5  # and framed alike wherever it is
    with pytest.raises(ValueError, match="render_camera must be one of"):
        MujocoBatch(task_id, 1, render_camera="overhead")


def test_screens_render_headless_with_gymnasiums_camera():
    batch = MujocoBatch("Humanoid-v5", 2, render_size=(120, 160), render_camera="gymnasium")
    assert batch.supports("screen")
    batch.reset()
    frames = batch.screen([1, 0])
    assert frames.shape == (2, 120, 160, 3) and frames.dtype == np.uint8
    assert frames.std() > 10  # a scene, not a blank buffer
    qpos, qvel = batch.physics_state([0])
    qpos[0, 2] += 0.5  # lift the torso: the picture changes
    batch.set_physics_state([0], qpos, qvel)
    assert np.abs(batch.screen([0])[0].astype(int) - frames[1]).sum() > 0
    batch.close()
    with pytest.raises(ValueError, match="render_size"):
        MujocoBatch("hopper", 1, render_size=(0, 10))


def test_the_render_process_outlives_an_interrupt():
    """A notebook's interrupt reaches the kernel's whole process group: the render process ignores it (its parent
    ends it), so a stopped cell leaves the viewer able to render."""
    import signal

    from workbench.envs.mujoco.render import MujocoRenderer

    batch = MujocoBatch("Hopper-v5", 1)
    batch.reset()
    qpos, qvel = batch.physics_state()
    renderer = MujocoRenderer("Hopper-v5", {}, (48, 64))
    try:
        before = renderer.render(qpos, qvel)
        os.kill(renderer._process.pid, signal.SIGINT)
        time.sleep(0.5)
        assert renderer._process.poll() is None
        assert np.array_equal(renderer.render(qpos, qvel), before)
    finally:
        renderer.close()
        batch.close()


def test_run_specs_know_the_mujoco_family():
    from workbench.evaluation import RunSpec

    spec = RunSpec("hopper", "mlp", model_options=dict(hidden_sizes=(8,)))
    assert spec.family.name == "mujoco" and RunSpec("pong", "small").family.name == "atari"
    assert RunSpec("CartPole-v1", "mlp").family.name == "gymnasium"
    batch = spec.make_batch(2)
    model = spec.build_model(batch, 2)
    assert model.action_size == 3 and model.num_actions is None
    assert spec.collect_reference_batch(size=4, probability=0.5).shape == (4, 11)
    with pytest.raises(ValueError, match="Atari network"):
        RunSpec("hopper", "small").build_model(batch, 1)
    batch.close()


def test_the_humanoid_trap_walls_stop_a_humanoid_pushed_forward():
    """HumanoidTrap-v5: Humanoid-v5's observations and rules on a model with a U-shaped wall ahead; a torso
    thrown forward at 6 m/s stops at the back wall, while on Humanoid-v5 it flies past it."""
    from workbench.envs.mujoco import humanoid_trap

    final = {}
    for task_id in ("Humanoid-v5", "HumanoidTrap-v5"):
        batch = MujocoBatch(task_id, 1, terminate_when_unhealthy=False)
        assert batch.observation_shape == (348,)
        batch.reset([0], [3])
        qpos, qvel = batch.physics_state([0])
        qvel[0, 0] = 6.0  # the free joint's x velocity
        batch.set_physics_state([0], qpos, qvel)
        for _ in range(150):
            batch.step([0], np.zeros((1, batch.action_size), np.float32))
        final[task_id] = batch.body_position([0])[0]
        batch.close()
    assert final["Humanoid-v5"][0] > humanoid_trap.BACK_X + 0.5
    assert final["HumanoidTrap-v5"][0] < humanoid_trap.BACK_X
    assert humanoid_trap.trap_region(*final["HumanoidTrap-v5"][:2]) == "inside"
    assert humanoid_trap.trap_region(*final["Humanoid-v5"][:2]) == "past"


def test_trap_regions_name_where_an_episode_ended():
    from workbench.envs.mujoco.humanoid_trap import REGIONS, trap_region

    places = {
        (0.5, 0.0): "short",
        (0.9, 2.5): "short",
        (2.0, 1.0): "inside",
        (1.0, -1.5): "inside",
        (2.0, -1.6): "beside",
        (2.9, 3.0): "beside",
        (3.1, 0.0): "past",
        (5.0, -4.0): "past",
    }
    assert {trap_region(x, y) for x, y in places} == set(REGIONS)
    for (x, y), region in places.items():
        assert trap_region(x, y) == region, (x, y)


# -- a task's rules on other models: every Gymnasium asset and two tiny models (no joint, one hinge) under every
# task. Where Gymnasium's own environment runs the pair, the ops play the same episodes bit for bit and report the
# observation length Gymnasium's _get_obs() returns; where Gymnasium fails on it (an IndexError or a failed
# unpacking in reset or step, a negative observation size at creation), MujocoBatch on both backends and the raw
# create op refuse it at creation with an error naming xml_file. (tests/ops/op_fuzzer.py creates the same pairs under
# the sanitizers.)
ASSETS = os.path.join(os.path.dirname(gymnasium.envs.mujoco.__file__), "assets")
MODELS = sorted(glob.glob(os.path.join(ASSETS, "*.xml"))) + sorted(glob.glob(os.path.join(DATA, "mujoco", "*.xml")))
RULES = [task for task in TASKS if TASKS[task].rules is None]  # the variants' rules are among these


def gymnasium_runs(task_id, path):
    """Whether Gymnasium's own environment of task_id makes, resets and steps 20 times on the model at path."""
    kwargs = {"terminate_when_unhealthy": False} if "terminate_when_unhealthy" in TASKS[task_id].defaults else {}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            env = gymnasium.make(task_id, xml_file=path, **kwargs)
            env.reset(seed=0)
            for _ in range(20):
                env.step(env.action_space.sample())
        env.close()
        return True
    except (IndexError, ValueError):
        return False


PAIRS = [(task_id, path) for task_id in RULES for path in MODELS]


def pair_id(pair):
    return f"{pair[0]}-{os.path.basename(pair[1])}"


FOREIGN = pytest.mark.filterwarnings("ignore::UserWarning")  # Gymnasium's checker: obs outside the declared space


@FOREIGN
@pytest.mark.parametrize("task_id,path", PAIRS, ids=[pair_id(p) for p in PAIRS])
def test_every_model_under_every_task_runs_as_gymnasium_or_is_refused(task_id, path):
    task = TASKS[task_id]
    if gymnasium_runs(task_id, path):
        kwargs = {"terminate_when_unhealthy": False} if "terminate_when_unhealthy" in task.defaults else {}
        play_against_gymnasium(task_id, 40, seed=2, xml_file=path, **kwargs)
        return
    for backend in ("custom", "reference"):
        with pytest.raises(ValueError, match=r"xml_file .* does not fit .*rules read .* it has nq = "):
            MujocoBatch(task_id, 2, backend=backend, xml_file=path)
    settings = task.settings(xml_file=path)
    with pytest.raises(tf.errors.InvalidArgumentError, match="xml_file .* does not fit the task"):
        mujoco_env.create(task_id, path, 2, task.parameters(settings), frame_skip=settings["frame_skip"])


@FOREIGN
def test_the_reported_cases_run_as_gymnasium_runs_them():
    """Humanoid's rules on swimmer.xml: 74 values per step (Gymnasium declares 73 and returns 74); 300 steps of 8
    simulations, the twin backends equal. Humanoid on inverted_pendulum.xml (nq = 2): refused, naming xml_file."""
    batches = [
        MujocoBatch("Humanoid-v5", 8, backend=backend, xml_file="swimmer.xml", terminate_when_unhealthy=False)
        for backend in ("custom", "reference")
    ]
    assert [b.observation_shape for b in batches] == [(74,), (74,)]
    observations = [b.reset() for b in batches]
    assert np.array_equal(*observations)
    rng = np.random.default_rng(0)
    for _ in range(300):
        actions = random_actions(batches[0], rng, 8)
        results = [b.step_and_observe(range(8), actions) for b in batches]
        for ours, theirs in zip(*results):
            assert np.array_equal(ours, theirs)
    for b in batches:
        b.close()
    with pytest.raises(ValueError, match=r"xml_file 'inverted_pendulum.xml'.*qpos\[2\].*nq = 2"):
        MujocoBatch("Humanoid-v5", 64, backend="custom", xml_file="inverted_pendulum.xml")


@FOREIGN
def test_ant_reads_its_height_from_the_state_vector_on_a_model_with_two_positions():
    """Gymnasium's Ant reads the height as state_vector()[2]: qvel[0] on inverted_pendulum.xml (nq = 2). The ops read
    the same value, so health and termination agree when termination is on."""
    episodes = play_against_gymnasium("Ant-v5", 200, seed=5, xml_file="inverted_pendulum.xml", healthy_z_range=(-0.5, 0.5))
    assert episodes > 1  # the rule terminated episodes


@pytest.mark.parametrize("backend", ["custom", "reference"])
def test_non_finite_observations_from_finite_inputs_end_the_episode_as_unstable(backend):
    """A reset noise of 1e300 or a state of 1e39 gives observations beyond float32: the episode ends at once,
    truncated and flagged unstable, observing zeros; stepping it is refused until it is reset."""
    batch = MujocoBatch("HalfCheetah-v5", 2, backend=backend, reset_noise_scale=1e300)
    observations = batch.reset()
    status = batch.status()
    assert np.all(observations == 0) and status["unstable"].all() and status["truncated"].all()
    assert batch.done().all() and not status["terminated"].any()
    with pytest.raises(ValueError, match="end of its episode"):
        batch.step([0], np.zeros((1, 6), np.float32))
    batch.close()
    batch = MujocoBatch("HalfCheetah-v5", 2, backend=backend)
    batch.reset()
    qpos, qvel = batch.physics_state()
    qpos[1, 1] = 1e39
    observations = batch.set_physics_state([0, 1], qpos, qvel)
    status = batch.status()
    assert status["unstable"].tolist() == [False, True] and batch.done().tolist() == [False, True]
    assert np.all(observations[1] == 0) and np.all(np.isfinite(observations))
    batch.step([0], np.zeros((1, 6), np.float32))  # the other episode goes on
    batch.reset([1])
    assert not batch.status([1])["unstable"][0] and not batch.done([1])[0]
    batch.close()
