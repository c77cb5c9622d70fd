"""GroupMetadata records of ``__consumer_offsets`` (Kafka's GroupMetadataKey v2 /
GroupMetadataValue v3, checked byte by byte against the schema) and the consumer protocol's
embedded subscription/assignment bytes (assignment checked against kafka-python)."""
from __future__ import annotations

import struct

import pytest
from hypothesis import given, strategies as st

from engine.errors import CorruptRecordError
from engine.group.metadata import (GroupMetadataValue, MemberMetadata, decode_assignment, decode_group_key,
                                   decode_group_value, decode_subscription, encode_assignment, encode_group_key,
                                   encode_group_value, encode_subscription)
from engine.group.offsets import OffsetKey, decode_key, encode_key

names = st.text(min_size=0, max_size=20)
tps = st.lists(st.tuples(st.sampled_from(["a", "t", "orders"]), st.integers(0, 50)), max_size=8, unique=True)
members = st.builds(MemberMetadata, names, st.none() | names, names, names, st.integers(-1, 2**31 - 1),
                    st.integers(0, 2**31 - 1), st.binary(max_size=40), st.binary(max_size=40))
values = st.builds(GroupMetadataValue, st.just("consumer"), st.integers(0, 2**31 - 1), st.none() | names,
                   st.none() | names, st.integers(-1, 2**62), st.lists(members, max_size=5).map(tuple))


@given(names)
def test_key_round_trips_and_is_not_an_offset_key(group):
    raw = encode_group_key(group)
    assert decode_group_key(raw) == group
    assert decode_key(raw) is None  # the offsets loader skips group records


def test_offset_keys_are_not_group_keys():
    assert decode_group_key(encode_key(OffsetKey("g", "t", 0))) is None


@given(values)
def test_value_round_trips(v):
    assert decode_group_value(encode_group_value(v)) == v


def test_value_v3_byte_layout_follows_the_schema():
    m = MemberMetadata("c-1", None, "c", "/127.0.0.1", 300000, 45000, b"S", b"AS")
    raw = encode_group_value(GroupMetadataValue("consumer", 7, "range", "c-1", 1234, (m,)))
    expected = (struct.pack(">h", 3) + b"\x00\x08consumer" + struct.pack(">i", 7) + b"\x00\x05range"
                + b"\x00\x03c-1" + struct.pack(">q", 1234) + struct.pack(">i", 1)
                + b"\x00\x03c-1" + b"\xff\xff" + b"\x00\x01c" + b"\x00\x0a/127.0.0.1"
                + struct.pack(">ii", 300000, 45000) + b"\x00\x00\x00\x01S" + b"\x00\x00\x00\x02AS")
    assert raw == expected
    assert encode_group_key("g") == b"\x00\x02\x00\x01g"


def test_empty_group_record_has_null_protocol_and_leader():
    raw = encode_group_value(GroupMetadataValue("consumer", 3, None, None, 0, ()))
    assert raw == struct.pack(">h", 3) + b"\x00\x08consumer" + struct.pack(">i", 3) + b"\xff\xff\xff\xff" \
        + struct.pack(">q", 0) + struct.pack(">i", 0)
    assert decode_group_value(None) is None


def test_older_value_versions_decode():
    v0 = (struct.pack(">h", 0) + b"\x00\x08consumer" + struct.pack(">i", 2) + b"\x00\x01r" + b"\x00\x01m"
          + struct.pack(">i", 1) + b"\x00\x01m" + b"\x00\x01c" + b"\x00\x01h" + struct.pack(">i", 10000)
          + struct.pack(">i", 0) + struct.pack(">i", 0))
    got = decode_group_value(v0)
    assert got.generation == 2 and got.current_state_timestamp == -1
    assert got.members[0].rebalance_timeout_ms == -1 and got.members[0].session_timeout_ms == 10000


@pytest.mark.parametrize("raw", [b"", b"\x00\x09", struct.pack(">h", 3) + b"\x00\x08consum",
                                 encode_group_value(GroupMetadataValue("consumer", 1, None, None, 0, ())) + b"x"])
def test_corrupt_values_are_refused(raw):
    with pytest.raises(CorruptRecordError):
        decode_group_value(raw)


@given(st.lists(st.sampled_from(["a", "t", "orders"]), unique=True), tps, st.integers(-1, 100))
def test_subscription_round_trips(topics, owned, generation):
    owned = sorted(owned)
    assert decode_subscription(encode_subscription(topics, owned, generation)) == (topics, owned, generation)


@given(tps)
def test_assignment_bytes_decode_with_kafka_python(assigned):
    from kafka.protocol.old.consumer_protocol import ConsumerProtocolMemberAssignment_v0
    assigned = sorted(assigned)
    raw = encode_assignment(assigned)
    assert decode_assignment(raw) == assigned
    theirs = ConsumerProtocolMemberAssignment_v0.decode(raw)
    assert sorted((tp.topic, tp.partition) for tp in theirs.partitions()) == assigned


def test_subscription_prefix_decodes_with_kafka_python_v0():
    from kafka.protocol.old.consumer_protocol import ConsumerProtocolMemberMetadata_v0
    raw = encode_subscription(["t", "u"], [("t", 1)], 4)
    import io
    theirs = ConsumerProtocolMemberMetadata_v0.decode(io.BytesIO(raw))
    assert list(theirs.topics) == ["t", "u"] and theirs.user_data is None
