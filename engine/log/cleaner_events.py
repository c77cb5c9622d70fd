"""Log cleaner events: what one compaction pass did, step by step, so a diagram can show
the dirty ratio against its threshold, the cleaner point moving, the offset map filling
and segments being rewritten and swapped in. Fields as in :mod:`engine.log.events`
(``broker``, ``topic``, ``partition`` first; segments are base offsets)."""
from __future__ import annotations

from ..events import Event, event

__all__ = ["CleanerCheck", "OffsetMapFilled", "SegmentsCleaned", "CleanerSwapStep", "CleanerPointMoved",
           "CleanerPassFinished", "SwapCompleted"]


@event("cleaner_check")
class CleanerCheck(Event):
    """The cleaner looked at a compacted log. ``ratio`` = dirty / (clean + dirty) bytes;
    ``chosen`` is True for the log it cleans; ``reason`` says why (or why not)."""
    broker: int | None
    topic: str
    partition: int
    first_dirty_offset: int
    first_uncleanable_offset: int
    clean_bytes: int
    dirty_bytes: int
    ratio: float
    min_cleanable_ratio: float
    max_compaction_lag_exceeded: bool
    chosen: bool
    reason: str


@event("offset_map_filled")
class OffsetMapFilled(Event):
    """The offset map took the keys of one dirty segment. ``keys`` lists up to 32 of the
    (key, offset) pairs put, key as text (UTF-8, or hex if not text)."""
    broker: int | None
    topic: str
    partition: int
    segment: int
    records: int
    keys_put: int
    map_entries: int
    map_capacity: int
    latest_offset: int
    full: bool
    keys: list


@event("segments_cleaned")
class SegmentsCleaned(Event):
    """A group of segments was rewritten into one ``.cleaned`` segment (base ``segment``).
    Record counts are data records (``aborted_removed``: records of aborted transactions).
    Transaction markers (control batches) are counted apart: kept, or removed once nothing of
    their transaction is left in the log and their delete horizon has passed;
    ``marker_horizon_ms`` is the horizon this pass stamped on markers, if any."""
    broker: int | None
    topic: str
    partition: int
    segment: int
    sources: list
    bytes_before: int
    bytes_after: int
    records_before: int
    records_after: int
    superseded: int
    tombstones_kept: int
    tombstones_removed: int
    keyless_removed: int
    delete_horizon_ms: int | None
    aborted_removed: int = 0
    markers_kept: int = 0
    markers_removed: int = 0
    marker_horizon_ms: int | None = None


@event("cleaner_swap_step")
class CleanerSwapStep(Event):
    """One file-system step of the swap: "cleaned" (written and fsync'd), "swap" (renamed
    to .swap), "old_deleted" (a replaced segment renamed to .deleted), "swapped" (.swap
    renamed into place). ``files`` are the names after the step."""
    broker: int | None
    topic: str
    partition: int
    segment: int
    step: str
    files: list


@event("cleaner_point_moved")
class CleanerPointMoved(Event):
    """The first dirty offset in ``cleaner-offset-checkpoint`` moved."""
    broker: int | None
    topic: str
    partition: int
    old_offset: int
    new_offset: int


@event("cleaner_pass_finished")
class CleanerPassFinished(Event):
    broker: int | None
    topic: str
    partition: int
    first_dirty_offset: int
    end_offset: int
    segments_before: list
    segments_after: list
    bytes_before: int
    bytes_after: int


@event("swap_completed")
class SwapCompleted(Event):
    """Recovery found a complete ``.swap`` segment (a clean interrupted after its output
    was ready) and finished the swap: ``replaced`` segments were removed."""
    broker: int | None
    topic: str
    partition: int
    segment: int
    replaced: list
