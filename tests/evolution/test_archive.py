"""The quality-diversity archives against pyribs 0.12, insertion by insertion, and their bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest

from workbench.evolution.archive import CVTArchive, GridArchive, cvt_centroids

ribs_archives = pytest.importorskip("ribs.archives")

BOUNDS = [(-1.0, 1.0), (0.0, 2.0)]


def batches(seed, count=30, size=40, dimensions=2):
    """Batches of candidates that exercise every rule: cells hit several times in one batch, equal objectives,
    descriptors outside the bounds and exactly on cell boundaries."""
    rng = np.random.default_rng(seed)
    for _ in range(count):
        descriptors = rng.uniform([-1.3, -0.3], [1.3, 2.3], size=(size, dimensions))
        descriptors[: size // 4] = descriptors[0]  # one cell several times
        descriptors[-3:] = [[-1.0, 0.0], [0.5, 1.0], [1.0, 2.0]]  # on the bounds and a boundary
        objectives = np.round(rng.normal(size=size) * 10, 1)  # rounded: equal objectives happen
        objectives[1] = objectives[2]
        yield descriptors, objectives


def twin_check(ours, theirs, seed):
    for step, (descriptors, objectives) in enumerate(batches(seed)):
        genomes = [(step, k) for k in range(len(objectives))]
        solutions = np.array(genomes, np.float64)
        size_before = theirs.stats.num_elites
        got = ours.add(genomes, objectives, descriptors, generation=step)
        want = theirs.add(solutions, objectives, descriptors)
        assert got.filled == theirs.stats.num_elites - size_before  # cells, not candidates
        assert got.filled + got.replaced == np.unique(got.cells[got.status > 0]).size
        np.testing.assert_array_equal(got.status, want["status"], err_msg=f"batch {step}")
        np.testing.assert_allclose(got.value, want["value"], rtol=1e-12, atol=1e-12, err_msg=f"batch {step}")
        np.testing.assert_array_equal(got.cells, theirs.index_of(descriptors))
        data = theirs.data()
        cells = np.asarray(data["index"])
        np.testing.assert_array_equal(ours.occupied_cells(), np.sort(cells))
        order = np.argsort(cells)
        np.testing.assert_array_equal(ours.objective[cells[order]], data["objective"][order])
        np.testing.assert_allclose(ours.threshold[cells[order]], data["threshold"][order], rtol=1e-12)
        np.testing.assert_array_equal(ours.descriptor[cells[order]], data["measures"][order])
        assert [tuple(ours.genomes[c]) for c in cells[order]] == [tuple(s) for s in data["solution"][order]]
        stats = theirs.stats
        assert ours.size == stats.num_elites and ours.coverage == pytest.approx(stats.coverage, rel=1e-12)
        assert ours.qd_score == pytest.approx(stats.qd_score, rel=1e-12, abs=1e-9)
        assert ours.best_objective == pytest.approx(stats.obj_max, rel=1e-15)


@pytest.mark.parametrize("soft", [False, True], ids=["map-elites", "cma-mae"])
def test_the_grid_archive_holds_what_pyribs_holds_insertion_by_insertion(soft):
    settings = dict(learning_rate=0.1, threshold_min=-5.0) if soft else {}
    ours = GridArchive([7, 5], BOUNDS, qd_score_offset=-20.0, **settings)
    theirs = ribs_archives.GridArchive(solution_dim=2, dims=[7, 5], ranges=BOUNDS, qd_score_offset=-20.0, **settings)
    twin_check(ours, theirs, seed=1)


@pytest.mark.parametrize("soft", [False, True], ids=["map-elites", "cma-mae"])
def test_the_cvt_archive_holds_what_pyribs_holds_with_the_same_centroids(soft):
    settings = dict(learning_rate=0.3, threshold_min=0.0) if soft else {}
    centroids = cvt_centroids(40, BOUNDS, seed=3)
    ours = CVTArchive(centroids, BOUNDS, qd_score_offset=-20.0, **settings)
    theirs = ribs_archives.CVTArchive(solution_dim=2, centroids=centroids, ranges=BOUNDS, qd_score_offset=-20.0, **settings)
    twin_check(ours, theirs, seed=2)


def test_cvt_centroids_spread_over_the_bounds():
    centroids = cvt_centroids(50, BOUNDS, seed=0)
    assert centroids.shape == (50, 2) and np.unique(centroids, axis=0).shape[0] == 50
    assert (centroids >= [-1, 0]).all() and (centroids <= [1, 2]).all()
    samples = np.random.default_rng(9).uniform([-1, 0], [1, 2], size=(20000, 2))
    counts = np.bincount(CVTArchive(centroids, BOUNDS).index_of(samples), minlength=50)
    assert counts.min() > 0.4 * counts.mean() and counts.max() < 1.8 * counts.mean()  # near-equal volumes


def test_cvt_centroids_are_computed_once_and_read_back(tmp_path, monkeypatch):
    from workbench.evolution import archive as module

    monkeypatch.setenv("WORKBENCH_CACHE", str(tmp_path))
    first = cvt_centroids(30, BOUNDS, samples=3000, seed=4)
    files = list((tmp_path / "cvt").iterdir())
    assert len(files) == 1 and np.array_equal(np.load(files[0]), first)

    def refuse(*args):
        raise AssertionError("computed again")

    monkeypatch.setattr(module, "_lloyd", refuse)
    assert np.array_equal(cvt_centroids(30, BOUNDS, samples=3000, seed=4), first)  # read back
    monkeypatch.undo()
    monkeypatch.setenv("WORKBENCH_CACHE", str(tmp_path))
    np.save(files[0], np.zeros((2, 2)))  # a file of another shape: computed again
    assert np.array_equal(cvt_centroids(30, BOUNDS, samples=3000, seed=4), first)
    assert not np.array_equal(cvt_centroids(30, BOUNDS, samples=3000, seed=5), first)


def test_non_finite_candidates_are_left_out_counted_and_reported():
    archive = GridArchive([4, 4], BOUNDS)
    result = archive.add(["a", "b", "c", "d"], [1.0, math.nan, 2.0, math.inf], [[0, 1], [0, 1], [math.nan, 1], [0.5, 0.5]])
    assert result.status.tolist() == [2, 0, 0, 0] and result.rejected == 3 and archive.rejected == 3
    assert (result.filled, result.replaced) == (1, 0)
    assert result.cells.tolist()[1:] == [-1, -1, -1] and np.isnan(result.value[1:]).all()
    assert archive.size == 1 and archive.elite(int(result.cells[0]))["genome"] == "a"


def test_state_round_trips_and_a_mismatched_archive_is_refused_naming_both():
    archive = GridArchive([4, 3], BOUNDS, learning_rate=0.5, threshold_min=0.0, qd_score_offset=-1.0)
    for descriptors, objectives in batches(4, count=5, size=12):
        archive.add([{"id": float(o)} for o in objectives], objectives, descriptors, generation=2)
    state = archive.state_dict()
    restored = GridArchive([4, 3], BOUNDS, learning_rate=0.5, threshold_min=0.0, qd_score_offset=-1.0)
    restored.load_state(state)
    for name in ("occupied", "objective", "threshold", "descriptor", "entered"):
        np.testing.assert_array_equal(getattr(restored, name), getattr(archive, name))
    assert restored.genomes == archive.genomes and restored.qd_score == archive.qd_score
    assert restored.statistics() == archive.statistics()
    with pytest.raises(ValueError, match=r"checkpoint's archive \(grid, 12 cells.*dims \[4, 3\]\).*this run's \(grid, 20 cells"):
        GridArchive([4, 5], BOUNDS, learning_rate=0.5, threshold_min=0.0).load_state(state)
    with pytest.raises(ValueError, match="bounds"):
        GridArchive([4, 3], [(-1, 1), (0, 3)], learning_rate=0.5, threshold_min=0.0).load_state(state)
    with pytest.raises(ValueError, match="settings"):
        GridArchive([4, 3], BOUNDS).load_state(state)
    corrupt = dict(state, objective=state["objective"][:-1])
    with pytest.raises(ValueError, match="corrupt archive state: objective"):
        restored.load_state(corrupt)
    with pytest.raises(ValueError, match="corrupt archive state"):
        restored.load_state({"describe": state["describe"]})
    cvt = CVTArchive(cvt_centroids(10, BOUNDS), BOUNDS)
    with pytest.raises(ValueError, match="cvt, 10 cells, bounds .*centroids_sha256"):
        cvt.load_state(CVTArchive(cvt_centroids(10, BOUNDS, seed=1), BOUNDS).state_dict())


def test_bad_archive_arguments_are_refused_by_name():
    with pytest.raises(ValueError, match="dims"):
        GridArchive([], BOUNDS)
    with pytest.raises(ValueError, match=r"dims\[1\]"):
        GridArchive([3, 0], BOUNDS)
    with pytest.raises(ValueError, match="2 .low, high. pairs for 3 descriptor dimensions"):
        GridArchive([3, 3, 3], BOUNDS)
    with pytest.raises(ValueError, match="low < high"):
        GridArchive([3, 3], [(0, 1), (2, 2)])
    with pytest.raises(ValueError, match="finite threshold_min"):
        GridArchive([3, 3], BOUNDS, learning_rate=0.5)
    with pytest.raises(ValueError, match="needs a learning_rate below 1"):
        GridArchive([3, 3], BOUNDS, threshold_min=0.0)
    with pytest.raises(ValueError, match="centroids"):
        CVTArchive(np.zeros((0, 2)), BOUNDS)
    archive = GridArchive([3, 3], BOUNDS)
    with pytest.raises(ValueError, match=r"descriptors must be \[k, 2\]"):
        archive.add(["a"], [1.0], [[0.0, 0.0, 0.0]])
    with pytest.raises(ValueError, match="one objective and one descriptor row per genome"):
        archive.add(["a", "b"], [1.0], [[0.0, 0.0]])
    with pytest.raises(ValueError, match="cell 4 is empty"):
        archive.elite(4)
    with pytest.raises(ValueError, match="cannot sample from an empty archive"):
        archive.sample(np.random.default_rng(0), 3)
