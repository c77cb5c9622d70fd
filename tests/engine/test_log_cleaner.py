"""The log cleaner (reference §4.3, seed 002 §1.4): what a pass keeps, delete horizons,
the dirty ratio, the cleaner point, crash safety of the swap, kafka-python reading the
cleaned segments, keyless records refused, and the ``clean`` command line."""
from __future__ import annotations

import json
import subprocess
import sys
import tempfile

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record import MemoryRecords

from engine.clock import Scheduler, VirtualClock
from engine.config import LogConfig
from engine.disk import Disk
from engine.errors import InvalidRecordError
from engine.events import EventLog
from engine.log import Log
from engine.log.cleaner import LogCleaner
from engine.records import CompressionType, SimpleRecord, build_batch, read_header

BASE = dict(segment_bytes=300, index_interval_bytes=90, cleanup_policy="compact", delete_retention_ms=1000,
            file_delete_delay_ms=10)


class Crash(Exception):
    pass


def open_log(disk, clock, **cfg):
    return Log(disk, "t-0", "t", 0, LogConfig(**{**BASE, **cfg}), Scheduler(clock), EventLog(clock),
               hw_follows_leo=True)


def put(log, key, value, epoch=0):
    log.append_as_leader([SimpleRecord(value, key=key)], epoch)


def visible(log):
    return [(r.offset, r.key, r.value) for r in log.records()]


def latest(log):
    out = {}
    for r in log.records():
        out[r.key] = r.value
    return out


def kafka_python_records(disk, log):
    out = []
    for seg in log.segments:
        mr = MemoryRecords(disk.read_all(seg.log_rel))
        while (batch := mr.next_batch()) is not None:
            out.extend((r.offset, r.key, r.value) for r in batch)
    return out


@pytest.fixture
def env(tmp_path):
    disk = Disk(tmp_path)
    clock = VirtualClock(10_000)
    return disk, clock


def test_seed_002_compaction_keeps_the_last_value_of_each_key_and_offsets_keep_gaps(env):
    # seed 002 §1.4: "keep only the last value for each key"; after compaction the offsets
    # are no longer contiguous.
    disk, clock = env
    log = open_log(disk, clock)
    keys = [b"K1", b"K2", b"K1", b"K3", b"K2", b"K4", b"K5", b"K1", b"K3", b"K2", b"K6"]
    for i, k in enumerate(keys):
        put(log, k, b"V%d" % i)
    log.roll()
    before = visible(log)
    result = LogCleaner(disk).clean(log, clock.now_ms())
    after = visible(log)
    assert [o for o, _, _ in after] == [5, 6, 7, 8, 9, 10]
    assert {k: v for _, k, v in after} == {k: v for _, k, v in before}
    assert result.superseded == 5 and result.records_after == 6
    assert kafka_python_records(disk, log) == after
    assert log.log_end_offset == 11  # the log end offset does not move


def test_cleaner_point_moves_and_is_written_in_kafkas_checkpoint_format(env):
    disk, clock = env
    log = open_log(disk, clock)
    for i in range(12):
        put(log, b"k%d" % (i % 3), b"v%d" % i)
    cleaner = LogCleaner(disk)
    first_uncleanable = log.active_segment.base_offset
    cleaner.clean(log, clock.now_ms())
    assert disk.read_all("cleaner-offset-checkpoint") == b"0\n1\nt 0 %d\n" % first_uncleanable
    moved = log.events.of_kind("cleaner_point_moved")
    assert (moved[-1].old_offset, moved[-1].new_offset) == (0, first_uncleanable)
    assert cleaner.first_dirty_offset(log) == first_uncleanable
    # A checkpoint beyond the log end offset is reset to the log start offset.
    disk.write_atomic("cleaner-offset-checkpoint", b"0\n1\nt 0 999\n")
    assert cleaner.first_dirty_offset(log) == log.log_start_offset


