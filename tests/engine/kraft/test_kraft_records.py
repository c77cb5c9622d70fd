"""The metadata log's bytes: v2 batches with the leader epoch, LeaderChangeMessage control batches."""
from kafka.record.memory_records import MemoryRecords

from engine.kraft.records import (LeaderChangeMessage, data_batch, decode_leader_change, encode_leader_change,
                                  leader_change_batch)
from engine.records import ControlRecordType, decode_batch



def test_leader_change_message_round_trips():
    msg = LeaderChangeMessage(leader_id=2, voters=(1, 2, 3), granting_voters=(2, 3))
    assert decode_leader_change(encode_leader_change(msg)) == msg


def test_leader_change_message_bytes_follow_the_flexible_v0_layout():
    # Version 0, LeaderId 2, Voters [1] as compact array (n+1 = 2), GrantingVoters [] (1), no tags.
    assert encode_leader_change(LeaderChangeMessage(2, (1,), ())) == bytes.fromhex("0000" "00000002" "02" "00000001" "00" "01" "00")


def test_leader_change_batch_is_a_control_batch_with_the_epoch():
    raw = leader_change_batch(LeaderChangeMessage(3, (1, 2, 3), (3, 1)), base_offset=7, epoch=4, now_ms=123)
    b = decode_batch(raw)
    assert (b.base_offset, b.partition_leader_epoch, b.is_control, b.is_transactional) == (7, 4, True, False)
    (rec,) = list(b)
    assert rec.key == bytes([0, 0, 0, int(ControlRecordType.LEADER_CHANGE)])
    assert decode_leader_change(rec.value).granting_voters == (3, 1)


def test_data_batch_carries_opaque_records_and_the_epoch():
    b = decode_batch(data_batch([b"a", b"bc"], base_offset=5, epoch=2, now_ms=9))
    assert [r.value for r in b] == [b"a", b"bc"] and b.partition_leader_epoch == 2 and not b.is_control


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
