import tempfile

import pytest
from hypothesis import given, settings, strategies as st

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


@pytest.mark.parametrize("traced", [False, True])
def test_a_lookup_walking_into_a_bad_header_names_its_position(seg, traced):
    for i in range(4):
        append(seg, batch_of_size(i * 10, 200, count=10))
    seg.disk.write_at(seg.log_rel, 400 + 16, b"\x07")      # magic of the third batch
    from engine.errors import CorruptRecordError
    with pytest.raises(CorruptRecordError, match="position 400"):
        seg.find_offset(35, 0, [] if traced else None)
    assert seg.find_offset(15, 0, [] if traced else None) == (200, 200)   # before it: still found


def test_a_lookup_past_the_last_batch_reads_across_windows(tmp_path):
    disk = Disk(tmp_path)
    disk.mkdir("t-0")
    seg = LogSegment.create(disk, "t-0", 0, LogConfig(index_interval_bytes=100))
    for i in range(100):                    # 100 x 1000 bytes: more than one 64 KB window
        append(seg, batch_of_size(i, 1000))
    rows = []
    assert seg.find_offset(99, 0, rows) == (99_000, 1000) and seg.find_offset(99, 0) == (99_000, 1000)
    assert [r[0] for r in rows] == list(range(0, 100_000, 1000)) and rows[-1][4] and not rows[-2][4]
    assert seg.find_offset(100, 0) is None


def test_read_batches_spans_windows_and_stops_at_max_bytes_and_max_offset(tmp_path):
    disk = Disk(tmp_path)
    disk.mkdir("t-0")
    seg = LogSegment.create(disk, "t-0", 0, LogConfig())
    for i in range(150):                    # 150 KB: more than two 64 KB windows
        append(seg, batch_of_size(i, 1000))
    data, headers = seg.read_batches(0, 1 << 30)
    assert data == seg.read_all() and [h.base_offset for h in headers] == list(range(150))
    data, headers = seg.read_batches(3000, 5500)
    assert (len(data), [h.base_offset for h in headers]) == (5000, [3, 4, 5, 6, 7])
    data, headers = seg.read_batches(3000, 1, max_offset=3)
    assert (data, headers) == (b"", ())
    window = seg.read_bytes(2000, 8192)
    assert seg.read_batches(3000, 2500, None, window, 1000) == seg.read_batches(3000, 2500)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 4), st.integers(0, 300)), min_size=1, max_size=30),
       st.integers(0, 130), st.integers(1, 3000), st.booleans())
def test_find_offset_and_read_batches_equal_a_brute_force_walk(batches, target, max_bytes, traced):
    with tempfile.TemporaryDirectory() as tmp:
        disk = Disk(tmp)
        disk.mkdir("t-0")
        seg = LogSegment.create(disk, "t-0", 0, LogConfig(index_interval_bytes=100))
        offset, layout = 0, []
        for count, pad in batches:
            data = build_batch([SimpleRecord(b"x" * pad)] * count, base_offset=offset)
            layout.append((seg.size, offset, offset + count - 1, len(data)))
            append(seg, data)
            offset += count
        expected = next(((p, size) for p, first, last, size in layout if last >= target), None)
        rows = [] if traced else None
        assert seg.find_offset(target, 0, rows) == expected
        if traced:
            assert [r[0] for r in rows] == [p for p, *_ in layout][:len(rows)] and (expected is None) != rows[-1][4]
        if expected is not None:
            data, headers = seg.read_batches(expected[0], max_bytes)
            want = [b for b in layout if b[0] >= expected[0]]
            n = 1
            while n < len(want) and sum(b[3] for b in want[:n + 1]) <= max_bytes:
                n += 1
            assert [h.base_offset for h in headers] == [b[1] for b in want[:n]]
            assert data == seg.read_bytes(expected[0], sum(b[3] for b in want[:n]))
        disk.close_all()


def test_flush_makes_the_txnindex_durable_too(seg):
    """Kafka's segment flush includes the transaction index: after a flush, a power loss
    keeps the aborted-transaction entries that read_committed readers and the cleaner need."""
    from engine.log.transaction_index import AbortedTxn, TransactionIndex
    append(seg, batch_of_size(0, 200))
    index = TransactionIndex(seg.disk, seg.log_rel[:-len(".log")] + ".txnindex")
    index.append(AbortedTxn(7, 0, 0, 0))
    seg.flush()
    assert not seg.disk.is_dirty(index.rel)
    seg.disk.crash("t-0")
    assert TransactionIndex(seg.disk, index.rel).entries() == [AbortedTxn(7, 0, 0, 0)]
