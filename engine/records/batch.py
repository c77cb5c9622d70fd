"""Kafka record batch v2 (magic 2): encoder, decoder and the cheap header walks the log
uses for recovery (reference §2).

Byte layout of one batch (all integers big-endian)::

    offset size field
         0    8 baseOffset            int64   offset of the first record (the leader assigns it)
         8    4 batchLength           int32   bytes after this field = total size - 12
        12    4 partitionLeaderEpoch  int32   stamped by the leader; NOT covered by the CRC
        16    1 magic                 int8    2
        17    4 crc                   uint32  CRC-32C (Castagnoli) of bytes [21, end)
        21    2 attributes            int16   bits 0-2 codec, 3 LogAppendTime, 4 transactional,
                                               5 control, 6 hasDeleteHorizonMs
        23    4 lastOffsetDelta       int32
        27    8 baseTimestamp         int64   first record's timestamp (or the delete horizon)
        35    8 maxTimestamp          int64   max CreateTime, or the broker's append time
        43    8 producerId            int64   -1 when not idempotent
        51    2 producerEpoch         int16
        53    4 baseSequence          int32
        57    4 recordsCount          int32
        61    … records               plain, or one compressed blob of all of them

    record := length varint | attributes int8 (0) | timestampDelta varlong | offsetDelta varint
              | keyLength varint (-1 = null) | key | valueLength varint (-1 = null) | value
              | headerCount varint | (keyLength varint | utf-8 key | valueLength varint | value)*

Varints are ZigZag + LEB128 (see ``engine.records.varint``).

The decoder does one pass over the record section with the 1- and 2-byte varints inlined,
because decoding sits under every fetch and every log view; ``read_header``/``scan_valid``
only unpack the fixed header (and CRC the batch), so recovery of a large log stays cheap.
"""
from __future__ import annotations

import struct
from collections import namedtuple
from dataclasses import dataclass
from enum import IntEnum
from typing import Iterable, Iterator, NamedTuple

from crc32c import crc32c

from engine.errors import CorruptRecordError, InvalidRecordError
from engine.records.compression import CompressionType, compress, decompress
from engine.records.varint import INT64_MAX, INT64_MIN, decode_varint, decode_varlong, encode_unsigned_varint

__all__ = [
    "CompressionType", "TimestampType", "Header", "SimpleRecord", "Record", "BatchHeader",
    "RecordBatch", "ValidPrefix", "BATCH_OVERHEAD", "LOG_OVERHEAD", "MAGIC",
    "NO_PRODUCER_ID", "NO_PRODUCER_EPOCH", "NO_SEQUENCE", "NO_PARTITION_LEADER_EPOCH",
    "build_batch", "encode_batch", "read_header", "decode_batch", "iter_batches", "scan_valid", "verify_crc",
    "RecordsSummary", "walk_records",
    "whole_batch_header", "whole_batch_values",
    "with_offset_and_epoch", "with_log_append_time",
    "ControlRecordType", "EndTransactionMarker", "build_end_txn_marker", "read_end_txn_marker",
]

BATCH_OVERHEAD = 61      # fixed v2 header, records start here
LOG_OVERHEAD = 12        # baseOffset + batchLength: what precedes the length-counted part
MAGIC = 2
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_PARTITION_LEADER_EPOCH = -1

_MIN_BATCH_LENGTH = BATCH_OVERHEAD - LOG_OVERHEAD   # 49: a batchLength below this cannot hold a header
_CRC_START = 21

_ATTR_CODEC = 0x07
_ATTR_LOG_APPEND_TIME = 0x08
_ATTR_TRANSACTIONAL = 0x10
_ATTR_CONTROL = 0x20
_ATTR_DELETE_HORIZON = 0x40

_HEADER = struct.Struct(">qiibIhiqqqhii")
assert _HEADER.size == BATCH_OVERHEAD
_OFFSET_LENGTH_EPOCH = struct.Struct(">qii")
_INT64 = struct.Struct(">q")
_INT32 = struct.Struct(">i")
_UINT32 = struct.Struct(">I")
_INT16 = struct.Struct(">h")

_SLICE_BELOW = 2048      # whole_batch_header copies a batch this small rather than view it

_INT32_MAX = (1 << 31) - 1
_UINT64_MAX = (1 << 64) - 1

