"""The log's tail hint (Log._tail): an untraced read at the log end starts at the batches just
appended instead of the index floor and the header walk. Every read with the hint must equal
the same read without it (and the traced read), whatever happened before: appends of every
kind, truncations, rolls, record deletion and retention, compaction swaps, clean and unclean
restarts."""
from __future__ import annotations

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from engine.clock import Scheduler, VirtualClock
from engine.config import LogConfig
from engine.disk import Disk
from engine.events import EventLog
from engine.log import Log
from engine.log.cleaner import LogCleaner
from engine.records import SimpleRecord, build_batch

CFG = dict(segment_bytes=700, index_interval_bytes=120, cleanup_policy="compact,delete", delete_retention_ms=10,
           file_delete_delay_ms=5, retention_bytes=2000)


def open_log(disk, clock, recovery_point=0, log_start=None):
    return Log(disk, "t-0", "t", 0, LogConfig(**CFG), Scheduler(clock), EventLog(clock), hw_follows_leo=True,
               recovery_point=recovery_point, log_start_offset=log_start)


def read_both(log, offset, max_bytes, max_offset):
    """(hinted, unhinted, traced) reads, as comparable tuples."""
    hinted = log.read(offset, max_bytes, max_offset=max_offset, trace=False)
    saved = log._tail, log._tail_seg, log._tail_end
    log._drop_tail()
    try:
        plain = log.read(offset, max_bytes, max_offset=max_offset, trace=False)
    finally:
        log._tail, log._tail_seg, log._tail_end = saved
    traced = log.read(offset, max_bytes, max_offset=max_offset, trace=True)
    return tuple(hinted), tuple(plain), tuple(traced)


def check_reads(log):
    leo, start = log.log_end_offset, log.log_start_offset
    for offset in range(max(start, leo - 12), leo + 1):
        for max_bytes in (1, 100, 250, 1 << 20):
            for max_offset in (None, leo, max(start, leo - 2)):
                hinted, plain, traced = read_both(log, offset, max_bytes, max_offset)
                assert hinted == plain == traced, (offset, max_bytes, max_offset)


op = st.one_of(
    st.tuples(st.just("leader"), st.integers(1, 3), st.integers(0, 60), st.integers(0, 3)),
    st.tuples(st.just("client"), st.integers(1, 3), st.integers(0, 60), st.integers(0, 3)),
    st.tuples(st.just("follower"), st.integers(1, 3), st.integers(1, 3), st.integers(0, 3)),
    st.tuples(st.just("truncate"), st.integers(0, 8)),
    st.tuples(st.just("diverge"),),
    st.tuples(st.just("roll"),),
    st.tuples(st.just("delete_records"), st.integers(0, 5)),
    st.tuples(st.just("clean"),),
    st.tuples(st.just("reopen"),),
    st.tuples(st.just("crash"),),
    st.tuples(st.just("advance"), st.integers(0, 50)),
)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(op, min_size=1, max_size=40))
@example(ops=[("leader", 1, 0, 0), ("leader", 1, 0, 0), ("diverge",)])          # same end, other headers
@example(ops=[("leader", 2, 5, 0), ("leader", 1, 0, 0), ("clean",), ("leader", 1, 0, 0)])
def test_reads_with_the_tail_hint_equal_reads_without_it(tmp_path_factory, ops):
    root = tmp_path_factory.mktemp("tail")
    disk, clock = Disk(root), VirtualClock(1_000_000)
    log = open_log(disk, clock)
    epoch = 0
    for step in ops:
        kind = step[0]
        if kind in ("leader", "client"):
            _, n, size, key = step
            records = [SimpleRecord(b"v" * (size + i), key=b"k%d" % ((key + i) % 4), timestamp=clock.now_ms())
                       for i in range(n)]
            log.append_as_leader(records if kind == "leader" else build_batch(records), epoch)
        elif kind == "follower":
            # several batches in one append (the multi-batch path), offsets from the log end
            _, batches, n, key = step
            off, data = log.log_end_offset, b""
            for _b in range(batches):
                recs = [SimpleRecord(b"f" * (10 + i), key=b"k%d" % ((key + i) % 4), timestamp=clock.now_ms())
                        for i in range(n)]
                data += build_batch(recs, base_offset=off, partition_leader_epoch=epoch)
                off += n
            log.append_as_follower(data)
        elif kind == "truncate":
            log.truncate_to(max(log.log_end_offset - step[1], 0), "test")
            epoch += 1      # a truncated follower re-fetches under a newer leader
        elif kind == "diverge":
            # a follower's diverged tail (its last two batches) replaced by the new leader's: the
            # same offsets and sizes, another epoch (only the headers differ), in one multi-batch
            # append, so the segment ends where it ended before
            leo = log.log_end_offset
            if leo - 2 >= log.log_start_offset:
                first = log.read(leo - 2, 1, trace=False).batches[0]
                batches = log.batches(first.base_offset, leo)
                epoch += 1
                log.truncate_to(first.base_offset, "test")
                if log.log_end_offset == first.base_offset:
                    log.append_as_follower(b"".join(
                        build_batch([SimpleRecord(r.value, key=r.key, timestamp=r.timestamp) for r in b.records],
                                    base_offset=b.base_offset, partition_leader_epoch=epoch) for b in batches))
        elif kind == "roll":
            log.roll()
        elif kind == "delete_records":
            log.delete_records(max(log.log_start_offset, log.high_watermark - step[1]))
            log.delete_old_segments()
        elif kind == "clean":
            LogCleaner(disk).clean(log, clock.now_ms())
        elif kind == "reopen":
            log.close()
            log = open_log(disk, clock, log.recovery_point, log.log_start_offset)
        elif kind == "crash":
            recovery_point, start = log.recovery_point, log.log_start_offset
            log.cancel_tasks()
            disk.crash()
            log = open_log(disk, clock, recovery_point, start)
        else:
            log.scheduler.advance(step[1])
        check_reads(log)
    disk.close_all()


def test_the_hint_serves_a_fetch_at_the_log_end(tmp_path):
    """The hint is used: a read of the batch just appended does not consult the offset index."""
    log = open_log(Disk(tmp_path), VirtualClock(1_000_000))
    log.read(0, trace=False)          # the first untraced read turns the hint on
    for i in range(20):
        log.append_as_leader([SimpleRecord(b"x" * 40, key=b"k")], 0)
    seg = log.active_segment
    seg.offset_index.floor = None      # would raise if the read took the index
    info = log.read(log.log_end_offset - 1, 1 << 20, trace=False)
    assert info.batches[0].base_offset == log.log_end_offset - 1
    del seg.offset_index.floor
    log.truncate_to(log.log_end_offset - 1)
    assert log._tail == []             # a truncation drops the hint


def test_a_log_never_read_untraced_keeps_no_hint(tmp_path):
    log = open_log(Disk(tmp_path), VirtualClock(1_000_000))
    for i in range(5):
        log.append_as_leader([SimpleRecord(b"x" * 40, key=b"k")], 0)
    log.read(0)                        # traced
    assert log._tail == [] and not log._tail_on
