"""The leader's checks on client batches (engine/records/validation.py, Kafka's LogValidator):
each check refuses with Kafka's error name and leaves the log exactly as it was; the
client fixtures (bytes from librdkafka and kafka-python) are appended whole."""
import gzip
import struct
import tracemalloc
from pathlib import Path

import pytest
from crc32c import crc32c
from hypothesis import HealthCheck, event, given, settings, strategies as st

from engine.clock import Scheduler, VirtualClock
from engine.config import LogConfig
from engine.disk import Disk
from engine.errors import (CorruptRecordError, InvalidRecordError, InvalidTimestampError, KafkaError,
                           RecordTooLargeError)
from engine.events import EventLog
from engine.log import Log
from engine.records import CompressionType, SimpleRecord, TimestampType, build_batch, decode_batch

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "client-batches"
NAMES = sorted(p.name for p in FIXTURES.glob("*.bin"))
NOW = 1_700_000_000_200   # the fixtures' records are stamped 1700000000000 + 10·i


def make_log(root, **cfg):
    clock = VirtualClock(NOW)
    return Log(Disk(root), "t-0", "t", 0, LogConfig(**cfg), Scheduler(clock), EventLog(clock), broker=1,
               hw_follows_leo=True)


def fixture(name):
    return (FIXTURES / name).read_bytes()


def recrc(batch: bytes) -> bytes:
    out = bytearray(batch)
    struct.pack_into(">I", out, 17, crc32c(bytes(out[21:])))
    return bytes(out)


def patch(batch: bytes, fmt: str, at: int, value) -> bytes:
    out = bytearray(batch)
    struct.pack_into(fmt, out, at, value)
    return recrc(bytes(out))


def snapshot(log):
    """What a refused append must leave alone: every file's bytes, and the offsets."""
    files = {}
    for name, _ in log.disk.list_files(log.dir):
        log.active_segment.offset_index.sync()
        log.active_segment.time_index.sync()
        files[name] = log.disk.read_all(f"{log.dir}/{name}")
    return files, log.log_end_offset, log.high_watermark, list(log.leader_epoch_cache.entries)


@pytest.fixture
def log(tmp_path):
    lg = make_log(tmp_path)
    lg.append_as_leader([SimpleRecord(b"before")], 0)
    return lg


@pytest.mark.parametrize("name", NAMES)
def test_every_client_fixture_is_appended_whole(log, name):
    info = log.append_as_leader(fixture(name), 3)
    assert (info.first_offset, info.last_offset, log.log_end_offset) == (1, 40, 41)
    sent = decode_batch(fixture(name)).records
    assert [(r.key, r.value, r.timestamp) for r in log.records(1)] == [(r.key, r.value, r.timestamp) for r in sent]


def refused(log, data, error, match=None):
    before = snapshot(log)
    with pytest.raises(error, match=match) as exc:
        log.append_as_leader(data, 3)
    assert snapshot(log) == before
    return exc.value


def test_records_count_must_equal_last_offset_delta_plus_one(log):
    bad = patch(fixture("librdkafka-none.bin"), ">i", 57, 39)   # recordsCount 39, lastOffsetDelta 39
    err = refused(log, bad, InvalidRecordError, "inconsistent batch offset range")
    assert err.name == "INVALID_RECORD"


def test_negative_last_offset_delta_is_an_invalid_offset_range(log):
    refused(log, patch(fixture("librdkafka-none.bin"), ">i", 23, -1), InvalidRecordError, "invalid offset range")


def test_zero_records_count_is_refused(log):
    data = patch(patch(fixture("librdkafka-none.bin"), ">i", 57, 0), ">i", 23, -1)
    refused(log, data, InvalidRecordError)


def test_producer_id_needs_a_base_sequence(log):
    bad = patch(fixture("kafka-python-none.bin"), ">i", 53, -1)
    refused(log, bad, InvalidRecordError, "invalid sequence number -1 in record batch with producerId 1000")


def test_clients_may_not_write_control_batches(log):
    data = fixture("librdkafka-none.bin")
    attrs = struct.unpack_from(">h", data, 21)[0]
    refused(log, patch(data, ">h", 21, attrs | 0x20), InvalidRecordError, "control records")


