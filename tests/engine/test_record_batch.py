import pickle
import struct

import pytest
from crc32c import crc32c
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.errors import CorruptRecordError, InvalidRecordError
from engine.records import (
    BATCH_OVERHEAD, LOG_OVERHEAD, BatchHeader, CompressionType, ControlRecordType, EndTransactionMarker, Header,
    Record, RecordBatch, SimpleRecord, TimestampType, build_batch, build_end_txn_marker, decode_batch,
    iter_batches, read_end_txn_marker, read_header, scan_valid, verify_crc, walk_records, with_log_append_time,
    with_offset_and_epoch,
)

# reference §2.3: the worked example, byte for byte
WORKED_EXAMPLE = bytes.fromhex(
    "0000000000000000" "0000004a" "ffffffff" "02" "9086fb13" "0000" "00000001"
    "0000018bcfe56800" "0000018bcfe56805" "ffffffffffffffff" "ffff" "ffffffff" "00000002"
    "10000000" "026b" "0276" "00"
    "1e000a0201" "0a" "68656c6c6f" "02" "0268" "0231"
)
WORKED_RECORDS = [
    SimpleRecord(b"v", key=b"k", timestamp=1_700_000_000_000),
    SimpleRecord(b"hello", timestamp=1_700_000_000_005, headers=(Header("h", b"1"),)),
]


def _recrc(batch: bytes) -> bytes:
    """Recompute the CRC after a test deliberately edits CRC-covered bytes."""
    out = bytearray(batch)
    out[17:21] = struct.pack(">I", crc32c(bytes(out[21:])))
    return bytes(out)


def _set_records_count(batch: bytes, count: int) -> bytes:
    return _recrc(batch[:57] + struct.pack(">i", count) + batch[61:])


# ---------------------------------------------------------------- worked example / encoding

def test_worked_example_encodes_byte_for_byte():
    assert build_batch(WORKED_RECORDS) == WORKED_EXAMPLE


def test_worked_example_header_fields():
    h = read_header(WORKED_EXAMPLE)
    assert (h.base_offset, h.batch_length, h.partition_leader_epoch, h.magic, h.crc) == (0, 74, -1, 2, 0x9086FB13)
    assert (h.last_offset_delta, h.base_timestamp, h.max_timestamp) == (1, 1_700_000_000_000, 1_700_000_000_005)
    assert (h.producer_id, h.producer_epoch, h.base_sequence, h.records_count) == (-1, -1, -1, 2)
    assert h.size_in_bytes == 86 == len(WORKED_EXAMPLE)
    assert h.crc == 2424765203           # what kafka-dump-log.sh prints (reference §3.7)


def test_worked_example_decodes_to_its_records():
    batch = decode_batch(WORKED_EXAMPLE)
    assert batch.records == (
        Record(0, 1_700_000_000_000, b"k", b"v", (), 0, 0),
        Record(1, 1_700_000_000_005, None, b"hello", (Header("h", b"1"),), 1, 5),
    )


def test_empty_record_list_is_invalid():
    with pytest.raises(InvalidRecordError):
        build_batch([])


def test_records_without_timestamp_get_now():
    batch = decode_batch(build_batch([SimpleRecord(b"a"), SimpleRecord(b"b", timestamp=7)], now_ms=1000))
    assert [r.timestamp for r in batch.records] == [1000, 7]
    assert batch.base_timestamp == 1000
    assert batch.max_timestamp == 1000


def test_max_timestamp_is_the_largest_create_time():
    raw = build_batch([SimpleRecord(b"a", timestamp=50), SimpleRecord(b"b", timestamp=90),
                       SimpleRecord(b"c", timestamp=60)])
    h = read_header(raw)
    assert (h.base_timestamp, h.max_timestamp) == (50, 90)
    assert [r.timestamp_delta for r in decode_batch(raw).records] == [0, 40, 10]