# ZigZag value of every 1-byte varint: one list index on the hot path.
_ZZ1 = tuple((b >> 1) ^ -(b & 1) for b in range(128))
# ZigZag values of two-byte varints, indexed by ``b1 + (b2 << 7)`` (first byte b1 >= 0x80, second
# b2 < 0x80): the walk over a client's records reads most lengths and deltas through it.
_ZZ2 = (0,) * 128 + tuple(((k - 128) >> 1) ^ -((k - 128) & 1) for k in range(128, 128 + (1 << 14)))
# Encoded bytes of every unsigned LEB128 value below 2**14 (1 or 2 bytes).
_SMALL = tuple(encode_unsigned_varint(u) for u in range(1 << 14))
# ZigZag varint of every length 0..8191 (= _SMALL[n << 1]): lengths index it directly.
_LENGTH = _SMALL[0::2]

_tuple_new = tuple.__new__


class TimestampType(IntEnum):
    """Attribute bit 3: whose clock the record timestamps come from."""

    CREATE_TIME = 0
    LOG_APPEND_TIME = 1


_CODECS = tuple(CompressionType)
_TIMESTAMP_TYPES = tuple(TimestampType)


class Header(NamedTuple):
    """A record header: non-null UTF-8 key, nullable bytes value."""

    key: str
    value: bytes | None


class SimpleRecord(NamedTuple):
    """What a producer hands over: the batch assigns offset and (if None) timestamp.
    A named tuple, so building one per record costs about as little as a plain tuple."""

    value: bytes | None
    key: bytes | None = None
    timestamp: int | None = None
    headers: tuple = ()


class Record(NamedTuple):
    """A decoded record; ``offset`` and ``timestamp`` are absolute (batch base + delta, or the
    batch's maxTimestamp for every record of a LogAppendTime batch). A named tuple: the
    decoder makes one per record with a single ``tuple.__new__``."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple
    offset_delta: int
    timestamp_delta: int


class _HeaderFields(NamedTuple):
    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int


class BatchHeader(_HeaderFields):
    """The 61 fixed bytes of a v2 batch (layout in the module docstring), as an immutable
    named tuple: made on every append and lookup, straight from ``struct.unpack_from``."""

    __slots__ = ()

    @property
    def compression(self) -> CompressionType:
        code = self.attributes & _ATTR_CODEC
        if code >= len(_CODECS):
            raise CorruptRecordError(f"unknown compression codec {code} in attributes {self.attributes:#06x}")
        return _CODECS[code]

    @property
    def timestamp_type(self) -> TimestampType:
        return _TIMESTAMP_TYPES[(self.attributes >> 3) & 1]

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & _ATTR_TRANSACTIONAL)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & _ATTR_CONTROL)

    @property
    def has_delete_horizon(self) -> bool:
        return bool(self.attributes & _ATTR_DELETE_HORIZON)

    @property
    def delete_horizon_ms(self) -> int | None:
        """The cleaner's delete horizon (held in baseTimestamp when bit 6 is set), else None."""
        return self.base_timestamp if self.attributes & _ATTR_DELETE_HORIZON else None

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def size_in_bytes(self) -> int:
        return self.batch_length + LOG_OVERHEAD

    @property
    def is_idempotent(self) -> bool:
        return self.producer_id >= 0

    @property
    def last_sequence(self) -> int:
        """base + lastOffsetDelta, wrapping past INT32_MAX to 0 as Kafka does; -1 without a sequence."""
        base = self.base_sequence
        if base == NO_SEQUENCE:
            return NO_SEQUENCE
        delta = self.last_offset_delta
        if base > _INT32_MAX - delta:
            return delta - (_INT32_MAX - base) - 1
        return base + delta


_BatchFields = namedtuple("_BatchFields", _HeaderFields._fields + ("records",))


class RecordBatch(_BatchFields, BatchHeader):
    """A decoded batch: its header fields plus the records (offsets absolute). Iterating it,
    and ``len``, go over the records."""

    __slots__ = ()

    def __iter__(self) -> Iterator[Record]:
        return iter(self[13])

    def __len__(self) -> int:
        return len(self[13])

    def __getnewargs__(self) -> tuple:
        return self[:]        # tuple slicing does not go through __iter__


@dataclass(frozen=True)
class ValidPrefix:
    """Result of ``scan_valid``: the batches (position, header) of the longest valid prefix,
    where that prefix ends (``valid_bytes``, an absolute position) and why the scan stopped
    (None when it reached the end of the buffer cleanly)."""

    headers: list[tuple[int, BatchHeader]]
    valid_bytes: int
    error: str | None


def _header_from(v: tuple) -> BatchHeader:
    return _tuple_new(BatchHeader, v)


def _corrupt(pos: int, reason: str) -> CorruptRecordError:
    err = CorruptRecordError(f"corrupt record batch at position {pos}: {reason}")
    err.position = pos
    err.reason = reason
    return err


