"""Log compaction (``cleanup.policy`` ``compact`` or ``compact,delete``), as Kafka's
``LogCleaner`` / ``LogCleanerManager`` do it — reference §4.3.

A compacted log is ``[clean][dirty, cleanable][uncleanable]``. The boundary between clean and
dirty is the **cleaner point** (first dirty offset), kept per partition in the data
directory's ``cleaner-offset-checkpoint`` (``topic partition offset`` lines, Kafka's text
checkpoint format). The first uncleanable offset is the smallest of the high watermark, the
last stable offset (an open transaction may still abort), the active segment's base offset
and, when ``min.compaction.lag.ms`` > 0, the base of the first dirty segment holding a record
newer than ``now - min.compaction.lag.ms``; it is rounded down to a segment base offset.

Choosing a log: ``ratio = dirty bytes / (clean + dirty bytes)``; a log is a candidate when
``ratio > min.cleanable.dirty.ratio``, or when ``max.compaction.lag.ms`` has passed since the
first batch of its first dirty segment (and it has dirty bytes). The candidate with the
largest ratio is cleaned.

One pass:
1. **Offset map** over the dirty range, in one pass over its batches: key → largest offset
   (digests, bounded; a full map cuts the range short). Control batches and the batches of
   aborted transactions (the ``.txnindex`` entries) stay out of it -- else an aborted offset
   commit in ``__consumer_offsets`` would supersede the committed one before it.
   ``end offset = latest mapped offset + 1``.
2. **Rewrite** every segment from the log start up to the end offset, in groups whose sizes
   add up to at most ``segment.bytes`` (and whose index entries fit ``segment.index.bytes``,
   offsets an int32 from the group's base), one new segment per group named after the
   group's first base offset. A record is kept if it lies past the map's range, or it has a
   key, its offset is >= the map's offset for that key, and it has a value or is a tombstone
   whose batch's delete horizon has not passed. Keyless records go. Batches keep their base
   offset and ``lastOffsetDelta`` (offsets keep their gaps); a batch with tombstones and no
   delete horizon gets one (attribute bit 6, ``baseTimestamp = now + delete.retention.ms``,
   KIP-534), so a tombstone survives ``delete.retention.ms`` after the pass that first
   cleaned it. A batch left empty is dropped, unless it is its producer's last batch
   (kept empty, to preserve the producer's sequence and epoch). A batch of the mapped range
   that the map keeps whole is copied as bytes, one it keeps none of is dropped, without
   reading its records (:class:`_MappedRange`).
   **Transactions**, as Kafka's ``CleanedTransactionMetadata`` (:class:`_CleanedTransactions`),
   walking the batches in offset order: an aborted transaction's batch is dropped whole. A
   transaction marker (COMMIT or ABORT control batch) stays as it is while any batch of its
   transaction was in the log when the pass read it; a pass that finds none stamps the
   marker with a delete horizon (as for tombstones) and the first pass at or after it removes
   the marker. A control batch whose record is gone goes at once; a producer's last batch is
   kept empty. The cleaned segment gets a ``.txnindex`` with the entries of the ABORT markers
   it keeps (Kafka writes them only for transactions that still had a batch; we keep the
   entry as long as the marker, so the index and the markers always agree).
3. **Swap**, crash-safe: ``X.*.cleaned`` (``.log``, ``.index``, ``.timeindex``, and
   ``.txnindex`` when it has entries) written and fsync'd → renamed ``X.*.swap`` → every
   replaced segment renamed ``.deleted`` with its ``.txnindex`` (removed
   ``file.delete.delay.ms`` later) → the ``.swap`` files renamed to ``X.*``. Recovery
   (:func:`finish_interrupted_swaps`) deletes ``.cleaned`` files and every ``.swap`` at or
   above the smallest of them (the clean was not finished), and completes any other swap: it
   removes the segments the swap covers and renames the ``.swap`` log and ``.txnindex`` into
   place (the other indexes are rebuilt).
4. The **cleaner point** moves to the end offset.

Every step is an event (:mod:`engine.log.cleaner_events`).
"""
from __future__ import annotations

import bisect
import hashlib
import struct
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

from crc32c import crc32c

from ..disk import Disk
from ..errors import CorruptCheckpointError, InvalidRecordError
from ..records import (BATCH_OVERHEAD, BatchHeader, ControlRecordType, Record, decode_batch, iter_batches,
                       read_header, scan_valid)
from ..records.compression import compress
from ..records.varint import encode_varint, encode_varlong
from .checkpoint import CheckpointFile
from .cleaner_events import (CleanerCheck, CleanerPassFinished, CleanerPointMoved, CleanerSwapStep,
                             OffsetMapFilled, SegmentsCleaned, SwapCompleted)
from .events import LeftoverRemoved
from .log_segment import INT32_MAX, LogSegment, segment_file_name
from .offset_map import DEFAULT_DEDUPE_BUFFER_SIZE, OffsetMap
from .transaction_index import TXN_INDEX_SUFFIX, AbortedTxn

__all__ = ["LogCleaner", "LogToClean", "CleanResult", "CLEANER_CHECKPOINT", "finish_interrupted_swaps",
           "require_keys", "rebuild_batch", "is_compacted"]

CLEANER_CHECKPOINT = "cleaner-offset-checkpoint"
_SEGMENT_SUFFIXES = (".log", ".index", ".timeindex")
_HEADER = struct.Struct(">qiibIhiqqqhii")
_ATTR_DELETE_HORIZON = 0x40
_ATTR_CODEC = 0x07
_ATTR_TRANSACTIONAL = 0x10
_ATTR_CONTROL = 0x20
_MAX_KEYS_IN_EVENT = 32
_CONTROL_KEY = struct.Struct(">hh")
_md5 = hashlib.md5
_WRITE_BUFFER = 1 << 20     # the rewrite writes kept batches in chunks of about this size

StepHook = Callable[[str, int], None]


