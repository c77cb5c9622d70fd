"""KIP-227 fetch sessions on the wire listener (Fetch v7+), served by the engine's one session
cache (engine/cluster/fetch_session.py): kafka-python opens a session and then sends
incremental fetches that carry no partitions while nothing changes; librdkafka 2.16 fetches
without a session (session id 0, epoch -1) and is served as before; the handler answers only
changed partitions on an incremental fetch and refuses unknown sessions and wrong epochs with
Kafka's error codes (70, 71)."""
from __future__ import annotations

import time

from wire.handlers import Context, fetch
from wire.protocol import parse_request
from wire.server import frame_bytes

TOPIC = "sessions"


def _fetches(listener, since: int) -> list[dict]:
    out = []
    for e in list(listener.server.recorder.entries)[since:]:
        if e.get("kind") == "request" and e["api_key"] == 1:
            out.append(parse_request(frame_bytes(e)).body)
    return out


def _ready(listener, topic, partitions=3):
    listener.call(lambda s: s.create_topic(topic, partitions, 3))
    end = time.time() + 20
    while time.time() < end:
        if listener.call(lambda s: all(
                (p := s.cluster.replica(pm.leader, topic, pm.partition)) is not None and p.role == "leader"
                for pm in s.cluster.controller.topics[topic].partitions if pm.leader >= 0)
                and all(pm.leader >= 0 for pm in s.cluster.controller.topics[topic].partitions)):
            return
        time.sleep(0.1)
    raise AssertionError("no leaders")


def _produce(boot, topic, partition, n, tag):
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": boot, "acks": "all"})
    for i in range(n):
        p.produce(topic, f"{tag}-{i}".encode(), partition=partition)
    assert p.flush(20) == 0


def test_kafka_python_fetches_incrementally_and_gets_every_record(listener):
    from kafka import KafkaConsumer, TopicPartition
    topic = TOPIC + "-kp"
    _ready(listener, topic)
    boot = listener.bootstrap
    _produce(boot, topic, 0, 5, "a")
    since = len(listener.server.recorder.entries)
    c = KafkaConsumer(bootstrap_servers=boot, auto_offset_reset="earliest", enable_auto_commit=False,
                      fetch_max_wait_ms=50)
    c.assign([TopicPartition(topic, p) for p in range(3)])
    got = []
    end = time.time() + 20
    produced_more = False
    idle_until = None
    while time.time() < end and (idle_until is None or time.time() < idle_until):
        if len(got) >= 8 and idle_until is None:
            idle_until = time.time() + 1.0     # keep fetching a while with nothing new
        for tp, msgs in c.poll(100).items():
            got.extend((m.partition, m.value) for m in msgs)
        if len(got) == 5 and not produced_more:
            _produce(boot, topic, 0, 3, "b")        # new records reach an open session
            produced_more = True
    c.close()
    assert sorted(got) == sorted([(0, f"a-{i}".encode()) for i in range(5)] + [(0, f"b-{i}".encode()) for i in range(3)])
    fetches = [f for f in _fetches(listener, since) if any(t["topic"] == topic for t in f["topics"])
               or f["session_id"] != 0]
    full = [f for f in fetches if f["session_id"] == 0 and f["session_epoch"] == 0]
    incremental = [f for f in fetches if f["session_id"] != 0 and f["session_epoch"] > 0]
    assert full, "kafka-python opens a session with a full fetch"
    assert len(incremental) > len(full), "then fetches incrementally"
    assert any(sum(len(t["partitions"]) for t in f["topics"]) == 0 for f in incremental), \
        "an incremental fetch with nothing changed names no partition"
    # The broker holds the sessions (kafka-python never closes them; they wait for eviction).
    assert listener.call(lambda s: sum(b.fetch_sessions.size for b in s.cluster.brokers.values())) >= 1


def test_librdkafka_fetches_without_a_session_and_is_served(listener):
    from confluent_kafka import Consumer, TopicPartition
    topic = TOPIC + "-rd"
    _ready(listener, topic)
    boot = listener.bootstrap
    _produce(boot, topic, 1, 4, "r")
    since = len(listener.server.recorder.entries)
    c = Consumer({"bootstrap.servers": boot, "group.id": "sessions", "enable.auto.commit": False,
                  "fetch.wait.max.ms": 50})
    c.assign([TopicPartition(topic, p, 0) for p in range(3)])
    got, end = [], time.time() + 20
    while len(got) < 4 and time.time() < end:
        m = c.poll(0.1)
        if m is not None and not m.error():
            got.append(m.value())
    c.close()
    assert sorted(got) == [f"r-{i}".encode() for i in range(4)]
    fetches = _fetches(listener, since)
    assert fetches and all(f["session_id"] == 0 and f["session_epoch"] == -1 for f in fetches)


class _Node:
    id = 1_000_000


def _request(session_id, epoch, parts, forgotten=()):
    by_topic: dict[str, list] = {}
    for (topic, p), offset in parts.items():
        by_topic.setdefault(topic, []).append({"partition": p, "fetch_offset": offset, "partition_max_bytes": 1 << 20,
                                               "current_leader_epoch": -1, "log_start_offset": -1,
                                               "last_fetched_epoch": -1})
    forget: dict[str, list] = {}
    for topic, p in forgotten:
        forget.setdefault(topic, []).append(p)
    return {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 50 << 20, "isolation_level": 0,
            "session_id": session_id, "session_epoch": epoch,
            "topics": [{"topic": t, "partitions": ps} for t, ps in by_topic.items()],
            "forgotten_topics_data": [{"topic": t, "partitions": ps} for t, ps in forget.items()]}


def test_incremental_answers_carry_only_changed_partitions_and_session_errors_are_kafkas(listener):
    topic = TOPIC + "-raw"
    _ready(listener, topic)
    _produce(listener.bootstrap, topic, 0, 2, "x")

    def scenario(server):
        cluster = server.cluster
        leaders = {pm.partition: pm.leader for pm in cluster.controller.topics[topic].partitions}
        # Every partition led by one broker makes one session; take the leader of partition 0
        # and the partitions it leads.
        broker = cluster.brokers[leaders[0]]
        mine = sorted(p for p, b in leaders.items() if b == broker.id)
        ctx = Context(server, broker, _Node())
        out = []

        def call(req):
            fetch(ctx, 12, req, out.append)
            return out[-1]

        offsets = {(topic, p): 0 for p in mine}
        first = call(_request(0, 0, offsets))
        sid = first["session_id"]
        answered_first = [(t["topic"], p["partition_index"]) for t in first["responses"] for p in t["partitions"]]
        # Then: nothing changed (the fetcher moved partition 0 on past the two records).
        offsets[(topic, 0)] = 2
        second = call(_request(sid, 1, {(topic, 0): 2}))
        third = call(_request(sid, 2, {}))
        wrong_epoch = call(_request(sid, 2, {}))
        unknown = call(_request(sid + 1, 1, {}))
        return mine, sid, answered_first, second, third, wrong_epoch, unknown

    mine, sid, answered_first, second, third, wrong_epoch, unknown = listener.call(scenario)
    assert sid != 0
    assert answered_first == [(topic, p) for p in mine]              # a full fetch answers everything
    assert second["error_code"] == 0 and second["session_id"] == sid
    # Partition 0's HW did not move and there is nothing past offset 2: nothing to say, and the
    # other partitions never changed either.
    assert second["responses"] == [] and third["responses"] == []
    assert (wrong_epoch["error_code"], wrong_epoch["session_id"], wrong_epoch["responses"]) == (71, 0, [])
    assert (unknown["error_code"], unknown["session_id"], unknown["responses"]) == (70, 0, [])