# --------------------------------------------------------------------------- encoding

def _as_bytes(data, what: str) -> bytes | None:
    if data is None or type(data) is bytes:
        return data
    if isinstance(data, str):
        return data.encode("utf-8")
    if isinstance(data, (bytearray, memoryview)):
        return bytes(data)
    raise InvalidRecordError(f"record {what} must be bytes, str or None, not {type(data).__name__}")


def _uvarint(u: int) -> bytes:
    if u < 16384:
        return _SMALL[u]
    return encode_unsigned_varint(u)


def _encode_headers(headers) -> bytes:
    out = bytearray(_uvarint(len(headers) << 1))
    for h in headers:
        if isinstance(h, Header):
            hk, hv = h.key, h.value
        else:
            hk, hv = h
        if hk is None:
            raise InvalidRecordError("a header key cannot be null")
        kb = hk.encode("utf-8", "surrogateescape") if isinstance(hk, str) else bytes(hk)
        out += _uvarint(len(kb) << 1)
        out += kb
        if hv is None:
            out.append(1)
        else:
            hv = _as_bytes(hv, "header value")
            out += _uvarint(len(hv) << 1)
            out += hv
    return bytes(out)


def _encode_records(records, now_ms: int) -> tuple[bytes, int, int]:
    """Record section of ``records``; returns (bytes, baseTimestamp, max record timestamp).

    Each record's fields after its length are joined once (small varints come from a table),
    its length varint put in front, and the whole section joined once at the end. A
    ``SimpleRecord`` is unpacked as the tuple it is; other objects are read by attribute.
    """
    small, lengths = _SMALL, _LENGTH
    uvarint = encode_unsigned_varint
    simple = SimpleRecord
    parts: list[bytes] = []
    extend = parts.extend
    join = b"".join
    first = records[0].timestamp
    base_ts = now_ms if first is None else first
    max_ts = base_ts
    count = len(records)
    deltas = lengths[:count] if count <= 8192 else [uvarint(j << 1) for j in range(count)]
    for r, od in zip(records, deltas):
        if type(r) is simple:
            value, key, ts, headers = r
        else:
            value, key, ts, headers = r.value, r.key, r.timestamp, r.headers
        if ts is None:
            ts = now_ms
        if ts == base_ts:
            tsd = b"\x00"      # timestampDelta 0, the common case (what the general rule gives)
        else:
            if ts > max_ts:
                max_ts = ts
            d = ts - base_ts
            u = (d << 1) ^ (d >> 63)
            if 0 <= u < 16384:
                tsd = small[u]
            else:
                if not (INT64_MIN <= ts <= INT64_MAX) or u < 0 or u > _UINT64_MAX:
                    i = next(j for j, x in enumerate(records) if x is r)
                    raise InvalidRecordError(f"record {i}: timestamp {ts} is not an int64 within int64 of {base_ts}")
                tsd = uvarint(u)
        if key is None:
            kh = b"\x01"
            key = b""
        else:
            if type(key) is not bytes:
                key = _as_bytes(key, "key")
            n = len(key)
            kh = lengths[n] if n < 8192 else uvarint(n << 1)
        if value is None:
            vh = b"\x01"
            value = b""
        else:
            if type(value) is not bytes:
                value = _as_bytes(value, "value")
            n = len(value)
            vh = lengths[n] if n < 8192 else uvarint(n << 1)
        # b"\x00" = the record attributes byte (unused, always 0)
        body = join((b"\x00", tsd, od, kh, key, vh, value,
                     _encode_headers(headers) if headers else b"\x00"))
        n = len(body)
        extend((lengths[n] if n < 8192 else uvarint(n << 1), body))
    return join(parts), base_ts, max_ts


def build_batch(records: Iterable, **options) -> bytes:
    """Encode ``records`` (SimpleRecord-like: value, key, timestamp, headers) as one v2 batch.
    Options as :func:`encode_batch`, which also returns the header it wrote."""
    return encode_batch(records, **options)[0]


