"""Snapshots of the metadata log: <offset>-<epoch>.checkpoint files framed by SnapshotHeader and
SnapshotFooter, the log start moved past them by the cleaner, and FetchSnapshot bringing a
replica that fell behind the log start back."""
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record.memory_records import MemoryRecords

from engine.errors import CorruptRecordError
from engine.kraft import metadata
from engine.kraft.config import QuorumConfig
from engine.kraft.records import SnapshotFooterRecord, SnapshotHeaderRecord, decode_control
from engine.kraft.schedules import run_schedule
from engine.records import iter_batches
from engine.kraft.snapshots import SnapshotId, decode_snapshot, encode_snapshot, parse_snapshot_name, snapshot_name

kio_serial = pytest.importorskip("kio.serial")
from kio.schema.snapshot_footer_record.v0.data import SnapshotFooterRecord as KioFooter  # noqa: E402
from kio.schema.snapshot_header_record.v0.data import SnapshotHeaderRecord as KioHeader  # noqa: E402

SNAPPY = QuorumConfig(max_bytes_between_snapshots=600, retention_max_bytes=0, log_cleaner_interval_ms=0,
                      fetch_max_bytes=300)


def test_snapshot_names_are_kafkas():
    sid = SnapshotId(1234, 5)
    assert snapshot_name(sid) == "00000000000000001234-0000000005.checkpoint"
    assert parse_snapshot_name(sid.name) == sid
    for other in ("00000000000000001234-0000000005.checkpoint.part", "1234-5.checkpoint",
                  "00000000000000000000.log", "quorum-state"):
        assert parse_snapshot_name(other) is None


def _batches(data: bytes):
    mr = MemoryRecords(data)
    out = []
    while mr.has_next():
        b = mr.next_batch()
        assert b.validate_crc()
        out.append(b)
    return out


def _kio(cls, value: bytes):
    obj, at = kio_serial.entity_reader(cls)(memoryview(value), 0)
    assert at == len(value)
    return obj


def test_a_snapshot_file_is_header_records_footer_and_checks_with_kafka_python_and_kio():
    sid = SnapshotId(40, 3)
    values = [metadata.encode(metadata.FenceBrokerRecord(id=i, epoch=7)) for i in range(5)]
    data = encode_snapshot(sid, values, last_contained_ms=1234, now_ms=2000, max_batch_records=2)
    batches = _batches(data)
    assert [b.is_control_batch for b in batches] == [True, False, False, False, True]
    assert all(b.leader_epoch == 3 for b in batches)
    records = [list(b) for b in batches]
    assert [r.offset for rs in records for r in rs] == list(range(7))   # the snapshot's own offsets, from 0
    (head,) = records[0]
    (foot,) = records[-1]
    header = _kio(KioHeader, bytes(head.value))
    assert (header.version, header.last_contained_log_timestamp) == (0, 1234)
    assert _kio(KioFooter, bytes(foot.value)).version == 0
    assert decode_control(bytes(head.key), bytes(head.value)) == SnapshotHeaderRecord(version=0,
                                                                                       last_contained_log_timestamp=1234)
    contents = decode_snapshot(data)
    assert contents.values == values and contents.footer == SnapshotFooterRecord(version=0)
    assert [metadata.decode(v) for v in contents.values] == [metadata.FenceBrokerRecord(id=i, epoch=7) for i in range(5)]


def test_a_snapshot_that_is_not_whole_is_refused():
    empty = encode_snapshot(SnapshotId(3, 1), [], 0, 0)
    (_, first), (footer_at, _) = list(iter_batches(empty))
    header_len, footer_len = footer_at, len(empty) - footer_at
    data = encode_snapshot(SnapshotId(3, 1), [b"a", b"b"], 0, 0)
    with pytest.raises(CorruptRecordError, match="no SnapshotFooter"):
        decode_snapshot(data[:len(data) - footer_len])          # the footer batch never written
    with pytest.raises(CorruptRecordError, match="does not start with a SnapshotHeader"):
        decode_snapshot(data[header_len:])
    with pytest.raises(CorruptRecordError):
        decode_snapshot(data[:-3])                              # cut inside the footer
    with pytest.raises(CorruptRecordError, match="after the SnapshotFooter"):
        decode_snapshot(data + empty[:header_len])


def _settle(q, ms=3000):
    q.run(ms)
    q.checker.check_logs()
    assert q.checker.violations == [], q.checker.violations


