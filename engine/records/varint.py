"""Kafka's variable-length integers (reference §2.2).

Record fields use *signed* varints: ZigZag maps a signed number to an unsigned one so that
small magnitudes of either sign stay short (0→0, -1→1, 1→2, -2→3 …), then LEB128 writes
7 bits per byte, least-significant group first, high bit = "more bytes follow".

    varint   int32  at most 5 bytes   (record length, offsetDelta, key/value/header sizes)
    varlong  int64  at most 10 bytes  (timestampDelta)

The *unsigned* varints of flexible protocol versions (no ZigZag step) are here too, because
they share the LEB128 half.

Decoders return ``(value, next_position)`` and raise CorruptRecordError naming the position
when the input ends early or a number runs longer than its type allows (as Kafka's
``ByteUtils.readVarint`` does). Encoders raise ValueError for numbers outside the type.
"""
from __future__ import annotations

from engine.errors import CorruptRecordError

__all__ = [
    "INT32_MIN", "INT32_MAX", "INT64_MIN", "INT64_MAX",
    "zigzag_encode", "zigzag_decode",
    "encode_varint", "encode_varlong", "encode_unsigned_varint",
    "write_varint", "write_varlong", "write_unsigned_varint",
    "decode_varint", "decode_varlong", "decode_unsigned_varint",
    "size_of_varint", "size_of_varlong", "size_of_unsigned_varint",
]

INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
_UINT32_MAX = (1 << 32) - 1
_UINT64_MAX = (1 << 64) - 1

# Every 1-byte and 2-byte encoding of an unsigned LEB128 value, so the common small
# numbers cost one list index instead of a loop.
_SMALL = [bytes((u,)) if u < 0x80 else bytes(((u & 0x7F) | 0x80, u >> 7)) for u in range(1 << 14)]


def zigzag_encode(n: int, bits: int = 64) -> int:
    """Signed → unsigned ZigZag (``(n << 1) ^ (n >> bits-1)``) for an int of ``bits`` width."""
    return (n << 1) ^ (n >> (bits - 1))


def zigzag_decode(u: int) -> int:
    """Unsigned ZigZag → signed."""
    return (u >> 1) ^ -(u & 1)


def encode_unsigned_varint(u: int) -> bytes:
    """LEB128 bytes of a non-negative int (up to 64 bits)."""
    if u < 16384:
        if u < 0:
            raise ValueError(f"unsigned varint cannot hold negative {u}")
        return _SMALL[u]
    if u > _UINT64_MAX:
        raise ValueError(f"unsigned varint {u} exceeds 64 bits")
    out = bytearray()
    while u >= 0x80:
        out.append((u & 0x7F) | 0x80)
        u >>= 7
    out.append(u)
    return bytes(out)


def encode_varint(n: int) -> bytes:
    """ZigZag LEB128 bytes of an int32."""
    if not INT32_MIN <= n <= INT32_MAX:
        raise ValueError(f"varint {n} is outside int32 [{INT32_MIN}, {INT32_MAX}]")
    return encode_unsigned_varint((n << 1) ^ (n >> 31))


def encode_varlong(n: int) -> bytes:
    """ZigZag LEB128 bytes of an int64."""
    if not INT64_MIN <= n <= INT64_MAX:
        raise ValueError(f"varlong {n} is outside int64 [{INT64_MIN}, {INT64_MAX}]")
    return encode_unsigned_varint((n << 1) ^ (n >> 63))


def write_unsigned_varint(out: bytearray, u: int) -> None:
    """Append the LEB128 bytes of ``u`` to ``out``."""
    out += encode_unsigned_varint(u)


def write_varint(out: bytearray, n: int) -> None:
    """Append the ZigZag LEB128 bytes of int32 ``n`` to ``out``."""
    out += encode_varint(n)


def write_varlong(out: bytearray, n: int) -> None:
    """Append the ZigZag LEB128 bytes of int64 ``n`` to ``out``."""
    out += encode_varlong(n)


def decode_unsigned_varint(buf, pos: int = 0, max_bytes: int = 10) -> tuple[int, int]:
    """Read an unsigned LEB128 number at ``pos``; return ``(value, next_pos)``."""
    end = len(buf)
    result = 0
    shift = 0
    start = pos
    while True:
        if pos >= end:
            err = CorruptRecordError(
                f"truncated varint at position {start}: input ends at {end} before its last byte")
            err.position = start
            raise err
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
        if pos - start >= max_bytes:
            err = CorruptRecordError(
                f"varint at position {start} is longer than {max_bytes} bytes")
            err.position = start
            raise err


def decode_varint(buf, pos: int = 0) -> tuple[int, int]:
    """Read a ZigZag int32 (≤ 5 bytes) at ``pos``; return ``(value, next_pos)``."""
    u, pos = decode_unsigned_varint(buf, pos, 5)
    if u > _UINT32_MAX:
        # A 5th byte can carry bits past 32; Kafka rejects those as "too long".
        err = CorruptRecordError(f"varint ending at position {pos} does not fit in 32 bits")
        err.position = pos
        raise err
    return (u >> 1) ^ -(u & 1), pos


def decode_varlong(buf, pos: int = 0) -> tuple[int, int]:
    """Read a ZigZag int64 (≤ 10 bytes) at ``pos``; return ``(value, next_pos)``."""
    u, pos = decode_unsigned_varint(buf, pos, 10)
    if u > _UINT64_MAX:
        err = CorruptRecordError(f"varlong ending at position {pos} does not fit in 64 bits")
        err.position = pos
        raise err
    return (u >> 1) ^ -(u & 1), pos


def size_of_unsigned_varint(u: int) -> int:
    """Number of bytes LEB128 uses for ``u``."""
    size = 1
    while u >= 0x80:
        u >>= 7
        size += 1
    return size


def size_of_varint(n: int) -> int:
    """Number of bytes a ZigZag int32 takes."""
    return size_of_unsigned_varint(((n << 1) ^ (n >> 31)) & _UINT32_MAX)


def size_of_varlong(n: int) -> int:
    """Number of bytes a ZigZag int64 takes."""
    return size_of_unsigned_varint(((n << 1) ^ (n >> 63)) & _UINT64_MAX)