def test_active_segment_and_records_above_the_high_watermark_are_never_cleaned(env):
    disk, clock = env
    log = open_log(disk, clock, segment_bytes=100_000)
    for i in range(10):
        put(log, b"same", b"v%d" % i)
    LogCleaner(disk).clean(log, clock.now_ms())
    assert len(visible(log)) == 10  # all in the active segment
    assert not log.events.of_kind("segments_cleaned")


def test_tombstone_gets_a_delete_horizon_then_goes_after_delete_retention_ms(env):
    disk, clock = env
    log = open_log(disk, clock)
    put(log, b"a", b"1")
    put(log, b"b", b"2")
    put(log, b"a", None)  # tombstone
    log.roll()
    cleaner = LogCleaner(disk)
    cleaner.clean(log, clock.now_ms())
    assert visible(log) == [(1, b"b", b"2"), (2, b"a", None)]
    seg = next(s for s in log.segments if s.size and any(h.base_offset == 2 for _, h in s.iter_headers()))
    h = next(h for _, h in seg.iter_headers() if h.base_offset == 2)
    assert h.has_delete_horizon and h.delete_horizon_ms == clock.now_ms() + 1000
    horizon = h.delete_horizon_ms
    # A pass before the horizon keeps it (new dirty data makes the log cleanable again).
    clock.advance(500)
    put(log, b"c", b"3")
    log.roll()
    cleaner.clean(log, clock.now_ms())
    assert (2, b"a", None) in visible(log)
    # Past the horizon the next pass removes it; offsets still strictly increase.
    clock.advance_to(horizon)
    put(log, b"d", b"4")
    log.roll()
    result = cleaner.clean(log, clock.now_ms())
    assert result.tombstones_removed == 1
    assert visible(log) == [(1, b"b", b"2"), (3, b"c", b"3"), (4, b"d", b"4")]
    assert kafka_python_records(disk, log) == visible(log)


def test_dirty_ratio_must_exceed_the_threshold_and_the_dirtiest_log_is_chosen(tmp_path):
    clock = VirtualClock(10_000)
    disk = Disk(tmp_path)
    logs = []
    for p, (n, ratio_cfg) in enumerate([(6, 0.5), (12, 0.5)]):
        log = Log(disk, f"t-{p}", "t", p, LogConfig(**{**BASE, "min_cleanable_dirty_ratio": ratio_cfg}),
                  Scheduler(clock), EventLog(clock), hw_follows_leo=True)
        for i in range(n):
            put(log, b"k%d" % (i % 2), b"v%d" % i)
        logs.append(log)
    cleaner = LogCleaner(disk)
    picked = cleaner.grab_filthiest(logs, clock.now_ms())
    assert picked is not None and picked[0] is logs[1] or picked[0] is logs[0]
    ratios = [cleaner.to_clean(log, clock.now_ms()).ratio for log in logs]
    assert picked[0] is logs[ratios.index(max(ratios))]
    cleaner.clean(logs[0], clock.now_ms())
    cleaner.clean(logs[1], clock.now_ms())
    # Freshly cleaned: nothing dirty, nothing chosen.
    assert cleaner.grab_filthiest(logs, clock.now_ms()) is None
    # The threshold is strict: a ratio equal to it does not qualify.
    log = logs[0]
    ltc = cleaner.to_clean(log, clock.now_ms())
    log.update_config(log.config.replace(min_cleanable_dirty_ratio=0.0))
    assert ltc.ratio == 0.0 and cleaner.grab_filthiest([log], clock.now_ms()) is None


def test_ratio_crossing_the_threshold(env):
    disk, clock = env
    log = open_log(disk, clock, min_cleanable_dirty_ratio=0.6)
    cleaner = LogCleaner(disk)
    for i in range(40):
        put(log, b"k%d" % (i % 4), b"v%d" % i)
    cleaner.clean(log, clock.now_ms())  # now mostly clean
    seen = []
    for i in range(200):
        put(log, b"k%d" % (i % 4), b"w%d" % i)
        ltc = cleaner.to_clean(log, clock.now_ms())
        chosen = cleaner.grab_filthiest([log], clock.now_ms()) is not None
        seen.append((ltc.ratio, chosen))
        if chosen:
            break
    assert seen[-1][1] and seen[-1][0] > 0.6
    assert all(r <= 0.6 for r, c in seen[:-1])


