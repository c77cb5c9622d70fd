"""Kafka's metadata records, as the ``__cluster_metadata`` log carries them.

Each record type is a class generated from Kafka's JSON definition
(``metadata/src/main/resources/common/metadata/*.json``, committed under
``engine/protocol/definitions/``): snake_case fields with the JSON's defaults, plus ``version``
(the record's schema version, by default the highest the definition has)::

    from engine.kraft import metadata
    rec = metadata.TopicRecord(name="orders", topic_id="5pTiLd2lTuyzRbL7F0Rw4A")
    raw = metadata.encode(rec)          # a record value in the metadata log
    assert metadata.decode(raw) == rec

A record value is framed as ApiMessageAndVersion (``AbstractApiMessageSerde``)::

    frame version  unsigned varint (1; 0 was KRaft's 2.8 preview and is refused)
    apiKey         unsigned varint (TopicRecord 2, PartitionRecord 3, ...)
    version        unsigned varint
    body           the record at that version, flexible (compact lengths, tagged fields)

Decoding refuses, with :class:`MetadataParseError` and Kafka's words, a frame version other than
1, an unknown apiKey, a version the definition lacks, a body that does not decode, and bytes left
after the body ("Found N byte(s) of garbage after ...").
"""
from __future__ import annotations

from engine.protocol.codec import Codec, DecodeError, encode_uvarint, read_uvarint
from engine.protocol.classes import Message, message_class
from engine.protocol.schema import definition_names, load_message, snake_name

__all__ = ["MetadataParseError", "FRAME_VERSION", "RECORD_TYPES", "RECORD_CLASSES", "encode", "decode",
           "record_type_name", "to_json", "body_codec",
           "RegisterBrokerRecord", "UnregisterBrokerRecord", "TopicRecord", "PartitionRecord", "ConfigRecord",
           "PartitionChangeRecord", "FenceBrokerRecord", "UnfenceBrokerRecord", "RemoveTopicRecord",
           "DelegationTokenRecord", "UserScramCredentialRecord", "FeatureLevelRecord", "ClientQuotaRecord",
           "ProducerIdsRecord", "BrokerRegistrationChangeRecord", "AccessControlEntryRecord",
           "RemoveAccessControlEntryRecord", "NoOpRecord", "ZkMigrationStateRecord", "RemoveUserScramCredentialRecord",
           "BeginTransactionRecord", "EndTransactionRecord", "AbortTransactionRecord", "RemoveDelegationTokenRecord",
           "RegisterControllerRecord"]

FRAME_VERSION = 1


class MetadataParseError(ValueError):
    """A metadata record value that does not decode (Kafka's MetadataParseException)."""


def _metadata_classes() -> dict[int, type]:
    out = {}
    for name in definition_names():
        spec = load_message(name)
        if spec.type == "metadata":
            out[spec.api_key] = message_class(name, version_field=True)
    return dict(sorted(out.items()))


RECORD_TYPES: dict[int, type] = _metadata_classes()
"""apiKey -> generated class, for every metadata record Kafka defines."""
RECORD_CLASSES: dict[str, type] = {cls.__name__: cls for cls in RECORD_TYPES.values()}

RegisterBrokerRecord = RECORD_CLASSES["RegisterBrokerRecord"]
UnregisterBrokerRecord = RECORD_CLASSES["UnregisterBrokerRecord"]
TopicRecord = RECORD_CLASSES["TopicRecord"]
PartitionRecord = RECORD_CLASSES["PartitionRecord"]
ConfigRecord = RECORD_CLASSES["ConfigRecord"]
PartitionChangeRecord = RECORD_CLASSES["PartitionChangeRecord"]
FenceBrokerRecord = RECORD_CLASSES["FenceBrokerRecord"]
UnfenceBrokerRecord = RECORD_CLASSES["UnfenceBrokerRecord"]
RemoveTopicRecord = RECORD_CLASSES["RemoveTopicRecord"]
DelegationTokenRecord = RECORD_CLASSES["DelegationTokenRecord"]
UserScramCredentialRecord = RECORD_CLASSES["UserScramCredentialRecord"]
FeatureLevelRecord = RECORD_CLASSES["FeatureLevelRecord"]
ClientQuotaRecord = RECORD_CLASSES["ClientQuotaRecord"]
ProducerIdsRecord = RECORD_CLASSES["ProducerIdsRecord"]
BrokerRegistrationChangeRecord = RECORD_CLASSES["BrokerRegistrationChangeRecord"]
AccessControlEntryRecord = RECORD_CLASSES["AccessControlEntryRecord"]
RemoveAccessControlEntryRecord = RECORD_CLASSES["RemoveAccessControlEntryRecord"]
NoOpRecord = RECORD_CLASSES["NoOpRecord"]
ZkMigrationStateRecord = RECORD_CLASSES["ZkMigrationStateRecord"]
RemoveUserScramCredentialRecord = RECORD_CLASSES["RemoveUserScramCredentialRecord"]
BeginTransactionRecord = RECORD_CLASSES["BeginTransactionRecord"]
EndTransactionRecord = RECORD_CLASSES["EndTransactionRecord"]
AbortTransactionRecord = RECORD_CLASSES["AbortTransactionRecord"]
RemoveDelegationTokenRecord = RECORD_CLASSES["RemoveDelegationTokenRecord"]
RegisterControllerRecord = RECORD_CLASSES["RegisterControllerRecord"]

