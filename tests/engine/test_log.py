import tempfile

import pytest
from hypothesis import given, settings, strategies as st

from engine.clock import Scheduler, VirtualClock
from engine.config import LogConfig
from engine.disk import Disk
from engine.errors import CorruptRecordError, OffsetOutOfRangeError, RecordTooLargeError
from engine.events import EventLog
from engine.log import Log
from engine.log.log_segment import INT32_MAX
from engine.records import CompressionType, SimpleRecord, build_batch


def make_log(root, **cfg):
    clock = VirtualClock(1_000_000)
    sched = Scheduler(clock)
    events = EventLog(clock)
    return Log(Disk(root), "orders-0", "orders", 0, LogConfig(**cfg), sched, events, broker=1,
               hw_follows_leo=True)


@pytest.fixture
def log(tmp_path):
    return make_log(tmp_path, segment_bytes=1000, index_interval_bytes=150)


def produce(log, n, size=30, ts=None, epoch=0):
    infos = []
    for i in range(n):
        t = log.scheduler.now_ms() if ts is None else ts
        infos.append(log.append_as_leader([SimpleRecord(b"v" * size, key=b"k%d" % i, timestamp=t)], epoch))
    return infos


def kinds(log, since=0):
    return [e.event.kind for e in log.events.envelopes if e.seq > since]


def test_offsets_are_assigned_from_the_log_end(log):
    infos = produce(log, 3)
    assert [(i.first_offset, i.last_offset) for i in infos] == [(0, 0), (1, 1), (2, 2)]
    assert log.log_end_offset == 3 and log.high_watermark == 3
    assert [r.offset for r in log.records()] == [0, 1, 2]


def test_multi_record_append_is_one_batch(log):
    info = log.append_as_leader([SimpleRecord(b"a"), SimpleRecord(b"b"), SimpleRecord(b"c")], 0)
    assert (info.first_offset, info.last_offset, info.records_count) == (0, 2, 3)
    assert len(log.read(1).batches) == 1


def test_read_returns_whole_batch_holding_the_offset(log):
    log.append_as_leader([SimpleRecord(b"a"), SimpleRecord(b"b")], 0)
    log.append_as_leader([SimpleRecord(b"c")], 0)
    data = log.read(1)
    assert data.batches[0].base_offset == 0 and data.position == 0
    assert [h.base_offset for h in data.batches] == [0, 2]


def test_read_first_batch_is_whole_even_above_max_bytes(log):
    produce(log, 3)
    data = log.read(0, max_bytes=10)
    assert len(data.batches) == 1 and len(data.records) == data.batches[0].size_in_bytes


def test_read_stops_below_max_offset(log):
    produce(log, 5)
    assert [h.base_offset for h in log.read(1, max_offset=3).batches] == [1, 2]
    assert log.read(3, max_offset=3).batches == ()


def test_read_outside_the_log_names_its_bounds(log):
    produce(log, 2)
    with pytest.raises(OffsetOutOfRangeError, match=r"log start offset 0, log end offset 2"):
        log.read(3)
    assert log.read(2).records == b""


def test_read_emits_the_lookup_path_as_one_event(log):
    produce(log, 30)
    seq = log.events.seq
    data = log.read(17)
    assert kinds(log, seq) == ["log_lookup"]
    ev = log.events.envelopes[-1].event
    assert (ev.mode, ev.target, ev.time_probes) == ("offset", 17, [])
    assert ev.candidates == [s.base_offset for s in log.segments]
    assert ev.segment == data.segment == max(b for b in ev.candidates if b <= 17)
    assert ev.rule == "largest base offset <= target"
    # The probes are the binary search over the chosen segment's offset index ...
    idx = log.segments[ev.candidates.index(ev.segment)].offset_index
    assert ev.probes and all(p[0] <= p[2] <= p[1] for p in ev.probes)
    assert all([p[3], p[4]] == list(idx.entry(p[2])) for p in ev.probes)
    floor = max((p for p in ev.probes if p[5] in ("right", "hit")), key=lambda p: p[3], default=None)
    start = floor[4] if floor else 0
    # ... and the scan walks batches from the floor's position to the first holding the target.
    assert ev.scan[0][0] == start
    assert ev.scan[-1][4] and ev.scan[-1][2] >= 17 and not any(row[4] for row in ev.scan[:-1])
    assert [row[0] for row in ev.scan] == sorted(row[0] for row in ev.scan)
    assert (ev.offset, ev.position, ev.timestamp) == (data.batches[0].base_offset, data.position, None)


