"""Lesson 1's sandbox: topic ``orders`` with three partitions on one broker, a producer that
places records with Kafka's default partitioner (murmur2 of the key; sticky batches without
a key) and two consumers, A and B, that read every partition by offset but visit the
partitions in different orders. Every record's placement and every fetch is an engine event.
"""
from __future__ import annotations

import random
from pathlib import Path
from typing import Any, Callable

from engine.config import LogConfig
from engine.disk import Disk
from engine.events import Envelope
from engine.topic import Producer, SimpleConsumer, Topic

from .kinds import Limits, SandboxKind, register
from .validation import CommandError, CommandSpec, Field

__all__ = ["TopicSandbox", "TOPIC", "PARTITIONS", "BATCH_SIZE"]

TOPIC = "orders"
PARTITIONS = 3
BATCH_SIZE = 100          # producer batch.size here (Kafka's default is 16384)
KEY_CYCLE = 4             # "cycle" mode sends keys user-0 .. user-3
SHOWN_RECORDS = 60        # per partition / per consumer, newest kept in the frame
MS_PER_MESSAGE = 10


@register
class TopicSandbox(SandboxKind):
    name = "topic"
    commands = {
        "produce": CommandSpec("produce", (
            Field("count", "int", "Number of messages", default=4, min=1, max=40),
            Field("key_mode", "str", "Keys", default="none", choices=("none", "fixed", "cycle")),
            Field("key", "str", "Key", default="user-1", max_length=24, pattern=r"[ -~]*",
                  pattern_help="may only hold printable ASCII characters"),
            Field("partition", "int", "Partition (-1: let the partitioner choose)", default=-1, min=-1,
                  max=PARTITIONS - 1),
        ), handler="produce", help="Send messages; the default partitioner places them, then linger.ms sends "
                                   "what is left in the open batches."),
        "poll": CommandSpec("poll", (
            Field("consumer", "str", "Consumer", required=True, choices=("A", "B")),
            Field("max_records", "int", "max.poll.records", default=3, min=1, max=50),
        ), handler="poll", help="One poll: fetch from the consumer's partitions in turn."),
        "rewind": CommandSpec("rewind", (
            Field("consumer", "str", "Consumer", required=True, choices=("A", "B")),
        ), handler="rewind", help="Seek the consumer back to offset 0 of every partition."),
    }

    def __init__(self, data_dir: Path, *, seed: int, limits: Limits,
                 listener: Callable[[Envelope], None] | None = None) -> None:
        super().__init__(data_dir, seed=seed, limits=limits, listener=listener)
        self.disk = Disk(data_dir)
        self.topic = Topic(self.disk, TOPIC, PARTITIONS, LogConfig(), self.scheduler, self.events)
        self.producer = Producer(self.topic, random.Random(seed), batch_size=BATCH_SIZE)
        # A visits partitions 0, 1, 2; B visits 2, 1, 0: same records, different interleaving.
        self.consumers = {"A": SimpleConsumer("A", self.topic, [0, 1, 2]),
                          "B": SimpleConsumer("B", self.topic, [2, 1, 0])}
        self.messages_sent = 0
        self.switches = 0
        self.placements: list[dict[str, Any]] = []
        self.events.subscribe(self.on_event)

    def on_event(self, env: Envelope) -> None:
        ev = env.event
        if ev.kind == "record_partitioned":
            if ev.rule == "sticky-switch":
                self.switches += 1
            self.placements = (self.placements + [{"seq": env.seq, **ev.to_dict()}])[-40:]

    # ---- commands ----------------------------------------------------------
    def produce(self, count: int, key_mode: str, key: str, partition: int) -> str:
        if self.messages_sent + count > self.limits.max_messages:
            raise CommandError("quota", f"This sandbox takes at most {self.limits.max_messages} messages and has "
                               f"{self.messages_sent}; press Reset to start over.", "count", "produce")
        if key_mode == "fixed" and not key:
            raise CommandError("invalid", "Type a key, or choose “no key”.", "key", "produce")
        placed: dict[int, int] = {}
        for _ in range(count):
            self.scheduler.advance(MS_PER_MESSAGE)
            n = self.messages_sent
            k = None if key_mode == "none" else key if key_mode == "fixed" else f"user-{n % KEY_CYCLE}"
            p = self.producer.send(f"order-{n:03d}".encode(), key=k.encode() if k is not None else None,
                                   partition=None if partition < 0 else partition)
            placed[p] = placed.get(p, 0) + 1
            self.messages_sent += 1
        self.producer.flush()
        where = ", ".join(f"{n} to partition {p}" for p, n in sorted(placed.items()))
        return f"Sent {count} message(s): {where}."

    def poll(self, consumer: str, max_records: int) -> str:
        got = self.consumers[consumer].poll(max_records)
        if not got:
            return f"Consumer {consumer}: nothing new (it has read up to the high watermark of every partition)."
        return f"Consumer {consumer} got " + ", ".join(f"{v} (p{p}@{o})" for p, o, _, v in got) + "."

    def rewind(self, consumer: str) -> str:
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
        per_partition_same = all([x for x in a if x[0] == p] == [x for x in b if x[0] == p] for p in range(PARTITIONS))
        return per_partition_same and [x[3] for x in a] != [x[3] for x in b]

    def tasks(self) -> list[dict[str, Any]]:
        by_key: dict[str, set[int]] = {}
        counts: dict[str, int] = {}
        for log in self.topic.logs:
            for r in log.records():
                if r.key is not None:
                    k = r.key.decode("utf-8", "replace")
                    by_key.setdefault(k, set()).add(log.partition)
                    counts[k] = counts.get(k, 0) + 1
        caught_up = all(c.positions[p] >= self.topic.logs[p].high_watermark for c in self.consumers.values()
                        for p in range(PARTITIONS))
        return [
            {"id": "same-key", "text": "Send 5 messages with one key: they all land on one partition.",
             "done": any(n >= 5 and len(by_key[k]) == 1 for k, n in counts.items())},
            {"id": "sticky-switch", "text": "Send messages without a key until the producer moves to another partition.",
             "done": self.switches > 0, "progress": f"{self.switches} switch(es)"},
            {"id": "orders-differ",
             "text": "Poll with A and with B until both have read everything: per partition the order is the same, "
                     "overall it is not.",
             "done": caught_up and self._orders_differ()},
        ]

    def state(self) -> dict[str, Any]:
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
        return {"clock_ms": self.clock.now_ms(), "topic": TOPIC, "messages_sent": self.messages_sent,
                "batch_size": BATCH_SIZE, "sticky_partition": pt.sticky, "sticky_bytes": pt.sticky_bytes,
                "partitions": parts, "consumers": consumers, "placements": self.placements,
                "orders_differ": self._orders_differ(), "tasks": self.tasks()}

    def close(self) -> None:
        try:
            self.topic.close()
        except Exception:  # noqa: BLE001 - closing a sandbox being discarded must not fail the reset
            pass
        self.disk.close_all()
