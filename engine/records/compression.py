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
    "snappy_xerial_encode", "snappy_decode", "XERIAL_MAGIC",
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
