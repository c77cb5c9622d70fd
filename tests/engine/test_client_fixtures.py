"""Batches captured from real clients (librdkafka, kafka-python) decode to what
``expected.json`` says — bytes no one on this project encoded."""
import functools
import importlib.util
import json
import warnings
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


@functools.cache
def _capture_module():
    spec = importlib.util.spec_from_file_location("fixture_capture", FIXTURES.parent / "capture.py")
    module = importlib.util.module_from_spec(spec)
    with warnings.catch_warnings():   # kafka-python's protocol schemas load with a deprecated importlib API
        warnings.simplefilter("ignore", DeprecationWarning)
        spec.loader.exec_module(module)
    return module


def test_readme_names_every_fixture_file():
    readme = (FIXTURES.parent / "README.md").read_text()
    assert all(f"`{name}`" in readme for name in NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_capture_script_describes_the_files_as_expected_json_does(name):
    """capture.py writes expected.json from struct and kafka-python's decoder; run over the
    committed bytes it must give what is committed, and its records are what was sent."""
    capture = _capture_module()
    data = (FIXTURES / name).read_bytes()
    assert capture.describe(data) == EXPECTED[name]
    sent = capture.the_records(with_null_header=name.startswith("librdkafka"))
    assert [{"key": _text(r["key"]), "value": _text(r["value"]), "timestamp": r["timestamp"],
             "headers": [[k, _text(v)] for k, v in r["headers"]]} for r in sent] == [
        {k: rec[k] for k in ("key", "value", "timestamp", "headers")} for rec in EXPECTED[name]["records"]]