def test_every_node_snapshots_its_committed_state_and_the_log_start_moves_past_it(make_quorum, elect):
    q = make_quorum(observers=(100,), seed=3, config=SNAPPY)
    elect(q)
    for i in range(60):
        q.append([b"v%03d" % i])
        q.run(30)
    _settle(q, 1000)
    expected = [b"v%03d" % i for i in range(60)]
    for node in q.nodes.values():
        assert len(node.snapshots) == 1                           # retention 0: older ones went
        sid = node.snapshots[0]
        assert node.log_start_offset == sid.end_offset > 0        # the log start moved to it
        assert q.disk.exists(f"{node.dir}/{sid.name}")
        values = node.read_snapshot(sid)
        assert values == expected[:len(values)] and len(values) >= 40
        data = q.disk.read_all(f"{node.dir}/{sid.name}")
        assert all(b.leader_epoch == sid.epoch for b in _batches(data))
        # The metadata log keeps no log-start-offset-checkpoint (it is not a log manager's log).
        assert not q.disk.exists(f"node-{node.id}/log-start-offset-checkpoint")
    assert q.checker.snapshots_checked >= 4


def test_with_kafkas_retention_the_log_start_stays(make_quorum, elect):
    q = make_quorum(seed=3, config=QuorumConfig(max_bytes_between_snapshots=600, log_cleaner_interval_ms=0))
    elect(q)
    for i in range(60):
        q.append([b"v%03d" % i])
        q.run(30)
    _settle(q, 1000)
    for node in q.nodes.values():
        assert len(node.snapshots) > 1 and node.log_start_offset == 0   # 100 MiB retention is far off


def test_a_replica_behind_the_log_start_catches_up_with_fetch_snapshot(make_quorum, elect):
    q = make_quorum(observers=(100,), seed=5, config=SNAPPY)
    leader = elect(q)
    lagging = [v for v in q.voters if v != leader.id][0]
    q.crash(lagging, power_loss=True)
    q.crash(100, power_loss=True)
    for i in range(60):
        q.append([b"v%03d" % i])
        q.run(30)
    q.run(500)
    assert q.nodes[leader.id].log_start_offset > q.nodes[lagging].snapshots[-1].end_offset if \
        q.nodes[lagging].snapshots else q.nodes[leader.id].log_start_offset > 0
    q.restart(lagging)
    q.restart(100)
    _settle(q)
    kinds = [e.to_dict() for e in q.events.envelopes]
    loaded = [e for e in kinds if e["kind"] == "raft_snapshot_loaded"]
    assert {e["node"] for e in loaded} >= {lagging, 100}
    chunks = [e for e in kinds if e["kind"] == "raft_snapshot_fetch_answered" and e["to"] == lagging]
    assert len(chunks) >= 2 and all(e["bytes"] <= 300 for e in chunks)   # fetch_max_bytes per chunk
    answered = [e for e in kinds if e["kind"] == "raft_fetch_answered" and e["to"] == lagging
                and e["snapshot_end_offset"] >= 0]
    assert answered                                                         # Fetch named the snapshot
    top = q.nodes[leader.id]
    for nid in (lagging, 100):
        node = q.nodes[nid]
        assert node.high_watermark == top.high_watermark and node.log_end_offset == top.log_end_offset
        assert node.read_snapshot(node.snapshots[-1])[:3] == [b"v000", b"v001", b"v002"]
    assert q.checker.snapshots_loaded >= 2


def test_a_download_cut_by_a_crash_starts_again(make_quorum, elect):
    q = make_quorum(seed=5, config=SNAPPY)
    leader = elect(q)
    lagging = [v for v in q.voters if v != leader.id][0]
    q.crash(lagging, power_loss=True)
    for i in range(60):
        q.append([b"v%03d" % i])
        q.run(30)
    q.run(500)
    q.restart(lagging)

    def first_chunk():
        return any(e.to_dict()["kind"] == "raft_snapshot_fetch_answered" and e.to_dict()["to"] == lagging
                   for e in q.events.envelopes)
    assert q.run_until(first_chunk, 5000, step_ms=1)
    node = q.nodes[lagging]
    assert node.fetching_snapshot is not None
    q.crash(lagging, power_loss=True)
    assert any(n.endswith(".checkpoint.part") for n in q.disk.listdir(node.dir))
    q.restart(lagging)
    assert not any(n.endswith(".checkpoint.part") for n in q.disk.listdir(node.dir))   # deleted at start
    _settle(q)
    assert node.log_end_offset == q.nodes[leader.id].log_end_offset


