"""Lesson 7: appends sit in the page cache; a power loss drops what was not fsync'd; the
kernel's writeback is page by page, so a crash can tear a batch, and recovery cuts the log
at the last whole batch (seed 001 "flush", seed 003 Q29; kafka-internals: recovery)."""
from hypothesis import given, settings, strategies as st

from engine.clock import Scheduler, VirtualClock
from engine.config import LogConfig
from engine.disk import Disk
from engine.events import EventLog
from engine.log.log import Log
from engine.records import SimpleRecord


def _open(disk, sched, events, recovery_point=0, **cfg):
    return Log(disk, "t-0", "t", 0, LogConfig().replace(**cfg), sched, events, hw_follows_leo=True,
               recovery_point=recovery_point)


def test_writeback_makes_whole_pages_durable_and_keeps_the_tail_dirty(tmp_path):
    disk = Disk(tmp_path)
    disk.mkdir("d")
    disk.append("d/f", b"x" * 10000)
    assert disk.dirty_files("d") == {"d/f": (0, 10000)}
    assert disk.writeback("d", 4096) == [("d/f", 0, 8192)]
    assert disk.dirty_files("d") == {"d/f": (8192, 10000)}
    disk.crash("d")
    assert disk.size("d/f") == 8192


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(20, 700), min_size=2, max_size=25), st.integers(0, 30))
def test_crash_after_writeback_recovers_exactly_the_whole_batches(tmp_path_factory, sizes, flushed_upto):
    root = tmp_path_factory.mktemp("pc")
    clock = VirtualClock()
    sched = Scheduler(clock)
    events = EventLog(clock)
    disk = Disk(root)
    log = _open(disk, sched, events)
    ends = []
    for i, n in enumerate(sizes):
        log.append_as_leader([SimpleRecord(value=b"v" * n)], leader_epoch=0)
        ends.append(log.active_segment.size)
        if i == min(flushed_upto, len(sizes) - 1):
            log.flush()
    rp = log.recovery_point
    disk.writeback("t-0", 512)
    durable = disk.dirty_files("t-0").get("t-0/00000000000000000000.log", (log.active_segment.size,))[0]
    log.cancel_tasks()
    disk.crash("t-0")
    log2 = _open(disk, sched, events, recovery_point=rp)
    whole = [e for e in ends if e <= durable]
    assert log2.active_segment.size == (whole[-1] if whole else 0)
    assert log2.log_end_offset == len(whole)
    assert log2.log_end_offset >= rp          # nothing fsync'd is ever lost
    assert [r.offset for r in log2.records()] == list(range(len(whole)))
    log2.close()


def test_flush_messages_makes_every_nth_append_durable(tmp_path):
    clock = VirtualClock()
    sched = Scheduler(clock)
    events = EventLog(clock)
    disk = Disk(tmp_path)
    log = _open(disk, sched, events, flush_interval_messages=3)
    for i in range(7):
        log.append_as_leader([SimpleRecord(value=b"m%d" % i)], leader_epoch=0)
    assert log.recovery_point == 6
    log.cancel_tasks()
    disk.crash("t-0")
    log2 = _open(disk, sched, events, recovery_point=6)
    assert log2.log_end_offset == 6      # the 7th record was only in the page cache
    log2.close()


# ---- the standalone broker of lesson 7 -------------------------------------------
from engine.page_cache import StandaloneBroker  # noqa: E402


def _broker(tmp_path, **cfg):
    clock = VirtualClock()
    sched = Scheduler(clock)
    events = EventLog(clock)
    config = LogConfig().replace(segment_index_bytes=1024, **cfg)
    return StandaloneBroker(Disk(tmp_path), "events", config, sched, events), sched, events


def _send(b, n, size=300):
    for _ in range(n):
        b.log.append_as_leader([SimpleRecord(value=b"v" * size)], leader_epoch=0)


def test_power_loss_without_flush_loses_every_record_a_process_kill_loses_none(tmp_path):
    b, sched, events = _broker(tmp_path / "a")
    _send(b, 5)
    lost = b.crash(power_loss=True)
    assert any(f["file"].endswith(".log") and f["size_after"] == 0 for f in lost)
    assert b.restart().log_end_offset == 0          # seed 001: Kafka practically never fsyncs by itself
    b2, _, _ = _broker(tmp_path / "b")
    _send(b2, 5)
    assert b2.crash(power_loss=False) == []
    assert b2.restart().log_end_offset == 5          # the page cache survived the process


def test_flush_then_crash_keeps_what_was_flushed_and_the_page_cache_view_shows_it(tmp_path):
    b, sched, events = _broker(tmp_path)
    _send(b, 3)
    b.flush()
    _send(b, 2)
    log_file = next(f for f in b.page_cache() if f["name"].endswith(".log"))
    assert log_file["durable"] < log_file["size"]
    b.crash()
    assert b.restart().log_end_offset == 3
    assert events.of_kind("recovery_checkpoint_written")[-1].recovery_point == 3


def test_writeback_then_power_loss_tears_a_batch_and_recovery_cuts_it(tmp_path):
    b, sched, events = _broker(tmp_path)
    _send(b, 20, size=300)          # ~370-byte batches: page 4096 ends inside one
    moved = b.writeback()
    assert any(m["file"].endswith(".log") and m["to"] % 4096 == 0 for m in moved)
    b.crash()
    log = b.restart()
    cut = events.of_kind("recovery_truncated")
    assert cut and cut[-1].from_bytes > cut[-1].to_bytes
    assert log.active_segment.size == cut[-1].to_bytes and log.active_segment.size < 4096 * (log.active_segment.size // 4096 + 1)
    assert [r.offset for r in log.records()] == list(range(log.log_end_offset))
    assert 0 < log.log_end_offset < 20


def test_flush_messages_1_loses_nothing(tmp_path):
    b, sched, events = _broker(tmp_path, flush_interval_messages=1)
    _send(b, 7)
    b.crash()
    assert b.restart().log_end_offset == 7


def test_commands_on_a_dead_broker_are_refused(tmp_path):
    import pytest
    from engine.errors import InvalidRequestError
    b, sched, events = _broker(tmp_path)
    b.crash()
    with pytest.raises(InvalidRequestError):
        b.flush()
    with pytest.raises(InvalidRequestError):
        b.crash()
    b.restart()
    with pytest.raises(InvalidRequestError):
        b.restart()