def test_min_compaction_lag_keeps_young_segments_dirty(env):
    disk, clock = env
    log = open_log(disk, clock, min_compaction_lag_ms=5000)
    for i in range(12):
        put(log, b"k", b"v%d" % i)
    ltc = LogCleaner(disk).to_clean(log, clock.now_ms())
    assert ltc.first_uncleanable_offset == 0 and ltc.cleanable_bytes == 0
    clock.advance(5001)
    ltc = LogCleaner(disk).to_clean(log, clock.now_ms())
    assert ltc.first_uncleanable_offset == log.active_segment.base_offset


def test_max_compaction_lag_forces_a_clean_below_the_ratio(env):
    disk, clock = env
    log = open_log(disk, clock, min_cleanable_dirty_ratio=0.99, max_compaction_lag_ms=1000)
    for i in range(12):
        put(log, b"k%d" % i, b"v")  # all distinct: dirty ratio 1.0 but ... make it low:
    cleaner = LogCleaner(disk)
    cleaner.clean(log, clock.now_ms())
    put(log, b"new", b"x")
    log.roll()
    assert cleaner.grab_filthiest([log], clock.now_ms()) is None  # ratio small, lag not passed
    clock.advance(1001)
    picked = cleaner.grab_filthiest([log], clock.now_ms())
    assert picked is not None and picked[1].max_compaction_lag_exceeded


def test_keyless_record_on_a_compacted_topic_is_refused_and_nothing_is_appended(env):
    disk, clock = env
    log = open_log(disk, clock)
    put(log, b"k", b"v")
    with pytest.raises(InvalidRecordError, match="Compacted topic cannot accept message without key") as err:
        log.append_as_leader([SimpleRecord(b"ok", key=b"k2"), SimpleRecord(b"no key")], 0)
    assert err.value.code == 87
    batch = build_batch([SimpleRecord(b"no key")])
    with pytest.raises(InvalidRecordError):
        log.append_as_leader(batch, 0)
    assert log.log_end_offset == 1 and visible(log) == [(0, b"k", b"v")]
    # A delete-policy topic takes keyless records.
    plain = Log(disk, "u-0", "u", 0, LogConfig(), Scheduler(clock), EventLog(clock), hw_follows_leo=True)
    plain.append_as_leader([SimpleRecord(b"no key")], 0)
    assert plain.log_end_offset == 1


def test_batches_keep_base_offset_last_offset_delta_and_codec(env):
    disk, clock = env
    log = open_log(disk, clock, segment_bytes=2000)
    recs = [SimpleRecord(b"v%d" % i, key=b"k%d" % (i % 3), timestamp=20_000 + i) for i in range(9)]
    log.append_as_leader(recs, 0, compression=CompressionType.GZIP)
    put(log, b"k0", None)
    log.roll()
    LogCleaner(disk).clean(log, clock.now_ms())
    hs = [h for s in log.segments for _, h in s.iter_headers()]
    assert (hs[0].base_offset, hs[0].last_offset_delta, hs[0].records_count) == (0, 8, 2)
    assert hs[0].compression == CompressionType.GZIP
    assert visible(log) == [(7, b"k1", b"v7"), (8, b"k2", b"v8"), (9, b"k0", None)]
    assert [r.timestamp for r in log.records()][:2] == [20_007, 20_008]
    assert kafka_python_records(disk, log) == visible(log)


STEPS = ["cleaned", "swap", "old_deleted", "swapped", "checkpoint"]


