"""The metadata records a KRaft controller writes to ``__cluster_metadata``, one narrow
encode/decode seam for their bytes, and :class:`MetadataState`: the state every node
builds by applying them in log order (the controller its whole log, a broker what is
committed).

Records carry Kafka's field names (``metadata/src/main/resources/common/metadata/*.json``)
and apiKeys. Only :func:`encode_record` and :func:`decode_record` know the bytes: Kafka's
ApiMessageAndVersion framing through the classes generated from those definitions
(:mod:`engine.kraft.metadata`).

How a PartitionChangeRecord changes a partition is Kafka's ``PartitionRegistration.merge``:
``Leader`` = -2 means "no change"; any other value (the same leader included) bumps the
leader epoch; ``Isr`` absent (None) means "no change"; every record bumps the partition epoch.
"""
from __future__ import annotations

import base64
import json
from dataclasses import dataclass, fields
from typing import Any

from engine.config import LogConfig, config_from_mapping
from engine.errors import CorruptRecordError
from engine.kraft import metadata as kmeta

from .controller import BrokerRegistration, PartitionMeta, TopicMeta

__all__ = ["RegisterBrokerRecord", "TopicRecord", "PartitionRecord", "ConfigRecord", "PartitionChangeRecord",
           "FenceBrokerRecord", "UnfenceBrokerRecord", "FeatureLevelRecord", "ProducerIdsRecord", "RECORD_TYPES",
           "NO_LEADER_CHANGE", "TOPIC_RESOURCE", "encode_record", "decode_record", "MetadataState",
           "AlterPartitionResponse", "METADATA_VERSION"]

NO_LEADER_CHANGE = -2
TOPIC_RESOURCE = 2          # ConfigResource.Type.TOPIC
# metadata.version of Kafka 4.0 (MetadataVersion IBP_4_0_IV3), written once by the first leader.
METADATA_VERSION = 25


@dataclass(frozen=True)
class RegisterBrokerRecord:
    API_KEY = 0
    BrokerId: int
    IncarnationId: int
    BrokerEpoch: int
    Fenced: bool = True
    InControlledShutdown: bool = False


@dataclass(frozen=True)
class TopicRecord:
    API_KEY = 2
    Name: str
    TopicId: str


@dataclass(frozen=True)
class PartitionRecord:
    API_KEY = 3
    PartitionId: int
    TopicId: str
    Replicas: tuple
    Isr: tuple
    Leader: int
    LeaderEpoch: int
    PartitionEpoch: int


@dataclass(frozen=True)
class ConfigRecord:
    API_KEY = 4
    ResourceType: int
    ResourceName: str
    Name: str
    Value: str | None


@dataclass(frozen=True)
class PartitionChangeRecord:
    API_KEY = 5
    PartitionId: int
    TopicId: str
    Isr: tuple | None = None
    Leader: int = NO_LEADER_CHANGE


@dataclass(frozen=True)
class FenceBrokerRecord:
    API_KEY = 7
    Id: int
    Epoch: int


@dataclass(frozen=True)
class UnfenceBrokerRecord:
    API_KEY = 8
    Id: int
    Epoch: int


@dataclass(frozen=True)
class FeatureLevelRecord:
    API_KEY = 12
    Name: str
    FeatureLevel: int


@dataclass(frozen=True)
class ProducerIdsRecord:
    API_KEY = 15
    BrokerId: int
    BrokerEpoch: int
    NextProducerId: int


RECORD_TYPES = {cls.API_KEY: cls for cls in (RegisterBrokerRecord, TopicRecord, PartitionRecord, ConfigRecord,
                                             PartitionChangeRecord, FenceBrokerRecord, UnfenceBrokerRecord,
                                             FeatureLevelRecord, ProducerIdsRecord)}


@dataclass(frozen=True)
class AlterPartitionResponse:
    """Active controller → partition leader: its AlterPartition was refused (``error`` a
    Kafka error name); an accepted one is answered by the metadata log itself."""
    api = "AlterPartitionResponse"
    controller: int
    topic: str
    partition: int
    error: str


# ---- the byte seam ------------------------------------------------------------------------
# The bytes are Kafka's: each record value framed as ApiMessageAndVersion by the classes generated
# from Kafka's JSON definitions (engine.kraft.metadata). Our values keep Kafka's field names in
# their JSON spelling; the generated classes spell them in snake_case.

def _snake(name: str) -> str:
    return "".join("_" + c.lower() if c.isupper() and i else c.lower() for i, c in enumerate(name))


_INCARNATION_MARK = b"kafkaviz"   # first 8 bytes of an IncarnationId; the last 8: the process's incarnation


def incarnation_uuid(incarnation: int) -> str:
    """A broker process's IncarnationId (a Kafka Uuid, base64url without padding) for our counter."""
    raw = _INCARNATION_MARK + int(incarnation).to_bytes(8, "big")
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def incarnation_of(uuid: str) -> int:
    raw = base64.urlsafe_b64decode(uuid + "=" * (-len(uuid) % 4))
    if len(raw) != 16:
        raise CorruptRecordError(f"IncarnationId {uuid!r} is not a Uuid")
    return int.from_bytes(raw[8:], "big")


