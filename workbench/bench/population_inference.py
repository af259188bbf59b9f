"""Benchmark: inference of a population of networks that each have their own weights.

One observation per member, LargeModel and SmallModel, P = 32 and 128 members.
Measured in the same run:
  read_gbps     memory read bandwidth: best of 3 sums over a 256 MB array (numpy on one
                thread and tf.reduce_sum on all threads; the larger is the limit), and
                again in every timing round of each model (its best is that model's limit)
  peak_gflops   float32 matmul peak: best of tf.matmul 2048x2048
  homogeneous   one shared network on the same batch (plain tf.nn.conv2d / tf.matmul)
  puretf        best pure-TF heterogeneous formulation: gather + batched matmul (the ops'
                reference backend) or grouped tf.nn.conv2d + batched matmul on the slot variables
  op_fp32       the custom ops, float32 weights, distinct members
  op_fp32_im2col  the same with tf.image.extract_patches + the matmul op for the convolutions
                (conv_op_vs_im2col: why the convolutions have an op of their own)
  op_bf16       the custom ops, bfloat16 weights, distinct members
  dense_layer_* the widest dense layer alone with float32 / bfloat16 weights (where the bytes are)
  op_lowrank    the custom ops in perturbed mode: every member is the shared parent plus its
                own rank-r perturbation (EGGROLL), nothing materialised
  roofline      distinct float32 members at the machine's limit:
                max(weight bytes / read_gbps, FLOPs / peak_gflops)
                (all weights read. The custom kernel skips the weight rows of inputs that are
                zero, and the dense layers' inputs come out of a ReLU: `dense_input_zero_fraction`
                reports how many are zero in this run, so op_vs_roofline can exceed 1.)
The inputs are Pong screens after random play (--observations noise: uniform noise images, the inputs of
earlier runs): the dense kernel's savings depend on where a feature map is zero, and screens have uniform
backgrounds that noise lacks. Throughputs are observations per second, best of the timing rounds; the candidates of one
model and P are timed in interleaved rounds, with a bandwidth probe in the same rounds (the limit is the best
bandwidth seen). Each model and P is measured 3 times (quick and full modes): the JSON line gives the median of
every figure and ratio and the spread (min, max) of each ratio; the targets (Large, P = 128) are read on the
medians. Ratios are what to read (absolute times on shared machines are noise). Prints a table, then one JSON line.

  python -m workbench.bench.population_inference [--quick | --smoke] [--rank R] [--members 32 128] [--observations frames]
"""

import functools
import os

from workbench.bench import common

common.quiet_start()

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from workbench.envs import AtariBatch  # noqa: E402
from workbench.models import LargeModel, SmallModel  # noqa: E402
from workbench.models.layers import Conv2D  # noqa: E402
from workbench.ops import population_matmul  # noqa: E402

TARGETS = {"op_vs_roofline": 0.8, "dense_layer_bf16_vs_fp32": 1.7, "lowrank_vs_homogeneous": 0.8, "op_vs_puretf": 1.3}
RATIOS = (
    "op_vs_puretf",
    "op_vs_roofline",
    "bf16_vs_fp32",
    "lowrank_vs_homogeneous",
    "dense_layer_bf16_vs_fp32",
    "conv_op_vs_im2col",
)


def best_seconds(fn, repeats):
    """Best wall time of fn() over `repeats` runs after one warm-up run (results fetched)."""
    return interleaved_best_seconds({"fn": fn}, repeats)["fn"]


def interleaved_best_seconds(functions, repeats):
    """Best wall time of each function (its result fetched), timed in interleaved rounds after a warm-up
    (common.interleaved: a drift of the machine's speed reaches every candidate alike)."""
    timings = {name: functools.partial(_seconds, fn) for name, fn in functions.items()}
    return {name: min(seconds) for name, seconds in common.interleaved(timings, repeats).items()}


def _seconds(fn):
    return common.timed(lambda: _fetch(fn()))[1]


