"""Kafka's metadata records, generated from its JSON definitions and framed as
ApiMessageAndVersion: every record type at every version round-trips (hypothesis), the body is
what the generated reader reads, bad values are refused in one line, and metadata batches in a
quorum's log check with kafka-python's record-batch code."""
from __future__ import annotations

import base64

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record.memory_records import MemoryRecords

from engine.kraft import metadata
from engine.kraft.metadata import MetadataParseError
from engine.protocol.classes import uuid_bytes, uuid_text
from engine.protocol.codec import encode_uvarint
from engine.protocol.schema import FieldSpec

_BITS = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}

UUIDS = st.binary(min_size=16, max_size=16).map(uuid_text)


def _scalar(t: str):
    if t in _BITS:
        bits = _BITS[t]
        return st.integers(-(1 << (bits - 1)), (1 << (bits - 1)) - 1)
    if t == "uint16":
        return st.integers(0, 0xFFFF)
    if t == "uint32":
        return st.integers(0, 0xFFFFFFFF)
    if t == "float64":
        return st.floats(allow_nan=False)
    if t == "bool":
        return st.booleans()
    if t == "string":
        return st.text(max_size=10)
    if t == "bytes":
        return st.binary(max_size=20)
    if t == "uuid":
        return UUIDS
    raise AssertionError(t)


def _field(owner: type, f: FieldSpec, version: int):
    if f.is_array:
        elem = _struct(getattr(owner, f.struct_name), f.fields, version) if f.is_struct else _scalar(f.element)
        base = st.lists(elem, max_size=3)
    elif f.is_struct:
        base = _struct(getattr(owner, f.struct_name), f.fields, version)
    else:
        base = _scalar(f.type)
    return st.one_of(st.none(), base) if version in f.nullable else base


def _struct(cls: type, fields: tuple, version: int, top: type | None = None):
    owner = top or cls
    return st.builds(cls, **{f.name: _field(owner, f, version) for f in fields if version in f.versions})


def _record(cls: type, version: int):
    kwargs = {f.name: _field(cls, f, version) for f in cls.FIELDS if version in f.versions}
    return st.builds(cls, version=st.just(version), **kwargs)


CASES = [(cls, v) for key, cls in metadata.RECORD_TYPES.items() for v in range(cls.SPEC.valid.low, cls.SPEC.valid.high + 1)]


def test_every_definition_is_a_record_type_with_its_api_key():
    names = {cls.__name__: key for key, cls in metadata.RECORD_TYPES.items()}
    for name, key in {"RegisterBrokerRecord": 0, "UnregisterBrokerRecord": 1, "TopicRecord": 2, "PartitionRecord": 3,
                      "ConfigRecord": 4, "PartitionChangeRecord": 5, "FenceBrokerRecord": 7,
                      "UnfenceBrokerRecord": 8, "RemoveTopicRecord": 9, "FeatureLevelRecord": 12,
                      "ProducerIdsRecord": 15, "BrokerRegistrationChangeRecord": 17, "NoOpRecord": 20}.items():
        assert names[name] == key
    assert len(CASES) >= 30


@pytest.mark.parametrize("cls,version", CASES, ids=[f"{c.__name__}-v{v}" for c, v in CASES])
def test_every_record_type_and_version_round_trips(cls, version):
    codec = metadata.body_codec(cls.SPEC.api_key, version)

    @settings(max_examples=40, deadline=None)
    @given(_record(cls, version))
    def check(rec):
        raw = metadata.encode(rec)
        # The frame: frame version 1, apiKey, version, each an unsigned varint.
        head = bytearray()
        for n in (1, cls.SPEC.api_key, version):
            encode_uvarint(head, n)
        assert raw.startswith(bytes(head))
        # The body, read with the generated reader, is what the record holds.
        body, end = codec.decode(raw[len(head):])
        assert end == len(raw) - len(head)
        # (the reader fills the fields this version lacks with their defaults, as Kafka's does)
        written = rec.to_value(version)
        assert {k: body[k] for k in written} == written
        assert all(version not in f.versions for f in cls.FIELDS if f.name not in written)
        assert cls.from_value(body, version, {"version": version}) == rec
        assert metadata.decode(raw) == rec
        assert metadata.decode(raw).to_json(version) == rec.to_json(version)
    check()


def test_topic_record_bytes():
    rec = metadata.TopicRecord(name="orders", topic_id="5pTiLd2lTuyzRbL7F0Rw4A")
    tid = base64.urlsafe_b64decode("5pTiLd2lTuyzRbL7F0Rw4A==")
    # frame 1, apiKey 2, version 0; Name as a compact string (length + 1); TopicId; no tagged fields
    assert metadata.encode(rec) == b"\x01\x02\x00" + b"\x07orders" + tid + b"\x00"
    assert metadata.to_json(rec) == {"type": "TOPIC_RECORD", "version": 0,
                                     "data": {"name": "orders", "topicId": "5pTiLd2lTuyzRbL7F0Rw4A"}}


