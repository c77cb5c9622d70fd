"""Leader-side partition rules: the HW in a fetch response is captured before the
fetch moves the remote LEO; follower HW = min(leader HW, own LEO); parked fetches wake
on new data or time out after replica.fetch.wait.max.ms; the KAFKA-15583 guard."""
from __future__ import annotations

from engine.cluster.cluster import Cluster
from engine.cluster.config import ClusterConfig
from engine.disk import Disk

T = "t"


def make(tmp_path, **cfg) -> Cluster:
    c = Cluster(Disk(tmp_path / "d"), ClusterConfig.from_mapping({"brokers": 2, **cfg}), seed=3)
    c.create_topic(T, 1, 2, assignment=[[0, 1]])
    c.advance(50)
    return c


def test_fetch_response_carries_hw_from_before_the_remote_leo_update(tmp_path):
    c = make(tmp_path)
    c.produce(T, 0, ["a"], acks=1)
    c.advance(20)
    answers = [e for e in c.events.of_kind("fetch_answered") if e.follower == 1]
    with_data = [e for e in answers if e.records]
    assert with_data[0].first_offset == 0 and with_data[0].high_watermark == 0
    # The follower's next fetch (offset 1) moves the leader HW to 1; that fetch then parks
    # (nothing new), so the follower only learns HW 1 when it returns.
    assert c.replica(0, T, 0).hw == 1
    assert c.replica(1, T, 0).hw == 0
    c.advance(600)
    assert c.replica(1, T, 0).hw == 1
    hw_events = [(e.broker, e.new) for e in c.events.of_kind("high_watermark_changed")]
    assert hw_events.index((0, 1)) < hw_events.index((1, 1))


def test_follower_hw_is_min_of_leader_hw_and_own_leo(tmp_path):
    c = make(tmp_path)
    c.produce(T, 0, ["a", "b"], acks=1)
    c.advance(1000)
    f = c.replica(1, T, 0)
    assert f.leo == 2 and f.hw == 2
    ev = [e for e in c.events.of_kind("high_watermark_changed") if e.broker == 1][-1]
    assert ev.reason == "leader_hw" and ev.isr_leos == {"leader": 2, "own_leo": 2}


def test_parked_fetch_wakes_on_new_data(tmp_path):
    c = make(tmp_path)
    c.advance(200)                        # the follower's fetch is parked now
    assert c.replica(0, T, 0).parked_fetches
    c.produce(T, 0, ["a"], acks=1)
    c.advance(5)
    woke = [e for e in c.events.of_kind("fetch_answered") if e.records][0]
    assert 0 < woke.waited_ms < 500


def test_parked_fetch_expires_after_replica_fetch_wait_max_ms(tmp_path):
    c = make(tmp_path, **{"replica.fetch.wait.max.ms": 300})
    c.advance(2000)
    waits = [e.waited_ms for e in c.events.of_kind("fetch_answered")]
    assert waits and all(w == 300 for w in waits[1:])


def test_remote_leo_tracked_per_follower(tmp_path):
    c = make(tmp_path)
    c.produce(T, 0, ["a", "b", "c"], acks=1)
    c.advance(1000)
    r = c.replica(0, T, 0).remotes[1]
    assert r.leo == 3 and r.last_caught_up_ms > 0


def test_hw_does_not_move_below_min_isr_with_kafka_15583_guard(tmp_path):
    for guard, expected_hw in ((True, 0), (False, 1)):
        c = Cluster(Disk(tmp_path / f"g{guard}"), ClusterConfig.from_mapping(
            {"brokers": 3, "min.insync.replicas": 2, "hw.min.isr.guard": guard}), seed=3)
        c.create_topic(T, 1, 3, assignment=[[0, 1, 2]])
        c.advance(50)
        c.pause_follower(1)
        c.pause_follower(2)
        c.produce(T, 0, ["a"], acks=1)
        c.advance(100)
        assert c.replica(0, T, 0).hw == 0
        c.advance(50000)                  # both stuck followers shrunk out of the ISR
        assert c.controller.partition(T, 0).isr == (0,)
        assert c.replica(0, T, 0).hw == expected_hw, guard


def test_idle_stuck_follower_stays_in_isr_because_it_is_at_the_leader_leo(tmp_path):
    c = make(tmp_path)
    c.pause_follower(1)
    c.advance(60000)
    assert c.controller.partition(T, 0).isr == (0, 1)


def test_a_batch_is_hashed_once_for_the_leader_and_the_client_and_the_events_name_its_records(tmp_path, monkeypatch):
    import engine.cluster.cluster as cluster_mod
    import engine.cluster.partition as partition_mod
    from engine.cluster.partition import record_digest
    c = make(tmp_path)
    calls = []
    real = partition_mod.record_digests

    def counted(key, values):
        calls.append(len(values))
        return real(key, values)
    monkeypatch.setattr(cluster_mod, "record_digests", counted)
    monkeypatch.setattr(partition_mod, "record_digests", counted)
    c.produce(T, 0, ["a", "b", None], key="k", acks=-1)
    c.advance(50)
    assert calls == [3]                                  # once per attempt, not per event
    expected = [record_digest(b"k", v) for v in (b"a", b"b", None)]
    for kind in ("produce_received", "produce_appended", "produce_acked"):
        assert [e.digests for e in c.events.of_kind(kind)] == [expected]
    assert not c._digests                                # nothing kept once the request is answered


def test_a_produce_request_without_digests_is_hashed_by_the_leader(tmp_path):
    from engine.cluster.network import ProduceRequest
    from engine.cluster.partition import record_digests
    c = make(tmp_path)
    rid = c.next_request_id()
    c.network.send(-1, 0, ProduceRequest(rid, T, 0, (b"x", b"y"), None, 1, 1000))   # as the wire listener sends
    c.advance(10)
    [received] = [e for e in c.events.of_kind("produce_received") if e.request_id == rid]
    assert received.digests == record_digests(None, (b"x", b"y"))
