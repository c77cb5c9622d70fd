import struct
import tempfile

import pytest
from hypothesis import given, settings, strategies as st

from engine.disk import Disk
from engine.errors import CorruptIndexError
from engine.log.offset_index import OffsetIndex, OffsetPosition


def make(disk, base=100, max_bytes=80):
    disk.mkdir("t-0")
    disk.touch(f"t-0/{base:020d}.index")
    return OffsetIndex(disk, f"t-0/{base:020d}.index", base, max_bytes)


@pytest.fixture
def disk(tmp_path):
    return Disk(tmp_path)


def test_entries_are_relative_offset_and_position_big_endian(disk):
    idx = make(disk)
    idx.append(105, 300)
    assert disk.read_all(idx.rel) == struct.pack(">ii", 5, 300)


def test_preallocate_then_trim(disk):
    idx = make(disk, max_bytes=85)
    idx.preallocate()
    assert disk.size(idx.rel) == 80  # floor(85 / 8) * 8
    idx.append(101, 10)
    assert idx.trim() == (80, 8)
    assert disk.size(idx.rel) == 8


def test_full_when_entries_reach_max(disk):
    idx = make(disk, max_bytes=16)
    idx.append(101, 10)
    assert not idx.is_full
    idx.append(102, 20)
    assert idx.is_full


def test_lookup_below_first_entry_gives_base_and_zero(disk):
    idx = make(disk)
    idx.append(110, 500)
    assert idx.lookup(105) == OffsetPosition(100, 0)


def test_lookup_reports_each_probe(disk):
    idx = make(disk, max_bytes=800)
    for i in range(1, 17):
        idx.append(100 + 10 * i, 100 * i)
    probes = []
    assert idx.lookup(135, lambda *a: probes.append(a)) == OffsetPosition(130, 300)
    assert 1 <= len(probes) <= 5
    assert probes[-1][-1] in ("left", "right")
    assert all(p[0] <= p[2] <= p[1] for p in probes)


def test_truncate_to_removes_exact_match_and_zeroes_tail(disk):
    idx = make(disk)
    idx.preallocate()
    for i in range(1, 5):
        idx.append(100 + i, i * 10)
    idx.truncate_to(103)
    assert idx.keys == [101, 102]
    assert disk.read_all(idx.rel) == struct.pack(">iiii", 1, 10, 2, 20) + bytes(64)


def test_load_reads_back_entries(disk):
    idx = make(disk)
    idx.append(101, 10)
    idx.append(109, 90)
    again = OffsetIndex(disk, idx.rel, 100, 80)
    again.load()
    again.sanity_check(100)
    assert again.keys == [101, 109] and again.values == [10, 90]


@pytest.mark.parametrize("data, log_size, fragment", [
    (b"\0" * 12, 100, "not a multiple"),
    (struct.pack(">iiii", 5, 10, 3, 20), 100, "does not follow"),
    (bytes(16), 100, "does not follow"),  # an untrimmed, zero-filled file
    (struct.pack(">ii", 5, 100), 100, "past the end"),
    (struct.pack(">ii", -1, 10), 100, "below the base offset"),
])
def test_sanity_check_rejects_corrupt_files(disk, data, log_size, fragment):
    disk.mkdir("t-0")
    disk.append("t-0/00000000000000000100.index", data)
    idx = OffsetIndex(disk, "t-0/00000000000000000100.index", 100, 80)
    with pytest.raises(CorruptIndexError, match=fragment):
        idx.load()
        idx.sanity_check(log_size)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 50), min_size=0, max_size=60, unique=True), st.integers(0, 3000))
def test_floor_lookup_equals_brute_force(gaps, target):
    with tempfile.TemporaryDirectory() as tmp:
        disk = Disk(tmp)
        idx = make(disk, base=1000, max_bytes=8 * 64)
        offset, pos, entries = 1000, 0, []
        for g in gaps:
            offset += g
            pos += 3 * g
            idx.append(offset, pos)
            entries.append((offset, pos))
        target += 1000
        below = [e for e in entries if e[0] <= target]
        expected = OffsetPosition(*below[-1]) if below else OffsetPosition(1000, 0)
        probes = []
        assert idx.lookup(target, lambda *a: probes.append(a)) == expected
        assert len(probes) <= max(1, len(entries)).bit_length()
        disk.close_all()
