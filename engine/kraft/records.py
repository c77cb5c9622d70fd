"""The metadata log's batches, in Kafka's v2 record batch format with the leader epoch in every
batch's partitionLeaderEpoch:

- data batches: records whose values are metadata records framed as ApiMessageAndVersion
  (:mod:`engine.kraft.metadata`), or, for the quorum's own tests, opaque bytes;
- control batches (attributes bit 5) of one record each, whose key is the control key (int16
  version 0, int16 type) and whose value is the control message in its flexible version 0,
  with no frame: LeaderChangeMessage (type 2), SnapshotHeaderRecord (3), SnapshotFooterRecord
  (4), KRaftVersionRecord (5), VotersRecord (6).

The control messages' classes are generated from Kafka's JSON definitions
(``engine/protocol/definitions/``), as the metadata records' are.
"""
from __future__ import annotations

import struct

from engine.errors import CorruptRecordError
from engine.protocol.classes import Message, message_class
from engine.protocol.codec import Codec, DecodeError
from engine.records import ControlRecordType, SimpleRecord, encode_batch

from . import metadata

__all__ = ["LeaderChangeMessage", "SnapshotHeaderRecord", "SnapshotFooterRecord", "KRaftVersionRecord",
           "VotersRecord", "CONTROL_MESSAGES", "CONTROL_VERSION", "control_key", "control_type",
           "encode_control", "decode_control", "leader_change_message", "encode_leader_change",
           "decode_leader_change", "leader_change_batch", "control_batch", "data_batch", "metadata_batch",
           "kraft_version_record", "voters_record", "KRAFT_VERSION_RECONFIG", "BOOTSTRAP_VOTER_PORT"]

_KEY = struct.Struct(">hh")

LeaderChangeMessage = message_class("LeaderChangeMessage")
SnapshotHeaderRecord = message_class("SnapshotHeaderRecord")
SnapshotFooterRecord = message_class("SnapshotFooterRecord")
KRaftVersionRecord = message_class("KRaftVersionRecord")
VotersRecord = message_class("VotersRecord")

CONTROL_VERSION = 0
"""The version every control message is written and read at (ControlRecordUtils' *_CURRENT_VERSION)."""

CONTROL_MESSAGES: dict[ControlRecordType, type] = {
    ControlRecordType.LEADER_CHANGE: LeaderChangeMessage,
    ControlRecordType.SNAPSHOT_HEADER: SnapshotHeaderRecord,
    ControlRecordType.SNAPSHOT_FOOTER: SnapshotFooterRecord,
    ControlRecordType.KRAFT_VERSION: KRaftVersionRecord,
    ControlRecordType.KRAFT_VOTERS: VotersRecord,
}
_TYPE_OF = {cls: kind for kind, cls in CONTROL_MESSAGES.items()}
_CODECS = {kind: Codec(cls.SPEC, CONTROL_VERSION) for kind, cls in CONTROL_MESSAGES.items()}


def control_key(kind: ControlRecordType) -> bytes:
    return _KEY.pack(0, int(kind))


def control_type(key: bytes | None) -> ControlRecordType:
    """The type named by a control record's key (CorruptRecordError if it names none)."""
    if key is None or len(key) < _KEY.size:
        raise CorruptRecordError(f"control record key of {0 if key is None else len(key)} bytes, needs 4")
    version, kind = _KEY.unpack_from(key)
    if version != 0:
        raise CorruptRecordError(f"control record key version {version} (only 0 exists)")
    try:
        return ControlRecordType(kind)
    except ValueError:
        raise CorruptRecordError(f"unknown control record type {kind}") from None


def encode_control(msg: Message) -> tuple[bytes, bytes]:
    """(key, value) of a control record carrying ``msg``."""
    kind = _TYPE_OF.get(type(msg))
    if kind is None:
        raise TypeError(f"not a control message: {msg!r}")
    return control_key(kind), _CODECS[kind].encode(msg.to_value(CONTROL_VERSION))


def decode_control(key: bytes | None, value: bytes | None) -> Message:
    """The control message in a control record of the metadata log (CorruptRecordError if bad)."""
    kind = control_type(key)
    codec = _CODECS.get(kind)
    if codec is None:
        raise CorruptRecordError(f"control record type {kind.name} does not belong in the metadata log")
    if value is None:
        raise CorruptRecordError(f"{kind.name} control record without a value")
    try:
        decoded, end = codec.decode(value)
    except DecodeError as exc:
        raise CorruptRecordError(f"{kind.name}: {exc}") from None
    if end != len(value):
        raise CorruptRecordError(f"{kind.name}: {len(value) - end} byte(s) after the message")
    return CONTROL_MESSAGES[kind].from_value(decoded, CONTROL_VERSION)


