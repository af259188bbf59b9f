"""Checkpoints' journals (format 2): the lists that only grow are appended to files beside the checkpoints, not
rewritten into each state.json; what a crash, a damaged journal, a list that does not continue and an older
checkpoint do with them."""

import json
import os

import numpy as np
import pytest

from workbench.training.checkpoint import CheckpointError, list_checkpoints, load_checkpoint, save_checkpoint

JOURNALS = (("history",), ("strategy", "history"))


def state(generations):
    records = [{"generation": g, "mean": g / 3, "nested": {"x": [g, None]}} for g in range(generations)]
    return {
        "history": records,
        "strategy": {"history": records[: max(0, generations - 1)], "mean": np.arange(3.0) * generations},
        "frames": 10 * generations,
    }


def journal_files(run_dir):
    root = os.path.join(run_dir, "checkpoints")
    return sorted(n for n in os.listdir(root) if n.startswith("journal-"))


def test_journals_round_trip_and_keep_state_json_small(tmp_path):
    run_dir = str(tmp_path)
    for generation in range(1, 30):
        path = save_checkpoint(run_dir, generation, state(generation), journals=JOURNALS)
        loaded_generation, loaded = load_checkpoint(run_dir)
        assert loaded_generation == generation
        assert loaded["history"] == state(generation)["history"]
        assert loaded["strategy"]["history"] == state(generation)["strategy"]["history"]
        np.testing.assert_array_equal(loaded["strategy"]["mean"], state(generation)["strategy"]["mean"])
    assert os.path.getsize(os.path.join(path, "state.json")) < 1000  # references, not the 29 records
    assert journal_files(run_dir) == ["journal-history-000.jsonl", "journal-strategy.history-000.jsonl"]
    with open(os.path.join(run_dir, "checkpoints", "journal-history-000.jsonl")) as f:
        assert [json.loads(line)["generation"] for line in f] == list(range(29))  # appended, each record once
    for older in list_checkpoints(run_dir):  # the kept older checkpoints read their own prefix
        generation, loaded = load_checkpoint(older)
        assert loaded["history"] == state(generation)["history"]


def test_a_crash_mid_append_leaves_bytes_no_checkpoint_counts_and_the_next_save_cuts_them(tmp_path):
    run_dir = str(tmp_path)
    save_checkpoint(run_dir, 3, state(3), journals=JOURNALS)
    journal = os.path.join(run_dir, "checkpoints", "journal-history-000.jsonl")
    with open(journal, "ab") as f:
        f.write(b'{"generation": 3, "half-writ')  # killed while appending, before the checkpoint's rename
    assert load_checkpoint(run_dir)[1]["history"] == state(3)["history"]
    save_checkpoint(run_dir, 5, state(5), journals=JOURNALS)
    assert load_checkpoint(run_dir)[1]["history"] == state(5)["history"]
    with open(journal) as f:
        assert [json.loads(line)["generation"] for line in f] == list(range(5))


@pytest.mark.parametrize(
    "damage,match",
    [
        (lambda path: open(path, "r+b").write(b"["), "not the ones the checkpoint recorded"),  # a byte changed
        (lambda path: open(path, "r+b").truncate(10), "not the ones the checkpoint recorded"),  # cut short
        (os.remove, "cannot be read"),
    ],
)
def test_a_damaged_journal_is_refused_naming_it(tmp_path, damage, match):
    run_dir = str(tmp_path)
    save_checkpoint(run_dir, 4, state(4), journals=JOURNALS)
    journal = os.path.join(run_dir, "checkpoints", "journal-history-000.jsonl")
    damage(journal)
    with pytest.raises(CheckpointError, match=rf"journal-history-000\.jsonl.*{match}|{match}.*journal-history"):
        load_checkpoint(run_dir)


def test_a_list_that_does_not_continue_the_journal_starts_a_new_epoch_and_older_checkpoints_keep_theirs(tmp_path):
    run_dir = str(tmp_path)
    save_checkpoint(run_dir, 4, state(4), journals=JOURNALS, keep=3)
    rewritten = state(6)
    rewritten["history"][2] = {"generation": 2, "mean": -1.0}  # not an append: the record of generation 2 changed
    rewritten["history"] = rewritten["history"][:4] + rewritten["history"][4:]
    rewritten["history"][3] = {"generation": 3, "other": True}
    save_checkpoint(run_dir, 6, rewritten, journals=JOURNALS, keep=3)
    assert "journal-history-001.jsonl" in journal_files(run_dir)
    assert load_checkpoint(run_dir)[1]["history"] == rewritten["history"]
    assert load_checkpoint(list_checkpoints(run_dir)[0])[1]["history"] == state(4)["history"]
    save_checkpoint(run_dir, 7, rewritten, journals=JOURNALS, keep=1)  # the epoch-0 journal is no longer referred to
    assert journal_files(run_dir) == ["journal-history-001.jsonl", "journal-strategy.history-000.jsonl"]
    assert load_checkpoint(run_dir)[1]["history"] == rewritten["history"]


def test_format_1_checkpoints_are_read_and_continued_in_journals(tmp_path):
    run_dir = str(tmp_path)
    save_checkpoint(run_dir, 2, state(2))  # no journals: everything in state.json, as format 1 kept it
    path = list_checkpoints(run_dir)[0]
    with open(os.path.join(path, "state.json")) as f:
        document = json.load(f)
    document["version"] = 1
    with open(os.path.join(path, "state.json"), "w") as f:
        json.dump(document, f)
    assert load_checkpoint(run_dir)[1]["history"] == state(2)["history"]
    save_checkpoint(run_dir, 3, state(3), journals=JOURNALS)
    assert load_checkpoint(run_dir)[1]["history"] == state(3)["history"]


def test_bad_journal_paths_and_records_are_named(tmp_path):
    with pytest.raises(ValueError, match="journals: the state has no list at 'frames'"):
        save_checkpoint(str(tmp_path), 1, state(1), journals=[("frames",)])
    with pytest.raises(ValueError, match="journals: the state has no dict at 'nowhere'"):
        save_checkpoint(str(tmp_path), 1, state(1), journals=[("nowhere", "history")])
    with pytest.raises(TypeError, match="journal 'history' holds JSON records only"):
        save_checkpoint(str(tmp_path), 1, {"history": [{"a": np.zeros(2)}]}, journals=[("history",)])
    assert list_checkpoints(str(tmp_path)) == []


def test_a_save_after_an_unreadable_newest_checkpoint_starts_a_new_epoch_and_cuts_nothing(tmp_path):
    run_dir = str(tmp_path)
    save_checkpoint(run_dir, 3, state(3), journals=JOURNALS, keep=3)
    save_checkpoint(run_dir, 5, state(5), journals=JOURNALS, keep=3)
    older, newest = list_checkpoints(run_dir)
    with open(os.path.join(newest, "state.json"), "w") as f:
        f.write("{not json")
    save_checkpoint(run_dir, 6, state(6), journals=JOURNALS, keep=3)
    assert "journal-history-001.jsonl" in journal_files(run_dir)
    assert load_checkpoint(run_dir)[1]["history"] == state(6)["history"]
    assert load_checkpoint(older)[1]["history"] == state(3)["history"]