def test_timestamp_lookup_emits_time_probes_offset_probes_and_scan(tmp_path):
    log = make_log(tmp_path, segment_bytes=1000, index_interval_bytes=100)
    for i in range(40):
        produce(log, 1, ts=1000 + 10 * i)
    target = log.records()[25].timestamp
    seq = log.events.seq
    found = log.offset_for_timestamp(target)
    assert kinds(log, seq) == ["log_lookup"]
    ev = log.events.envelopes[-1].event
    assert (ev.mode, ev.target, ev.offset, ev.timestamp) == ("timestamp", target, found.offset, found.timestamp)
    seg = log.segments[ev.candidates.index(ev.segment)]
    assert seg.largest_timestamp >= target
    assert all([p[3], p[4]] == list(seg.time_index.entry(p[2])) for p in ev.time_probes)
    assert all([p[3], p[4]] == list(seg.offset_index.entry(p[2])) for p in ev.probes)
    assert ev.scan[-1][4] and ev.scan[-1][3] >= target and ev.position == ev.scan[-1][0]


def test_timestamp_lookup_beyond_the_log_finds_nothing(log):
    produce(log, 3, ts=500)
    assert log.offset_for_timestamp(10**12) is None
    ev = log.events.envelopes[-1].event
    assert (ev.kind, ev.segment, ev.offset, ev.position, ev.scan) == ("log_lookup", None, -1, None, [])


def test_untraced_read_emits_nothing(log):
    produce(log, 30)
    seq = log.events.seq
    assert log.read(17, trace=False).batches[0].last_offset >= 17
    assert log.events.seq == seq


def test_rolls_on_segment_bytes_at_log_end(log):
    produce(log, 30)
    rolls = log.events.of_kind("segment_rolled")
    assert rolls and all(r.reason == "size" for r in rolls)
    bases = [s.base_offset for s in log.segments]
    assert [r.new_segment for r in rolls] == bases[1:]
    assert all(s.size <= 1000 for s in log.segments)


def test_rolls_on_segment_ms(tmp_path):
    log = make_log(tmp_path, segment_ms=100)
    produce(log, 1, ts=1000)
    produce(log, 1, ts=1100)
    assert len(log.segments) == 1
    produce(log, 1, ts=1101)
    assert [s.base_offset for s in log.segments] == [0, 2]
    assert log.events.of_kind("segment_rolled")[-1].reason == "time"


def test_rolls_when_index_is_full(tmp_path):
    log = make_log(tmp_path, segment_index_bytes=24, index_interval_bytes=0)
    produce(log, 6)
    assert {r.reason for r in log.events.of_kind("segment_rolled")} == {"index_full"}


def test_rolls_on_relative_offset_overflow(tmp_path):
    log = make_log(tmp_path)
    produce(log, 1)
    far = build_batch([SimpleRecord(b"x")], base_offset=INT32_MAX + 5)
    log.append_as_follower(far)
    assert [s.base_offset for s in log.segments] == [0, INT32_MAX + 5]
    assert log.events.of_kind("segment_rolled")[-1].reason == "offset_overflow"


def test_roll_listing_matches_kafka(tmp_path):
    """Seed 002 §1.1: inactive indexes trimmed to their entries, the active ones preallocated."""
    log = make_log(tmp_path, segment_bytes=20000)
    produce(log, 300, size=200)
    sizes = {f.name: f.size for f in log.files()}
    active = log.active_segment.base_offset
    assert sizes[f"{active:020d}.index"] == 10485760
    assert sizes[f"{active:020d}.timeindex"] == 10485756
    for seg in log.segments[:-1]:
        assert sizes[f"{seg.base_offset:020d}.index"] == 8 * seg.offset_index.entries > 0
        assert sizes[f"{seg.base_offset:020d}.timeindex"] == 12 * seg.time_index.entries > 0
    assert sizes["leader-epoch-checkpoint"] == len(b"0\n1\n0 0\n")