def encode_batch(records: Iterable, *, base_offset: int = 0,
                compression: CompressionType | int = CompressionType.NONE,
                timestamp_type: TimestampType | int = TimestampType.CREATE_TIME, now_ms: int = 0,
                producer_id: int = NO_PRODUCER_ID, producer_epoch: int = NO_PRODUCER_EPOCH,
                base_sequence: int = NO_SEQUENCE, partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
                is_transactional: bool = False, is_control: bool = False) -> tuple[bytes, BatchHeader]:
    """Encode ``records`` (SimpleRecord-like: value, key, timestamp, headers) as one v2 batch;
    returns its bytes and its header (so a caller never parses what it just built).

    Offset deltas are 0..n-1; records without a timestamp get ``now_ms``. With
    LogAppendTime, maxTimestamp is ``now_ms`` (what a broker stamps). The record section is
    compressed with ``compression``; the header stays plain; the CRC covers [21, end).
    """
    if not isinstance(records, (list, tuple)):
        records = list(records)
    n = len(records)
    if n == 0:
        raise InvalidRecordError("a record batch needs at least one record (got 0)")
    codec = int(compression)
    if not 0 <= codec < len(_CODECS):
        raise InvalidRecordError(f"unknown compression codec {codec} (Kafka knows 0-4)")
    ts_type = int(timestamp_type)
    if ts_type not in (0, 1):
        raise InvalidRecordError(f"unknown timestamp type {ts_type}")
    section, base_ts, max_ts = _encode_records(records, now_ms)
    if ts_type == TimestampType.LOG_APPEND_TIME:
        max_ts = now_ms
    attributes = (codec | (ts_type << 3) | (_ATTR_TRANSACTIONAL if is_transactional else 0)
                  | (_ATTR_CONTROL if is_control else 0))
    if codec:
        section = compress(codec, section)
    out = bytearray(BATCH_OVERHEAD)
    out += section
    values = [base_offset, len(out) - LOG_OVERHEAD, partition_leader_epoch, MAGIC, 0, attributes, n - 1, base_ts,
              max_ts, producer_id, producer_epoch, base_sequence, n]
    try:
        _HEADER.pack_into(out, 0, *values)
    except struct.error as exc:
        raise InvalidRecordError(
            f"batch field out of range (base_offset={base_offset}, partition_leader_epoch={partition_leader_epoch}, "
            f"base_timestamp={base_ts}, max_timestamp={max_ts}, producer_id={producer_id}, "
            f"producer_epoch={producer_epoch}, base_sequence={base_sequence}): {exc}") from exc
    values[4] = crc = crc32c(memoryview(out)[_CRC_START:])
    _UINT32.pack_into(out, 17, crc)
    return bytes(out), _tuple_new(BatchHeader, values)


# --------------------------------------------------------------------------- header walks

def read_header(buf, pos: int = 0) -> BatchHeader:
    """Unpack the 61-byte header at ``pos`` (no CRC check, the records need not be present).

    CorruptRecordError if fewer than 61 bytes remain, magic is not 2, or batchLength is too
    small to hold a header.
    """
    if pos < 0:
        raise _corrupt(pos, "a batch cannot start at a negative position")
    avail = len(buf) - pos
    if avail < BATCH_OVERHEAD:
        if 17 <= avail and buf[pos + 16] != MAGIC:
            raise _corrupt(pos, f"magic {buf[pos + 16]} is not 2 (only record batch v2 is supported)")
        raise _corrupt(pos, f"truncated header: {max(avail, 0)} bytes remain, a v2 batch header needs {BATCH_OVERHEAD}")
    values = _HEADER.unpack_from(buf, pos)
    if values[3] != MAGIC:
        raise _corrupt(pos, f"magic {values[3]} is not 2 (only record batch v2 is supported)")
    if values[1] < _MIN_BATCH_LENGTH:
        raise _corrupt(pos, f"batchLength {values[1]} is below the {_MIN_BATCH_LENGTH} bytes a v2 header needs")
    return _header_from(values)


def verify_crc(buf, pos: int, header: BatchHeader) -> bool:
    """True when the stored CRC-32C matches bytes [pos+21, pos+size) (False if they are not all there)."""
    end = pos + header.batch_length + LOG_OVERHEAD
    if end > len(buf):
        return False
    with memoryview(buf) as view:
        return crc32c(view[pos + _CRC_START:end]) == header.crc


def whole_batch_header(data: bytes) -> BatchHeader | None:
    """The header of ``data`` when it is exactly one whole batch with a valid magic, length and
    CRC; None otherwise (then :func:`scan_valid` says what is wrong). The common one-batch
    append checks its input with this, in one step."""
    v = whole_batch_values(data)
    return None if v is None else _tuple_new(BatchHeader, v)


def whole_batch_values(data: bytes) -> tuple | None:
    """:func:`whole_batch_header`'s fields as a plain tuple, in :class:`BatchHeader`'s order:
    a follower's single-batch append reads five of them by index and builds no header."""
    n = len(data)
    if n < BATCH_OVERHEAD:
        return None
    v = _HEADER.unpack_from(data, 0)
    if v[3] != MAGIC or v[1] + LOG_OVERHEAD != n or v[1] < _MIN_BATCH_LENGTH:
        return None
    # A small batch is cheaper to slice than to view (two objects); a large one is not.
    if crc32c(data[_CRC_START:] if n <= _SLICE_BELOW else memoryview(data)[_CRC_START:]) != v[4]:
        return None
    return v


