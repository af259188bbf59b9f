"""Fuzzes every custom op of the project (population, Atari and MuJoCo ops) with random, mostly invalid calls.

First, every MuJoCo task's rules go on every model the fuzzer knows (Gymnasium's assets and the
tiny models of tests/data/mujoco: no joint, one hinge): each pair is created with the raw op
(refused, or created and then reset, stepped with random and huge actions, observed, set to huge
states and read back). Then each call starts from a valid template of the op and mutates one to
three of its arguments: dtypes, ranks, sizes (0 included), out-of-range and repeated indices, NaN
and infinite values, bad attributes (models of other tasks among them), destroyed handles and
handles of another resource type. Calls run eagerly or inside a
tf.function whose inputs have unknown shapes. A call may succeed or raise an error (TensorFlow's
OpError, or TypeError/ValueError from the op wrappers); anything else fails the run, and a crash of
the process is caught by the caller: every call is written to --log before it runs, so the last
line names the call that crashed.

    python tests/ops/op_fuzzer.py --calls 10000 --seed 1 --log /tmp/fuzz.log      # the long form
    (tests/ops/test_op_fuzz.py runs a fixed-seed short form in a subprocess; `make test-sanitize` runs
    it on the sanitizer build, docs/sanitizers.md)
"""

import argparse
import glob
import os
import sys
import traceback

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, REPO)
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from workbench.envs.atari.games import rom_path  # noqa: E402
from workbench.envs.mujoco.tasks import FLAGS, TASKS  # noqa: E402
from workbench.ops import _loader, atari_env, mujoco_env  # noqa: E402

DTYPES = [tf.float32, tf.float64, tf.bfloat16, tf.int32, tf.int64, tf.uint8, tf.bool, tf.string]
EXPECTED = (tf.errors.OpError, TypeError, ValueError)


def mujoco_models():
    """Every model file the fuzzer puts a task's rules on: Gymnasium's assets, then the tiny test models."""
    import gymnasium.envs.mujoco

    assets = os.path.join(os.path.dirname(gymnasium.envs.mujoco.__file__), "assets")
    return sorted(glob.glob(os.path.join(assets, "*.xml"))) + sorted(
        glob.glob(os.path.join(REPO, "tests", "data", "mujoco", "*.xml"))
    )


