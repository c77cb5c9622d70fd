"""Real Kafka clients against the wire listener: confluent-kafka (librdkafka 2.16),
kafka-python, aiokafka and kcat (librdkafka 2.0) each produce keyed records with acks 0,
1 and all to a 3-partition topic replicated 3 ways, consume them back, and the records
are checked in the partitions' segment files on disk."""
from __future__ import annotations

import asyncio
import shutil
import subprocess
import time

import pytest

from wire_helpers import segment_records

PARTITIONS = 3
PER_PARTITION = 7


def _records(tag: str) -> list[tuple[int, bytes, bytes]]:
    return [(i % PARTITIONS, f"key-{tag}-{i}".encode(), f"value-{tag}-{i}".encode())
            for i in range(PARTITIONS * PER_PARTITION)]


# ---- the four clients -----------------------------------------------------------------------

def confluent_produce(boot, topic, records, acks):
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": boot, "acks": str(acks), "linger.ms": 5})
    errors = []
    for part, key, value in records:
        p.produce(topic, value, key, partition=part, on_delivery=lambda e, m: e and errors.append(e))
    assert p.flush(20) == 0
    assert errors == []


def confluent_consume(boot, topic, count):
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": boot, "group.id": "wire-tests", "enable.auto.commit": False})
    c.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    got, end = [], time.time() + 20
    while len(got) < count and time.time() < end:
        m = c.poll(0.2)
        if m is not None and not m.error():
            got.append((m.partition(), m.offset(), m.key(), m.value()))
    c.close()
    return got


def kafka_python_produce(boot, topic, records, acks):
    from kafka import KafkaProducer
    p = KafkaProducer(bootstrap_servers=boot, acks=acks if acks == "all" else int(acks), linger_ms=5)
    futures = [p.send(topic, key=key, value=value, partition=part) for part, key, value in records]
    p.flush(20)
    if acks != 0:
        for f in futures:
            assert f.get(5).offset >= 0
    p.close()


def kafka_python_consume(boot, topic, count):
    from kafka import KafkaConsumer, TopicPartition
    c = KafkaConsumer(bootstrap_servers=boot, auto_offset_reset="earliest", enable_auto_commit=False)
    c.assign([TopicPartition(topic, p) for p in range(PARTITIONS)])
    got, end = [], time.time() + 20
    while len(got) < count and time.time() < end:
        for tp, msgs in c.poll(200).items():
            got.extend((m.partition, m.offset, m.key, m.value) for m in msgs)
    c.close()
    return got


def aiokafka_produce(boot, topic, records, acks):
    from aiokafka import AIOKafkaProducer

    async def run():
        p = AIOKafkaProducer(bootstrap_servers=boot, acks=acks if acks == "all" else int(acks), linger_ms=5)
        await p.start()
        try:
            futures = [await p.send(topic, key=key, value=value, partition=part) for part, key, value in records]
            for f in futures:
                await f
        finally:
            await p.stop()
    asyncio.run(run())


def aiokafka_consume(boot, topic, count):
    from aiokafka import AIOKafkaConsumer, TopicPartition

    async def run():
        c = AIOKafkaConsumer(bootstrap_servers=boot, auto_offset_reset="earliest", enable_auto_commit=False)
        await c.start()
        got = []
        try:
            c.assign([TopicPartition(topic, p) for p in range(PARTITIONS)])
            end = time.time() + 20
            while len(got) < count and time.time() < end:
                for tp, msgs in (await c.getmany(timeout_ms=200)).items():
                    got.extend((m.partition, m.offset, m.key, m.value) for m in msgs)
        finally:
            await c.stop()
        return got
    return asyncio.run(run())


def kcat_produce(boot, topic, records, acks):
    for part in range(PARTITIONS):
        lines = b"".join(key + b":" + value + b"\n" for p, key, value in records if p == part)
        subprocess.run(["kcat", "-P", "-b", boot, "-t", topic, "-p", str(part), "-K:", "-X", f"acks={acks}"],
                       input=lines, check=True, timeout=30, capture_output=True)


def kcat_consume(boot, topic, count):
    got = []
    for part in range(PARTITIONS):
        out = subprocess.run(["kcat", "-C", "-b", boot, "-t", topic, "-p", str(part), "-o", "beginning", "-e",
                              "-q", "-f", "%k\t%s\t%o\n"], check=True, timeout=30, capture_output=True).stdout
        for line in out.splitlines():
            key, value, offset = line.split(b"\t")
            got.append((part, int(offset), key, value))
    return got


CLIENTS = {
    "confluent-kafka": (confluent_produce, confluent_consume),
    "kafka-python": (kafka_python_produce, kafka_python_consume),
    "aiokafka": (aiokafka_produce, aiokafka_consume),
    "kcat": (kcat_produce, kcat_consume),
}


