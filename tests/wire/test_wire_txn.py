"""Transactions of real clients on the engine's transaction coordinator: one committed and
one aborted; read_committed consumers see only the first, read_uncommitted both, and the
partitions' segment files hold the COMMIT and ABORT markers."""
from __future__ import annotations

import time
from pathlib import Path

import pytest

from engine.records import iter_batches

PARTITIONS = 2


def confluent_transactions(boot, topic, tid):
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": boot, "transactional.id": tid})
    p.init_transactions(30)
    for outcome in ("committed", "aborted"):
        p.begin_transaction()
        for i in range(6):
            p.produce(topic, f"{outcome}-{i}".encode(), f"k{i}".encode(), partition=i % PARTITIONS)
        p.flush(10)
        (p.commit_transaction if outcome == "committed" else p.abort_transaction)(30)


def kafka_python_transactions(boot, topic, tid):
    from kafka import KafkaProducer
    p = KafkaProducer(bootstrap_servers=boot, transactional_id=tid)
    p.init_transactions()
    for outcome in ("committed", "aborted"):
        p.begin_transaction()
        for i in range(6):
            p.send(topic, key=f"k{i}".encode(), value=f"{outcome}-{i}".encode(), partition=i % PARTITIONS)
        p.flush()
        (p.commit_transaction if outcome == "committed" else p.abort_transaction)()
    p.close()


def confluent_read(boot, topic, isolation):
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": boot, "group.id": f"txn-{isolation}", "isolation.level": isolation,
                  "enable.auto.commit": False})
    c.assign([TopicPartition(topic, q, 0) for q in range(PARTITIONS)])
    want = 6 if isolation == "read_committed" else 12
    got, end = [], time.time() + 15
    while len(got) < want and time.time() < end:
        m = c.poll(0.2)
        if m is not None and not m.error():
            got.append(m.value())
    # read a little longer: nothing more may come
    end = time.time() + 0.5
    while time.time() < end:
        m = c.poll(0.1)
        if m is not None and not m.error():
            got.append(m.value())
    c.close()
    return sorted(got)


def kafka_python_read(boot, topic, isolation):
    from kafka import KafkaConsumer, TopicPartition
    c = KafkaConsumer(bootstrap_servers=boot, isolation_level=isolation, auto_offset_reset="earliest",
                      enable_auto_commit=False)
    c.assign([TopicPartition(topic, q) for q in range(PARTITIONS)])
    got, end = [], time.time() + 5
    while time.time() < end:
        for msgs in c.poll(200).values():
            got.extend(m.value for m in msgs)
    c.close()
    return sorted(got)


@pytest.mark.parametrize("producer,reader", [(confluent_transactions, confluent_read),
                                             (kafka_python_transactions, kafka_python_read)],
                         ids=["confluent-kafka", "kafka-python"])
def test_read_committed_sees_the_committed_transaction_only(listener, producer, reader):
    topic = f"txn-{producer.__name__}"
    listener.call(lambda s: s.create_topic(topic, PARTITIONS, 3))
    time.sleep(0.3)
    producer(listener.bootstrap, topic, f"tid-{topic}")
    committed = sorted(f"committed-{i}".encode() for i in range(6))
    aborted = sorted(f"aborted-{i}".encode() for i in range(6))
    assert reader(listener.bootstrap, topic, "read_committed") == committed
    assert reader(listener.bootstrap, topic, "read_uncommitted") == sorted(committed + aborted)

    def markers(server):
        out = []
        for pm in server.cluster.controller.topics[topic].partitions:
            part_dir = Path(server.data_dir) / "cluster" / f"broker-{pm.leader}" / f"{topic}-{pm.partition}"
            for seg in sorted(part_dir.glob("*.log")):
                out += [b.records[0].key[2:4] for _, b in iter_batches(seg.read_bytes()) if b.is_control]
        return out
    # a control record's key is version (int16) then type (int16): 0 = ABORT, 1 = COMMIT
    assert sorted(listener.call(markers)) == [b"\x00\x00"] * PARTITIONS + [b"\x00\x01"] * PARTITIONS


def test_consume_transform_produce_commits_the_input_offsets_with_the_output(listener):
    """confluent-kafka: a group consumer reads the input, a transactional producer writes the
    transformed records and sends the consumer's positions to the transaction
    (AddOffsetsToTxn, TxnOffsetCommit); after the commit the group's offsets are the input's
    end and a read_committed reader sees the output."""
    from confluent_kafka import Consumer, Producer, TopicPartition
    from engine.cluster.consumer import group_service
    src, dst, group = "ctp-in", "ctp-out", "ctp"
    listener.call(lambda s: (s.create_topic(src, 1, 3), s.create_topic(dst, 1, 3)))
    time.sleep(0.3)
    feed = Producer({"bootstrap.servers": listener.bootstrap})
    for i in range(8):
        feed.produce(src, f"in-{i}".encode(), partition=0)
    assert feed.flush(10) == 0
    consumer = Consumer({"bootstrap.servers": listener.bootstrap, "group.id": group, "enable.auto.commit": False,
                         "auto.offset.reset": "earliest", "isolation.level": "read_committed"})
    consumer.subscribe([src])
    producer = Producer({"bootstrap.servers": listener.bootstrap, "transactional.id": "ctp-tx"})
    producer.init_transactions(30)
    got, end = [], time.time() + 20
    while len(got) < 8 and time.time() < end:
        m = consumer.poll(0.2)
        if m is not None and not m.error():
            got.append(m.value())
    assert len(got) == 8
    producer.begin_transaction()
    for v in got:
        producer.produce(dst, v.replace(b"in-", b"out-"), partition=0)
    producer.send_offsets_to_transaction(consumer.position(consumer.assignment()),
                                         consumer.consumer_group_metadata(), 30)
    producer.commit_transaction(30)
    consumer.close()
    assert listener.call(lambda s: group_service(s.cluster).committed(group)) == {(src, 0): 8}
    assert confluent_read_topic(listener.bootstrap, dst) == sorted(f"out-{i}".encode() for i in range(8))


def confluent_read_topic(boot, topic):
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": boot, "group.id": "ctp-check", "isolation.level": "read_committed",
                  "enable.auto.commit": False})
    c.assign([TopicPartition(topic, 0, 0)])
    got, end = [], time.time() + 10
    while len(got) < 8 and time.time() < end:
        m = c.poll(0.2)
        if m is not None and not m.error():
            got.append(m.value())
    c.close()
    return sorted(got)