def is_compacted(config: Any) -> bool:
    return "compact" in config.cleanup_policy


# ---------------------------------------------------------------------------- keyless appends
def require_keys(name: str, records: Sequence | bytes) -> None:
    """A compacted topic refuses a record without a key, as Kafka's ``LogValidator`` does
    (INVALID_RECORD, "Compacted topic cannot accept message without key"); nothing is
    appended. ``records`` are producer records (with ``.key``) or client batches (bytes)."""
    if isinstance(records, (bytes, bytearray, memoryview)):
        for pos, batch in iter_batches(bytes(records), verify_crc=True):
            if batch.is_control:
                continue
            for r in batch.records:
                if r.key is None:
                    raise InvalidRecordError(
                        f"Compacted topic cannot accept message without key in topic partition {name} "
                        f"(record at offset delta {r.offset_delta} of the batch at position {pos})")
        return
    for i, r in enumerate(records):
        if getattr(r, "key", None) is None:
            raise InvalidRecordError(
                f"Compacted topic cannot accept message without key in topic partition {name} (record {i})")


# ---------------------------------------------------------------------------- key scan
def _zigzag(buf, pos: int) -> tuple[int, int]:
    b = buf[pos]
    if b < 0x80:
        return (b >> 1) ^ -(b & 1), pos + 1
    result, shift = b & 0x7F, 7
    pos += 1
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7


def record_keys(data: bytes, pos: int, h: BatchHeader) -> list[tuple]:
    """``(offset, key, is_tombstone, start, end, timestamp delta)`` of every record of the
    batch at ``pos`` in ``data`` (``start``/``end`` delimit the record's bytes; None for a
    compressed batch), reading only the fields the cleaner needs."""
    if h.attributes & _ATTR_CODEC:
        batch = decode_batch(data, pos, verify_crc=False)
        return [(r.offset, r.key, r.value is None, None, None, r.timestamp_delta) for r in batch.records]
    out = []
    append = out.append
    p = pos + BATCH_OVERHEAD
    base = h.base_offset
    zz = _zigzag
    for _ in range(h.records_count):
        start = p
        b = data[p]                           # record length (one- and two-byte varints inline)
        if b < 0x80:
            length, p = (b >> 1) ^ -(b & 1), p + 1
        elif data[p + 1] < 0x80:
            u = (b & 0x7F) | (data[p + 1] << 7)
            length, p = (u >> 1) ^ -(u & 1), p + 2
        else:
            length, p = zz(data, p)
        end = p + length
        q = p + 1                             # skip the attributes byte
        b = data[q]                           # timestampDelta
        if b < 0x80:
            tsd, q = (b >> 1) ^ -(b & 1), q + 1
        else:
            tsd, q = zz(data, q)
        b = data[q]
        if b < 0x80:
            delta, q = (b >> 1) ^ -(b & 1), q + 1
        else:
            delta, q = zz(data, q)
        b = data[q]
        if b < 0x80:
            klen, q = (b >> 1) ^ -(b & 1), q + 1
        else:
            klen, q = zz(data, q)
        if klen < 0:
            key = None
        else:
            key = data[q:q + klen]
            q += klen
        append((base + delta, key, data[q] == 1, start, end, tsd))  # valueLength -1 is the byte 0x01
        p = end
    return out


def map_records(data: bytes, pos: int, h: BatchHeader, lo: int, hi: int, table: dict) -> tuple[int, int, int]:
    """Put the key → offset of every record of the batch at ``pos`` (header ``h``) with an
    offset in ``[lo, hi)`` into ``table`` (an :class:`OffsetMap`'s slots: keys of 16 bytes or
    more as their MD5 digest). Returns ``(keys put, keyless records, tombstones put)``.

    An uncompressed dense batch (``lastOffsetDelta == count - 1``: every batch a producer
    writes) wholly inside ``[lo, hi)`` goes through :func:`_map_dense`, which reads only the
    length, key and the first byte of the value of each record, takes the offsets as
    consecutive and makes no object but the key; the cleaner spends most of a pass there.
    Any other batch is read with :func:`record_keys`."""
    base, count = h[0], h[12]
    if not h[5] & _ATTR_CODEC and h[6] == count - 1 and lo <= base and base + count <= hi:
        return _map_dense(data, pos + BATCH_OVERHEAD, base, count, table)
    put = keyless = tombstones = 0
    for offset, key, tombstone, *_ in record_keys(data, pos, h):
        if key is None:
            keyless += 1
        elif lo <= offset < hi:
            table[key if len(key) < 16 else _md5(key).digest()] = offset
            put += 1
            tombstones += tombstone
    return put, keyless, tombstones


def _map_dense(data: bytes, p: int, base: int, count: int, table: dict) -> tuple[int, int, int]:
    """:func:`map_records` of a dense batch wholly in range. The batch was CRC-checked when it
    was appended, so a record's length and a present key's length are never negative: their
    one- and two-byte zigzag varints decode with a shift, and a one-byte key length with its
    low bit set is a null key (-1, or any negative length, as Kafka reads it)."""
    keyless = tombstones = 0
    md5 = _md5
    zz = _zigzag
    for offset in range(base, base + count):
        b = data[p]
        if b < 0x80:
            length = b >> 1
            p += 1
        else:
            c = data[p + 1]
            if c < 0x80:
                length = ((b & 0x7F) | (c << 7)) >> 1
                p += 2
            else:
                length, p = zz(data, p)
        q = p + 1                             # past the attributes byte
        if data[q] < 0x80 and data[q + 1] < 0x80:
            q += 2                            # one-byte timestampDelta and offsetDelta
        else:
            while data[q] >= 0x80:
                q += 1
            q += 1
            while data[q] >= 0x80:
                q += 1
            q += 1
        b = data[q]                           # keyLength
        if b < 0x80:
            if b & 1:
                keyless += 1
                p += length
                continue
            q += 1
            end = q + (b >> 1)
        else:
            klen, q = zz(data, q)
            if klen < 0:
                keyless += 1
                p += length
                continue
            end = q + klen
        table[data[q:end] if end - q < 16 else md5(data[q:end]).digest()] = offset
        if data[end] == 1:                    # valueLength -1 (zigzag 0x01): a tombstone
            tombstones += 1
        p += length
    return count - keyless, keyless, tombstones


