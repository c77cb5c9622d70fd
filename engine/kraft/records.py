"""The metadata log's batches: data records (opaque bytes for now) and LeaderChangeMessage
control records, in Kafka's v2 record batch format with the leader epoch in every batch's
partitionLeaderEpoch.

A LeaderChangeMessage is a control batch (attributes bit 5) with one record whose key is the
control key (int16 version 0, int16 type 2 = LEADER_CHANGE) and whose value is the message
in its flexible version 0 (``LeaderChangeMessage.json``)::

    Version int16 (0), LeaderId int32,
    Voters         compact array: uvarint(n + 1), then per voter VoterId int32, tagged fields uvarint 0
    GrantingVoters compact array, as Voters
    tagged fields  uvarint 0

(Written by hand here, one message; the shared codec generator from Kafka's JSON takes over
when it lands, with the metadata records.)
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

from engine.errors import CorruptRecordError
from engine.records import ControlRecordType, SimpleRecord, encode_batch

__all__ = ["LeaderChangeMessage", "encode_leader_change", "decode_leader_change", "leader_change_batch",
           "data_batch", "control_key"]

_KEY = struct.Struct(">hh")
_HEAD = struct.Struct(">hi")
_INT32 = struct.Struct(">i")


def control_key(kind: ControlRecordType) -> bytes:
    return _KEY.pack(0, int(kind))


@dataclass(frozen=True)
class LeaderChangeMessage:
    leader_id: int
    voters: tuple
    granting_voters: tuple
    version: int = 0


def _uvarint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _read_uvarint(data: bytes, pos: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        if pos >= len(data):
            raise CorruptRecordError("LeaderChangeMessage ends inside a varint")
        b = data[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos
        shift += 7


def encode_leader_change(msg: LeaderChangeMessage) -> bytes:
    out = bytearray(_HEAD.pack(msg.version, msg.leader_id))
    for voters in (msg.voters, msg.granting_voters):
        out += _uvarint(len(voters) + 1)
        for v in voters:
            out += _INT32.pack(v) + b"\x00"
    out += b"\x00"
    return bytes(out)


def decode_leader_change(value: bytes) -> LeaderChangeMessage:
    if len(value) < _HEAD.size:
        raise CorruptRecordError(f"LeaderChangeMessage of {len(value)} bytes, needs at least {_HEAD.size}")
    version, leader = _HEAD.unpack_from(value)
    pos = _HEAD.size
    arrays = []
    for _ in range(2):
        n, pos = _read_uvarint(value, pos)
        items = []
        for _ in range(n - 1):
            items.append(_INT32.unpack_from(value, pos)[0])
            tags, pos = _read_uvarint(value, pos + 4)
            if tags:
                raise CorruptRecordError("unexpected tagged fields in a LeaderChangeMessage voter")
        arrays.append(tuple(items))
    return LeaderChangeMessage(leader, arrays[0], arrays[1], version)


def leader_change_batch(msg: LeaderChangeMessage, *, base_offset: int, epoch: int, now_ms: int) -> bytes:
    record = SimpleRecord(encode_leader_change(msg), key=control_key(ControlRecordType.LEADER_CHANGE),
                          timestamp=now_ms)
    return encode_batch([record], base_offset=base_offset, partition_leader_epoch=epoch, now_ms=now_ms,
                        is_control=True)[0]


def data_batch(values: list[bytes], *, base_offset: int, epoch: int, now_ms: int) -> bytes:
    records = [SimpleRecord(bytes(v), timestamp=now_ms) for v in values]
    return encode_batch(records, base_offset=base_offset, partition_leader_epoch=epoch, now_ms=now_ms)[0]
