"""acks=all produces wait in each broker's produce purgatory on Kafka's timing wheel
(seed 003: delayed operations and the hierarchical timing wheel)."""
from __future__ import annotations

from engine.cluster.cluster import Cluster
from engine.cluster.config import ClusterConfig
from engine.disk import Disk

T = "t"


def make(tmp_path, **cfg) -> Cluster:
    c = Cluster(Disk(tmp_path / "d"), ClusterConfig.from_mapping({"brokers": 3, "timer.events": True, **cfg}),
                seed=4)
    c.create_topic(T, 1, 3, assignment=[[0, 1, 2]])
    c.advance(50)
    return c


def test_a_waiting_produce_sits_in_the_leaders_timing_wheel_and_completes_when_the_hw_passes_it(tmp_path):
    c = make(tmp_path)
    rid = c.produce(T, 0, ["a"])
    c.advance(1)                          # one network hop: appended, now waiting for the followers
    leader = c.brokers[0]
    assert leader.produce_purgatory.watched((T, 0)) == 1
    added = [e for e in c.events.of_kind("timer_task_added") if e.timer == "broker-0.produce"]
    # request.timeout.ms = 30,000 ms: past the 8,000 ms level-2 span, so level 3 (tick 8,000 ms).
    assert added and added[-1].level == 3 and added[-1].name == f"produce:produce#{rid}"
    res = c.run_until_idle_produce(rid)
    assert res.status == "ok"
    assert leader.produce_purgatory.watched() == 0 and leader.produce_purgatory.timer.size() == 0
    assert c.events.of_kind("timer_task_cancelled")[-1].name == f"produce:produce#{rid}"


def test_the_wheel_expires_a_produce_at_exactly_request_timeout_ms(tmp_path):
    c = make(tmp_path, **{"min.insync.replicas": 2, "request.timeout.ms": 5000})
    c.crash(1)
    c.crash(2)
    rid = c.produce(T, 0, ["x"])
    res = c.run_until_idle_produce(rid)
    assert res.error == "REQUEST_TIMED_OUT"
    fired = [e for e in c.events.of_kind("timer_task_expired") if e.name == f"produce:produce#{rid}"]
    added = [e for e in c.events.of_kind("timer_task_added") if e.name == f"produce:produce#{rid}"]
    assert len(fired) == 1 and fired[0].expiration_ms == added[0].expiration_ms
    # 5,000 ms is beyond level 1 (400 ms): it cascaded down before it fired.
    assert any(e.name == f"produce:produce#{rid}" for e in c.events.of_kind("timer_task_cascaded"))


def test_losing_leadership_answers_waiting_produces_not_leader(tmp_path):
    from engine.cluster.network import LeaderAndIsr
    c = make(tmp_path)
    c.pause_follower(1)
    c.pause_follower(2)
    rid = c.produce(T, 0, ["a"])
    c.advance(10)
    part = c.replica(0, T, 0)
    assert c.brokers[0].produce_purgatory.watched((T, 0)) == 1
    # The controller's word that broker 1 leads now, at the next epoch (as after an election).
    part.apply_state(LeaderAndIsr(c.controller.active, 1, T, 0, 1, part.leader_epoch + 1, part.partition_epoch + 1,
                                  (1, 2), (0, 1, 2)))
    res = c.run_until_idle_produce(rid)
    assert res.error == "NOT_LEADER_OR_FOLLOWER" and res.completed_ms - res.sent_ms < 1000
    assert c.brokers[0].produce_purgatory.watched() == 0


def test_timer_events_are_off_by_default(tmp_path):
    c = Cluster(Disk(tmp_path / "d"), ClusterConfig(brokers=3), seed=4)
    c.create_topic(T, 1, 3, assignment=[[0, 1, 2]])
    c.advance(50)
    c.run_until_idle_produce(c.produce(T, 0, ["a"]))
    assert not [e for e in c.events.envelopes if e.event.kind.startswith("timer_")]
