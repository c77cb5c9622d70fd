import tempfile

from hypothesis import given, settings, strategies as st

from engine.clock import Scheduler, VirtualClock
from engine.config import LogConfig
from engine.disk import Disk
from engine.events import EventLog
from engine.log import Log
from engine.records import SimpleRecord


def make_log(root, hw_follows_leo=True, **cfg):
    clock = VirtualClock(10_000)
    sched = Scheduler(clock)
    return Log(Disk(root), "t-0", "t", 0, LogConfig(**cfg), sched, EventLog(clock), hw_follows_leo=hw_follows_leo)


def produce(log, sizes_and_ts):
    for size, ts in sizes_and_ts:
        log.append_as_leader([SimpleRecord(b"v" * size, timestamp=ts)], 0)


def model(segs, leo, hw, start, now, retention_bytes, retention_ms):
    """Reference §4.2 on plain data: segs is a list of (base, size, largest_ts). Returns
    (surviving bases, log start offset)."""
    segs = list(segs)

    def walk(pred):
        out = []
        for i, (base, size, ts) in enumerate(segs):
            nxt = segs[i + 1] if i + 1 < len(segs) else None
            upper = nxt[0] if nxt else leo
            if upper > hw or (nxt is None and size == 0) or not pred(segs[i], nxt):
                break
            out.append(segs[i])
        return out

    def apply(doomed):
        nonlocal segs, start
        if not doomed:
            return
        if len(doomed) == len(segs):
            segs.append((leo, 0, now))
        segs = segs[len(doomed):]
        start = max(start, segs[0][0])

    apply(walk(lambda s, nxt: nxt is not None and nxt[0] <= start))
    if retention_bytes >= 0:
        total = sum(s[1] for s in segs)
        if total >= retention_bytes:
            diff = [total - retention_bytes]

            def by_size(s, nxt):
                if diff[0] - s[1] >= 0:
                    diff[0] -= s[1]
                    return True
                return False
            apply(walk(by_size))
    if retention_ms >= 0:
        apply(walk(lambda s, nxt: now - s[2] > retention_ms))
    return [s[0] for s in segs], start


@settings(max_examples=40, deadline=None)
@given(batches=st.lists(st.tuples(st.integers(1, 120), st.integers(0, 1000)), min_size=0, max_size=30),
       retention_bytes=st.one_of(st.just(-1), st.integers(0, 2500)),
       retention_ms=st.one_of(st.just(-1), st.integers(0, 1500)),
       hw_back=st.integers(0, 10), start_back=st.integers(0, 30), now_advance=st.integers(0, 1500))
def test_retention_keeps_exactly_what_the_rules_say(batches, retention_bytes, retention_ms, hw_back, start_back,
                                                   now_advance):
    with tempfile.TemporaryDirectory() as tmp:
        log = make_log(tmp, hw_follows_leo=False, segment_bytes=400, retention_bytes=retention_bytes,
                     retention_ms=retention_ms)
        produce(log, batches)
        log.update_high_watermark(max(0, log.log_end_offset - hw_back))
        log.delete_records(max(0, log.high_watermark - start_back))
        log.scheduler.clock.advance(now_advance)
        now = log.scheduler.now_ms()
        before = [(s.base_offset, s.size, s.largest_timestamp) for s in log.segments]
        expected = model(before, log.log_end_offset, log.high_watermark, log.log_start_offset, now,
                         retention_bytes, retention_ms)
        deleted = log.delete_old_segments()
        assert ([s.base_offset for s in log.segments], log.log_start_offset) == expected
        assert deleted == len({b for b, _, _ in before} - set(expected[0]))
        assert log.log_end_offset == (sum(1 for _ in batches))
        log.disk.close_all()