@pytest.mark.parametrize("crash_at", range(0, 40))
def test_a_crash_at_any_step_of_the_swap_recovers_to_a_consistent_log(tmp_path, crash_at):
    disk = Disk(tmp_path)
    clock = VirtualClock(10_000)
    log = open_log(disk, clock)
    for i in range(30):
        put(log, b"k%d" % (i % 4), b"v%d" % i)
    put(log, b"k1", None)
    log.flush()
    expected = latest(log)
    steps = []

    def hook(step, segment):
        steps.append((step, segment))
        if len(steps) == crash_at + 1:
            raise Crash

    cleaner = LogCleaner(disk, step_hook=hook)
    try:
        cleaner.clean(log, clock.now_ms())
        crashed = False
    except Crash:
        crashed = True
    log.cancel_tasks()
    disk.crash()
    reopened = open_log(disk, clock)
    assert latest(reopened) == expected
    offsets = [o for o, _, _ in visible(reopened)]
    assert offsets == sorted(set(offsets))
    assert not [n for n in disk.listdir("t-0") if n.endswith((".cleaned", ".swap"))]
    assert kafka_python_records(disk, reopened) == visible(reopened)
    if not crashed:
        assert crash_at >= len(steps)
    # the next pass finishes the job
    LogCleaner(disk).clean(reopened, clock.now_ms())
    assert latest(reopened) == expected
    below_active = [k for o, k, _ in visible(reopened) if o < reopened.active_segment.base_offset]
    assert len(below_active) == len(set(below_active))


def test_recovery_completes_a_finished_swap_and_drops_an_unfinished_one(env):
    disk, clock = env
    log = open_log(disk, clock)
    for i in range(20):
        put(log, b"k%d" % (i % 2), b"v%d" % i)
    log.flush()
    expected = latest(log)

    swaps = []

    def stop_when_the_swap_files_are_ready(step, segment):
        swaps.append(step)
        if swaps.count("swap") == 3:  # .log/.index/.timeindex.swap written; old segment still in place
            raise Crash

    with pytest.raises(Crash):
        LogCleaner(disk, step_hook=stop_when_the_swap_files_are_ready).clean(log, clock.now_ms())
    log.cancel_tasks()
    assert any(n.endswith(".log.swap") for n in disk.listdir("t-0"))
    reopened = open_log(disk, clock)
    done = reopened.events.of_kind("swap_completed")
    assert done and done[0].segment == 0 and 0 in done[0].replaced
    assert latest(reopened) == expected


def test_events_show_every_step_in_order(env):
    disk, clock = env
    log = open_log(disk, clock)
    for i in range(12):
        put(log, b"k%d" % (i % 2), b"v%d" % i)
    LogCleaner(disk).clean(log, clock.now_ms())
    kinds = [e.kind for e in log.events.of_kind("offset_map_filled", "segments_cleaned", "cleaner_swap_step",
                                                  "cleaner_point_moved", "cleaner_pass_finished")]
    assert kinds[0] == "offset_map_filled"
    first_group = kinds.index("segments_cleaned")
    assert kinds[first_group - 1] == "cleaner_swap_step"  # the .cleaned files are written first
    steps = [e.step for e in log.events.of_kind("cleaner_swap_step")][:8]
    assert steps[:4] == ["cleaned", "swap", "swap", "swap"]
    assert steps[4] == "old_deleted" and steps[5:8] == ["swapped"] * 3
    assert kinds[-2:] == ["cleaner_point_moved", "cleaner_pass_finished"]
    fill = log.events.of_kind("offset_map_filled")[0]
    assert fill.keys[0] == ["k0", 0] and fill.map_entries >= 1


# ---- property: any interleaving of appends, tombstones, cleans and crashes -----------------------

ops = st.lists(st.one_of(
    st.tuples(st.just("put"), st.integers(0, 5), st.integers(0, 40)),
    st.tuples(st.just("delete"), st.integers(0, 5), st.just(0)),
    st.tuples(st.just("clean"), st.integers(0, 30), st.just(0)),
    st.tuples(st.just("crash"), st.integers(0, 30), st.just(0)),
    st.tuples(st.just("wait"), st.integers(0, 1500), st.just(0)),
), min_size=1, max_size=45)


