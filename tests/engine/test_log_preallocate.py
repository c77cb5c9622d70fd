"""``preallocate=true``: a new segment's .log is made segment.bytes long at once (Kafka's
initFileSize), batches are written into its zeros, and the file is trimmed to its data on
roll and on close; after a crash, recovery cuts the zeros."""
from engine.clock import Scheduler, VirtualClock
from engine.config import LogConfig
from engine.disk import Disk
from engine.events import EventLog
from engine.log import Log
from engine.records import SimpleRecord

CFG = dict(segment_bytes=1000, index_interval_bytes=100, preallocate=True)


def open_log(disk, **cfg):
    clock = VirtualClock(1_000)
    return Log(disk, "t-0", "t", 0, LogConfig(**{**CFG, **cfg}), Scheduler(clock), EventLog(clock),
               hw_follows_leo=True)


def produce(log, n):
    for i in range(n):
        log.append_as_leader([SimpleRecord(b"v%03d" % i * 10, timestamp=1000 + i)], 0)


def test_a_new_segment_log_file_is_segment_bytes_long(tmp_path):
    log = open_log(Disk(tmp_path))
    seg = log.active_segment
    assert log.disk.size(seg.log_rel) == 1000 and seg.size == 0
    produce(log, 3)
    assert log.disk.size(seg.log_rel) == 1000
    assert [r.value for r in log.records()] == [b"v%03d" % i * 10 for i in range(3)]


def test_without_preallocate_the_log_grows_with_its_data(tmp_path):
    log = open_log(Disk(tmp_path), preallocate=False)
    produce(log, 3)
    assert log.disk.size(log.active_segment.log_rel) == log.active_segment.size


def test_roll_trims_the_old_log_and_preallocates_the_new_one(tmp_path):
    log = open_log(Disk(tmp_path))
    produce(log, 30)
    segs = log.segments
    assert len(segs) >= 3
    for seg in segs[:-1]:
        assert log.disk.size(seg.log_rel) == seg.size < 1000
    assert log.disk.size(segs[-1].log_rel) == 1000


def test_close_trims_and_reopen_reads_everything(tmp_path):
    disk = Disk(tmp_path)
    log = open_log(disk)
    produce(log, 12)
    log.close()
    active = log.segments[-1]
    assert disk.size(active.log_rel) == active.size
    again = open_log(disk)
    assert again.log_end_offset == 12 and not again.events.of_kind("recovery_truncated")
    assert [r.offset for r in again.records()] == list(range(12))


def test_after_a_crash_recovery_cuts_the_preallocated_zeros(tmp_path):
    disk = Disk(tmp_path)
    log = open_log(disk)
    produce(log, 12)
    log.flush()
    log.cancel_tasks()            # the process dies: no close, no trim
    disk.close_all()
    again = open_log(disk)
    assert again.log_end_offset == 12
    assert [r.offset for r in again.records()] == list(range(12))
    (cut,) = again.events.of_kind("recovery_truncated")
    assert cut.from_bytes == 1000 and cut.to_bytes == again.active_segment.size


def test_a_power_loss_still_loses_what_was_not_flushed(tmp_path):
    disk = Disk(tmp_path)
    log = open_log(disk)
    produce(log, 3)
    log.flush()
    produce(log, 4)                      # written into the preallocated zeros, not fsynced
    log.cancel_tasks()
    lost = disk.crash()
    assert any(rel.endswith(".log") for rel, _, _ in lost)
    again = open_log(disk)
    assert [r.offset for r in again.records()] == [0, 1, 2] and again.log_end_offset == 3
