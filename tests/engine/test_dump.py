"""engine.dump: kafka-dump-log.sh's output for .log, .index, .timeindex (and friends)."""
import io
import struct

import pytest

from engine.dump import dump_files, read_offset_index, read_time_index
from engine.records import (
    CompressionType, Header, SimpleRecord, TimestampType, build_batch, read_header, with_offset_and_epoch,
)

T0 = 1_700_000_000_000


def _dump(*paths, **kw):
    out, err = io.StringIO(), io.StringIO()
    dump_files([str(p) for p in paths], out, err, **kw)
    return out.getvalue().splitlines(), err.getvalue().splitlines()


def _reference_batch() -> bytes:
    # reference §2.3: two records, the second keyless with header h=1, +5 ms
    return build_batch([SimpleRecord(b"v", key=b"k", timestamp=T0),
                        SimpleRecord(b"hello", headers=(Header("h", b"1"),), timestamp=T0 + 5)])


def test_log_dump_prints_the_reference_batch_line_exactly(tmp_path):
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(_reference_batch())
    out, err = _dump(path)
    assert out == [
        f"Dumping {path}",
        "Log starting offset: 0",
        "baseOffset: 0 lastOffset: 1 count: 2 baseSequence: -1 lastSequence: -1 producerId: -1 "
        "producerEpoch: -1 partitionLeaderEpoch: -1 isTransactional: false isControl: false "
        "deleteHorizonMs: OptionalLong.empty position: 0 CreateTime: 1700000000005 size: 86 magic: 2 "
        "compresscodec: none crc: 2424765203 isvalid: true",
    ]
    assert err == []


def test_log_dump_positions_accumulate_and_base_offset_comes_from_the_file_name(tmp_path):
    first = with_offset_and_epoch(_reference_batch(), 1234, 3)
    second = build_batch([SimpleRecord(b"x" * 10, timestamp=T0 + 9)], base_offset=1236,
                         partition_leader_epoch=3, compression=CompressionType.GZIP)
    path = tmp_path / "00000000000000001234.log"
    path.write_bytes(first + second)
    out, _ = _dump(path)
    assert out[1] == "Log starting offset: 1234"
    h2 = read_header(second)
    assert out[2].startswith("baseOffset: 1234 lastOffset: 1235 count: 2 ")
    assert " partitionLeaderEpoch: 3 " in out[2] and " position: 0 " in out[2]
    assert out[3].startswith("baseOffset: 1236 lastOffset: 1236 count: 1 ")
    assert f" position: {len(first)} CreateTime: {T0 + 9} size: {len(second)} magic: 2 compresscodec: gzip " \
           f"crc: {h2.crc} isvalid: true" in out[3]


def test_crc_is_printed_unsigned_and_isvalid_false_when_it_does_not_match(tmp_path):
    data = bytearray(_reference_batch())
    data[-1] ^= 0xFF  # flip a byte inside the CRC-covered records
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(bytes(data))
    out, _ = _dump(path)
    assert out[2].endswith("crc: 2424765203 isvalid: false")
    assert 2424765203 > 2**31  # the stored CRC does not fit a signed int: printing it unsigned matters


def test_deep_iteration_prints_one_record_line_per_record(tmp_path):
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(_reference_batch())
    out, _ = _dump(path, deep_iteration=True)
    assert out[3:] == [
        "| offset: 0 CreateTime: 1700000000000 keySize: 1 valueSize: 1 sequence: -1 headerKeys: []",
        "| offset: 1 CreateTime: 1700000000005 keySize: -1 valueSize: 5 sequence: -1 headerKeys: [h]",
    ]


def test_print_data_log_adds_key_and_payload_and_omits_a_null_key(tmp_path):
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(_reference_batch())
    out, _ = _dump(path, print_data_log=True)
    assert out[3].endswith("headerKeys: [] key: k payload: v")
    assert out[4].endswith("headerKeys: [h] payload: hello")


def test_idempotent_batch_prints_sequences_wrapping_past_int_max(tmp_path):
    batch = build_batch([SimpleRecord(b"a", timestamp=T0), SimpleRecord(b"b", timestamp=T0)],
                        producer_id=42, producer_epoch=1, base_sequence=2**31 - 1)
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(batch)
    out, _ = _dump(path, deep_iteration=True)
    assert "baseSequence: 2147483647 lastSequence: 0 producerId: 42 producerEpoch: 1 " in out[2]
    assert " sequence: 2147483647 " in out[3] and " sequence: 0 " in out[4]


