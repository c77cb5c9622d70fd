"""The metadata log's bytes: v2 batches with the leader epoch; control batches whose messages
are generated from Kafka's JSON and read by kio's independently generated classes."""
import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record.memory_records import MemoryRecords

from engine.errors import CorruptRecordError
from engine.kraft import metadata
from engine.kraft.records import (LeaderChangeMessage, SnapshotFooterRecord, SnapshotHeaderRecord, control_batch,
                                  data_batch, decode_control, decode_leader_change, encode_control,
                                  encode_leader_change, leader_change_batch, leader_change_message)
from engine.records import ControlRecordType, decode_batch

kio_serial = pytest.importorskip("kio.serial")
from kio.schema.leader_change_message.v0.data import LeaderChangeMessage as KioLeaderChange  # noqa: E402
from kio.schema.leader_change_message.v0.data import Voter as KioVoter  # noqa: E402
from kio.schema.snapshot_footer_record.v0.data import SnapshotFooterRecord as KioFooter  # noqa: E402
from kio.schema.snapshot_header_record.v0.data import SnapshotHeaderRecord as KioHeader  # noqa: E402

INT16 = st.integers(-(1 << 15), (1 << 15) - 1)
INT32 = st.integers(-(1 << 31), (1 << 31) - 1)
IDS = st.lists(INT32, max_size=6)


def _kio_read(cls, data: bytes):
    obj, at = kio_serial.entity_reader(cls)(memoryview(data), 0)
    assert at == len(data)
    return obj


def _kio_write(cls, obj) -> bytes:
    buf = io.BytesIO()
    kio_serial.entity_writer(cls)(buf, obj)
    return buf.getvalue()


def test_leader_change_message_bytes_follow_the_flexible_v0_layout():
    # Version 0, LeaderId 2, Voters [1] as compact array (n+1 = 2) with an empty tag section per
    # voter, GrantingVoters [] (1), no tags.
    msg = leader_change_message(2, (1,), ())
    assert encode_leader_change(msg) == bytes.fromhex("0000" "00000002" "02" "00000001" "00" "01" "00")


@settings(max_examples=200, deadline=None)
@given(version=INT16, leader=INT32, voters=IDS, granting=IDS)
def test_leader_change_message_decodes_with_kio_and_back(version, leader, voters, granting):
    msg = LeaderChangeMessage(version=version, leader_id=leader,
                              voters=[{"voter_id": v} for v in voters],
                              granting_voters=[{"voter_id": v} for v in granting])
    key, value = encode_control(msg)
    assert key == bytes([0, 0, 0, int(ControlRecordType.LEADER_CHANGE)])
    theirs = _kio_read(KioLeaderChange, value)
    assert (theirs.version, theirs.leader_id) == (version, leader)
    assert [v.voter_id for v in theirs.voters] == voters
    assert [v.voter_id for v in theirs.granting_voters] == granting
    assert _kio_write(KioLeaderChange, theirs) == value
    assert decode_control(key, value) == msg


@settings(max_examples=200, deadline=None)
@given(version=INT16, ts=st.integers(-1, (1 << 62)))
def test_snapshot_header_and_footer_decode_with_kio(version, ts):
    header = SnapshotHeaderRecord(version=version, last_contained_log_timestamp=ts)
    key, value = encode_control(header)
    assert key == bytes([0, 0, 0, int(ControlRecordType.SNAPSHOT_HEADER)])
    theirs = _kio_read(KioHeader, value)
    assert (theirs.version, theirs.last_contained_log_timestamp) == (version, ts)
    assert _kio_write(KioHeader, theirs) == value
    assert decode_control(key, value) == header

    footer = SnapshotFooterRecord(version=version)
    key, value = encode_control(footer)
    assert key == bytes([0, 0, 0, int(ControlRecordType.SNAPSHOT_FOOTER)])
    assert _kio_read(KioFooter, value).version == version
    assert decode_control(key, value) == footer


def test_kio_built_messages_decode_with_ours():
    theirs = KioLeaderChange(version=0, leader_id=3, voters=(KioVoter(voter_id=1), KioVoter(voter_id=3)),
                             granting_voters=(KioVoter(voter_id=3),))
    ours = decode_leader_change(_kio_write(KioLeaderChange, theirs))
    assert ours == leader_change_message(3, (1, 3), (3,))


@pytest.mark.parametrize("key,value,why", [
    (None, b"\x00", "control record key of 0 bytes"),
    (b"\x00\x01\x00\x02", b"\x00", "key version 1"),
    (b"\x00\x00\x00\x63", b"\x00", "unknown control record type 99"),
    (b"\x00\x00\x00\x00", b"\x00", "does not belong in the metadata log"),
    (b"\x00\x00\x00\x02", b"\x00\x00\x00", "truncated"),
    (b"\x00\x00\x00\x04", b"\x00\x00\x00\x00", "byte(s) after the message"),
])
def test_bad_control_records_are_refused_in_one_line(key, value, why):
    with pytest.raises(CorruptRecordError, match=why.replace("(", r"\(").replace(")", r"\)")):
        decode_control(key, value)


def test_leader_change_batch_is_a_control_batch_with_the_epoch():
    raw = leader_change_batch(leader_change_message(3, (1, 2, 3), (3, 1)), base_offset=7, epoch=4, now_ms=123)
    b = decode_batch(raw)
    assert (b.base_offset, b.partition_leader_epoch, b.is_control, b.is_transactional) == (7, 4, True, False)
    (rec,) = list(b)
    assert rec.key == bytes([0, 0, 0, int(ControlRecordType.LEADER_CHANGE)])
    assert [v.voter_id for v in decode_leader_change(rec.value).granting_voters] == [3, 1]


def test_control_batches_check_with_kafka_python():
    raw = control_batch(SnapshotHeaderRecord(version=0, last_contained_log_timestamp=99), base_offset=0, epoch=2,
                        now_ms=99)
    batch = MemoryRecords(raw).next_batch()
    assert batch.validate_crc() and batch.is_control_batch


def test_data_batch_carries_opaque_records_and_the_epoch():
    b = decode_batch(data_batch([b"a", b"bc"], base_offset=5, epoch=2, now_ms=9))
    assert [r.value for r in b] == [b"a", b"bc"] and b.partition_leader_epoch == 2 and not b.is_control


def test_data_batch_frames_metadata_records():
    rec = metadata.FenceBrokerRecord(id=2, epoch=7)
    (r,) = list(decode_batch(data_batch([rec], base_offset=0, epoch=1, now_ms=0)))
    assert r.value == metadata.encode(rec) and metadata.decode(r.value) == rec


def test_every_voters_segment_checks_with_kafka_pythons_batch_reader(make_quorum, elect):
    q = make_quorum(seed=4)
    elect(q)
    for i in range(5):
        q.append([b"rec-%d" % i])
        q.run(50)
    q.run(1000)
    for nid in q.voters:
        log = q.nodes[nid].log
        data = b"".join(q.disk.read_all(f"{log.dir}/{seg.file_names()[0]}") for seg in log.segments)
        mr = MemoryRecords(data)
        seen = []
        while mr.has_next():
            batch = mr.next_batch()
            assert batch.validate_crc()
            seen.extend((rec.offset, rec.value) for rec in batch)
        assert [v for _, v in seen[1:]] == [b"rec-%d" % i for i in range(5)]
