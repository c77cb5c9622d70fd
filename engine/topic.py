"""A topic on one broker, a producer that places records with Kafka's default partitioner
and batches them, and simple consumers that read partitions by offset (lesson 1).

* :class:`Topic`: ``partitions`` real :class:`~engine.log.log.Log`\\ s named ``<topic>-<p>``.
* :class:`Producer`: ``send`` places a record (:mod:`engine.partitioner`) and adds it to that
  partition's open batch; a batch is appended to the log as one record batch when it
  reaches ``batch.size`` bytes or on ``flush`` (``linger.ms`` running out). A keyless batch
  sent ends the sticky partition's turn (KIP-480).
* :class:`SimpleConsumer`: a fetch position per assigned partition (starting at the log
  start offset); ``poll`` fetches from the partitions in turn, below the high watermark,
  and returns records in the order it received them. No consumer group: the assignment
  is given.

Order: offsets grow by one within a partition, so every consumer sees each partition's
records in offset order; across partitions nothing orders them, so two consumers that
visit the partitions differently see different interleavings.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .clock import Scheduler
from .config import LogConfig, validate_topic_name
from .disk import Disk
from .errors import InvalidRequestError
from .events import Event, EventLog, event
from .log.log import Log
from .partitioner import DefaultPartitioner
from .records import SimpleRecord, iter_batches

__all__ = ["Topic", "Producer", "SimpleConsumer", "RecordPartitioned", "ProducerBatchSent", "SimpleConsumerFetched"]


@event("record_partitioned")
class RecordPartitioned(Event):
    topic: str
    key: str | None
    value: str
    partition: int
    rule: str                 # explicit | key | sticky | sticky-switch
    hash: int | None          # murmur2(key), signed 32-bit
    switched_from: int | None
    partitions: int


@event("producer_batch_sent")
class ProducerBatchSent(Event):
    topic: str
    partition: int
    records: int
    bytes: int
    reason: str               # "batch.size reached" | "linger.ms (flush)"
    first_offset: int
    last_offset: int


@event("simple_consumer_fetched")
class SimpleConsumerFetched(Event):
    """A lesson-1 consumer (no group) read a partition from its own position."""
    consumer: str
    topic: str
    partition: int
    fetch_offset: int
    offsets: list
    next_offset: int
    high_watermark: int


class Topic:
    """``partitions`` logs of one topic on one broker (replication factor 1)."""

    def __init__(self, disk: Disk, name: str, partitions: int, config: LogConfig, scheduler: Scheduler,
                 events: EventLog) -> None:
        validate_topic_name(name)
        if not 1 <= partitions <= 64:
            raise InvalidRequestError(f"a topic here has 1-64 partitions, got {partitions}")
        self.name = name
        self.events = events
        self.scheduler = scheduler
        self.logs = [Log(disk, f"{name}-{p}", name, p, config, scheduler, events, hw_follows_leo=True)
                     for p in range(partitions)]

    @property
    def partitions(self) -> int:
        return len(self.logs)

    def close(self) -> None:
        for log in self.logs:
            log.close()


@dataclass
class _OpenBatch:
    records: list
    bytes: int
    sticky: bool


class Producer:
    """Places and batches records for one topic (see module docstring)."""

    RECORD_OVERHEAD = 10   # rough per-record bytes beside key and value, for batch.size

    def __init__(self, topic: Topic, rng: Any, *, batch_size: int = 16384) -> None:
        self.topic = topic
        self.batch_size = batch_size
        self.partitioner = DefaultPartitioner(topic.partitions, rng, batch_size=batch_size)
        self.open: dict[int, _OpenBatch] = {}

    def send(self, value: bytes, key: bytes | None = None, partition: int | None = None) -> int:
        """Place one record and add it to its partition's open batch; returns the partition."""
        size = len(value) + (len(key) if key else 0) + self.RECORD_OVERHEAD
        placed = self.partitioner.partition(key, size, partition)
        self.topic.events.emit(RecordPartitioned(
            self.topic.name, key.decode("utf-8", "replace") if key is not None else None,
            value.decode("utf-8", "replace")[:40], placed.partition, placed.rule, placed.hash,
            placed.switched_from, self.topic.partitions))
        batch = self.open.setdefault(placed.partition, _OpenBatch([], 0, False))
        batch.records.append(SimpleRecord(value=value, key=key, timestamp=self.topic.scheduler.now_ms()))
        batch.bytes += size
        batch.sticky = batch.sticky or placed.rule.startswith("sticky")
        if batch.bytes >= self.batch_size:
            self._send_batch(placed.partition, "batch.size reached")
        return placed.partition

    def flush(self) -> int:
        """Send every open batch (``linger.ms`` ran out); returns how many were sent."""
        parts = sorted(self.open)
        for p in parts:
            self._send_batch(p, "linger.ms (flush)")
        return len(parts)

    def _send_batch(self, partition: int, reason: str) -> None:
        batch = self.open.pop(partition)
        info = self.topic.logs[partition].append_as_leader(batch.records, leader_epoch=0)
        self.topic.events.emit(ProducerBatchSent(self.topic.name, partition, len(batch.records), info.size_bytes,
                                                 reason, info.first_offset, info.last_offset))
        if batch.sticky and self.partitioner.sticky == partition:
            self.partitioner.on_new_batch()


