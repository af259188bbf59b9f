"""The noise table and seed-chain genomes: determinism, exact decoding through the parent cache, serialisation."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from workbench.evolution import Genome, GenomeDecoder, NoiseTable, ParameterSpace
from workbench.models import SmallModel

SMALL_TABLE = 2**20


@pytest.fixture(scope="module")
def noise():
    return NoiseTable.shared(SMALL_TABLE, seed=7)


def test_noise_table_is_standard_normal_read_only_and_shared(noise):
    assert noise.values.dtype == np.float32 and noise.values.size == SMALL_TABLE
    assert abs(float(noise.values.mean())) < 0.01 and abs(float(noise.values.std()) - 1) < 0.01
    with pytest.raises(ValueError):
        noise.values[0] = 1.0
    assert NoiseTable.shared(SMALL_TABLE, seed=7) is noise
    assert not np.array_equal(NoiseTable(1000, seed=8).values, noise.values[:1000])


def test_noise_table_is_identical_in_another_process(noise):
    script = (
        "from workbench.evolution import NoiseTable; import hashlib; "
        "print(hashlib.sha256(NoiseTable(2**20, 7).values.tobytes()).hexdigest())"
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"),
    )
    assert result.returncode == 0, result.stderr[-2000:]
    import hashlib

    assert result.stdout.strip() == hashlib.sha256(noise.values.tobytes()).hexdigest()


def test_noise_table_rejects_bad_arguments(noise):
    with pytest.raises(ValueError, match="size"):
        NoiseTable(0)
    with pytest.raises(ValueError, match="seed"):
        NoiseTable(10, seed=-1)
    with pytest.raises(ValueError, match="index = .* out of range"):
        noise.slice(SMALL_TABLE - 5, 10)
    with pytest.raises(TypeError, match="index"):
        noise.slice(1.5, 10)


def test_decoding_through_the_cache_equals_the_full_chain(noise, rng):
    decoder = GenomeDecoder(ParameterSpace(noise, rng.uniform(0.0, 0.1, 5000).astype(np.float32)))
    genome = Genome(decoder.space.sample_offset(rng))
    lineage = [genome]
    for _ in range(12):
        genome = genome.child(decoder.space.sample_offset(rng), float(rng.uniform(0.001, 0.01)))
        lineage.append(genome)
    for g in lineage:  # parents first: each child costs one slice
        decoder.decode(g)
    assert decoder.slices_applied == 12
    for g in lineage:
        np.testing.assert_array_equal(decoder.decode(g), decoder.decode_full(g))
    fresh = GenomeDecoder(decoder.space)
    np.testing.assert_array_equal(fresh.decode(lineage[-1]), decoder.decode(lineage[-1]))  # no cache at all
    assert fresh.slices_applied == 12


def test_decoded_weights_are_read_only_and_the_cache_is_bounded(noise, rng):
    decoder = GenomeDecoder(ParameterSpace(noise, np.ones(1000, np.float32)), cache_bytes=4 * 1000 * 3)
    assert decoder.capacity == 3
    genomes = [Genome(i) for i in range(5)]
    for g in genomes:
        weights = decoder.decode(g)
    with pytest.raises(ValueError):
        weights[0] = 0.0
    assert [decoder.cached(g) for g in genomes] == [False, False, True, True, True]


def test_a_parent_stays_cached_while_its_children_are_decoded(noise, rng):
    # Room for 4 genomes; 2 parents, then their 12 children interleaved: each child pushes an older genome
    # out, but a parent that a child was just decoded from counts as recent, so every child costs one slice.
    space = ParameterSpace(noise, np.ones(1000, np.float32))
    decoder = GenomeDecoder(space, cache_bytes=4 * 1000 * 4)
    parents = [Genome(space.sample_offset(rng)).child(space.sample_offset(rng), 0.01) for _ in range(2)]
    for parent in parents:
        decoder.decode(parent)
    applied = decoder.slices_applied
    children = [parents[k % 2].child(space.sample_offset(rng), 0.01) for k in range(12)]
    for child in children:
        np.testing.assert_array_equal(decoder.decode(child), decoder.decode_full(child))
    assert decoder.slices_applied - applied == 12  # no parent was decoded again
    assert all(decoder.cached(parent) for parent in parents)


def test_a_cold_child_keeps_its_parent_for_its_siblings(noise, rng):
    # A decoder that never saw the parent (a Ray actor that did not evaluate it) decodes the chain once.
    space = ParameterSpace(noise, np.ones(1000, np.float32))
    parent = Genome(space.sample_offset(rng))
    for _ in range(6):
        parent = parent.child(space.sample_offset(rng), 0.01)
    decoder = GenomeDecoder(space)
    children = [parent.child(space.sample_offset(rng), 0.01) for _ in range(5)]
    for child in children:
        np.testing.assert_array_equal(decoder.decode(child), decoder.decode_full(child))
    assert decoder.slices_applied == 6 + 5 and decoder.cached(parent)


def test_rounds_drop_what_no_generation_descends_from(noise, rng):
    # A GA's rounds: population round (children of the parents), elite round (some re-evaluated), next
    # population round (children of the selected). Parents live three rounds; the rest leaves the cache.
    space = ParameterSpace(noise, np.ones(1000, np.float32))
    decoder = GenomeDecoder(space)  # room for 268,435 genomes: only the rounds drop any
    assert decoder.keep_rounds == 3
    population = [Genome(space.sample_offset(rng)) for _ in range(8)]
    decoder.start_round()  # the first population round
    for genome in population:
        decoder.decode(genome)
    sizes = []
    for _ in range(12):
        decoder.start_round()  # elite round: the best two again
        for genome in population[:2]:
            decoder.decode(genome)
        parents = population[:3]
        population = [parents[k % 3].child(space.sample_offset(rng), 0.01) for k in range(8)]
        before = decoder.slices_applied
        decoder.start_round()  # the next population round: one slice per child
        for genome in population:
            decoder.decode(genome)
        assert decoder.slices_applied - before == 8
        sizes.append(len(decoder._cache))
    # this round's children, the last population and its parents (used two rounds ago), not the whole run's
    assert max(sizes) == sizes[-1] == 8 + 8 + 3


def test_dropped_weights_are_reused_only_when_nobody_holds_them(noise, rng):
    space = ParameterSpace(noise, np.ones(1000, np.float32))
    decoder = GenomeDecoder(space, keep_rounds=1)
    parent = Genome(space.sample_offset(rng))
    children = [parent.child(space.sample_offset(rng), 0.01) for _ in range(4)]
    decoder.start_round()
    held = decoder.decode(children[0])  # a caller keeps these weights
    expected = held.copy()
    for child in children[1:]:
        decoder.decode(child)
    buffers = {id(decoder.decode(child)) for child in children[1:]}
    decoder.start_round()  # all of them leave the cache
    assert not any(decoder.cached(child) for child in children)
    grandchildren = [children[1].child(space.sample_offset(rng), 0.01) for _ in range(3)]
    reused = {id(decoder.decode(g)) for g in grandchildren}
    np.testing.assert_array_equal(held, expected)  # never written into
    assert reused & buffers and id(held) not in reused
    for g in grandchildren:  # and the reused buffers hold exactly the chain's weights
        np.testing.assert_array_equal(decoder.decode(g), decoder.decode_full(g))
        assert not decoder.decode(g).flags.writeable


def test_start_round_with_the_callers_numbers(noise, rng):
    space = ParameterSpace(noise, np.ones(100, np.float32))
    decoder = GenomeDecoder(space, keep_rounds=2)
    old, new = Genome(space.sample_offset(rng)), Genome(space.sample_offset(rng))
    decoder.start_round(5)
    decoder.decode(old)
    decoder.start_round(5)  # another chunk of round 5: nothing changes
    decoder.start_round(6)
    decoder.decode(new)
    assert decoder.cached(old) and decoder.cached(new)
    decoder.start_round(8)  # rounds 7 and 8 kept: a skipped round (no chunk for this actor) counts
    assert not decoder.cached(old) and not decoder.cached(new)
    with pytest.raises(ValueError, match="index"):
        decoder.start_round(-1)
    with pytest.raises(ValueError, match="keep_rounds"):
        GenomeDecoder(space, keep_rounds=0)


def test_initial_weights_follow_the_models_init(noise):
    model = SmallModel(slots=1, num_actions=4)
    scales = model.initial_scales()
    assert scales.shape == (model.num_parameters,)
    reference = model.initial_parameters(0)
    nonzero = reference != 0
    assert (scales[~nonzero] == 0).all()  # biases
    # Same distribution as initial_parameters: N(0, 1) * std / sqrt(fan_in) per kernel.
    for (kernel, _), std in zip(model.unflatten(scales), model._init_stds):
        np.testing.assert_allclose(kernel, std / np.sqrt(kernel.shape[0]), rtol=1e-6)


def test_genome_serialises_to_json_and_bytes_exactly(rng):
    genome = Genome(5, ((10, 0.002), (2**32 - 1, 1e-3), (0, -0.5)))
    assert Genome.from_json(json.loads(json.dumps(genome.to_json()))) == genome
    assert Genome.from_bytes(genome.to_bytes()) == genome
    assert len(genome.to_bytes()) == genome.encoded_bytes() == 4 + 10 * 3
    assert genome.parent == Genome(5, ((10, 0.002), (2**32 - 1, 1e-3)))
    assert Genome(5).parent is None
    # LargeModel-sized weights against a 1,000-generation lineage: still 500-fold smaller.
    assert Genome(0, ((1, 0.002),) * 1000).compression_ratio(4_052_658) > 500


@pytest.mark.parametrize(
    "data,match",
    [
        ({"init": -1, "mutations": []}, "init"),
        ({"init": 0, "mutations": [[1]]}, "pair"),
        ({"init": 0, "mutations": [[1, 0.1, -1]]}, "rank"),
        ({"init": 0, "mutations": [[1, 0.1, 2**16]]}, "rank"),
        ({"init": "sha256:xyz", "mutations": []}, "base key"),
        ({"init": 2**32 - 1, "mutations": []}, "init"),
        ({"init": 0, "mutations": [[1, "x"]]}, "sigma"),
        ({"init": 0, "mutations": [[1, float("nan")]]}, "finite"),
        ({"init": 0, "mutations": [[1, 1e40]]}, "finite"),
        ({"init": 0}, "keys"),
        ({"init": 0, "mutations": {}}, "list"),
        ([0, []], "dict"),
    ],
)
def test_corrupt_genome_data_is_refused(data, match):
    with pytest.raises(ValueError, match=match):
        Genome.from_json(data)


def test_decoder_checks_genomes_against_its_table(noise):
    decoder = GenomeDecoder(ParameterSpace(noise, np.ones(1000, np.float32)))
    with pytest.raises(ValueError, match="init = .* out of range"):
        decoder.decode(Genome(SMALL_TABLE - 10))
    with pytest.raises(ValueError, match="mutations\\[0\\] index"):
        decoder.decode(Genome(0, ((SMALL_TABLE, 0.1),)))
    with pytest.raises(TypeError, match="Genome"):
        decoder.decode({"init": 0})
    with pytest.raises(ValueError, match="do not fit"):
        ParameterSpace(NoiseTable(100, 1), np.ones(1000, np.float32))
    with pytest.raises(ValueError, match="init_scales"):
        ParameterSpace(noise, np.ones((2, 2), np.float32))


# -- low-rank mutations and dense bases --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def mlp_space(noise):
    from workbench.models import MLPModel

    model = MLPModel(6, 3, (20, 10), slots=4, backend="custom")
    return model, ParameterSpace.for_model(model, noise)


def test_low_rank_mutation_is_the_factor_product_and_decodes_exactly(mlp_space, rng):
    model, space = mlp_space
    rank = 2
    assert space.mutation_length(rank) == sum(k * rank + n * rank + n for k, n in model.kernel_shapes)
    parent = Genome(space.sample_offset(rng)).child(space.sample_offset(rng), 0.05)
    child = parent.child(space.sample_offset(rng, rank), 0.3, rank)
    decoder = GenomeDecoder(space)
    decoder.decode(parent)
    np.testing.assert_array_equal(decoder.decode(child), decoder.decode_full(child))
    # The definition, written out with numpy matmuls: parent + sigma / sqrt(r) * (A B^T, b) per layer.
    expected = []
    factors = space.low_rank_factors(child.mutations[-1][0], rank)
    for (kernel, bias), (a, b, noise_bias) in zip(model.unflatten(decoder.decode(parent)), factors):
        scale = 0.3 / np.sqrt(rank)
        expected += [(kernel + scale * a @ b.T).ravel(), bias + scale * noise_bias]
    np.testing.assert_allclose(decoder.decode(child), np.concatenate(expected), rtol=1e-5, atol=1e-6)


def test_low_rank_child_through_the_perturbed_op_matches_its_decoded_weights(mlp_space, rng):
    import tensorflow as tf

    from workbench.ops import LowRankPerturbation

    model, space = mlp_space
    rank, sigma = 3, 0.2
    decoder = GenomeDecoder(space)
    parent = Genome(space.sample_offset(rng))
    child = parent.child(space.sample_offset(rng, rank), sigma, rank)
    model.set_slots([0, 1], np.stack([decoder.decode(parent), decoder.decode(child)]))
    x = rng.standard_normal((5, 6)).astype(np.float32)
    materialised = model(x, np.ones(5, np.int32)).numpy()
    factors = space.low_rank_factors(child.mutations[-1][0], rank)
    scale = np.full(5, space.low_rank_scale(sigma, rank), np.float32)
    perturbations = [
        LowRankPerturbation(
            tf.constant(scale),
            tf.constant(np.repeat(a[None], 5, 0)),
            tf.constant(np.repeat(b[None], 5, 0)),
            tf.constant(np.repeat(bias[None], 5, 0)),
        )
        for a, b, bias in factors
    ]
    perturbed = model(x, np.zeros(5, np.int32), perturbations).numpy()  # the parent's slot plus the factors
    np.testing.assert_allclose(perturbed, materialised, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("rank", [0, 2])
def test_combined_directions_equal_the_weighted_sum_of_directions(mlp_space, rng, rank):
    _, space = mlp_space
    indices = [space.sample_offset(rng, rank) for _ in range(70)]  # more than one chunk
    weights = rng.standard_normal(70).astype(np.float32)
    expected = sum(w * space.direction(i, rank).astype(np.float64) for i, w in zip(indices, weights))
    np.testing.assert_allclose(space.combine(indices, weights, rank), expected, rtol=1e-4, atol=1e-4)
    base = rng.standard_normal(space.num_parameters).astype(np.float32)
    np.testing.assert_allclose(
        space.perturb(base, indices[0], 0.5, rank), base + 0.5 * space.direction(indices[0], rank), rtol=1e-5, atol=1e-6
    )


def test_low_rank_needs_layer_shapes_and_valid_ranks(noise):
    flat = ParameterSpace(noise, np.ones(100, np.float32))
    with pytest.raises(ValueError, match="needs layer shapes"):
        flat.mutation_length(2)
    with pytest.raises(ValueError, match="layer_shapes hold"):
        ParameterSpace(noise, np.ones(100, np.float32), [(10, 5)])
    with pytest.raises(ValueError, match="rank"):
        ParameterSpace(noise, np.ones(55, np.float32), [(10, 5)]).mutation_length(-1)


def test_genomes_on_a_dense_base(noise, rng):
    from workbench.evolution.genome import base_key

    space = ParameterSpace(noise, np.ones(300, np.float32))
    center = rng.standard_normal(300).astype(np.float32)
    key = base_key(center)
    index = space.sample_offset(rng)
    plus, minus = Genome(key, ((index, 0.02),)), Genome(key, ((index, -0.02),))
    decoder = GenomeDecoder(space)
    with pytest.raises(ValueError, match="does not hold"):
        decoder.decode(plus)
    with pytest.raises(ValueError, match="do not match their key"):
        decoder.add_base(key, center + 1)
    decoder.add_base(key, center)
    np.testing.assert_array_equal(decoder.decode(plus), center + np.float32(0.02) * noise.slice(index, 300))
    np.testing.assert_array_equal(decoder.decode(minus), center + np.float32(-0.02) * noise.slice(index, 300))  # mirror
    np.testing.assert_array_equal(decoder.decode(Genome(key)), center)
    for genome in (plus, Genome(key, ((index, 0.5, 3), (7, 0.1)))):
        assert Genome.from_json(json.loads(json.dumps(genome.to_json()))) == genome
        assert Genome.from_bytes(genome.to_bytes()) == genome
        assert len(genome.to_bytes()) == genome.encoded_bytes()
    decoder.retain_bases([])
    assert decoder.base_keys == [] and not decoder.cached(plus)
    with pytest.raises(ValueError, match="does not hold"):
        decoder.decode(plus)


@pytest.mark.parametrize("rank", [0, 2])
def test_perturb_into_a_buffer_gives_the_same_bits(mlp_space, rng, rank):
    _, space = mlp_space
    theta = space.initial(space.sample_offset(rng))
    index = space.sample_offset(rng, rank)
    out = np.full(space.num_parameters, np.nan, np.float32)
    result = space.perturb(theta, index, 0.3, rank, out=out)
    assert result is out
    np.testing.assert_array_equal(out, space.perturb(theta, index, 0.3, rank))
    for bad in (theta, np.zeros(space.num_parameters), np.zeros(3, np.float32)):
        with pytest.raises(ValueError, match="out must be a float32"):
            space.perturb(theta, index, 0.3, rank, out=bad)
