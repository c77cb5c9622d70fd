"""Replication end to end: HW/LEO with a lagging follower, ISR shrink after
replica.lag.time.max.ms and expansion on catch-up, acks 0/1/all with
min.insync.replicas (NOT_ENOUGH_REPLICAS, NOT_ENOUGH_REPLICAS_AFTER_APPEND,
REQUEST_TIMED_OUT), consumers bounded by the HW, and same-seed determinism."""
from __future__ import annotations

import pytest

from engine.cluster.cluster import Cluster
from engine.cluster.config import ClusterConfig
from engine.disk import Disk
from engine.errors import OffsetOutOfRangeError

T = "t"


def make(tmp_path, brokers: int = 3, rf: int = 3, seed: int = 2, **cfg) -> Cluster:
    c = Cluster(Disk(tmp_path / "d"), ClusterConfig.from_mapping({"brokers": brokers, **cfg}), seed=seed)
    c.create_topic(T, 1, rf, assignment=[list(range(rf))])
    c.advance(50)
    return c


def test_all_replicas_converge_and_hw_reaches_leo(tmp_path):
    c = make(tmp_path)
    rid = c.produce(T, 0, ["a", "b", "c"])
    res = c.run_until_idle_produce(rid)
    assert res.status == "ok" and (res.base_offset, res.last_offset) == (0, 2)
    c.advance(1000)
    for b in range(3):
        assert [v for _, v, _ in c.log_values(b, T, 0)] == [b"a", b"b", b"c"]
        assert c.replica(b, T, 0).leo == 3 and c.replica(b, T, 0).hw == 3


def test_hw_waits_for_the_slowest_isr_follower(tmp_path):
    c = make(tmp_path)
    c.slow_follower(2, 2000)
    c.advance(3000)
    c.produce(T, 0, ["a"], acks=1)
    c.advance(100)
    leader = c.replica(0, T, 0)
    assert leader.remotes[1].leo == 1 and leader.remotes[2].leo == 0
    assert leader.hw == 0 and leader.leo == 1
    c.advance(6000)                       # two slow fetch rounds: data, then the new fetch offset
    assert leader.hw == 1


def test_isr_shrinks_after_replica_lag_time_max_and_expands_on_catch_up(tmp_path):
    c = make(tmp_path)
    c.pause_follower(2)
    c.produce(T, 0, ["a"], acks=1)
    c.advance(29000)
    assert 2 in c.controller.partition(T, 0).isr
    c.advance(17000)                      # the shrink task runs every 15 s
    assert c.controller.partition(T, 0).isr == (0, 1)
    shrunk = c.events.of_kind("isr_shrunk")[0]
    assert shrunk.removed == [2] and shrunk.reason == "lagging" and shrunk.by == "leader"
    assert shrunk.lag_ms > 30000
    assert c.replica(0, T, 0).hw == 1     # the HW moves on without the stuck follower
    c.resume_follower(2)
    c.advance(1000)
    assert c.controller.partition(T, 0).isr == (0, 1, 2)
    expanded = c.events.of_kind("isr_expanded")[0]
    assert expanded.added == [2] and expanded.reason == "caught_up"


def test_acks_all_refused_with_not_enough_replicas_when_followers_die(tmp_path):
    c = make(tmp_path, **{"min.insync.replicas": 2})
    c.crash(1)
    c.crash(2)
    c.advance(15000)                      # both fenced: ISR {0}
    assert c.controller.partition(T, 0).isr == (0,)
    rid = c.produce(T, 0, ["x"])
    res = c.run_until_idle_produce(rid)
    assert res.status == "error" and res.error == "NOT_ENOUGH_REPLICAS"
    assert c.replica(0, T, 0).leo == 0    # nothing was written
    rid = c.produce(T, 0, ["y"], acks=1)  # acks=1 does not care about min ISR
    assert c.run_until_idle_produce(rid).status == "ok"


def test_not_enough_replicas_after_append_when_the_isr_shrinks_during_the_wait(tmp_path):
    c = make(tmp_path, **{"min.insync.replicas": 2, "hw.min.isr.guard": False})
    c.crash(1)
    c.crash(2)
    rid = c.produce(T, 0, ["x"])          # ISR is still {0,1,2}: appended, then waits
    c.advance(100)
    assert rid not in c.produce_results and c.replica(0, T, 0).leo == 1
    res = c.run_until_idle_produce(rid)
    assert res.error == "NOT_ENOUGH_REPLICAS_AFTER_APPEND" and res.base_offset == 0
    failed = c.events.of_kind("produce_failed")[-1]
    assert failed.appended is True