def test_negative_timestamp_delta_round_trips():
    raw = build_batch([SimpleRecord(b"a", timestamp=1000), SimpleRecord(b"b", timestamp=10)])
    assert [r.timestamp for r in decode_batch(raw).records] == [1000, 10]


def test_base_offset_makes_offsets_absolute():
    batch = decode_batch(build_batch([SimpleRecord(b"a"), SimpleRecord(b"b")], base_offset=41))
    assert [r.offset for r in batch.records] == [41, 42]
    assert (batch.last_offset, batch.next_offset) == (42, 43)


def test_out_of_range_producer_epoch_is_invalid():
    with pytest.raises(InvalidRecordError, match="producer_epoch=40000"):
        build_batch([SimpleRecord(b"a")], producer_epoch=40000)


def test_unknown_compression_is_invalid():
    with pytest.raises(InvalidRecordError, match="codec 6"):
        build_batch([SimpleRecord(b"a")], compression=6)


def test_non_bytes_value_is_invalid():
    with pytest.raises(InvalidRecordError, match="int"):
        build_batch([SimpleRecord(12)])


# ---------------------------------------------------------------- attribute bits

def test_attribute_bits():
    raw = build_batch([SimpleRecord(b"a")], compression=CompressionType.ZSTD,
                      timestamp_type=TimestampType.LOG_APPEND_TIME, is_transactional=True, is_control=True)
    h = read_header(raw)
    assert h.attributes == 4 | 0x08 | 0x10 | 0x20
    assert h.compression is CompressionType.ZSTD
    assert h.timestamp_type is TimestampType.LOG_APPEND_TIME
    assert h.is_transactional and h.is_control and not h.has_delete_horizon
    assert h.delete_horizon_ms is None


def test_plain_batch_has_no_flags():
    h = read_header(build_batch([SimpleRecord(b"a")]))
    assert h.attributes == 0
    assert h.timestamp_type is TimestampType.CREATE_TIME
    assert not (h.is_transactional or h.is_control or h.has_delete_horizon)


def test_delete_horizon_bit_exposes_base_timestamp():
    raw = build_batch([SimpleRecord(b"a", timestamp=5)])
    raw = _recrc(raw[:21] + struct.pack(">h", 0x40) + raw[23:])
    h = read_header(raw)
    assert h.has_delete_horizon and h.delete_horizon_ms == 5


def test_log_append_time_batch_gives_every_record_max_timestamp():
    raw = build_batch([SimpleRecord(b"a", timestamp=1), SimpleRecord(b"b", timestamp=2)],
                      timestamp_type=TimestampType.LOG_APPEND_TIME, now_ms=9999)
    batch = decode_batch(raw)
    assert batch.max_timestamp == 9999
    assert [r.timestamp for r in batch.records] == [9999, 9999]
    assert [r.timestamp_delta for r in batch.records] == [0, 1]


@pytest.mark.parametrize("base, delta, last", [
    (-1, 5, -1), (0, 4, 4), (2**31 - 1, 0, 2**31 - 1), (2**31 - 1, 1, 0), (2**31 - 3, 5, 2),
])
def test_last_sequence_wraps_past_int32_max(base, delta, last):
    h = BatchHeader(0, 49, -1, 2, 0, 0, delta, 0, 0, 7, 0, base, delta + 1)
    assert h.last_sequence == last


# ---------------------------------------------------------------- round trips

headers_st = st.lists(st.builds(Header, st.text(max_size=8), st.none() | st.binary(max_size=8)), max_size=3).map(tuple)
record_st = st.builds(
    SimpleRecord,
    value=st.none() | st.binary(max_size=300),
    key=st.none() | st.binary(max_size=20),
    timestamp=st.none() | st.integers(0, 2**50),
    headers=headers_st,
)