def scan_valid(buf, pos: int = 0) -> ValidPrefix:
    """Walk batch headers from ``pos``, checking lengths, magic and CRC; stop at the first
    batch that is truncated or corrupt. What log recovery keeps is ``[pos, valid_bytes)``."""
    headers: list[tuple[int, BatchHeader]] = []
    append = headers.append
    end = len(buf)
    unpack = _HEADER.unpack_from
    error = None
    with memoryview(buf) as view:
        while pos < end:
            avail = end - pos
            if avail < BATCH_OVERHEAD:
                error = (f"truncated batch header at position {pos}: {avail} bytes remain, "
                         f"a v2 header needs {BATCH_OVERHEAD}")
                break
            values = unpack(view, pos)
            if values[3] != MAGIC:
                error = f"bad magic {values[3]} at position {pos} (expected 2)"
                break
            size = values[1] + LOG_OVERHEAD
            if size < BATCH_OVERHEAD:
                error = f"bad batchLength {values[1]} at position {pos} (a v2 batch needs at least {_MIN_BATCH_LENGTH})"
                break
            if size > avail:
                error = f"truncated batch at position {pos}: it declares {size} bytes but {avail} remain"
                break
            crc = crc32c(view[pos + _CRC_START:pos + size])
            if crc != values[4]:
                error = f"CRC mismatch in batch at position {pos}: stored {values[4]:#010x}, computed {crc:#010x}"
                break
            append((pos, _header_from(values)))
            pos += size
    return ValidPrefix(headers, pos, error)


# --------------------------------------------------------------------------- decoding

def _decode_records(data: bytes, pos: int, end: int, count: int, base_offset: int, base_ts: int,
                    append_time: int | None, batch_pos: int) -> tuple[Record, ...]:
    """Decode ``count`` records from ``data[pos:end]`` in one pass.

    Varints of 1 or 2 bytes (nearly all of them) are decoded inline; longer ones go through
    ``decode_varint``/``decode_varlong``, which also enforce the 5/10-byte limits.
    """
    zz1 = _ZZ1
    dv, dvl = decode_varint, decode_varlong
    new = _tuple_new
    rec_cls = Record
    records = []
    append = records.append
    i = 0
    try:
        for i in range(count):
            # length
            b = data[pos]
            if b < 0x80:
                length = zz1[b]
                pos += 1
            else:
                b2 = data[pos + 1]
                if b2 < 0x80:
                    u = (b & 0x7F) | (b2 << 7)
                    length = (u >> 1) ^ -(u & 1)
                    pos += 2
                else:
                    length, pos = dv(data, pos)
            rec_end = pos + length
            if length < 6 or rec_end > end:
                raise _corrupt(batch_pos, f"record {i} declares length {length}, "
                                          f"but {end - pos} bytes of the record section remain")
            # attributes (one unused byte), then timestampDelta
            b = data[pos + 1]
            if b < 0x80:
                ts_delta = zz1[b]
                pos += 2
            else:
                b2 = data[pos + 2]
                if b2 < 0x80:
                    u = (b & 0x7F) | (b2 << 7)
                    ts_delta = (u >> 1) ^ -(u & 1)
                    pos += 3
                else:
                    ts_delta, pos = dvl(data, pos + 1)
            # offsetDelta
            b = data[pos]
            if b < 0x80:
                off_delta = zz1[b]
                pos += 1
            else:
                b2 = data[pos + 1]
                if b2 < 0x80:
                    u = (b & 0x7F) | (b2 << 7)
                    off_delta = (u >> 1) ^ -(u & 1)
                    pos += 2
                else:
                    off_delta, pos = dv(data, pos)
            # key
            b = data[pos]
            if b < 0x80:
                n = zz1[b]
                pos += 1
            else:
                b2 = data[pos + 1]
                if b2 < 0x80:
                    u = (b & 0x7F) | (b2 << 7)
                    n = (u >> 1) ^ -(u & 1)
                    pos += 2
                else:
                    n, pos = dv(data, pos)
            if n < 0:
                key = None
            else:
                key = data[pos:pos + n]
                pos += n
            # value
            b = data[pos]
            if b < 0x80:
                n = zz1[b]
                pos += 1
            else:
                b2 = data[pos + 1]
                if b2 < 0x80:
                    u = (b & 0x7F) | (b2 << 7)
                    n = (u >> 1) ^ -(u & 1)
                    pos += 2
                else:
                    n, pos = dv(data, pos)
            if n < 0:
                value = None
            else:
                value = data[pos:pos + n]
                pos += n
            # headers
            b = data[pos]
            if b == 0:
                headers = ()
                pos += 1
            else:
                headers, pos = _decode_headers(data, pos, batch_pos, i)
            if pos != rec_end:
                raise _corrupt(batch_pos, f"record {i} declares length {length} but its fields "
                                          f"take {length + pos - rec_end} bytes")
            append(new(rec_cls, (base_offset + off_delta,
                                 base_ts + ts_delta if append_time is None else append_time,
                                 key, value, headers, off_delta, ts_delta)))
    except IndexError:
        raise _corrupt(batch_pos, f"record {i} is truncated: the record section ends inside it") from None
    except CorruptRecordError as exc:
        if getattr(exc, "position", None) == batch_pos and hasattr(exc, "reason"):
            raise
        raise _corrupt(batch_pos, f"record {i}: {exc}") from None
    if pos != end:
        raise _corrupt(batch_pos, f"{end - pos} bytes left over after the {count} records "
                                  f"that recordsCount declares")
    return tuple(records)


