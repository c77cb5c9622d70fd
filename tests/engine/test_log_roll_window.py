"""The quiet append path (``LogSegment.append_quiet`` inside ``Log._roll_window``) is only a
shortcut: a log that takes it must leave the same files, the same segments and the same event
stream as one that asks the roll rule and the index rule on every append."""
import os
import random
import tempfile

from hypothesis import given, settings, strategies as st

from engine.clock import Scheduler, VirtualClock
from engine.config import LogConfig
from engine.disk import Disk
from engine.events import EventLog
from engine.log import Log
from engine.log.log_segment import INT32_MAX
from engine.records import SimpleRecord, build_batch


def _log(root, cfg, no_window):
    clock = VirtualClock(1_000)
    log = Log(Disk(root), "t-0", "t", 0, LogConfig(**cfg), Scheduler(clock), EventLog(clock, keep=None), broker=1,
              rng=random.Random(7), schedule_tasks=False)
    if no_window:
        log._roll_window = lambda seg: None      # every append asks the rules
    return log


def _files(root):
    out = {}
    for d, _, names in os.walk(root):
        for n in names:
            with open(os.path.join(d, n), "rb") as f:
                out[os.path.relpath(os.path.join(d, n), root)] = f.read()
    return out


ops = st.lists(st.tuples(st.sampled_from(["leader", "follower", "gap", "truncate", "advance"]),
                         st.integers(1, 120),            # value size
                         st.integers(-1, 400)),           # timestamp step (-1: no timestamp)
               min_size=1, max_size=60)


@settings(max_examples=60, deadline=None)
@given(ops=ops, segment_bytes=st.integers(300, 3000), interval=st.integers(0, 600),
       index_bytes=st.sampled_from([24, 48, 120, 4096]), segment_ms=st.integers(50, 2000),
       compact=st.booleans(), jitter=st.sampled_from([0, 40]))
def test_quiet_path_leaves_what_the_rules_leave(ops, segment_bytes, interval, index_bytes, segment_ms, compact,
                                                jitter):
    cfg = dict(segment_bytes=segment_bytes, index_interval_bytes=interval, segment_index_bytes=index_bytes,
               segment_ms=segment_ms, segment_jitter_ms=jitter, max_compaction_lag_ms=segment_ms // 2 + 1,
               cleanup_policy="compact" if compact else "delete")
    results = []
    with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
        for root, no_window in ((a, False), (b, True)):
            log = _log(root, cfg, no_window)
            ts, out = 1_000, []
            for op, size, step in ops:
                ts += max(step, 0)
                t = -1 if step < 0 else ts
                if op == "advance":
                    log.scheduler.advance(size * 10)
                elif op == "truncate":
                    out.append(log.truncate_to(max(log.log_end_offset - size % 5, 0)))
                elif op == "leader":
                    out.append(tuple(log.append_as_leader([SimpleRecord(b"k" * size, key=b"k", timestamp=t)], 0)))
                else:
                    base = log.log_end_offset + (INT32_MAX // 3 if op == "gap" else 0)
                    out.append(tuple(log.append_as_follower(
                        build_batch([SimpleRecord(b"f" * size, key=b"k", timestamp=t)], base_offset=base,
                                    partition_leader_epoch=1))))
            results.append((out, [s.base_offset for s in log.segments], log.events.digest(), _files(root)))
            log.close()
    assert results[0] == results[1]


def test_the_quiet_path_is_taken_and_stops_at_each_rule(tmp_path):
    """Small batches go quiet between index entries; the window ends at segment.bytes, at
    segment.ms after the first timestamp and at a full index, each rolling as the rule says."""
    log = _log(str(tmp_path), dict(segment_bytes=2000, index_interval_bytes=200, segment_ms=500,
                                   segment_index_bytes=24), False)
    calls = []
    seg_append = type(log.active_segment).append
    type(log.active_segment).append = lambda self, *a, **k: calls.append(1) or seg_append(self, *a, **k)
    try:
        for i in range(40):
            log.append_as_leader([SimpleRecord(b"v" * 10, timestamp=1_000 + i)], 0)
    finally:
        type(log.active_segment).append = seg_append
    # one batch is ~80 B: an index entry every third append, and a first append per segment
    # (a 24-byte index holds 3 entries); the other half are quiet
    assert 0 < len(calls) <= 25
    rolls = [e.reason for e in log.events.of_kind("segment_rolled")]
    assert rolls and set(rolls) <= {"size", "index_full"}
    log.append_as_leader([SimpleRecord(b"v", timestamp=10_000)], 0)
    assert log.events.of_kind("segment_rolled")[-1].reason == "time"
