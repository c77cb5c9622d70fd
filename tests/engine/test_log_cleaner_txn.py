"""The log cleaner and transactions, as Kafka's ``LogCleaner`` with ``CleanedTransactionMetadata``
and KIP-534: an aborted transaction's records go; a transaction marker stays while any batch of
its transaction is in the log, then gets a delete horizon (``delete.retention.ms``) and goes with
the first pass after it; the cleaned segment's ``.txnindex`` lists exactly the ABORT markers it
keeps; ``read_committed`` readers see the same values before and after every pass."""
from __future__ import annotations

import tempfile

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record import MemoryRecords

from engine.clock import VirtualClock
from engine.disk import Disk
from engine.log.cleaner import LogCleaner
from engine.log.transaction_index import TransactionIndex
from engine.records import ControlRecordType, SimpleRecord, decode_batch, read_end_txn_marker
from test_log_cleaner import Crash, put
from test_log_cleaner import open_log as open_compacted_log


def open_log(disk, clock, **cfg):
    return open_compacted_log(disk, clock, **{"segment_bytes": 400, **cfg})


def txn_put(log, pid, key, value):
    log.append_as_leader([SimpleRecord(value, key=key)], 0, producer_id=pid, producer_epoch=0, base_sequence=-1,
                         is_transactional=True)


def end_txn(log, pid, commit):
    log.append_txn_marker(commit, pid, 0, 0, 0)


def read_committed(log):
    """What a read_committed consumer fetches from the log start: below the LSO, skipping the
    batches the ``.txnindex`` files name as aborted and every control batch."""
    bound = log.last_stable_offset
    aborted: dict[int, list] = {}
    for t in log.aborted_transactions(log.log_start_offset, bound):
        aborted.setdefault(t.producer_id, []).append((t.first_offset, t.last_offset))
    out = []
    for b in log.batches(log.log_start_offset, bound):
        if b.is_control or any(f <= b.base_offset <= la for f, la in aborted.get(b.producer_id, ())):
            continue
        out.extend((r.offset, r.key, r.value) for r in b.records if r.offset < bound)
    return out


def table(records):
    """The key → value table a consumer builds (a tombstone removes its key)."""
    out = {}
    for _, key, value in records:
        if value is None:
            out.pop(key, None)
        else:
            out[key] = value
    return out


def markers(log):
    """offset → (producer id, "COMMIT"/"ABORT", delete horizon or None, segment base) of every
    control batch that still holds its marker record."""
    out = {}
    for seg in log.segments:
        data = seg.disk.read_all(seg.log_rel)
        for pos, h in seg.iter_headers(data=data):
            if h.is_control and h.records_count:
                marker = read_end_txn_marker(decode_batch(data, pos).records[0])
                out[h.base_offset] = (h.producer_id, ControlRecordType(marker.type).name, h.delete_horizon_ms,
                                      seg.base_offset)
    return out


def batch_ranges(log):
    """(base offset, last offset, producer id, is control) of every batch, empty ones included."""
    return [(h.base_offset, h.last_offset, h.producer_id, h.is_control)
            for seg in log.segments for _, h in seg.iter_headers()]


def check_txn_indexes(log, first_offsets):
    """Each segment's .txnindex lists exactly the ABORT markers the segment holds, with the
    first offset of the transaction each one ends."""
    aborts = {o: m for o, m in markers(log).items() if m[1] == "ABORT"}
    for seg in log.segments:
        entries = TransactionIndex(log.disk, f"{log.dir}/{seg.base_offset:020d}.txnindex").entries()
        want = sorted((m[0], o) for o, m in aborts.items() if m[3] == seg.base_offset)
        assert sorted((t.producer_id, t.last_offset) for t in entries) == want, seg.base_offset
        for t in entries:
            assert t.first_offset == first_offsets[t.last_offset]
    names = log.disk.listdir(log.dir)
    assert not [n for n in names if n.endswith(".txnindex") and int(n[:20]) not in log._bases]


@pytest.fixture
def env(tmp_path):
    return Disk(tmp_path), VirtualClock(10_000)