def test_tagged_fields_are_written_only_when_they_differ_from_the_default():
    tid = "5pTiLd2lTuyzRbL7F0Rw4A"
    same = metadata.PartitionChangeRecord(partition_id=0, topic_id=tid, version=0)
    moved = metadata.PartitionChangeRecord(partition_id=0, topic_id=tid, leader=3, version=0)
    assert metadata.encode(same).endswith(b"\x00")                    # zero tagged fields
    assert metadata.encode(moved).endswith(b"\x01" + b"\x01\x04" + (3).to_bytes(4, "big"))  # tag 1 (Leader), 4 bytes
    assert metadata.decode(metadata.encode(moved)).leader == 3
    assert metadata.decode(metadata.encode(same)).leader == -2   # "-2 if the leader didn't change"


def test_structs_and_arrays_take_lists_and_dicts():
    rec = metadata.RegisterBrokerRecord(broker_id=1, incarnation_id=uuid_text(bytes(range(16))), broker_epoch=5,
                                        end_points=[{"name": "PLAINTEXT", "host": "h", "port": 9092,
                                                     "security_protocol": 0}])
    assert rec.end_points == (metadata.RegisterBrokerRecord.BrokerEndpoint(name="PLAINTEXT", host="h", port=9092,
                                                                           security_protocol=0),)
    assert rec.version == 3 and rec.fenced is True and rec.rack == ""   # Kafka: "" unless the default says "null"
    assert metadata.decode(metadata.encode(rec)) == rec


def test_a_value_the_version_cannot_carry_is_refused():
    rec = metadata.PartitionRecord(partition_id=0, topic_id=uuid_text(bytes(16)), directories=[uuid_text(bytes(16))],
                                   version=0)
    with pytest.raises(ValueError, match="directories .* cannot be written at version 0"):
        metadata.encode(rec)
    with pytest.raises(ValueError, match="not nullable"):
        metadata.encode(metadata.TopicRecord(name=None))
    with pytest.raises(ValueError, match="has no version 9"):
        metadata.encode(metadata.TopicRecord(name="t", version=9))


def test_uuid_text_is_kafkas():
    assert uuid_text(bytes(16)) == "AAAAAAAAAAAAAAAAAAAAAA"
    for bad in ("", "short", "AAAAAAAAAAAAAAAAAAAAA=", "AAAAAAAAAAAAAAAAAAAAA!", "AAAAAAAAAAAAAAAAAAAAAB"):
        with pytest.raises(ValueError):
            uuid_bytes(bad)


@pytest.mark.parametrize("raw,why", [
    (b"", "frame version"),
    (b"\x00\x02\x00", "frame version 0"),
    (b"\x02\x02\x00", "unknown frame version 2"),
    (b"\x01\x7f\x00", "unknown metadata record type 127"),
    (b"\x01\x02\x05", "has no version 5"),
    (b"\x01\x02\x00\x07ord", "Failed to deserialize record with type 2"),
    (b"\x01\xff\xff\x03\x00", "too large"),
    (metadata.encode(metadata.FenceBrokerRecord(id=1, epoch=2)) + b"xy", "Found 2 byte\\(s\\) of garbage after 7"),
])
def test_bad_record_values_are_refused_in_one_line(raw, why):
    with pytest.raises(MetadataParseError, match=why) as info:
        metadata.decode(raw)
    assert "\n" not in str(info.value)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=64))
def test_arbitrary_bytes_decode_or_are_refused(raw):
    try:
        rec = metadata.decode(raw)
    except MetadataParseError:
        return
    assert metadata.decode(metadata.encode(rec)) == rec


def test_metadata_batches_in_every_voters_log_check_with_kafka_python(make_quorum, elect):
    q = make_quorum(seed=11)
    elect(q)
    tid = uuid_text(bytes(range(16)))
    batches = [
        [metadata.RegisterBrokerRecord(broker_id=1, incarnation_id=tid, broker_epoch=10, fenced=True)],
        [metadata.UnfenceBrokerRecord(id=1, epoch=10)],
        [metadata.TopicRecord(name="orders", topic_id=tid),
         metadata.PartitionRecord(partition_id=0, topic_id=tid, replicas=[1, 2, 3], isr=[1, 2, 3], leader=1,
                                  leader_epoch=0, partition_epoch=0, version=0),
         metadata.ConfigRecord(resource_type=2, resource_name="orders", name="min.insync.replicas", value="2")],
        [metadata.PartitionChangeRecord(partition_id=0, topic_id=tid, isr=[1, 2], version=0)],
        [metadata.FeatureLevelRecord(name="metadata.version", feature_level=25),
         metadata.ProducerIdsRecord(broker_id=1, broker_epoch=10, next_producer_id=1000)],
        [metadata.FenceBrokerRecord(id=1, epoch=10)],
    ]
    for records in batches:
        assert q.append(records) is not None
        q.run(50)
    q.run(1000)
    expected = [r for records in batches for r in records]
    for nid in q.voters:
        log = q.nodes[nid].log
        data = b"".join(q.disk.read_all(f"{log.dir}/{seg.file_names()[0]}") for seg in log.segments)
        mr = MemoryRecords(data)
        seen = []
        while mr.has_next():
            batch = mr.next_batch()
            assert batch.validate_crc()
            if not batch.is_control_batch:
                seen.extend(metadata.decode(rec.value) for rec in batch)
        assert seen == expected
