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


def test_write_at_after_fsync_or_reopen_is_dirty_again(disk):
    """A write to an open, already-dirty file skips the path check and the stat; a write after
    an fsync, or after the handle was closed, must still record the durable size first."""
    disk.mkdir("b1")
    disk.write_at("b1/f", 0, b"abc")
    disk.write_at("b1/f", 3, b"def")           # open and dirty: the short path
    disk.fsync("b1/f")
    disk.write_at("b1/f", 6, b"ghi")           # open, clean: dirty again, durable size 6
    assert disk.durable_size("b1/f") == 6
    disk.close_all()
    disk.write_at("b1/f", 9, b"jkl")           # reopened, still dirty since the fsync
    lost = disk.crash("b1")
    assert disk.read_all("b1/f") == b"abcdef" and ("b1/f", 12, 6) in lost
    with pytest.raises(PathEscapeError):
        disk.write_at("../escape", 0, b"x")    # never opened: checked
    disk.write_at("b1/g", 0, b"x", into_preallocated=True)
    disk.write_at("b1/g", 1, b"y", into_preallocated=True)   # the short path still tracks the range
    assert disk._volatile["b1/g"] == (0, 2)


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


def test_usage_counts_preallocated_bytes_even_as_holes(tmp_path):
    disk = Disk(tmp_path)
    disk.mkdir("p")
    disk.append("p/a.index", b"x" * 8)
    disk.truncate("p/a.index", 1 << 20)            # preallocated the sparse way, as Kafka does
    st = os.stat(tmp_path / "p" / "a.index")
    assert st.st_blocks * 512 < 1 << 20           # du sees a hole
    assert disk.usage_bytes() >= 1 << 20           # the quota does not


def test_allocating_disk_makes_du_equal_the_quota(tmp_path):
    disk = Disk(tmp_path, allocate=True)
    disk.mkdir("p")
    disk.append("p/a.log", b"x" * 100)
    disk.append("p/b.index", b"y" * 8)
    disk.truncate("p/b.index", 256 * 1024)
    du = sum(os.lstat(os.path.join(d, n)).st_blocks * 512
             for d, dirs, files in os.walk(tmp_path) for n in dirs + files)
    assert disk.usage_bytes() == du
    assert disk.read("p/b.index", 0, 9) == b"y" * 8 + b"\0"


def test_restore_keeps_preallocation_allocated(tmp_path):
    disk = Disk(tmp_path / "a", allocate=True)
    disk.mkdir("p")
    disk.append("p/b.index", b"y" * 8)
    disk.truncate("p/b.index", 64 * 1024)
    images = disk.capture()
    other = Disk(tmp_path / "b", allocate=True)
    other.restore(images)
    assert os.stat(tmp_path / "b" / "p" / "b.index").st_blocks * 512 >= 64 * 1024
    assert other.usage_bytes() == disk.usage_bytes()


@pytest.mark.parametrize("os_fsync", [True, False])
def test_a_sandbox_disk_models_fsync_without_asking_the_os(tmp_path, monkeypatch, os_fsync):
    calls = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (calls.append(fd), real(fd)))
    d = Disk(tmp_path / "d", os_fsync=os_fsync)
    d.mkdir("p")
    d.append("p/a.log", b"kept")
    d.fsync("p/a.log")
    d.append("p/a.log", b"lost")
    d.write_atomic("p/cp", b"longer first")
    d.write_atomic("p/cp", b"x")
    assert bool(calls) is os_fsync
    assert sorted(name for name, _ in d.list_files("p")) == ["a.log", "cp"]
    # The model is the same either way: a crash keeps exactly what was fsynced.
    d.crash("p")
    assert d.read_all("p/a.log") == b"kept" and d.read_all("p/cp") == b"x"
    assert pickle.loads(pickle.dumps(d)).os_fsync is os_fsync


def test_a_symlinked_file_out_of_the_directory_is_refused(disk, tmp_path):
    """The directory part of a path is resolved once; the file itself is checked with one
    lstat, so a symlink put where a segment file will be cannot lead out either."""
    outside = tmp_path / "outside.log"
    outside.write_bytes(b"")
    disk.mkdir("b0")
    disk.append("b0/ok.log", b"x")                     # the directory is now known and cached
    os.symlink(outside, disk.root / "b0" / "evil.log")
    with pytest.raises(PathEscapeError):
        disk.append("b0/evil.log", b"x")
    assert outside.read_bytes() == b""

