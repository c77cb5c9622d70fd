"""docs/what-kafka-cannot-detect.md, shown: one test per claim. The CRC of a v2 batch covers
bytes 21 onward, so a flip in baseOffset (bytes 0-7) or partitionLeaderEpoch (bytes 12-15)
passes every check; recovery catches only offsets that break the order of the log."""
import struct

from engine.clock import Scheduler, VirtualClock
from engine.config import LogConfig
from engine.disk import Disk
from engine.events import EventLog
from engine.log import Log
from engine.records import SimpleRecord, decode_batch

CFG = dict(segment_bytes=400, index_interval_bytes=1)


def open_log(disk, **kw):
    clock = VirtualClock(5_000)
    return Log(disk, "t-0", "t", 0, LogConfig(**CFG), Scheduler(clock), EventLog(clock), hw_follows_leo=True, **kw)


def fill(log, n, epoch=0):
    for i in range(n):
        log.append_as_leader([SimpleRecord(b"value-%03d" % i, timestamp=1000 + i)], epoch)


def batches(log):
    """(segment, position, base offset) of every batch, oldest first."""
    return [(seg, pos, h.base_offset) for seg in log.segments for pos, h in seg.iter_headers()]


def poke(disk, seg, pos, fmt, value):
    """Overwrite a header field in place (and make it durable, as a disk fault would be)."""
    disk.write_at(seg.log_rel, pos, struct.pack(fmt, value))
    disk.fsync(seg.log_rel)


def reopen(disk, log, **kw):
    log.close()
    return open_log(disk, **kw)


def test_a_flipped_base_offset_in_the_last_batch_moves_the_log_end_silently(tmp_path):
    disk = Disk(tmp_path)
    log = open_log(disk)
    fill(log, 5)
    seg, pos, base = batches(log)[-1]
    flipped = base ^ (1 << 27)   # one bit: 4 -> 134,217,732
    poke(disk, seg, pos, ">q", flipped)
    log = reopen(disk, log)
    assert decode_batch(disk.read(seg.log_rel, pos, 200)).base_offset == flipped   # the CRC still holds
    assert log.log_end_offset == flipped + 1 == 134_217_733
    assert not log.events.of_kind("recovery_truncated")


def test_a_flipped_leader_epoch_enters_the_epoch_cache_silently(tmp_path):
    disk = Disk(tmp_path)
    log = open_log(disk)
    fill(log, 3, epoch=2)
    seg, pos, base = batches(log)[-1]
    poke(disk, seg, pos + 12, ">i", 2 ^ (1 << 20))          # epoch 2 -> 1,048,578
    disk.delete(f"{log.dir}/leader-epoch-checkpoint")      # recovery rebuilds the cache from the batches
    log = reopen(disk, log)
    entries = [(e.epoch, e.start_offset) for e in log.leader_epoch_cache.entries]
    assert entries == [(2, 0), (1_048_578, 2)]
    assert not log.events.of_kind("recovery_truncated")


def test_a_base_offset_flipped_backwards_is_cut_at_that_batch(tmp_path):
    disk = Disk(tmp_path)
    log = open_log(disk)
    fill(log, 6)
    seg, pos, base = batches(log)[3]
    poke(disk, seg, pos, ">q", 1)                            # offset 3 now claims 1: backwards
    log = reopen(disk, log)
    assert log.log_end_offset == 3
    (cut,) = log.events.of_kind("recovery_truncated")
    assert "do not follow 2" in cut.reason


def test_a_base_offset_flipped_past_the_next_segment_is_cut_and_later_segments_go(tmp_path):
    disk = Disk(tmp_path)
    log = open_log(disk)
    fill(log, 30)
    assert len(log.segments) >= 3
    first, second = log.segments[0], log.segments[1]
    seg, pos, base = [b for b in batches(log) if b[0] is first][-1]
    poke(disk, seg, pos, ">q", second.base_offset + 3)      # jumps over the next segment's base offset
    log = reopen(disk, log)
    assert log.log_end_offset == base
    assert [s.base_offset for s in log.segments] == [0]
    assert log.events.of_kind("recovery_truncated")[0].reason.startswith("batch at position")


def test_a_segment_below_the_recovery_point_is_not_read_at_all(tmp_path):
    disk = Disk(tmp_path)
    log = open_log(disk)
    fill(log, 30)
    log.flush()
    first = log.segments[0]
    seg, pos, base = batches(log)[1]
    assert seg is first
    poke(disk, seg, pos, ">q", 0)                            # backwards, but below the recovery point
    log = reopen(disk, log, recovery_point=log.log_end_offset)
    assert log.log_end_offset == 30 and not log.events.of_kind("recovery_truncated")
    assert [r.offset for r in log.records(0, 3)] == [0, 0, 2]   # a reader now sees offset 0 twice


def test_after_a_clean_shutdown_nothing_is_read_so_nothing_is_caught(tmp_path):
    disk = Disk(tmp_path)
    log = open_log(disk)
    fill(log, 6)
    log.close()
    seg, pos, base = batches(log)[3]
    poke(disk, seg, pos, ">q", 1)                            # the flip that recovery catches above
    log = open_log(disk, clean_shutdown=True, recovery_point=log.log_end_offset)
    assert not log.events.of_kind("recovery_truncated")
    assert [r.offset for r in log.records()].count(1) == 2


def test_an_index_entry_pointing_one_batch_too_far_passes_and_skips_a_batch(tmp_path):
    disk = Disk(tmp_path)

    def reopen_sparse(**kw):
        clock = VirtualClock(5_000)
        return Log(disk, "t-0", "t", 0, LogConfig(segment_bytes=10_000, index_interval_bytes=90), Scheduler(clock),
                   EventLog(clock), hw_follows_leo=True, **kw)
    log = reopen_sparse()
    fill(log, 20)
    log.close()
    seg = log.segments[0]
    idx = seg.offset_index
    positions = {base: pos for _, pos, base in batches(log)}
    n = next(i for i, o in enumerate(idx.keys) if o + 1 in positions and o + 1 not in idx.keys and i + 1 < idx.entries)
    target = idx.keys[n]
    disk.write_at(idx.rel, n * 8 + 4, struct.pack(">i", positions[target + 1]))   # a later batch, still in order
    disk.fsync(idx.rel)
    log = reopen_sparse(clean_shutdown=True, recovery_point=log.log_end_offset)
    assert not log.events.of_kind("index_rebuilt")                                 # the sanity check passes
    assert log.read(target).batches[0].base_offset == target + 1                   # offset `target` is skipped
