"""The engine's link faults apply to a real client's connections: each is its own node."""
from __future__ import annotations

import time

from wire.threaded import Listener


def test_an_idempotent_retry_after_a_lost_response_is_not_written_twice(tmp_path):
    """kafka-python (idempotent, acks=all): the leader's link back to the producer's
    connection is cut, so the produce is appended but its answer is lost; the client times
    out, reconnects (a new node, whose links are healthy) and retries; the leader sees the
    same producer id and sequence and answers with the first offsets."""
    from kafka import KafkaProducer
    lst = Listener(tmp_path).start()
    try:
        lst.call(lambda s: s.create_topic("idem", 1, 3))
        time.sleep(0.3)
        p = KafkaProducer(bootstrap_servers=lst.bootstrap, acks="all", enable_idempotence=True,
                          request_timeout_ms=1500, retry_backoff_ms=50)
        assert p.send("idem", b"first", partition=0).get(10).offset == 0
        leader = lst.call(lambda s: s.cluster.controller.topics["idem"].partitions[0].leader)
        nodes = lst.call(lambda s: [n for n, (ss, _) in s._sessions.items() if ss.broker_id == leader])
        lst.call(lambda s: [s.cluster.network.cut(leader, n, False) for n in nodes])
        assert p.send("idem", b"second", partition=0).get(20).offset == 1
        p.close()
        values = lst.call(lambda s: [v for _, v, _ in s.cluster.log_values(leader, "idem", 0)])
        assert values == [b"first", b"second"]
        requests = [e for e in lst.call(lambda s: list(s.recorder.entries)) if e.get("api_key") == 0]
        assert len({e["node"] for e in requests}) == 2          # the retry came on a new connection
    finally:
        lst.stop()


def test_the_leader_crashes_mid_stream_and_the_producer_fails_over_without_losing_an_acked_record(tmp_path):
    """confluent-kafka (idempotent, acks=all) keeps producing while the partition's leader
    crashes: its connections die with it, the controller moves leadership after the broker's
    session times out, the client refreshes Metadata and resends to the new leader. Every
    record it was told is written is in the new leader's log, once; the engine's checker
    (told of every acknowledgement) finds no acknowledged record lost and no divergence."""
    from confluent_kafka import Producer
    lst = Listener(tmp_path, checker=True, cluster_config={"broker_heartbeat_interval_ms": 100,
                                                           "broker_session_timeout_ms": 600}).start()
    try:
        lst.call(lambda s: s.create_topic("failover", 1, 3))
        time.sleep(0.3)
        acked, failed = [], []

        def report(err, msg):
            (failed if err else acked).append(err or msg.value())
        p = Producer({"bootstrap.servers": lst.bootstrap, "enable.idempotence": True, "linger.ms": 2,
                      "retry.backoff.ms": 50, "topic.metadata.refresh.interval.ms": 1000})
        old = None
        for i in range(300):
            p.produce("failover", f"m{i}".encode(), partition=0, on_delivery=report)
            p.poll(0)
            time.sleep(0.003)
            if i == 100:
                old = lst.call(lambda s: s.cluster.controller.topics["failover"].partitions[0].leader)
                lst.call(lambda s: s.cluster.crash(old))
        assert p.flush(30) == 0
        assert failed == []
        new = lst.call(lambda s: s.cluster.controller.topics["failover"].partitions[0].leader)
        assert new not in (old, -1)
        values = lst.call(lambda s: [v for _, v, _ in s.cluster.log_values(new, "failover", 0)])
        assert sorted(acked) == sorted(f"m{i}".encode() for i in range(300))
        assert sorted(values) == sorted(acked)          # every acknowledged record, none twice
        # and the engine's checker, told of every acknowledgement, finds nothing either
        assert lst.call(lambda s: len(s.checker.acked)) == 300
        assert lst.call(lambda s: s.check(final=True)) == []
    finally:
        lst.stop()