# ---------------------------------------------------------------------------- batch rewriting
def _encode_record(offset_delta: int, ts_delta: int, r: Record) -> bytes:
    body = bytearray(b"\x00")
    body += encode_varlong(ts_delta)
    body += encode_varint(offset_delta)
    if r.key is None:
        body += encode_varint(-1)
    else:
        body += encode_varint(len(r.key)) + r.key
    if r.value is None:
        body += encode_varint(-1)
    else:
        body += encode_varint(len(r.value)) + r.value
    body += encode_varint(len(r.headers))
    for h in r.headers:
        k = h.key.encode()
        body += encode_varint(len(k)) + k
        if h.value is None:
            body += encode_varint(-1)
        else:
            body += encode_varint(len(h.value)) + h.value
    return encode_varint(len(body)) + bytes(body)


def rebuild_batch(h: BatchHeader, records: Sequence[Record], delete_horizon_ms: int | None) -> bytes:
    """A v2 batch holding ``records`` (a subset of the batch ``h``) as Kafka's
    ``MemoryRecords.filterTo`` writes it: same base offset, ``lastOffsetDelta``, leader epoch,
    producer id/epoch/base sequence, codec and timestamp type; records keep their offsets and
    timestamps; with a delete horizon, bit 6 is set and ``baseTimestamp`` holds the horizon.
    An empty ``records`` gives Kafka's empty batch (no records, codec none, both timestamps
    the original max timestamp)."""
    attributes = h.attributes & ~_ATTR_DELETE_HORIZON
    if delete_horizon_ms is not None:
        attributes |= _ATTR_DELETE_HORIZON
    orig_base_ts = h.base_timestamp
    if not records:
        attributes &= ~_ATTR_CODEC
        base_ts = delete_horizon_ms if delete_horizon_ms is not None else h.max_timestamp
        section = b""
        max_ts = h.max_timestamp
    else:
        raw_ts = [orig_base_ts + r.timestamp_delta for r in records]
        base_ts = delete_horizon_ms if delete_horizon_ms is not None else raw_ts[0]
        section = b"".join(_encode_record(r.offset - h.base_offset, t - base_ts, r) for r, t in zip(records, raw_ts))
        max_ts = h.max_timestamp if (h.attributes & 0x08) else max(raw_ts)
        codec = h.attributes & _ATTR_CODEC
        if codec:
            section = compress(codec, section)
    out = bytearray(BATCH_OVERHEAD)
    out += section
    _HEADER.pack_into(out, 0, h.base_offset, len(out) - 12, h.partition_leader_epoch, 2, 0, attributes,
                      h.last_offset_delta, base_ts, max_ts, h.producer_id, h.producer_epoch, h.base_sequence,
                      len(records))
    struct.pack_into(">I", out, 17, crc32c(memoryview(out)[21:]))
    return bytes(out)


def repack_batch(h: BatchHeader, raw: bytes, kept: Sequence[tuple]) -> bytes:
    """An uncompressed batch holding the kept records' original bytes (``record_keys``
    tuples whose first record has timestamp delta 0): what :func:`rebuild_batch` would
    write, without decoding and re-encoding the records."""
    section = b"".join([raw[r[3]:r[4]] for r in kept])
    max_ts = h.max_timestamp if (h.attributes & 0x08) else h.base_timestamp + max(r[5] for r in kept)
    out = bytearray(BATCH_OVERHEAD)
    out += section
    _HEADER.pack_into(out, 0, h.base_offset, len(out) - 12, h.partition_leader_epoch, 2, 0, h.attributes,
                      h.last_offset_delta, h.base_timestamp, max_ts, h.producer_id, h.producer_epoch,
                      h.base_sequence, len(kept))
    struct.pack_into(">I", out, 17, crc32c(memoryview(out)[21:]))
    return bytes(out)


# ---------------------------------------------------------------------------- what to clean
@dataclass(frozen=True)
class LogToClean:
    """Kafka's ``LogToClean``: the clean/dirty split of one log and its dirty ratio."""

    first_dirty_offset: int
    first_uncleanable_offset: int
    clean_bytes: int
    cleanable_bytes: int
    max_compaction_lag_exceeded: bool

    @property
    def total_bytes(self) -> int:
        return self.clean_bytes + self.cleanable_bytes

    @property
    def ratio(self) -> float:
        return self.cleanable_bytes / self.total_bytes if self.total_bytes else 0.0


@dataclass
class CleanResult:
    """What one pass did (also what ``python -m engine clean`` prints)."""

    topic: str
    partition: int
    first_dirty_offset: int
    end_offset: int
    ratio: float
    segments_before: list
    segments_after: list
    bytes_before: int
    bytes_after: int
    records_before: int = 0
    records_after: int = 0
    superseded: int = 0
    tombstones_kept: int = 0
    tombstones_removed: int = 0
    keyless_removed: int = 0
    aborted_removed: int = 0
    markers_kept: int = 0
    markers_removed: int = 0
    map_entries: int = 0
    groups: list = field(default_factory=list)

    def to_dict(self) -> dict:
        return dict(self.__dict__)


_COUNTS = ("records_before", "records_after", "superseded", "tombstones_kept", "tombstones_removed",
           "keyless_removed", "aborted_removed", "markers_kept", "markers_removed")


class _GroupStats:
    """What the rewrite of one group did. Records are data records; a transaction marker
    (control batch) is counted apart, kept or removed."""

    __slots__ = _COUNTS + ("horizon", "marker_horizon")

    def __init__(self) -> None:
        self.records_before = self.records_after = self.superseded = 0
        self.tombstones_kept = self.tombstones_removed = self.keyless_removed = 0
        self.aborted_removed = self.markers_kept = self.markers_removed = 0
        self.horizon: int | None = None
        self.marker_horizon: int | None = None