def test_markers_stay_while_their_transaction_has_a_batch_then_go_one_horizon_after_the_pass_that_found_none(env):
    """Kafka's three-pass life of a marker: the pass that removes a transaction's last batch keeps
    the marker as it is; the next pass finds nothing of the transaction and stamps the delete
    horizon (bit 6, baseTimestamp = now + delete.retention.ms); the first pass at or after the
    horizon removes it. The aborted transaction's .txnindex entry lives exactly as long as its marker."""
    disk, clock = env
    log = open_log(disk, clock, segment_bytes=100_000)
    txn_put(log, 7, b"a", b"a-committed")          # 0, committed at 1
    end_txn(log, 7, True)
    txn_put(log, 7, b"b", b"b-aborted")            # 2, aborted at 3
    end_txn(log, 7, False)
    put(log, b"a", b"a-plain")                     # 4: supersedes offset 0
    put(log, b"b", b"b-plain")                     # 5
    log.roll()
    txn_put(log, 7, b"c", b"c-committed")          # 6..7: producer 7's last batch lies past the cleaning
    end_txn(log, 7, True)
    log.roll()
    first_offsets = {3: 2}
    view = table(read_committed(log))
    assert view == {b"a": b"a-plain", b"b": b"b-plain", b"c": b"c-committed"}

    # pass 1: the aborted record and the superseded committed one go; each marker saw a batch of
    # its transaction (the third, at 7, ends the transaction of offset 6, which stays)
    r1 = LogCleaner(disk).clean(log, clock.now_ms())
    assert (r1.aborted_removed, r1.superseded, r1.markers_kept, r1.markers_removed) == (1, 1, 3, 0)
    assert {o: m[:3] for o, m in markers(log).items() if o < 6} == {1: (7, "COMMIT", None), 3: (7, "ABORT", None)}
    assert [b for b in batch_ranges(log) if b[0] < 6] == [(1, 1, 7, True), (3, 3, 7, True), (4, 4, -1, False),
                                                          (5, 5, -1, False)]
    check_txn_indexes(log, first_offsets)
    assert table(read_committed(log)) == view

    # pass 2 (something new to clean): nothing of either transaction is left -> horizons stamped
    clock.advance(100)
    put(log, b"d", b"d1")
    log.roll()
    now2 = clock.now_ms()
    r2 = LogCleaner(disk).clean(log, now2)
    assert (r2.markers_kept, r2.markers_removed) == (3, 0)
    horizon = now2 + 1000
    assert {o: m[:3] for o, m in markers(log).items() if o < 6} == {1: (7, "COMMIT", horizon),
                                                                     3: (7, "ABORT", horizon)}
    assert log.events.of_kind("segments_cleaned")[-1].marker_horizon_ms == horizon
    check_txn_indexes(log, first_offsets)
    assert table(read_committed(log)) == {**view, b"d": b"d1"}

    # pass 3 just before the horizon: kept, the horizon unchanged
    clock.advance(999)
    put(log, b"d", b"d2")
    log.roll()
    r3 = LogCleaner(disk).clean(log, clock.now_ms())
    assert (r3.markers_kept, r3.markers_removed) == (3, 0)
    assert markers(log)[1][2] == horizon and markers(log)[3][2] == horizon and markers(log)[7][2] is None

    # pass 4 at the horizon: both markers go, and with the ABORT marker its .txnindex entry
    clock.advance(1)
    put(log, b"d", b"d3")
    log.roll()
    r4 = LogCleaner(disk).clean(log, clock.now_ms())
    assert (r4.markers_kept, r4.markers_removed) == (1, 2)      # the marker at 7: its transaction's record stays
    assert sorted(markers(log)) == [7]
    assert not [n for n in disk.listdir(log.dir) if n.endswith(".txnindex")]
    check_txn_indexes(log, first_offsets)
    assert table(read_committed(log)) == {**view, b"d": b"d3"}
    # independent reader: kafka-python parses every cleaned segment (CRCs, the stamped markers)
    for seg in log.segments:
        mr = MemoryRecords(disk.read_all(seg.log_rel))
        while (batch := mr.next_batch()) is not None:
            assert batch.validate_crc()


def test_a_marker_that_is_its_producers_last_batch_stays_as_an_empty_batch(env):
    """Kafka retains a producer's last batch, emptied (RETAIN_EMPTY), so the producer's epoch
    survives for fencing: a discardable marker past its horizon loses its record, not its batch."""
    disk, clock = env
    log = open_log(disk, clock, segment_bytes=100_000)
    txn_put(log, 7, b"a", b"x")
    end_txn(log, 7, False)
    put(log, b"a", b"y")
    log.roll()
    for _ in range(3):                             # remove the data, stamp the horizon, then remove
        LogCleaner(disk).clean(log, clock.now_ms())
        clock.advance(1000)
        put(log, b"z", b"%d" % clock.now_ms())
        log.roll()
    assert markers(log) == {}
    assert (1, 1, 7, True) in batch_ranges(log)    # the ABORT marker's batch, now empty
    assert not [n for n in disk.listdir(log.dir) if n.endswith(".txnindex")]
    reopened_view = table(read_committed(log))
    assert reopened_view[b"a"] == b"y"
    log.close()
    again = open_log(disk, clock, segment_bytes=100_000)    # the empty control batch replays cleanly
    assert table(read_committed(again)) == reopened_view
    # once the producer writes again, the empty batch is not its last: the next pass drops it
    # (Kafka's DELETE_EMPTY), while the new transaction's marker is kept
    txn_put(again, 7, b"b", b"w")
    end_txn(again, 7, True)
    again.roll()
    LogCleaner(disk).clean(again, clock.now_ms())
    assert (1, 1, 7, True) not in batch_ranges(again)
    assert [m[:2] for m in markers(again).values()] == [(7, "COMMIT")]
    assert table(read_committed(again)) == {**reopened_view, b"b": b"w"}