def _decode_headers(data: bytes, pos: int, batch_pos: int, i: int) -> tuple[tuple[Header, ...], int]:
    count, pos = decode_varint(data, pos)
    if count < 0:
        raise _corrupt(batch_pos, f"record {i} has a negative header count {count}")
    headers = []
    for _ in range(count):
        n, pos = decode_varint(data, pos)
        if n < 0:
            raise _corrupt(batch_pos, f"record {i} has a header with negative key length {n}")
        if pos + n > len(data):
            raise IndexError
        hk = data[pos:pos + n].decode("utf-8", "surrogateescape")
        pos += n
        n, pos = decode_varint(data, pos)
        if n < 0:
            hv = None
        else:
            if pos + n > len(data):
                raise IndexError
            hv = data[pos:pos + n]
            pos += n
        headers.append(Header(hk, hv))
    return tuple(headers), pos


def _skip_headers(data: bytes, pos: int) -> int:
    """Past a record's headers, with ``_decode_headers``'s checks; -1 where it would raise
    CorruptRecordError (and IndexError where it would)."""
    zz1 = _ZZ1
    count, pos = decode_varint(data, pos)
    if count < 0:
        return -1
    for _ in range(count):
        b = data[pos]
        if b < 0x80:
            n = zz1[b]
            pos += 1
        else:
            n, pos = decode_varint(data, pos)
        if n < 0:
            return -1
        pos += n
        b = data[pos]
        if b < 0x80:
            n = zz1[b]
            pos += 1
        else:
            n, pos = decode_varint(data, pos)
        if n > 0:
            pos += n
    return pos

class RecordsSummary(NamedTuple):
    """What the leader's checks need from a record section (``walk_records``): the smallest and
    largest timestampDelta, and whether some record has a null key."""

    min_timestamp_delta: int
    max_timestamp_delta: int
    has_null_key: bool