def test_time_retention_uses_largest_timestamp(tmp_path):
    log = make_log(tmp_path, segment_bytes=300, retention_ms=1000)
    produce(log, [(50, 8000), (50, 8000), (50, 9500), (50, 9600)])  # segments [0,1] [2,3]
    assert [s.base_offset for s in log.segments] == [0, 2]
    log.delete_old_segments()
    assert [s.base_offset for s in log.segments] == [2] and log.log_start_offset == 2
    checks = log.events.of_kind("retention_check")
    time_checks = [c for c in checks if c.rule == "time"]
    assert (time_checks[0].segment, time_checks[0].value, time_checks[0].deletable) == (0, 2000, True)
    assert (time_checks[1].segment, time_checks[1].value, time_checks[1].deletable) == (2, 400, False)


def test_all_expired_rolls_first_and_keeps_one_segment(tmp_path):
    log = make_log(tmp_path, retention_ms=10)
    produce(log, [(10, 1), (10, 2)])
    log.delete_old_segments()
    assert [s.base_offset for s in log.segments] == [2]
    assert log.log_end_offset == 2 and log.log_start_offset == 2
    assert log.events.of_kind("segment_rolled")[-1].reason == "retention"


def test_empty_active_segment_is_never_deleted(tmp_path):
    log = make_log(tmp_path, retention_ms=0)
    log.scheduler.advance(100)
    assert log.delete_old_segments() == 0
    assert log.events.of_kind("retention_check")[-1].blocked_by == "empty_active"


def test_segments_above_high_watermark_are_kept(tmp_path):
    log = make_log(tmp_path, hw_follows_leo=False, retention_ms=0, segment_bytes=200)
    produce(log, [(100, 1), (100, 1), (100, 1)])
    log.update_high_watermark(1)
    assert log.delete_old_segments() == 1
    assert log.events.of_kind("retention_check")[-1].blocked_by == "high_watermark"


def test_deleted_files_are_renamed_then_removed_after_delay(tmp_path):
    log = make_log(tmp_path, retention_bytes=0, segment_bytes=200, file_delete_delay_ms=500)
    produce(log, [(100, 1), (100, 1)])
    log.delete_old_segments()
    names = [f.name for f in log.files()]
    assert "00000000000000000000.log.deleted" in names and "00000000000000000000.index.deleted" in names
    log.scheduler.advance(499)
    assert "00000000000000000000.log.deleted" in [f.name for f in log.files()]
    log.scheduler.advance(1)
    assert not any(f.deleted for f in log.files())
    assert {e.file for e in log.events.of_kind("file_deleted")} >= {"00000000000000000000.log.deleted"}


def test_log_start_offset_pass_removes_whole_segments_below_it(tmp_path):
    log = make_log(tmp_path, segment_bytes=200, retention_ms=-1)
    produce(log, [(100, 1)] * 6)  # segments of 1 batch each
    log.delete_records(3)
    log.delete_old_segments()
    assert log.segments[0].base_offset == 3
    assert log.events.of_kind("segment_deleted")[0].reason == "retention:log_start_offset"


def test_retention_pass_is_scheduled(tmp_path):
    log = make_log(tmp_path, retention_ms=50, log_retention_check_interval_ms=1000, segment_bytes=200)
    produce(log, [(100, 10_000), (100, 10_000), (100, 10_000)])
    log.scheduler.advance(999)
    assert log.segments[0].base_offset == 0
    log.scheduler.advance(1)
    assert log.segments[0].base_offset == 3


def test_compact_only_policy_runs_only_log_start_pass(tmp_path):
    log = make_log(tmp_path, retention_ms=0, cleanup_policy="compact", segment_bytes=200)
    for _ in range(2):  # a compacted topic takes keyed records only
        log.append_as_leader([SimpleRecord(b"v" * 100, key=b"k", timestamp=1)], 0)
    log.scheduler.clock.advance(100)
    assert log.delete_old_segments() == 0
    assert {c.rule for c in log.events.of_kind("retention_check")} == {"log_start_offset"}