def test_exactly_one_batch_per_produce(log):
    refused(log, fixture("librdkafka-none.bin") * 2, InvalidRecordError, "exactly one")


def test_a_flipped_payload_byte_is_a_corrupt_message(log):
    data = bytearray(fixture("librdkafka-zstd.bin"))
    data[200] ^= 1
    err = refused(log, bytes(data), CorruptRecordError, "CRC")
    assert err.name == "CORRUPT_MESSAGE"


def test_a_record_section_that_does_not_decompress_is_corrupt(log):
    data = bytearray(fixture("librdkafka-gzip.bin"))
    data[70:90] = bytes(20)
    refused(log, recrc(bytes(data)), CorruptRecordError, "gzip")


def test_records_count_above_the_records_present_is_corrupt(log):
    data = patch(patch(fixture("librdkafka-none.bin"), ">i", 57, 41), ">i", 23, 40)
    refused(log, data, CorruptRecordError)


def test_timestamp_too_old_is_refused(tmp_path):
    log = make_log(tmp_path, message_timestamp_before_max_ms=100)
    err = refused(log, fixture("librdkafka-none.bin"), InvalidTimestampError, "out of range")
    assert err.name == "INVALID_TIMESTAMP" and err.code == 32


def test_timestamp_too_far_ahead_is_refused(tmp_path):
    log = make_log(tmp_path, message_timestamp_after_max_ms=100)
    refused(log, fixture("librdkafka-none.bin"), InvalidTimestampError)
    log.config = log.config.replace(message_timestamp_after_max_ms=190)   # the last record is NOW + 190
    assert log.append_as_leader(fixture("librdkafka-none.bin"), 0).last_offset == 39


def test_the_deprecated_difference_config_stands_in_for_both(tmp_path):
    log = make_log(tmp_path, message_timestamp_difference_max_ms=150)
    refused(log, fixture("librdkafka-none.bin"), InvalidTimestampError)
    log.config = log.config.replace(message_timestamp_after_max_ms=1000)   # an explicit value wins
    refused(log, fixture("librdkafka-none.bin"), InvalidTimestampError)   # still too old: 200 > 150
    log.config = log.config.replace(message_timestamp_before_max_ms=1000)
    log.append_as_leader(fixture("librdkafka-none.bin"), 0)


def test_log_append_time_topics_ignore_client_timestamps(tmp_path):
    log = make_log(tmp_path, message_timestamp_type="LogAppendTime", message_timestamp_before_max_ms=0,
                   message_timestamp_after_max_ms=0)
    info = log.append_as_leader(fixture("librdkafka-none.bin"), 0)
    assert {r.timestamp for r in log.records()} == {info.log_append_time}


def test_records_the_leader_encodes_follow_the_timestamp_rule(tmp_path):
    log = make_log(tmp_path, message_timestamp_before_max_ms=1000)
    with pytest.raises(InvalidTimestampError):
        log.append_as_leader([SimpleRecord(b"x", timestamp=NOW - 1001)], 0)
    log.append_as_leader([SimpleRecord(b"x", timestamp=NOW - 1000), SimpleRecord(b"y")], 0)
    assert log.log_end_offset == 2


def test_client_may_not_claim_log_append_time_without_a_timestamp(log):
    batch = build_batch([SimpleRecord(b"x", timestamp=-1)], timestamp_type=TimestampType.LOG_APPEND_TIME, now_ms=-1)
    refused(log, batch, InvalidTimestampError, "LogAppendTime")


def test_compacted_topics_need_keys(tmp_path):
    log = make_log(tmp_path, cleanup_policy="compact")
    refused(log, fixture("librdkafka-none.bin"), InvalidRecordError, "without key")


@pytest.mark.parametrize("codec", [c for c in CompressionType if c])
def test_a_small_batch_that_inflates_past_max_message_bytes_is_refused_unallocated(tmp_path, codec):
    log = make_log(tmp_path, max_message_bytes=1 << 20)
    bomb = build_batch([SimpleRecord(bytes(16 << 20))], compression=codec)   # 16 MiB of zeros
    assert len(bomb) < 1 << 20
    before = snapshot(log)
    tracemalloc.start()
    try:
        with pytest.raises(RecordTooLargeError, match="inflates past max.message.bytes=1048576"):
            log.append_as_leader(bomb, 0)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 6 << 20, f"refusing the bomb allocated {peak} bytes"
    assert snapshot(log) == before