def test_log_append_time_batch_says_LogAppendTime(tmp_path):
    batch = build_batch([SimpleRecord(b"a", timestamp=5)], timestamp_type=TimestampType.LOG_APPEND_TIME,
                        now_ms=T0)
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(batch)
    out, _ = _dump(path, deep_iteration=True)
    assert f" LogAppendTime: {read_header(batch).max_timestamp} size: " in out[2]
    assert out[3].startswith(f"| offset: 0 LogAppendTime: {read_header(batch).max_timestamp} ")


def test_commit_marker_prints_end_txn_marker(tmp_path):
    marker = build_batch([SimpleRecord(struct.pack(">hi", 0, 7), key=struct.pack(">hh", 0, 1), timestamp=T0)],
                         producer_id=9, producer_epoch=0, is_transactional=True, is_control=True)
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(marker)
    out, _ = _dump(path, print_data_log=True)
    assert "isTransactional: true isControl: true" in out[2]
    assert out[3].endswith("headerKeys: [] endTxnMarker: COMMIT coordinatorEpoch: 7")


def test_trailing_bytes_are_reported_by_file_name(tmp_path):
    path = tmp_path / "00000000000000000000.log"
    batch = _reference_batch()
    path.write_bytes(batch + batch[:30])
    out, _ = _dump(path)
    assert len([l for l in out if l.startswith("baseOffset:")]) == 1
    assert out[-1] == "Found 30 invalid bytes at the end of 00000000000000000000.log"


def test_zero_filled_tail_is_invalid_bytes_not_a_crash(tmp_path):
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(_reference_batch() + bytes(100))
    out, err = _dump(path)
    assert out[-1] == "Found 100 invalid bytes at the end of 00000000000000000000.log"
    assert any("minimum record overhead" in line for line in err)


def _index_bytes(entries, slots=0):
    return b"".join(struct.pack(">ii", r, p) for r, p in entries) + bytes(8 * slots)


def test_index_dump_adds_the_base_offset_from_the_file_name(tmp_path):
    path = tmp_path / "00000000000003257573.index"
    path.write_bytes(_index_bytes([(114, 17413), (170, 33770)]))
    out, _ = _dump(path)
    assert out == [f"Dumping {path}", "offset: 3257687 position: 17413", "offset: 3257743 position: 33770"]


def test_index_dump_stops_at_the_first_zero_slot_of_a_preallocated_file(tmp_path):
    path = tmp_path / "00000000000000000100.index"
    path.write_bytes(_index_bytes([(5, 700), (9, 1400)], slots=1000))
    out, _ = _dump(path)
    assert out[1:] == ["offset: 105 position: 700", "offset: 109 position: 1400"]


def test_empty_index_file_says_it_is_empty(tmp_path):
    path = tmp_path / "00000000000000000000.index"
    path.write_bytes(b"")
    out, _ = _dump(path)
    assert out == [f"Dumping {path}", f"{path} is empty."]


def test_time_index_dump_prints_timestamp_and_absolute_offset(tmp_path):
    path = tmp_path / "00000000000000000050.timeindex"
    path.write_bytes(struct.pack(">qi", T0 + 3, 4) + struct.pack(">qi", T0 + 9, 8) + bytes(12 * 50))
    out, _ = _dump(path)
    assert out[1:] == [f"timestamp: {T0 + 3} offset: 54", f"timestamp: {T0 + 9} offset: 58"]


def test_index_entry_that_does_not_point_at_its_batch_is_reported_on_stderr(tmp_path):
    log = tmp_path / "00000000000000000000.log"
    batch = _reference_batch()  # offsets 0..1 at position 0
    log.write_bytes(batch)
    index = tmp_path / "00000000000000000000.index"
    index.write_bytes(_index_bytes([(0, 0)]))  # the entry should say offset 1 (last offset of the batch)
    _, err = _dump(index)
    assert err == [f"Mismatches in :{index}", "  Index offset: 0, log offset: 1"]


def test_unknown_suffix_is_ignored_with_a_warning(tmp_path):
    path = tmp_path / "leader-epoch-checkpoint"
    path.write_text("0\n1\n0 0\n")
    other = tmp_path / "00000000000000000000.log.deleted"
    other.write_bytes(b"")
    out, err = _dump(path, other)
    assert out == [f"Dumping {path}", f"Dumping {other}"]
    assert err == [f"Ignoring unknown file {path}", f"Ignoring unknown file {other}"]


def test_missing_file_is_an_error_before_anything_is_printed(tmp_path):
    out = io.StringIO()
    with pytest.raises(FileNotFoundError, match="nope.index"):
        dump_files([str(tmp_path / "nope.index")], out, io.StringIO())
    assert out.getvalue() == ""


def test_index_readers_decode_big_endian_entries():
    assert read_offset_index(_index_bytes([(1, 2), (3, 4)], slots=2), 10) == [(11, 2), (13, 4)]
    assert read_time_index(struct.pack(">qi", -1, 0) + struct.pack(">qi", 7, 2), 10) == [(-1, 10), (7, 12)]