@pytest.mark.parametrize("cfg, size, error", [(dict(max_message_bytes=100), 200, "MESSAGE_TOO_LARGE"),
                                               (dict(segment_bytes=150), 200, "RECORD_LIST_TOO_LARGE")])
def test_too_large_batch_is_refused_and_log_unchanged(tmp_path, cfg, size, error):
    log = make_log(tmp_path, **cfg)
    produce(log, 1, size=10)
    before = ({f.name: f.size for f in log.files()}, log.log_end_offset, log.events.seq)
    with pytest.raises(RecordTooLargeError, match=r"\d+ bytes") as refused:
        log.append_as_leader([SimpleRecord(b"x" * size)], 0)
    assert refused.value.name == error      # Kafka: RecordTooLargeException / RecordBatchTooLargeException
    assert ({f.name: f.size for f in log.files()}, log.log_end_offset, log.events.seq) == before


def test_corrupt_follower_bytes_are_refused_and_log_unchanged(log):
    produce(log, 2)
    good = build_batch([SimpleRecord(b"x")], base_offset=2)
    bad = good[:-1] + bytes([good[-1] ^ 1])
    with pytest.raises(CorruptRecordError, match=f"position {len(good)}"):
        log.append_as_follower(good + bad)
    assert log.log_end_offset == 2 and log.active_segment.size == log.disk.size(log.active_segment.log_rel)


def test_follower_append_keeps_offsets_and_follows_epochs(log):
    b1 = build_batch([SimpleRecord(b"a"), SimpleRecord(b"b")], base_offset=0, partition_leader_epoch=2)
    b2 = build_batch([SimpleRecord(b"c")], base_offset=2, partition_leader_epoch=5)
    info = log.append_as_follower(b1 + b2)
    assert (info.first_offset, info.last_offset, log.log_end_offset) == (0, 2, 3)
    assert [(e.epoch, e.start_offset) for e in log.leader_epoch_cache.entries] == [(2, 0), (5, 2)]


def test_client_batch_gets_offsets_and_epoch(log):
    produce(log, 2)
    client = build_batch([SimpleRecord(b"x"), SimpleRecord(b"y")], base_offset=0)
    info = log.append_as_leader(client, 4)
    assert (info.first_offset, info.last_offset) == (2, 3)
    assert log.read(2).batches[0].partition_leader_epoch == 4


def test_log_append_time_stamps_the_clock(tmp_path):
    log = make_log(tmp_path, message_timestamp_type="LogAppendTime")
    log.scheduler.advance(5)
    info = log.append_as_leader([SimpleRecord(b"x", timestamp=7)], 0)
    assert info.log_append_time == info.max_timestamp == 1_000_005
    assert log.records()[0].timestamp == 1_000_005


def test_compressed_appends_read_back(log):
    for codec in CompressionType:
        log.append_as_leader([SimpleRecord(b"%d" % codec), SimpleRecord(b"z" * 50)], 0, compression=codec)
    assert [r.value for r in log.records()][::2] == [b"%d" % c for c in CompressionType]


def test_truncate_to_removes_later_batches_and_segments(log):
    produce(log, 30)
    log.truncate_to(7, reason="diverged")
    assert log.log_end_offset == 7
    assert [r.offset for r in log.records()] == list(range(7))
    assert all(s.base_offset <= 7 for s in log.segments)
    assert any(f.deleted for f in log.files())
    assert log.events.of_kind("log_truncated")[-1].to_offset == 7
    produce(log, 2)
    assert [r.offset for r in log.records()][-3:] == [6, 7, 8]


def test_truncate_drops_epoch_entries_at_or_after(log):
    produce(log, 3, epoch=1)
    produce(log, 3, epoch=2)
    log.truncate_to(3)
    assert [(e.epoch, e.start_offset) for e in log.leader_epoch_cache.entries] == [(1, 0)]


def test_delete_records_moves_log_start(log):
    produce(log, 5)
    log.delete_records(3)
    assert log.log_start_offset == 3
    with pytest.raises(OffsetOutOfRangeError):
        log.read(2)
    with pytest.raises(OffsetOutOfRangeError, match="high watermark"):
        log.delete_records(6)


