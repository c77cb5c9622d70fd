import struct
import warnings

import cramjam
import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.errors import CorruptRecordError
from engine.records.compression import (
    XERIAL_MAGIC, CompressionType, compress, decompress, snappy_decode, snappy_xerial_encode,
)

CODECS = list(CompressionType)


@settings(max_examples=40)
@given(st.sampled_from(CODECS), st.binary(max_size=3000))
def test_every_codec_round_trips(codec, data):
    assert decompress(codec, compress(codec, data)) == data


@pytest.mark.parametrize("codec", CODECS)
def test_compression_is_deterministic(codec):
    data = b"kafka " * 500
    assert compress(codec, data) == compress(codec, data)


@pytest.mark.parametrize("codec", [c for c in CODECS if c != CompressionType.NONE])
def test_compressed_codecs_shrink_repetitive_data(codec):
    data = b"kafka " * 500
    assert len(compress(codec, data)) < len(data) // 4


def test_gzip_output_is_a_gzip_stream():
    assert compress(CompressionType.GZIP, b"x")[:2] == b"\x1f\x8b"


def test_lz4_output_is_an_lz4_frame_with_the_flags_kafka_clients_write():
    out = compress(CompressionType.LZ4, b"x" * 200_000)
    assert out[:4] == struct.pack("<I", 0x184D2204)
    assert out[4] == 0x60          # version 01, independent blocks, no content size or checksum
    assert out[5] == 0x40          # 64 KiB maximum block size


def test_zstd_output_is_a_zstd_frame():
    assert compress(CompressionType.ZSTD, b"x")[:4] == struct.pack("<I", 0xFD2FB528)


def test_snappy_is_written_in_xerial_framing():
    out = compress(CompressionType.SNAPPY, b"hello")
    assert out[:8] == XERIAL_MAGIC
    assert struct.unpack(">ii", out[8:16]) == (1, 1)
    (n,) = struct.unpack(">i", out[16:20])
    assert len(out) == 20 + n
    assert bytes(cramjam.snappy.decompress_raw(out[20:])) == b"hello"


def test_xerial_splits_input_into_32k_blocks():
    data = bytes(range(256)) * 300             # 76 800 bytes → 3 blocks
    out = snappy_xerial_encode(data)
    pos, blocks = 16, 0
    while pos < len(out):
        (n,) = struct.unpack_from(">i", out, pos)
        pos += 4 + n
        blocks += 1
    assert blocks == 3
    assert snappy_decode(out) == data


@given(st.binary(max_size=2000))
def test_raw_snappy_as_librdkafka_sends_it_decodes(data):
    raw = bytes(cramjam.snappy.compress_raw(data))
    assert decompress(CompressionType.SNAPPY, raw) == data


def test_xerial_written_by_kafka_python_decodes():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)     # kafka-python's import-time loader
        from kafka.codec import snappy_encode
    data = b"record section " * 5000
    framed = snappy_encode(data, xerial_compatible=True, xerial_blocksize=32 * 1024)
    assert framed[:8] == XERIAL_MAGIC
    assert decompress(CompressionType.SNAPPY, framed) == data


def test_zstd_frame_without_content_size_decodes():
    data = b"streamed by librdkafka " * 100
    frame = zstandard.ZstdCompressor(write_content_size=False).compress(data)
    assert decompress(CompressionType.ZSTD, frame) == data


def test_gzip_with_several_members_decodes_whole():
    import gzip
    assert decompress(CompressionType.GZIP, gzip.compress(b"ab") + gzip.compress(b"cd")) == b"abcd"


@pytest.mark.parametrize("codec", [c for c in CODECS if c != CompressionType.NONE])
def test_garbage_does_not_decompress(codec):
    with pytest.raises(CorruptRecordError, match=codec.name.lower()):
        decompress(codec, b"\x82SNAPPY\x00 definitely not compressed data \xff\xfe")


def test_truncated_xerial_block_is_corrupt():
    framed = snappy_xerial_encode(b"hello world" * 10)
    with pytest.raises(CorruptRecordError, match="runs past the end"):
        decompress(CompressionType.SNAPPY, framed[:-3])


def test_unknown_codec_is_refused():
    with pytest.raises(ValueError):
        compress(5, b"x")
    with pytest.raises(CorruptRecordError, match="codec 5"):
        decompress(5, b"x")
