"""Retries and the idempotent producer on the cluster (seed 003: "how does Kafka avoid
duplicates when a producer retries?" — producer id + epoch + sequence per partition; the
leader answers a retry with the first write's offsets).

The fault: the link from the leader back to the client is cut one way after the request
went out, so the leader writes the batch but its answer is lost; the client's request
times out and the producer retries."""
from __future__ import annotations

import pytest

from engine.cluster.cluster import Cluster
from engine.cluster.commands import apply_command, parse_command
from engine.cluster.config import ClusterConfig
from engine.disk import Disk
from engine.errors import InvalidRequestError

T = "t"
CLIENT = -1


def make(tmp_path, seed: int = 3) -> Cluster:
    c = Cluster(Disk(tmp_path / "d"), ClusterConfig.from_mapping({"brokers": 3, "request.timeout.ms": 2000}),
                seed=seed)
    c.create_topic(T, 1, 3, assignment=[[0, 1, 2]], config={"min.insync.replicas": 2})
    c.advance(50)
    return c


def lose_first_answer(c: Cluster, producer: str) -> int:
    """Send one batch whose first answer is lost; the link heals before the retry."""
    rid = c.produce(T, 0, ["m1", "m2"], producer=producer)
    c.cut_link(0, CLIENT, both=False)          # leader -> client only: the request still arrives
    c.advance(1500)                            # written and committed; the answer is dropped
    c.heal_link(0, CLIENT, both=False)
    c.run_until_idle_produce(rid)
    c.advance(1000)
    return rid


def leader_values(c: Cluster) -> list[bytes]:
    return [v for _, v, _ in c.log_values(0, T, 0)]


def test_without_idempotence_a_retry_after_a_lost_answer_writes_the_batch_twice(tmp_path):
    c = make(tmp_path)
    c.create_producer("plain", idempotent=False)
    rid = lose_first_answer(c, "plain")
    res = c.produce_results[rid]
    assert res.status == "ok" and res.attempts == 2
    assert leader_values(c) == [b"m1", b"m2", b"m1", b"m2"]
    assert c.events.of_kind("produce_retried")[0].error == "REQUEST_TIMED_OUT"


def test_with_idempotence_the_retry_is_recognised_and_answered_with_the_first_offsets(tmp_path):
    c = make(tmp_path)
    prod = c.create_producer("safe", idempotent=True)
    assert prod.producer_id == 0 and prod.producer_epoch == 0
    rid = lose_first_answer(c, "safe")
    res = c.produce_results[rid]
    assert res.status == "ok" and res.attempts == 2 and (res.base_offset, res.last_offset) == (0, 1)
    assert leader_values(c) == [b"m1", b"m2"]
    dup = c.events.of_kind("produce_duplicate")[0]
    assert (dup.producer_id, dup.base_sequence, dup.base_offset, dup.last_offset) == (0, 0, 0, 1)
    # Every replica holds the batch once, with the producer's id and sequence on disk.
    for b in range(3):
        assert [v for _, v, _ in c.log_values(b, T, 0)] == [b"m1", b"m2"]
        batch = c.replica(b, T, 0).log.read(0).batches[0]
        assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (0, 0, 0)


def test_sequences_continue_per_partition_across_batches(tmp_path):
    c = make(tmp_path)
    c.create_producer("safe")
    for i in range(3):
        c.run_until_idle_produce(c.produce(T, 0, [f"v{i}a", f"v{i}b"], producer="safe"))
    seqs = [b.base_sequence for b in c.replica(0, T, 0).log.read(0, max_bytes=10**6).batches]
    assert seqs == [0, 2, 4] and c.producers["safe"].next_sequence == {"t-0": 6}


def test_a_retry_follows_the_new_leader_and_is_not_written_twice(tmp_path):
    c = make(tmp_path, seed=8)
    c.create_producer("safe")
    rid = c.produce(T, 0, ["x"], producer="safe")
    c.cut_link(0, CLIENT, both=False)
    c.advance(300)                             # committed on all three, answer lost
    c.crash(0)                                 # the leader dies; 1 or 2 takes over with the batch
    c.heal_link(0, CLIENT, both=False)
    res = c.run_until_idle_produce(rid)
    c.advance(2000)
    assert res.status == "ok" and res.attempts >= 2
    leader = c.controller.partition(T, 0).leader
    assert [v for _, v, _ in c.log_values(leader, T, 0)] == [b"x"]


def test_commands_create_and_use_producers_and_refuse_unknown_ones(tmp_path):
    c = make(tmp_path)
    out = apply_command(c, {"cmd": "create_producer", "name": "p", "idempotent": True, "retries": 5})
    assert out["producer_id"] == 0 and out["retries"] == 5
    apply_command(c, {"cmd": "produce", "topic": T, "values": ["a"], "producer": "p"})
    with pytest.raises(InvalidRequestError, match="unknown producer 'q'"):
        apply_command(c, {"cmd": "produce", "topic": T, "values": ["a"], "producer": "q"})
    with pytest.raises(InvalidRequestError, match="already exists"):
        apply_command(c, {"cmd": "create_producer", "name": "p"})
    with pytest.raises(InvalidRequestError):
        parse_command({"cmd": "create_producer", "name": "p", "retries": -1})


def test_retries_stop_at_the_delivery_timeout(tmp_path):
    c = make(tmp_path)
    c.create_producer("p", idempotent=True, delivery_timeout_ms=5000)
    c.crash(1)
    c.crash(2)                                 # the ISR can never reach min.insync.replicas again
    rid = c.produce(T, 0, ["x"], producer="p")
    res = c.run_until_idle_produce(rid)
    assert res.status == "error" and res.completed_ms - res.sent_ms < 5000 + 2100