def test_flush_interval_messages_moves_recovery_point(tmp_path):
    log = make_log(tmp_path, flush_interval_messages=3)
    produce(log, 2)
    assert log.recovery_point == 0 and log.disk.is_dirty(log.active_segment.log_rel)
    produce(log, 1)
    assert log.recovery_point == 3 and not log.disk.is_dirty(log.active_segment.log_rel)


def test_flush_ms_is_scheduled(tmp_path):
    log = make_log(tmp_path, flush_interval_ms=1000)
    produce(log, 2)
    log.scheduler.advance(999)
    assert log.recovery_point == 0
    log.scheduler.advance(1)
    assert log.recovery_point == 2


def test_roll_flushes_the_old_segment(log):
    produce(log, 30)
    assert log.recovery_point == log.active_segment.base_offset
    for seg in log.segments[:-1]:
        assert not log.disk.is_dirty(seg.log_rel)


def test_offset_for_timestamp_special_values(log):
    produce(log, 4)
    log.delete_records(1)
    assert log.offset_for_timestamp(-1).offset == 4
    assert log.offset_for_timestamp(-2).offset == 1


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(0, 200), min_size=1, max_size=40), st.integers(0, 210), st.integers(0, 3))
def test_offset_for_timestamp_equals_brute_force(timestamps, target, start):
    with tempfile.TemporaryDirectory() as tmp:
        log = make_log(tmp, segment_bytes=400, index_interval_bytes=60)
        for i, ts in enumerate(timestamps):
            log.append_as_leader([SimpleRecord(b"v%d" % i, timestamp=ts)], 0)
        log.delete_records(min(start, log.log_end_offset))
        found = log.offset_for_timestamp(target)
        expected = next((r for r in log.records() if r.timestamp >= target), None)
        if expected is None:
            assert found is None
        else:
            assert (found.offset, found.timestamp) == (expected.offset, expected.timestamp)
        log.disk.close_all()


def test_events_carry_identity_and_no_absolute_paths(tmp_path):
    log = make_log(tmp_path, segment_bytes=500)
    produce(log, 20)
    log.read(5)
    log.truncate_to(3)
    log.close()
    for env in log.events.envelopes:
        d = env.to_dict()
        assert (d["broker"], d["topic"], d["partition"]) == (1, "orders", 0)
        assert str(tmp_path) not in str(d) and "orders-0/" not in str(d)


def test_files_lists_the_partition_directory(log):
    produce(log, 1)
    kinds_ = {f.name: (f.kind, f.segment, f.deleted) for f in log.files()}
    assert kinds_["00000000000000000000.log"] == ("log", 0, False)
    assert kinds_["00000000000000000000.timeindex"] == ("timeindex", 0, False)
    assert kinds_["leader-epoch-checkpoint"] == ("leader-epoch-checkpoint", None, False)


def test_close_trims_the_active_indexes(log):
    produce(log, 12)
    log.close()
    seg = log.active_segment
    assert log.disk.size(seg.offset_index.rel) == 8 * seg.offset_index.entries
    assert log.disk.size(seg.time_index.rel) == 12 * seg.time_index.entries


def test_one_append_of_many_batches_writes_the_same_files_as_many_appends(tmp_path):
    batches = [build_batch([SimpleRecord(b"x" * (10 + 7 * i), timestamp=100 + i)], base_offset=i,
                           partition_leader_epoch=i // 10) for i in range(40)]
    one = make_log(tmp_path / "one", segment_bytes=700, index_interval_bytes=90)
    one.append_as_follower(b"".join(batches))
    many = make_log(tmp_path / "many", segment_bytes=700, index_interval_bytes=90)
    for b in batches:
        many.append_as_follower(b)
    assert len(one.segments) > 2
    for a, b in zip(one.files(), many.files()):
        assert (a.name, a.size) == (b.name, b.size)
        assert one.disk.read_all(f"orders-0/{a.name}") == many.disk.read_all(f"orders-0/{b.name}")
    strip = [(e.event.kind, e.event.to_dict()) for e in one.events.envelopes]
    assert strip == [(e.event.kind, e.event.to_dict()) for e in many.events.envelopes]
