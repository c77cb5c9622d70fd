"""KIP-853 under kraft.version 1: each initial voter is formatted with the bootstrap snapshot
00000000000000000000-0000000000.checkpoint (SnapshotHeader, KRaftVersionRecord, VotersRecord in one
control batch, then SnapshotFooter), the first leader writes KRaftVersionRecord and VotersRecord
after its LeaderChangeMessage, and every later snapshot carries both after its header. The bytes
decode with kio's classes (generated from Kafka's JSON independently of ours), every batch checks
its CRC with kafka-python, and the dump prints them as kafka-dump-log.sh does."""
import uuid

import pytest
from kafka.record.memory_records import MemoryRecords

from engine.kraft.config import QuorumConfig
from engine.kraft.records import KRaftVersionRecord, VotersRecord, decode_control
from engine.kraft.snapshots import BOOTSTRAP_SNAPSHOT_ID, decode_snapshot
from engine.records import ControlRecordType

kio_serial = pytest.importorskip("kio.serial")
from kio.schema.k_raft_version_record.v0.data import KRaftVersionRecord as KioKRaftVersion  # noqa: E402
from kio.schema.voters_record.v0.data import VotersRecord as KioVoters  # noqa: E402

DYNAMIC = QuorumConfig(kraft_version=1, max_bytes_between_snapshots=400, retention_max_bytes=0,
                       log_cleaner_interval_ms=0)


def _kio(cls, value: bytes):
    obj, at = kio_serial.entity_reader(cls)(memoryview(value), 0)
    assert at == len(value)
    return obj


def _batches(data: bytes):
    mr = MemoryRecords(bytes(data))
    out = []
    while mr.has_next():
        b = mr.next_batch()
        assert b.validate_crc()
        out.append(b)
    return out


def _control(batch):
    return [(decode_control(bytes(r.key), bytes(r.value)), bytes(r.value)) for r in batch]


def _check_voter_set(msgs, voters, q):
    """KRaftVersionRecord then VotersRecord, read by kio, naming exactly the quorum's voters."""
    (kv, kv_raw), (vs, vs_raw) = msgs
    assert isinstance(kv, KRaftVersionRecord) and isinstance(vs, VotersRecord)
    theirs = _kio(KioKRaftVersion, kv_raw)
    assert (theirs.version, theirs.k_raft_version) == (0, 1) == (kv.version, kv.k_raft_version)
    theirs = _kio(KioVoters, vs_raw)
    assert [v.voter_id for v in theirs.voters] == sorted(voters)
    for ours, kio_voter in zip(vs.voters, theirs.voters):
        assert kio_voter.voter_directory_id == uuid.UUID(bytes=__import__("base64").urlsafe_b64decode(
            ours.voter_directory_id + "=="))
        assert [(e.name, e.host, e.port) for e in kio_voter.endpoints] == [("CONTROLLER", q.nodes[ours.voter_id].root,
                                                                           9093)]
        f = kio_voter.k_raft_version_feature
        assert (f.min_supported_version, f.max_supported_version) == (0, 1)


def test_each_voter_is_formatted_with_the_bootstrap_snapshot_and_observers_are_not(make_quorum):
    q = make_quorum(observers=(9,), seed=2, config=DYNAMIC)
    for nid, node in q.nodes.items():
        names = q.disk.listdir(node.dir)
        assert (BOOTSTRAP_SNAPSHOT_ID.name in names) == node.voter
        if not node.voter:
            continue
        data = q.disk.read_all(f"{node.dir}/{BOOTSTRAP_SNAPSHOT_ID.name}")
        head, foot = _batches(data)
        assert head.is_control_batch and foot.is_control_batch and head.leader_epoch == 0
        msgs = _control(head)
        assert type(msgs[0][0]).__name__ == "SnapshotHeaderRecord"
        _check_voter_set(msgs[1:], q.voters, q)
        contents = decode_snapshot(data)
        assert contents.values == [] and [type(m).__name__ for m in contents.control] == \
            ["KRaftVersionRecord", "VotersRecord"]