@settings(max_examples=100, deadline=None)
@given(
    records=st.lists(record_st, min_size=1, max_size=25),
    codec=st.sampled_from(list(CompressionType)),
    ts_type=st.sampled_from(list(TimestampType)),
    now_ms=st.integers(0, 2**50),
    base_offset=st.integers(0, 2**62),
    producer=st.one_of(st.just((-1, -1, -1)),
                       st.tuples(st.integers(0, 2**63 - 1), st.integers(0, 2**15 - 1), st.integers(0, 2**31 - 1))),
    leader_epoch=st.integers(-1, 2**31 - 1),
    transactional=st.booleans(),
    control=st.booleans(),
)
def test_any_batch_round_trips(records, codec, ts_type, now_ms, base_offset, producer, leader_epoch,
                               transactional, control):
    pid, pepoch, seq = producer
    raw = build_batch(records, base_offset=base_offset, compression=codec, timestamp_type=ts_type, now_ms=now_ms,
                      producer_id=pid, producer_epoch=pepoch, base_sequence=seq,
                      partition_leader_epoch=leader_epoch, is_transactional=transactional, is_control=control)
    batch = decode_batch(raw)
    stamps = [now_ms if r.timestamp is None else r.timestamp for r in records]
    assert batch.size_in_bytes == len(raw)
    assert (batch.base_offset, batch.partition_leader_epoch, batch.magic) == (base_offset, leader_epoch, 2)
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (pid, pepoch, seq)
    assert batch.records_count == len(records) == batch.last_offset_delta + 1
    assert batch.compression == codec and batch.timestamp_type == ts_type
    assert (batch.is_transactional, batch.is_control) == (transactional, control)
    assert batch.base_timestamp == stamps[0]
    assert batch.max_timestamp == (max(stamps) if ts_type == TimestampType.CREATE_TIME else now_ms)
    expected_ts = stamps if ts_type == TimestampType.CREATE_TIME else [now_ms] * len(records)
    assert [(r.offset, r.offset_delta, r.timestamp, r.timestamp_delta, r.key, r.value, r.headers)
            for r in batch.records] == [
        (base_offset + i, i, expected_ts[i], stamps[i] - stamps[0], rec.key, rec.value, rec.headers)
        for i, rec in enumerate(records)]
    assert verify_crc(raw, 0, read_header(raw))



def _walk_as_decoded(raw: bytes):
    """What ``walk_records`` must say about an uncompressed batch, from the full decoder."""
    try:
        batch = decode_batch(raw, verify_crc=False)
    except CorruptRecordError:
        return None
    if [r.offset_delta for r in batch.records] != list(range(len(batch.records))):
        return None
    deltas = [r.timestamp_delta for r in batch.records]
    return min(deltas), max(deltas), any(r.key is None for r in batch.records)


@settings(max_examples=200, deadline=None)
@given(records=st.lists(record_st, min_size=1, max_size=80), data=st.data())
def test_the_record_walk_accepts_exactly_what_the_decoder_accepts(records, data):
    raw = bytearray(build_batch(records, now_ms=5))
    for _ in range(data.draw(st.integers(0, 3))):
        i = data.draw(st.integers(BATCH_OVERHEAD, len(raw) - 1))
        raw[i:i + data.draw(st.integers(0, 3))] = data.draw(st.binary(max_size=3))
    raw[8:12] = struct.pack(">i", len(raw) - LOG_OVERHEAD)
    raw = bytes(raw)
    count = struct.unpack_from(">i", raw, 57)[0]
    walk = walk_records(raw, BATCH_OVERHEAD, len(raw), count)
    assert (None if walk is None else tuple(walk)) == _walk_as_decoded(raw)

close_record_st = st.builds(
    SimpleRecord,
    value=st.none() | st.binary(max_size=300),
    key=st.none() | st.binary(max_size=3),
    # deltas of one and two varint bytes, either sign, often the previous record's
    timestamp=st.sampled_from([1_700_000_000_000 + d for d in (0, 0, 0, 1, 5, -3, 63, -64, 64, 200, -200, 9000)]),
    headers=st.just(()) | headers_st,
)