def _fetch(result):
    return result.numpy() if hasattr(result, "numpy") else result


@functools.cache
def _read_probe(megabytes):
    """The array the read bandwidth is measured on and a traced sum over it (built once: the limits are
    measured again before every round of workbench/bench/end_to_end.py, and a new tf.function each time retraces)."""
    array = np.ones(megabytes * 2**20 // 4, np.float32)
    tensor = tf.constant(array)
    return array, tf.function(lambda: tf.reduce_sum(tensor))


@functools.cache
def _matmul_probe(size):
    a = tf.random.normal([size, size])
    return tf.function(lambda: tf.matmul(a, a))


def measure_read_gbps(repeats=3, megabytes=256):
    array, reduce_sum = _read_probe(megabytes)
    one_thread = array.nbytes / best_seconds(lambda: array.sum(), repeats) / 1e9
    all_threads = array.nbytes / best_seconds(reduce_sum, repeats) / 1e9
    return max(one_thread, all_threads), one_thread, all_threads


def measure_peak_gflops(repeats=5, size=2048):
    return 2 * size**3 / best_seconds(_matmul_probe(size), repeats) / 1e9


def flops_per_observation(model):
    total = 0
    for layer, (depth, units), out_shape in zip(model.layers, model.kernel_shapes, model.output_shapes):
        positions = out_shape[0] * out_shape[1] if isinstance(layer, Conv2D) else 1
        total += 2 * positions * depth * units
    return total


def layer_inputs(model, observations, slots):
    """The input of every layer of the model (computed with the pure-TF reference)."""
    x = tf.cast(observations, tf.float32) / 255.0
    inputs = []
    for i, (layer, kernel, bias) in enumerate(zip(model.layers, model.kernels, model.biases)):
        inputs.append(x)
        x = layer.apply(x, kernel, bias, slots, relu=i < len(model.layers) - 1, perturbation=None, backend="reference")
    return inputs


def zero_fraction(tensors):
    zeros = sum(int(tf.reduce_sum(tf.cast(tf.equal(t, 0.0), tf.int64))) for t in tensors)
    return zeros / max(sum(int(tf.size(t)) for t in tensors), 1)


def fill_random(model, seed):
    """Distinct random weights in every slot, at the paper's initial scale (fast, in TF)."""
    tf.random.set_seed(seed)
    for i, (kernel, bias) in enumerate(zip(model.kernels, model.biases)):
        depth = kernel.shape[1]
        std = 0.1 if i == len(model.kernels) - 1 else 1.0
        kernel.assign(tf.cast(tf.random.normal(kernel.shape) * (std / np.sqrt(depth)), kernel.dtype))
        bias.assign(tf.cast(tf.random.normal(bias.shape) * 0.01, bias.dtype))


def copy_weights(source, target):
    for src, dst in zip(source.kernels + source.biases, target.kernels + target.biases):
        dst.assign(tf.cast(src, dst.dtype))


def homogeneous_forward(model, observations):
    """One network (slot 0) on the whole batch: what shared-weight inference costs."""
    x = tf.cast(observations, tf.float32) / 255.0
    last = len(model.layers) - 1
    for i, (layer, kernel, bias) in enumerate(zip(model.layers, model.kernels, model.biases)):
        if isinstance(layer, Conv2D):
            k = tf.reshape(kernel[0], [layer.kernel_size, layer.kernel_size, -1, layer.filters])
            x = tf.nn.conv2d(x, k, strides=layer.stride, padding="SAME") + bias[0]
        else:
            x = tf.matmul(layer.flat(x), kernel[0]) + bias[0]
        x = tf.nn.relu(x) if i < last else x
    return x


def im2col_forward(model, observations, slots):
    """The custom matmul op with tf.image.extract_patches for the convolutions (the
    alternative to the dedicated conv op that the issue names)."""
    x = tf.cast(observations, tf.float32) / 255.0
    last = len(model.layers) - 1
    for i, (layer, kernel, bias) in enumerate(zip(model.layers, model.kernels, model.biases)):
        if isinstance(layer, Conv2D):
            size, stride = layer.kernel_size, layer.stride
            patches = tf.image.extract_patches(x, [1, size, size, 1], [1, stride, stride, 1], [1, 1, 1, 1], "SAME")
            height, width = patches.shape[1:3]
            y = population_matmul(
                tf.reshape(patches, [patches.shape[0], height * width, -1]),
                kernel,
                slots,
                bias=bias,
                relu=i < last,
                backend="custom",
            )
            x = tf.reshape(y, [-1, height, width, layer.filters])
        else:
            x = layer.apply(x, kernel, bias, slots, relu=i < last, perturbation=None, backend="custom")
    return x


def grouped_conv_forward(model, observations):
    """Pure TF, member b on slot b: grouped conv (groups = members) and batched matmul."""
    members = observations.shape[0]
    x = tf.cast(observations, tf.float32) / 255.0
    last = len(model.layers) - 1
    for i, (layer, kernel, bias) in enumerate(zip(model.layers, model.kernels, model.biases)):
        if isinstance(layer, Conv2D):
            height, width, channels = x.shape[1:]
            stacked = tf.reshape(tf.transpose(x, [1, 2, 0, 3]), [1, height, width, members * channels])
            k = tf.reshape(kernel, [members, layer.kernel_size, layer.kernel_size, channels, layer.filters])
            k = tf.reshape(
                tf.transpose(k, [1, 2, 3, 0, 4]), [layer.kernel_size, layer.kernel_size, channels, members * layer.filters]
            )
            y = tf.nn.conv2d(stacked, k, strides=layer.stride, padding="SAME")
            out_h, out_w = y.shape[1:3]
            x = tf.transpose(tf.reshape(y, [out_h, out_w, members, layer.filters]), [2, 0, 1, 3]) + bias[:, None, None, :]
        else:
            x = tf.squeeze(tf.matmul(layer.flat(x)[:, None, :], kernel), 1) + bias
        x = tf.nn.relu(x) if i < last else x
    return x


def game_observations(members, seed, game="pong", steps=60):
    """uint8 [members, 84, 84, 4]: the screens of `members` Pong games after `steps` random actions (what the
    networks see in a run; a feature map of such screens has runs of zeros along each channel, noise has fewer)."""
    batch = AtariBatch(game, members, seed=seed)
    batch.reset()
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        batch.step(None, rng.integers(0, batch.num_actions, members))
    return np.asarray(batch.observation())


def bench_model(cls, members, rank, repeats, read_gbps, peak_gflops, observations, bandwidth_probe):
    model = cls(num_actions=18, slots=members, backend="custom")
    fill_random(model, seed=members)
    model16 = cls(num_actions=18, slots=members, weight_dtype="bfloat16", backend="custom")
    copy_weights(model, model16)
    reference = cls(num_actions=18, slots=members, backend="reference")
    copy_weights(model, reference)
    observations = tf.constant(observations)
    distinct = tf.range(members, dtype=tf.int32)
    shared = tf.zeros([members], tf.int32)
    perturbations = model.random_perturbations(np.full(members, 0.002, np.float32), rank=rank, seed=members)

    # The widest dense layer alone (the bulk of the weight bytes), fp32 vs bf16 weights.
    inputs = layer_inputs(model, observations, distinct)
    dense = [i for i, layer in enumerate(model.layers) if not isinstance(layer, Conv2D)][0]
    dense_input = model.layers[dense].flat(inputs[dense])  # in the order of the dense kernel's rows
    candidates = {
        "dense_layer_fp32": tf.function(
            lambda: population_matmul(dense_input, model.kernels[dense], distinct, bias=model.biases[dense], relu=True)
        ),
        "dense_layer_bf16": tf.function(
            lambda: population_matmul(dense_input, model16.kernels[dense], distinct, bias=model16.biases[dense], relu=True)
        ),
        "homogeneous": tf.function(lambda: homogeneous_forward(model, observations)),
        "puretf_gather_matmul": tf.function(lambda: reference(observations, distinct)),
        "puretf_grouped_conv": tf.function(lambda: grouped_conv_forward(model, observations)),
        "op_fp32": tf.function(lambda: model(observations, distinct)),
        "op_fp32_im2col": tf.function(lambda: im2col_forward(model, observations, distinct)),
        "op_bf16": tf.function(lambda: model16(observations, distinct)),
        "op_lowrank": tf.function(lambda: model(observations, shared, perturbations)),
    }
    # Same numbers from every heterogeneous formulation (a benchmark of wrong answers is void).
    expected = candidates["op_fp32"]().numpy()
    for name in ("puretf_gather_matmul", "puretf_grouped_conv", "op_fp32_im2col"):
        error = np.abs(candidates[name]().numpy() - expected).max()
        assert error <= 1e-3 * max(np.abs(expected).max(), 1e-6), f"{name} disagrees with op_fp32: {error}"
    seconds = interleaved_best_seconds(dict(candidates, read_probe=bandwidth_probe[0]), repeats)
    # The bandwidth probe runs in the same rounds; the limit is the best seen anywhere.
    read_gbps = max(read_gbps, bandwidth_probe[1] / seconds.pop("read_probe") / 1e9)
    rates = {name: members / t for name, t in seconds.items()}
    puretf_name = max(("puretf_gather_matmul", "puretf_grouped_conv"), key=rates.get)
    rates["puretf"] = rates[puretf_name]

    weight_bytes = model.num_parameters * 4 * members
    flops = flops_per_observation(model) * members
    roofline_seconds = max(weight_bytes / (read_gbps * 1e9), flops / (peak_gflops * 1e9))
    rates["roofline"] = members / roofline_seconds
    return {
        "obs_per_s": {k: round(v, 1) for k, v in rates.items()},
        "puretf_formulation": puretf_name.replace("puretf_", ""),
        "weight_mb_per_member": round(model.num_parameters * 4 / 2**20, 2),
        "mflop_per_obs": round(flops_per_observation(model) / 1e6, 2),
        "roofline_bound": "memory" if weight_bytes / read_gbps >= flops / peak_gflops else "compute",
        "dense_input_zero_fraction": round(
            zero_fraction([inputs[i] for i, layer in enumerate(model.layers) if not isinstance(layer, Conv2D) and i > 0]), 3
        ),
        "read_gbps": round(read_gbps, 2),
        "op_vs_puretf": round(rates["op_fp32"] / rates["puretf"], 3),
        "op_vs_roofline": round(rates["op_fp32"] / rates["roofline"], 3),
        "bf16_vs_fp32": round(rates["op_bf16"] / rates["op_fp32"], 3),
        "lowrank_vs_homogeneous": round(rates["op_lowrank"] / rates["homogeneous"], 3),
        "dense_layer_bf16_vs_fp32": round(rates["dense_layer_bf16"] / rates["dense_layer_fp32"], 3),
        "conv_op_vs_im2col": round(rates["op_fp32"] / rates["op_fp32_im2col"], 3),
    }


def median_of_runs(runs):
    """One model and P measured several times: the median of every figure and ratio, the spread (min, max) of each
    ratio, and every run's ratios (a shared machine's drift shows as spread instead of moving a single figure)."""
    result = dict(runs[len(runs) // 2])  # the descriptive fields (formulation, sizes) of one run
    result["obs_per_s"] = {
        key: round(float(np.median([run["obs_per_s"][key] for run in runs])), 1) for key in runs[0]["obs_per_s"]
    }
    for key in RATIOS + ("read_gbps", "dense_input_zero_fraction"):
        result[key] = round(float(np.median([run[key] for run in runs])), 3)
    result["spread"] = {key: [min(run[key] for run in runs), max(run[key] for run in runs)] for key in RATIOS}
    result["runs"] = [{key: run[key] for key in RATIOS} for run in runs]
    return result


def main(argv=None):
    parser = common.parser(
        __doc__, quick="fewer repetitions (under 3 minutes)", smoke="tiny populations, one repetition: checks the script runs"
    )
    parser.add_argument("--rank", type=int, default=1, help="rank of the low-rank perturbations (default 1)")
    parser.add_argument("--members", type=int, nargs="+", default=None, help="population sizes (default 32 128)")
    parser.add_argument(
        "--observations",
        choices=("frames", "noise"),
        default="frames",
        help="network inputs: Pong screens of random play (default) or uniform noise images",
    )
    args = parser.parse_args(argv)
    if args.rank < 1:
        parser.error("--rank must be >= 1")
    repeats = 1 if args.smoke else 3 if args.quick else 10
    runs = 1 if args.smoke else 3  # measurements of each model and P; the JSON line gives their medians
    members_list = args.members or ([2] if args.smoke else [32, 128])
    if any(m < 1 for m in members_list):
        parser.error("--members must be positive")

    megabytes = 16 if args.smoke else 256
    read_gbps, read_one, read_all = measure_read_gbps(1 if args.smoke else 3, megabytes)
    probe_tensor = tf.ones([megabytes * 2**20 // 4], tf.float32)
    bandwidth_probe = (tf.function(lambda: tf.reduce_sum(probe_tensor)), megabytes * 2**20)
    peak_gflops = measure_peak_gflops(1 if args.smoke else 5, 512 if args.smoke else 2048)
    print(
        f"read bandwidth {read_gbps:.1f} GB/s (numpy 1 thread {read_one:.1f}, tf all threads {read_all:.1f}); "
        f"matmul peak {peak_gflops:.0f} GFLOP/s; "
        f"threads {tf.config.threading.get_intra_op_parallelism_threads() or os.cpu_count()}"
    )
    rng = np.random.default_rng(0)
    results = {}
    columns = ["homogeneous", "puretf", "op_fp32", "op_bf16", "op_lowrank", "roofline"]
    print(
        f"{'model':<12}{'P':>5} "
        + "".join(f"{c:>13}" for c in columns)
        + "   op/puretf op/roof bf16/fp32 (dense) lowrank/homog zero-inputs"
    )
    for cls in (LargeModel, SmallModel):
        for members in members_list:
            observations = (
                game_observations(members, seed=members)
                if args.observations == "frames"
                else rng.integers(0, 256, (members, 84, 84, 4), dtype=np.uint8)
            )
            r = median_of_runs(
                [
                    bench_model(cls, members, args.rank, repeats, read_gbps, peak_gflops, observations, bandwidth_probe)
                    for _ in range(runs)
                ]
            )
            results.setdefault(cls.__name__, {})[str(members)] = r
            print(
                f"{cls.__name__:<12}{members:>5} "
                + "".join(f"{r['obs_per_s'][c]:>13.1f}" for c in columns)
                + f"   {r['op_vs_puretf']:>9.2f} {r['op_vs_roofline']:>7.2f} {r['bf16_vs_fp32']:>9.2f}"
                + f" ({r['dense_layer_bf16_vs_fp32']:.2f}) {r['lowrank_vs_homogeneous']:>13.2f}"
                + f" {r['dense_input_zero_fraction']:>11.2f}"
            )
    summary = {
        "benchmark": "population_inference",
        "mode": common.mode_of(args),
        "unit": "observations/s",
        "observations": args.observations,
        "read_gbps": round(read_gbps, 2),
        "read_gbps_numpy_1thread": round(read_one, 2),
        "read_gbps_tf_all_threads": round(read_all, 2),
        "peak_gflops": round(peak_gflops, 1),
        "lowrank_rank": args.rank,
        "runs": runs,
        "targets_large_p128": TARGETS,
        "results": results,
    }
    common.record(summary, args)
    return summary


if __name__ == "__main__":
    main()