@settings(max_examples=60, deadline=None)
@given(ops)
def test_any_interleaving_leaves_every_key_at_its_latest_value(ops):
    with tempfile.TemporaryDirectory() as tmp:
        disk = Disk(tmp)
        clock = VirtualClock(10_000)
        log = open_log(disk, clock)
        model: dict[bytes, bytes | None] = {}
        tomb_offset: dict[bytes, int] = {}
        horizon: dict[bytes, int] = {}  # when a tombstone may go (after the pass that stamped it)
        for op, a, b in ops:
            if op == "put":
                key = b"k%d" % a
                put(log, key, b"v%d-" % b * (1 + b % 7))
                model[key] = b"v%d-" % b * (1 + b % 7)
                tomb_offset.pop(key, None)
                horizon.pop(key, None)
            elif op == "delete":
                key = b"k%d" % a
                put(log, key, None)
                model[key] = None
                tomb_offset[key] = log.log_end_offset - 1
                horizon.pop(key, None)
            elif op == "wait":
                clock.advance(a)
            else:
                log.flush()  # what was acknowledged before a clean or crash is on disk
                if op == "clean":
                    steps = []

                    def hook(step, segment, limit=a):
                        steps.append(step)
                        if len(steps) > limit:
                            raise Crash
                    cleaner = LogCleaner(disk, step_hook=hook)
                    ltc = cleaner.to_clean(log, clock.now_ms())
                    try:
                        cleaner.clean(log, clock.now_ms(), ltc)
                        crashed = False
                    except Crash:
                        crashed = True
                    # the pass stamps tombstones it rewrites; after a crash only if recovery
                    # finished its swap, so the horizon is then a possibility, not a certainty
                    for key, off in tomb_offset.items():
                        if key not in horizon and off < ltc.first_uncleanable_offset:
                            horizon[key] = clock.now_ms() + 1000
                    if not crashed:
                        continue
                log.cancel_tasks()
                disk.crash()
                log = open_log(disk, clock)
            seen = {}
            last = -1
            for r in log.records():
                assert r.offset > last
                last = r.offset
                seen[r.key] = r.value
            for key, value in model.items():
                if value is not None:
                    assert seen.get(key, b"<missing>") == value
                elif key in seen:
                    assert seen[key] is None
                else:
                    # gone: only once a pass ran at or after the horizon of the pass that stamped it
                    assert key in horizon and clock.now_ms() >= horizon[key]
        for seg in log.segments:
            MemoryRecords(disk.read_all(seg.log_rel))
        assert kafka_python_records(disk, log) == visible(log)


# ---- the command line ----------------------------------------------------------------------------

