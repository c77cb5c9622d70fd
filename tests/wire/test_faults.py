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