# ---- against files written by the engine's Log ------------------------------------------

def _engine_log(root, **config):
    from engine.clock import Scheduler, VirtualClock
    from engine.config import LogConfig
    from engine.disk import Disk
    from engine.events import EventLog
    from engine.log import Log
    clock = VirtualClock(T0)
    scheduler = Scheduler(clock)
    events = EventLog(clock)
    log = Log(Disk(root), "orders-0", "orders", 0, LogConfig().replace(**config), scheduler, events,
              hw_follows_leo=True, schedule_tasks=False)
    for i in range(30):
        log.append_as_leader([SimpleRecord(b"v" * (20 + i), key=b"k%d" % i, timestamp=T0 + 10 * i)
                              for _ in range(1 + i % 3)], leader_epoch=2)
        clock.advance(10)
    return log, events


def test_log_dump_lines_match_the_batches_the_log_appended(tmp_path):
    log, events = _engine_log(tmp_path, segment_bytes=2000, index_interval_bytes=300)
    appended = [ev for ev in events.of_kind("batch_appended") if ev.segment == 0]
    path = tmp_path / "orders-0" / "00000000000000000000.log"
    out, err = _dump(path)
    lines = [l for l in out if l.startswith("baseOffset:")]
    assert len(lines) == len(appended) and err == []
    data = path.read_bytes()
    for line, ev in zip(lines, appended):
        header = read_header(data, ev.position)
        assert line == (
            f"baseOffset: {ev.first_offset} lastOffset: {ev.last_offset} count: {ev.records} baseSequence: -1 "
            f"lastSequence: -1 producerId: -1 producerEpoch: -1 partitionLeaderEpoch: 2 isTransactional: false "
            f"isControl: false deleteHorizonMs: OptionalLong.empty position: {ev.position} "
            f"CreateTime: {ev.max_timestamp} size: {ev.size_bytes} magic: 2 compresscodec: none "
            f"crc: {header.crc} isvalid: true")
    log.close()


def _expected_index_lines(seg, index_path, time_path):
    offsets = [f"offset: {o} position: {p}" for o, p in zip(seg.offset_index.keys, seg.offset_index.values)]
    times = [f"timestamp: {t} offset: {o}" for t, o in zip(seg.time_index.keys, seg.time_index.values)]
    # Kafka's quirk, kept: a preallocated file with no entries still shows its zero slot 0.
    if not offsets:
        offsets = [f"offset: {seg.base_offset} position: 0"] if index_path.stat().st_size else [f"{index_path} is empty."]
    if not times and time_path.stat().st_size:
        times = [f"timestamp: 0 offset: {seg.base_offset}"]
    return offsets, times


def test_index_dumps_match_the_entries_the_log_wrote_active_and_closed(tmp_path):
    log, _ = _engine_log(tmp_path, segment_bytes=2000, index_interval_bytes=300)
    assert len(log.segments) >= 2 and log.active_segment.offset_index.entries >= 1
    for closed in (False, True):
        if closed:
            segments = list(log.segments)
            log.close()  # trims every index to its entries
        else:
            log.flush()  # index entries are buffered until a roll, flush or close
        for seg in log.segments if not closed else segments:
            index = tmp_path / "orders-0" / f"{seg.base_offset:020d}.index"
            timeindex = index.with_suffix(".timeindex")
            if closed:
                assert index.stat().st_size == 8 * seg.offset_index.entries
            offsets, times = _expected_index_lines(seg, index, timeindex)
            out, err = _dump(index)
            assert out[1:] == offsets and err == []
            out, err = _dump(timeindex)
            assert out[1:] == times and err == []


def test_directory_without_segment_files_is_an_error(tmp_path):
    from engine.errors import InvalidRequestError
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(InvalidRequestError, match="no segment files"):
        dump_files([str(tmp_path)], io.StringIO(), io.StringIO())


def test_skip_record_metadata_keeps_only_key_and_payload_like_kafka(tmp_path):
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(_reference_batch())
    out, _ = _dump(path, print_data_log=True, skip_record_metadata=True)
    assert out[3:] == ["| key: k payload: v", " payload: hello"]


def test_verify_index_only_prints_no_entries_but_still_reports_mismatches(tmp_path):
    (tmp_path / "00000000000000000000.log").write_bytes(_reference_batch())
    index = tmp_path / "00000000000000000000.index"
    index.write_bytes(_index_bytes([(0, 0)]))
    out, err = _dump(index, verify_index_only=True)
    assert out == [f"Dumping {index}"]
    assert err == [f"Mismatches in :{index}", "  Index offset: 0, log offset: 1"]
