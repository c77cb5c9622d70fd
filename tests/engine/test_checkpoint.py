import pytest

from engine.disk import Disk
from engine.errors import CorruptCheckpointError
from engine.log.checkpoint import CheckpointFile


@pytest.fixture
def disk(tmp_path):
    return Disk(tmp_path)


def test_writes_kafka_text_format(disk):
    cp = CheckpointFile(disk, "orders-0/leader-epoch-checkpoint")
    disk.mkdir("orders-0")
    cp.write([(0, 0), (3, 1500)])
    assert disk.read_all("orders-0/leader-epoch-checkpoint") == b"0\n2\n0 0\n3 1500\n"


def test_round_trips_topic_lines(disk):
    cp = CheckpointFile(disk, "recovery-point-offset-checkpoint", (str, int, int))
    cp.write([("orders", 0, 1234), ("a-b.c", 11, 0)])
    assert cp.read() == [("orders", 0, 1234), ("a-b.c", 11, 0)]


def test_missing_and_empty_files_read_as_no_entries(disk):
    cp = CheckpointFile(disk, "x-checkpoint")
    assert cp.read() == []
    disk.append("x-checkpoint", b"")
    assert cp.read() == []


def test_write_leaves_no_tmp_and_is_durable(disk):
    cp = CheckpointFile(disk, "x-checkpoint")
    cp.write([(1, 2)])
    assert not disk.exists("x-checkpoint.tmp")
    assert not disk.is_dirty("x-checkpoint")
    disk.crash()
    assert cp.read() == [(1, 2)]


def test_reader_accepts_any_whitespace(disk):
    disk.append("x-checkpoint", b"0\n1\n4\t  77\n")
    assert CheckpointFile(disk, "x-checkpoint").read() == [(4, 77)]


@pytest.mark.parametrize("data, fragment", [
    (b"1\n0\n", "unknown version 1"),
    (b"0\n2\n0 0\n", "says 2 entries"),
    (b"0\n1\n0\n", "should have 2 fields"),
    (b"0\n1\n0 x\n", "not an integer"),
    (b"zero\n0\n", "not an integer"),
    (b"0\n", "count line"),
])
def test_rejects_malformed_files(disk, data, fragment):
    disk.append("x-checkpoint", data)
    with pytest.raises(CorruptCheckpointError, match=fragment):
        CheckpointFile(disk, "x-checkpoint").read()
