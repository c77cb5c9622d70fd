"""Batches captured from real clients (librdkafka, kafka-python) decode to what
``expected.json`` says — bytes no one on this project encoded."""
import json
from pathlib import Path

import pytest

from engine.records import (
    CompressionType, SimpleRecord, build_batch, decode_batch, iter_batches, scan_valid, with_log_append_time,
    with_offset_and_epoch,
)

# Captured by tests/fixtures/capture.py; tests/fixtures/README.md says from where.
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "client-batches"

EXPECTED = json.loads((FIXTURES / "expected.json").read_text())
NAMES = sorted(EXPECTED)


def _text(b):
    return None if b is None else b.decode("utf-8")


def _batches(name):
    return list(iter_batches((FIXTURES / name).read_bytes()))


def test_every_fixture_file_is_listed():
    assert sorted(p.name for p in FIXTURES.glob("*.bin")) == NAMES
    assert len(NAMES) == 8


@pytest.mark.parametrize("name", NAMES)
def test_batch_fields_match(name):
    got = [{
        "position": pos, "size": b.size_in_bytes, "compression": int(b.compression),
        "producer_id": b.producer_id, "producer_epoch": b.producer_epoch, "base_sequence": b.base_sequence,
        "records": b.records_count, "timestamp_type": int(b.timestamp_type), "max_timestamp": b.max_timestamp,
        "crc": b.crc, "attributes": b.attributes,
    } for pos, b in _batches(name)]
    assert got == EXPECTED[name]["batches"]


@pytest.mark.parametrize("name", NAMES)
def test_records_match(name):
    got = [{
        "offset_delta": r.offset_delta, "timestamp": r.timestamp, "key": _text(r.key), "value": _text(r.value),
        "headers": [[h.key, _text(h.value)] for h in r.headers],
    } for _, b in _batches(name) for r in b.records]
    assert got == EXPECTED[name]["records"]


@pytest.mark.parametrize("name", NAMES)
def test_records_count_matches_the_decoded_records(name):
    for _, b in _batches(name):
        assert len(b.records) == b.records_count == b.last_offset_delta + 1


@pytest.mark.parametrize("name", NAMES)
def test_scan_valid_accepts_the_whole_file(name):
    data = (FIXTURES / name).read_bytes()
    result = scan_valid(data)
    assert result.error is None and result.valid_bytes == len(data)
    assert [pos for pos, _ in result.headers] == [b["position"] for b in EXPECTED[name]["batches"]]


@pytest.mark.parametrize("name", NAMES)
def test_leader_rewrites_keep_client_batches_valid(name):
    data = (FIXTURES / name).read_bytes()
    stamped = with_log_append_time(with_offset_and_epoch(data, 500, 3), 1_800_000_000_000)
    batch = decode_batch(stamped)
    assert batch.records[0].offset == 500 and batch.partition_leader_epoch == 3
    assert {r.timestamp for r in batch.records} == {1_800_000_000_000}


@pytest.mark.parametrize("name", [n for n in NAMES if n.endswith("-none.bin")])
def test_our_encoder_reproduces_uncompressed_client_batches_byte_for_byte(name):
    data = (FIXTURES / name).read_bytes()
    (_, batch), = _batches(name)
    records = [SimpleRecord(r.value, key=r.key, timestamp=r.timestamp, headers=r.headers) for r in batch.records]
    ours = build_batch(records, base_offset=batch.base_offset, compression=CompressionType.NONE,
                       producer_id=batch.producer_id, producer_epoch=batch.producer_epoch,
                       base_sequence=batch.base_sequence, partition_leader_epoch=batch.partition_leader_epoch)
    assert ours == data
