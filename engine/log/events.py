"""Storage events: what one partition's log did, step by step.

Every event carries ``broker`` (None outside a cluster), ``topic`` and ``partition`` first.
``segment`` fields are segment base offsets (ints); file names are relative to the partition
directory (``00000000000000000000.log``), never absolute paths, so two runs in different
directories produce the same stream.
"""
from __future__ import annotations

from ..events import Event, event

__all__ = [
    "BatchAppended", "IndexEntryWritten", "SegmentRolled", "IndexTrimmed", "LogLookup", "RetentionCheck",
    "SegmentDeleted", "FileDeleted", "LogStartOffsetChanged", "RecoveryStarted", "RecoveryTruncated",
    "IndexRebuilt", "LeftoverRemoved", "RecoveryFinished", "LogTruncated", "LogFlushed", "LeaderEpochAssigned",
    "EpochCacheTruncated", "SegmentCreated", "LogClosed",
]


@event("batch_appended")
class BatchAppended(Event):
    broker: int | None
    topic: str
    partition: int
    segment: int
    first_offset: int
    last_offset: int
    position: int
    size_bytes: int
    records: int
    max_timestamp: int
    leader_epoch: int


@event("index_entry_written")
class IndexEntryWritten(Event):
    """``index`` is "offset" (then ``position`` is set) or "time" (then ``timestamp`` is set)."""
    broker: int | None
    topic: str
    partition: int
    index: str
    segment: int
    offset: int
    position: int | None
    timestamp: int | None
    entries: int


@event("segment_created")
class SegmentCreated(Event):
    broker: int | None
    topic: str
    partition: int
    segment: int
    files: list
    index_bytes: int


@event("segment_rolled")
class SegmentRolled(Event):
    """``reason``: "size" | "time" | "index_full" | "offset_overflow" | "retention" | "manual"."""
    broker: int | None
    topic: str
    partition: int
    old_segment: int
    new_segment: int
    reason: str
    detail: str


@event("index_trimmed")
class IndexTrimmed(Event):
    broker: int | None
    topic: str
    partition: int
    segment: int
    index: str
    entries: int
    from_bytes: int
    to_bytes: int


@event("log_lookup")
class LogLookup(Event):
    """One traced lookup, whole: how the log found ``target`` (``mode`` "offset" for a fetch,
    "timestamp" for ListOffsets).

    ``candidates`` are the segment base offsets considered and ``segment`` the one chosen
    (None if none qualifies) by ``rule``. ``time_probes`` are the binary-search steps in the
    ``.timeindex`` (timestamp mode only), each ``[low, high, mid, entry_timestamp, entry_offset,
    went]``; ``probes`` the steps in the ``.index``, each ``[low, high, mid, entry_offset,
    entry_position, went]`` ("went": "left" | "right" | "hit"). ``scan`` lists the batches
    walked in the ``.log`` from the index floor, each ``[position, base_offset, last_offset,
    max_timestamp, matched]``. (In the engine the rows are tuples, made cheaply per step; the
    event's dict, and so the browser, gets lists.) ``offset`` is -1 when nothing was found (a timestamp beyond
    the log); ``position`` is the byte position of the batch found; ``timestamp`` is the
    matching record's timestamp (timestamp mode)."""
    broker: int | None
    topic: str
    partition: int
    mode: str
    target: int
    candidates: list
    segment: int | None
    rule: str
    time_probes: list
    probes: list
    scan: list
    offset: int
    position: int | None
    timestamp: int | None

    def digest_values(self) -> tuple:
        """Every field, but the step lists reduced: a lookup walks dozens of batches, and
        serialising every row for the digest would cost more than the lookup itself. The
        probes and the scanned batches are a function of the index entries and batches the
        stream already recorded and of the target, so the digest keeps their counts and the
        ``hash`` of the scanned rows (tuples of ints and bools hash alike in every process)."""
        try:
            rows = hash(tuple(self.scan))
        except TypeError:               # rows as lists (an event rebuilt from its dict)
            rows = hash(tuple(map(tuple, self.scan)))
        return (self.broker, self.topic, self.partition, self.mode, self.target, tuple(self.candidates), self.segment,
                self.rule, len(self.time_probes), len(self.probes), len(self.scan), rows, self.offset, self.position,
                self.timestamp)


@event("retention_check")
class RetentionCheck(Event):
    """One retention decision. ``rule`` "log_start_offset" | "size" | "time"; ``value`` is the next
    segment's base offset / remaining excess bytes / segment age in ms; ``blocked_by`` says why a
    segment that the rule would delete is kept ("high_watermark", "empty_active") or None."""
    broker: int | None
    topic: str
    partition: int
    rule: str
    segment: int | None
    threshold: int
    value: int
    deletable: bool
    blocked_by: str | None


@event("segment_deleted")
class SegmentDeleted(Event):
    broker: int | None
    topic: str
    partition: int
    segment: int
    files: list
    reason: str
    delete_after_ms: int


@event("file_deleted")
class FileDeleted(Event):
    broker: int | None
    topic: str
    partition: int
    file: str


@event("log_start_offset_changed")
class LogStartOffsetChanged(Event):
    broker: int | None
    topic: str
    partition: int
    old: int
    new: int
    reason: str


@event("recovery_started")
class RecoveryStarted(Event):
    broker: int | None
    topic: str
    partition: int
    recovery_point: int
    segments: list


@event("leftover_removed")
class LeftoverRemoved(Event):
    """A ``.deleted`` / ``.cleaned`` / ``.swap`` / ``.tmp`` file (or an index without its ``.log``) removed at open."""
    broker: int | None
    topic: str
    partition: int
    file: str


@event("recovery_truncated")
class RecoveryTruncated(Event):
    broker: int | None
    topic: str
    partition: int
    segment: int
    from_bytes: int
    to_bytes: int
    reason: str


@event("index_rebuilt")
class IndexRebuilt(Event):
    broker: int | None
    topic: str
    partition: int
    segment: int
    index: str
    entries: int
    reason: str


@event("recovery_finished")
class RecoveryFinished(Event):
    broker: int | None
    topic: str
    partition: int
    log_start_offset: int
    log_end_offset: int
    segments: list


@event("log_truncated")
class LogTruncated(Event):
    broker: int | None
    topic: str
    partition: int
    from_offset: int
    to_offset: int
    reason: str


@event("log_flushed")
class LogFlushed(Event):
    broker: int | None
    topic: str
    partition: int
    up_to_offset: int
    segments: list


@event("leader_epoch_assigned")
class LeaderEpochAssigned(Event):
    broker: int | None
    topic: str
    partition: int
    epoch: int
    start_offset: int


@event("epoch_cache_truncated")
class EpochCacheTruncated(Event):
    """``direction`` "end" (log truncation) or "start" (log start offset moved)."""
    broker: int | None
    topic: str
    partition: int
    direction: str
    offset: int
    entries: list


@event("log_closed")
class LogClosed(Event):
    broker: int | None
    topic: str
    partition: int
    log_end_offset: int