def test_the_first_leader_writes_the_voter_set_after_its_leader_change_and_later_leaders_do_not(make_quorum, elect):
    q = make_quorum(seed=2, config=QuorumConfig(kraft_version=1))
    leader = elect(q)
    first = _batches(leader.log.read(0, 1 << 20, trace=False).records)[0]
    msgs = _control(first)
    assert [type(m).__name__ for m, _ in msgs] == ["LeaderChangeMessage", "KRaftVersionRecord", "VotersRecord"]
    _check_voter_set(msgs[1:], q.voters, q)
    # Fetching from an empty log is not sent to the bootstrap snapshot: it holds no state.
    assert not any(e.to_dict()["kind"] == "raft_snapshot_fetch_sent" for e in q.events.envelopes)
    q.crash(leader.id)
    second = elect(q, after_epoch=leader.epoch)
    batches = _batches(second.log.read(0, 1 << 20, trace=False).records)
    mine = [b for b in batches if b.leader_epoch == second.epoch and b.is_control_batch]
    assert [[type(m).__name__ for m, _ in _control(b)] for b in mine] == [["LeaderChangeMessage"]]


def test_static_voters_write_no_voter_set(make_quorum, elect):
    q = make_quorum(seed=2)                               # kraft.version 0
    leader = elect(q)
    assert all(BOOTSTRAP_SNAPSHOT_ID.name not in q.disk.listdir(n.dir) for n in q.nodes.values())
    kinds = [decode_control(bytes(r.key), bytes(r.value)) for b in _batches(leader.log.read(0, 1 << 20, trace=False).records)
             if b.is_control_batch for r in b]
    assert [type(m).__name__ for m in kinds] == ["LeaderChangeMessage"]


def test_every_snapshot_carries_the_voter_set_after_its_header(make_quorum, elect):
    q = make_quorum(seed=5, config=DYNAMIC)
    elect(q)
    for i in range(40):
        q.append([b"v%03d" % i])
        q.run(30)
    q.run(1500)
    for node in q.nodes.values():
        (sid,) = node.snapshots
        assert sid != BOOTSTRAP_SNAPSHOT_ID and node.log_start_offset == sid.end_offset   # the bootstrap one went
        data = q.disk.read_all(f"{node.dir}/{sid.name}")
        batches = _batches(data)
        msgs = _control(batches[0])
        assert [type(m).__name__ for m, _ in msgs] == ["SnapshotHeaderRecord", "KRaftVersionRecord", "VotersRecord"]
        _check_voter_set(msgs[1:], q.voters, q)
        offsets = [r.offset for b in _batches(data) for r in b]          # (a kafka-python batch iterates once)
        assert offsets == list(range(len(offsets))) and len(offsets) > 4       # data records after them
    q.checker.check_logs()
    assert q.checker.violations == []


def test_the_dump_prints_the_voter_set_as_kafka_dump_log_does(make_quorum, elect):
    import subprocess
    import sys
    from pathlib import Path
    q = make_quorum(seed=2, config=QuorumConfig(kraft_version=1))
    leader = elect(q)
    leader.log.flush()
    root = q.disk.root
    files = f"{root}/{leader.dir}/{BOOTSTRAP_SNAPSHOT_ID.name},{root}/{leader.dir}/00000000000000000000.log"
    done = subprocess.run([sys.executable, "-m", "engine", "dump", "--cluster-metadata-decoder", "--files", files],
                          capture_output=True, text=True, cwd=Path(__file__).resolve().parents[3], timeout=120)
    text = done.stdout
    assert done.returncode == 0, done.stderr + text
    assert "Snapshot end offset: 0, epoch: 0" in text
    assert text.count('KRaftVersion {"version":0,"kRaftVersion":1}') == 2
    assert text.count('KRaftVoters {"version":0,"voters":[{"voterId":1,') == 2
    assert "controlType: LEADER_CHANGE(2)" in text
    assert int(ControlRecordType.KRAFT_VOTERS) == 6
