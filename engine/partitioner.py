"""Kafka's default producer partitioner.

* A record with an explicit partition goes there.
* A keyed record goes to ``toPositive(murmur2(key)) % partitions`` (``Utils.murmur2``,
  seed ``0x9747b28c``), so one key always lands on one partition while the partition
  count stays the same.
* A keyless record goes to the *sticky* partition: every keyless record joins the batch
  being filled there, and only when that batch is done does the producer pick another
  partition, at random among the others (KIP-480, Kafka 2.4). Since Kafka 3.3 (KIP-794)
  "done" means ``batch.size`` bytes were produced to the partition; a batch sent early
  by ``linger.ms`` also ends the stickiness here (:meth:`DefaultPartitioner.on_new_batch`),
  as KIP-480 did. Before 2.4 keyless records went round-robin, one record each.

Randomness comes from the run's seeded RNG (anything with ``randrange``), never the
global ``random`` module, so the same seed places the same records.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .errors import InvalidRequestError

__all__ = ["murmur2", "partition_for_key", "DefaultPartitioner", "Placement", "DEFAULT_BATCH_SIZE"]

DEFAULT_BATCH_SIZE = 16384   # the Java producer's batch.size


def murmur2(data: bytes) -> int:
    """MurmurHash2 (32-bit, seed 0x9747b28c) as Kafka's ``Utils.murmur2`` computes it:
    little-endian 4-byte blocks, the tail folded in, then the final avalanche. Returns
    the signed 32-bit result like Java's ``int``."""
    m, r = 0x5BD1E995, 24
    length = len(data)
    h = (0x9747B28C ^ length) & 0xFFFFFFFF
    whole = length - length % 4
    for i in range(0, whole, 4):
        k = int.from_bytes(data[i:i + 4], "little")
        k = (k * m) & 0xFFFFFFFF
        k ^= k >> r
        k = (k * m) & 0xFFFFFFFF
        h = (h * m) & 0xFFFFFFFF
        h ^= k
    tail = length % 4
    if tail == 3:
        h ^= data[whole + 2] << 16
    if tail >= 2:
        h ^= data[whole + 1] << 8
    if tail >= 1:
        h ^= data[whole]
        h = (h * m) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * m) & 0xFFFFFFFF
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for_key(key: bytes, partitions: int) -> int:
    """Kafka's default partitioner for keyed records: ``toPositive(murmur2(key)) % partitions``."""
    if partitions < 1:
        raise InvalidRequestError(f"a topic needs at least one partition, got {partitions}")
    return (murmur2(key) & 0x7FFFFFFF) % partitions


@dataclass(frozen=True)
class Placement:
    """Where one record went and why (the lesson narrates ``rule``)."""

    partition: int
    rule: str            # "explicit" | "key" | "sticky" | "sticky-switch"
    hash: int | None     # murmur2(key) for keyed records
    switched_from: int | None = None


class DefaultPartitioner:
    """The Java producer's built-in partitioner for one topic (see module docstring)."""

    def __init__(self, partitions: int, rng: Any, *, batch_size: int = DEFAULT_BATCH_SIZE) -> None:
        if partitions < 1:
            raise InvalidRequestError(f"a topic needs at least one partition, got {partitions}")
        if batch_size < 1:
            raise InvalidRequestError(f"batch.size must be at least 1, got {batch_size}")
        self.partitions = partitions
        self.rng = rng
        self.batch_size = batch_size
        self.sticky: int | None = None
        self.sticky_bytes = 0

    def _pick_other(self, current: int | None) -> int:
        """A random partition, other than ``current`` when there is a choice (KIP-480)."""
        if current is None or self.partitions == 1:
            return self.rng.randrange(self.partitions)
        p = self.rng.randrange(self.partitions - 1)
        return p + 1 if p >= current else p

    def partition(self, key: bytes | None, size: int, partition: int | None = None) -> Placement:
        """Place one record of ``size`` bytes (key + value, for the batch.size count)."""
        if partition is not None:
            if not 0 <= partition < self.partitions:
                raise InvalidRequestError(
                    f"partition {partition} does not exist; the topic has partitions 0-{self.partitions - 1}")
            return Placement(partition, "explicit", None)
        if key is not None:
            h = murmur2(key)
            return Placement((h & 0x7FFFFFFF) % self.partitions, "key", h)
        rule, before = "sticky", None
        if self.sticky is None:
            self.sticky = self._pick_other(None)
        elif self.sticky_bytes >= self.batch_size:
            before = self.sticky
            self.sticky = self._pick_other(before)
            self.sticky_bytes = 0
            rule = "sticky-switch"
        self.sticky_bytes += max(size, 0)
        return Placement(self.sticky, rule, None, before)

    def on_new_batch(self) -> None:
        """The batch being filled on the sticky partition was sent (``linger.ms`` ran out):
        the next keyless record starts a batch on another partition."""
        if self.sticky is not None and self.sticky_bytes:
            self.sticky_bytes = self.batch_size