class Fuzzer:
    def __init__(self, seed, log):
        self.rng = np.random.default_rng(seed)
        self.log = log
        self.inference = _loader.load_library(_loader.INFERENCE)
        self.atari = atari_env._library()
        self.mujoco = mujoco_env._library()
        self.rom = rom_path("pong")
        task = TASKS["Hopper-v5"]
        self.task = task
        self.settings = task.settings()
        self.xml = task.xml_path(self.settings)
        self.models = mujoco_models()
        self.variable = tf.Variable(tf.zeros([4, 3, 2]))
        self.handles = {}
        self.fresh_handles()
        self.outcomes = {"ok": 0, "error": 0}
        self.pairs = {"created": 0, "refused": 0}

    # -- every task's rules on every model ---------------------------------------------------
    def cross_model_creates(self):
        """Creates every (task, model) pair with the raw op; plays the created ones with random, huge and extreme
        inputs. Refusals must be InvalidArgument errors naming xml_file; anything else fails the run."""
        r = self.rng
        for task_id, task in TASKS.items():
            if task.rules is not None:
                continue
            settings = task.settings()
            flags = {name: bool(r.random() < 0.8) for name in FLAGS if name in settings}
            for path in self.models:
                self.log.write(f"cross-model: {task_id} on {os.path.basename(path)} flags={flags}\n")
                self.log.flush()
                try:
                    handle, sizes, _ = mujoco_env.create(
                        task_id,
                        path,
                        3,
                        task.parameters(settings),
                        frame_skip=settings["frame_skip"],
                        max_episode_steps=30,
                        **flags,
                    )
                except tf.errors.InvalidArgumentError as error:
                    if "xml_file" not in str(error):
                        raise AssertionError(f"{task_id} on {path} refused without naming xml_file: {error}") from None
                    self.pairs["refused"] += 1
                    continue
                self.pairs["created"] += 1
                self.play_foreign(handle, *(int(v) for v in sizes.numpy()))
                mujoco_env.destroy(handle)

    def play_foreign(self, handle, observation_size, action_size, nq, nv):
        r = self.rng
        every = np.arange(3, dtype=np.int32)
        observations = mujoco_env.reset(handle, every, r.integers(-(2**62), 2**62, 3))
        assert observations.shape == (3, observation_size), (observations.shape, observation_size)
        for t in range(40):
            live = every[~np.logical_or(*[v.numpy() for v in mujoco_env.status(handle, every)[2:4]])]
            if not live.size:
                mujoco_env.reset(handle, every, r.integers(-(2**62), 2**62, 3))
                continue
            scale = [1.0, 1e3, 1e30][t % 3]
            actions = (r.standard_normal((live.size, action_size)) * scale).astype(np.float32)
            _, _, _, observations = mujoco_env.step_and_observe(handle, live, actions)
            assert observations.shape == (live.size, observation_size)
            assert np.all(np.isfinite(observations.numpy()))
        qpos, qvel, _ = mujoco_env.state(handle, every)
        huge = np.where(r.random(qpos.shape) < 0.3, 1e39, qpos.numpy())
        observations = mujoco_env.set_state(handle, every, huge, qvel.numpy() * 1e20)
        assert np.all(np.isfinite(observations.numpy()))
        mujoco_env.observation(handle, every)
        mujoco_env.status(handle, every)

    # -- resources -------------------------------------------------------------------------
    def fresh_handles(self):
        """Live Atari and MuJoCo batches (2 each), reset, plus destroyed ones."""
        atari, _ = atari_env.create(self.rom, 2, max_episode_frames=200)
        atari_env.reset(atari, np.arange(2, dtype=np.int32), np.arange(2, dtype=np.int64))
        mujoco, _, _ = mujoco_env.create(self.task.id, self.xml, 2, self.task.parameters(self.settings), frame_skip=4)
        mujoco_env.reset(mujoco, np.arange(2, dtype=np.int32), np.arange(2, dtype=np.int64))
        dead_atari, _ = atari_env.create(self.rom, 1)
        atari_env.destroy(dead_atari)
        dead_mujoco, _, _ = mujoco_env.create(self.task.id, self.xml, 1, self.task.parameters(self.settings), frame_skip=4)
        mujoco_env.destroy(dead_mujoco)
        self.handles = dict(
            atari=atari, mujoco=mujoco, dead_atari=dead_atari, dead_mujoco=dead_mujoco, variable=self.variable.handle
        )

    # -- templates: (library function, tensor inputs, attributes), valid as they stand ----------
    def templates(self):
        r = self.rng
        b, k, n, s = int(r.integers(1, 5)), int(r.integers(1, 6)), int(r.integers(1, 6)), int(r.integers(1, 4))
        rank = int(r.integers(1, 3))
        floats = lambda *shape: r.standard_normal(shape).astype(np.float32)  # noqa: E731
        slots = lambda count: r.integers(0, s, count).astype(np.int32)  # noqa: E731
        kh, kw, c, h, w = 2, 2, int(r.integers(1, 3)), int(r.integers(2, 6)), int(r.integers(2, 6))
        lib, atari, mujoco = self.inference, self.atari, self.mujoco
        idx = np.array([0, 1], np.int32)
        return {
            "population_matmul": (
                lib.workbench_population_matmul,
                dict(x=floats(b, k), weights=floats(s, k, n), indices=slots(b), biases=[floats(s, n)]),
                dict(relu=True),
            ),
            "perturbed_population_matmul": (
                lib.workbench_perturbed_population_matmul,
                dict(
                    x=floats(b, k),
                    weights=floats(s, k, n),
                    parents=slots(b),
                    sigmas=floats(b),
                    factor_a=floats(b, k, rank),
                    factor_b=floats(b, n, rank),
                    biases=[floats(s, n)],
                    bias_noise=[floats(b, n)],
                ),
                dict(relu=False),
            ),
            "population_conv2d": (
                lib.workbench_population_conv2d,
                dict(x=floats(b, h, w, c), weights=floats(s, kh * kw * c, n), indices=slots(b), biases=[floats(s, n)]),
                dict(kernel_size=[kh, kw], strides=[1, 1], padding="VALID", relu=True),
            ),
            "population_conv2d_uint8": (
                lib.workbench_population_conv2d,
                dict(
                    x=r.integers(0, 256, (b, h, w, c), dtype=np.uint8),
                    weights=floats(s, kh * kw * c, 16),
                    indices=slots(b),
                    biases=[floats(s, 16)],
                ),
                dict(kernel_size=[kh, kw], strides=[1, 2], padding="SAME", input_scale=1 / 255),
            ),
            "perturbed_population_conv2d": (
                lib.workbench_perturbed_population_conv2d,
                dict(
                    x=floats(b, h, w, c),
                    weights=floats(s, kh * kw * c, n),
                    parents=slots(b),
                    sigmas=floats(b),
                    factor_a=floats(b, kh * kw * c, rank),
                    factor_b=floats(b, n, rank),
                    biases=[floats(s, n)],
                    bias_noise=[floats(b, n)],
                ),
                dict(kernel_size=[kh, kw], strides=[2, 1], padding="SAME"),
            ),
            "assign_slots": (
                lib.workbench_assign_slots,
                dict(resource=self.handles["variable"], slots=np.array([1, 3], np.int32), values=floats(2, 3, 2)),
                {},
            ),
            "atari_env_create": (
                atari.workbench_atari_env_create,
                {},
                dict(rom_path=self.rom, batch_size=1, frame_skip=4, noop_max=3, screen_size=42, stack_size=2),
            ),
            "atari_env_reset": (
                atari.workbench_atari_env_reset,
                dict(handle=self.handles["atari"], indices=idx, seeds=np.array([5, 6], np.int64)),
                {},
            ),
            "atari_env_step": (
                atari.workbench_atari_env_step,
                dict(handle=self.handles["atari"], indices=idx, actions=np.array([0, 1], np.int32)),
                {},
            ),
            "atari_env_step_and_observe": (
                atari.workbench_atari_env_step_and_observe,
                dict(handle=self.handles["atari"], indices=idx, actions=np.array([1, 0], np.int32)),
                {},
            ),
            "atari_env_observation": (atari.workbench_atari_env_observation, dict(handle=self.handles["atari"], indices=idx), {}),
            "atari_env_screen": (atari.workbench_atari_env_screen, dict(handle=self.handles["atari"], indices=idx), {}),
            "atari_env_ram": (atari.workbench_atari_env_ram, dict(handle=self.handles["atari"], indices=idx), {}),
            "atari_env_status": (atari.workbench_atari_env_status, dict(handle=self.handles["atari"], indices=idx), {}),
            "mujoco_env_create": (
                mujoco.workbench_mujoco_env_create,
                dict(parameters=self.task.parameters(self.settings)),
                dict(task=self.task.id, xml_path=self.xml, batch_size=1, frame_skip=4, max_episode_steps=50),
            ),
            "mujoco_env_reset": (
                mujoco.workbench_mujoco_env_reset,
                dict(handle=self.handles["mujoco"], indices=idx, seeds=np.array([5, 6], np.int64)),
                {},
            ),
            "mujoco_env_step": (
                mujoco.workbench_mujoco_env_step,
                dict(handle=self.handles["mujoco"], indices=idx, actions=floats(2, 3)),
                {},
            ),
            "mujoco_env_step_and_observe": (
                mujoco.workbench_mujoco_env_step_and_observe,
                dict(handle=self.handles["mujoco"], indices=idx, actions=floats(2, 3)),
                {},
            ),
            "mujoco_env_observation": (
                mujoco.workbench_mujoco_env_observation,
                dict(handle=self.handles["mujoco"], indices=idx),
                {},
            ),
            "mujoco_env_status": (mujoco.workbench_mujoco_env_status, dict(handle=self.handles["mujoco"], indices=idx), {}),
            "mujoco_env_state": (mujoco.workbench_mujoco_env_state, dict(handle=self.handles["mujoco"], indices=idx), {}),
            "mujoco_env_feet_contact": (
                mujoco.workbench_mujoco_env_feet_contact,
                dict(handle=self.handles["mujoco"], indices=idx),
                {},
            ),
            "mujoco_env_set_state": (
                mujoco.workbench_mujoco_env_set_state,
                dict(handle=self.handles["mujoco"], indices=idx, qpos=np.zeros((2, 6)), qvel=np.zeros((2, 6))),
                {},
            ),
        }

    # -- mutations ---------------------------------------------------------------------------
    def mutate_tensor(self, value):
        r = self.rng
        if isinstance(value, list):  # a list input (biases, bias_noise): drop it, duplicate it, or mutate its entry
            choice = r.integers(3)
            if choice == 0 or not value:
                return []
            if choice == 1:
                return value + value
            return [self.mutate_tensor(value[0])]
        if isinstance(value, tf.Tensor) and value.dtype == tf.resource:
            return self.handles[str(r.choice(list(self.handles)))]
        array = value.numpy() if isinstance(value, tf.Tensor) else np.asarray(value)
        if array.dtype.kind in "OSUb" or array.dtype.name == "bfloat16":  # mutated before: start from floats
            array = np.zeros(array.shape, np.float32)
        kind = r.integers(7)
        if kind == 0:  # another dtype
            dtype = DTYPES[r.integers(len(DTYPES))]
            if dtype == tf.string:
                return tf.constant(np.full(array.shape, b"x"))
            return tf.cast(tf.constant(array.astype(np.float64) if array.dtype != bool else array), dtype)
        if kind == 1:  # another rank
            if array.ndim and r.random() < 0.5:
                return array.reshape(-1) if array.ndim > 1 else (array.reshape(-1)[0] if array.size else array.sum())
            return array[..., None]
        if kind == 2:  # another size along one axis (0 included)
            if not array.ndim:
                return np.repeat(array[None], int(r.integers(0, 3)))
            axis = int(r.integers(array.ndim))
            size = int(r.choice([0, 1, array.shape[axis] + 1, array.shape[axis] + 7]))
            shape = list(array.shape)
            shape[axis] = size
            return np.resize(array, shape).astype(array.dtype) if array.size else np.zeros(shape, array.dtype)
        if kind == 3 and np.issubdtype(array.dtype, np.floating):  # non-finite values
            out = array.copy()
            if out.size:
                out.reshape(-1)[r.integers(out.size)] = [np.nan, np.inf, -np.inf][r.integers(3)]
            return out
        if np.issubdtype(array.dtype, np.integer):  # out of range, negative, repeated, extreme
            out = array.copy()
            if out.size:
                info = np.iinfo(array.dtype)
                extremes = [-1, 2, 3, 1000, int(info.max), int(info.min)]
                flat = out.reshape(-1)
                flat[r.integers(flat.size)] = min(max(extremes[r.integers(len(extremes))], int(info.min)), int(info.max))
                if flat.size > 1 and r.random() < 0.5:
                    flat[1] = flat[0]
            return out
        return array * np.float32(r.choice([0, -1, 1e30]))

    def mutate_attr(self, name, value):
        r = self.rng
        if isinstance(value, bool):
            return not value
        if isinstance(value, int):
            # a large valid value; a batch is kept to 64 simulations: 1,000 Atari emulators took 165 s to create
            # on 2 busy cores, most of the short form's time when the draws chose it
            large = value * (64 if name == "batch_size" else 1000)
            return int(r.choice([-1, 0, 1, 3, 2**31 - 1, large]))
        if isinstance(value, float):
            return float(r.choice([np.nan, np.inf, -1.0, 0.0, 1e30]))
        if isinstance(value, list):
            options = [[], [0, 0], [-1, 2], [1, 1, 1], [10**6, 1]]
            return list(options[r.integers(len(options))])
        if isinstance(value, str):
            return str(r.choice(["", "VALID", "nonsense", "/no/such/file", "Humanoid-v5", "Pong-v9"] + self.models))
        return value

    # -- one call ----------------------------------------------------------------------------
    def call(self, number):
        r = self.rng
        templates = self.templates()
        name = str(r.choice(list(templates)))
        function, inputs, attrs = templates[name]
        inputs, attrs = dict(inputs), dict(attrs)
        for _ in range(int(r.integers(1, 4))):
            if attrs and (not inputs or r.random() < 0.3):
                key = str(r.choice(list(attrs)))
                attrs[key] = self.mutate_attr(key, attrs[key])
            elif inputs:
                key = str(r.choice(list(inputs)))
                inputs[key] = self.mutate_tensor(inputs[key])
        graph = bool(r.random() < 0.4)
        description = (
            f"{number}: {name} {'tf.function' if graph else 'eager'} "
            + ", ".join(f"{k}={describe(v)}" for k, v in inputs.items())
            + (f" attrs={attrs}" if attrs else "")
        )
        self.log.write(description + "\n")
        self.log.flush()
        try:
            if graph:
                run_in_graph(function, inputs, attrs, r)
            else:
                function(**inputs, **attrs)
            self.outcomes["ok"] += 1
        except EXPECTED:
            self.outcomes["error"] += 1
        if number % 50 == 49:
            self.fresh_handles()  # episodes end, handles get destroyed by mutated calls: start over now and then


