"""Kafka's compression codecs for the record section of a batch (reference §2.1-§2.2).

Attribute bits 0-2 name the codec; only the records (bytes 61 onward) are compressed, the
61-byte batch header always stays plain.

    0 none
    1 gzip    RFC 1952 stream (stdlib; mtime 0 so equal input gives equal bytes)
    2 snappy  two framings seen in the wild:
              * xerial (Java client, kafka-python):
                  b"\\x82SNAPPY\\x00" | int32 version=1 | int32 min compatible=1
                  | (int32 compressed length | raw snappy block)*   — each block ≤ 32 KiB input
              * raw snappy block (librdkafka)
              decode accepts both; encode writes xerial, which every client reads.
    3 lz4     LZ4 frame format, 64 KiB independent blocks, no content size (as the Java
              client's KafkaLZ4BlockOutputStream and librdkafka write it)
    4 zstd    zstd frame (content size may be absent: librdkafka streams it)

Failures to decompress raise CorruptRecordError; the batch decoder adds the position.
"""
from __future__ import annotations

import gzip
import struct
import zlib
from enum import IntEnum

import cramjam
import lz4.frame
import zstandard

from engine.errors import CorruptRecordError

__all__ = [
    "CompressionType", "compress", "decompress",
    "snappy_xerial_encode", "snappy_decode", "XERIAL_MAGIC", "decompress_capped", "DecompressedTooLarge",
]


