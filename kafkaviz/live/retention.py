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

from typing import Any, ClassVar

from engine.storage_commands import Advance, DeleteRecords, Produce, SetRetention

from .kinds import handles
from .segments import SegmentsSandbox
from .validation import CommandError

__all__ = ["RetentionSandbox", "MAX_HISTORY"]

MAX_HISTORY = 600     # samples kept for the chart; older ones are thinned, never unbounded


class RetentionSandbox(SegmentsSandbox):
    """One partition under retention; partition 0 is the one the chart follows."""

    name: ClassVar[str] = "retention"

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

    @handles(Produce)
    def produce(self, cmd: Produce) -> str:
        text = super().produce(cmd)
        self._sample()
        return text

    @handles(Advance)
    def advance(self, cmd: Advance) -> str:
        text = super().advance(cmd)
        self._sample()
        return text

    @handles(DeleteRecords)
    def delete_records(self, cmd: DeleteRecords) -> str:
        offset = cmd.offset
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

    @handles(SetRetention)
    def set_retention(self, cmd: SetRetention) -> str:
        retention_bytes, retention_ms = cmd.retention_bytes, cmd.retention_ms
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
