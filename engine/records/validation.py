"""The leader's checks on batches a client sends, as Kafka's ``LogValidator`` makes them
(reference §2.5) before anything reaches the log.

In order, for the bytes of one Produce request to one partition:

1. Whole batches with a good CRC (``scan_valid``) — else ``CORRUPT_MESSAGE``.
2. Exactly one batch (Produce v3+ with magic 2) — else ``INVALID_RECORD``.
3. The batch header (``validateBatch`` for a client): ``lastOffsetDelta + 1 > 0``,
   ``recordsCount > 0`` and ``recordsCount == lastOffsetDelta + 1``; no control batch;
   a producer id >= 0 needs a base sequence >= 0 — else ``INVALID_RECORD``.
4. The records: the record section is decompressed with a cap of ``max.message.bytes``
   (streamed, so a small batch that inflates past it is refused before it is allocated —
   ``MESSAGE_TOO_LARGE``; Kafka streams records instead and has no such cap), then every
   record must decode and the count must match (``CORRUPT_MESSAGE``). The records are
   walked, not built (``walk_records``: every varint and length checked, keys and values
   skipped, as Kafka's ``skipKeyValueIterator``); only a batch that fails a check of 4-5, or
   whose offset deltas need a rebuild, is decoded in full, which words the error.
5. Per record (``validateRecord``): on a compacted topic a record needs a key
   (``INVALID_RECORD``); on a CreateTime topic a timestamp other than -1 must lie in
   ``[now - before.max.ms, now + after.max.ms]``; a client may not mark a batch
   LogAppendTime unless that first rule applied (``INVALID_TIMESTAMP``).

Then, as Kafka's ``assignOffsets*`` do, the batch is made consistent with its records:
``maxTimestamp`` becomes the largest record timestamp (CreateTime topics; attribute bit 3
cleared, CRC recomputed), and a batch whose records' offset deltas are not 0..n-1 is
rebuilt with the same codec and producer fields. (Kafka rebuilds only compressed batches;
an uncompressed one keeps such deltas. The engine rebuilds both, so every record's offset
lies inside its batch's range.)

Any failure raises before the log is touched, so a refused append changes nothing.
"""
from __future__ import annotations

import struct
from typing import Iterable

from crc32c import crc32c

from ..config import LogConfig
from ..errors import CorruptRecordError, InvalidRecordError, InvalidTimestampError, RecordTooLargeError
from .batch import (BATCH_OVERHEAD, BatchHeader, RecordBatch, SimpleRecord, TimestampType, build_batch, decode_batch,
                    read_header, scan_valid, walk_records)
from .compression import DecompressedTooLarge, decompress_capped

__all__ = ["validate_client_batches", "check_timestamp", "check_record_timestamps", "NO_TIMESTAMP"]

NO_TIMESTAMP = -1
_CONTROL = 0x20
_TRANSACTIONAL = 0x10
_LOG_APPEND_TIME = 0x08
_CODEC = 0x07


def validate_client_batches(data: bytes, config: LogConfig, now_ms: int, where: str,
                            headers: list[tuple[int, BatchHeader]] | None = None
                            ) -> tuple[bytes, list[tuple[int, BatchHeader]]]:
    """Run every check of the module docstring on ``data``; return the batch bytes to append
    (``data`` itself, or the batch made consistent) and ``[(position, header)]`` of them.
    ``headers`` may pass a CRC-checked parse the caller already has."""
    if headers is None:
        if not data:
            raise InvalidRecordError(f"{where}: record batch has no batches at all")
        scan = scan_valid(data)
        if scan.error is not None or scan.valid_bytes != len(data):
            raise CorruptRecordError(f"{where}: {scan.error or 'trailing bytes'} (produce of {len(data)} bytes)")
        headers = scan.headers
    if not headers:
        raise InvalidRecordError(f"{where}: record batch has no batches at all")
    if len(headers) > 1:
        raise InvalidRecordError(f"{where}: a produce request holds {len(headers)} batches; with record batch v2 "
                                 "a client sends exactly one per partition")
    pos, h = headers[0]
    _check_header(h, where)
    checked = _check_records(data, pos, h, config, now_ms, where)
    if type(checked) is int:
        out = _with_max_timestamp(data, h, checked, config)
    else:
        out = _consistent(data, h, checked, config)
    if out is data:
        return data, headers
    return out, [(0, read_header(out))]


def _consistent(data: bytes, h: BatchHeader, batch: RecordBatch, config: LogConfig) -> bytes:
    records = batch.records
    if any(r.offset_delta != i for i, r in enumerate(records)):
        return build_batch([SimpleRecord(r.value, key=r.key, timestamp=r.timestamp, headers=r.headers)
                            for r in records], compression=h.attributes & _CODEC, producer_id=h.producer_id,
                           producer_epoch=h.producer_epoch, base_sequence=h.base_sequence,
                           partition_leader_epoch=h.partition_leader_epoch,
                           is_transactional=bool(h.attributes & _TRANSACTIONAL))
    return _with_max_timestamp(data, h, max(r.timestamp for r in records), config)


def _with_max_timestamp(data: bytes, h: BatchHeader, max_ts: int, config: LogConfig) -> bytes:
    """``data`` with maxTimestamp = ``max_ts``, the largest record timestamp (CreateTime topics)."""
    if config.message_timestamp_type != "CreateTime":
        return data   # the log stamps LogAppendTime itself
    if max_ts == h.max_timestamp and not h.attributes & _LOG_APPEND_TIME:
        return data
    out = bytearray(data)
    struct.pack_into(">h", out, 21, h.attributes & ~_LOG_APPEND_TIME)
    struct.pack_into(">q", out, 35, max_ts)
    struct.pack_into(">I", out, 17, crc32c(memoryview(out)[21:]))
    return bytes(out)


