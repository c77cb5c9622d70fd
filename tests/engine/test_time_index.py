import struct
import tempfile

import pytest
from hypothesis import given, settings, strategies as st

from engine.disk import Disk
from engine.errors import CorruptIndexError
from engine.log.time_index import TimeIndex, TimestampOffset


def make(disk, base=100, max_bytes=120):
    disk.mkdir("t-0")
    disk.touch(f"t-0/{base:020d}.timeindex")
    return TimeIndex(disk, f"t-0/{base:020d}.timeindex", base, max_bytes)


@pytest.fixture
def disk(tmp_path):
    return Disk(tmp_path)


def test_entries_are_timestamp_and_relative_offset_big_endian(disk):
    idx = make(disk)
    idx.maybe_append(1700000000005, 103)
    assert disk.read_all(idx.rel) == struct.pack(">qi", 1700000000005, 3)


def test_only_strictly_larger_timestamps_are_appended(disk):
    idx = make(disk)
    assert idx.maybe_append(50, 101)
    assert not idx.maybe_append(50, 102)
    assert not idx.maybe_append(40, 103)
    assert idx.maybe_append(51, 104)
    assert idx.keys == [50, 51] and idx.values == [101, 104]


def test_full_one_entry_early(disk):
    idx = make(disk, max_bytes=36)  # 3 slots, the last kept for the roll-time entry
    idx.maybe_append(1, 101)
    assert not idx.is_full
    idx.maybe_append(2, 102)
    assert idx.is_full
    assert idx.maybe_append(3, 103, skip_full_check=True)


def test_preallocate_rounds_down_to_entry_size(disk):
    idx = make(disk, max_bytes=10485760)
    idx.preallocate()
    assert disk.size(idx.rel) == 10485756


def test_lookup_before_first_entry(disk):
    idx = make(disk)
    idx.maybe_append(50, 101)
    assert idx.lookup(49) == TimestampOffset(-1, 100)


def test_truncate_to_offset(disk):
    idx = make(disk)
    for i in range(1, 5):
        idx.maybe_append(i * 10, 100 + i)
    idx.truncate_to(103)
    assert idx.values == [101, 102]
    assert idx.last_entry == TimestampOffset(20, 102)


def test_sanity_check_rejects_decreasing_timestamps(disk):
    disk.mkdir("t-0")
    disk.append("t-0/00000000000000000100.timeindex", struct.pack(">qiqi", 50, 1, 40, 2))
    idx = TimeIndex(disk, "t-0/00000000000000000100.timeindex", 100, 120)
    idx.load()
    with pytest.raises(CorruptIndexError, match="position 12"):
        idx.sanity_check(200)


def test_sanity_check_rejects_offset_past_segment(disk):
    disk.mkdir("t-0")
    disk.append("t-0/00000000000000000100.timeindex", struct.pack(">qi", 50, 9))
    idx = TimeIndex(disk, "t-0/00000000000000000100.timeindex", 100, 120)
    idx.load()
    with pytest.raises(CorruptIndexError, match="past the segment end"):
        idx.sanity_check(105)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 40), st.integers(0, 5)), max_size=60), st.integers(0, 2500))
def test_floor_lookup_equals_brute_force(steps, target):
    with tempfile.TemporaryDirectory() as tmp:
        disk = Disk(tmp)
        idx = make(disk, base=0, max_bytes=12 * 70)
        ts, offset, entries = 0, 0, []
        for dt, do in steps:
            ts += dt
            offset += do
            idx.maybe_append(ts, offset)
            entries.append((ts, offset))
        below = [e for e in entries if e[0] <= target]
        expected = TimestampOffset(*below[-1]) if below else TimestampOffset(-1, 0)
        assert idx.lookup(target, lambda *a: None) == expected
        disk.close_all()