def walk_records(data: bytes, pos: int, end: int, count: int) -> RecordsSummary | None:
    """Walk ``count`` records in ``data[pos:end]`` as :func:`decode_batch` would, without
    building them: every varint read and bounded, keys and values skipped over, lengths and
    the count checked (Kafka's ``skipKeyValueIterator`` does the same for its validator).

    None when the section is not ``count`` well-formed records whose offset deltas are
    0..count-1; the caller then decodes it with ``decode_batch``, which says what is wrong
    (or, for deltas out of order, hands over the records to rebuild the batch from).

    It is the leader's per-record cost for every client batch, so it is written for speed:
    varints of one or two bytes are read inline (two-byte ones through ``_ZZ2``), a
    timestampDelta equal to the previous record's is not compared again, and a record's
    declared length is checked once, against where its fields end (a length below the six
    bytes a record needs, or past the section, can only fail that check or the final one).
    """
    zz1 = _ZZ1
    zz2 = _ZZ2
    dv = decode_varint
    if count <= 0:
        return None
    lo = 1 << 64
    hi = -lo
    null_key = False
    tb = -1
    try:
        for i in range(count):
            b = data[pos]
            if b < 0x80:
                rec_end = pos + 1 + zz1[b]
                b = data[pos + 2]          # after the unused attributes byte
                pos += 3
            else:
                b2 = data[pos + 1]
                if b2 < 0x80:
                    rec_end = pos + 2 + zz2[b + (b2 << 7)]
                    b = data[pos + 3]
                    pos += 4
                else:
                    length, pos = dv(data, pos)
                    rec_end = pos + length
                    b = data[pos + 1]
                    pos += 2
            # timestampDelta (b is its first byte, pos is past it)
            if b < 0x80:
                if b != tb:            # most records repeat the previous record's delta
                    tb = b
                    ts = zz1[b]
                    if ts > hi:
                        hi = ts
                    if ts < lo:
                        lo = ts
            else:
                b2 = data[pos]
                if b2 < 0x80:
                    ts = zz2[b + (b2 << 7)]
                    pos += 1
                else:
                    ts, pos = decode_varlong(data, pos - 1)
                if ts > hi:
                    hi = ts
                if ts < lo:
                    lo = ts
            # offsetDelta must be i
            b = data[pos]
            if b < 0x80:
                if zz1[b] != i:
                    return None
                pos += 1
            else:
                b2 = data[pos + 1]
                if b2 < 0x80:
                    if zz2[b + (b2 << 7)] != i:
                        return None
                    pos += 2
                else:
                    b3 = data[pos + 2]
                    if b3 < 0x80:         # offset deltas from 8,192 (batches of many small records)
                        if (b & 0x7F) | ((b2 & 0x7F) << 7) | (b3 << 14) != i << 1:    # ZigZag of i >= 0
                            return None
                        pos += 3
                    else:
                        off, pos = dv(data, pos)
                        if off != i:
                            return None
            # key
            b = data[pos]
            if b < 0x80:
                if b == 1:
                    null_key = True
                    pos += 1
                else:
                    n = zz1[b]
                    if n < 0:
                        null_key = True
                        pos += 1
                    else:
                        pos += 1 + n
            else:
                n, pos = dv(data, pos)
                if n < 0:
                    null_key = True
                else:
                    pos += n
            # value
            b = data[pos]
            if b < 0x80:
                n = zz1[b]
                pos += 1
            else:
                b2 = data[pos + 1]
                if b2 < 0x80:
                    n = zz2[b + (b2 << 7)]
                    pos += 2
                else:
                    n, pos = dv(data, pos)
            if n > 0:
                pos += n
            # headers
            if data[pos] == 0:
                pos += 1
            else:
                pos = _skip_headers(data, pos)
            if pos != rec_end:
                return None
    except (IndexError, CorruptRecordError):
        return None
    if pos != end:
        return None
    return _tuple_new(RecordsSummary, (lo, hi, null_key))


def decode_batch(buf, pos: int = 0, *, verify_crc: bool = True) -> RecordBatch:
    """Decode the whole batch at ``pos``: header, CRC (unless ``verify_crc=False``),
    decompression and every record. Any inconsistency raises CorruptRecordError whose
    message (and ``.position``/``.reason``) names the batch position and what is wrong."""
    values = _HEADER.unpack_from(buf, pos) if len(buf) - pos >= BATCH_OVERHEAD and pos >= 0 else None
    if values is None or values[3] != MAGIC or values[1] < _MIN_BATCH_LENGTH:
        read_header(buf, pos)               # raises the precise error
    size = values[1] + LOG_OVERHEAD
    end = pos + size
    if end > len(buf):
        raise _corrupt(pos, f"truncated batch: it declares {size} bytes but {len(buf) - pos} remain")
    attributes = values[5]
    if verify_crc:
        with memoryview(buf) as view:
            crc = crc32c(view[pos + _CRC_START:end])
        if crc != values[4]:
            raise _corrupt(pos, f"CRC mismatch: stored {values[4]:#010x}, computed {crc:#010x}")
    count = values[12]
    if count < 0:
        raise _corrupt(pos, f"negative recordsCount {count}")
    codec = attributes & _ATTR_CODEC
    start = pos + BATCH_OVERHEAD
    if codec == 0:
        if type(buf) is bytes:
            data, rstart, rend = buf, start, end
        else:
            with memoryview(buf) as view:
                data = bytes(view[start:end])
            rstart, rend = 0, len(data)
    else:
        if codec >= len(_CODECS):
            raise _corrupt(pos, f"unknown compression codec {codec} in attributes {attributes:#06x}")
        try:
            with memoryview(buf) as view:
                data = decompress(codec, view[start:end])
        except CorruptRecordError as exc:
            raise _corrupt(pos, str(exc)) from exc
        rstart, rend = 0, len(data)
    append_time = values[8] if attributes & _ATTR_LOG_APPEND_TIME else None
    records = _decode_records(data, rstart, rend, count, values[0], values[7], append_time, pos)
    return _tuple_new(RecordBatch, values + (records,))


