"""Lesson 1's engine: a topic, a producer with Kafka's default partitioner, two consumers.
Seed 001 ("ordering"): order holds within a partition only; offsets start at 0 and grow by 1."""
import random

import pytest

from engine.clock import Scheduler, VirtualClock
from engine.config import LogConfig
from engine.disk import Disk
from engine.errors import InvalidRequestError
from engine.events import EventLog
from engine.partitioner import partition_for_key
from engine.topic import Producer, SimpleConsumer, Topic


@pytest.fixture
def topic(tmp_path):
    clock = VirtualClock()
    sched = Scheduler(clock)
    t = Topic(Disk(tmp_path), "orders", 3, LogConfig(), sched, EventLog(clock))
    yield t
    t.close()


def test_keyed_records_land_on_murmur2_partition_in_send_order(topic):
    prod = Producer(topic, random.Random(1), batch_size=10_000)
    for i in range(30):
        prod.send(f"v{i}".encode(), key=f"user-{i % 4}".encode())
    prod.flush()
    seen = {}
    for p, log in enumerate(topic.logs):
        for r in log.records():
            assert partition_for_key(r.key, 3) == p
            seen.setdefault(r.key, []).append(int(r.value[1:]))
    for key, values in seen.items():
        assert values == sorted(values)   # per key (so per partition) send order kept
    # offsets in each partition start at 0 and grow by one
    for log in topic.logs:
        assert [r.offset for r in log.records()] == list(range(log.log_end_offset))


def test_keyless_records_fill_one_partition_per_batch(topic):
    prod = Producer(topic, random.Random(4), batch_size=100)
    parts = [prod.send(b"x" * 20) for _ in range(12)]   # 30 bytes each: a batch is full after 4
    assert [len(set(parts[i:i + 4])) for i in range(0, 12, 4)] == [1, 1, 1]
    assert parts[0] != parts[4] and parts[4] != parts[8]
    sent = topic.events.of_kind("producer_batch_sent")
    assert [s.records for s in sent] == [4, 4, 4]
    assert all(s.reason == "batch.size reached" for s in sent)


def test_two_consumers_agree_per_partition_but_not_across(topic):
    prod = Producer(topic, random.Random(2), batch_size=10_000)
    for i in range(24):
        prod.send(f"m{i:02d}".encode(), key=f"k{i % 6}".encode())
    prod.flush()
    a = SimpleConsumer("A", topic, [0, 1, 2])
    b = SimpleConsumer("B", topic, [2, 1, 0])
    got_a = a.poll(500) + a.poll(500)
    got_b = b.poll(500) + b.poll(500)
    assert sorted(got_a) == sorted(got_b) and len(got_a) == 24
    assert [x[3] for x in got_a] != [x[3] for x in got_b]   # global order differs
    for p in range(3):
        assert [x for x in got_a if x[0] == p] == [x for x in got_b if x[0] == p]


def test_consumer_reads_from_its_position_and_seek_is_checked(topic):
    prod = Producer(topic, random.Random(0), batch_size=10_000)
    for i in range(5):
        prod.send(f"v{i}".encode(), partition=1)
    prod.flush()
    c = SimpleConsumer("A", topic, [1])
    assert [x[1] for x in c.poll(2)] == [0, 1]
    assert [x[1] for x in c.poll(10)] == [2, 3, 4]
    assert c.poll(10) == []
    c.seek(1, 3)
    assert [x[1] for x in c.poll(10)] == [3, 4]
    with pytest.raises(InvalidRequestError):
        c.seek(1, 99)
    with pytest.raises(InvalidRequestError):
        SimpleConsumer("B", topic, [7])