def _key_text(key: bytes) -> str:
    try:
        return key.decode()
    except UnicodeDecodeError:
        return key.hex()


_GENERAL = object()   # "take the general path": the batch needs its records read


class _MappedRange:
    """What the rewrite knows, without reading records, about a batch that lies entirely in
    the range the offset map covers (``[start, latest mapped offset]``): every keyed record
    there is in the map, so a record is kept exactly when its offset is a value of the map.
    Counting the map's offsets inside the batch then says whether none, all or some of its
    records stay. None stay: the batch goes (or, its producer's last, becomes an empty
    batch). All stay and the map pass saw no tombstone or keyless record in it: the batch is
    copied whole, as Kafka copies a batch it retains whole. Anything else (some stay, a
    tombstone, a compressed batch that loses records, a batch outside the range) takes the
    general path, :meth:`LogCleaner._filter_batch`; the output is the same
    bytes either way (a property test compares the two). Control batches and aborted
    transactions' batches never come here: the transaction sweep decides them first."""

    __slots__ = ("start", "latest", "offsets", "marked")

    def __init__(self, start: int, omap: OffsetMap, marked: dict[int, int]) -> None:
        self.start, self.latest = start, omap.latest_offset
        self.offsets = sorted(omap.table.values())
        self.marked = marked

    def shortcut(self, raw: bytes, pos: int, v: BatchHeader, producer_last: set[int], stats: "_GroupStats"):
        base = v[0]
        last = base + v[6]
        if base < self.start or last > self.latest:
            return _GENERAL
        count = v[12]
        offsets = self.offsets
        kept = bisect.bisect_right(offsets, last) - bisect.bisect_left(offsets, base)
        keyless = self.marked.get(base)
        if kept == 0:
            keyless = keyless or 0
            stats.records_before += count
            stats.superseded += count - keyless
            stats.keyless_removed += keyless
            if v[9] >= 0 and base in producer_last:
                return rebuild_batch(v, [], None)
            return None
        if kept == count and keyless is None:
            stats.records_before += count
            stats.records_after += count
            return raw[pos:pos + v[1] + 12]
        return _GENERAL


