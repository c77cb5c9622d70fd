"""Group metadata as records of ``__consumer_offsets``, in Kafka's own schemas
(``group-coordinator/src/main/resources/common/message/GroupMetadataKey.json`` and
``GroupMetadataValue.json``; the embedded bytes follow ``ConsumerProtocolSubscription.json``
and ``ConsumerProtocolAssignment.json`` in ``clients``).

Key, version 2 (non-flexible; versions 0 and 1 are the OffsetCommit key)::

    int16  version = 2
    string group

Value, version 3 (non-flexible; version 4 is the first flexible one)::

    int16  version = 3
    string protocolType            "consumer"
    int32  generation
    nullable string protocol        (int16 length, -1 = null)
    nullable string leader
    int64  currentStateTimestamp    (v2+)
    int32  member count, then per member:
        string memberId
        nullable string groupInstanceId   (v3+)
        string clientId
        string clientHost
        int32  rebalanceTimeout           (v1+)
        int32  sessionTimeout
        bytes  subscription               (int32 length + bytes)
        bytes  assignment

The coordinator writes one after every completed rebalance (the leader's SyncGroup) and
when the group becomes Empty (no members, protocol and leader null); a null value is the
group's tombstone. Compaction keeps only the latest per group.

Subscription bytes: ConsumerProtocolSubscription v2 — int16 version, []string topics
(int32 count), nullable bytes userData, []{string topic, []int32 partitions} ownedPartitions,
int32 generationId. Assignment bytes: ConsumerProtocolAssignment v0 — int16 version,
[]{string topic, []int32 partitions}, nullable bytes userData.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

from ..errors import CorruptRecordError

__all__ = ["GroupMetadataValue", "MemberMetadata", "encode_group_key", "decode_group_key", "encode_group_value",
           "decode_group_value", "encode_subscription", "decode_subscription", "encode_assignment",
           "decode_assignment", "GROUP_KEY_VERSION", "GROUP_VALUE_VERSION"]

GROUP_KEY_VERSION = 2
GROUP_VALUE_VERSION = 3


@dataclass(frozen=True)
class MemberMetadata:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    subscription: bytes
    assignment: bytes


@dataclass(frozen=True)
class GroupMetadataValue:
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp: int
    members: tuple[MemberMetadata, ...]


# ---- primitives ---------------------------------------------------------------------------------
def _str(s: str | None) -> bytes:
    if s is None:
        return struct.pack(">h", -1)
    b = s.encode()
    if len(b) > 32767:
        raise ValueError(f"string of {len(b)} bytes does not fit an int16 length")
    return struct.pack(">h", len(b)) + b


def _bytes(b: bytes | None) -> bytes:
    return struct.pack(">i", -1) if b is None else struct.pack(">i", len(b)) + b


class _Reader:
    def __init__(self, data: bytes, what: str) -> None:
        self.data, self.pos, self.what = data, 0, what

    def take(self, fmt: str):
        size = struct.calcsize(fmt)
        if self.pos + size > len(self.data):
            raise CorruptRecordError(f"{self.what}: truncated at byte {self.pos} (needs {size} more)")
        out = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += size
        return out[0] if len(out) == 1 else out

    def string(self, nullable: bool = False) -> str | None:
        n = self.take(">h")
        if n == -1 and nullable:
            return None
        if n < 0 or self.pos + n > len(self.data):
            raise CorruptRecordError(f"{self.what}: string length {n} at byte {self.pos - 2} is invalid")
        s = self.data[self.pos:self.pos + n].decode()
        self.pos += n
        return s

    def blob(self, nullable: bool = False) -> bytes | None:
        n = self.take(">i")
        if n == -1 and nullable:
            return None
        if n < 0 or self.pos + n > len(self.data):
            raise CorruptRecordError(f"{self.what}: bytes length {n} at byte {self.pos - 4} is invalid")
        b = self.data[self.pos:self.pos + n]
        self.pos += n
        return b

    def count(self) -> int:
        n = self.take(">i")
        if n < 0 or n > len(self.data):
            raise CorruptRecordError(f"{self.what}: array length {n} at byte {self.pos - 4} is invalid")
        return n

    def done(self) -> None:
        if self.pos != len(self.data):
            raise CorruptRecordError(f"{self.what}: {len(self.data) - self.pos} bytes left over")


# ---- key and value --------------------------------------------------------------------------------
def encode_group_key(group: str) -> bytes:
    return struct.pack(">h", GROUP_KEY_VERSION) + _str(group)


def decode_group_key(data: bytes) -> str | None:
    """The group id, or None for another record type (the OffsetCommit key, versions 0-1)."""
    r = _Reader(data, "group metadata key")
    if r.take(">h") != GROUP_KEY_VERSION:
        return None
    group = r.string()
    r.done()
    return group


def encode_group_value(v: GroupMetadataValue) -> bytes:
    out = [struct.pack(">h", GROUP_VALUE_VERSION), _str(v.protocol_type), struct.pack(">i", v.generation),
           _str(v.protocol), _str(v.leader), struct.pack(">q", v.current_state_timestamp),
           struct.pack(">i", len(v.members))]
    for m in v.members:
        out += [_str(m.member_id), _str(m.group_instance_id), _str(m.client_id), _str(m.client_host),
                struct.pack(">ii", m.rebalance_timeout_ms, m.session_timeout_ms), _bytes(m.subscription),
                _bytes(m.assignment)]
    return b"".join(out)


def decode_group_value(data: bytes | None) -> GroupMetadataValue | None:
    """Versions 0-3 (non-flexible); None for a tombstone."""
    if data is None:
        return None
    r = _Reader(data, "group metadata value")
    version = r.take(">h")
    if version not in (0, 1, 2, 3):
        raise CorruptRecordError(f"group metadata value: version {version} is not 0-3")
    ptype, gen = r.string(), r.take(">i")
    protocol, leader = r.string(True), r.string(True)
    ts = r.take(">q") if version >= 2 else -1
    members = []
    for _ in range(r.count()):
        mid = r.string()
        instance = r.string(True) if version >= 3 else None
        client, host = r.string(), r.string()
        rebalance = r.take(">i") if version >= 1 else -1
        session = r.take(">i")
        members.append(MemberMetadata(mid, instance, client, host, rebalance, session, r.blob(), r.blob()))
    r.done()
    return GroupMetadataValue(ptype, gen, protocol, leader, ts, tuple(members))


# ---- the consumer protocol's embedded bytes ------------------------------------------------------
def _partitions(tps) -> bytes:
    by_topic: dict[str, list[int]] = {}
    for t, p in tps:
        by_topic.setdefault(t, []).append(int(p))
    out = [struct.pack(">i", len(by_topic))]
    for t, ps in by_topic.items():
        out += [_str(t), struct.pack(">i", len(ps)), struct.pack(f">{len(ps)}i", *ps)]
    return b"".join(out)


def _read_partitions(r: _Reader) -> list[tuple[str, int]]:
    out = []
    for _ in range(r.count()):
        t = r.string()
        out += [(t, r.take(">i")) for _ in range(r.count())]
    return out


def encode_subscription(topics, owned=(), generation: int = -1) -> bytes:
    return (struct.pack(">hi", 2, len(topics)) + b"".join(_str(t) for t in topics) + _bytes(None)
            + _partitions(owned) + struct.pack(">i", generation))


def decode_subscription(data: bytes) -> tuple[list[str], list[tuple[str, int]], int]:
    """(topics, owned partitions, generation id) of versions 0-3 (a rack id, if any, ignored)."""
    r = _Reader(data, "consumer subscription")
    version = r.take(">h")
    topics = [r.string() for _ in range(r.count())]
    r.blob(True)
    owned = _read_partitions(r) if version >= 1 else []
    generation = r.take(">i") if version >= 2 else -1
    return topics, owned, generation


def encode_assignment(tps) -> bytes:
    return struct.pack(">h", 0) + _partitions(tps) + _bytes(None)


def decode_assignment(data: bytes) -> list[tuple[str, int]]:
    r = _Reader(data, "consumer assignment")
    r.take(">h")
    out = _read_partitions(r)
    r.blob(True)
    return out