_CODECS: dict[tuple[int, int], Codec] = {}


def body_codec(api_key: int, version: int) -> Codec:
    """The generated reader/writer of a record type's body at a version (ValueError if none)."""
    c = _CODECS.get((api_key, version))
    if c is None:
        cls = RECORD_TYPES.get(api_key)
        if cls is None:
            raise ValueError(f"unknown metadata record type {api_key}")
        if version not in cls.SPEC.valid:
            raise ValueError(f"{cls.__name__} has no version {version} "
                             f"(valid {cls.SPEC.valid.low}-{cls.SPEC.valid.high})")
        c = _CODECS[(api_key, version)] = Codec(cls.SPEC, version)
    return c


def record_type_name(cls_or_record) -> str:
    """``TOPIC_RECORD``: MetadataRecordType's name, as the dump tool prints it."""
    name = cls_or_record.__name__ if isinstance(cls_or_record, type) else type(cls_or_record).__name__
    return snake_name(name).upper()


def encode(record: Message) -> bytes:
    """The ApiMessageAndVersion bytes of ``record`` at ``record.version``."""
    spec = record.SPEC
    if RECORD_TYPES.get(spec.api_key) is not type(record):
        raise TypeError(f"not a metadata record: {record!r}")
    codec = body_codec(spec.api_key, record.version)
    out = bytearray()
    encode_uvarint(out, FRAME_VERSION)
    encode_uvarint(out, spec.api_key)
    encode_uvarint(out, record.version)
    codec.encode_into(out, record.to_value(record.version))
    return bytes(out)


def _short(data, pos: int, entity: str) -> tuple[int, int]:
    try:
        value, pos = read_uvarint(data, pos)
    except DecodeError as exc:
        raise MetadataParseError(f"Error while reading {entity}: {exc}") from None
    if value > 0x7FFF:
        raise MetadataParseError(f"Value for {entity} was too large.")
    return value, pos


def decode(data: bytes) -> Message:
    """A record value of the metadata log -> its generated record (MetadataParseError if bad)."""
    view = memoryview(bytes(data))
    frame, pos = _short(view, 0, "frame version")
    if frame == 0:
        raise MetadataParseError("Could not deserialize metadata record with frame version 0 "
                                 "(KRaft's 2.8 preview format).")
    if frame != FRAME_VERSION:
        raise MetadataParseError(f"Could not deserialize metadata record due to unknown frame version {frame} "
                                 f"(only frame version {FRAME_VERSION} is supported)")
    api_key, pos = _short(view, pos, "type")
    version, pos = _short(view, pos, "version")
    try:
        codec = body_codec(api_key, version)
    except ValueError as exc:
        raise MetadataParseError(str(exc)) from None
    cls = RECORD_TYPES[api_key]
    try:
        value, end = codec.decode(view, pos)
    except DecodeError as exc:
        raise MetadataParseError(f"Failed to deserialize record with type {api_key} ({cls.__name__}): {exc}") from None
    if end != len(view):
        raise MetadataParseError(f"Found {len(view) - end} byte(s) of garbage after {api_key} ({cls.__name__})")
    return cls.from_value(value, version, {"version": version})


def to_json(record: Message) -> dict:
    """``{"type": "TOPIC_RECORD", "version": 0, "data": {...}}``, as MetadataJsonConverters and the
    dump tool's ``--cluster-metadata-decoder`` write a record."""
    return {"type": record_type_name(record), "version": record.version, "data": record.to_json(record.version)}
