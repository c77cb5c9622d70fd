"""Lesson 2's sandbox: one topic with two partitions, each a real ``engine.log.Log``
on its own directory, with the settings of seed 000 §1.4 (``segment.bytes=1000``,
``retention.bytes=2000``, ``retention.ms=60000``) and small index settings so index
entries show up after a few messages.

Time is virtual: every message sent moves the clock 100 ms (so timestamps differ and
the periodic retention check runs now and then); "Jump clock" moves it further.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from engine.config import LogConfig
from engine.disk import Disk
from engine.events import Envelope
from engine.log.log import Log
from engine.records import SimpleRecord

from .kinds import Limits, SandboxKind, register
from .validation import CommandError, CommandSpec, Field

__all__ = ["SegmentsSandbox", "LESSON_CONFIG", "TOPIC", "PARTITIONS", "MS_PER_MESSAGE"]

TOPIC = "orders"
PARTITIONS = 2
MS_PER_MESSAGE = 100

# Kafka's names; the lesson page shows these next to Kafka's defaults.
LESSON_CONFIG: dict[str, int] = {
    "segment.bytes": 1000,
    "retention.bytes": 2000,
    "retention.ms": 60000,
    "index.interval.bytes": 200,
    "segment.index.bytes": 1024,
    "log.retention.check.interval.ms": 5000,
    "file.delete.delay.ms": 30000,
}


@register
class SegmentsSandbox(SandboxKind):
    """Two partitions of topic ``orders`` on one broker, replication factor 1."""

    name = "segments"
    commands = {
        "produce": CommandSpec("produce", (
            Field("partition", "int", "Partition", default=0, min=0, max=PARTITIONS - 1),
            Field("count", "int", "Number of messages", default=1, min=1, max=50),
            Field("value_size", "int", "Value size (bytes)", default=100, min=1, max=2000),
            Field("key", "str", "Key", default="", max_length=40, pattern=r"[ -~]*",
                  pattern_help="may only hold printable ASCII characters"),
        ), handler="produce", help="Send messages, each in its own batch (like linger.ms=0)."),
        "advance": CommandSpec("advance", (
            Field("seconds", "int", "Jump", default=30, required=True, min=1, max=3600),
        ), handler="advance", help="Move the virtual clock forward; due tasks (retention, deletes) run."),
    }

    def __init__(self, data_dir: Path, *, seed: int, limits: Limits,
                 listener: Callable[[Envelope], None] | None = None) -> None:
        super().__init__(data_dir, seed=seed, limits=limits, listener=listener)
        self.config = LogConfig().replace(**LESSON_CONFIG)
        # Preallocated index bytes take real blocks here, so the quota (which counts them) and
        # `du` agree; segment.index.bytes above keeps them to one block per index.
        self.disk = Disk(data_dir, allocate=True)
        self.messages_sent = 0
        self.rolls = {p: 0 for p in range(PARTITIONS)}
        self.segments_deleted = 0
        self.events.subscribe(self.on_event)
        self.logs = [Log(self.disk, f"{TOPIC}-{p}", TOPIC, p, self.config, self.scheduler, self.events,
                         hw_follows_leo=True) for p in range(PARTITIONS)]

    # ---- commands ----------------------------------------------------------
    def produce(self, partition: int, count: int, value_size: int, key: str) -> str:
        if self.messages_sent + count > self.limits.max_messages:
            raise CommandError("quota", f"This sandbox takes at most {self.limits.max_messages} messages and has "
                               f"{self.messages_sent}; press Reset to start over.", "count", "produce")
        estimate = count * (value_size + len(key) + 100)
        used = self.disk.usage_bytes()
        if used + estimate > self.limits.max_disk_bytes:
            raise CommandError("quota", f"This sandbox may use {self.limits.max_disk_bytes} bytes of disk and uses "
                               f"{used}; sending {count} more message(s) would pass that. Jump the clock so "
                               "retention deletes old segments, or press Reset.", "count", "produce")
        log = self.logs[partition]
        first = last = None
        for _ in range(count):
            self.scheduler.advance(MS_PER_MESSAGE)
            n = self.messages_sent
            value = f"message-{n:06d}|".ljust(value_size, ".")[:value_size].encode()
            info = log.append_as_leader([SimpleRecord(value=value, key=key.encode() if key else None)],
                                        leader_epoch=0)
            self.messages_sent += 1
            first = info.first_offset if first is None else first
            last = info.last_offset
        where = f"offset {first}" if first == last else f"offsets {first}–{last}"
        return f"Sent {count} message(s) to partition {partition}: {where}."

    def advance(self, seconds: int) -> str:
        ran = self.scheduler.advance(seconds * 1000)
        return f"Clock moved {seconds} s to {self.clock.now_ms() / 1000:.1f} s; {ran} scheduled task(s) ran."

    # ---- state -------------------------------------------------------------
    def on_event(self, env: Envelope) -> None:
        ev = env.event
        if ev.kind == "segment_rolled":
            self.rolls[ev.partition] = self.rolls.get(ev.partition, 0) + 1
        elif ev.kind == "segment_deleted":
            self.segments_deleted += 1

    def tasks(self) -> list[dict[str, Any]]:
        return [
            {"id": "third-segment", "text": "Make partition 0 roll a third segment.",
             "done": self.rolls.get(0, 0) >= 2,
             "progress": f"{min(self.rolls.get(0, 0) + 1, 3)} of 3 segments so far"},
            {"id": "retention-delete", "text": "Get retention to delete a segment (watch for .deleted).",
             "done": self.segments_deleted > 0,
             "progress": f"{self.segments_deleted} segment(s) deleted"},
        ]

    def state(self) -> dict[str, Any]:
        return {
            "clock_ms": self.clock.now_ms(),
            "topic": TOPIC,
            "messages_sent": self.messages_sent,
            "disk_bytes": self.disk.usage_bytes(),
            "limits": {"max_messages": self.limits.max_messages, "max_disk_bytes": self.limits.max_disk_bytes},
            "next_task_ms": self.scheduler.next_due_ms(),
            "partitions": [self._partition_state(log) for log in self.logs],
            "tasks": self.tasks(),
        }

    @staticmethod
    def _partition_state(log: Log) -> dict[str, Any]:
        return {
            "partition": log.partition,
            "dir": log.name,
            "log_start_offset": log.log_start_offset,
            "log_end_offset": log.log_end_offset,
            "high_watermark": log.high_watermark,
            "size_bytes": log.size_bytes,
            "active_segment": log.active_segment.base_offset,
            "segments": [seg.base_offset for seg in log.segments],
            "files": [_file_dict(f) for f in log.files()],
        }

    def close(self) -> None:
        for log in self.logs:
            try:
                log.close()
            except Exception:  # noqa: BLE001 - closing a sandbox being discarded must not fail the reset
                pass
        self.disk.close_all()


def _file_dict(info: Any) -> dict[str, Any]:
    return {"name": info.name, "size": info.size, "kind": info.kind, "segment": info.segment,
            "deleted": info.deleted}
