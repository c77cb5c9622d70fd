"""One segment of a partition's log: the ``.log`` file of record batches and its two indexes.

Files, in the partition directory, named by the base offset as 20 zero-padded digits::

    00000000000000001234.log         record batches (v2), appended back to back
    00000000000000001234.index       offset index  (see OffsetIndex: int32 relOffset, int32 position)
    00000000000000001234.timeindex   time index    (see TimeIndex: int64 timestamp, int32 relOffset)

The base offset is <= every offset in the segment and > every offset of the previous segment.
Every append to a segment is one batch; an index entry is added when more than
``index_interval_bytes`` were appended since the last one (reference §3.3), and recovery rebuilds
the indexes with the same rule so that a rebuilt index equals the original byte for byte.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Iterator

from ..config import LogConfig
from ..disk import Disk
from ..errors import CorruptIndexError, CorruptRecordError
from ..records import BATCH_OVERHEAD, BatchHeader, iter_batches, read_header, scan_valid
from .offset_index import OffsetIndex
from .time_index import NO_TIMESTAMP, TimeIndex

__all__ = ["LogSegment", "segment_file_name", "RecoveryResult", "INT32_MAX"]

INT32_MAX = 2**31 - 1
_CHUNK = 65536
#: What a lookup reads of each batch it walks past: baseOffset, batchLength, partitionLeaderEpoch
#: (skipped), magic, CRC and attributes (skipped), lastOffsetDelta, baseTimestamp (skipped),
#: maxTimestamp — 43 bytes, one ``unpack_from`` per batch.
_WALK = struct.Struct(">qi4xb6xi8xq")
_WALK_SIZE = _WALK.size
#: The same without maxTimestamp (27 bytes), for an untraced offset lookup.
_SEEK = struct.Struct(">qi4xb6xi")
_SEEK_SIZE = _SEEK.size
_MIN_BATCH = BATCH_OVERHEAD
_MIN_LENGTH = BATCH_OVERHEAD - 12


def segment_file_name(base_offset: int, suffix: str = ".log") -> str:
    return f"{base_offset:020d}{suffix}"


@dataclass(frozen=True)
class RecoveryResult:
    """What :meth:`LogSegment.recover` found: the valid batches, and the bytes cut after them."""

    headers: list
    valid_bytes: int
    truncated_bytes: int
    error: str | None


class LogSegment:
    """A segment: a ``.log`` file with its ``.index`` and ``.timeindex`` (layout in the module
    docstring). Sizes and offsets are cached in memory, so appends never re-read files."""

    def __init__(self, disk: Disk, dir_rel: str, base_offset: int, config: LogConfig, *,
                 created_ms: int = 0, rolling_jitter_ms: int = 0) -> None:
        self.disk = disk
        self.dir = dir_rel
        self.base_offset = base_offset
        self.index_interval_bytes = config.index_interval_bytes
        self.preallocate = config.preallocate   # .log made segment.bytes long at creation (Kafka's initFileSize)
        self.log_rel = f"{dir_rel}/{segment_file_name(base_offset)}"
        self.offset_index = OffsetIndex(disk, f"{dir_rel}/{segment_file_name(base_offset, '.index')}",
                                        base_offset, config.segment_index_bytes)
        self.time_index = TimeIndex(disk, f"{dir_rel}/{segment_file_name(base_offset, '.timeindex')}",
                                    base_offset, config.segment_index_bytes)
        self.created_ms = created_ms
        self.last_modified_ms = created_ms
        self.rolling_jitter_ms = rolling_jitter_ms
        self.size = 0
        self.next_offset = base_offset
        self.max_timestamp_so_far = NO_TIMESTAMP
        self.offset_of_max_timestamp = base_offset
        self.rolling_based_timestamp: int | None = None
        self.bytes_since_last_index_entry = 0
        # What the log's roll rule allows from here on, as bounds (segment end in bytes, batch
        # max timestamp, last offset) an append is checked against instead of asking the rule:
        # set by the log (Log._roll_window) after an append; None = ask the rule. Reset when the
        # index grows and whenever the stats are rebuilt.
        self.roll_window: tuple[int, int, int] | None = None

    # ---- creation / opening --------------------------------------------------
    @classmethod
    def create(cls, disk: Disk, dir_rel: str, base_offset: int, config: LogConfig, *,
               created_ms: int = 0, rolling_jitter_ms: int = 0) -> "LogSegment":
        seg = cls(disk, dir_rel, base_offset, config, created_ms=created_ms, rolling_jitter_ms=rolling_jitter_ms)
        for rel in (seg.log_rel, seg.offset_index.rel, seg.time_index.rel):
            disk.delete(rel)
            disk.touch(rel)
        seg.offset_index.preallocate()
        seg.time_index.preallocate()
        if config.preallocate:
            disk.truncate(seg.log_rel, config.segment_bytes)
        return seg

    @classmethod
    def open(cls, disk: Disk, dir_rel: str, base_offset: int, config: LogConfig, *,
             created_ms: int = 0, rolling_jitter_ms: int = 0) -> "LogSegment":
        """An existing segment; indexes are not loaded yet (see :meth:`load_indexes`)."""
        seg = cls(disk, dir_rel, base_offset, config, created_ms=created_ms, rolling_jitter_ms=rolling_jitter_ms)
        seg.size = disk.size(seg.log_rel)
        return seg

    @property
    def name(self) -> str:
        return segment_file_name(self.base_offset)

    def file_names(self) -> list[str]:
        return [segment_file_name(self.base_offset, s) for s in (".log", ".index", ".timeindex")]

    def load_indexes(self, next_offset: int | None) -> None:
        """Read both index files and check them. :class:`CorruptIndexError` if missing or insane."""
        self.offset_index.load()
        self.offset_index.sanity_check(self.size)
        self.time_index.load()
        self.time_index.sanity_check(next_offset)
        last = self.time_index.last_entry
        self.max_timestamp_so_far, self.offset_of_max_timestamp = last.timestamp, last.offset

    # ---- appending -----------------------------------------------------------
    def append(self, data: bytes | None, header: BatchHeader, now_ms: int, pos: int | None = None, size: int = 0,
               index: bool = True) -> tuple[int, bool, bool]:
        """Add one batch at ``pos`` (default: the end) and apply §3.3 to it; returns (position,
        offset entry written, time entry written). ``data`` is written there; with ``data=None``
        nothing is written and a batch of ``size`` bytes is only accounted for: one that
        :meth:`write` puts at the end later (:meth:`reserve`), or one already in the file when
        stats and indexes are rebuilt (``index=False``: bytes counted, no entries written).
        The one home of the index rule, in one call on the append path."""
        if pos is None:
            pos = self.size
        if data is not None:
            size = len(data)
            self.disk.write_at(self.log_rel, pos, data, self.preallocate)   # into_preallocated
        ts = header.max_timestamp
        last = header.base_offset + header.last_offset_delta
        if self.rolling_based_timestamp is None:
            self.rolling_based_timestamp = ts
        if ts > self.max_timestamp_so_far:
            self.max_timestamp_so_far = ts
            self.offset_of_max_timestamp = last
        since = self.bytes_since_last_index_entry
        if since <= self.index_interval_bytes:
            self.bytes_since_last_index_entry = since + size
            wrote = (pos, False, False)
        elif not index:
            self.bytes_since_last_index_entry = size
            wrote = (pos, False, False)
        else:
            oi = self.offset_index
            keys = oi.keys
            if keys and (last <= keys[-1] or pos <= oi.values[-1]) or len(keys) >= oi.max_entries:
                oi.append(last, pos, defer=True)      # what append checks, worded
            else:
                oi._write(last, pos, True)
            ti, ts, at = self.time_index, self.max_timestamp_so_far, self.offset_of_max_timestamp
            keys = ti.keys
            if keys and ts <= keys[-1] and at >= ti.values[-1] and len(keys) < ti.max_entries - 1:
                wrote = (pos, True, False)            # what maybe_append would find: nothing to write
            else:
                wrote = (pos, True, ti.maybe_append(ts, at, defer=True))
            self.bytes_since_last_index_entry = size
            self.roll_window = None
        self.size = pos + size
        self.next_offset = last + 1
        self.last_modified_ms = now_ms
        return wrote

    def append_quiet(self, data: bytes, size: int, last: int, max_ts: int, now_ms: int) -> int:
        """:meth:`append` of one batch of ``size`` bytes (last offset ``last``) at the end when it
        is the common case: inside :attr:`roll_window` and with no index entry due by §3.3.
        Returns the position written, or -1 with nothing done (then the log asks its roll rule
        and calls :meth:`append`). The same state as :meth:`append` leaves, in fewer steps
        (tests/engine/test_log_segment.py compares the two)."""
        window = self.roll_window
        pos = self.size
        since = self.bytes_since_last_index_entry
        if (window is None or since > self.index_interval_bytes or pos + size > window[0] or max_ts > window[1]
                or last > window[2]):
            return -1
        self.disk.write_at(self.log_rel, pos, data, self.preallocate)
        if max_ts > self.max_timestamp_so_far:
            self.max_timestamp_so_far = max_ts
            self.offset_of_max_timestamp = last
        self.bytes_since_last_index_entry = since + size
        self.size = pos + size
        self.next_offset = last + 1
        self.last_modified_ms = now_ms
        return pos

    def reserve(self, header: BatchHeader, size: int, now_ms: int) -> tuple[int, bool, bool]:
        """Account for (and index) a batch of ``size`` bytes that :meth:`write` will put at the
        current end; lets the log write the batches of one append with a single write."""
        return self.append(None, header, now_ms, self.size, size)

    def write(self, data) -> None:
        """Append bytes previously accounted for with :meth:`reserve`: one positioned write at
        the segment's size, which is kept in memory (no seek to the file's end)."""
        self._write_log(data, self.size - len(data))

    def _reset_stats(self) -> None:
        self.size = 0
        self.next_offset = self.base_offset
        self.max_timestamp_so_far = NO_TIMESTAMP
        self.offset_of_max_timestamp = self.base_offset
        self.rolling_based_timestamp = None
        self.bytes_since_last_index_entry = 0
        self.roll_window = None

    # ---- roll / close --------------------------------------------------------
    def on_become_inactive(self) -> list[tuple[str, int, int, int]]:
        """The segment stops being active (roll, clean close): write the final time-index entry
        (its max timestamp, bypassing the full check) and trim both index files.
        Returns ``(index kind, entries, size before, size after)`` per index."""
        self.roll_window = None
        self.time_index.maybe_append(self.max_timestamp_so_far, self.offset_of_max_timestamp, skip_full_check=True)
        out = []
        for idx in (self.offset_index, self.time_index):
            before, after = idx.trim()
            out.append((idx.KIND, idx.entries, before, after))
        if self.preallocate and self.disk.size(self.log_rel) > self.size:
            self.disk.truncate(self.log_rel, self.size)   # Kafka's FileRecords.trim()
        return out

    def _write_log(self, data, pos: int) -> int:
        """Write batch bytes at ``pos``, the end of the valid data (kept in memory: no seek to
        the file's end): past the file's end, or into the zeros of a preallocated .log."""
        self.disk.write_at(self.log_rel, pos, data, into_preallocated=self.preallocate)
        return pos

    def on_become_active(self) -> None:
        self.roll_window = None
        self.offset_index.preallocate()
        self.time_index.preallocate()

    def flush(self) -> None:
        self.disk.fsync(self.log_rel)
        self.offset_index.fsync()
        self.time_index.fsync()
        # The aborted-transaction index too (Kafka's LogSegment.flush includes txnIndex): a
        # crash must not lose what tells read_committed readers and the cleaner what to skip.
        txn_rel = self.log_rel[:-len(".log")] + ".txnindex"
        if self.disk.is_dirty(txn_rel):
            self.disk.fsync(txn_rel)

    @property
    def largest_timestamp(self) -> int:
        """Max record timestamp in the segment; the last-modified time if there is none (Kafka
        falls back to the file's mtime)."""
        return self.max_timestamp_so_far if self.max_timestamp_so_far >= 0 else self.last_modified_ms

    # ---- reading -------------------------------------------------------------
    def iter_headers(self, start: int = 0, end: int | None = None,
                     data: bytes | None = None) -> Iterator[tuple[int, BatchHeader]]:
        """``(position, header)`` of each batch from ``start``, reading the file in chunks and
        only decoding the 61-byte headers (or walking ``data``, the whole file already read)."""
        end = self.size if end is None else min(end, self.size)
        pos = start
        buf, buf_pos = (data, 0) if data is not None else (b"", start)
        while pos < end:
            rel = pos - buf_pos
            if rel + BATCH_OVERHEAD > len(buf):
                buf, buf_pos, rel = self.disk.read(self.log_rel, pos, min(_CHUNK, end - pos)), pos, 0
            try:
                header = read_header(buf, rel)
            except CorruptRecordError as exc:
                raise CorruptRecordError(f"{self.name}: corrupt record batch at position {pos}: "
                                         f"{getattr(exc, 'reason', exc)}") from exc
            yield pos, header
            pos += header.batch_length + 12

    def walk(self, start: int = 0) -> Iterator[tuple[int, int, int, int, int]]:
        """``(position, base_offset, last_offset, max_timestamp, size)`` of each batch from byte
        ``start``: the file is read in windows and each header is one ``struct.unpack_from``
        (no header objects). CorruptRecordError names the position of a bad header."""
        end = self.size
        pos = start
        unpack = _WALK.unpack_from
        while pos < end:
            buf = self.disk.read(self.log_rel, pos, min(_CHUNK, end - pos))
            n, rel = len(buf), 0
            while rel + _WALK_SIZE <= n:
                base, length, magic, delta, max_ts = unpack(buf, rel)
                size = length + 12
                if magic != 2 or size < _MIN_BATCH:
                    self._corrupt_at(pos + rel)
                yield pos + rel, base, base + delta, max_ts, size
                rel += size
            if rel == 0:
                self._corrupt_at(pos)
            pos += rel

    def find_offset(self, target: int, start: int = 0, scan: list | None = None) -> tuple[int, int] | None:
        """``(position, size)`` of the first batch at or after byte ``start`` whose last offset is
        >= ``target``, or None. Walks header fields with ``struct.unpack_from`` over one read of a
        window (the index floor puts the batch within about ``index.interval.bytes``); with
        ``scan``, appends ``(position, base_offset, last_offset, max_timestamp, matched)`` per
        batch walked."""
        found = self._find_offset(target, start, scan)
        return None if found is None else found[:2]

    def _find_offset(self, target: int, start: int, scan: list | None) -> tuple[int, int, bytes, int] | None:
        """:meth:`find_offset`, also returning the window read and where the batch found starts in it."""
        end = self.size
        pos = start
        window = min(max(2 * self.index_interval_bytes, 8192), _CHUNK)
        while pos < end:
            buf = self.disk.read(self.log_rel, pos, min(window, end - pos))
            n, rel = len(buf), 0
            if scan is None:
                seek = _SEEK.unpack_from
                while rel + _SEEK_SIZE <= n:
                    base, length, magic, delta = seek(buf, rel)
                    if magic != 2 or length < _MIN_LENGTH:
                        self._corrupt_at(pos + rel)
                    if base + delta >= target:
                        return pos + rel, length + 12, buf, rel
                    rel += length + 12
            else:
                walk, record = _WALK.unpack_from, scan.append
                while rel + _WALK_SIZE <= n:
                    base, length, magic, delta, max_ts = walk(buf, rel)
                    if magic != 2 or length < _MIN_LENGTH:
                        self._corrupt_at(pos + rel)
                    last = base + delta
                    if last >= target:
                        record((pos + rel, base, last, max_ts, True))
                        return pos + rel, length + 12, buf, rel
                    record((pos + rel, base, last, max_ts, False))
                    rel += length + 12
            if rel == 0:
                self._corrupt_at(pos)
            pos += rel
            window = _CHUNK
        return None

    def translate_offset(self, target: int, start: int = 0, scan: list | None = None) -> tuple[int, BatchHeader] | None:
        """First batch at or after ``start`` whose last offset is >= ``target``: its position and header."""
        found = self.find_offset(target, start, scan)
        if found is None:
            return None
        return found[0], self._header_at(found[0])

    def _header_at(self, pos: int) -> BatchHeader:
        try:
            return read_header(self.disk.read(self.log_rel, pos, BATCH_OVERHEAD))
        except CorruptRecordError as exc:
            raise CorruptRecordError(f"{self.name}: corrupt record batch at position {pos}: "
                                     f"{getattr(exc, 'reason', exc)}") from exc

    def _corrupt_at(self, pos: int) -> None:
        self._header_at(pos)   # raises the precise error
        raise CorruptRecordError(f"{self.name}: corrupt record batch at position {pos}")

    def read_batches(self, pos: int, max_bytes: int, max_offset: int | None = None,
                     window: bytes = b"", at: int = 0) -> tuple[bytes, tuple]:
        """Whole batches from ``pos``: the first always, then as many as fit ``max_bytes`` and end
        below ``max_offset`` (exclusive). Returns (bytes, headers), read with one read when the
        first window covers them; ``window``, bytes already read with ``pos`` at ``at``, saves it."""
        end = self.size
        headers = []
        if window and at + BATCH_OVERHEAD <= len(window):
            h = read_header(window, at)
            size = h.batch_length + 12
            if size >= max_bytes and at + size <= len(window) and (
                    max_offset is None or h.base_offset + h.last_offset_delta < max_offset):
                return window[at:at + size], (h,)     # a one-batch answer, all in the window
        # Walk headers in windows (each read on its own: no growing buffer), then take the bytes.
        total = 0
        buf, buf_pos = (window, pos - at) if window else (b"", pos)
        while pos + total < end:
            here = pos + total
            rel = here - buf_pos
            if rel + BATCH_OVERHEAD > len(buf):
                buf = self.disk.read(self.log_rel, here, min(end - here, max(min(max_bytes - total, _CHUNK), 4096)))
                buf_pos, rel = here, 0
            try:
                h = read_header(buf, rel)
            except CorruptRecordError as exc:
                raise CorruptRecordError(f"{self.name}: corrupt record batch at position {here}: "
                                         f"{getattr(exc, 'reason', exc)}") from exc
            size = h.batch_length + 12
            if (max_offset is not None and h.base_offset + h.last_offset_delta >= max_offset) or \
                    (headers and total + size > max_bytes):
                break
            headers.append(h)
            total += size
        if window and at + total <= len(window):
            return window[at:at + total], tuple(headers)
        return self.disk.read(self.log_rel, pos, total) if total else b"", tuple(headers)

    def read_bytes(self, pos: int, n: int) -> bytes:
        return self.disk.read(self.log_rel, pos, n)

    def read_all(self) -> bytes:
        return self.disk.read(self.log_rel, 0, self.size)

    def batches(self) -> list:
        """Every batch of the segment, decoded (CorruptRecordError names the file and position)."""
        try:
            return [b for _, b in iter_batches(self.read_all(), verify_crc=False)]
        except CorruptRecordError as exc:
            raise CorruptRecordError(f"{self.name}: {exc}") from exc

    # ---- truncation and recovery --------------------------------------------
    def truncate_to(self, offset: int) -> int:
        """Drop every batch whose last offset is >= ``offset``; returns bytes removed."""
        found = self.translate_offset(offset, self.offset_index.lookup(offset).position)
        if found is None:
            return 0
        pos, header = found
        cut = header.base_offset
        removed = self.size - pos
        self.disk.truncate(self.log_rel, pos)
        # A truncation is made durable at once (like a rename): otherwise a later append of the
        # same length could look durable to the page-cache model after a crash.
        self.disk.fsync(self.log_rel)
        self.offset_index.truncate_to(cut)
        self.time_index.truncate_to(cut)
        self.reload_stats()
        return removed

    def reload_stats(self) -> None:
        """Recompute size, next offset, max timestamp and the index counter by walking the
        batch headers (no index writes), e.g. when an old segment becomes active again."""
        self.size = size = self.disk.size(self.log_rel)
        headers = list(self.iter_headers(0, size))
        self._reset_stats()
        last_modified = self.last_modified_ms
        for pos, h in headers:
            self.append(None, h, last_modified, pos, h.batch_length + 12, index=False)
        self.size = size
        last = self.time_index.last_entry
        if last.timestamp > self.max_timestamp_so_far:
            self.max_timestamp_so_far, self.offset_of_max_timestamp = last.timestamp, last.offset

    def scan(self, data: bytes, max_offset: int | None = None) -> tuple[list, int, str | None]:
        """``(headers, valid bytes, error)`` of the segment's bytes ``data``, read only: batches
        must be whole with a good CRC, and their offsets increasing, >= the base offset, with
        a relative offset in int32 and below ``max_offset`` (the next segment's base)."""
        scan = scan_valid(data)
        headers, valid, error = scan.headers, scan.valid_bytes, scan.error
        prev_next = self.base_offset
        for i, (pos, h) in enumerate(headers):
            last = h.base_offset + h.last_offset_delta
            if (h.base_offset < prev_next or h.last_offset_delta < 0 or last - self.base_offset > INT32_MAX
                    or (max_offset is not None and last >= max_offset)):
                error = (f"batch at position {pos} has offsets [{h.base_offset}, {last}] that do not follow "
                         f"{prev_next - 1} in segment {self.base_offset}")
                headers, valid = headers[:i], pos
                break
            prev_next = last + 1
        return headers, valid, error

    def recover(self, now_ms: int, max_offset: int | None = None) -> RecoveryResult:
        """Re-read every batch (CRC checked), cut the log after the last valid one and rebuild
        both indexes from scratch with the §3.3 rule, then add the final time-index entry."""
        data = self.disk.read(self.log_rel, 0, self.disk.size(self.log_rel))
        headers, valid, error = self.scan(data, max_offset)
        truncated = len(data) - valid
        if truncated:
            self.disk.truncate(self.log_rel, valid)
        self.offset_index.reset()
        self.time_index.reset()
        self._reset_stats()
        for pos, h in headers:
            self.append(None, h, now_ms, pos, h.batch_length + 12)
        self.size = valid
        self.last_modified_ms = now_ms
        self.time_index.maybe_append(self.max_timestamp_so_far, self.offset_of_max_timestamp, skip_full_check=True)
        self.offset_index.sync()
        self.time_index.sync()
        return RecoveryResult(headers, valid, truncated, error)

    def rename_to_deleted(self) -> list[str]:
        """Rename every file of the segment to ``<name>.deleted`` at once; returns the new names."""
        out = []
        txn_rel = self.log_rel[:-len(".log")] + ".txnindex"   # only segments that saw an abort have one
        for rel in (self.log_rel, self.offset_index.rel, self.time_index.rel, txn_rel):
            if self.disk.exists(rel):
                self.disk.rename(rel, rel + ".deleted")
                out.append(rel.rsplit("/", 1)[-1] + ".deleted")
        return out