class CompressionType(IntEnum):
    """Codec ids of batch attribute bits 0-2, as Kafka's ``CompressionType``."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4


XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = XERIAL_MAGIC + struct.pack(">ii", 1, 1)
_XERIAL_BLOCK = 32 * 1024
_INT32 = struct.Struct(">i")

_zstd_compressor = zstandard.ZstdCompressor(level=3)
_zstd_decompressor = zstandard.ZstdDecompressor()


def snappy_xerial_encode(data: bytes, block_size: int = _XERIAL_BLOCK) -> bytes:
    """xerial-framed snappy: the header then one length-prefixed raw block per ``block_size`` input bytes."""
    out = bytearray(_XERIAL_HEADER)
    compress_raw = cramjam.snappy.compress_raw
    view = memoryview(data)
    for start in range(0, len(data), block_size):
        block = bytes(compress_raw(view[start:start + block_size]))
        out += _INT32.pack(len(block))
        out += block
    return bytes(out)


def snappy_decode(data) -> bytes:
    """Decode snappy in either xerial framing or as one raw block."""
    decompress_raw = cramjam.snappy.decompress_raw
    view = memoryview(data)
    if len(view) >= 16 and bytes(view[:8]) == XERIAL_MAGIC:
        out = bytearray()
        pos, end = 16, len(view)
        while pos < end:
            if end - pos < 4:
                raise CorruptRecordError(f"xerial snappy: truncated block length at byte {pos}")
            (n,) = _INT32.unpack_from(view, pos)
            pos += 4
            if n < 0 or pos + n > end:
                raise CorruptRecordError(
                    f"xerial snappy: block of {n} bytes at byte {pos} runs past the end ({end})")
            out += bytes(decompress_raw(view[pos:pos + n]))
            pos += n
        return bytes(out)
    return bytes(decompress_raw(view))


def _zstd_decode(data) -> bytes:
    try:
        # Fast when the frame header carries the content size (our encoder, Java).
        return _zstd_decompressor.decompress(data)
    except zstandard.ZstdError:
        # librdkafka streams frames without a content size; a decompressobj copes.
        return _zstd_decompressor.decompressobj().decompress(bytes(data))


def compress(codec: int, data: bytes) -> bytes:
    """Compress a record section with ``codec``; NONE returns the input as bytes."""
    if codec == 0:
        return bytes(data)
    if codec == 1:
        return gzip.compress(data, compresslevel=6, mtime=0)
    if codec == 2:
        return snappy_xerial_encode(data)
    if codec == 3:
        # The frame flags Java's KafkaLZ4BlockOutputStream and librdkafka write: 64 KiB
        # independent blocks, no content size, no content checksum.
        return lz4.frame.compress(bytes(data), block_size=lz4.frame.BLOCKSIZE_MAX64KB, block_linked=False,
                                  content_checksum=False, store_size=False)
    if codec == 4:
        return _zstd_compressor.compress(data)
    raise ValueError(f"unknown compression codec {codec} (Kafka knows 0-4)")


def decompress(codec: int, data) -> bytes:
    """Decompress a record section; CorruptRecordError if the bytes are not valid for ``codec``."""
    try:
        if codec == 0:
            return bytes(data)
        if codec == 1:
            return gzip.decompress(data)
        if codec == 2:
            return snappy_decode(data)
        if codec == 3:
            return lz4.frame.decompress(bytes(data))
        if codec == 4:
            return _zstd_decode(data)
    except CorruptRecordError:
        raise
    except (OSError, EOFError, zlib.error, RuntimeError, ValueError, zstandard.ZstdError,
            cramjam.DecompressionError) as exc:
        name = CompressionType(codec).name.lower()
        raise CorruptRecordError(f"{name} record section does not decompress: {exc}") from exc
    raise CorruptRecordError(f"unknown compression codec {codec} (Kafka knows 0-4)")


_DECODE_ERRORS = (OSError, EOFError, zlib.error, RuntimeError, ValueError, zstandard.ZstdError,
                  cramjam.DecompressionError)


class DecompressedTooLarge(Exception):
    """Raised by :func:`decompress_capped` when the output would pass its limit."""

    def __init__(self, codec: int, limit: int) -> None:
        self.codec, self.limit = codec, limit
        super().__init__(f"{CompressionType(codec).name.lower()} record section inflates past {limit} bytes")


def decompress_capped(codec: int, data, limit: int) -> bytes:
    """Like :func:`decompress`, but never produces (or allocates) more than ``limit`` bytes:
    streams gzip, lz4 and zstd with an output bound, and checks each snappy block's declared
    length before inflating it. :class:`DecompressedTooLarge` past the limit,
    :class:`CorruptRecordError` for bytes that do not decode."""
    capped = _CAPPED.get(codec)
    if capped is None:                       # none, or an unknown codec: decompress words it
        out = decompress(codec, data)
        if len(out) > limit:
            raise DecompressedTooLarge(codec, limit)
        return out
    try:
        return capped(data, limit)
    except (CorruptRecordError, DecompressedTooLarge):
        raise
    except _DECODE_ERRORS as exc:
        raise CorruptRecordError(
            f"{CompressionType(codec).name.lower()} record section does not decompress: {exc}") from exc


_STEP = 64 * 1024   # output per streaming step: a refusal holds at most the cap plus one step


def _take(out: bytearray, chunk: bytes, codec: int, limit: int) -> None:
    """Add a decompressed chunk, refusing before the copy when it would pass the limit."""
    if len(out) + len(chunk) > limit:
        raise DecompressedTooLarge(codec, limit)
    out += chunk


def _gzip_capped(data: bytes, limit: int) -> bytes:
    out = bytearray()
    while True:  # one pass per gzip member
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        pending = data
        while not d.eof:
            chunk = d.decompress(pending, _STEP)
            pending = d.unconsumed_tail
            if not chunk and not pending:
                break
            _take(out, chunk, 1, limit)
        if not d.eof:
            raise CorruptRecordError("gzip record section does not decompress: the stream ends early")
        data = d.unused_data
        if not data.strip(b"\0"):
            return bytes(out)


def _snappy_declared_length(block) -> int:
    """The uncompressed length a raw snappy block starts with (an unsigned varint)."""
    n = shift = 0
    for i in range(min(len(block), 5)):
        b = block[i]
        n |= (b & 0x7F) << shift
        if not b & 0x80:
            return n
        shift += 7
    raise CorruptRecordError("snappy record section does not decompress: bad length preamble")


def _snappy_capped(data, limit: int) -> bytes:
    view = memoryview(data)
    if len(view) >= 16 and bytes(view[:8]) == XERIAL_MAGIC:
        total, pos, end = 0, 16, len(view)
        while pos + 4 <= end:
            (n,) = _INT32.unpack_from(view, pos)
            if n < 0 or pos + 4 + n > end:
                break  # snappy_decode words the error
            total += _snappy_declared_length(view[pos + 4:pos + 4 + n])
            if total > limit:
                raise DecompressedTooLarge(2, limit)
            pos += 4 + n
    elif _snappy_declared_length(view) > limit:
        raise DecompressedTooLarge(2, limit)
    return snappy_decode(view)


def _lz4_capped(data: bytes, limit: int) -> bytes:
    out = bytearray()
    while data:  # one pass per frame
        d = lz4.frame.LZ4FrameDecompressor()
        _take(out, d.decompress(data, max_length=_STEP), 3, limit)
        while not d.eof and not d.needs_input:
            _take(out, d.decompress(b"", max_length=_STEP), 3, limit)
        if not d.eof:
            raise CorruptRecordError("lz4 record section does not decompress: the frame ends early")
        data = d.unused_data
    return bytes(out)


def _zstd_capped(data: bytes, limit: int) -> bytes:
    # The stream reader bounds the output but says nothing of a truncated frame; once the
    # size is known to be within the limit, decompressobj (per frame) checks the end.
    if len(_zstd_decompressor.stream_reader(data, read_across_frames=True).read(limit + 1)) > limit:
        raise DecompressedTooLarge(4, limit)
    out = bytearray()
    while data:
        d = _zstd_decompressor.decompressobj()
        out += d.decompress(data)
        if not d.eof:
            raise CorruptRecordError("zstd record section does not decompress: the frame ends early")
        data = d.unused_data
    return bytes(out)


_CAPPED = {1: lambda d, n: _gzip_capped(bytes(d), n), 2: _snappy_capped, 3: lambda d, n: _lz4_capped(bytes(d), n),
           4: lambda d, n: _zstd_capped(bytes(d), n)}
