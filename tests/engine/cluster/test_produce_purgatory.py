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
    cancelled = [e for e in c.events.of_kind("timer_task_cancelled") if e.timer == "broker-0.produce"]
    assert cancelled[-1].name == f"produce:produce#{rid}"


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


def test_a_parked_follower_fetch_waits_on_the_fetch_wheel_and_completes_early_when_data_arrives(tmp_path):
    c = make(tmp_path)
    leader = c.brokers[0]
    assert leader.fetch_purgatory.watched((T, 0)) == 2          # both followers' fetches are parked
    assert leader.fetch_purgatory.timer.size() == 2              # as wheel entries, not scheduler tasks
    assert not [t for t in c.scheduler.pending() if t.name == "delayed-fetch"]
    c.produce(T, 0, ["a"], acks=1)
    c.advance(1)
    woke = [e for e in c.events.of_kind("fetch_answered") if e.records]
    assert len(woke) == 2 and all(0 < e.waited_ms < 500 for e in woke)
    assert leader.fetch_purgatory.timer.size() == 0              # both completed early and left the wheel


def test_a_parked_fetch_with_nothing_new_completes_at_exactly_max_wait_on_the_wheel(tmp_path):
    c = make(tmp_path, **{"replica.fetch.wait.max.ms": 300})
    c.advance(2000)
    waits = [e.waited_ms for e in c.events.of_kind("fetch_answered")]
    assert waits and all(w == 300 for w in waits[2:])
    # No operation completes twice and none is lost: every parked fetch was answered exactly once.
    parked = len(c.events.of_kind("fetch_parked"))
    answered_after_wait = sum(1 for w in waits if w == 300)
    assert parked - answered_after_wait == c.brokers[0].fetch_purgatory.watched((T, 0))