def test_a_gzip_bomb_built_by_hand_is_refused(log):
    section = gzip.compress(bytes(64 << 20))
    head = bytearray(build_batch([SimpleRecord(b"x")], compression=CompressionType.GZIP)[:61])
    struct.pack_into(">i", head, 8, 49 + len(section))
    refused(log, recrc(bytes(head) + section), RecordTooLargeError)


# ---- fuzz: mutated client batches ----------------------------------------------------------------

_FIELDS = [(">i", 8), (">i", 12), (">h", 21), (">i", 23), (">q", 27), (">q", 35), (">q", 43), (">h", 51),
           (">i", 53), (">i", 57)]


@st.composite
def mutated(draw):
    data = bytearray(fixture(draw(st.sampled_from(NAMES))))
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["flip", "field", "truncate", "extend", "splice"]))
        if kind == "flip" and data:
            i = draw(st.integers(0, len(data) - 1))
            data[i] ^= 1 << draw(st.integers(0, 7))
        elif kind == "field" and len(data) >= 61:
            fmt, at = draw(st.sampled_from(_FIELDS))
            bits = struct.calcsize(fmt) * 8
            struct.pack_into(fmt, data, at, draw(st.integers(-(1 << (bits - 1)), (1 << (bits - 1)) - 1)))
        elif kind == "truncate":
            del data[draw(st.integers(0, len(data))):]
        elif kind == "extend":
            data += draw(st.binary(max_size=80))
        elif kind == "splice" and len(data) > 61:
            i = draw(st.integers(61, len(data) - 1))
            data[i:i + draw(st.integers(0, 8))] = draw(st.binary(max_size=8))
    if draw(st.booleans()) and len(data) >= 61:   # most flips die at the CRC: get past it often
        data = bytearray(recrc(bytes(data)))
    return bytes(data)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=mutated())
def test_mutated_client_batches_are_refused_or_appended_whole(tmp_path_factory, data):
    log = make_log(tmp_path_factory.mktemp("fuzz"), message_timestamp_before_max_ms=10**6,
                   message_timestamp_after_max_ms=10**6)
    log.append_as_leader([SimpleRecord(b"before")], 0)
    before = snapshot(log)
    try:
        info = log.append_as_leader(data, 2)
    except KafkaError as exc:
        event(exc.name)
        assert exc.name in {"CORRUPT_MESSAGE", "INVALID_RECORD", "INVALID_TIMESTAMP", "MESSAGE_TOO_LARGE"}
        assert snapshot(log) == before
        return
    finally:
        log.close()
    event("appended")
    sent = decode_batch(data).records
    assert info.first_offset == 1 and log.log_end_offset == 1 + len(sent) == info.last_offset + 1
    assert [(r.key, r.value) for r in log.records(1)] == [(r.key, r.value) for r in sent]


def test_max_timestamp_is_set_from_the_records_as_kafka_does(log):
    data = patch(fixture("librdkafka-none.bin"), ">q", 35, 5)   # a lying maxTimestamp
    log.append_as_leader(data, 0)
    (stored,) = log.read(1).batches
    assert stored.max_timestamp == 1_700_000_000_390
    assert decode_batch(log.read(1).records).max_timestamp == 1_700_000_000_390   # CRC recomputed


def test_records_with_out_of_order_offset_deltas_are_rebuilt(log):
    records = [SimpleRecord(b"a", timestamp=NOW), SimpleRecord(b"b", timestamp=NOW)]
    data = bytearray(build_batch(records, compression=CompressionType.NONE))
    # Each record is 8 bytes: length, attributes, timestamp delta, offset delta, key, value length, value, headers.
    pos = 61 + 8 + 3                                    # record 1's offset delta (zigzag 1 = 2)
    assert data[pos] == 2
    data[pos] = 0                                       # both records now claim delta 0
    info = log.append_as_leader(recrc(bytes(data)), 0)
    assert [(r.offset, r.value) for r in log.records(1)] == [(1, b"a"), (2, b"b")] and info.last_offset == 2
