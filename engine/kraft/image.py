"""The metadata image: metadata records folded into the current state, and written back out as
the records a snapshot holds (Kafka's ``MetadataImage`` and its ``write``).

A snapshot of the metadata log does not replay history: it holds one record per thing that
exists now. :class:`MetadataImage` applies records in log order:

- FeatureLevelRecord sets a feature's level (level 0 removes it);
- RegisterBrokerRecord registers a broker (replacing its previous registration);
  UnregisterBrokerRecord removes it; FenceBrokerRecord / UnfenceBrokerRecord and
  BrokerRegistrationChangeRecord (fenced 1 / -1, inControlledShutdown 1) change its flags;
- TopicRecord creates a topic, PartitionRecord a partition; PartitionChangeRecord changes the fields
  it sets (Leader -2 and LeaderRecoveryState -1 mean "unchanged"), bumps the partition epoch, and
  the leader epoch when the leader changed (``PartitionRegistration.merge``); RemoveTopicRecord
  removes the topic, its partitions and its configs;
- ConfigRecord sets a config (a null value removes it); ProducerIdsRecord keeps the latest block;
  RegisterControllerRecord the latest registration per controller; NoOpRecord changes nothing;
- any other record is kept as it is, in order.

:meth:`MetadataImage.records` writes the image in Kafka's order: features (``metadata.version``
first), brokers, controllers, topics with their partitions, configs, producer ids, the rest.
:func:`compact` is the fold over encoded values: ``compact(compact(a) + b) == compact(a + b)``.
"""
from __future__ import annotations

import dataclasses

from . import metadata as md

__all__ = ["MetadataImage", "compact"]

_TOPIC_RESOURCE = 2    # ConfigResource.Type.TOPIC


class MetadataImage:
    def __init__(self) -> None:
        self.features: dict[str, int] = {}
        self.brokers: dict[int, object] = {}
        self.controllers: dict[int, object] = {}
        self.topics: dict[str, object] = {}                 # topic id -> TopicRecord
        self.partitions: dict[str, dict[int, object]] = {}  # topic id -> partition -> PartitionRecord
        self.configs: dict[tuple, object] = {}              # (type, resource, name) -> ConfigRecord
        self.producer_ids = None
        self.other: list = []

    def apply(self, rec) -> None:
        t = type(rec)
        if t is md.FeatureLevelRecord:
            if rec.feature_level == 0:
                self.features.pop(rec.name, None)
            else:
                self.features[rec.name] = rec.feature_level
        elif t is md.RegisterBrokerRecord:
            self.brokers[rec.broker_id] = rec
        elif t is md.UnregisterBrokerRecord:
            self.brokers.pop(rec.broker_id, None)
        elif t in (md.FenceBrokerRecord, md.UnfenceBrokerRecord):
            b = self.brokers.get(rec.id)
            if b is not None:
                self.brokers[rec.id] = dataclasses.replace(b, fenced=t is md.FenceBrokerRecord)
        elif t is md.BrokerRegistrationChangeRecord:
            b = self.brokers.get(rec.broker_id)
            if b is not None:
                if rec.fenced in (1, -1):
                    b = dataclasses.replace(b, fenced=rec.fenced == 1)
                if rec.in_controlled_shutdown == 1:
                    b = dataclasses.replace(b, in_controlled_shutdown=True)
                self.brokers[rec.broker_id] = b
        elif t is md.RegisterControllerRecord:
            self.controllers[rec.controller_id] = rec
        elif t is md.TopicRecord:
            self.topics[rec.topic_id] = rec
            self.partitions.setdefault(rec.topic_id, {})
        elif t is md.PartitionRecord:
            self.partitions.setdefault(rec.topic_id, {})[rec.partition_id] = rec
        elif t is md.PartitionChangeRecord:
            parts = self.partitions.get(rec.topic_id)
            if parts is not None and rec.partition_id in parts:
                parts[rec.partition_id] = _merge(parts[rec.partition_id], rec)
        elif t is md.RemoveTopicRecord:
            topic = self.topics.pop(rec.topic_id, None)
            self.partitions.pop(rec.topic_id, None)
            if topic is not None:
                for key in [k for k in self.configs if k[0] == _TOPIC_RESOURCE and k[1] == topic.name]:
                    del self.configs[key]
        elif t is md.ConfigRecord:
            key = (rec.resource_type, rec.resource_name, rec.name)
            if rec.value is None:
                self.configs.pop(key, None)
            else:
                self.configs[key] = rec
        elif t is md.ProducerIdsRecord:
            self.producer_ids = rec
        elif t is md.NoOpRecord:
            pass
        else:
            self.other.append(rec)

    def records(self) -> list:
        out: list = []
        names = sorted(self.features, key=lambda n: (n != "metadata.version", n))
        out += [md.FeatureLevelRecord(name=n, feature_level=self.features[n]) for n in names]
        out += [self.brokers[i] for i in sorted(self.brokers)]
        out += [self.controllers[i] for i in sorted(self.controllers)]
        for tid in sorted(self.topics, key=lambda i: (self.topics[i].name, i)):
            out.append(self.topics[tid])
            parts = self.partitions.get(tid, {})
            out += [parts[p] for p in sorted(parts)]
        for tid in sorted(t for t in self.partitions if t not in self.topics):   # before their TopicRecord
            out += [self.partitions[tid][p] for p in sorted(self.partitions[tid])]
        out += [self.configs[k] for k in sorted(self.configs, key=lambda k: (k[0], k[1] or "", k[2] or ""))]
        if self.producer_ids is not None:
            out.append(self.producer_ids)
        return out + self.other


def _merge(part, change):
    """PartitionRegistration.merge: the fields the change sets, epochs bumped."""
    fields = {}
    for name in ("isr", "replicas", "removing_replicas", "adding_replicas", "directories",
                 "eligible_leader_replicas", "last_known_elr"):
        v = getattr(change, name)
        if v is not None:
            fields[name] = v
    if change.leader_recovery_state != -1:
        fields["leader_recovery_state"] = change.leader_recovery_state
    leader_epoch = part.leader_epoch
    if change.leader != -2:
        fields["leader"] = change.leader
        leader_epoch += 1
    fields["leader_epoch"] = leader_epoch
    fields["partition_epoch"] = part.partition_epoch + 1
    merged = dataclasses.replace(part, **fields)
    if merged.directories and merged.version < 1:
        merged = dataclasses.replace(merged, version=1)
    if (merged.eligible_leader_replicas is not None or merged.last_known_elr is not None) and merged.version < 2:
        merged = dataclasses.replace(merged, version=2)
    return merged


def compact(values: list) -> list:
    """Encoded metadata records -> the encoded records of their image (for a snapshot)."""
    image = MetadataImage()
    for v in values:
        image.apply(md.decode(v))
    return [md.encode(r) for r in image.records()]
