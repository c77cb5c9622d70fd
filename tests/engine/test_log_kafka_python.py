"""kafka-python's own record reader decodes every .log file we write."""
import pytest

from kafka.record.memory_records import MemoryRecords

from engine.clock import Scheduler, VirtualClock
from engine.config import LogConfig
from engine.disk import Disk
from engine.events import EventLog
from engine.log import Log
from engine.records import CompressionType, Header, SimpleRecord


def kafka_python_records(data):
    out = []
    mr = MemoryRecords(data)
    while mr.has_next():
        batch = mr.next_batch()
        assert batch.validate_crc()
        for rec in batch:
            out.append((rec.offset, rec.timestamp, rec.key, rec.value, [(k, v) for k, v in rec.headers]))
    assert mr.valid_bytes() == len(data) if hasattr(mr, "valid_bytes") else True
    return out


@pytest.fixture
def log(tmp_path):
    clock = VirtualClock(1_700_000_000_000)
    return Log(Disk(tmp_path), "orders-0", "orders", 0, LogConfig(segment_bytes=1500, index_interval_bytes=200),
               Scheduler(clock), EventLog(clock), hw_follows_leo=True)


def test_every_segment_decodes_to_the_same_records(log):
    codecs = list(CompressionType)
    for i in range(60):
        recs = [SimpleRecord(b"value-%d-%d" % (i, j) * (1 + j), key=None if j % 3 == 0 else b"key-%d" % j,
                             timestamp=1_700_000_000_000 + i * 10 + j,
                             headers=(Header("h", b"%d" % j),) if j % 2 else ())
                for j in range(1 + i % 4)]
        log.append_as_leader(recs, i // 20, compression=codecs[i % len(codecs)])
    assert len(log.segments) >= 3
    ours = [(r.offset, r.timestamp, r.key, r.value, [(h.key, h.value) for h in r.headers]) for r in log.records()]
    theirs = []
    for seg in log.segments:
        data = log.disk.read_all(seg.log_rel)
        decoded = kafka_python_records(data)
        assert decoded and decoded[0][0] >= seg.base_offset
        theirs.extend(decoded)
    assert theirs == ours
    assert len(ours) == sum(1 + i % 4 for i in range(60))


def test_follower_copies_decode_identically(log, tmp_path):
    for i in range(20):
        log.append_as_leader([SimpleRecord(b"x%d" % i)], 3, compression=CompressionType.GZIP if i % 2 else 0)
    clock = VirtualClock(0)
    follower = Log(Disk(tmp_path / "f"), "orders-0", "orders", 0, log.config, Scheduler(clock), EventLog(clock))
    offset = 0
    while offset < log.log_end_offset:
        fetched = log.read(offset, max_bytes=300, trace=False)
        follower.append_as_follower(fetched.records)
        offset = follower.log_end_offset
    a = b"".join(log.disk.read_all(s.log_rel) for s in log.segments)
    b = b"".join(follower.disk.read_all(s.log_rel) for s in follower.segments)
    assert a == b
    assert kafka_python_records(b) == kafka_python_records(a)