class LogCleaner:
    """The cleaner of one data directory (one broker). ``data_dir`` is the directory, relative
    to the disk root, that holds the partition directories and ``cleaner-offset-checkpoint``.
    ``step_hook(step, segment)`` is called after every file-system step of a swap (tests use
    it to crash the broker between any two steps)."""

    def __init__(self, disk: Disk, data_dir: str = "", *, dedupe_buffer_size: int = DEFAULT_DEDUPE_BUFFER_SIZE,
                 step_hook: StepHook | None = None) -> None:
        self.disk = disk
        self.data_dir = data_dir.strip("/")
        rel = f"{self.data_dir}/{CLEANER_CHECKPOINT}" if self.data_dir else CLEANER_CHECKPOINT
        self.checkpoint = CheckpointFile(disk, rel, (str, int, int))
        self.dedupe_buffer_size = dedupe_buffer_size
        self.step_hook = step_hook
        #: Copy or drop whole batches the offset map decides without reading their records
        #: (:class:`_MappedRange`); False sends every data batch through the per-record path.
        self.batch_shortcuts = True

    # ---- the cleaner point --------------------------------------------------------------
    def checkpoints(self) -> dict[tuple[str, int], int]:
        try:
            return {(t, p): o for t, p, o in self.checkpoint.read()}
        except CorruptCheckpointError:
            return {}  # Kafka logs and starts over from the log start offsets

    def first_dirty_offset(self, log) -> int:
        """The checkpointed cleaner point, reset to the log start offset when it is missing,
        below the log start offset or above the log end offset."""
        offset = self.checkpoints().get((log.topic, log.partition))
        if offset is None or offset < log.log_start_offset or offset > log.log_end_offset:
            return log.log_start_offset
        return offset

    def _write_point(self, log, offset: int) -> None:
        points = self.checkpoints()
        old = points.get((log.topic, log.partition), log.log_start_offset)
        points[(log.topic, log.partition)] = offset
        self.checkpoint.write([(t, p, o) for (t, p), o in sorted(points.items())])
        log.events.emit(CleanerPointMoved(log.broker, log.topic, log.partition, old, offset))

    # ---- choosing -----------------------------------------------------------------------
    def to_clean(self, log, now: int) -> LogToClean:
        segs = log.segments
        first_dirty = self.first_dirty_offset(log)
        cfg = log.config
        # The LSO: an open transaction's records may still be aborted (Kafka's firstUnstableOffset).
        candidates = [log.active_segment.base_offset, log.high_watermark, log.last_stable_offset]
        dirty_segs = [s for i, s in enumerate(segs[:-1]) if segs[i + 1].base_offset > first_dirty]
        if cfg.min_compaction_lag_ms > 0:
            young = next((s for s in dirty_segs if s.size and s.largest_timestamp > now - cfg.min_compaction_lag_ms),
                         None)
            if young is not None:
                candidates.append(young.base_offset)
        uncleanable = min(candidates)
        uncleanable = max(uncleanable, first_dirty)
        base = max((s.base_offset for s in segs if s.base_offset <= uncleanable), default=uncleanable)
        uncleanable = max(base, first_dirty) if base > first_dirty else first_dirty
        clean = dirty = 0
        for i, s in enumerate(segs):
            upper = segs[i + 1].base_offset if i + 1 < len(segs) else log.log_end_offset
            if upper <= log.log_start_offset:
                continue
            if upper <= first_dirty:
                clean += s.size
            elif s.base_offset < uncleanable:
                dirty += s.size
        lag_exceeded = False
        if cfg.max_compaction_lag_ms < 2**63 - 1 and dirty_segs:
            first = next((s for s in dirty_segs if s.size), None)
            if first is not None and first.rolling_based_timestamp is not None and first.rolling_based_timestamp >= 0:
                lag_exceeded = now - first.rolling_based_timestamp > cfg.max_compaction_lag_ms
        return LogToClean(first_dirty, uncleanable, clean, dirty, lag_exceeded and dirty > 0)

    def grab_filthiest(self, logs: Iterable, now: int) -> tuple[Any, LogToClean] | None:
        """The compacted log with the largest dirty ratio above its threshold (or past its
        max compaction lag), or None. Emits one ``cleaner_check`` per compacted log."""
        checked = []
        for log in logs:
            if not is_compacted(log.config):
                continue
            ltc = self.to_clean(log, now)
            threshold = log.config.min_cleanable_dirty_ratio
            if ltc.cleanable_bytes == 0:
                continue  # nothing dirty: no event (a broker has many compacted logs at rest)
            elif ltc.max_compaction_lag_exceeded:
                reason, eligible = "max.compaction.lag.ms exceeded", True
            elif ltc.ratio > threshold:
                reason, eligible = "dirty ratio above min.cleanable.dirty.ratio", True
            else:
                reason, eligible = "dirty ratio not above min.cleanable.dirty.ratio", False
            checked.append((log, ltc, threshold, reason, eligible))
        best = max((c for c in checked if c[4]), key=lambda c: c[1].ratio, default=None)
        for log, ltc, threshold, reason, eligible in checked:
            chosen = best is not None and log is best[0]
            if eligible and not chosen:
                reason = "a dirtier log was chosen"
            log.events.emit(CleanerCheck(log.broker, log.topic, log.partition, ltc.first_dirty_offset,
                                         ltc.first_uncleanable_offset, ltc.clean_bytes, ltc.cleanable_bytes,
                                         round(ltc.ratio, 6), threshold, ltc.max_compaction_lag_exceeded, chosen,
                                         reason))
        return None if best is None else (best[0], best[1])

    def schedule(self, scheduler: Any, logs: list, backoff_ms: int = 15000) -> Any:
        """Run :meth:`run_once` over ``logs`` (a list the caller may keep changing) every
        ``log.cleaner.backoff.ms`` of virtual time, as Kafka's cleaner thread does; returns the
        task (cancel it with ``scheduler.cancel``)."""
        return scheduler.schedule_periodic(backoff_ms, self._tick, scheduler, logs, name="log-cleaner")

    def _tick(self, scheduler: Any, logs: list) -> None:
        self.run_once([log for log in logs if not log._closed], scheduler.now_ms())

    def run_once(self, logs: Iterable, now: int) -> CleanResult | None:
        """One iteration of the cleaner thread: pick the filthiest log and clean it."""
        picked = self.grab_filthiest(list(logs), now)
        if picked is None:
            return None
        return self.clean(picked[0], now, picked[1])

    # ---- cleaning -----------------------------------------------------------------------
    def clean(self, log, now: int, ltc: LogToClean | None = None) -> CleanResult:
        """Clean ``log`` once (whatever its ratio) and move its cleaner point."""
        ltc = ltc or self.to_clean(log, now)
        start, upper = ltc.first_dirty_offset, ltc.first_uncleanable_offset
        before = [s.base_offset for s in log.segments]
        bytes_before = log.size_bytes
        omap = OffsetMap(self.dedupe_buffer_size)
        last_batch_of_producer = self._producer_last_batches(log)
        aborted_txns = log.aborted_transactions(log.log_start_offset, upper)
        marked = self._build_offset_map(log, omap, start, upper, _AbortedBatches(aborted_txns))
        end = omap.latest_offset + 1 if omap.latest_offset >= start else start
        mapped = _MappedRange(start, omap, marked) if self.batch_shortcuts else None
        result = CleanResult(log.topic, log.partition, start, end, round(ltc.ratio, 6), before, before, bytes_before,
                             bytes_before, map_entries=omap.size)
        if end > start:
            horizon_now = now + log.config.delete_retention_ms
            to_clean = [s for s in log.segments[:-1] if s.base_offset < end]
            txns = _CleanedTransactions(aborted_txns)      # carried from group to group, as Kafka's
            for group in self._group_segments(log, to_clean, end):
                stats = self._clean_group(log, group, omap, now, horizon_now, last_batch_of_producer, txns, mapped)
                result.groups.append([s.base_offset for s in group])
                for name in _COUNTS:
                    setattr(result, name, getattr(result, name) + getattr(stats, name))
        self._write_point(log, end)
        self._step("checkpoint", end)
        result.segments_after = [s.base_offset for s in log.segments]
        result.bytes_after = log.size_bytes
        log.events.emit(CleanerPassFinished(log.broker, log.topic, log.partition, start, end, before,
                                            result.segments_after, bytes_before, result.bytes_after))
        return result

    def _step(self, step: str, segment: int) -> None:
        if self.step_hook is not None:
            self.step_hook(step, segment)

    @staticmethod
    def _producer_last_batches(log) -> set[int]:
        """Base offsets of the last batch of each producer id in the log."""
        last: dict[int, int] = {}
        for seg in log.segments:
            for _, h in seg.iter_headers():
                if h.producer_id >= 0:
                    last[h.producer_id] = h.base_offset
        return set(last.values())

    def _build_offset_map(self, log, omap: OffsetMap, start: int, upper: int,
                          aborted: "_AbortedBatches") -> dict[int, int]:
        """Kafka's ``buildOffsetMap`` over the dirty range ``[start, upper)``, in one pass over
        its batches straight into the map (keys and offsets only, see :func:`map_records`);
        control batches and aborted transactions' batches are left out; it stops after the
        batch that fills the map. Returns the base offsets of the batches that hold a keyless
        record or a tombstone, with their keyless count (the rewrite copies or drops the other
        batches of the mapped range without reading them)."""
        ident = (log.broker, log.topic, log.partition)
        table = omap.table
        marked: dict[int, int] = {}
        for seg in log.segments:
            if seg.base_offset >= upper or not seg.size or seg.next_offset <= start:
                continue
            put = records = 0
            sample: list = []
            full = False
            data = seg.read_all()
            for pos, h in seg.iter_headers(data=data):
                base, attributes, count = h[0], h[5], h[12]
                last = base + h[6]
                if last < start:
                    continue
                if base >= upper:
                    break
                if not attributes & _ATTR_CONTROL and not (attributes & _ATTR_TRANSACTIONAL and aborted.holds(h)):
                    records += count
                    n, keyless, tombstones = map_records(data, pos, h, start, upper, table)
                    put += n
                    if keyless or tombstones:
                        marked[base] = keyless
                    if len(sample) < _MAX_KEYS_IN_EVENT and n:
                        for offset, key, *_ in record_keys(data, pos, h):
                            if key is not None and start <= offset < upper and len(sample) < _MAX_KEYS_IN_EVENT:
                                sample.append([_key_text(key), offset])
                omap.update_latest_offset(min(last, upper - 1))
                if omap.full:
                    full = True
                    break
            log.events.emit(OffsetMapFilled(*ident, seg.base_offset, records, put, omap.size, omap.capacity,
                                            omap.latest_offset, full, sample))
            if full:
                break
        return marked

    @staticmethod
    def _group_segments(log, segs: list[LogSegment], end: int) -> list[list[LogSegment]]:
        """Kafka's ``groupSegmentsBySize``: consecutive segments whose log sizes add up to at
        most ``segment.bytes``, index entries to what ``segment.index.bytes`` holds, and
        offsets stay within an int32 of the group's base offset (an empty segment joins
        whatever its offsets: it holds none). A pass whose group keeps no record leaves an
        empty segment, as Kafka's ``cleanSegments`` swaps in its cleaned segment whatever its
        size; the next pass groups it with its neighbours."""
        cfg = log.config
        all_segs = log.segments
        groups: list[list[LogSegment]] = []
        i = 0
        while i < len(segs):
            group = [segs[i]]
            size = segs[i].size
            entries = segs[i].offset_index.entries
            tentries = segs[i].time_index.entries
            j = i + 1
            while j < len(segs):
                s = segs[j]
                k = all_segs.index(s)
                upper = all_segs[k + 1].base_offset if k + 1 < len(all_segs) else log.log_end_offset
                if (size + s.size > cfg.segment_bytes
                        or entries + s.offset_index.entries > cfg.max_index_entries_offset
                        or tentries + s.time_index.entries > cfg.max_index_entries_time - 1
                        or (s.size and upper - 1 - group[0].base_offset > INT32_MAX)):
                    break
                group.append(s)
                size += s.size
                entries += s.offset_index.entries
                tentries += s.time_index.entries
                j += 1
            groups.append(group)
            i = j
        return groups

    def _clean_group(self, log, group: list[LogSegment], omap: OffsetMap, now: int, horizon_now: int,
                     producer_last: set[int], txns: "_CleanedTransactions",
                     mapped: "_MappedRange | None" = None) -> _GroupStats:
        disk, d = self.disk, log.dir
        ident = (log.broker, log.topic, log.partition)
        base = group[0].base_offset
        stats = _GroupStats()
        new = LogSegment(disk, d, base, log.config, created_ms=group[-1].created_ms)
        for idx in (new.offset_index, new.time_index):
            idx.rel += ".cleaned"
        new.log_rel += ".cleaned"
        txn_index = _Rel(f"{d}/{segment_file_name(base, TXN_INDEX_SUFFIX)}.cleaned")
        for rel in (new.log_rel, new.offset_index.rel, new.time_index.rel, txn_index.rel):
            disk.delete(rel)
        for rel in (new.log_rel, new.offset_index.rel, new.time_index.rel):
            disk.touch(rel)
        out: list = []            # kept batches reserved in the new segment, written in chunks
        pending = 0
        kept_aborts: list[AbortedTxn] = []
        filter_batch, filter_control = self._filter_batch, self._filter_control
        for seg in group:
            raw = seg.read_all()
            for pos, h in seg.iter_headers(data=raw):
                attributes = h[5]
                if attributes & _ATTR_CONTROL:
                    data = filter_control(raw, pos, h, txns, now, horizon_now, producer_last, stats, kept_aborts)
                elif attributes & _ATTR_TRANSACTIONAL and txns.on_batch(h):
                    # an aborted transaction's batch: its records go, as Kafka's cleaner drops it
                    stats.records_before += h[12]
                    stats.aborted_removed += h[12]
                    data = rebuild_batch(h, [], None) if h[0] in producer_last else None
                else:
                    data = mapped.shortcut(raw, pos, h, producer_last, stats) if mapped is not None else _GENERAL
                    if data is _GENERAL:
                        data = filter_batch(raw, pos, h, omap, now, horizon_now, producer_last, stats)
                if data is None:
                    continue
                new.reserve(read_header(data, 0), len(data), now)
                out.append(data)
                pending += len(data)
                if pending >= _WRITE_BUFFER:
                    new.write(b"".join(out))
                    out, pending = [], 0
        if out:
            new.write(b"".join(out))
        new.on_become_inactive()
        new.last_modified_ms = group[-1].last_modified_ms
        new.flush()
        files = [new, new.offset_index, new.time_index]
        if kept_aborts:        # the aborted transactions whose markers stay, as Kafka rebuilds the index
            disk.append(txn_index.rel, b"".join(t.encode() for t in kept_aborts))
            disk.fsync(txn_index.rel)
            files.append(txn_index)
        self._emit_step(log, base, "cleaned", [_name(f) for f in files])
        log.events.emit(SegmentsCleaned(*ident, base, [s.base_offset for s in group], sum(s.size for s in group),
                                        new.size, stats.records_before, stats.records_after, stats.superseded,
                                        stats.tombstones_kept, stats.tombstones_removed, stats.keyless_removed,
                                        stats.horizon, stats.aborted_removed, stats.markers_kept,
                                        stats.markers_removed, stats.marker_horizon))
        # .cleaned -> .swap, one file at a time (a crash in between leaves a .cleaned: abandoned)
        for f in files:
            old_rel = _rel(f)
            swap_rel = old_rel[:-len(".cleaned")] + ".swap"
            disk.rename(old_rel, swap_rel)
            _set_rel(f, swap_rel)
            self._emit_step(log, base, "swap", [_name(f)])
        # the replaced segments leave the log (renamed .deleted, removed later)
        position = log._segments.index(group[0])
        for seg in group:
            names = seg.file_names()
            txn_name = segment_file_name(seg.base_offset, TXN_INDEX_SUFFIX)
            if disk.exists(f"{d}/{txn_name}"):
                names.append(txn_name)
            log._remove_segment(seg, "cleaner")
            self._emit_step(log, seg.base_offset, "old_deleted", [f"{n}.deleted" for n in names])
        # .swap -> final names
        for f in files:
            swap_rel = _rel(f)
            final = swap_rel[:-len(".swap")]
            disk.rename(swap_rel, final)
            _set_rel(f, final)
            self._emit_step(log, base, "swapped", [_name(f)])
        log._segments.insert(position, new)
        log._bases.insert(position, base)
        return stats

    def _emit_step(self, log, segment: int, step: str, files: list) -> None:
        log.events.emit(CleanerSwapStep(log.broker, log.topic, log.partition, segment, step, files))
        self._step(step, segment)

    @staticmethod
    def _filter_control(raw: bytes, pos: int, h: BatchHeader, txns: "_CleanedTransactions", now: int,
                        horizon_now: int, producer_last: set[int], stats: _GroupStats,
                        kept_aborts: list) -> bytes | None:
        """A control batch as Kafka's cleaner writes it back (``checkBatchRetention`` with
        ``onControlBatchRead``). A transaction marker is kept as it is while any batch of its
        transaction is in the log; once none is, it is kept with a delete horizon stamped the
        first time (``now + delete.retention.ms``: bit 6 and ``baseTimestamp``, KIP-534) and
        removed by the first pass at or after that horizon. A batch without its record (a
        marker already removed) goes at once. Either way a producer's last batch stays, empty
        (its epoch fences zombies). A kept ABORT marker keeps its ``.txnindex`` entry."""
        batch = decode_batch(raw, pos, verify_crc=False)
        records = batch.records
        kind = None
        if records and records[0].key is not None and len(records[0].key) >= _CONTROL_KEY.size:
            kind = _CONTROL_KEY.unpack_from(records[0].key)[1]
        discardable, txn = txns.on_marker(h, kind, bool(records))
        horizon = h.delete_horizon_ms
        if records and not (discardable and horizon is not None and now >= horizon):
            stats.markers_kept += 1
            if txn is not None:
                kept_aborts.append(txn)
            if discardable and horizon is None:
                stats.marker_horizon = horizon_now
                return rebuild_batch(batch, records, horizon_now)
            return raw[pos:pos + h.batch_length + 12]
        if records:
            stats.markers_removed += 1
        return rebuild_batch(h, [], None) if h.base_offset in producer_last else None

    @staticmethod
    def _filter_batch(raw: bytes, pos: int, h: BatchHeader, omap: OffsetMap, now: int, horizon_now: int,
                      producer_last: set[int], stats: _GroupStats) -> bytes | None:
        """A data batch as the cleaner writes it back: the original bytes if every record stays
        and no delete horizon is added, a rebuilt batch, an empty batch, or None."""
        size = h.batch_length + 12
        horizon = h.delete_horizon_ms
        keep_offsets = []
        kept = []
        has_tombstone = False
        latest = omap.latest_offset
        get, slot = omap.table.get, omap.slot_key
        scanned = record_keys(raw, pos, h)
        for rec in scanned:
            offset, key, tombstone = rec[0], rec[1], rec[2]
            keep = False
            if offset > latest:
                keep = True
            elif key is None:
                stats.keyless_removed += 1
            elif offset < get(key if len(key) < 16 else slot(key), -1):
                stats.superseded += 1
            elif not tombstone or horizon is None or now < horizon:
                keep = True
            else:
                stats.tombstones_removed += 1
            if keep:
                keep_offsets.append(offset)
                kept.append(rec)
                if tombstone:
                    has_tombstone = True
                    stats.tombstones_kept += 1
        stats.records_before += len(scanned)
        stats.records_after += len(keep_offsets)
        new_horizon = horizon
        if has_tombstone and horizon is None:
            new_horizon = horizon_now
            stats.horizon = horizon_now
        if len(keep_offsets) == len(scanned) and new_horizon == horizon:
            return raw[pos:pos + size]
        if not kept:
            if h.producer_id >= 0 and h.base_offset in producer_last:
                return rebuild_batch(h, [], None)
            return None
        if new_horizon == horizon and kept[0][3] is not None and kept[0][5] == 0:
            # The first record kept carries the batch's base timestamp, so every kept record's
            # bytes (deltas against the unchanged base offset and timestamp) stay as they are.
            return repack_batch(h, raw, kept)
        batch = decode_batch(raw, pos, verify_crc=False)
        wanted = set(keep_offsets)
        return rebuild_batch(batch, [r for r in batch.records if r.offset in wanted], new_horizon)


