"""Producers on the client node: ``retries``, and the idempotent producer (KIP-98).

A plain :meth:`Cluster.produce` is one request and one answer. A *producer* adds what
Kafka's client does between them: a batch that fails with a retriable error (a timeout —
the response may simply have been lost — a leader change, too few replicas) is sent
again after ``retry.backoff.ms``, until it succeeds, ``retries`` runs out or
``delivery.timeout.ms`` passes since it was first sent.

Retrying is exactly where duplicates come from: when the leader wrote the batch but the
answer was lost, the retry is written a second time. An idempotent producer gets a
producer id (InitProducerId) and numbers its records per partition; every attempt of a
batch carries the same ``(producer id, epoch, base sequence)``, so the leader recognises
the retry and answers with the first write's offsets (see
:mod:`engine.log.producer_state`).

Simplifications, stated: producer ids come from a counter the cluster keeps (Kafka's
controller hands brokers blocks of 1,000 ids through AllocateProducerIds) and
InitProducerId is not a network round trip; sequences are assigned when a batch is first
sent. An ``OUT_OF_ORDER_SEQUENCE_NUMBER`` answer is retried while an earlier batch of the same
producer to the same partition is still in flight (it is being retried and will fill the
gap, as Kafka's producer reasons); otherwise it ends that batch.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..errors import InvalidRequestError

__all__ = ["Producer", "PendingSend", "RETRIABLE_ERRORS", "MAX_RETRIES"]

MAX_RETRIES = 1000

# Kafka's RetriableException subclasses among the errors a produce can get here.
RETRIABLE_ERRORS = frozenset({
    "REQUEST_TIMED_OUT", "NOT_LEADER_OR_FOLLOWER", "LEADER_NOT_AVAILABLE", "NOT_ENOUGH_REPLICAS",
    "NOT_ENOUGH_REPLICAS_AFTER_APPEND", "BROKER_NOT_AVAILABLE", "UNKNOWN_TOPIC_OR_PARTITION",
})


@dataclass
class Producer:
    """One producer instance on the client node (``enable.idempotence``, ``retries``,
    ``retry.backoff.ms``, ``delivery.timeout.ms``)."""

    name: str
    idempotent: bool
    retries: int
    retry_backoff_ms: int
    delivery_timeout_ms: int
    producer_id: int = -1
    producer_epoch: int = -1
    next_sequence: dict = field(default_factory=dict)   # "topic-partition" -> next sequence
    # Transactions (engine/cluster/transactions.py): None = not a transactional producer.
    transactional_id: str | None = None
    transaction_timeout_ms: int = 60_000
    txn_state: str = "none"      # uninitialized | initializing | ready | in_transaction | committing |
    #                              aborting | abortable_error | fenced | error:<ERROR>; "none" for plain
    #                              producers. abortable_error: a send failed, so commit became impossible
    txn_partitions: set = field(default_factory=set)     # added to the open transaction
    txn_waiting: dict = field(default_factory=dict)      # (topic, partition) -> sends held for AddPartitions
    txn_adding: set = field(default_factory=set)         # partitions of the AddPartitionsToTxn in flight
    txn_failed: str | None = None  # a send of the open transaction failed: it can only abort
    txn_offsets: dict | None = None  # sendOffsetsToTransaction in flight: {"group", "offsets", "stage"}

    def take_sequence(self, topic: str, partition: int, count: int) -> int:
        """The base sequence of a new batch of ``count`` records (-1 when not idempotent)."""
        if not self.idempotent:
            return -1
        key = f"{topic}-{partition}"
        base = self.next_sequence.get(key, 0)
        self.next_sequence[key] = (base + count) % 2**31
        return base

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "idempotent": self.idempotent, "retries": self.retries,
                "retry_backoff_ms": self.retry_backoff_ms, "delivery_timeout_ms": self.delivery_timeout_ms,
                "producer_id": self.producer_id, "producer_epoch": self.producer_epoch,
                "next_sequence": dict(sorted(self.next_sequence.items())),
                "transactional_id": self.transactional_id, "txn_state": self.txn_state,
                "txn_partitions": [f"{t}-{p}" for t, p in sorted(self.txn_partitions)]}


@dataclass
class PendingSend:
    """A batch a producer is trying to deliver; ``send_id`` is the request id of its first
    attempt (the id :meth:`Cluster.produce` returned)."""

    send_id: int
    producer: str
    topic: str
    partition: int
    base_sequence: int
    first_sent_ms: int
    target: int | None
    attempts: int = 1


def check_producer_settings(name: Any, retries: Any, retry_backoff_ms: Any, delivery_timeout_ms: Any) -> None:
    if not isinstance(name, str) or not name or len(name) > 64:
        raise InvalidRequestError(f"producer name must be a string of 1-64 characters, got {name!r}")
    for label, value, low, high in (("retries", retries, 0, MAX_RETRIES),
                                    ("retry_backoff_ms", retry_backoff_ms, 0, 60_000),
                                    ("delivery_timeout_ms", delivery_timeout_ms, 1, 7 * 24 * 3600 * 1000)):
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise InvalidRequestError(f"{label} must be an integer in [{low}, {high}], got {value!r}")