def describe(value):
    if isinstance(value, list):
        return "[" + ", ".join(describe(v) for v in value) + "]"
    if isinstance(value, tf.Tensor) and value.dtype == tf.resource:
        return "<resource>"
    array = np.asarray(value.numpy() if isinstance(value, tf.Tensor) else value)
    return f"{array.dtype}{list(array.shape)}"


def run_in_graph(function, inputs, attrs, rng):
    """The call inside a tf.function whose tensor inputs have unknown shapes (ranks kept for half the calls)."""
    names = list(inputs)
    flat, structure = [], []
    for name in names:
        value = inputs[name]
        values = value if isinstance(value, list) else [value]
        structure.append((name, isinstance(value, list), len(values)))
        flat.extend(tf.convert_to_tensor(v) for v in values)
    signature = [
        tf.TensorSpec(None if t.dtype == tf.resource or rng.random() < 0.5 else [None] * t.shape.rank, t.dtype) for t in flat
    ]

    @tf.function(input_signature=signature)
    def wrapped(*tensors):
        kwargs, position = {}, 0
        for name, is_list, count in structure:
            values = list(tensors[position : position + count])
            kwargs[name] = values if is_list else values[0]
            position += count
        result = function(**kwargs, **attrs)
        return tf.nest.flatten(result)

    wrapped(*flat)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--log", default=os.devnull, help="every call is written here before it runs")
    parser.add_argument("--no-cross-model", action="store_true", help="skip the creates of every task on every model")
    args = parser.parse_args()
    with open(args.log, "w") as log:
        fuzzer = Fuzzer(args.seed, log)
        if not args.no_cross_model:
            fuzzer.cross_model_creates()
        for number in range(args.calls):
            try:
                fuzzer.call(number)
            except Exception:  # noqa: BLE001 - an unexpected exception type is a finding
                log.write("UNEXPECTED " + traceback.format_exc().replace("\n", " | ") + "\n")
                log.flush()
                print(f"call {number} raised an unexpected exception:\n{traceback.format_exc()}", file=sys.stderr)
                sys.exit(3)
    print(
        f"{args.calls} calls: {fuzzer.outcomes['ok']} ran, {fuzzer.outcomes['error']} refused with an error; "
        f"task rules on foreign models: {fuzzer.pairs['created']} created and played, {fuzzer.pairs['refused']} "
        "refused"
    )


if __name__ == "__main__":
    main()