def test_clean_command_runs_one_pass_and_prints_what_it_did(tmp_path):
    run = [sys.executable, "-m", "engine"]
    subprocess.run(run + ["produce", "--dir", str(tmp_path), "--topic", "t", "--count", "300",
                          "--key-cardinality", "10", "--segment-bytes", "4096", "--value-bytes", "20"], check=True,
                   capture_output=True)
    r = subprocess.run(run + ["clean", str(tmp_path / "t-0"), "--json", "--segment-bytes", "4096"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["cleaned"] and out["records_after"] == 10 and out["map_entries"] == 10
    assert (tmp_path / "cleaner-offset-checkpoint").read_text() == f"0\n1\nt 0 {out['end_offset']}\n"
    assert not [p.name for p in (tmp_path / "t-0").iterdir() if p.name.endswith(".deleted")]
    text = subprocess.run(run + ["clean", str(tmp_path / "t-0")], capture_output=True, text=True)
    assert text.returncode == 0 and "nothing cleanable" in text.stdout and "not cleaned" in text.stdout
    low = subprocess.run(run + ["clean", str(tmp_path / "t-0"), "--min-cleanable-dirty-ratio", "2"],
                         capture_output=True, text=True)
    assert low.returncode == 1 and "min_cleanable_dirty_ratio must be at most 1" in low.stderr
    bad = subprocess.run(run + ["clean", str(tmp_path)], capture_output=True, text=True)
    assert bad.returncode == 1 and "not a partition directory name" in bad.stderr


def test_compacted_log_rolls_by_max_compaction_lag(env):
    disk, clock = env
    log = open_log(disk, clock, segment_bytes=100_000, max_compaction_lag_ms=1000)
    log.append_as_leader([SimpleRecord(b"v", key=b"k", timestamp=0)], 0)
    log.append_as_leader([SimpleRecord(b"v", key=b"k", timestamp=1001)], 0)
    assert [s.base_offset for s in log.segments] == [0, 1]
    assert log.events.of_kind("segment_rolled")[-1].reason == "time"


def test_keyless_produce_to_a_compacted_topic_in_a_cluster_gets_invalid_record(tmp_path):
    from engine.cluster.cluster import Cluster
    from engine.cluster.commands import apply_command
    from engine.cluster.config import ClusterConfig
    c = Cluster(Disk(tmp_path / "data"), ClusterConfig(brokers=3), seed=1)
    apply_command(c, {"cmd": "create_topic", "topic": "k", "config": {"cleanup.policy": "compact"}})
    apply_command(c, {"cmd": "advance", "ms": 500})
    bad = apply_command(c, {"cmd": "produce", "topic": "k", "value": "no key"})
    good = apply_command(c, {"cmd": "produce", "topic": "k", "value": "v", "key": "a"})
    apply_command(c, {"cmd": "advance", "ms": 200})
    res = c.produce_results[bad["request_id"]]
    assert (res.status, res.error) == ("error", "INVALID_RECORD") and "without key" in res.message
    assert c.produce_results[good["request_id"]].status == "ok"
    leader = c.controller.partition("k", 0).leader
    assert c.brokers[leader].partitions[("k", 0)].log.log_end_offset == 1


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.booleans(), st.integers(0, 5)), min_size=1, max_size=12),
       st.sets(st.integers(0, 11)))
def test_repacked_batch_equals_the_rebuilt_one(recs, keep):
    from engine.log.cleaner import rebuild_batch, record_keys, repack_batch
    from engine.records import decode_batch
    simple = [SimpleRecord(None if tomb else b"v%d" % i, key=None if k == 3 else b"k%d" % k, timestamp=100 + d)
              for i, (k, tomb, d) in enumerate(recs)]
    data = build_batch(simple, base_offset=40)
    h = read_header(data, 0)
    scanned = record_keys(data, 0, h)
    batch = decode_batch(data)
    assert [(o, k, t) for o, k, t, *_ in scanned] == [(r.offset, r.key, r.value is None) for r in batch.records]
    kept = [r for i, r in enumerate(scanned) if i in keep]
    if not kept or kept[0][5] != 0:
        return
    wanted = {r[0] for r in kept}
    assert repack_batch(h, data, kept) == rebuild_batch(batch, [r for r in batch.records if r.offset in wanted], None)


def test_scheduled_cleaner_cleans_when_the_ratio_crosses_the_threshold(env):
    disk, clock = env
    sched = Scheduler(clock)
    log = Log(disk, "t-0", "t", 0, LogConfig(**BASE), sched, EventLog(clock), hw_follows_leo=True)
    LogCleaner(disk).schedule(sched, [log], backoff_ms=15000)
    for i in range(20):
        put(log, b"k%d" % (i % 2), b"v%d" % i)
    sched.advance(14999)
    assert not log.events.of_kind("cleaner_pass_finished")
    sched.advance(1)
    check = log.events.of_kind("cleaner_check")[-1]
    assert check.chosen and check.ratio > check.min_cleanable_ratio
    assert log.events.of_kind("cleaner_pass_finished")


