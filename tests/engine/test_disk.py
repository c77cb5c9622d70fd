import os
import pickle

import pytest

from engine.disk import Disk
from engine.errors import PathEscapeError


@pytest.fixture
def disk(tmp_path):
    return Disk(tmp_path / "data")


@pytest.mark.parametrize("rel", ["../x", "/etc/passwd", "a/../../x", "a//b", "a/./b", "", "a\\b", "a/b c", "x/\u00e9"])
def test_paths_that_could_leave_the_directory_are_refused(disk, rel):
    with pytest.raises(PathEscapeError):
        disk.append(rel, b"x")


def test_symlink_out_of_the_directory_is_refused(disk, tmp_path):
    os.symlink(tmp_path, disk.root / "escape")
    with pytest.raises(PathEscapeError):
        disk.append("escape/evil", b"x")
    assert not (tmp_path / "evil").exists()


def test_crash_loses_exactly_what_was_not_fsynced(disk):
    disk.mkdir("b1")
    disk.append("b1/f", b"durable")
    disk.fsync("b1/f")
    disk.append("b1/f", b"-volatile")
    disk.append("b1/new", b"never synced")
    lost = disk.crash("b1")
    assert disk.read_all("b1/f") == b"durable"
    assert disk.size("b1/new") == 0
    assert ("b1/f", 16, 7) in lost


def test_crash_of_one_broker_leaves_others_alone(disk):
    for b in ("b1", "b2"):
        disk.mkdir(b)
        disk.append(f"{b}/f", b"data")
    disk.crash("b1")
    assert disk.read_all("b1/f") == b"" and disk.read_all("b2/f") == b"data"


def test_atomic_write_is_durable_and_leaves_no_tmp(disk):
    disk.mkdir("p")
    disk.write_atomic("p/ckpt", b"0\n0\n")
    disk.crash("p")
    assert disk.read_all("p/ckpt") == b"0\n0\n" and not disk.exists("p/ckpt.tmp")


def test_rename_carries_the_unsynced_state(disk):
    disk.mkdir("p")
    disk.append("p/a.log", b"abc")
    disk.rename("p/a.log", "p/a.log.deleted")
    disk.crash("p")
    assert disk.size("p/a.log.deleted") == 0


def test_capture_restore_round_trip_keeps_sparse_sizes(disk):
    disk.mkdir("p")
    disk.append("p/x.index", b"\1\2")
    disk.truncate("p/x.index", 1 << 20)
    images = disk.capture()
    assert len(images["p/x.index"].data) == 2
    disk.append("p/other", b"gone after restore")
    disk.restore(images)
    assert disk.size("p/x.index") == 1 << 20 and not disk.exists("p/other")


def test_disk_pickles_without_open_handles(disk):
    disk.append("f", b"abc")
    clone = pickle.loads(pickle.dumps(disk))
    assert clone.read_all("f") == b"abc"


def test_restore_brings_back_empty_directories(disk):
    disk.mkdir("broker-0")
    images = disk.capture()
    disk.rmtree("broker-0")
    disk.restore(images)
    disk.write_atomic("broker-0/replication-offset-checkpoint", b"0\n0\n")
    assert disk.read_all("broker-0/replication-offset-checkpoint") == b"0\n0\n"