def test_a_restart_keeps_the_log_start_and_the_snapshots(make_quorum, elect):
    q = make_quorum(seed=3, config=SNAPPY)
    elect(q)
    for i in range(60):
        q.append([b"v%03d" % i])
        q.run(30)
    q.run(1000)
    before = {n.id: (n.log_start_offset, list(n.snapshots), n.log.segments[0].base_offset) for n in q.nodes.values()}
    assert all(start > base for start, _, base in before.values())    # the cleaner moved it inside a segment
    for nid in q.voters:
        q.crash(nid, power_loss=True)
    for nid in q.voters:
        q.restart(nid)
    for nid, (start, snaps, base) in before.items():
        node = q.nodes[nid]
        # KafkaRaftLog: the log reopens from its segments (no checkpoint), so its start is the first
        # segment's base, at or below the oldest snapshot; that snapshot is kept and stands for it.
        assert node.log_start_offset == base <= snaps[0].end_offset and node.snapshots == snaps
    q.checker.check_logs()
    assert q.checker.violations == []
    elect(q, after_epoch=max(n.epoch for n in q.nodes.values()))
    q.append([b"after"])
    _settle(q)
    assert all(n.high_watermark == q.leader().log_end_offset for n in q.nodes.values())


def test_metadata_records_survive_a_snapshot(make_quorum, elect):
    q = make_quorum(seed=2, config=SNAPPY)
    elect(q)
    tid = "5pTiLd2lTuyzRbL7F0Rw4A"
    recs = [metadata.TopicRecord(name="orders", topic_id=tid)] + [
        metadata.PartitionRecord(partition_id=p, topic_id=tid, replicas=[1, 2, 3], isr=[1, 2, 3], leader=1 + p % 3,
                                 leader_epoch=0, partition_epoch=0, version=0) for p in range(12)]
    for r in recs:
        q.append([r])
        q.run(20)
    _settle(q, 1000)
    node = q.leader()
    sid = node.snapshots[-1]
    decoded = [metadata.decode(v) for v in node.read_snapshot(sid)]
    assert decoded == recs[:len(decoded)] and len(decoded) >= 5


def test_fault_schedules_make_and_fetch_snapshots(shm_root):
    made = loaded = 0
    for seed in (1, 2, 4, 5, 7, 8):
        r = run_schedule(seed, f"{shm_root}/s{seed}")
        assert r.ok, r.replay_hint()
        made += r.snapshots
        loaded += r.snapshots_loaded
    assert made > 20 and loaded > 0


@pytest.fixture
def shm_root(root):
    return root


@settings(max_examples=100, deadline=None)
@given(end=st.integers(0, 10**12), epoch=st.integers(0, 2**31 - 1), values=st.lists(st.binary(max_size=40), max_size=30),
       per_batch=st.integers(1, 7), ts=st.integers(-1, 2**50))
def test_snapshot_files_round_trip(end, epoch, values, per_batch, ts):
    sid = SnapshotId(end, epoch)
    assert parse_snapshot_name(sid.name) == sid
    contents = decode_snapshot(encode_snapshot(sid, values, ts, 0, per_batch))
    assert contents.values == values and contents.header.last_contained_log_timestamp == ts


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=200))
def test_arbitrary_bytes_are_a_snapshot_or_refused(data):
    try:
        decode_snapshot(data)
    except CorruptRecordError as exc:
        assert "\n" not in str(exc)


def test_a_snapshot_is_also_made_once_the_interval_has_passed(make_quorum, elect):
    """metadata.log.max.snapshot.interval.ms: with few bytes, a node snapshots when it applies
    committed records and the interval has passed since its last snapshot (or its start)."""
    cfg = QuorumConfig(max_snapshot_interval_ms=5000, log_cleaner_interval_ms=0)
    q = make_quorum(seed=4, config=cfg)
    elect(q)
    q.append([b"a"])
    _settle(q, 1000)
    assert all(not n.snapshots for n in q.nodes.values())       # 20 MiB of bytes is far off, 5 s not yet
    q.run(4500)
    assert all(not n.snapshots for n in q.nodes.values())       # time alone makes none: nothing new applied
    q.append([b"b"])
    _settle(q, 1000)
    written = [e for e in (x.to_dict() for x in q.events.envelopes) if e["kind"] == "raft_snapshot_written"]
    assert sorted(e["node"] for e in written) == [1, 2, 3] and {e["how"] for e in written} == {"interval"}
    for n in q.nodes.values():
        (sid,) = n.snapshots
        assert n.read_snapshot(sid) == [b"a", b"b"][:len(n.read_snapshot(sid))]
    q.append([b"c"])
    _settle(q, 1000)
    assert all(len(n.snapshots) == 1 for n in q.nodes.values())  # the next one waits another interval


def test_zero_turns_the_time_rule_off(make_quorum, elect):
    q = make_quorum(seed=4, config=QuorumConfig(max_snapshot_interval_ms=0))
    elect(q)
    for i in range(5):
        q.append([b"x"])
        q.run(3000)
    assert all(not n.snapshots for n in q.nodes.values())