class _Rel:
    """A file of the cleaned segment that has no object of its own (its ``.txnindex``)."""

    __slots__ = ("rel",)

    def __init__(self, rel: str) -> None:
        self.rel = rel


def _rel(f) -> str:
    return f.log_rel if isinstance(f, LogSegment) else f.rel


def _set_rel(f, rel: str) -> None:
    if isinstance(f, LogSegment):
        f.log_rel = rel
    else:
        f.rel = rel


def _name(f) -> str:
    return _rel(f).rsplit("/", 1)[-1]


class _AbortedBatches:
    """Which batches belong to aborted transactions (from the ``.txnindex`` entries)."""

    def __init__(self, txns: list) -> None:
        self.by_pid: dict[int, list] = {}
        for t in txns:
            self.by_pid.setdefault(t.producer_id, []).append((t.first_offset, t.last_offset))

    def __bool__(self) -> bool:
        return bool(self.by_pid)

    def holds(self, h: BatchHeader) -> bool:
        return h.is_transactional and any(first <= h.base_offset <= last
                                          for first, last in self.by_pid.get(h.producer_id, ()))


class _CleanedTransactions:
    """Kafka's ``CleanedTransactionMetadata``: the transactions a pass walks through, in offset
    order across all its groups. The aborted transactions (``.txnindex`` entries) become
    *ongoing* when the walk reaches their first offset; a transactional batch of a producer
    with an ongoing aborted transaction belongs to it (it is dropped, and the transaction
    marked as having had a batch in the log this pass), any other transactional batch puts
    its producer in the ongoing committed set. A marker ends its producer's transaction and
    says whether the transaction still had a batch in the log: if none, the marker may go
    (after its delete horizon)."""

    __slots__ = ("pending", "next", "aborted", "committed")

    def __init__(self, aborted: list[AbortedTxn]) -> None:
        self.pending = sorted(aborted, key=lambda t: (t.first_offset, t.last_offset))
        self.next = 0
        self.aborted: dict[int, list] = {}     # producer id -> [AbortedTxn, a batch seen]
        self.committed: set[int] = set()

    def _reach(self, offset: int) -> None:
        pending, i = self.pending, self.next
        while i < len(pending) and pending[i].first_offset <= offset:
            t = pending[i]
            self.aborted.setdefault(t.producer_id, [t, False])
            i += 1
        self.next = i

    def on_batch(self, h: BatchHeader) -> bool:
        """A transactional data batch: True if it belongs to an aborted transaction."""
        self._reach(h.base_offset + h.last_offset_delta)
        ongoing = self.aborted.get(h.producer_id)
        if ongoing is not None:
            ongoing[1] = True
            return True
        self.committed.add(h.producer_id)
        return False

    def on_marker(self, h: BatchHeader, kind: int | None, has_record: bool) -> tuple[bool, AbortedTxn | None]:
        """A control batch: (may it be discarded, the aborted transaction an ABORT marker ends)."""
        self._reach(h.base_offset + h.last_offset_delta)
        if not has_record:
            return True, None                   # an empty control batch: a marker already removed
        pid = h.producer_id
        if kind == ControlRecordType.ABORT:
            ongoing = self.aborted.pop(pid, None)
            if ongoing is None:
                return True, None
            return not ongoing[1], ongoing[0]
        if kind == ControlRecordType.COMMIT:
            if pid in self.committed:
                self.committed.discard(pid)
                return False, None
            return True, None
        return False, None                      # another control type: kept


