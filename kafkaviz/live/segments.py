"""The ``segments`` sandbox kind: one topic on one broker, each partition a real
``engine.log.Log`` on its own directory, with the lesson's config (lesson 2 uses seed
000's experiment: ``segment.bytes=1000``, ``retention.bytes=2000``, ``retention.ms=60000``).

Scenario keys (from the lesson file): ``topic``, ``partitions``, ``ms_per_message``
(each message sent moves the virtual clock, so timestamps differ and the periodic
retention check runs now and then) and ``config`` (Kafka names).

Its commands are the engine's storage commands ``produce`` and ``advance``
(``engine/storage_commands.py``).
"""
from __future__ import annotations

from typing import Any, ClassVar

from engine.config import LogConfig
from engine.disk import Disk
from engine.log.log import Log
from engine.records import SimpleRecord
from engine.records.batch import BATCH_OVERHEAD

from engine.storage_commands import Advance, Produce

from django.utils.translation import gettext as _

from .kinds import SandboxKind, handles
from .validation import CommandError

__all__ = ["SegmentsSandbox", "max_value_size", "KEY_MAX"]

KEY_MAX = 40
_RECORD_OVERHEAD = 16  # a one-record batch's record framing: length, attributes, deltas, key/value lengths, headers


def max_value_size(scenario: dict) -> int:
    """The largest value one message may carry so that its batch fits in a segment
    (a bigger one is refused by the log with RecordTooLargeError)."""
    config = LogConfig().replace(**scenario.get("config", {}))
    return max(1, min(config.segment_bytes, config.max_message_bytes) - BATCH_OVERHEAD - KEY_MAX - _RECORD_OVERHEAD)


class SegmentsSandbox(SandboxKind):
    """The partitions of one topic on one broker, replication factor 1."""

    name: ClassVar[str] = "segments"

    def open(self) -> None:
        sc = self.scenario
        self.topic = sc.get("topic", "orders")
        self.ms_per_message = sc.get("ms_per_message", 100)
        self.config = LogConfig().replace(**sc.get("config", {}))
        # Preallocated index bytes take real blocks here, so the quota (which counts them) and
        # `du` agree; the lesson's small segment.index.bytes keeps them to one block per index.
        self.disk = Disk(self.data_dir, allocate=True, os_fsync=False)   # a throwaway sandbox
        self.messages_sent = 0
        self.logs = [Log(self.disk, f"{self.topic}-{p}", self.topic, p, self.config, self.scheduler, self.events,
                         hw_follows_leo=True) for p in range(sc.get("partitions", 1))]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.open()

    @classmethod
    def narrow(cls, scenario: dict) -> dict[str, dict[str, dict[str, Any] | None]]:
        return {"produce": {"partition": {"default": 0, "min": 0, "max": scenario.get("partitions", 1) - 1},
                            "value_size": {"max": max_value_size(scenario)},
                            "key": {"default": "", "max_length": KEY_MAX}, "key_mode": None}}

    # ---- commands ----------------------------------------------------------
    @handles(Produce)
    def produce(self, cmd: Produce) -> str:
        count, value_size, key = cmd.count, cmd.value_size, cmd.key or ""
        partition = 0 if cmd.partition is None or cmd.partition < 0 else cmd.partition
        if partition >= len(self.logs):
            raise CommandError("invalid", f"Partition {partition} does not exist: the topic has {len(self.logs)}.",
                               "partition", "produce")
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
        for _i in range(count):
            self.scheduler.advance(self.ms_per_message)
            value = f"message-{self.messages_sent:06d}|".ljust(value_size, ".")[:value_size].encode()
            info = log.append_as_leader([SimpleRecord(value=value, key=key.encode() if key else None)],
                                        leader_epoch=0)
            self.messages_sent += 1
            first = info.first_offset if first is None else first
            last = info.last_offset
        where = _("offset %(a)s") % {"a": first} if first == last else _("offsets %(a)s–%(b)s") % {"a": first, "b": last}
        return _("Sent %(n)s message(s) to partition %(p)s: %(where)s.") % {"n": count, "p": partition, "where": where}

    @handles(Advance)
    def advance(self, cmd: Advance) -> str:
        # Move one due task at a time and end a frame after each, so a long jump shows
        # every phase (renamed to .deleted, then removed) rather than only the end.
        target = self.clock.now_ms() + cmd.ms
        ran = 0
        while True:
            due = self.scheduler.next_due_ms()
            if due is None or due > target:
                break
            ran += self.scheduler.advance(due - self.clock.now_ms())
            self.cut_frame()
        ran += self.scheduler.advance(target - self.clock.now_ms())
        return _("Clock moved %(s)s s to %(t).1f s; %(n)s scheduled task(s) ran.") % {
            "s": f"{cmd.ms / 1000:g}", "t": self.clock.now_ms() / 1000, "n": ran}

    # ---- state -------------------------------------------------------------
    def kind_state(self) -> dict[str, Any]:
        return {
            "clock_ms": self.clock.now_ms(),
            "topic": self.topic,
            "messages_sent": self.messages_sent,
            "disk_bytes": self.disk.usage_bytes(),
            "limits": {"max_messages": self.limits.max_messages, "max_disk_bytes": self.limits.max_disk_bytes},
            "next_task_ms": self.scheduler.next_due_ms(),
            "segment_bytes": self.config.segment_bytes,
            "index_bytes": self.config.segment_index_bytes,
            "partitions": [self._partition_state(log) for log in self.logs],
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
            "files": [{"name": f.name, "size": f.size, "kind": f.kind, "segment": f.segment, "deleted": f.deleted}
                      for f in log.files()],
        }

    def close(self) -> None:
        for log in getattr(self, "logs", []):
            try:
                log.close()
            except Exception:  # noqa: BLE001 - closing a sandbox being discarded must not fail the reset
                pass
        if hasattr(self, "disk"):
            self.disk.close_all()