# the pass below takes 39 steps: its first two groups (one with a .txnindex, one without), and no crash
@pytest.mark.parametrize("crash_at", [*range(19), 39])
def test_a_crash_at_any_step_keeps_the_txnindex_and_read_committed_view(tmp_path, crash_at):
    """The cleaned segment's .txnindex goes through .cleaned -> .swap -> its name with the other
    files; recovery finishes or abandons it with them, so after a crash at any step the index
    still matches the markers and a read_committed reader sees what it saw before."""
    disk, clock = Disk(tmp_path), VirtualClock(10_000)
    log = open_log(disk, clock)
    first_offsets = {}
    for i in range(8):
        txn_put(log, 7, b"k%d" % (i % 3), b"t%d" % i)
        first = log.log_end_offset - 1
        end_txn(log, 7, i % 2 == 0)
        if i % 2:
            first_offsets[log.log_end_offset - 1] = first
        put(log, b"p%d" % (i % 2), b"v%d" % i)
    txn_put(log, 8, b"open", b"o")                 # an open transaction: the LSO stops the cleaning here
    log.flush()
    for name in disk.listdir(log.dir):             # Log.flush leaves .txnindex files to the page cache
        if name.endswith(".txnindex"):
            disk.fsync(f"{log.dir}/{name}")
    view = table(read_committed(log))
    steps = []

    def hook(step, segment):
        steps.append(step)
        if len(steps) == crash_at + 1:
            raise Crash

    try:
        LogCleaner(disk, step_hook=hook).clean(log, clock.now_ms())
    except Crash:
        pass
    assert len(steps) == min(crash_at + 1, 39)
    log.cancel_tasks()
    disk.crash()
    reopened = open_log(disk, clock)
    assert not [n for n in disk.listdir("t-0") if n.endswith((".cleaned", ".swap"))]
    check_txn_indexes(reopened, first_offsets)
    assert table(read_committed(reopened)) == view


# ---- property: any interleaving of plain and transactional writes, markers and passes --------------

ops = st.lists(st.one_of(
    st.tuples(st.just("put"), st.integers(0, 4), st.integers(0, 3)),         # value 0: a tombstone
    st.tuples(st.just("txn"), st.integers(7, 8), st.integers(0, 4), st.integers(0, 3)),
    st.tuples(st.just("end"), st.integers(7, 8), st.booleans()),
    st.tuples(st.just("end"), st.integers(7, 8), st.booleans()),
    st.tuples(st.just("roll"),),
    st.tuples(st.just("wait"), st.integers(0, 1500)),
    st.tuples(st.just("clean"), st.integers(1, 64)),                           # offset-map slots
), min_size=1, max_size=40)


class Model:
    """What was written: each data record's key, value and transaction; each transaction's data
    offsets, outcome and marker."""

    def __init__(self) -> None:
        self.records: dict[int, tuple] = {}        # offset -> (key, value, txn id or None)
        self.txns: dict[int, dict] = {}            # txn id -> {pid, offsets, outcome, marker}
        self.open: dict[int, int] = {}             # pid -> open txn id
        self.by_marker: dict[int, int] = {}        # marker offset -> txn id

    def end(self, log, pid: int, commit: bool) -> None:
        end_txn(log, pid, commit)
        tid = self.open.pop(pid)
        self.txns[tid]["outcome"] = "committed" if commit else "aborted"
        self.txns[tid]["marker"] = log.log_end_offset - 1
        self.by_marker[log.log_end_offset - 1] = tid

    def outcome(self, offset: int) -> str:
        txn = self.records[offset][2]
        return "committed" if txn is None else self.txns[txn]["outcome"]