def test_acks_all_times_out_when_the_hw_cannot_move(tmp_path):
    c = make(tmp_path, **{"min.insync.replicas": 2, "request.timeout.ms": 5000})
    c.crash(1)
    c.crash(2)
    rid = c.produce(T, 0, ["x"])
    res = c.run_until_idle_produce(rid)
    assert res.error == "REQUEST_TIMED_OUT"
    assert res.completed_ms - res.sent_ms >= 5000


def test_acks_zero_gets_no_response_but_is_written(tmp_path):
    c = make(tmp_path)
    rid = c.produce(T, 0, ["z"], acks=0)
    assert c.produce_results[rid].status == "ok" and c.produce_results[rid].base_offset is None
    c.advance(1000)
    assert c.replica(0, T, 0).leo == 1


def test_consumer_reads_only_up_to_the_high_watermark(tmp_path):
    c = make(tmp_path)
    c.pause_follower(1)
    c.pause_follower(2)
    c.produce(T, 0, ["a", "b"], acks=1)
    c.advance(100)
    assert c.consume(T, 0, 0, 10) == []
    with pytest.raises(OffsetOutOfRangeError):
        c.consume(T, 0, 1, 10)            # beyond the HW
    c.resume_follower(1)
    c.resume_follower(2)
    c.advance(1000)
    assert [r.value for r in c.consume(T, 0, 0, 10)] == [b"a", b"b"]
    read = c.events.of_kind("consumer_read")[-1]
    assert read.records == 2 and read.next_offset == 2 and read.high_watermark == 2


def run_mixed(tmp_path, seed: int) -> str:
    c = Cluster(Disk(tmp_path), ClusterConfig(brokers=4), seed=seed)
    c.create_topic("a", 3, 3)
    c.advance(10)
    c.set_drop_probability(0, 1, 0.3)
    for i in range(10):
        c.produce("a", i % 3, [f"v{i}"], acks=[-1, 1, 0][i % 3])
        c.advance(37)
    c.crash(2)
    c.advance(15000)
    c.restart(2)
    c.advance(3000)
    return c.events.digest()


def test_same_seed_same_calls_same_event_digest(tmp_path):
    assert run_mixed(tmp_path / "x", 9) == run_mixed(tmp_path / "y", 9)
    assert run_mixed(tmp_path / "z", 10) != run_mixed(tmp_path / "w", 9)


def test_state_is_plain_json_with_per_replica_logs(tmp_path):
    import json
    c = make(tmp_path)
    c.run_until_idle_produce(c.produce(T, 0, ["a"], key="k"))
    c.advance(1000)
    st = c.state()
    assert json.loads(json.dumps(st)) == st
    part = st["topics"][T]["partitions"][0]
    assert part["leader"] == 0 and part["isr"] == [0, 1, 2] and part["leader_epoch"] == 0
    digests = {tuple(v["records"][0]) for v in part["replica_states"].values()}
    assert len(digests) == 1                      # the same record (offset, digest, epoch) everywhere
    rep = part["replica_states"]["1"]
    assert rep["role"] == "follower" and rep["leo"] == 1 and rep["high_watermark"] == 1
    assert rep["epoch_cache"] == [[0, 0]]
    assert st["controller"]["active"] == 0 and st["controller"]["controller_epoch"] == 1


def test_a_follower_whose_fetch_is_lost_fetches_again_after_request_timeout_plus_max_wait(tmp_path):
    c = make(tmp_path, brokers=2, rf=2, **{"request.timeout.ms": 700, "replica.fetch.wait.max.ms": 300})
    c.advance(1000)
    c.network.cut(0, 1, both=False)           # the leader's answers to broker 1 are lost from here on
    seq = c.events.seq
    c.advance(5000)
    sent = [e.time_ms for e in c.events.since(seq) if e.event.kind == "fetch_sent" and e.event.broker == 1]
    assert len(sent) >= 3
    assert {b - a for a, b in zip(sent[1:], sent[2:])} == {700 + 300}
