"""Committed offsets as records of ``__consumer_offsets``, in Kafka's own schemas
(``group-coordinator/src/main/resources/common/message/OffsetCommitKey.json`` and
``OffsetCommitValue.json``): key v1, value v3, byte tables in docs/file-formats.md.

A null value (tombstone) deletes the group's offset for that partition. Because the topic is
compacted on these keys, the cleaner keeps only each partition's latest commit.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

from ..errors import CorruptRecordError

__all__ = ["OffsetKey", "OffsetValue", "encode_key", "decode_key", "encode_value", "decode_value",
           "OFFSETS_TOPIC", "KEY_VERSION", "VALUE_VERSION"]

OFFSETS_TOPIC = "__consumer_offsets"
KEY_VERSION = 1
VALUE_VERSION = 3


@dataclass(frozen=True)
class OffsetKey:
    group: str
    topic: str
    partition: int


@dataclass(frozen=True)
class OffsetValue:
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp: int


def _string(s: str) -> bytes:
    b = s.encode()
    if len(b) > 32767:
        raise ValueError(f"string of {len(b)} bytes does not fit an int16 length")
    return struct.pack(">h", len(b)) + b


def _read_string(data: bytes, pos: int, what: str) -> tuple[str, int]:
    if pos + 2 > len(data):
        raise CorruptRecordError(f"offset commit {what}: truncated string length at byte {pos}")
    (n,) = struct.unpack_from(">h", data, pos)
    pos += 2
    if n < 0 or pos + n > len(data):
        raise CorruptRecordError(f"offset commit {what}: string length {n} at byte {pos - 2} runs past the end")
    return data[pos:pos + n].decode(), pos + n


def encode_key(key: OffsetKey) -> bytes:
    return struct.pack(">h", KEY_VERSION) + _string(key.group) + _string(key.topic) + struct.pack(">i", key.partition)


def decode_key(data: bytes) -> OffsetKey | None:
    """The key, or None for another record type of the topic (group metadata, version >= 2)."""
    if len(data) < 2:
        raise CorruptRecordError("offset commit key: shorter than its version field")
    (version,) = struct.unpack_from(">h", data, 0)
    if version not in (0, 1):
        return None
    group, pos = _read_string(data, 2, "key")
    topic, pos = _read_string(data, pos, "key")
    if pos + 4 != len(data):
        raise CorruptRecordError(f"offset commit key: {len(data) - pos} bytes where the int32 partition should be")
    (partition,) = struct.unpack_from(">i", data, pos)
    return OffsetKey(group, topic, partition)


def encode_value(value: OffsetValue) -> bytes:
    return (struct.pack(">hqi", VALUE_VERSION, value.offset, value.leader_epoch) + _string(value.metadata)
            + struct.pack(">q", value.commit_timestamp))


def decode_value(data: bytes | None) -> OffsetValue | None:
    """Versions 0-3 (non-flexible); None for a tombstone."""
    if data is None:
        return None
    if len(data) < 10:
        raise CorruptRecordError("offset commit value: too short")
    version, offset = struct.unpack_from(">hq", data, 0)
    pos = 10
    epoch = -1
    if version >= 3:
        (epoch,) = struct.unpack_from(">i", data, pos)
        pos += 4
    elif version not in (0, 1, 2):
        raise CorruptRecordError(f"offset commit value: version {version} is not 0-3")
    metadata, pos = _read_string(data, pos, "value")
    (ts,) = struct.unpack_from(">q", data, pos)
    return OffsetValue(offset, epoch, metadata, ts)
