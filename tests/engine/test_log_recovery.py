import struct
import tempfile

from hypothesis import given, settings, strategies as st

from engine.clock import Scheduler, VirtualClock
from engine.config import LogConfig
from engine.disk import Disk
from engine.events import EventLog
from engine.log import Log
from engine.records import SimpleRecord

CFG = dict(segment_bytes=700, index_interval_bytes=90)


def open_log(disk, clock=None, **kw):
    clock = clock or VirtualClock(5_000)
    return Log(disk, "t-0", "t", 0, LogConfig(**CFG), Scheduler(clock), EventLog(clock), hw_follows_leo=True, **kw)


def fill(log, n, epoch_every=7):
    for i in range(n):
        log.append_as_leader([SimpleRecord(b"value-%d" % i * (1 + i % 4), timestamp=1000 + (i * 37) % 101)],
                             i // epoch_every)


def snapshot(log):
    return {s.base_offset: (s.disk.read_all(s.offset_index.rel)[:s.offset_index.size_bytes],
                            s.offset_index.raw_entries(), s.time_index.raw_entries()) for s in log.segments}


def batch_bounds(log):
    """(segment base, start position, end position, base offset, last offset) of every batch."""
    out = []
    for seg in log.segments:
        for pos, h in seg.iter_headers():
            out.append((seg.base_offset, pos, pos + h.size_in_bytes, h.base_offset, h.last_offset))
    return out


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 40), where=st.floats(0, 1), corrupt=st.booleans(), flip=st.integers(1, 255))
def test_damaged_log_reopens_with_every_whole_batch_before_the_damage(n, where, corrupt, flip):
    """A torn write cuts the active segment's .log anywhere; a bit flip hits any byte the batch
    CRC, magic or length protect, in any segment (baseOffset and partitionLeaderEpoch sit outside
    the CRC on purpose, so no reader can notice a flip there: Kafka cannot either)."""
    with tempfile.TemporaryDirectory() as tmp:
        disk = Disk(tmp)
        log = open_log(disk)
        fill(log, n)
        log.flush()
        bounds = batch_bounds(log)
        records_before = log.records()
        if corrupt:
            seg_base, start, end, _, _ = bounds[int(where * (len(bounds) - 1e-9))]
            pos = start + 8 + int(where * 10007) % (end - start - 8)
            if start + 12 <= pos < start + 16:
                pos += 4
            seg = next(s for s in log.segments if s.base_offset == seg_base)
            byte = disk.read(seg.log_rel, pos, 1)[0]
            disk.write_at(seg.log_rel, pos, bytes([byte ^ flip]))
        else:
            seg = log.active_segment
            pos = int(where * seg.size)
            disk.truncate(seg.log_rel, pos)
        disk.close_all()
        log.cancel_tasks()
        reopened = open_log(disk)
        # every batch entirely before the damaged byte survives; nothing after it does
        kept = [b for b in bounds if b[0] < seg.base_offset or (b[0] == seg.base_offset and b[2] <= pos)]
        last = kept[-1][4] if kept else -1
        assert reopened.records() == [r for r in records_before if r.offset <= last]
        assert reopened.log_end_offset == max(last + 1, reopened.active_segment.base_offset)
        assert all(s.base_offset <= seg.base_offset for s in reopened.segments)
        if kept != bounds:
            assert reopened.events.of_kind("recovery_truncated") or not corrupt
        disk.close_all()


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 60))
def test_rebuilt_indexes_equal_the_originals(n):
    with tempfile.TemporaryDirectory() as tmp:
        disk = Disk(tmp)
        log = open_log(disk)
        fill(log, n)
        log.flush()
        original = {s.base_offset: (s.offset_index.raw_entries(), s.time_index.raw_entries()) for s in log.segments}
        for seg in log.segments:  # make every index unusable
            disk.delete(seg.offset_index.rel)
            disk.append(seg.time_index.rel, b"\1")
        log.cancel_tasks()
        reopened = open_log(disk, recovery_point=log.log_end_offset)
        for seg in reopened.segments:
            o, t = original[seg.base_offset]
            on_disk = disk.read_all(seg.offset_index.rel)[:len(o)]
            assert on_disk == o == seg.offset_index.raw_entries()
            if seg is not reopened.active_segment:
                assert disk.read_all(seg.time_index.rel) == t
            else:  # recovery also writes the final max-timestamp entry, as a roll would
                assert seg.time_index.raw_entries()[:len(t)] == t
        rebuilt = {e.segment for e in reopened.events.of_kind("index_rebuilt")}
        assert rebuilt == set(original)
        disk.close_all()