def test_an_aborted_transactions_records_neither_supersede_nor_survive_and_open_ones_wait(tmp_path):
    """Kafka's cleaner with transactions: an aborted offset commit must not replace the committed
    one before it, and nothing at or past an open transaction (the LSO) is cleaned."""
    from engine.cluster.txn_offsets import rebuild
    from engine.group.offsets import OffsetKey, OffsetValue, encode_key, encode_value
    disk, clock = Disk(tmp_path), VirtualClock()
    log = open_log(disk, clock, segment_bytes=100_000)
    key = encode_key(OffsetKey("g", "in", 0))

    def txn_write(offset, epoch=0):
        log.append_as_leader([SimpleRecord(encode_value(OffsetValue(offset, -1, "", 0)), key=key)], 0,
                             producer_id=7, producer_epoch=epoch, base_sequence=-1, is_transactional=True)

    txn_write(4)
    log.append_txn_marker(True, 7, 0, 0, 0)
    txn_write(9)
    log.append_txn_marker(False, 7, 0, 0, 0)
    log.roll()
    txn_write(12)                                  # still open at the cleaning: its segment waits
    log.roll()
    put(log, b"other", b"x")
    log.roll()
    result = LogCleaner(disk).clean(log, clock.now_ms())
    assert (result.first_dirty_offset, result.end_offset) == (0, 4)   # up to the LSO, a segment boundary
    assert rebuild(log) == ({"g": {("in", 0): 4}}, {7: {"g": {("in", 0): 12}}})
    values = [r.value for b in log.batches(0, log.log_end_offset) if not b.is_control for r in b.records]
    assert encode_value(OffsetValue(9, -1, "", 0)) not in values          # the aborted record is gone
    assert encode_value(OffsetValue(4, -1, "", 0)) in values              # the committed one stays
    assert encode_value(OffsetValue(12, -1, "", 0)) in values             # the open one is past the LSO


# ---- property: batches copied or dropped whole = the per-record rewrite ---------------------------

batch_ops = st.lists(st.one_of(
    # a batch: (key, -1 for none; value, 0 for a tombstone) per record, compressed, from a producer
    # (False, "idempotent" or "txn": a transactional producer whose transactions "end" closes)
    st.tuples(st.just("batch"), st.lists(st.tuples(st.integers(-1, 6), st.integers(0, 5)), min_size=1, max_size=6),
              st.booleans(), st.sampled_from([False, "idempotent", "txn"])),
    st.tuples(st.just("end"), st.just(()), st.booleans(), st.just(False)),
    st.tuples(st.just("clean"), st.integers(1, 1 << 12), st.just(False), st.just(False)),
    st.tuples(st.just("wait"), st.integers(0, 1500), st.just(False), st.just(False)),
), min_size=1, max_size=30)


def _two_logs(tmp):
    out = []
    for name in ("shortcuts", "per-record"):
        disk, clock = Disk(f"{tmp}/{name}"), VirtualClock(10_000)
        log = Log(disk, "t-0", "t", 0, LogConfig(**{**BASE, "segment_bytes": 700}), Scheduler(clock),
                  EventLog(clock), hw_follows_leo=True, schedule_tasks=False)
        out.append((disk, clock, log))
    return out


