"""engine.storage_experiment: seed 000 §1.4 replayed on the real engine."""
import json
import os
import pathlib
import subprocess
import sys

import pytest

from engine.errors import InvalidRequestError
from engine.storage_experiment import ExperimentResult, format_text, run_storage_experiment

REPO = pathlib.Path(__file__).resolve().parents[2]
DIRS = ("test-0", "test-1")


@pytest.fixture(scope="module")
def result(tmp_path_factory) -> ExperimentResult:
    return run_storage_experiment(str(tmp_path_factory.mktemp("experiment")))


def _logs(files):
    return [name for name, _ in files if name.endswith(".log")]


def _events(result, kind):
    return [ev for step in result.steps for ev in step.events if ev["kind"] == kind]


def test_each_partition_rolls_to_a_second_segment_while_sending(result):
    for d in DIRS:
        listings = [step.listing[d] for step in result.steps if step.phase == "send" and d in step.listing]
        assert any(len(_logs(files)) >= 2 for files in listings), d
    rolled = {(ev["partition"], ev["reason"]) for ev in _events(result, "segment_rolled")}
    assert (0, "size") in rolled and (1, "size") in rolled


def test_no_log_file_ever_grows_past_segment_bytes(result):
    for step in result.steps:
        for files in step.listing.values():
            assert all(size <= 1000 for name, size in files if name.endswith(".log"))


def test_the_retention_pass_shows_a_deleted_stage_before_the_files_vanish(result):
    phases = [step.phase for step in result.steps]
    assert "retention" in phases and "file_delete" in phases
    assert phases.index("retention") < phases.index("file_delete")
    staged = next(step for step in result.steps if step.phase == "retention")
    assert any(name.endswith(".log.deleted") for files in staged.listing.values() for name, _ in files)
    final = result.steps[-1]
    assert not any(name.endswith(".deleted") for files in final.listing.values() for name, _ in files)
    assert len(_events(result, "file_deleted")) >= 3 * len(_events(result, "segment_deleted"))


def test_files_vanish_file_delete_delay_after_the_rename(result):
    renamed = next(step for step in result.steps if step.phase == "retention")
    removed = next(step for step in result.steps if step.phase == "file_delete")
    assert removed.time_ms - renamed.time_ms == result.config["file.delete.delay.ms"]


def test_retention_removes_old_segments_but_never_the_active_one(result):
    deleted = _events(result, "segment_deleted")
    assert {ev["partition"] for ev in deleted} == {0, 1}
    final = result.steps[-1].listing
    for p, d in enumerate(DIRS):
        leo = result.log_end_offsets[d]
        assert "00000000000000000000.log" not in _logs(final[d])
        # the segment that takes the next message (base offset = LEO) survives, and LEO never went back
        assert f"{leo:020d}.log" in _logs(final[d])
        assert all(ev["segment"] < leo for ev in deleted if ev["partition"] == p)
        assert result.log_start_offsets[d] == leo == 24


def test_size_rule_deletes_a_segment_of_its_own(result):
    size_deletions = [ev for ev in _events(result, "retention_check") if ev["rule"] == "size" and ev["deletable"]]
    assert {ev["partition"] for ev in size_deletions} == {0, 1}


def test_text_output_has_listings_and_the_deleted_stage(result):
    text = format_text(result)
    assert "$ ls -l test-0" in text and "$ ls -l test-1" in text
    assert ".log.deleted" in text and "rolled" in text


def test_refuses_a_directory_that_already_holds_the_topic(tmp_path):
    (tmp_path / "test-0").mkdir()
    (tmp_path / "test-0" / "00000000000000000000.log").write_bytes(b"")
    with pytest.raises(InvalidRequestError, match="empty directory"):
        run_storage_experiment(str(tmp_path))


def test_cli_json_output_is_the_same_run_and_stays_in_its_dir(tmp_path, result):
    target = tmp_path / "exp"
    proc = subprocess.run([sys.executable, "-m", "engine", "storage-experiment", "--dir", str(target), "--json"],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["config"]["segment.bytes"] == 1000 and data["config"]["retention.bytes"] == 2000
    assert [s["title"] for s in data["steps"]] == [s.title for s in result.steps]
    assert sorted(os.listdir(tmp_path)) == ["exp"] and sorted(os.listdir(target)) == list(DIRS)
