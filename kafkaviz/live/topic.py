"""The ``topic`` sandbox kind (lesson 1): one topic on one broker, a producer that places
records with Kafka's default partitioner (murmur2 of the key; sticky batches without a key)
and two consumers, A and B, that read every partition by offset but visit the partitions
in different orders. Every placement and every fetch is an engine event.

Scenario keys: ``topic``, ``partitions``, ``batch_size`` (the producer's batch.size),
``key_cycle`` (how many keys "cycle" mode sends), ``ms_per_message``.
"""
from __future__ import annotations

import random
from typing import Any, ClassVar

from engine.config import LogConfig
from engine.disk import Disk
from engine.topic import Producer, SimpleConsumer, Topic

from engine.storage_commands import Poll, Produce, Rewind

from .kinds import SandboxKind, handles
from .validation import CommandError

__all__ = ["TopicSandbox"]

SHOWN_RECORDS = 60        # per partition / per consumer, newest kept in the frame
SHOWN_PLACEMENTS = 40


class TopicSandbox(SandboxKind):
    """A topic, a producer and consumers A and B (see module docstring)."""

    name: ClassVar[str] = "topic"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.open()

    def open(self) -> None:
        sc = self.scenario
        self.disk = Disk(self.data_dir, os_fsync=False)   # a throwaway sandbox: fsync modelled, not asked of the OS
        self.topic = Topic(self.disk, sc.get("topic", "orders"), int(sc.get("partitions", 3)), LogConfig(),
                           self.scheduler, self.events)
        self.producer = Producer(self.topic, random.Random(self.seed), batch_size=int(sc.get("batch_size", 100)))
        order = list(range(self.topic.partitions))
        # A visits partitions 0, 1, 2; B visits 2, 1, 0: same records, different interleaving.
        self.consumers = {"A": SimpleConsumer("A", self.topic, order),
                          "B": SimpleConsumer("B", self.topic, order[::-1])}
        self.messages_sent = 0
        self.placements: list[dict[str, Any]] = []

    @classmethod
    def narrow(cls, scenario: dict) -> dict[str, dict[str, dict[str, Any] | None]]:
        return {"produce": {"partition": {"default": -1, "max": int(scenario.get("partitions", 3)) - 1},
                            "key": {"default": "user-1", "max_length": 24},
                            "key_mode": {"default": "none"}, "value_size": None}}   # values are order-N

    # ---- commands ----------------------------------------------------------
    @handles(Produce)
    def produce(self, cmd: Produce) -> str:
        count, key_mode, key = cmd.count, cmd.mode(), cmd.key or ""
        partition = -1 if cmd.partition is None else cmd.partition
        if self.messages_sent + count > self.limits.max_messages:
            raise CommandError("quota", f"This sandbox takes at most {self.limits.max_messages} messages and has "
                               f"{self.messages_sent}; press Reset to start over.", "count", "produce")
        if key_mode == "fixed" and not key:
            raise CommandError("invalid", "Type a key, or choose “no key”.", "key", "produce")
        cycle = int(self.scenario.get("key_cycle", 4))
        ms = int(self.scenario.get("ms_per_message", 10))
        seq = self.events.seq
        placed: dict[int, int] = {}
        for _ in range(count):
            self.scheduler.advance(ms)
            n = self.messages_sent
            k = None if key_mode == "none" else key if key_mode == "fixed" else f"user-{n % cycle}"
            p = self.producer.send(f"order-{n:03d}".encode(), key=k.encode() if k is not None else None,
                                   partition=None if partition < 0 else partition)
            placed[p] = placed.get(p, 0) + 1
            self.messages_sent += 1
        self.producer.flush()
        new = [{"seq": e.seq, **e.event.to_dict()} for e in self.events.since(seq) if e.event.kind == "record_partitioned"]
        self.placements = (self.placements + new)[-SHOWN_PLACEMENTS:]
        where = ", ".join(f"{n} to partition {p}" for p, n in sorted(placed.items()))
        return f"Sent {count} message(s): {where}."

    @handles(Poll)
    def poll(self, cmd: Poll) -> str:
        consumer, max_records = cmd.consumer, cmd.max_records
        got = self.consumers[consumer].poll(max_records)
        if not got:
            return f"Consumer {consumer}: nothing new (it has read up to the high watermark of every partition)."
        return f"Consumer {consumer} got " + ", ".join(f"{v} (p{p}@{o})" for p, o, _, v in got) + "."

    @handles(Rewind)
    def rewind(self, cmd: Rewind) -> str:
        consumer = cmd.consumer
        c = self.consumers[consumer]
        for p in c.assignment:
            c.seek(p, self.topic.logs[p].log_start_offset)
        c.received = []
        return f"Consumer {consumer} will read every partition again from its start."

    # ---- state -------------------------------------------------------------
    def _orders_differ(self) -> bool:
        a, b = self.consumers["A"].received, self.consumers["B"].received
        if sorted(a) != sorted(b) or not a:
            return False
        parts = range(self.topic.partitions)
        per_partition_same = all([x for x in a if x[0] == p] == [x for x in b if x[0] == p] for p in parts)
        caught_up = all(c.positions[p] >= self.topic.logs[p].high_watermark for c in self.consumers.values()
                        for p in parts)
        return caught_up and per_partition_same and [x[3] for x in a] != [x[3] for x in b]

    def facts(self) -> dict[str, Any]:
        counts: dict[str, set[int]] = {}
        n: dict[str, int] = {}
        for log in self.topic.logs:
            for r in log.records():
                if r.key is not None:
                    k = r.key.decode("utf-8", "replace")
                    counts.setdefault(k, set()).add(log.partition)
                    n[k] = n.get(k, 0) + 1
        return {"max_same_key": max((n[k] for k in n if len(counts[k]) == 1), default=0),
                "orders_differ": self._orders_differ()}

    def kind_state(self) -> dict[str, Any]:
        parts = []
        for log in self.topic.logs:
            recs = log.records(max(log.log_start_offset, log.log_end_offset - SHOWN_RECORDS))
            parts.append({"partition": log.partition, "dir": log.name, "log_end_offset": log.log_end_offset,
                          "high_watermark": log.high_watermark,
                          "records": [[r.offset, r.key.decode("utf-8", "replace") if r.key is not None else None,
                                       (r.value or b"").decode("utf-8", "replace")] for r in recs]})
        consumers = [{"name": c.name, "assignment": c.assignment,
                      "positions": {str(p): o for p, o in c.positions.items()},
                      "received": [list(x) for x in c.received[-SHOWN_RECORDS:]],
                      "received_count": len(c.received)} for c in self.consumers.values()]
        pt = self.producer.partitioner
        facts = self.facts()
        return {"clock_ms": self.clock.now_ms(), "topic": self.topic.name, "messages_sent": self.messages_sent,
                "batch_size": self.producer.batch_size, "sticky_partition": pt.sticky, "sticky_bytes": pt.sticky_bytes,
                "partitions": parts, "consumers": consumers, "placements": self.placements,
                "orders_differ": facts["orders_differ"], "facts": facts}

    def close(self) -> None:
        try:
            self.topic.close()
        except Exception:  # noqa: BLE001 - closing a sandbox being discarded must not fail the reset
            pass
        self.disk.close_all()