def _check_header(h: BatchHeader, where: str) -> None:
    count_from_offsets = h.last_offset_delta + 1
    if count_from_offsets <= 0:
        raise InvalidRecordError(f"{where}: batch has an invalid offset range: [{h.base_offset}, "
                                 f"{h.base_offset + h.last_offset_delta}]")
    if h.records_count <= 0:
        raise InvalidRecordError(f"{where}: invalid reported count for record batch: {h.records_count}")
    if count_from_offsets != h.records_count:
        raise InvalidRecordError(f"{where}: inconsistent batch offset range [{h.base_offset}, "
                                 f"{h.base_offset + h.last_offset_delta}] and count of records {h.records_count}")
    if h.attributes & _CONTROL:
        raise InvalidRecordError(f"{where}: clients are not allowed to write control records")
    if h.producer_id >= 0 and h.base_sequence < 0:
        raise InvalidRecordError(f"{where}: invalid sequence number {h.base_sequence} in record batch with "
                                 f"producerId {h.producer_id}")


def _check_records(data: bytes, pos: int, h: BatchHeader, config: LogConfig, now_ms: int,
                   where: str) -> int | RecordBatch:
    """Checks 4 and 5. Returns the largest record timestamp when a walk of the records
    (``walk_records``: no record built) shows they all pass and their offset deltas are
    0..n-1, as for nearly every client batch; otherwise the records are decoded and checked
    one by one, which either raises the precise error or returns the decoded batch."""
    size = h.batch_length + 12
    codec = h.attributes & _CODEC
    limit = config.max_message_bytes
    section = memoryview(data)[pos + BATCH_OVERHEAD:pos + size]
    try:
        # A plain section within the cap is walked where it lies, not copied out first.
        plain = decompress_capped(codec, section, limit) if codec or len(section) > limit else None
    except DecompressedTooLarge:
        raise RecordTooLargeError(
            f"{where}: the {h.compression.name.lower()} record section of {len(section)} bytes inflates past "
            f"max.message.bytes={limit}; refused before decompressing further") from None
    except CorruptRecordError as exc:
        raise CorruptRecordError(f"{where}: batch at position {pos}: {exc}") from None
    finally:
        section.release()
    if codec:
        walk = walk_records(plain, 0, len(plain), h.records_count)
    else:
        walk = walk_records(data, pos + BATCH_OVERHEAD, pos + size, h.records_count)
    if walk is not None and not h.attributes & _LOG_APPEND_TIME and not (
            walk.has_null_key and "compact" in config.cleanup_policy):
        base_ts = h.base_timestamp
        if config.message_timestamp_type != "CreateTime":
            return base_ts + walk.max_timestamp_delta
        # Every record passes check_timestamp when the earliest and the latest do.
        lo, hi = base_ts + walk.min_timestamp_delta, base_ts + walk.max_timestamp_delta
        if now_ms - lo <= config.timestamp_before_max_ms and hi - now_ms <= config.timestamp_after_max_ms:
            return hi
    # Decode the plain records under the same header (codec bits cleared, length adjusted):
    # the batch codec then checks every record and the count; the CRC was checked already.
    if codec:
        head = bytearray(data[pos:pos + BATCH_OVERHEAD])
        head[8:12] = (BATCH_OVERHEAD - 12 + len(plain)).to_bytes(4, "big")
        head[21:23] = (h.attributes & ~_CODEC).to_bytes(2, "big", signed=True)
        buf, at = bytes(head) + plain, 0
    else:
        buf, at = data, pos
    try:
        batch = decode_batch(buf, at, verify_crc=False)
    except CorruptRecordError as exc:
        raise CorruptRecordError(f"{where}: {exc}") from None
    compacted = "compact" in config.cleanup_policy
    create_time = config.message_timestamp_type == "CreateTime"
    for i, r in enumerate(batch.records):
        if compacted and r.key is None:
            raise InvalidRecordError(f"{where}: compacted topic cannot accept message without key (record {i})")
        if create_time and r.timestamp != NO_TIMESTAMP:
            check_timestamp(r.timestamp, config, now_ms, where, i)
        elif h.timestamp_type == TimestampType.LOG_APPEND_TIME:
            raise InvalidTimestampError(f"{where}: record {i}: invalid timestamp type; a producer should not set "
                                        "timestamp type to LogAppendTime")
    return batch


def check_timestamp(ts: int, config: LogConfig, now_ms: int, where: str, index: int = 0) -> None:
    """A CreateTime timestamp must lie in [now - before.max.ms, now + after.max.ms]."""
    before, after = config.timestamp_before_max_ms, config.timestamp_after_max_ms
    diff = now_ms - ts
    if diff > before or -diff > after:
        raise InvalidTimestampError(
            f"{where}: timestamp {ts} of record {index} is out of range; the timestamp should be within "
            f"[{now_ms - before}, {now_ms + after}]")


def check_record_timestamps(timestamps: Iterable[int | None], config: LogConfig, now_ms: int, where: str) -> None:
    """The timestamp rule for records the leader encodes itself (``None`` = now)."""
    if config.message_timestamp_type != "CreateTime":
        return
    if config.timestamp_before_max_ms == config.timestamp_after_max_ms == 2**63 - 1:
        return
    for i, ts in enumerate(timestamps):
        if ts is not None and ts != NO_TIMESTAMP:
            check_timestamp(ts, config, now_ms, where, i)
