"""The few Java behaviours the group code must reproduce exactly: ``String.hashCode``,
``String.compareTo`` order, Kafka's ``Utils.abs`` and the iteration order of a
``java.util.HashMap`` / ``HashSet`` that was filled with ``put`` in a known order.

Kafka's assignors iterate hash maps in a few places (which member's owned partitions are
looked at first, which partition of a set moves back), so the order is part of the answer.
"""
from __future__ import annotations

from typing import Callable, Hashable, Iterable, Sequence, TypeVar

__all__ = ["string_hash", "java_abs", "java_str_key", "hash_map_order", "topic_partition_hash",
           "partition_for_group"]

T = TypeVar("T", bound=Hashable)


def string_hash(s: str) -> int:
    """Java's ``String.hashCode``: ``h = 31*h + c`` over UTF-16 code units, 32-bit signed."""
    h = 0
    data = s.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def java_abs(n: int) -> int:
    """Kafka's ``Utils.abs``: the absolute value, except that ``Integer.MIN_VALUE`` gives 0
    (``Math.abs(Integer.MIN_VALUE)`` is ``Integer.MIN_VALUE`` itself, a negative number)."""
    return 0 if n == -2**31 else abs(n)


def partition_for_group(group_id: str, num_partitions: int) -> int:
    """The ``__consumer_offsets`` partition that holds ``group_id`` (its coordinator is that
    partition's leader): ``Utils.abs(groupId.hashCode()) % offsets.topic.num.partitions``."""
    return java_abs(string_hash(group_id)) % num_partitions


def java_str_key(s: str) -> bytes:
    """Sort key giving Java's ``String.compareTo`` order (UTF-16 code units, not code points)."""
    return s.encode("utf-16-be", "surrogatepass")


def topic_partition_hash(topic: str, partition: int) -> int:
    """``TopicPartition.hashCode``: ``31 * (31 + partition) + topic.hashCode()`` (int32)."""
    h = (31 * (31 + partition) + string_hash(topic)) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def _capacity(max_size: int, initial: int = 16) -> int:
    cap = initial
    while max_size > cap * 3 // 4:
        cap *= 2
    return cap


def hash_map_order(keys: Sequence[T], hash_fn: Callable[[T], int], max_size: int | None = None) -> list[T]:
    """The order a ``HashMap`` created with the default capacity iterates ``keys``, which
    were put in the order given. ``max_size`` is the largest size the map ever reached
    (its table never shrinks); default ``len(keys)``. Buckets are ``(h ^ h >>> 16) & (cap-1)``;
    inside a bucket entries keep insertion order (resizes split buckets preserving it)."""
    cap = _capacity(len(keys) if max_size is None else max_size)
    mask = cap - 1

    def bucket(k: T) -> int:
        h = hash_fn(k) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & mask
    indexed = sorted(enumerate(keys), key=lambda ik: (bucket(ik[1]), ik[0]))
    return [k for _, k in indexed]


def ordered_members(ids: Iterable[str]) -> list[str]:
    """A ``HashMap<String, …>`` of member ids filled in the order given, iterated."""
    return hash_map_order(list(ids), string_hash)
