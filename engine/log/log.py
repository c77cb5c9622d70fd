"""One partition's log on disk: a list of segments, the offsets that bound it, and the
operations the broker performs on it (append, read, lookup by time, roll, truncate, flush).

Directory (``dir_rel`` on the :class:`Disk`, named ``<topic>-<partition>``)::

    00000000000000000000.log / .index / .timeindex     segment with base offset 0
    00000000000000001234.log / .index / .timeindex     next segment, base offset 1234
    leader-epoch-checkpoint                            (epoch, start offset) pairs, text format

Offsets: ``log_start_offset`` <= ``high_watermark`` <= ``log_end_offset`` (LEO, the next offset
to be written); ``recovery_point`` is the offset below which everything has been fsync'd.
Retention lives in :mod:`engine.log.retention`, opening/recovery in :mod:`engine.log.recovery`.
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import Any, NamedTuple, Sequence

from ..clock import Scheduler
from ..config import LONG_MAX, LogConfig
from ..disk import Disk
from ..errors import (CorruptRecordError, InvalidRecordError, InvalidRequestError, OffsetOutOfRangeError,
                      RecordBatchTooLargeError, RecordTooLargeError)
from ..events import EventLog
from ..records import (BatchHeader, CompressionType, Record, TimestampType, decode_batch, encode_batch,
                       read_header, scan_valid, whole_batch_header, whole_batch_values, with_log_append_time,
                       with_offset_and_epoch)
from ..records.validation import check_record_timestamps, validate_client_batches
from .events import (BatchAppended, IndexEntryWritten, IndexTrimmed, LogClosed, LogFlushed, LogLookup,
                     LogStartOffsetChanged, LogTruncated, SegmentCreated, SegmentDeleted, SegmentRolled, FileDeleted)
from .cleaner import require_keys
from .leader_epoch import LeaderEpochFileCache
from .log_segment import INT32_MAX, LogSegment, segment_file_name
from .producers import LogProducerState
from .recovery import LogRecovery
from .retention import LogRetention
from .time_index import TimestampOffset

__all__ = ["Log", "LogAppendInfo", "FetchDataInfo", "FileInfo", "LEADER_EPOCH_CHECKPOINT",
           "LATEST_TIMESTAMP", "EARLIEST_TIMESTAMP", "MAX_TIMESTAMP"]

LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
LATEST_TIMESTAMP, EARLIEST_TIMESTAMP, MAX_TIMESTAMP = -1, -2, -3


_tuple_new = tuple.__new__     # a named tuple without its Python-level __new__ (one per append)
_TAIL_BATCHES = 8              # batches the tail hint remembers (Log._tail)


class LogAppendInfo(NamedTuple):
    """Result of an append. ``position``/``segment`` are where the first batch went;
    ``log_append_time`` is -1 unless the topic uses LogAppendTime. (A named tuple: one is made
    per append.)"""

    first_offset: int
    last_offset: int
    max_timestamp: int
    position: int
    size_bytes: int
    segment: int
    records_count: int
    leader_epoch: int
    log_append_time: int
    duplicate: bool = False     # an idempotent producer's retry: nothing was written


class FetchDataInfo(NamedTuple):
    """Result of :meth:`Log.read`: whole batches starting at ``position`` in ``segment``."""

    fetch_offset: int
    records: bytes
    batches: tuple
    segment: int | None
    position: int | None
    log_start_offset: int
    log_end_offset: int
    high_watermark: int


@dataclass(frozen=True)
class FileInfo:
    """One file of the partition directory, for the directory diagram."""

    name: str
    size: int
    kind: str
    segment: int | None
    deleted: bool


class Log(LogRecovery, LogRetention, LogProducerState):
    """A partition's log (see module docstring). Opening it runs recovery, as a broker start
    does; with ``recover=False`` a log that would need any repair is refused instead (an
    error naming the file and position) and nothing is written."""

    def __init__(self, disk: Disk, dir_rel: str, topic: str, partition: int, config: LogConfig,
                 scheduler: Scheduler, events: EventLog, *, broker: int | None = None, recovery_point: int = 0,
                 hw_follows_leo: bool = False, schedule_tasks: bool = True, log_start_offset: int | None = None,
                 high_watermark: int | None = None, rng: Any = None, clean_shutdown: bool = False,
                 recover: bool = True) -> None:
        self.disk = disk
        self.dir = disk.check(dir_rel)
        self.topic = topic
        self.partition = partition
        self.broker = broker
        self.config = config
        self.scheduler = scheduler
        self.events = events
        self.rng = rng
        self.hw_follows_leo = hw_follows_leo
        self._ident = (broker, topic, partition)
        # The tail hint: the last batches appended to the active segment, back to back up to its
        # end, as (base offset, last offset, position, size, header fields), so an untraced read
        # at the log end (a follower's or consumer's next fetch) starts there without the index
        # floor and the header walk. Valid only while ``_tail_seg`` is still the active segment
        # and ends at ``_tail_end``; every other change to the active segment drops it
        # (_drop_tail). tests/engine/test_log_tail_hint.py checks reads with it equal reads without.
        self._tail: list = []
        self._tail_seg: LogSegment | None = None
        self._tail_end = -1
        self._tail_on = False     # kept from the first untraced read on (a follower nobody reads pays nothing)
        self._segments: list[LogSegment] = []
        self._bases: list[int] = []
        self._log_end_offset = 0
        self.log_start_offset = 0
        self.high_watermark = 0
        self.recovery_point = recovery_point
        self._last_flush_ms = scheduler.now_ms()
        self._tasks: list = []
        self._closed = False
        self.leader_epoch_cache = LeaderEpochFileCache(disk, f"{self.dir}/{LEADER_EPOCH_CHECKPOINT}",
                                                       events=events, ident=self._ident)
        self.had_clean_shutdown = clean_shutdown   # Kafka skips recovery after a clean shutdown
        # False: a tool handed this directory; damage is an error, never repaired (recovery.check_log_dir)
        self._recover_on_open = recover
        self._init_producer_state()
        self._load(recovery_point, log_start_offset, high_watermark)
        self._reload_producer_state()
        if schedule_tasks:
            self._schedule_tasks()

    # ---- properties ----------------------------------------------------------
    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"

    @property
    def log_end_offset(self) -> int:
        return self._log_end_offset

    @property
    def segments(self) -> list[LogSegment]:
        return list(self._segments)

    @property
    def active_segment(self) -> LogSegment:
        return self._segments[-1]

    @property
    def size_bytes(self) -> int:
        return sum(s.size for s in self._segments)

    def _now(self) -> int:
        return self.scheduler.now_ms()

    def _emit(self, ev: Any) -> None:
        self.events.emit(ev)

    # ---- tasks ---------------------------------------------------------------
    def _schedule_tasks(self) -> None:
        self.cancel_tasks()
        cfg = self.config
        self._tasks.append(self.scheduler.schedule_periodic(
            cfg.log_retention_check_interval_ms, self.delete_old_segments, name=f"retention {self.name}"))
        if cfg.flush_interval_ms < LONG_MAX:
            self._tasks.append(self.scheduler.schedule_periodic(
                max(cfg.flush_interval_ms, 1), self._flush_if_due, name=f"flush {self.name}"))

    def cancel_tasks(self) -> None:
        """Stop this log's periodic tasks (close, or a crash that abandons this object)."""
        for task in self._tasks:
            self.scheduler.cancel(task)
        self._tasks = []

    def update_config(self, config: LogConfig) -> None:
        """Apply a config change; periodic tasks are re-armed with the new intervals."""
        self.config = config
        for seg in self._segments:
            seg.index_interval_bytes = config.index_interval_bytes
            seg.roll_window = None
        if self._tasks:
            self._schedule_tasks()

    # ---- appending -----------------------------------------------------------
    def append_as_leader(self, records: Sequence | bytes, leader_epoch: int, *,
                         compression: CompressionType | int = CompressionType.NONE,
                         producer_id: int = -1, producer_epoch: int = -1, base_sequence: int = -1,
                         is_transactional: bool = False) -> LogAppendInfo:
        """Append producer records (encoded here as one batch) or client batches (bytes): offsets
        are assigned from LEO, the leader epoch is stamped, LogAppendTime applied per config.
        Batches with a producer id pass the idempotence checks first (``producer_*`` and
        ``base_sequence`` describe the batch built from ``records``); a retried duplicate
        returns the original offsets with ``duplicate=True`` and writes nothing."""
        if "compact" in self.config.cleanup_policy and not isinstance(records, (bytes, bytearray, memoryview)):
            # INVALID_RECORD for a keyless record, nothing appended (client bytes: validate_client_batches)
            require_keys(self.name, records)
        now = self._now()
        append_time = self.config.message_timestamp_type == "LogAppendTime"
        offset = self._log_end_offset
        if isinstance(records, (bytes, bytearray, memoryview)):
            sent = bytes(records)
            data, parsed = validate_client_batches(sent, self.config, now, self.name, self._parse(sent))
            (pos, h), = parsed      # the validator lets exactly one batch through
            data = with_offset_and_epoch(data[pos:pos + h.size_in_bytes], offset, leader_epoch)
            if append_time:
                data = with_log_append_time(data, now)
                h = read_header(data)
            else:
                # baseOffset and the epoch lie outside the CRC: the checked header, with them set
                h = _tuple_new(BatchHeader, (offset, h[1], leader_epoch) + h[3:])
            parsed = self._check_sizes([(0, h)])
        else:
            check_record_timestamps((getattr(r, "timestamp", None) for r in records), self.config, now, self.name)
            data, header = encode_batch(
                records, base_offset=offset, compression=compression,
                timestamp_type=TimestampType.LOG_APPEND_TIME if append_time else TimestampType.CREATE_TIME,
                now_ms=now, partition_leader_epoch=leader_epoch, producer_id=producer_id,
                producer_epoch=producer_epoch, base_sequence=base_sequence, is_transactional=is_transactional)
            parsed = self._check_sizes([(0, header)])   # built here: nothing to parse or CRC-check again
        dup = self._check_producers(parsed)
        if dup is not None:
            h = parsed[0][1]
            return LogAppendInfo(dup.first_offset, dup.last_offset, dup.timestamp, -1, 0, -1, h.records_count,
                                 leader_epoch, -1, True)
        info = self._append(data, parsed, now, now if append_time else -1)
        self._track_producers(data, parsed, "client")
        if leader_epoch > self.leader_epoch_cache.newest:     # newest >= -1: only an epoch >= 0 is assigned
            self.leader_epoch_cache.assign(leader_epoch, info.first_offset)
        return info

    def append_as_follower(self, batches: bytes) -> LogAppendInfo:
        """Append batches fetched from the leader: offsets already assigned (the first must be
        >= LEO, normally == LEO); the epoch cache follows the batches' leader epochs."""
        # The common case in one pass: one whole batch (length, magic and CRC checked), at or
        # past the log end, that fits; its producer bookkeeping inline when it has no producer.
        # The header's fields stay a plain tuple here (read by index: BatchHeader's order).
        v = whole_batch_values(batches)
        if v is not None:
            cfg, size = self.config, len(batches)
            if v[0] >= self._log_end_offset and size <= cfg.max_message_bytes and size <= cfg.segment_bytes:
                info = self._append_one(batches, v, self.scheduler.clock.now_ms(), -1)
                if v[9] < 0:      # no producer id
                    self.producer_state.map_end_offset = self._log_end_offset
                else:
                    self._track_producers(batches, ((0, _tuple_new(BatchHeader, v)),), "replication")
                return info
        parsed = self._parse(batches)
        first = parsed[0][1].base_offset
        if first < self._log_end_offset:
            raise InvalidRequestError(
                f"{self.name}: follower append starts at offset {first}, below the log end offset {self._log_end_offset}")
        if len(parsed) == 1:
            info = self._append_one(batches, parsed[0][1], self.scheduler.now_ms(), -1)
        else:
            prev = first - 1
            for pos, h in parsed:
                if h.base_offset <= prev and pos:
                    raise InvalidRecordError(
                        f"{self.name}: batch at position {pos} starts at {h.base_offset}, not after {prev}")
                prev = h.base_offset + h.last_offset_delta
            info = self._append(batches, parsed, self._now(), -1)
        # Followers keep the same producer table, transactions and .txnindex as the leader.
        self._track_producers(batches, parsed, "replication")
        return info

    def _parse(self, data: bytes) -> list[tuple[int, BatchHeader]]:
        """Validate whole batches (lengths, magic, CRC) and sizes before anything is written."""
        if not data:
            raise InvalidRecordError(f"{self.name}: empty append")
        # Fast path for the common one-batch append; anything else takes the full scan,
        # which also words the error.
        h = whole_batch_header(data)
        if h is not None:
            headers = [(0, h)]
            cfg = self.config
            if len(data) <= cfg.max_message_bytes and len(data) <= cfg.segment_bytes:
                return headers
        else:
            scan = scan_valid(data)
            if scan.error is not None or scan.valid_bytes != len(data):
                raise CorruptRecordError(f"{self.name}: {scan.error or 'trailing bytes'} (append of {len(data)} bytes)")
            headers = scan.headers
        return self._check_sizes(headers)

    def _check_sizes(self, headers: list[tuple[int, BatchHeader]]) -> list[tuple[int, BatchHeader]]:
        cfg = self.config
        for pos, h in headers:
            size = h.batch_length + 12
            if size > cfg.max_message_bytes:
                raise RecordTooLargeError(f"{self.name}: batch at position {pos} is {size} bytes, more than "
                                          f"max.message.bytes={cfg.max_message_bytes}")
            if size > cfg.segment_bytes:
                raise RecordBatchTooLargeError(f"{self.name}: batch at position {pos} is {size} bytes, more than "
                                               f"segment.bytes={cfg.segment_bytes}")
        return headers

    def _append(self, data: bytes, parsed: list, now: int, log_append_time: int) -> LogAppendInfo:
        """Append validated batches. Each batch is its own segment append for roll checks and the
        index rule (so a rebuilt index equals the original), but consecutive batches that land in
        the same segment are written with one write, as Kafka writes one append."""
        if len(parsed) == 1:
            return self._append_one(data, parsed[0][1], now, log_append_time)
        self._drop_tail()
        first_pos = first_seg = None
        max_ts, count = -1, 0
        ident = self._ident
        view = memoryview(data) if len(parsed) > 1 else None
        group: list = []          # events of batches reserved but not written yet
        group_seg = None
        group_start = group_end = 0
        for rel, h in parsed:
            size = h.batch_length + 12
            seg = self._segments[-1]
            roll = self._roll_reason(seg, size, h, now)
            if roll is not None:
                if group_seg is not None:
                    self._write_group(group_seg, data, view, group_start, group_end, group)
                    group_seg, group = None, []
                seg = self._roll(roll[0], roll[1], h.base_offset)
            if group_seg is None:
                group_seg, group_start = seg, rel
            group_end = rel + size
            pos, wrote_o, wrote_t = seg.reserve(h, size, now)
            last = h.base_offset + h.last_offset_delta
            self._log_end_offset = last + 1
            group.append((BatchAppended, *ident, seg.base_offset, h.base_offset, last, pos, size, h.records_count,
                          h.max_timestamp, h.partition_leader_epoch))
            if wrote_o:
                oi = seg.offset_index
                group.append((IndexEntryWritten, *ident, "offset", seg.base_offset, oi.keys[-1], oi.values[-1], None,
                              oi.entries))
            if wrote_t:
                ti = seg.time_index
                group.append((IndexEntryWritten, *ident, "time", seg.base_offset, ti.values[-1], None, ti.keys[-1],
                              ti.entries))
            if h.partition_leader_epoch >= 0:
                group.append((None, h.partition_leader_epoch, h.base_offset))
            if first_pos is None:
                first_pos, first_seg = pos, seg.base_offset
            if h.max_timestamp > max_ts:
                max_ts = h.max_timestamp
            count += h.records_count
        self._write_group(group_seg, data, view, group_start, group_end, group)
        if self.hw_follows_leo:
            self.high_watermark = self._log_end_offset
        if self._log_end_offset - self.recovery_point >= self.config.flush_interval_messages:
            self.flush()
        h0 = parsed[0][1]
        return LogAppendInfo(h0.base_offset, self._log_end_offset - 1, max_ts, first_pos, len(data), first_seg,
                             count, h0.partition_leader_epoch, log_append_time)

    def _append_one(self, data: bytes, h: BatchHeader | tuple, now: int, log_append_time: int) -> LogAppendInfo:
        """:meth:`_append` of a single batch (the common case), without the grouping. ``h`` may
        be the header's fields as a plain tuple (:func:`whole_batch_values`); they are read by
        index, and a header is built only when the roll rule or the segment needs one."""
        size = len(data)
        seg = self._segments[-1]
        base, epoch, max_ts, count = h[0], h[2], h[8], h[12]
        last = base + h[6]
        broker, topic, partition = self._ident
        # The common case first: inside the roll window and no index entry due (one call).
        pos = seg.append_quiet(data, size, last, max_ts, now)
        if pos >= 0:
            seg_base = seg.base_offset
            self.events.emit_row(BatchAppended, (broker, topic, partition, seg_base, base, last, pos, size, count,
                                                 max_ts, epoch))
        else:
            if not isinstance(h, BatchHeader):
                h = _tuple_new(BatchHeader, h)
            roll = self._roll_reason(seg, size, h, now)
            if roll is not None:
                seg = self._roll(roll[0], roll[1], h.base_offset)
            pos, wrote_o, wrote_t = seg.append(data, h, now)
            if seg.bytes_since_last_index_entry <= seg.index_interval_bytes:
                seg.roll_window = self._roll_window(seg)    # the next append may take the quiet path
            seg_base = seg.base_offset
            batch = (BatchAppended, (broker, topic, partition, seg_base, base, last, pos, size, count, max_ts, epoch))
            if wrote_o and not wrote_t:
                # the entry just written is (last, pos)
                rows = (batch, (IndexEntryWritten, (broker, topic, partition, "offset", seg_base, last, pos, None,
                                                    len(seg.offset_index.keys))))
            elif wrote_o:
                ti = seg.time_index
                rows = (batch, (IndexEntryWritten, (broker, topic, partition, "offset", seg_base, last, pos, None,
                                                    len(seg.offset_index.keys))),
                        (IndexEntryWritten, (broker, topic, partition, "time", seg_base, ti.values[-1], None,
                                             ti.keys[-1], len(ti.keys))))
            else:
                rows = (batch,)
            self.events.emit_rows(rows)
        self._log_end_offset = last + 1
        if self._tail_on:
            if seg is self._tail_seg and pos == self._tail_end:
                tail = self._tail
                tail.append((base, last, pos, size, h))
                if len(tail) > 2 * _TAIL_BATCHES:
                    del tail[:_TAIL_BATCHES]
            else:
                self._tail_seg, self._tail = seg, [(base, last, pos, size, h)]
            self._tail_end = pos + size
        if epoch > self.leader_epoch_cache.newest:      # newest is -1 when the cache is empty
            self.leader_epoch_cache.assign(epoch, base)
        if self.hw_follows_leo:
            self.high_watermark = last + 1
        if last + 1 - self.recovery_point >= self.config.flush_interval_messages:
            self.flush()
        return _tuple_new(LogAppendInfo, (base, last, max_ts, pos, size, seg_base, count, epoch, log_append_time,
                                          False))

    def _write_group(self, seg: LogSegment, data: bytes, view, start: int, end: int, group: list) -> None:
        """Write the reserved bytes, then emit their events and move the epoch cache."""
        seg.write(data if view is None else view[start:end])
        emit = self.events.emit_fields
        cache = self.leader_epoch_cache
        for cls, *values in group:
            if cls is None:
                if values[0] > cache.newest:
                    cache.assign(*values)
            else:
                emit(cls, *values)

    def assign_epoch_start_offset(self, epoch: int, start_offset: int | None = None) -> bool:
        """A new leader records ``(epoch, LEO)`` before writing anything (KIP-279)."""
        return self.leader_epoch_cache.assign(epoch, self._log_end_offset if start_offset is None else start_offset)

    # ---- rolling -------------------------------------------------------------
    def _roll_reason(self, seg: LogSegment, size: int, h: BatchHeader, now: int) -> tuple[str, str] | None:
        """Kafka's shouldRoll (reference §4.1) for one incoming batch: (reason, detail) or None."""
        cfg = self.config
        used = seg.size
        if used > cfg.segment_bytes - size:
            return "size", f"segment is {used} bytes; {size} more would pass segment.bytes={cfg.segment_bytes}"
        if used:
            rbt = seg.rolling_based_timestamp
            elapsed = h.max_timestamp - rbt if rbt is not None and rbt >= 0 else now - seg.created_ms
            jitter = seg.rolling_jitter_ms
            # compacted logs roll by max.compaction.lag.ms too (Kafka's maxSegmentMs)
            if elapsed > cfg.segment_ms - jitter or (elapsed > cfg.max_compaction_lag_ms - jitter
                                                     and "compact" in cfg.cleanup_policy):
                max_ms = cfg.segment_ms
                if "compact" in cfg.cleanup_policy and cfg.max_compaction_lag_ms < max_ms:
                    max_ms = cfg.max_compaction_lag_ms
                what = ("batch timestamp - first batch timestamp" if rbt is not None and rbt >= 0
                        else "now - segment creation")
                return "time", f"{what} = {elapsed} ms > segment.ms={max_ms}" + (
                    f" - jitter {jitter}" if jitter else "")
        oi, ti = seg.offset_index, seg.time_index
        if len(oi.keys) >= oi.max_entries or len(ti.keys) >= ti.max_entries - 1:
            return "index_full", (f"offset index {oi.entries}/{oi.max_entries} entries, time index "
                                  f"{ti.entries}/{ti.max_entries} entries")
        if h.base_offset + h.last_offset_delta - seg.base_offset > INT32_MAX:
            return "offset_overflow", (f"offset {h.base_offset + h.last_offset_delta} - base {seg.base_offset} "
                                       "does not fit in int32")
        return None

    def _roll_window(self, seg: LogSegment) -> tuple[int, int, int] | None:
        """What :meth:`_roll_reason` allows on ``seg`` from now on, as bounds an append can be
        checked against without asking it (:attr:`LogSegment.roll_window`): (end of the segment
        in bytes, a batch's max timestamp, a batch's last offset). None when the rule must be
        asked every time: an empty segment, one rolled by wall time (no batch timestamps), or a
        full index. Holds until the segment's index grows or its stats are rebuilt, which
        reset the window (tests/engine/test_log.py checks it against the rule)."""
        cfg = self.config
        rbt = seg.rolling_based_timestamp
        if not seg.size or rbt is None or rbt < 0:
            return None
        oi, ti = seg.offset_index, seg.time_index
        if len(oi.keys) >= oi.max_entries or len(ti.keys) >= ti.max_entries - 1:
            return None
        jitter = seg.rolling_jitter_ms
        max_ts = rbt + cfg.segment_ms - jitter
        if "compact" in cfg.cleanup_policy:
            max_ts = min(max_ts, rbt + cfg.max_compaction_lag_ms - jitter)
        return cfg.segment_bytes, max_ts, seg.base_offset + INT32_MAX

    def roll(self, reason: str = "manual") -> LogSegment:
        """Start a new active segment at LEO (no-op if the active segment is empty)."""
        return self._roll(reason, "", None)

    def _roll(self, reason: str, detail: str, expected_next: int | None) -> LogSegment:
        new_base = max(expected_next if expected_next is not None else 0, self._log_end_offset)
        old = self._segments[-1]
        if old.size == 0:
            if old.base_offset == new_base:
                return old
            self._segments.pop()
            self._bases.pop()
            for rel in (old.log_rel, old.offset_index.rel, old.time_index.rel):
                self.disk.delete(rel)
        else:
            for kind, entries, before, after in old.on_become_inactive():
                self._emit(IndexTrimmed(*self._ident, old.base_offset, kind, entries, before, after))
        seg = self._new_segment(new_base)
        self._snapshot_producers_on_roll()
        self._emit(SegmentRolled(*self._ident, old.base_offset, new_base, reason, detail))
        if old.size:
            self.flush(new_base)
        return seg

    def _new_segment(self, base: int) -> LogSegment:
        jitter = 0
        cfg = self.config
        if cfg.segment_jitter_ms > 0 and self.rng is not None:
            jitter = abs(self.rng.randint(-2**31, 2**31 - 1)) % min(cfg.segment_jitter_ms, cfg.segment_ms)
        seg = LogSegment.create(self.disk, self.dir, base, cfg, created_ms=self._now(), rolling_jitter_ms=jitter)
        self._segments.append(seg)
        self._bases.append(base)
        self._emit(SegmentCreated(*self._ident, base, seg.file_names(), seg.offset_index.max_size_bytes))
        return seg

    # ---- flushing ------------------------------------------------------------
    def flush(self, up_to: int | None = None) -> None:
        """fsync the segments holding offsets in [recovery_point, up_to) and move the recovery point."""
        up_to = self._log_end_offset if up_to is None else min(up_to, self._log_end_offset)
        self._last_flush_ms = self._now()
        if up_to <= self.recovery_point:
            return
        flushed = []
        segs = self._segments
        for i, seg in enumerate(segs):
            upper = segs[i + 1].base_offset if i + 1 < len(segs) else self._log_end_offset
            if seg.base_offset < up_to and upper > self.recovery_point:
                seg.flush()
                flushed.append(seg.base_offset)
        self.recovery_point = up_to
        self._emit(LogFlushed(*self._ident, up_to, flushed))

    def _flush_if_due(self) -> None:
        if self._now() - self._last_flush_ms >= self.config.flush_interval_ms and self._log_end_offset > self.recovery_point:
            self.flush()

    # ---- reading -------------------------------------------------------------
    def _check_range(self, offset: int) -> None:
        if offset < self.log_start_offset or offset > self._log_end_offset:
            raise OffsetOutOfRangeError(offset, self.log_start_offset, self._log_end_offset, self.name)

    def read(self, offset: int, max_bytes: int = 1048576, *, max_offset: int | None = None,
             trace: bool = True) -> FetchDataInfo:
        """Whole batches from the one holding ``offset``: pick the segment (floor by base offset),
        find the floor entry in its offset index, walk batch headers to the first whose last offset
        is >= ``offset``. The first batch is always whole; the rest fit ``max_bytes`` and end below
        ``max_offset`` (exclusive, e.g. the HW). With ``trace`` the whole path is one
        :class:`LogLookup` event; ``trace=False`` emits nothing."""
        if offset < self.log_start_offset or offset > self._log_end_offset:
            self._check_range(offset)
        if not trace:
            if self._tail:
                hinted = self._read_tail(offset, max_bytes, max_offset)
                if hinted is not None:
                    return hinted
            else:
                self._tail_on = True
        probes: list | None = [] if trace else None
        scan: list | None = [] if trace else None
        rule = "largest base offset <= target"
        found = seg = None
        if offset < self._log_end_offset and (max_offset is None or offset < max_offset):
            i = bisect.bisect_right(self._bases, offset) - 1
            seg = self._segments[i]
            oi = seg.offset_index
            n = oi.floor(offset, probes)
            start = oi.values[n] if n >= 0 else 0
            while True:
                found = seg._find_offset(offset, start, scan)
                if found is not None or i + 1 >= len(self._segments):
                    break
                # Nothing at or after the target here (a gap left by truncation): the next segment.
                i, start = i + 1, 0
                seg = self._segments[i]
                rule = "largest base offset <= target, then the next segment (nothing at or after it there)"
        if found is None:
            if trace:
                self.events.emit(LogLookup(*self._ident, "offset", offset, list(self._bases), None, rule, [],
                                           probes, scan, offset, None, None))
            return FetchDataInfo(offset, b"", (), None, None, self.log_start_offset, self._log_end_offset, self.high_watermark)
        pos = found[0]
        data, headers = seg.read_batches(pos, max_bytes, max_offset, found[2], found[3])
        if trace:
            self.events.emit(LogLookup(*self._ident, "offset", offset, list(self._bases), seg.base_offset, rule, [],
                                       probes, scan, headers[0].base_offset if headers else offset, pos, None))
        return FetchDataInfo(offset, data, headers, seg.base_offset, pos, self.log_start_offset,
                             self._log_end_offset, self.high_watermark)

    def _drop_tail(self) -> None:
        self._tail, self._tail_seg, self._tail_end = [], None, -1

    def _read_tail(self, offset: int, max_bytes: int, max_offset: int | None) -> FetchDataInfo | None:
        """:meth:`read` (untraced) from the tail hint, or None when the hint does not cover
        ``offset`` (then the read takes the index). The same batches and bytes: the first batch
        whose last offset is >= ``offset``, then as many as fit ``max_bytes`` and end below
        ``max_offset``; the bytes are read from the file with one read."""
        tail = self._tail
        seg = self._tail_seg
        leo = self._log_end_offset
        if (offset < tail[0][0] or offset >= leo or seg is not self._segments[-1] or seg.size != self._tail_end
                or (max_offset is not None and offset >= max_offset)):
            return None
        # the first batch whose last offset is >= offset, searched from the end (fetches ask
        # for the newest batches); the last entry's last offset is LEO - 1 >= offset
        i = len(tail) - 1
        while i and tail[i - 1][1] >= offset:
            i -= 1
        base, last, pos, total, h = tail[i]
        if max_offset is not None and last >= max_offset:
            return None      # read_batches answers nothing here; let the general path word it
        headers = [h if type(h) is BatchHeader else _tuple_new(BatchHeader, h)]
        for base, last, _, size, h in tail[i + 1:]:
            if (max_offset is not None and last >= max_offset) or total + size > max_bytes:
                break
            headers.append(h if type(h) is BatchHeader else _tuple_new(BatchHeader, h))
            total += size
        return _tuple_new(FetchDataInfo, (offset, seg.disk.read(seg.log_rel, pos, total), tuple(headers),
                                          seg.base_offset, pos, self.log_start_offset, leo, self.high_watermark))

    def batches(self, start: int, end: int) -> list:
        """Decoded batches holding offsets in ``[start, end)``, in order (consumers need the
        batch: its control bit and producer id)."""
        out = []
        segs = self._segments
        for i, seg in enumerate(segs):
            upper = segs[i + 1].base_offset if i + 1 < len(segs) else self._log_end_offset
            if upper <= start or seg.base_offset >= end or not seg.size:
                continue
            out.extend(b for b in seg.batches() if b.base_offset + b.last_offset_delta >= start and b.base_offset < end)
        return out

    def records(self, start: int | None = None, end: int | None = None) -> list[Record]:
        """Decoded records with ``start <= offset < end`` (default: the whole visible log)."""
        start = self.log_start_offset if start is None else start
        end = self._log_end_offset if end is None else end
        out: list[Record] = []
        segs = self._segments
        for i, seg in enumerate(segs):
            upper = segs[i + 1].base_offset if i + 1 < len(segs) else self._log_end_offset
            if upper <= start or seg.base_offset >= end or not seg.size:
                continue
            for batch in seg.batches():
                out.extend(r for r in batch.records if start <= r.offset < end)
        return out

    def offset_for_timestamp(self, timestamp: int) -> TimestampOffset | None:
        """ListOffsets: -1 latest (LEO), -2 earliest (log start), -3 max timestamp, or the first
        record with timestamp >= ``timestamp`` found by the four steps (reference §3.5)."""
        cache = self.leader_epoch_cache
        if timestamp == LATEST_TIMESTAMP:
            return TimestampOffset(-1, self._log_end_offset, cache.latest_epoch)
        if timestamp == EARLIEST_TIMESTAMP:
            return TimestampOffset(-1, self.log_start_offset, cache.epoch_for_offset(self.log_start_offset))
        if timestamp == MAX_TIMESTAMP:
            best = max(self._segments, key=lambda s: s.max_timestamp_so_far)
            if best.max_timestamp_so_far < 0:
                return None
            return TimestampOffset(best.max_timestamp_so_far, best.offset_of_max_timestamp,
                                   cache.epoch_for_offset(best.offset_of_max_timestamp))
        if timestamp < 0:
            raise InvalidRequestError(f"{self.name}: unknown special timestamp {timestamp}")
        # 1. the first segment whose largest timestamp is >= the target. Segments wholly below the
        # log start offset are skipped, and if the log start offset cut the chosen segment so
        # that nothing in it qualifies, the search goes on in the next one (Kafka stops there
        # and answers "not found"; the documented answer is the first record with a timestamp
        # >= target at or after the log start offset, which this gives).
        segs, start = self._segments, self.log_start_offset
        result, found_at, seg = None, None, None
        rule = "first segment with largest timestamp >= target"
        time_probes: list = []
        probes: list = []
        scan: list = []
        for i, candidate in enumerate(segs):
            upper = segs[i + 1].base_offset if i + 1 < len(segs) else self._log_end_offset
            if candidate.largest_timestamp < timestamp or upper <= start or not candidate.size:
                continue
            if seg is not None:
                rule += ", then the next segment (nothing at or after the log start offset there)"
            seg = candidate
            found_at, result = self._find_in_segment(seg, timestamp, time_probes, probes, scan)
            if result is not None:
                break
        self.events.emit(LogLookup(*self._ident, "timestamp", timestamp, list(self._bases),
                                   seg.base_offset if seg is not None else None, rule, time_probes, probes, scan,
                                   result.offset if result else -1, found_at, result.timestamp if result else None))
        return result

    def _find_in_segment(self, seg: LogSegment, timestamp: int, time_probes: list, probes: list,
                         scan: list) -> tuple[int | None, TimestampOffset | None]:
        """Steps 2-4 of the time lookup inside one segment, recording each step in the lists."""
        # 2. time index: largest entry with timestamp <= target
        to = seg.time_index.lookup(timestamp, time_probes)
        # 3. offset index: floor entry of that offset (not below the log start offset)
        start_offset = max(to.offset, self.log_start_offset)
        position = seg.offset_index.lookup(start_offset, probes).position
        # 4. walk batches for the first whose max timestamp is >= target, then its records
        for pos, base, last, max_ts, size in seg.walk(position):
            matched = max_ts >= timestamp
            scan.append((pos, base, last, max_ts, matched))
            if not matched:
                continue
            batch = decode_batch(seg.read_bytes(pos, size), verify_crc=False)
            rec = next((r for r in batch.records if r.timestamp >= timestamp and r.offset >= self.log_start_offset),
                       None)
            if rec is not None:
                epoch = batch.partition_leader_epoch
                return pos, TimestampOffset(rec.timestamp, rec.offset, epoch if epoch >= 0 else None)
        return None, None

    # ---- offsets moved by the replica manager --------------------------------
    def update_high_watermark(self, offset: int) -> int:
        self.high_watermark = min(max(offset, self.log_start_offset), self._log_end_offset)
        return self.high_watermark

    def delete_records(self, offset: int, reason: str = "delete_records") -> int:
        """DeleteRecords: move the log start offset up to ``offset`` (-1 = HW); whole segments
        below it go at the next retention pass. ``reason`` names the mover in the event (the
        KRaft metadata log moves it to a snapshot: "snapshot")."""
        if offset == -1:
            offset = self.high_watermark
        if offset < 0 or offset > self.high_watermark:
            raise OffsetOutOfRangeError(offset, self.log_start_offset, self._log_end_offset,
                                        f"{self.name} (delete_records is bounded by the high watermark {self.high_watermark})")
        self._set_log_start_offset(offset, reason)
        return self.log_start_offset

    def _set_log_start_offset(self, offset: int, reason: str) -> None:
        if offset <= self.log_start_offset:
            return
        old = self.log_start_offset
        self.log_start_offset = offset
        if self.high_watermark < offset:
            self.high_watermark = offset
        if self.recovery_point < offset:
            self.recovery_point = offset
        self._emit(LogStartOffsetChanged(*self._ident, old, offset, reason))
        self.leader_epoch_cache.truncate_from_start(offset)

    # ---- truncation ----------------------------------------------------------
    def truncate_to(self, offset: int, reason: str = "") -> bool:
        """Remove every batch holding an offset >= ``offset`` (a follower cutting a diverged tail)."""
        if offset < 0:
            raise InvalidRequestError(f"{self.name}: cannot truncate to a negative offset {offset}")
        if offset >= self._log_end_offset:
            # Nothing to cut, but the epoch cache may still end in an epoch this replica
            # led without writing anything (it assigned (epoch, LEO) on election, then lost
            # leadership). Kafka trims it here too; otherwise a later OffsetsForLeaderEpoch
            # asks about that empty epoch and the follower keeps a diverged tail.
            self.leader_epoch_cache.truncate_from_end(self._log_end_offset)
            return False
        if self._segments[0].base_offset > offset:
            self.truncate_fully_and_start_at(offset, reason)
            return True
        old_leo = self._log_end_offset
        self._drop_tail()
        while len(self._segments) > 1 and self._segments[-1].base_offset > offset:
            self._remove_segment(self._segments[-1], "truncation")
        seg = self._segments[-1]
        seg.truncate_to(offset)
        seg.on_become_active()
        seg.flush()
        self._log_end_offset = max(seg.next_offset, seg.base_offset)
        # The cut .log was just fsync'd and older segments were flushed when they rolled, so
        # everything below the new LEO is durable (the page-cache model only tracks sizes:
        # an unflushed truncation followed by an append of the same length would look durable).
        self.recovery_point = self._log_end_offset
        self._after_truncation(old_leo, reason or "truncate_to", offset)
        return True

    def truncate_fully_and_start_at(self, offset: int, reason: str = "") -> None:
        """Drop every segment and start empty at ``offset`` (follower far behind / out of range)."""
        old_leo = self._log_end_offset
        self._drop_tail()
        for seg in list(self._segments):
            self._remove_segment(seg, "truncation")
        self._new_segment(offset)
        self._log_end_offset = offset
        old_start = self.log_start_offset
        self.log_start_offset = offset
        if old_start != offset:
            self._emit(LogStartOffsetChanged(*self._ident, old_start, offset, "truncate_fully"))
        self.high_watermark = offset
        self.recovery_point = offset
        self.leader_epoch_cache.clear()
        self._reload_producer_state()
        self._emit(LogTruncated(*self._ident, old_leo, offset, reason or "truncate_fully_and_start_at"))

    def _after_truncation(self, old_leo: int, reason: str, target: int) -> None:
        leo = self._log_end_offset
        self.leader_epoch_cache.truncate_from_end(min(target, leo))
        if self.log_start_offset > leo:
            self.log_start_offset = leo
        self.recovery_point = min(self.recovery_point, leo)
        self.high_watermark = min(self.high_watermark, leo)
        self._truncate_txn_indexes(leo)
        self._reload_producer_state()
        self._emit(LogTruncated(*self._ident, old_leo, leo, reason))

    def _remove_segment(self, seg: LogSegment, reason: str) -> None:
        """Take ``seg`` out of the log, rename its files to ``.deleted`` and schedule their removal."""
        self._drop_tail()
        i = self._segments.index(seg)
        del self._segments[i]
        del self._bases[i]
        names = seg.rename_to_deleted()
        delay = self.config.file_delete_delay_ms
        self._emit(SegmentDeleted(*self._ident, seg.base_offset, names, reason, delay))
        self.scheduler.schedule(delay, self._delete_files, tuple(f"{self.dir}/{n}" for n in names),
                                name=f"delete-file {self.name}")

    def _delete_files(self, rels: tuple) -> None:
        for rel in rels:
            if self.disk.delete(rel):
                self._emit(FileDeleted(*self._ident, rel.rsplit("/", 1)[-1]))

    # ---- closing and listing -------------------------------------------------
    def close(self) -> None:
        """Clean shutdown: flush, write the active segment's final time-index entry, trim its indexes."""
        if self._closed:
            return
        self.flush()
        seg = self._segments[-1]
        for kind, entries, before, after in seg.on_become_inactive():
            self._emit(IndexTrimmed(*self._ident, seg.base_offset, kind, entries, before, after))
        seg.flush()
        self.cancel_tasks()
        self._closed = True
        self._emit(LogClosed(*self._ident, self._log_end_offset))

    def files(self) -> list[FileInfo]:
        out = []
        for name, size in self.disk.list_files(self.dir):
            deleted = name.endswith(".deleted")
            core = name[:-len(".deleted")] if deleted else name
            stem, _, suffix = core.partition(".")
            kind = {"log": "log", "index": "index", "timeindex": "timeindex"}.get(suffix, "other")
            if core == LEADER_EPOCH_CHECKPOINT:
                kind = "leader-epoch-checkpoint"
            segment = int(stem) if len(stem) == 20 and stem.isdigit() else None
            out.append(FileInfo(name, size, kind, segment, deleted))
        return out

    def __repr__(self) -> str:
        return (f"Log({self.name}, start={self.log_start_offset}, hw={self.high_watermark}, "
                f"leo={self._log_end_offset}, segments={self._bases})")


__all__ += ["segment_file_name"]
