"""Lesson 5's sandbox: retention on one partition. The three passes of a retention check —
log start offset (moved by a ``DeleteRecords`` request), ``retention.bytes``, ``retention.ms``
— each decide segment by segment (one ``retention_check`` event per decision); deleted
segments are renamed ``.deleted`` and unlinked ``file.delete.delay.ms`` later; the active
segment is never deleted (when every segment has expired the log rolls a new one first).

The frame carries a bounded history of the partition's size (segments only, and on disk
with the ``.deleted`` files) over virtual time, for the chart against ``retention.bytes``.
"""
from __future__ import annotations

from typing import Any

from .kinds import register
from .single_log import SingleLogSandbox, advance_spec, produce_spec
from .validation import CommandError, CommandSpec, Field

__all__ = ["RetentionSandbox", "MAX_HISTORY"]

MAX_HISTORY = 600     # samples kept for the chart; older ones are thinned, never unbounded


@register
class RetentionSandbox(SingleLogSandbox):
    name = "retention"
    TOPIC = "metrics"
    LESSON_CONFIG = {
        "segment.bytes": 1000,
        "retention.bytes": 2000,
        "retention.ms": 60000,
        "index.interval.bytes": 4096,
        "segment.index.bytes": 1024,
        "log.retention.check.interval.ms": 5000,
        "file.delete.delay.ms": 10000,
    }
    commands = {
        "produce": produce_spec(900),
        "advance": advance_spec(),
        "delete_records": CommandSpec("delete_records", (
            Field("offset", "int", "Delete records before offset", required=True, min=-1, max=10**12),
        ), handler="delete_records", help="DeleteRecords: move the log start offset up (-1: to the high watermark)."),
        "set_retention": CommandSpec("set_retention", (
            Field("retention_bytes", "int", "retention.bytes (-1: no limit)", required=True, min=-1, max=100000),
            Field("retention_ms", "int", "retention.ms (-1: no limit)", required=True, min=-1, max=86_400_000),
        ), handler="set_retention", help="Change retention.bytes and retention.ms; the next check uses them."),
    }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.history: list[list[int]] = []
        self.deleted_by: dict[str, int] = {}
        self.checks: list[dict[str, Any]] = []
        self.files_removed = 0
        self.rolled_for_retention = False
        super().__init__(*args, **kwargs)
        self._sample()

    # ---- events ------------------------------------------------------------
    def on_event(self, env) -> None:
        ev = env.event
        k = ev.kind
        if k == "retention_check":
            self.checks = (self.checks + [{"seq": env.seq, "time_ms": env.time_ms, **ev.to_dict()}])[-24:]
        elif k == "segment_deleted" and ev.reason.startswith("retention:"):
            rule = ev.reason.split(":", 1)[1]
            self.deleted_by[rule] = self.deleted_by.get(rule, 0) + 1
        elif k == "segment_rolled" and ev.reason == "retention":
            self.rolled_for_retention = True
        elif k == "file_deleted":
            self.files_removed += 1
        if k in ("batch_appended", "segment_deleted", "file_deleted", "segment_rolled") and hasattr(self, "log"):
            self._sample()

    def _sample(self) -> None:
        point = [self.clock.now_ms(), self.log.size_bytes, self.disk.usage_bytes(self.log.dir)]
        h = self.history
        if h and h[-1][0] == point[0]:
            h[-1] = point
        else:
            h.append(point)
        if len(h) > MAX_HISTORY:
            # keep the newest half whole, thin the older half to every other point
            half = len(h) // 2
            self.history = h[:half:2] + h[half:]

    # ---- commands ----------------------------------------------------------
    def advance(self, seconds: int) -> str:
        # Step second by second so every retention check and delayed delete is sampled.
        ran = 0
        for _ in range(seconds):
            ran += self.scheduler.advance(1000)
            self._sample()
        return f"Clock moved {seconds} s to {self.clock.now_ms() / 1000:.1f} s; {ran} scheduled task(s) ran."

    def delete_records(self, offset: int) -> str:
        log = self.log
        before = log.log_start_offset
        if offset != -1 and offset < before:
            raise CommandError("invalid", f"The log already starts at offset {before}; DeleteRecords only moves the "
                               "log start offset forward.", "offset", "delete_records")
        new = log.delete_records(offset)
        self._sample()
        return (f"Log start offset {before} → {new}. Records below {new} can no longer be read; the segments wholly "
                "below it go at the next retention check.")

    def set_retention(self, retention_bytes: int, retention_ms: int) -> str:
        self.set_config(**{"retention.bytes": retention_bytes, "retention.ms": retention_ms})
        self._sample()
        return f"retention.bytes={retention_bytes}, retention.ms={retention_ms}; the next check (every 5 s) applies them."

    # ---- state -------------------------------------------------------------
    def tasks(self) -> list[dict[str, Any]]:
        return [
            {"id": "by-size", "text": "Get a segment deleted because the partition is larger than retention.bytes.",
             "done": self.deleted_by.get("size", 0) > 0},
            {"id": "by-time", "text": "Get a segment deleted because it is older than retention.ms.",
             "done": self.deleted_by.get("time", 0) > 0},
            {"id": "by-start", "text": "Delete records with DeleteRecords, then watch the segments below the new log "
                                       "start offset go.",
             "done": self.deleted_by.get("log_start_offset", 0) > 0},
            {"id": "gone", "text": "Wait until a .deleted file is really removed (file.delete.delay.ms).",
             "done": self.files_removed > 0},
        ]

    def state(self) -> dict[str, Any]:
        segs = self.log.segments
        now = self.clock.now_ms()
        rows = []
        for i, seg in enumerate(segs):
            upper = segs[i + 1].base_offset if i + 1 < len(segs) else self.log.log_end_offset
            rows.append({"base": seg.base_offset, "end": upper, "size": seg.size, "active": i == len(segs) - 1,
                         "largest_timestamp": seg.largest_timestamp, "age_ms": now - seg.largest_timestamp})
        base = self.base_state()
        return {**base, "partitions": [base["log"]], "segment_rows": rows, "retention_bytes": self.config.retention_bytes,
                "retention_ms": self.config.retention_ms, "checks": self.checks, "history": self.history,
                "deleted_by": self.deleted_by, "tasks": self.tasks()}