@settings(max_examples=300, deadline=None)
@given(records=st.lists(close_record_st, min_size=1, max_size=150), data=st.data())
def test_the_record_walk_agrees_with_the_decoder_on_client_shaped_batches(records, data):
    """What clients send: timestamps a few ms apart (one- and two-byte deltas, mostly
    repeated), small or null keys, more than 64 records (two-byte offset deltas), then a
    few bytes overwritten or a length byte changed, or the count changed."""
    raw = bytearray(build_batch(records))
    for _ in range(data.draw(st.integers(0, 2))):
        i = data.draw(st.integers(BATCH_OVERHEAD, len(raw) - 1))
        raw[i] = data.draw(st.sampled_from([0, 1, 2, 3, 0x7F, 0x80, 0xFF, raw[i] ^ 1, raw[i] ^ 0x80]))
    count = struct.unpack_from(">i", raw, 57)[0] + data.draw(st.sampled_from([0, 0, 0, -1, 1]))
    raw[57:61] = struct.pack(">i", count)
    raw = bytes(raw)
    walk = walk_records(raw, BATCH_OVERHEAD, len(raw), count)
    assert (None if walk is None else tuple(walk)) == _walk_as_decoded(raw)


def test_the_record_walk_agrees_with_the_decoder_past_8192_records():
    """Offset deltas from 8,192 take three varint bytes (read inline by the walk): every
    single-byte change to the last records is judged as the decoder judges it."""
    raw = build_batch([SimpleRecord(b"v", timestamp=1_700_000_000_000 + i // 3000) for i in range(8300)])
    count = struct.unpack_from(">i", raw, 57)[0]
    assert tuple(walk_records(raw, BATCH_OVERHEAD, len(raw), count)) == _walk_as_decoded(raw) == (0, 2, True)
    verdicts = set()
    for i in range(len(raw) - 60, len(raw)):
        for byte in (raw[i] ^ 1, raw[i] ^ 0x80, 0x80, 0):
            bad = raw[:i] + bytes([byte]) + raw[i + 1:]
            want = _walk_as_decoded(bad)
            walk = walk_records(bad, BATCH_OVERHEAD, len(bad), count)
            assert (None if walk is None else tuple(walk)) == want, (i, byte)
            verdicts.add(want is None)
    assert verdicts == {True, False}


def test_header_with_null_value_and_unicode_key_round_trips():
    headers = (Header("trace", None), Header("ключ", b""), Header("", b"x"))
    assert decode_batch(build_batch([SimpleRecord(b"v", headers=headers)])).records[0].headers == headers


def test_header_pairs_are_accepted_as_tuples():
    raw = build_batch([SimpleRecord(b"v", headers=(("h", b"1"),))])
    assert decode_batch(raw).records[0].headers == (Header("h", b"1"),)


def test_large_values_use_multi_byte_varints():
    value = bytes(range(256)) * 200
    raw = build_batch([SimpleRecord(value, key=b"k" * 20000)] * 3)
    assert [r.value for r in decode_batch(raw).records] == [value] * 3


def test_more_than_64_records_use_two_byte_offset_deltas():
    raw = build_batch([SimpleRecord(b"%d" % i) for i in range(20000)])
    records = decode_batch(raw).records
    assert [r.offset_delta for r in records] == list(range(20000))


def test_decoded_batch_pickles():
    batch = decode_batch(WORKED_EXAMPLE)
    assert pickle.loads(pickle.dumps(batch)) == batch


def test_decoded_batch_is_frozen():
    batch = decode_batch(WORKED_EXAMPLE)
    with pytest.raises(AttributeError):
        batch.records[0].offset = 3
    with pytest.raises(AttributeError):
        batch.base_offset = 3


def test_record_batch_iterates_its_records():
    batch = decode_batch(WORKED_EXAMPLE)
    assert isinstance(batch, BatchHeader) and isinstance(batch, RecordBatch)
    assert list(batch) == list(batch.records) and len(batch) == 2


# ---------------------------------------------------------------- buffers and positions

def test_decode_at_a_position_inside_a_bytearray_and_memoryview():
    buf = bytearray(b"\xee" * 7) + WORKED_EXAMPLE
    assert decode_batch(buf, 7) == decode_batch(WORKED_EXAMPLE)
    assert decode_batch(memoryview(buf), 7) == decode_batch(WORKED_EXAMPLE)


@pytest.mark.parametrize("codec", list(CompressionType))
@pytest.mark.parametrize("wrap", [bytes, bytearray, memoryview])
def test_decode_from_any_buffer_type(codec, wrap):
    raw = build_batch([SimpleRecord(b"v%d" % i, key=b"k") for i in range(5)], compression=codec)
    buf = bytearray(b"\xee" * 3) + raw + b"\xee"
    batch = decode_batch(wrap(buf), 3)
    assert [r.value for r in batch.records] == [b"v%d" % i for i in range(5)]
    assert all(type(r.value) is bytes and type(r.key) is bytes for r in batch.records)
    assert isinstance(buf, bytearray) and buf.pop() == 0xEE     # no buffer export left behind


def test_iter_batches_yields_positions():
    a = build_batch([SimpleRecord(b"a")], base_offset=0)
    b = build_batch([SimpleRecord(b"b"), SimpleRecord(b"c")], base_offset=1, compression=CompressionType.GZIP)
    got = list(iter_batches(a + b))
    assert [(pos, batch.base_offset) for pos, batch in got] == [(0, 0), (len(a), 1)]
    assert [r.value for _, batch in got for r in batch.records] == [b"a", b"b", b"c"]


def test_iter_batches_raises_on_a_torn_tail():
    with pytest.raises(CorruptRecordError, match=f"position {len(WORKED_EXAMPLE)}"):
        list(iter_batches(WORKED_EXAMPLE + WORKED_EXAMPLE[:30]))


def test_read_header_does_not_need_the_records():
    assert read_header(WORKED_EXAMPLE[:BATCH_OVERHEAD]).records_count == 2


# ---------------------------------------------------------------- corruption

@settings(max_examples=60, deadline=None)
@given(codec=st.sampled_from(list(CompressionType)), data=st.data())
def test_flipping_any_crc_covered_byte_is_detected(codec, data):
    raw = build_batch([SimpleRecord(b"value-%d" % i, key=b"k", headers=(Header("h", None),)) for i in range(5)],
                      compression=codec, producer_id=3, producer_epoch=1, base_sequence=0)
    index = data.draw(st.integers(21, len(raw) - 1))
    mask = data.draw(st.integers(1, 255))
    bad = bytearray(raw)
    bad[index] ^= mask
    with pytest.raises(CorruptRecordError, match="CRC mismatch"):
        decode_batch(bytes(bad))
    assert not verify_crc(bad, 0, read_header(bad))


@pytest.mark.parametrize("index", [17, 18, 19, 20])
def test_flipping_the_stored_crc_is_detected(index):
    bad = bytearray(WORKED_EXAMPLE)
    bad[index] ^= 0x01
    with pytest.raises(CorruptRecordError, match="CRC mismatch"):
        decode_batch(bytes(bad))


def test_base_offset_and_leader_epoch_are_outside_the_crc():
    bad = bytearray(WORKED_EXAMPLE)
    bad[7] ^= 0x01
    bad[15] ^= 0x01
    assert decode_batch(bytes(bad)).records[1].offset == 2


@pytest.mark.parametrize("cut", range(len(WORKED_EXAMPLE)))
def test_truncation_anywhere_names_the_batch_position(cut):
    prefix = build_batch([SimpleRecord(b"x")])
    buf = prefix + WORKED_EXAMPLE[:cut]
    with pytest.raises(CorruptRecordError, match=f"position {len(prefix)}") as info:
        decode_batch(buf, len(prefix))
    assert info.value.position == len(prefix)
    assert "truncated" in str(info.value)


@settings(max_examples=40, deadline=None)
@given(codec=st.sampled_from(list(CompressionType)), data=st.data())
def test_truncation_of_compressed_batches_is_corrupt(codec, data):
    raw = build_batch([SimpleRecord(b"v" * 50, key=b"k")] * 10, compression=codec)
    cut = data.draw(st.integers(0, len(raw) - 1))
    with pytest.raises(CorruptRecordError, match="position 0"):
        decode_batch(raw[:cut])


def test_bad_magic_is_reported():
    bad = bytearray(WORKED_EXAMPLE)
    bad[16] = 1
    with pytest.raises(CorruptRecordError, match="magic 1 is not 2"):
        decode_batch(bytes(bad))
    with pytest.raises(CorruptRecordError, match="magic 1 is not 2"):
        read_header(bytes(bad))


def test_batch_length_too_small_for_a_header_is_corrupt():
    bad = WORKED_EXAMPLE[:8] + struct.pack(">i", 48) + WORKED_EXAMPLE[12:]
    with pytest.raises(CorruptRecordError, match="batchLength 48"):
        read_header(bad)


def test_more_records_declared_than_present_is_corrupt():
    with pytest.raises(CorruptRecordError, match="record 2 is truncated"):
        decode_batch(_set_records_count(WORKED_EXAMPLE, 3))


def test_fewer_records_declared_than_present_is_corrupt():
    with pytest.raises(CorruptRecordError, match="left over"):
        decode_batch(_set_records_count(WORKED_EXAMPLE, 1))


def test_negative_records_count_is_corrupt():
    with pytest.raises(CorruptRecordError, match="negative recordsCount"):
        decode_batch(_set_records_count(WORKED_EXAMPLE, -1))


def test_record_length_disagreeing_with_its_fields_is_corrupt():
    raw = bytearray(WORKED_EXAMPLE)
    raw[61] = 0x12                    # record 0 claims 9 bytes, its fields take 8
    with pytest.raises(CorruptRecordError, match="record 0"):
        decode_batch(_recrc(bytes(raw)))


def test_unknown_codec_with_valid_crc_is_corrupt():
    raw = _recrc(WORKED_EXAMPLE[:21] + struct.pack(">h", 6) + WORKED_EXAMPLE[23:])
    with pytest.raises(CorruptRecordError, match="unknown compression codec 6"):
        decode_batch(raw)
    with pytest.raises(CorruptRecordError):
        read_header(raw).compression


def test_compressed_garbage_is_corrupt_at_its_position():
    raw = build_batch([SimpleRecord(b"a")])
    raw = _recrc(raw[:21] + struct.pack(">h", 1) + raw[23:])   # claims gzip, holds plain records
    with pytest.raises(CorruptRecordError, match="position 0.*gzip"):
        decode_batch(raw)


def test_crc_check_can_be_skipped():
    bad = bytearray(WORKED_EXAMPLE)
    bad[-1] = ord("2")                # header value "1" → "2"
    assert decode_batch(bytes(bad), verify_crc=False).records[1].headers == (Header("h", b"2"),)


# ---------------------------------------------------------------- scan_valid (log recovery)

def _log(n):
    return b"".join(build_batch([SimpleRecord(b"v%d" % i)], base_offset=i) for i in range(n))


def test_scan_valid_accepts_a_clean_log():
    log = _log(4)
    result = scan_valid(log)
    assert result.error is None
    assert result.valid_bytes == len(log)
    assert [h.base_offset for _, h in result.headers] == [0, 1, 2, 3]
    assert [pos for pos, _ in result.headers] == [i * (len(log) // 4) for i in range(4)]


def test_scan_valid_of_empty_log():
    assert scan_valid(b"") == scan_valid(b"")
    result = scan_valid(b"")
    assert (result.headers, result.valid_bytes, result.error) == ([], 0, None)


@pytest.mark.parametrize("cut", [1, 12, 60, 61, 69])
def test_scan_valid_stops_before_a_torn_tail(cut):
    log = _log(3)
    one = len(log) // 3
    result = scan_valid(log[:2 * one + cut])
    assert result.valid_bytes == 2 * one
    assert len(result.headers) == 2
    assert f"position {2 * one}" in result.error and "truncated" in result.error


def test_scan_valid_stops_at_a_crc_mismatch():
    log = bytearray(_log(3))
    one = len(log) // 3
    log[one + 65] ^= 0xFF
    result = scan_valid(bytes(log))
    assert result.valid_bytes == one
    assert "CRC mismatch" in result.error and f"position {one}" in result.error


def test_scan_valid_stops_at_zero_padding():
    log = _log(2)
    result = scan_valid(log + bytes(100))
    assert result.valid_bytes == len(log)
    assert "magic 0" in result.error


def test_scan_valid_from_a_position():
    log = _log(3)
    one = len(log) // 3
    result = scan_valid(log, one)
    assert [pos for pos, _ in result.headers] == [one, 2 * one]
    assert result.valid_bytes == len(log)


def test_verify_crc_on_a_truncated_batch_is_false():
    assert verify_crc(WORKED_EXAMPLE, 0, read_header(WORKED_EXAMPLE))
    assert not verify_crc(WORKED_EXAMPLE[:-1], 0, read_header(WORKED_EXAMPLE))


# ---------------------------------------------------------------- leader rewrites

def test_with_offset_and_epoch_keeps_the_crc():
    raw = with_offset_and_epoch(WORKED_EXAMPLE, 1000, 7)
    h = read_header(raw)
    assert (h.base_offset, h.partition_leader_epoch, h.crc) == (1000, 7, 0x9086FB13)
    assert raw[16:] == WORKED_EXAMPLE[16:]
    assert [r.offset for r in decode_batch(raw).records] == [1000, 1001]


def test_with_log_append_time_restamps_and_recomputes_crc():
    raw = build_batch(WORKED_RECORDS, compression=CompressionType.LZ4)
    stamped = with_log_append_time(raw, 1_800_000_000_000)
    batch = decode_batch(stamped)
    assert batch.timestamp_type is TimestampType.LOG_APPEND_TIME
    assert batch.compression is CompressionType.LZ4
    assert batch.max_timestamp == 1_800_000_000_000
    assert [r.timestamp for r in batch.records] == [1_800_000_000_000] * 2
    assert batch.crc != read_header(raw).crc
    assert stamped[61:] == raw[61:]


def test_rewrites_refuse_a_non_batch():
    with pytest.raises(CorruptRecordError):
        with_offset_and_epoch(b"\x00" * 70, 1, 1)
    with pytest.raises(CorruptRecordError, match="truncated"):
        with_log_append_time(WORKED_EXAMPLE[:-1], 5)


def test_log_overhead_constant():
    assert LOG_OVERHEAD + read_header(WORKED_EXAMPLE).batch_length == len(WORKED_EXAMPLE)


# ---------------------------------------------------------------- control records (§2.4)

@pytest.mark.parametrize("commit, kind", [(True, ControlRecordType.COMMIT), (False, ControlRecordType.ABORT)])
def test_end_txn_marker_round_trips(commit, kind):
    raw = build_end_txn_marker(commit, producer_id=42, producer_epoch=3, coordinator_epoch=9,
                               base_offset=100, now_ms=5000, partition_leader_epoch=2)
    batch = decode_batch(raw)
    assert batch.is_control and batch.is_transactional
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (42, 3, -1)
    assert (batch.base_offset, batch.records_count, batch.partition_leader_epoch) == (100, 1, 2)
    (record,) = batch.records
    assert record.key == b"\x00\x00\x00" + bytes([kind]) and len(record.value) == 6
    assert read_end_txn_marker(record) == EndTransactionMarker(kind, 9)


def test_other_control_types_are_ignored():
    record = Record(0, 0, struct.pack(">hh", 0, ControlRecordType.LEADER_CHANGE), b"", (), 0, 0)
    assert read_end_txn_marker(record) is None


def test_short_control_key_is_corrupt():
    with pytest.raises(CorruptRecordError, match="offset 7"):
        read_end_txn_marker(Record(7, 0, b"\x00", b"", (), 0, 0))
