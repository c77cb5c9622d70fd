"""The inside-a-segment layout (lesson 3: seed 000 §1.2, seed 001 seg #6, seed 002 §1.2)."""
from engine.clock import Scheduler, VirtualClock
from engine.config import LogConfig
from engine.disk import Disk
from engine.events import EventLog
from engine.log.layout import segment_layout
from engine.log.log import Log
from engine.records import SimpleRecord


def _log(tmp_path, **cfg):
    clock = VirtualClock()
    sched = Scheduler(clock)
    return Log(Disk(tmp_path), "t-0", "t", 0, LogConfig().replace(**cfg), sched, EventLog(clock),
               hw_follows_leo=True), sched


def test_batches_tile_the_log_and_index_entries_point_at_batch_starts(tmp_path):
    log, sched = _log(tmp_path, index_interval_bytes=300)
    for i in range(20):
        sched.advance(10)
        log.append_as_leader([SimpleRecord(value=b"v" * 80)], leader_epoch=0)
    lay = segment_layout(log.active_segment)
    pos = 0
    for p, base, last, max_ts, size in lay["batches"]:
        assert p == pos
        pos += size
    assert pos == lay["size"] == log.active_segment.size
    starts = {b[0]: b for b in lay["batches"]}
    assert lay["offset_index"], "sparse, but not empty after 20 batches"
    assert len(lay["offset_index"]) < 20          # sparse: not one entry per batch (seed 000's figure is wrong)
    for rel, off, position in lay["offset_index"]:
        assert off == rel  # base 0: relative = absolute
        assert starts[position][2] == off     # entry = last offset of the batch at that position
    for ts, rel, off in lay["time_index"]:
        assert any(b[2] == off and b[3] == ts for b in lay["batches"])
    log.close()


def test_denser_index_with_smaller_interval(tmp_path):
    counts = []
    for interval in (100, 1000):
        log, sched = _log(tmp_path / str(interval), index_interval_bytes=interval)
        for _ in range(30):
            log.append_as_leader([SimpleRecord(value=b"v" * 80)], leader_epoch=0)
        counts.append(len(segment_layout(log.active_segment)["offset_index"]))
        log.close()
    assert counts[0] > counts[1] * 3


def test_relative_offsets_after_a_nonzero_base(tmp_path):
    log, sched = _log(tmp_path, index_interval_bytes=200)
    log.truncate_fully_and_start_at(3257573)   # seed 002 §1.2's segment
    for _ in range(10):
        log.append_as_leader([SimpleRecord(value=b"v" * 100)], leader_epoch=0)
    lay = segment_layout(log.active_segment)
    assert lay["files"]["index"] == "00000000000003257573.index"
    for rel, off, _ in lay["offset_index"]:
        assert off == 3257573 + rel and rel < 10
    log.close()