def iter_batches(buf, pos: int = 0, *, verify_crc: bool = True) -> Iterator[tuple[int, RecordBatch]]:
    """Yield ``(position, RecordBatch)`` for every batch from ``pos`` to the end of ``buf``.
    Strict: a truncated or corrupt batch raises CorruptRecordError (``scan_valid`` is the
    lenient walk that stops instead)."""
    end = len(buf)
    while pos < end:
        batch = decode_batch(buf, pos, verify_crc=verify_crc)
        yield pos, batch
        pos += batch.batch_length + LOG_OVERHEAD


# --------------------------------------------------------------------------- leader rewrites

def with_offset_and_epoch(batch: bytes, base_offset: int, partition_leader_epoch: int) -> bytes:
    """The batch with baseOffset and partitionLeaderEpoch replaced. Both sit outside the CRC
    range, so the CRC stays valid untouched (this is why Kafka put them there)."""
    read_header(batch)
    out = bytearray(batch)
    _INT64.pack_into(out, 0, base_offset)
    _INT32.pack_into(out, 12, partition_leader_epoch)
    return bytes(out)


def with_log_append_time(batch: bytes, timestamp: int) -> bytes:
    """The batch turned LogAppendTime: attribute bit 3 set, maxTimestamp = ``timestamp``, and
    a new CRC (both fields are inside the CRC range). Records are not touched: readers use
    maxTimestamp for every record of such a batch."""
    header = read_header(batch)
    size = header.size_in_bytes
    if size > len(batch):
        raise _corrupt(0, f"truncated batch: it declares {size} bytes but {len(batch)} remain")
    out = bytearray(batch)
    _INT16.pack_into(out, 21, header.attributes | _ATTR_LOG_APPEND_TIME)
    _INT64.pack_into(out, 35, timestamp)
    _UINT32.pack_into(out, 17, crc32c(memoryview(out)[_CRC_START:size]))
    return bytes(out)


# --------------------------------------------------------------------------- control records (§2.4)

class ControlRecordType(IntEnum):
    """Type in a control record's key (int16 version 0, int16 type). Only ABORT and COMMIT
    appear in partition logs; the rest belong to the KRaft metadata log."""

    ABORT = 0
    COMMIT = 1
    LEADER_CHANGE = 2
    SNAPSHOT_HEADER = 3
    SNAPSHOT_FOOTER = 4
    KRAFT_VERSION = 5
    KRAFT_VOTERS = 6


_CONTROL_KEY = struct.Struct(">hh")           # version, type
_END_TXN_VALUE = struct.Struct(">hi")         # version, coordinatorEpoch


@dataclass(frozen=True)
class EndTransactionMarker:
    """A COMMIT or ABORT marker (control record key and value: docs/file-formats.md)."""

    type: ControlRecordType
    coordinator_epoch: int


def build_end_txn_marker(commit: bool, producer_id: int, producer_epoch: int, coordinator_epoch: int, *,
                         base_offset: int = 0, now_ms: int = 0,
                         partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH) -> bytes:
    """The control batch a partition leader writes on WriteTxnMarkers: transactional +
    control bits, the producer's id/epoch, baseSequence -1, one marker record."""
    kind = ControlRecordType.COMMIT if commit else ControlRecordType.ABORT
    record = SimpleRecord(_END_TXN_VALUE.pack(0, coordinator_epoch), key=_CONTROL_KEY.pack(0, kind), timestamp=now_ms)
    return build_batch([record], base_offset=base_offset, now_ms=now_ms, producer_id=producer_id,
                       producer_epoch=producer_epoch, base_sequence=NO_SEQUENCE,
                       partition_leader_epoch=partition_leader_epoch, is_transactional=True, is_control=True)


def read_end_txn_marker(record: Record) -> EndTransactionMarker | None:
    """The marker a control record holds, or None for other control types (which readers
    must ignore). CorruptRecordError if the key or value is too short."""
    if record.key is None or len(record.key) < _CONTROL_KEY.size:
        raise CorruptRecordError(f"control record at offset {record.offset} has a key of "
                                 f"{0 if record.key is None else len(record.key)} bytes, needs 4")
    _, kind = _CONTROL_KEY.unpack_from(record.key)
    if kind not in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
        return None
    if record.value is None or len(record.value) < _END_TXN_VALUE.size:
        raise CorruptRecordError(f"end transaction marker at offset {record.offset} has a value of "
                                 f"{0 if record.value is None else len(record.value)} bytes, needs 6")
    _, coordinator_epoch = _END_TXN_VALUE.unpack_from(record.value)
    return EndTransactionMarker(ControlRecordType(kind), coordinator_epoch)