@settings(max_examples=80, deadline=None)
@given(ops)
def test_cleaning_keeps_committed_latest_values_drops_aborted_ones_and_removes_markers_only_when_allowed(ops):
    with tempfile.TemporaryDirectory() as tmp:
        disk, clock = Disk(tmp), VirtualClock(10_000)
        log = open_log(disk, clock)
        m = Model()
        for op in ops:
            kind = op[0]
            if kind == "put":
                put(log, b"k%d" % op[1], b"v%d" % op[2] if op[2] else None)
                m.records[log.log_end_offset - 1] = (b"k%d" % op[1], b"v%d" % op[2] if op[2] else None, None)
            elif kind == "txn":
                pid = op[1]
                if pid not in m.open:
                    m.open[pid] = len(m.txns)
                    m.txns[m.open[pid]] = {"pid": pid, "offsets": [], "outcome": "open", "marker": None}
                txn_put(log, pid, b"k%d" % op[2], b"t%d" % op[3] if op[3] else None)
                offset = log.log_end_offset - 1
                m.records[offset] = (b"k%d" % op[2], b"t%d" % op[3] if op[3] else None, m.open[pid])
                m.txns[m.open[pid]]["offsets"].append(offset)
            elif kind == "end":
                if op[1] in m.open:
                    m.end(log, op[1], op[2])
            elif kind == "roll":
                log.roll()
            elif kind == "wait":
                clock.advance(op[1])
            else:
                clean_and_check(disk, clock, log, m, op[1])
        for pid in sorted(m.open):  # end what is open (aborted, so that those are exercised too)
            m.end(log, pid, False)
        for end in range(3):        # later passes: markers stamped, then past their horizon
            put(log, b"end", b"%d" % end)
            m.records[log.log_end_offset - 1] = (b"end", b"%d" % end, None)
            log.roll()
            clean_and_check(disk, clock, log, m, 64)
            clock.advance(1000)


def clean_and_check(disk, clock, log, m: Model, slots: int) -> None:
    now = clock.now_ms()
    lso = log.last_stable_offset
    before_view = read_committed(log)
    before_markers = markers(log)
    before_batches = batch_ranges(log)
    present_before = {o for o, *_ in _all_records(log)}
    # the latest committed record of each key below the LSO, among those still in the log
    latest: dict[bytes, int] = {}
    for o in sorted(present_before):
        if o < lso and m.outcome(o) == "committed":
            latest[m.records[o][0]] = o
    result = LogCleaner(disk, dedupe_buffer_size=24 * slots).clean(log, now)
    after = {o: (k, v) for o, k, v in _all_records(log)}
    # never drops a committed record that is the latest for its key below the LSO (a tombstone
    # may go, but only once the horizon stamped by an earlier pass has passed)
    for key, o in latest.items():
        if m.records[o][1] is not None:
            assert o in after, (key, o)
    # never keeps an aborted record it rewrote
    cleaned = {g[0] for g in result.groups}
    for seg in log.segments:
        if seg.base_offset in cleaned:
            for o, _, _ in _records_of(seg):
                assert m.outcome(o) != "aborted", o
    # a marker goes only when no batch of its transaction was in the log and its horizon had passed
    after_markers = markers(log)
    for offset, (pid, _, horizon, _) in before_markers.items():
        txn = m.txns[m.by_marker[offset]]
        had_batch = any(b[0] <= o <= b[1] and not b[3] for o in txn["offsets"] for b in before_batches)
        if offset not in after_markers:
            assert horizon is not None and now >= horizon and not had_batch, (offset, horizon, now)
        elif horizon is None and after_markers[offset][2] is not None:
            assert not had_batch and after_markers[offset][2] == now + 1000
    # read_committed readers see the same values, and nothing that was not there before
    after_view = read_committed(log)
    assert table(after_view) == table(before_view)
    assert set(after_view) <= set(before_view)
    assert log.last_stable_offset == lso
    first_offsets = {t["marker"]: t["offsets"][0] for t in m.txns.values() if t["outcome"] == "aborted"}
    check_txn_indexes(log, first_offsets)
    for seg in log.segments:
        mr = MemoryRecords(disk.read_all(seg.log_rel))
        while (batch := mr.next_batch()) is not None:
            assert batch.validate_crc()


def _records_of(seg):
    data = seg.disk.read_all(seg.log_rel)
    for pos, h in seg.iter_headers(data=data):
        if not h.is_control:
            for r in decode_batch(data, pos).records:
                yield r.offset, r.key, r.value


def _all_records(log):
    for seg in log.segments:
        yield from _records_of(seg)


def test_clean_command_reports_aborted_records_and_markers(tmp_path):
    import subprocess
    import sys
    disk, clock = Disk(tmp_path), VirtualClock(10_000)
    log = open_log(disk, clock, segment_bytes=100_000)
    txn_put(log, 7, b"a", b"kept")
    end_txn(log, 7, True)
    txn_put(log, 7, b"b", b"aborted")
    end_txn(log, 7, False)
    log.roll()
    put(log, b"c", b"x")
    log.close()
    disk.close_all()
    r = subprocess.run([sys.executable, "-m", "engine", "clean", str(tmp_path / "t-0"),
                        "--min-cleanable-dirty-ratio", "0"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "transactions: 1 aborted record(s) removed; markers kept 2, removed 0" in r.stdout
