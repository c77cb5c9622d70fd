"""The ``retention`` sandbox kind (lesson 5): the ``segments`` kind plus what retention
needs — a ``DeleteRecords``-style command that moves the log start offset, validated
changes of ``retention.bytes`` / ``retention.ms``, and a bounded history of the partition's
size over virtual time for the chart against ``retention.bytes``.

The three passes of a retention check (log start offset, size, time) are the engine's
(``engine/log/retention.py``); each decision is a ``retention_check`` event, each deletion a
``segment_deleted`` with reason ``retention:<rule>``.

The history is sampled by a task on the sandbox's own scheduler (every ``sample_ms`` of
virtual time) and after every command, so replaying the steps rebuilds it exactly.
"""
from __future__ import annotations

from typing import Any

from .kinds import command
from .segments import SegmentsSandbox
from .validation import CommandError, Field

__all__ = ["RetentionSandbox", "MAX_HISTORY"]

MAX_HISTORY = 600     # samples kept for the chart; older ones are thinned, never unbounded


class RetentionSandbox(SegmentsSandbox):
    """One partition under retention; partition 0 is the one the chart follows."""

    def open(self) -> None:
        super().open()
        self.history: list[list[int]] = []
        self._sample()
        self.scheduler.schedule_periodic(int(self.scenario.get("sample_ms", 500)), self._sample,
                                         name="retention-chart-sample")

    def _sample(self) -> None:
        log = self.logs[0]
        point = [self.clock.now_ms(), log.size_bytes, self.disk.usage_bytes(log.dir)]
        h = self.history
        if h and h[-1][0] == point[0]:
            h[-1] = point
        else:
            h.append(point)
        if len(h) > MAX_HISTORY:
            half = len(h) // 2
            self.history = h[:half:2] + h[half:]

    def produce(self, *args: Any, **kwargs: Any) -> str:
        text = super().produce(*args, **kwargs)
        self._sample()
        return text

    def advance(self, seconds: int) -> str:
        text = super().advance(seconds)
        self._sample()
        return text

    # the base class's commands keep their specs; these re-bind the overriding methods
    produce._command = SegmentsSandbox.produce._command          # type: ignore[attr-defined]
    advance._command = SegmentsSandbox.advance._command          # type: ignore[attr-defined]

    @command(Field("offset", "int", "Delete records before offset (-1: the high watermark)", required=True,
                   min=-1, max=10**12 - 1),
             help="DeleteRecords: move the log start offset up; whole segments below it go at the next check.")
    def delete_records(self, offset: int) -> str:
        log = self.logs[0]
        before = log.log_start_offset
        if offset != -1 and offset < before:
            raise CommandError("invalid", f"The log already starts at offset {before}; DeleteRecords only moves the "
                               "log start offset forward.", "offset", "delete_records")
        if offset > log.high_watermark:
            raise CommandError("invalid", f"Offset {offset} is past the high watermark {log.high_watermark}: "
                               "DeleteRecords cannot delete records that do not exist yet.", "offset", "delete_records")
        new = log.delete_records(offset)
        self._sample()
        return (f"Log start offset {before} → {new}. Records below {new} can no longer be read; the segments wholly "
                "below it go at the next retention check.")

    @command(Field("retention_bytes", "int", "retention.bytes (-1: no limit)", required=True, min=-1, max=100_000),
             Field("retention_ms", "int", "retention.ms (-1: no limit)", required=True, min=-1, max=86_400_000),
             help="Change retention.bytes and retention.ms; the next retention check uses them.")
    def set_retention(self, retention_bytes: int, retention_ms: int) -> str:
        self.config = self.config.replace(retention_bytes=retention_bytes, retention_ms=retention_ms)
        for log in self.logs:
            log.update_config(self.config)
        self._sample()
        return (f"retention.bytes={retention_bytes}, retention.ms={retention_ms}; the next retention check "
                f"(every {self.config.log_retention_check_interval_ms / 1000:g} s) applies them.")

    # ---- state -------------------------------------------------------------
    def kind_state(self) -> dict[str, Any]:
        st = super().kind_state()
        log = self.logs[0]
        segs = log.segments
        now = self.clock.now_ms()
        st.update({
            "segment_rows": [{"base": s.base_offset, "end": segs[i + 1].base_offset if i + 1 < len(segs)
                              else log.log_end_offset, "size": s.size, "active": i == len(segs) - 1,
                              "largest_timestamp": s.largest_timestamp, "age_ms": now - s.largest_timestamp}
                             for i, s in enumerate(segs)],
            "retention_bytes": self.config.retention_bytes,
            "retention_ms": self.config.retention_ms,
            "history": self.history,
        })
        return st
