import pytest

from engine.config import LogConfig
from engine.disk import Disk
from engine.records import SimpleRecord, build_batch, read_header
from engine.log.log_segment import LogSegment, segment_file_name


def batch_of_size(base_offset, size, ts=1000, count=1):
    """A batch of exactly ``size`` bytes (size >= 70 + count)."""
    pad = size - 70 - (count - 1) * 8
    for _ in range(8):
        recs = [SimpleRecord(b"x" * pad, timestamp=ts)] + [SimpleRecord(b"", timestamp=ts)] * (count - 1)
        data = build_batch(recs, base_offset=base_offset)
        if len(data) == size:
            return data
        pad += size - len(data)
    raise AssertionError(f"cannot build a {size}-byte batch")


@pytest.fixture
def seg(tmp_path):
    disk = Disk(tmp_path)
    disk.mkdir("t-0")
    return LogSegment.create(disk, "t-0", 0, LogConfig(index_interval_bytes=4096))


def append(seg, data, now=0):
    return seg.append(data, read_header(data), now)


def test_file_names_are_twenty_digit_base_offsets():
    assert segment_file_name(1234) == "00000000000000001234.log"
    assert segment_file_name(1234, ".timeindex") == "00000000000000001234.timeindex"


def test_new_segment_preallocates_indexes(seg):
    assert seg.disk.size(seg.offset_index.rel) == 10485760
    assert seg.disk.size(seg.time_index.rel) == 10485756
    assert seg.disk.size(seg.log_rel) == 0


def test_index_entry_on_sixth_1000_byte_batch_then_every_fifth(seg):
    # reference §3.3: counter 0,1000,...,5000 -> first entry at position 5000
    for i in range(16):
        append(seg, batch_of_size(i, 1000, ts=100 + i))
    assert seg.offset_index.keys == [5, 10, 15]
    assert seg.offset_index.values == [5000, 10000, 15000]
    assert seg.time_index.keys == [105, 110, 115]


def test_entry_maps_last_offset_to_start_position(seg):
    for i in range(6):
        append(seg, batch_of_size(i * 3, 1000, count=3))
    assert seg.offset_index.keys == [17] and seg.offset_index.values == [5000]


def test_become_inactive_adds_max_timestamp_entry_and_trims(seg):
    for i, ts in enumerate([5, 9, 7]):
        append(seg, batch_of_size(i, 100, ts=ts))
    trims = seg.on_become_inactive()
    assert seg.time_index.keys == [9] and seg.time_index.values == [1]
    assert trims == [("offset", 0, 10485760, 0), ("time", 1, 10485756, 12)]


def test_translate_offset_scans_to_first_batch_holding_target(seg):
    for i in range(5):
        append(seg, batch_of_size(i * 10, 200, count=10))
    seen = []
    pos, h = seg.translate_offset(34, 0, seen)
    assert (pos, h.base_offset) == (600, 30)
    assert [(row[0], row[4]) for row in seen] == [(0, False), (200, False), (400, False), (600, True)]
    assert [row[1:3] for row in seen] == [(0, 9), (10, 19), (20, 29), (30, 39)]
    assert seg.find_offset(34, 0) == (600, 200) and seg.find_offset(50, 0) is None


def test_truncate_to_cuts_whole_batch_and_index_entries(seg):
    for i in range(12):
        append(seg, batch_of_size(i, 1000, ts=i))
    seg.truncate_to(8)
    assert seg.size == 8000 and seg.next_offset == 8
    assert seg.offset_index.keys == [5]
    assert seg.bytes_since_last_index_entry == 3000


def test_recover_rebuilds_same_indexes(seg):
    for i in range(40):
        append(seg, batch_of_size(i, 300 + 37 * (i % 5), ts=1000 + (i * 7) % 23))
    seg.on_become_inactive()
    offset_bytes, time_bytes = seg.offset_index.raw_entries(), seg.time_index.raw_entries()
    result = seg.recover(0)
    assert result.truncated_bytes == 0
    assert seg.disk.read_all(seg.offset_index.rel) == offset_bytes
    assert seg.disk.read_all(seg.time_index.rel) == time_bytes


def test_recover_cuts_torn_tail(seg):
    for i in range(3):
        append(seg, batch_of_size(i, 100))
    seg.disk.append(seg.log_rel, b"\0\0\0\0\0\0\0\3\0\0")
    result = seg.recover(0)
    assert (result.valid_bytes, result.truncated_bytes, len(result.headers)) == (300, 10, 3)
    assert seg.disk.size(seg.log_rel) == 300


def test_rename_to_deleted_renames_every_file(seg):
    assert seg.rename_to_deleted() == [
        "00000000000000000000.log.deleted", "00000000000000000000.index.deleted",
        "00000000000000000000.timeindex.deleted"]
    assert sorted(seg.disk.listdir("t-0")) == sorted(
        ["00000000000000000000.log.deleted", "00000000000000000000.index.deleted",
         "00000000000000000000.timeindex.deleted"])