def test_crash_loses_only_unflushed_batches(tmp_path):
    disk = Disk(tmp_path)
    log = open_log(disk)
    fill(log, 20)
    log.flush()
    fill(log, 3)
    disk.crash()
    log.cancel_tasks()
    reopened = open_log(disk, recovery_point=20)
    assert reopened.log_end_offset == 20
    assert reopened.recovery_point == 20


def test_leftover_files_are_removed_with_events(tmp_path):
    disk = Disk(tmp_path)
    log = open_log(disk)
    fill(log, 3)
    log.close()
    for name in ("00000000000000000009.log.deleted", "00000000000000000000.log.cleaned",
                 "00000000000000000000.log.swap", "00000000000000000077.index"):
        disk.append(f"t-0/{name}", b"junk")
    reopened = open_log(disk)
    removed = sorted(e.file for e in reopened.events.of_kind("leftover_removed"))
    assert removed == sorted(["00000000000000000009.log.deleted", "00000000000000000000.log.cleaned",
                              "00000000000000000000.log.swap", "00000000000000000077.index"])
    assert reopened.log_end_offset == 3


def test_corrupt_index_below_recovery_point_is_rebuilt(tmp_path):
    disk = Disk(tmp_path)
    log = open_log(disk)
    fill(log, 40)
    log.close()
    first = log.segments[0]
    good = disk.read_all(first.offset_index.rel)
    assert len(good) >= 16
    disk.write_at(first.offset_index.rel, 8, struct.pack(">ii", 0, 0))  # entries no longer increase
    reopened = open_log(disk, recovery_point=log.log_end_offset)
    ev = [e for e in reopened.events.of_kind("index_rebuilt") if e.segment == 0]
    assert ev and "does not follow" in ev[0].reason
    assert disk.read_all(first.offset_index.rel) == good


def test_clean_index_below_recovery_point_is_kept(tmp_path):
    disk = Disk(tmp_path)
    log = open_log(disk)
    fill(log, 40)
    log.close()
    reopened = open_log(disk, recovery_point=log.log_end_offset)
    assert {e.segment for e in reopened.events.of_kind("index_rebuilt")} == {reopened.active_segment.base_offset}
    assert reopened.segments[0].offset_index.keys == log.segments[0].offset_index.keys


def test_truncated_segment_deletes_later_segments(tmp_path):
    disk = Disk(tmp_path)
    log = open_log(disk)
    fill(log, 40)
    log.close()
    assert len(log.segments) >= 3
    second = log.segments[1]
    disk.truncate(second.log_rel, 30)
    reopened = open_log(disk)
    assert [s.base_offset for s in reopened.segments] == [0, second.base_offset]
    assert reopened.log_end_offset == second.base_offset
    assert reopened.events.of_kind("recovery_truncated")[0].to_bytes == 0


def test_epoch_cache_reloaded_and_truncated_to_leo(tmp_path):
    disk = Disk(tmp_path)
    log = open_log(disk)
    fill(log, 20, epoch_every=5)  # epochs 0..3 start at 0,5,10,15
    log.flush(12)
    disk.crash()
    log.cancel_tasks()
    reopened = open_log(disk, recovery_point=12)
    leo = reopened.log_end_offset
    assert leo < 20
    assert [(e.epoch, e.start_offset) for e in reopened.leader_epoch_cache.entries] == \
        [(e, e * 5) for e in range(4) if e * 5 < leo]


def test_active_indexes_preallocated_after_open(tmp_path):
    disk = Disk(tmp_path)
    log = open_log(disk)
    fill(log, 5)
    log.close()
    reopened = open_log(disk)
    seg = reopened.active_segment
    assert disk.size(seg.offset_index.rel) == seg.offset_index.max_size_bytes


def test_after_a_clean_shutdown_nothing_is_recovered(tmp_path):
    disk = Disk(tmp_path)
    log = open_log(disk)
    fill(log, 40)
    log.close()
    again = open_log(disk, clean_shutdown=True, recovery_point=log.log_end_offset)
    assert not again.events.of_kind("index_rebuilt") and not again.events.of_kind("recovery_truncated")
    assert again.log_end_offset == 40 and [r.offset for r in again.records()] == list(range(40))
    fill(again, 5)                     # appends go on with the same index rule
    reference = open_log(Disk(tmp_path / "ref"))
    fill(reference, 40)
    fill(reference, 5)
    assert snapshot(again) == snapshot(reference)