def leader_change_message(leader_id: int, voters, granting_voters) -> Message:
    """The LeaderChangeMessage a new leader writes: its id, the voters and those that voted for it."""
    return LeaderChangeMessage(version=CONTROL_VERSION, leader_id=leader_id,
                               voters=tuple(LeaderChangeMessage.Voter(voter_id=v) for v in voters),
                               granting_voters=tuple(LeaderChangeMessage.Voter(voter_id=v) for v in granting_voters))


def encode_leader_change(msg: Message) -> bytes:
    return encode_control(msg)[1]


def decode_leader_change(value: bytes) -> Message:
    return decode_control(control_key(ControlRecordType.LEADER_CHANGE), value)


def control_batch(msg: Message | list, *, base_offset: int, epoch: int, now_ms: int) -> bytes:
    """One control batch holding ``msg`` (or each message of a list, in order: Kafka writes a
    snapshot's SnapshotHeader, KRaftVersionRecord and VotersRecord in one batch, and a new
    leader's LeaderChangeMessage, KRaftVersionRecord and VotersRecord in one)."""
    msgs = msg if isinstance(msg, list) else [msg]
    records = []
    for m in msgs:
        key, value = encode_control(m)
        records.append(SimpleRecord(value, key=key, timestamp=now_ms))
    return encode_batch(records, base_offset=base_offset, partition_leader_epoch=epoch, now_ms=now_ms,
                        is_control=True)[0]


# KIP-853. kraft.version 1 (KRaftVersion.KRAFT_VERSION_1) is the dynamic quorum Kafka 4 formats with
# --standalone or --initial-controllers: the voter set lives in the log as a VotersRecord. With a
# static controller.quorum.voters (kraft.version 0) neither record is ever written.
KRAFT_VERSION_RECONFIG = 1
BOOTSTRAP_VOTER_PORT = 9093      # the CONTROLLER listener the voters' endpoints name


def kraft_version_record(kraft_version: int = KRAFT_VERSION_RECONFIG) -> Message:
    return KRaftVersionRecord(version=CONTROL_VERSION, k_raft_version=kraft_version)


def voters_record(voters, directory_ids: dict, host_of=None, kraft_version: int = KRAFT_VERSION_RECONFIG) -> Message:
    """VotersRecord (VoterSet.toVotersRecord): each voter's id, directory id, its CONTROLLER
    endpoint, and the kraft.version range it supports (0 to ``kraft_version``)."""
    host_of = host_of or (lambda v: f"node-{v}")
    return VotersRecord(version=CONTROL_VERSION, voters=tuple(
        VotersRecord.Voter(voter_id=v, voter_directory_id=directory_ids[v],
                           endpoints=(VotersRecord.Endpoint(name="CONTROLLER", host=host_of(v), port=BOOTSTRAP_VOTER_PORT),),
                           k_raft_version_feature=VotersRecord.KRaftVersionFeature(min_supported_version=0,
                                                                                   max_supported_version=kraft_version))
        for v in sorted(voters)))


def leader_change_batch(msg: Message, *, base_offset: int, epoch: int, now_ms: int) -> bytes:
    return control_batch(msg, base_offset=base_offset, epoch=epoch, now_ms=now_ms)


def data_batch(values: list, *, base_offset: int, epoch: int, now_ms: int) -> bytes:
    """A data batch: metadata records (encoded as ApiMessageAndVersion) or raw values."""
    records = [SimpleRecord(metadata.encode(v) if isinstance(v, Message) else bytes(v), timestamp=now_ms)
               for v in values]
    return encode_batch(records, base_offset=base_offset, partition_leader_epoch=epoch, now_ms=now_ms)[0]


def metadata_batch(records: list, *, base_offset: int, epoch: int, now_ms: int) -> bytes:
    """A data batch of metadata records (each framed as ApiMessageAndVersion)."""
    return data_batch([metadata.encode(r) for r in records], base_offset=base_offset, epoch=epoch, now_ms=now_ms)