@settings(max_examples=80, deadline=None)
@given(batch_ops)
def test_whole_batch_shortcuts_write_the_same_bytes_as_the_per_record_rewrite(ops):
    """The cleaner copies a batch whole when the offset map keeps all of it and drops it when
    the map keeps none of it, without reading its records; the per-record path must come to
    the same bytes on disk, the same counts and the same events, whatever the batches hold
    (keyless records, tombstones, compression, producers, transactions committed and aborted,
    a map too small for the dirty range)."""
    from engine.records import build_end_txn_marker
    with tempfile.TemporaryDirectory() as tmp:
        logs = _two_logs(tmp)
        seq = {7: 0, 9: 0}
        txn_open = False
        for op, a, flag, producer in ops:
            if op == "clean" and txn_open:     # an open transaction would stop the cleaning at its start
                ends = [a % 2 == 0]
            elif op == "end" and txn_open:
                ends = [flag]
            else:
                ends = []
            for commit in ends:
                for disk, clock, log in logs:
                    log.append_as_follower(build_end_txn_marker(commit, 9, 0, 0, base_offset=log.log_end_offset,
                                                                now_ms=clock.now_ms()))
                txn_open = False
            pid = 9 if producer == "txn" else 7
            for disk, clock, log in logs:
                if op == "batch":
                    recs = [SimpleRecord(b"v%d" % v if v else None, key=b"k%d" % k if k >= 0 else None,
                                         timestamp=clock.now_ms()) for k, v in a]
                    log.append_as_follower(build_batch(
                        recs, base_offset=log.log_end_offset,
                        compression=CompressionType.GZIP if flag else CompressionType.NONE,
                        producer_id=pid if producer else -1, producer_epoch=0 if producer else -1,
                        base_sequence=seq[pid] if producer else -1, is_transactional=producer == "txn"))
                elif op == "wait":
                    clock.advance(a)
            if op == "batch" and producer:
                seq[pid] += len(a)
                txn_open = txn_open or producer == "txn"
            if op != "clean":
                continue
            results = []
            for i, (disk, clock, log) in enumerate(logs):
                log.roll()
                cleaner = LogCleaner(disk, dedupe_buffer_size=24 * a)   # from one entry to a map that never fills
                cleaner.batch_shortcuts = i == 0
                result = cleaner.clean(log, clock.now_ms())
                results.append((result.to_dict(), [disk.read_all(s.log_rel) for s in log.segments],
                                [e.to_dict() for e in log.events.envelopes]))
            assert results[0] == results[1]


def test_a_group_cleaned_to_nothing_stays_an_empty_segment_and_the_next_pass_merges_it(env):
    """Kafka's cleanSegments swaps in the cleaned segment whatever its size (an empty one keeps
    the group's base offset, so the log start offset does not move), and groupSegmentsBySize
    lets an empty segment join the group before it."""
    disk, clock = env
    log = open_log(disk, clock)
    for i in range(12):
        put(log, b"k0", b"v%d" % i)
    for i in range(6):
        put(log, b"k1", b"w%d" % i)
    log.roll()
    LogCleaner(disk).clean(log, clock.now_ms())
    sizes = {s.base_offset: s.size for s in log.segments[:-1]}
    assert sizes[0] == 0 and log.log_start_offset == 0            # 0..3: all superseded by k0's last value
    assert visible(log) == [(11, b"k0", b"v11"), (17, b"k1", b"w5")]
    for i in range(6):
        put(log, b"k1", b"x%d" % i)
    log.roll()
    result = LogCleaner(disk).clean(log, clock.now_ms())
    assert result.groups[0] == [0, 4, 8, 12, 16]                   # the empty segments joined the first group
    # the earlier empties are gone; this pass left its own (18..21: x0..x3, superseded by x5)
    assert [(s.base_offset, s.size > 0) for s in log.segments[:-1]] == [(0, True), (18, False), (22, True)]
    assert visible(log) == [(11, b"k0", b"v11"), (23, b"k1", b"x5")]


def test_an_empty_segment_joins_a_group_whatever_its_offset_range(env):
    """groupSegmentsBySize skips the int32 offset-range check for an empty segment (it holds
    no offsets), so one left empty before a gap of more than 2^31 offsets still merges."""
    disk, clock = env
    log = open_log(disk, clock)
    far = 2**31 + 50
    for base, key in ((0, b"k0"), (10, b"k1"), (far, b"k1")):
        log.append_as_follower(build_batch([SimpleRecord(b"v%d" % base, key=key)], base_offset=base))
        log.roll()
    first = LogCleaner(disk).clean(log, clock.now_ms())
    assert first.groups == [[0], [1], [far]]                       # 1 spans the gap: it cannot join 0
    assert [(s.base_offset, s.size) for s in log.segments[:2]] == [(0, log.segments[0].size), (1, 0)]
    log.append_as_follower(build_batch([SimpleRecord(b"x", key=b"k2")], base_offset=far + 10))
    log.roll()
    second = LogCleaner(disk).clean(log, clock.now_ms())
    assert second.groups[0] == [0, 1]
    assert visible(log) == [(0, b"k0", b"v0"), (far, b"k1", b"v%d" % far), (far + 10, b"k2", b"x")]
