"""The base of the storage lessons' sandboxes (3, 4, 5, 7): one partition ``<topic>-0`` on
one broker, a real :class:`engine.log.log.Log` on its own data directory, a producer that
sends each message as its own batch, and a virtual clock the learner moves.

Subclasses name their Kafka settings (``LESSON_CONFIG``, Kafka's names) and add commands;
this module holds what they share: the config table, producing with quotas, moving the
clock, the log's offsets and files for the frame.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, ClassVar

from engine.config import LogConfig
from engine.disk import Disk
from engine.events import Envelope
from engine.log.log import Log
from engine.records import SimpleRecord

from .kinds import Limits, SandboxKind
from .validation import CommandError, CommandSpec, Field

__all__ = ["SingleLogSandbox", "config_kwargs", "produce_spec", "advance_spec"]

# Kafka's name -> LogConfig field
_KAFKA_NAMES = {
    "segment.bytes": "segment_bytes",
    "segment.ms": "segment_ms",
    "segment.index.bytes": "segment_index_bytes",
    "index.interval.bytes": "index_interval_bytes",
    "retention.bytes": "retention_bytes",
    "retention.ms": "retention_ms",
    "file.delete.delay.ms": "file_delete_delay_ms",
    "log.retention.check.interval.ms": "log_retention_check_interval_ms",
    "flush.messages": "flush_interval_messages",
    "flush.ms": "flush_interval_ms",
    "message.timestamp.type": "message_timestamp_type",
}


def config_kwargs(kafka: dict[str, Any]) -> dict[str, Any]:
    """LogConfig keyword arguments for a dict of Kafka setting names."""
    return {_KAFKA_NAMES[k]: v for k, v in kafka.items()}


def produce_spec(max_value: int, *, max_count: int = 50, ms_default: int = 100) -> CommandSpec:
    return CommandSpec("produce", (
        Field("count", "int", "Number of messages", default=1, min=1, max=max_count),
        Field("value_size", "int", "Value size (bytes)", default=100, min=1, max=max_value),
        Field("ms_between", "int", "Milliseconds between messages", default=ms_default, min=0, max=60000),
    ), handler="produce", help="Send messages, each in its own batch (like linger.ms=0).")


def advance_spec() -> CommandSpec:
    return CommandSpec("advance", (
        Field("seconds", "int", "Jump", default=5, required=True, min=1, max=3600),
    ), handler="advance", help="Move the virtual clock forward; due tasks (retention, flush, deletes) run.")


class SingleLogSandbox(SandboxKind):
    """One partition of one topic (see module docstring)."""

    TOPIC: ClassVar[str] = "events"
    LESSON_CONFIG: ClassVar[dict[str, Any]] = {}
    PER_BATCH_OVERHEAD: ClassVar[int] = 80     # batch header + record framing, for the quota estimate

    def __init__(self, data_dir: Path, *, seed: int, limits: Limits,
                 listener: Callable[[Envelope], None] | None = None) -> None:
        super().__init__(data_dir, seed=seed, limits=limits, listener=listener)
        self.config = LogConfig().replace(**config_kwargs(self.LESSON_CONFIG))
        self.disk = Disk(data_dir)
        self.messages_sent = 0
        self.events.subscribe(self.on_event)
        self.log = self.open_log()

    def open_log(self, recovery_point: int = 0) -> Log:
        return Log(self.disk, f"{self.TOPIC}-0", self.TOPIC, 0, self.config, self.scheduler, self.events,
                   hw_follows_leo=True, recovery_point=recovery_point)

    @property
    def max_value_size(self) -> int:
        """The largest value one batch may carry under this sandbox's segment.bytes."""
        return max(1, min(2000, self.config.segment_bytes - self.PER_BATCH_OVERHEAD))

    # ---- commands ----------------------------------------------------------
    def produce(self, count: int, value_size: int, ms_between: int = 100) -> str:
        if value_size > self.max_value_size:
            raise CommandError("invalid", f"A {value_size}-byte value would not fit one segment "
                               f"(segment.bytes={self.config.segment_bytes}); the largest here is "
                               f"{self.max_value_size}.", "value_size", "produce")
        if self.messages_sent + count > self.limits.max_messages:
            raise CommandError("quota", f"This sandbox takes at most {self.limits.max_messages} messages and has "
                               f"{self.messages_sent}; press Reset to start over.", "count", "produce")
        estimate = count * (value_size + self.PER_BATCH_OVERHEAD)
        used = self.disk.usage_bytes()
        if used + estimate > self.limits.max_disk_bytes:
            raise CommandError("quota", f"This sandbox may use {self.limits.max_disk_bytes} bytes of disk and uses "
                               f"{used}; {count} more message(s) would pass that. Press Reset.", "count", "produce")
        first = last = None
        for _ in range(count):
            if ms_between:
                self.scheduler.advance(ms_between)
            n = self.messages_sent
            value = f"m{n:05d}|".ljust(value_size, ".")[:value_size].encode()
            info = self.log.append_as_leader([SimpleRecord(value=value)], leader_epoch=0)
            self.messages_sent += 1
            first = info.first_offset if first is None else first
            last = info.last_offset
        where = f"offset {first}" if first == last else f"offsets {first}–{last}"
        return f"Sent {count} message(s): {where}."

    def advance(self, seconds: int) -> str:
        ran = self.scheduler.advance(seconds * 1000)
        return f"Clock moved {seconds} s to {self.clock.now_ms() / 1000:.1f} s; {ran} scheduled task(s) ran."

    def set_config(self, **kafka: Any) -> None:
        """Apply Kafka-named settings to the log (range-checked by LogConfig)."""
        self.config = self.config.replace(**config_kwargs(kafka))
        self.log.update_config(self.config)

    # ---- state -------------------------------------------------------------
    def config_rows(self) -> list[dict[str, Any]]:
        default = LogConfig()
        return [{"name": k, "value": getattr(self.config, _KAFKA_NAMES[k]),
                 "default": getattr(default, _KAFKA_NAMES[k])} for k in self.LESSON_CONFIG]

    def log_state(self) -> dict[str, Any]:
        log = self.log
        return {
            "partition": log.partition,
            "dir": log.name,
            "log_start_offset": log.log_start_offset,
            "log_end_offset": log.log_end_offset,
            "high_watermark": log.high_watermark,
            "recovery_point": log.recovery_point,
            "size_bytes": log.size_bytes,
            "active_segment": log.active_segment.base_offset,
            "segments": [seg.base_offset for seg in log.segments],
            "files": [{"name": f.name, "size": f.size, "kind": f.kind, "segment": f.segment, "deleted": f.deleted}
                      for f in log.files()],
        }

    def base_state(self) -> dict[str, Any]:
        return {
            "clock_ms": self.clock.now_ms(),
            "topic": self.TOPIC,
            "messages_sent": self.messages_sent,
            "config": self.config_rows(),
            "max_value_size": self.max_value_size,
            "next_task_ms": self.scheduler.next_due_ms(),
            "log": self.log_state(),
        }

    def close(self) -> None:
        try:
            self.log.close()
        except Exception:  # noqa: BLE001 - closing a sandbox being discarded must not fail the reset
            pass
        self.disk.close_all()