class SimpleConsumer:
    """Reads its assigned partitions by offset (no group; see module docstring)."""

    def __init__(self, name: str, topic: Topic, partitions: list[int], *, max_bytes: int = 1 << 20) -> None:
        for p in partitions:
            if not 0 <= p < topic.partitions:
                raise InvalidRequestError(f"{topic.name} has no partition {p}")
        self.name = name
        self.topic = topic
        self.assignment = list(partitions)
        self.positions = {p: topic.logs[p].log_start_offset for p in partitions}
        self.max_bytes = max_bytes
        self._next = 0
        self.received: list[tuple[int, int, str | None, str]] = []   # (partition, offset, key, value)

    def seek(self, partition: int, offset: int) -> None:
        if partition not in self.positions:
            raise InvalidRequestError(f"{self.name} is not assigned partition {partition}")
        log = self.topic.logs[partition]
        if not log.log_start_offset <= offset <= log.log_end_offset:
            raise InvalidRequestError(f"{self.name}: offset {offset} is outside {log.name}'s "
                                      f"[{log.log_start_offset}, {log.log_end_offset}]")
        self.positions[partition] = offset

    def poll(self, max_records: int = 500) -> list[tuple[int, int, str | None, str]]:
        """Fetch from the assigned partitions in turn (starting after the one the last poll
        started at) until ``max_records`` records or nothing new; records below the HW only."""
        out: list[tuple[int, int, str | None, str]] = []
        n = len(self.assignment)
        order = [self.assignment[(self._next + i) % n] for i in range(n)] if n else []
        self._next = (self._next + 1) % n if n else 0
        for p in order:
            if len(out) >= max_records:
                break
            log = self.topic.logs[p]
            pos = max(self.positions[p], log.log_start_offset)
            if pos >= log.high_watermark:
                continue
            data = log.read(pos, self.max_bytes, max_offset=log.high_watermark, trace=False)
            got = []
            for _, batch in iter_batches(data.records, verify_crc=False):
                for r in batch.records:
                    if r.offset < pos or len(out) >= max_records:
                        continue
                    out.append((p, r.offset, r.key.decode("utf-8", "replace") if r.key is not None else None,
                                (r.value or b"").decode("utf-8", "replace")))
                    got.append(r.offset)
            if got:
                self.positions[p] = got[-1] + 1
            self.topic.events.emit(SimpleConsumerFetched(self.name, self.topic.name, p, pos, got, self.positions[p],
                                                   log.high_watermark))
        self.received.extend(out)
        return out