def _leaders_ready(server, topic):
    for pm in server.cluster.controller.topics[topic].partitions:
        part = server.cluster.replica(pm.leader, topic, pm.partition) if pm.leader >= 0 else None
        if part is None or part.role != "leader" or len(part.isr) < 3:
            return False
    return True


def _high_watermarks(server, topic):
    out = []
    for pm in server.cluster.controller.topics[topic].partitions:
        part = server.cluster.replica(pm.leader, topic, pm.partition) if pm.leader >= 0 else None
        out.append(part.hw if part is not None else 0)
    return out


@pytest.mark.parametrize("acks", [0, 1, "all"])
@pytest.mark.parametrize("client", list(CLIENTS))
def test_client_produces_with_acks_and_consumes_back_and_the_segments_hold_the_records(listener, client, acks):
    if client == "kcat" and shutil.which("kcat") is None:
        pytest.skip("kcat is not installed (make system-deps)")
    acks_name = "all" if acks == "all" else str(acks)
    topic = f"{client}-acks-{acks_name}"
    listener.call(lambda s: s.create_topic(topic, PARTITIONS, 3))
    # acks=0 loses what reaches a broker before it learns it leads (as on Kafka): wait for it.
    end = time.time() + 10
    while not listener.call(lambda s: _leaders_ready(s, topic)) and time.time() < end:
        time.sleep(0.02)
    records = _records(topic)
    produce, consume = CLIENTS[client]
    produce(listener.bootstrap, topic, records, -1 if acks == "all" and client == "kcat" else acks)
    # acks=0 is never answered: wait for the leaders' HW to cover what was sent.
    end = time.time() + 10
    while sum(listener.call(lambda s: _high_watermarks(s, topic))) < len(records) and time.time() < end:
        time.sleep(0.05)
    got = consume(listener.bootstrap, topic, len(records))
    by_partition = {p: [(k, v) for q, k, v in records if q == p] for p in range(PARTITIONS)}
    for p in range(PARTITIONS):
        consumed = sorted((o, k, v) for q, o, k, v in got if q == p)
        assert [(k, v) for _, k, v in consumed] == by_partition[p]
        assert [o for o, _, _ in consumed] == list(range(PER_PARTITION))

    def on_disk(server):
        out = {}
        for pm in server.cluster.controller.topics[topic].partitions:
            replicas = pm.isr if acks == "all" else (pm.leader,)
            out[pm.partition] = {b: segment_records(server.data_dir, b, topic, pm.partition) for b in replicas}
        return out
    for p, replicas in listener.call(on_disk).items():
        for broker, rows in replicas.items():
            assert [(k, v) for _, k, v in rows] == by_partition[p], f"broker {broker} {topic}-{p}"


def test_the_same_keyed_workload_gives_the_same_records_per_partition_as_librdkafkas_mock(listener):
    """librdkafka's default partitioner on the same keys, against its mock cluster (which
    auto-creates topics with 4 partitions) and against us: each partition gets the same
    records in the same order."""
    from confluent_kafka import Consumer, Producer, TopicPartition
    topic, parts = "same-as-mock", 4
    listener.call(lambda s: s.create_topic(topic, parts, 3))
    end = time.time() + 10
    while not listener.call(lambda s: _leaders_ready(s, topic)) and time.time() < end:
        time.sleep(0.02)
    workload = [(f"key-{i % 7}".encode(), f"value-{i}".encode()) for i in range(60)]

    def run(conf: dict) -> dict:
        p = Producer({"linger.ms": 5, **conf})
        for key, value in workload:
            p.produce(topic, value, key)
        assert p.flush(20) == 0
        brokers = ",".join(f"{b.host}:{b.port}" for b in p.list_topics(topic, timeout=10).brokers.values())
        c = Consumer({"bootstrap.servers": brokers, "group.id": "same", "enable.auto.commit": False})
        c.assign([TopicPartition(topic, q, 0) for q in range(parts)])
        got: dict = {q: [] for q in range(parts)}
        deadline = time.time() + 20
        while sum(map(len, got.values())) < len(workload) and time.time() < deadline:
            m = c.poll(0.2)
            if m is not None and not m.error():
                got[m.partition()].append((m.offset(), m.key(), m.value()))
        c.close()
        return {q: [(k, v) for _, k, v in sorted(rows)] for q, rows in got.items()}
    mock = run({"test.mock.num.brokers": 3, "bootstrap.servers": ""})
    ours = run({"bootstrap.servers": listener.bootstrap})
    assert sum(map(len, mock.values())) == len(workload)
    assert ours == mock
