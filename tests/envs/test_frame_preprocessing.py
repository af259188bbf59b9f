"""Frame preprocessing: the exact integer area resize (numpy twin of the ops) against its definition and OpenCV."""

import numpy as np
import pytest

from workbench.envs.atari.preprocessing import area_resize, area_weights, max_and_resize, round_half_even_divide


@pytest.mark.parametrize("in_size,out_size", [(210, 84), (160, 84), (84, 84), (10, 5), (5, 10), (7, 3)])
def test_area_weights_cover_each_output_exactly_once(in_size, out_size):
    weights = area_weights(in_size, out_size)
    assert weights.shape == (out_size, in_size)
    assert (weights.sum(axis=1) == in_size).all()  # each output covers in_size units
    assert (weights.sum(axis=0) == out_size).all()  # each source is spread over out_size units


def test_round_half_even_divide():
    numerators = np.array([0, 1, 2, 3, 5, 7, 9, 10, 11])
    assert round_half_even_divide(numerators, 2).tolist() == [0, 0, 1, 2, 2, 4, 4, 5, 6]
    assert round_half_even_divide(np.array([5, 15, 25]), 10).tolist() == [0, 2, 2]


def test_integer_factor_is_the_block_mean(rng):
    frame = rng.integers(0, 256, (8, 6), dtype=np.uint8)
    expected = frame.reshape(4, 2, 3, 2).astype(np.float64).mean(axis=(1, 3))
    out = area_resize(frame, 4, 3)
    assert np.abs(out - expected).max() <= 0.5
    assert np.array_equal(area_resize(frame, 8, 6), frame)  # same size: identity


def test_resize_refuses_bad_frames():
    with pytest.raises(ValueError, match="uint8"):
        area_resize(np.zeros((4, 4), np.float32), 2, 2)
    with pytest.raises(ValueError, match="uint8"):
        area_resize(np.zeros((4, 4, 3), np.uint8), 2, 2)


def test_max_is_taken_before_the_resize(rng):
    a = rng.integers(0, 256, (210, 160), dtype=np.uint8)
    b = rng.integers(0, 256, (210, 160), dtype=np.uint8)
    assert np.array_equal(max_and_resize(a, b, 84), area_resize(np.maximum(a, b), 84, 84))


def test_difference_from_opencv_inter_area_is_at_most_one(rng):
    """OpenCV's INTER_AREA (used by ale-py's AtariVectorEnv and Gymnasium) accumulates in float;
    our integer form rounds the exact mean. They differ by at most 1 on a small share of pixels."""
    cv2 = pytest.importorskip("cv2")
    frames = [rng.integers(0, 256, (210, 160), dtype=np.uint8) for _ in range(20)]
    frames.append(np.tile(np.arange(160, dtype=np.uint8), (210, 1)))  # smooth gradient
    differing = 0
    for frame in frames:
        ours = area_resize(frame, 84, 84).astype(int)
        theirs = cv2.resize(frame, (84, 84), interpolation=cv2.INTER_AREA).astype(int)
        assert np.abs(ours - theirs).max() <= 1
        differing += int((ours != theirs).sum())
    assert differing / (len(frames) * 84 * 84) < 0.05
