"""The analytics' pure part: partition directories found, batches decoded, damage reported."""
import pytest
from kafka.record.memory_records import MemoryRecords

from engine.clock import Scheduler, VirtualClock
from engine.config import LogConfig
from engine.disk import Disk
from engine.events import EventLog
from engine.lab.logscan import NotALogDirError, find_partition_dirs, scan_file, scan_log, segment_files
from engine.log import Log
from engine.records import CompressionType, SimpleRecord


def write_log(root, name="orders-0", batches=30, segment_bytes=1200):
    clock = VirtualClock(1_700_000_000_000)
    topic, _, p = name.rpartition("-")
    log = Log(Disk(root), name, topic, int(p), LogConfig(segment_bytes=segment_bytes, index_interval_bytes=150),
              Scheduler(clock), EventLog(clock), hw_follows_leo=True)
    codecs = [CompressionType.NONE, CompressionType.GZIP, CompressionType.LZ4]
    for i in range(batches):
        recs = [SimpleRecord(b"v%d-%d" % (i, j), key=b"k%d" % ((i + j) % 7), timestamp=1_700_000_000_000 + i)
                for j in range(3)]
        log.append_as_leader(recs, 0, compression=codecs[i % 3])
    log.flush()
    log.close()
    return log


def test_partition_directories_are_found_at_any_depth(tmp_path):
    write_log(tmp_path / "broker-1")
    write_log(tmp_path / "broker-2", "payments-3")
    (tmp_path / "broker-2" / "not-a-partition").mkdir()
    found = find_partition_dirs(str(tmp_path))
    assert [(t, p) for _, t, p in found] == [("orders", 0), ("payments", 3)]


def test_a_directory_without_partitions_is_not_a_log_dir(tmp_path):
    (tmp_path / "orders-0").mkdir()
    (tmp_path / "orders-0" / "notes.txt").write_text("hi")
    with pytest.raises(NotALogDirError, match="is not a Kafka log directory"):
        find_partition_dirs(str(tmp_path))
    with pytest.raises(NotALogDirError, match="is not a directory"):
        find_partition_dirs(str(tmp_path / "missing"))


def test_every_segment_decodes_like_kafka_python_decodes_it(tmp_path):
    log = write_log(tmp_path)
    total = 0
    for path, base, suffix in segment_files(str(tmp_path / "orders-0")):
        if suffix != "log":
            continue
        data = open(path, "rb").read()
        row = scan_file("file:" + path, data)
        mr, offsets, batches = MemoryRecords(data), [], 0
        while mr.has_next():
            b = mr.next_batch()
            batches += 1
            offsets += [r.offset for r in b]
        assert (row["batches"], row["records"]) == (batches, len(offsets))
        assert (row["first_offset"], row["last_offset"]) == (offsets[0], offsets[-1]) and row["base_offset"] == base
        assert row["problems"] == [] and row["valid_bytes"] == len(data)
        total += row["records"]
    assert total == log.log_end_offset == 90


def test_a_cut_and_a_corrupted_batch_are_reported_with_file_and_position_not_raised(tmp_path):
    write_log(tmp_path, batches=6, segment_bytes=1 << 20)
    data = bytearray(open(tmp_path / "orders-0" / "00000000000000000000.log", "rb").read())
    clean = scan_log(bytes(data), "x.log")
    second = 12 + int.from_bytes(data[8:12], "big")        # where batch 2 starts
    data[second + 70] ^= 0xFF                              # a flipped byte inside batch 2 (CRC fails)
    cut = bytes(data[:-10])                                # the last batch loses its tail
    row = scan_log(cut, "x.log")
    assert [(p["kind"], p["position"]) for p in row["problems"]] == [
        ("corrupt", second), ("truncated", len(data) - _last_size(data))]
    assert row["batches"] == clean["batches"] - 2
    assert "CRC" in row["problems"][0]["reason"] and row["problems"][0]["file"] == "x.log"


def _last_size(data):
    pos, last = 0, 0
    while pos < len(data):
        last = 12 + int.from_bytes(data[pos + 8:pos + 12], "big")
        pos += last
    return last


def test_zero_padding_of_a_preallocated_segment_is_not_damage(tmp_path):
    write_log(tmp_path, batches=3, segment_bytes=1 << 20)
    data = open(tmp_path / "orders-0" / "00000000000000000000.log", "rb").read()
    row = scan_log(data + bytes(4096), "x.log")
    assert row["problems"] == [] and row["batches"] == 3


def test_index_entries_and_their_spacing(tmp_path):
    write_log(tmp_path, batches=20, segment_bytes=1 << 20)
    d = tmp_path / "orders-0"
    idx = scan_file(str(d / "00000000000000000000.index"), open(d / "00000000000000000000.index", "rb").read())
    assert idx["index_entries"] > 2
    assert idx["index_spacing_bytes"] >= 150                # index.interval.bytes


def test_scan_paths_names_a_file_it_cannot_see_and_what_a_cluster_needs(tmp_path):
    from engine.lab.logscan import NOT_VISIBLE, scan_paths

    missing = str(tmp_path / "orders-0" / "00000000000000000000.log")
    with pytest.raises(FileNotFoundError) as info:
        list(scan_paths([missing], ["file"]))
    assert str(info.value).startswith(f"{NOT_VISIBLE} {missing} on ") and "same path" in str(info.value)