def test_a_clean_start_with_a_broken_index_still_rebuilds_it(tmp_path):
    disk = Disk(tmp_path)
    log = open_log(disk)
    fill(log, 40)
    log.close()
    active = log.segments[-1]
    disk.truncate(active.offset_index.rel, disk.size(active.offset_index.rel) + 3)
    again = open_log(disk, clean_shutdown=True, recovery_point=log.log_end_offset)
    assert [e.segment for e in again.events.of_kind("index_rebuilt")] == [active.base_offset] * 2
    assert again.log_end_offset == 40


def test_index_entries_are_buffered_until_a_flush_and_lookups_see_them(tmp_path):
    disk = Disk(tmp_path)
    log = open_log(disk)
    fill(log, 6)
    idx = log.active_segment.offset_index
    assert idx.entries >= 2
    on_disk = disk.read_all(idx.rel)[:idx.size_bytes]
    assert on_disk == bytes(idx.size_bytes)              # nothing written per append ...
    target = idx.keys[-1]
    seq = log.events.seq
    log.read(target)
    lookup = log.events.envelopes[-1].event
    assert log.events.seq == seq + 1 and lookup.probes[-1][3:5] == (target, idx.values[-1])  # ... yet found
    log.flush()
    assert disk.read_all(idx.rel)[:idx.size_bytes] == idx.raw_entries()


def test_crash_before_a_flush_loses_buffered_index_entries_and_recovery_rebuilds_them(tmp_path):
    disk = Disk(tmp_path)
    log = open_log(disk)
    fill(log, 8)
    log.flush()
    fill(log, 6)
    expected = {s.base_offset: s.offset_index.raw_entries() for s in log.segments}
    log.cancel_tasks()
    disk.crash()
    reopened = open_log(disk, recovery_point=8)
    assert reopened.log_end_offset == 8
    for seg in reopened.segments:
        assert expected[seg.base_offset].startswith(seg.offset_index.raw_entries())
        assert disk.read_all(seg.offset_index.rel)[:seg.offset_index.size_bytes] == seg.offset_index.raw_entries()
    reopened.close()


# ---- recover=False: a tool's open, which refuses instead of repairing --------------------------

def _tree(tmp):
    import hashlib
    import os
    return {os.path.relpath(os.path.join(d, f), tmp): hashlib.sha256(open(os.path.join(d, f), "rb").read()).hexdigest()
            for d, _, files in os.walk(tmp) for f in files}


@settings(max_examples=30, deadline=None)
@given(n=st.integers(2, 40), where=st.floats(0, 1))
def test_recover_false_refuses_a_torn_tail_and_writes_nothing(n, where):
    import pytest

    from engine.errors import CorruptRecordError
    with tempfile.TemporaryDirectory() as tmp:
        disk = Disk(tmp)
        log = open_log(disk)
        fill(log, n)
        log.close()
        seg = log.segments[-1]
        size = disk.size(seg.log_rel)
        starts = {pos for pos, _ in seg.iter_headers()} | {size}
        cut = 1 + int(where * (size - 2))
        if cut in starts:
            cut += 1
        with open(disk.path(seg.log_rel), "r+b") as fh:
            fh.truncate(cut)
        before = _tree(tmp)
        with pytest.raises(CorruptRecordError, match=rf"{seg.name}: .* recovery would cut the \d+ bytes from position"):
            open_log(Disk(tmp), recover=False)
        assert _tree(tmp) == before
        open_log(Disk(tmp)).close()  # a broker start recovers it: the torn batch is cut
        assert max(p for p in starts if p <= cut) == Disk(tmp).size(seg.log_rel)


def test_recover_false_opens_a_cleanly_closed_log_without_changing_a_byte():
    with tempfile.TemporaryDirectory() as tmp:
        disk = Disk(tmp)
        log = open_log(disk)
        fill(log, 30)
        log.close()
        disk.close_all()
        before = _tree(tmp)
        again = open_log(Disk(tmp), recover=False)
        assert again.records() == log.records() and again.log_end_offset == log.log_end_offset
        again.close()
        again.disk.close_all()
        assert _tree(tmp) == before