# ---------------------------------------------------------------------------- recovery
def _base_of(name: str) -> int | None:
    stem = name.split(".", 1)[0]
    return int(stem) if len(stem) == 20 and stem.isdigit() else None


def finish_interrupted_swaps(disk: Disk, d: str, emit: Callable[[Any], None], ident: tuple) -> None:
    """What Kafka's ``LogLoader`` does with cleaner leftovers before loading segments:
    ``.cleaned`` files are deleted; ``.index``/``.timeindex`` ``.swap`` files are deleted
    (rebuilt later); a ``.swap`` at or above the smallest ``.cleaned`` base offset belongs to
    an unfinished clean and is deleted; any other log ``.swap`` is complete, so the segments it
    covers (base offsets in ``[swap base, swap next offset)``) are removed with their
    ``.txnindex`` and it is renamed into place, and so is a complete ``.txnindex.swap`` (the
    aborted transactions the cleaned segment keeps: nothing rebuilds it)."""
    names = disk.listdir(d)
    cleaned = [n for n in names if n.endswith(".cleaned")]
    min_cleaned = min((b for n in cleaned if (b := _base_of(n)) is not None), default=None)
    for n in cleaned:
        disk.delete(f"{d}/{n}")
        emit(LeftoverRemoved(*ident, n))
    swaps, txn_swaps = [], []
    for n in names:
        if not n.endswith(".swap"):
            continue
        core = n[:-len(".swap")]
        if core.endswith(".log"):
            swaps.append(n)
        elif core.endswith(TXN_INDEX_SUFFIX):
            txn_swaps.append(n)
        else:
            disk.delete(f"{d}/{n}")
            emit(LeftoverRemoved(*ident, n))
    for n in sorted(swaps):
        base = _base_of(n)
        core = n[:-len(".swap")]
        if base is None or (min_cleaned is not None and base >= min_cleaned):
            disk.delete(f"{d}/{n}")
            emit(LeftoverRemoved(*ident, n))
            continue
        scan = scan_valid(disk.read_all(f"{d}/{n}"))
        nxt = scan.headers[-1][1].base_offset + scan.headers[-1][1].last_offset_delta + 1 if scan.headers else base
        replaced = []
        for other in sorted(disk.listdir(d)):
            b = _base_of(other)
            if other.endswith(".log") and b is not None and base <= b and (b < nxt or b == base):
                replaced.append(b)
                for suffix in _SEGMENT_SUFFIXES + (TXN_INDEX_SUFFIX,):
                    disk.delete(f"{d}/{segment_file_name(b, suffix)}")
        disk.rename(f"{d}/{n}", f"{d}/{core}")
        emit(SwapCompleted(*ident, base, replaced))
    for n in sorted(txn_swaps):
        base = _base_of(n)
        if base is None or (min_cleaned is not None and base >= min_cleaned):
            disk.delete(f"{d}/{n}")
            emit(LeftoverRemoved(*ident, n))
        else:
            disk.rename(f"{d}/{n}", f"{d}/{n[:-len('.swap')]}")
