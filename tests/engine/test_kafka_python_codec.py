"""Interop with an independent implementation: kafka-python 3.0.12's record batch v2 codec
reads what we build, and we read what it builds, record for record."""
import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.records import (
    CompressionType, Header, SimpleRecord, TimestampType, build_batch, build_end_txn_marker, decode_batch,
    iter_batches,
)

with warnings.catch_warnings():
    # kafka-python's protocol loader calls deprecated importlib.resources functions on import.
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
    from kafka.record.memory_records import MemoryRecords

CODECS = list(CompressionType)     # kafka-python here has gzip, snappy, lz4 and zstd installed

headers_st = st.lists(st.tuples(st.text(max_size=8), st.none() | st.binary(max_size=8)), max_size=3)
record_st = st.fixed_dictionaries({
    "key": st.none() | st.binary(max_size=20),
    "value": st.none() | st.binary(max_size=200),
    "timestamp": st.integers(0, 2**45),
    "headers": headers_st,
})
records_st = st.lists(record_st, min_size=1, max_size=20)
producer_st = st.one_of(st.just((-1, -1, -1)),
                        st.tuples(st.integers(0, 2**63 - 1), st.integers(0, 2**15 - 1), st.integers(0, 2**31 - 1)))


def _ours(records, **kw):
    return build_batch([SimpleRecord(r["value"], key=r["key"], timestamp=r["timestamp"],
                                     headers=tuple(Header(k, v) for k, v in r["headers"])) for r in records], **kw)


def _theirs(records, codec, producer, transactional=False):
    pid, epoch, seq = producer
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=codec, is_transactional=transactional,
                                        producer_id=pid, producer_epoch=epoch, base_sequence=seq,
                                        batch_size=1 << 30)
    for i, r in enumerate(records):
        assert builder.append(i, timestamp=r["timestamp"], key=r["key"], value=r["value"],
                              headers=r["headers"]) is not None
    return bytes(builder.build())


@settings(max_examples=80, deadline=None)
@given(records=records_st, codec=st.sampled_from(CODECS), producer=producer_st,
       base_offset=st.integers(0, 2**62), transactional=st.booleans(),
       ts_type=st.sampled_from(list(TimestampType)), now_ms=st.integers(0, 2**45))
def test_kafka_python_reads_our_batches(records, codec, producer, base_offset, transactional, ts_type, now_ms):
    pid, epoch, seq = producer
    raw = _ours(records, base_offset=base_offset, compression=codec, producer_id=pid, producer_epoch=epoch,
                base_sequence=seq, is_transactional=transactional, timestamp_type=ts_type, now_ms=now_ms)
    theirs = DefaultRecordBatch(raw)
    assert theirs.validate_crc()
    assert (theirs.base_offset, theirs.size_in_bytes, theirs.magic) == (base_offset, len(raw), 2)
    assert (theirs.producer_id, theirs.producer_epoch, theirs.base_sequence) == producer
    assert theirs.compression_type == codec and theirs.timestamp_type == ts_type
    assert theirs.is_transactional == transactional and not theirs.is_control_batch
    assert theirs.records_count == len(records) and theirs.last_offset_delta == len(records) - 1
    stamps = [r["timestamp"] for r in records]
    assert theirs.max_timestamp == (max(stamps) if ts_type == TimestampType.CREATE_TIME else now_ms)
    expected_ts = stamps if ts_type == TimestampType.CREATE_TIME else [now_ms] * len(records)
    assert [(m.offset, m.timestamp, m.key, m.value, list(m.headers)) for m in theirs] == [
        (base_offset + i, expected_ts[i], r["key"], r["value"], r["headers"]) for i, r in enumerate(records)]


@settings(max_examples=80, deadline=None)
@given(records=records_st, codec=st.sampled_from(CODECS), producer=producer_st, transactional=st.booleans())
def test_we_read_kafka_python_batches(records, codec, producer, transactional):
    transactional = transactional and producer[0] >= 0
    raw = _theirs(records, codec, producer, transactional)
    batch = decode_batch(raw)
    # kafka-python sends uncompressed when compression does not shrink the records
    assert batch.compression in (codec, CompressionType.NONE)
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == producer
    assert batch.is_transactional == transactional
    assert batch.crc == DefaultRecordBatch(raw).crc
    assert [(r.offset, r.timestamp, r.key, r.value, [(h.key, h.value) for h in r.headers]) for r in batch.records] == [
        (i, rec["timestamp"], rec["key"], rec["value"], rec["headers"]) for i, rec in enumerate(records)]


@pytest.mark.parametrize("codec", CODECS)
def test_kafka_python_compressed_batches_decode_with_their_codec(codec):
    records = [{"key": b"k%d" % (i % 3), "value": b"payload " * 20, "timestamp": 1_700_000_000_000 + i,
                "headers": [("h", b"v")]} for i in range(50)]
    batch = decode_batch(_theirs(records, codec, (-1, -1, -1)))
    assert batch.compression is codec
    assert [r.value for r in batch.records] == [b"payload " * 20] * 50


@pytest.mark.parametrize("codec", CODECS)
def test_memory_records_walks_a_log_of_our_batches(codec):
    batches = [build_batch([SimpleRecord(b"v%d-%d" % (b, i), timestamp=i) for i in range(3)],
                           base_offset=3 * b, compression=codec) for b in range(4)]
    records = MemoryRecords(b"".join(batches))
    seen = []
    while records.has_next():
        batch = records.next_batch()
        assert batch.validate_crc()
        seen.extend((m.offset, m.value) for m in batch)
    assert seen == [(3 * b + i, b"v%d-%d" % (b, i)) for b in range(4) for i in range(3)]


def test_we_walk_a_log_of_kafka_python_batches():
    parts = []
    for b, codec in enumerate(CODECS):
        recs = [{"key": None, "value": b"%d" % b, "timestamp": b, "headers": []}]
        parts.append(_theirs(recs, codec, (7, 0, b)))
    log = b"".join(parts)
    assert [(batch.base_sequence, batch.records[0].value) for _, batch in iter_batches(log)] == [
        (b, b"%d" % b) for b in range(len(CODECS))]


@pytest.mark.parametrize("commit", [True, False])
def test_kafka_python_reads_our_transaction_markers(commit):
    theirs = DefaultRecordBatch(build_end_txn_marker(commit, 42, 3, 9, base_offset=10, now_ms=5))
    assert theirs.validate_crc()
    assert theirs.is_control_batch and theirs.is_transactional
    (marker,) = list(theirs)
    assert (marker.offset, marker.version, marker.commit, marker.abort) == (10, 0, commit, not commit)
