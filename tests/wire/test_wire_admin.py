"""Admin requests from real clients: CreateTopics (confluent-kafka's and kafka-python's admin
clients), DeleteRecords, OffsetForLeaderEpoch."""
from __future__ import annotations

import time

from wire.codec import RequestHeader, ResponseHeader, codec


def test_admin_clients_create_topics_with_configs_and_refuse_a_duplicate(listener):
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": listener.bootstrap})
    futures = admin.create_topics([NewTopic("made-by-admin", 4, 3, config={"cleanup.policy": "compact"})])
    futures["made-by-admin"].result(20)
    meta = listener.call(lambda s: s.cluster.controller.topics["made-by-admin"])
    assert len(meta.partitions) == 4 and all(len(pm.replicas) == 3 for pm in meta.partitions)
    assert meta.config.cleanup_policy == "compact"
    again = admin.create_topics([NewTopic("made-by-admin", 1, 1)])
    err = again["made-by-admin"].exception(20)
    assert err is not None and err.args[0].name() == "TOPIC_ALREADY_EXISTS"

    from kafka.admin import KafkaAdminClient, NewTopic as KPNewTopic
    kp = KafkaAdminClient(bootstrap_servers=listener.bootstrap)
    kp.create_topics([KPNewTopic("made-by-kafka-python", 2, 1)])
    kp.close()
    assert listener.call(lambda s: len(s.cluster.controller.topics["made-by-kafka-python"].partitions)) == 2


def test_delete_records_moves_the_log_start_offset(listener):
    from confluent_kafka import Producer, TopicPartition
    from confluent_kafka.admin import AdminClient
    listener.call(lambda s: s.create_topic("trimmed", 1, 3))
    time.sleep(0.3)
    p = Producer({"bootstrap.servers": listener.bootstrap, "acks": "all"})
    for i in range(10):
        p.produce("trimmed", f"v{i}".encode(), partition=0)
    assert p.flush(10) == 0
    admin = AdminClient({"bootstrap.servers": listener.bootstrap})
    result = admin.delete_records([TopicPartition("trimmed", 0, 6)])
    (deleted,) = result.values()
    assert deleted.result(20).low_watermark == 6
    leader = listener.call(lambda s: s.cluster.controller.topics["trimmed"].partitions[0].leader)
    assert listener.call(lambda s: s.cluster.replica(leader, "trimmed", 0).log.log_start_offset) == 6


def test_offset_for_leader_epoch_answers_where_an_epoch_ends(listener):
    import socket
    listener.call(lambda s: s.create_topic("epochs", 1, 3))
    time.sleep(0.3)
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": listener.bootstrap, "acks": "all"})
    for i in range(5):
        p.produce("epochs", b"x", partition=0)
    assert p.flush(10) == 0
    leader = listener.call(lambda s: s.cluster.controller.topics["epochs"].partitions[0].leader)
    body = codec("OffsetForLeaderEpochRequest", 4).encode(
        {"replica_id": -1, "topics": [{"topic": "epochs", "partitions": [
            {"partition": 0, "current_leader_epoch": 0, "leader_epoch": 0}]}]})
    head = RequestHeader.encode({"request_api_key": 23, "request_api_version": 4, "correlation_id": 3,
                                 "client_id": "t"}, 2)
    host, port = listener.server.endpoints[leader]
    with socket.create_connection((host, port), timeout=5) as s:
        s.sendall(len(head + body).to_bytes(4, "big") + head + body)
        size = int.from_bytes(s.recv(4), "big")
        data = b""
        while len(data) < size:
            data += s.recv(size - len(data))
    _, pos = ResponseHeader.decode(data, 1)
    resp, _ = codec("OffsetForLeaderEpochResponse", 4).decode(data, pos)
    (part,) = resp["topics"][0]["partitions"]
    assert (part["error_code"], part["leader_epoch"], part["end_offset"]) == (0, 0, 5)


def test_describe_configs_shows_a_topics_overrides_as_dynamic(listener):
    from confluent_kafka.admin import AdminClient, ConfigResource
    listener.call(lambda s: s.create_topic("described", 1, 3, {"retention.ms": "1000"}))
    admin = AdminClient({"bootstrap.servers": listener.bootstrap})
    (future,) = admin.describe_configs([ConfigResource("topic", "described")]).values()
    configs = future.result(20)
    assert configs["retention.ms"].value == "1000"
    assert configs["retention.ms"].source == 1          # DYNAMIC_TOPIC_CONFIG
    assert configs["cleanup.policy"].value == "delete" and configs["cleanup.policy"].source == 5
