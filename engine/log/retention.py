"""Retention (``cleanup.policy`` with ``delete``), as a mixin of :class:`Log` — reference §4.2.

Three passes, in this order: **log start offset** (a segment whose next segment starts at or
below the log start offset), **size** (``retention.bytes`` per partition: delete the oldest
segments while the excess covers them), **time** (``retention.ms`` against the segment's largest
timestamp). Each pass walks segments oldest first and stops at the first one it keeps. A segment
is only deletable when its upper bound (next base offset, or LEO) is <= the high watermark, and
an empty active segment never is. When every segment is deletable the log first rolls a fresh
active segment at LEO. Deleted segments are renamed to ``.deleted`` at once and unlinked
``file.delete.delay.ms`` later by a scheduled task. Each decision is one ``retention_check`` event.
"""
from __future__ import annotations

from typing import Callable

from .events import RetentionCheck
from .log_segment import LogSegment

__all__ = ["LogRetention"]

#: predicate(segment, next segment or None) -> (delete?, threshold, value)
Predicate = Callable[[LogSegment, "LogSegment | None"], tuple[bool, int, int]]


class LogRetention:
    """Mixin of :class:`engine.log.log.Log`."""

    def delete_old_segments(self) -> int:
        """One retention pass; returns the number of segments deleted."""
        if self._closed:
            return 0
        deleted = self._delete_log_start_offset_breached()
        if "delete" in self.config.cleanup_policy:
            deleted += self._delete_size_breached()
            deleted += self._delete_time_breached()
        return deleted

    def _delete_log_start_offset_breached(self) -> int:
        start = self.log_start_offset

        def predicate(seg: LogSegment, nxt: LogSegment | None) -> tuple[bool, int, int]:
            upper = nxt.base_offset if nxt is not None else self._log_end_offset
            return (nxt is not None and nxt.base_offset <= start), start, upper
        return self._delete_matching("log_start_offset", predicate)

    def _delete_size_breached(self) -> int:
        limit = self.config.retention_bytes
        if limit < 0:
            return 0
        total = self.size_bytes
        if total < limit:
            self._emit(RetentionCheck(*self._ident, "size", None, limit, total, False, None))
            return 0
        excess = [total - limit]

        def predicate(seg: LogSegment, nxt: LogSegment | None) -> tuple[bool, int, int]:
            before = excess[0]
            if before - seg.size >= 0:
                excess[0] -= seg.size
                return True, seg.size, before
            return False, seg.size, before
        return self._delete_matching("size", predicate)

    def _delete_time_breached(self) -> int:
        limit = self.config.retention_ms
        if limit < 0:
            return 0
        now = self._now()

        def predicate(seg: LogSegment, nxt: LogSegment | None) -> tuple[bool, int, int]:
            age = now - seg.largest_timestamp
            return age > limit, limit, age
        return self._delete_matching("time", predicate)

    def _deletable(self, rule: str, predicate: Predicate) -> list[LogSegment]:
        out: list[LogSegment] = []
        segs = self._segments
        hw = self.high_watermark
        for i, seg in enumerate(segs):
            nxt = segs[i + 1] if i + 1 < len(segs) else None
            upper = nxt.base_offset if nxt is not None else self._log_end_offset
            blocked = None
            if upper > hw:
                blocked = "high_watermark"
            elif nxt is None and seg.size == 0:
                blocked = "empty_active"
            if blocked is not None:
                # Evaluate the rule anyway so the event shows what it would have said.
                ok, threshold, value = predicate(seg, nxt) if rule != "size" else (False, seg.size, -1)
                self._emit(RetentionCheck(*self._ident, rule, seg.base_offset, threshold, value, False,
                                          blocked if ok or rule == "size" else None))
                break
            ok, threshold, value = predicate(seg, nxt)
            self._emit(RetentionCheck(*self._ident, rule, seg.base_offset, threshold, value, ok, None))
            if not ok:
                break
            out.append(seg)
        return out

    def _delete_matching(self, rule: str, predicate: Predicate) -> int:
        doomed = self._deletable(rule, predicate)
        if not doomed:
            return 0
        if len(doomed) == len(self._segments):
            self.roll("retention")  # keep >= 1 segment and never move LEO backwards
        for seg in doomed:
            self._remove_segment(seg, f"retention:{rule}")
        self._set_log_start_offset(self._segments[0].base_offset, f"retention:{rule}")
        return len(doomed)