def encode_record(rec: Any) -> bytes:
    """The bytes of one metadata record in the log: ApiMessageAndVersion, Kafka's record at its
    highest version (``kafka-dump-log.sh --cluster-metadata-decoder`` reads them)."""
    cls = kmeta.RECORD_TYPES[rec.API_KEY]
    values = {}
    for f in fields(rec):
        v = getattr(rec, f.name)
        if f.name == "IncarnationId":
            v = incarnation_uuid(v)
        values[_snake(f.name)] = v
    return kmeta.encode(cls(**values))


def decode_record(value: bytes) -> Any:
    try:
        msg = kmeta.decode(value)
    except kmeta.MetadataParseError as exc:
        raise CorruptRecordError(f"not a metadata record: {exc}") from None
    cls = RECORD_TYPES.get(msg.SPEC.api_key)
    if cls is None:
        raise CorruptRecordError(f"metadata record type {type(msg).__name__} is not one the controller writes")
    args = {}
    for f in fields(cls):
        v = getattr(msg, _snake(f.name))
        if f.name == "IncarnationId":
            v = incarnation_of(v)
        elif isinstance(v, list):
            v = tuple(v)
        args[f.name] = v
    return cls(**args)


def config_value(value: Any) -> str | None:
    """A topic config value as ConfigRecord's Value string (Kafka keeps every config as text)."""
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value)


def parse_config_value(text: str | None) -> Any:
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return text


# ---- the state records build ----------------------------------------------------------------

class MetadataState:
    """Topics, partitions, broker registrations and features, as applying records in log
    order makes them. ``offset`` is the next offset to apply (the applied offset + 1)."""

    def __init__(self, base_log: LogConfig) -> None:
        self.base_log = base_log
        self.topics: dict[str, TopicMeta] = {}
        self.topic_ids: dict[str, str] = {}          # topic id -> name
        self.brokers: dict[int, BrokerRegistration] = {}
        self.features: dict[str, int] = {}
        self.next_broker_epoch = 1
        self.next_producer_id = 0
        self.offset = 0

    def apply(self, rec: Any, now_ms: int = 0) -> PartitionMeta | None:
        """Apply one record; returns the partition it changed, if any."""
        t = type(rec)
        if t is PartitionChangeRecord:
            pm = self._partition(rec.TopicId, rec.PartitionId)
            if pm is None:
                return None
            if rec.Leader != NO_LEADER_CHANGE:
                pm.leader = rec.Leader
                pm.leader_epoch += 1
            if rec.Isr is not None:
                pm.isr = tuple(rec.Isr)
            pm.partition_epoch += 1
            return pm
        if t is PartitionRecord:
            name = self.topic_ids.get(rec.TopicId)
            if name is None:
                return None
            meta = self.topics[name]
            pm = PartitionMeta(name, rec.PartitionId, tuple(rec.Replicas), rec.Leader, rec.LeaderEpoch,
                               rec.PartitionEpoch, tuple(rec.Isr))
            while len(meta.partitions) <= rec.PartitionId:
                meta.partitions.append(None)
            meta.partitions[rec.PartitionId] = pm
            return pm
        if t is RegisterBrokerRecord:
            self.brokers[rec.BrokerId] = BrokerRegistration(rec.BrokerId, rec.IncarnationId, rec.BrokerEpoch,
                                                            rec.Fenced, rec.InControlledShutdown, now_ms)
            self.next_broker_epoch = max(self.next_broker_epoch, rec.BrokerEpoch + 1)
        elif t is FenceBrokerRecord or t is UnfenceBrokerRecord:
            reg = self.brokers.get(rec.Id)
            if reg is not None and reg.broker_epoch == rec.Epoch:
                reg.fenced = t is FenceBrokerRecord
                if not reg.fenced:
                    reg.shutting_down = False
        elif t is TopicRecord:
            self.topic_ids[rec.TopicId] = rec.Name
            self.topics[rec.Name] = TopicMeta(rec.Name, self.base_log, {})
        elif t is ConfigRecord:
            meta = self.topics.get(rec.ResourceName) if rec.ResourceType == TOPIC_RESOURCE else None
            if meta is not None:
                if rec.Value is None:
                    meta.config_changes.pop(rec.Name, None)
                else:
                    meta.config_changes[rec.Name] = parse_config_value(rec.Value)
                meta.config = (config_from_mapping(LogConfig, meta.config_changes, base=self.base_log)
                               if meta.config_changes else self.base_log)
        elif t is FeatureLevelRecord:
            self.features[rec.Name] = rec.FeatureLevel
        elif t is ProducerIdsRecord:
            self.next_producer_id = max(self.next_producer_id, rec.NextProducerId)
        return None

    def _partition(self, topic_id: str, partition: int) -> PartitionMeta | None:
        name = self.topic_ids.get(topic_id)
        meta = self.topics.get(name) if name is not None else None
        if meta is None or not 0 <= partition < len(meta.partitions):
            return None
        return meta.partitions[partition]

    def topic_id(self, name: str) -> str | None:
        return next((tid for tid, n in self.topic_ids.items() if n == name), None)

    def signature(self) -> dict:
        """Everything the records decide, as plain data (to compare two states)."""
        return {
            "topics": {n: {"config": dict(sorted(m.config_changes.items())),
                           "partitions": [None if pm is None else pm.to_dict() for pm in m.partitions]}
                       for n, m in sorted(self.topics.items())},
            "brokers": {b: [r.incarnation, r.broker_epoch, r.fenced] for b, r in sorted(self.brokers.items())},
            "features": dict(sorted(self.features.items())),
            "next_producer_id": self.next_producer_id,
        }
