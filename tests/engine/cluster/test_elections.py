"""Leader elections: clean failover to the first live ISR replica in assignment order,
offline partitions, unclean election (with the data it loses), preferred leader
election, and the leader epoch bumped on every election."""
from __future__ import annotations

from engine.cluster.cluster import Cluster
from engine.cluster.config import ClusterConfig
from engine.disk import Disk

T = "t"


def make(tmp_path, assignment, brokers: int = 4, **cfg) -> Cluster:
    c = Cluster(Disk(tmp_path / "d"), ClusterConfig.from_mapping({"brokers": brokers, **cfg}), seed=8)
    c.create_topic(T, 1, len(assignment), assignment=[assignment])
    c.advance(50)
    return c


def test_failover_picks_first_live_isr_replica_in_assignment_order(tmp_path):
    c = make(tmp_path, [1, 3, 2])
    c.crash(1)
    c.advance(12000)
    pm = c.controller.partition(T, 0)
    assert pm.leader == 3 and pm.leader_epoch == 1 and pm.isr == (3, 2)
    ev = c.events.of_kind("leader_elected")[-1]
    assert ev.rule == "clean" and ev.previous_leader == 1 and ev.chosen == 3 and ev.leader_epoch == 1
    assert ev.candidates == [{"broker": 1, "in_isr": False, "acceptable": False},  # fenced, left the ISR
                             {"broker": 3, "in_isr": True, "acceptable": True},
                             {"broker": 2, "in_isr": True, "acceptable": True}]
    c.advance(100)
    assert c.replica(3, T, 0).role == "leader"
    assert c.replica(3, T, 0).log.leader_epoch_cache.latest_epoch == 1


def test_every_election_bumps_the_leader_epoch(tmp_path):
    c = make(tmp_path, [1, 2, 3])
    epochs = [c.controller.partition(T, 0).leader_epoch]
    for victim in (1, 2):
        c.crash(victim)
        c.advance(12000)
        epochs.append(c.controller.partition(T, 0).leader_epoch)
    assert epochs == [0, 1, 2]
    assert c.controller.partition(T, 0).leader == 3


def test_no_live_isr_replica_means_offline_without_unclean_election(tmp_path):
    c = make(tmp_path, [1, 2])
    c.pause_follower(2)
    c.run_until_idle_produce(c.produce(T, 0, ["a"], acks=1))
    c.advance(50000)                       # 2 falls out of the ISR
    assert c.controller.partition(T, 0).isr == (1,)
    c.crash(1)
    c.advance(12000)
    pm = c.controller.partition(T, 0)
    assert pm.leader == -1 and pm.isr == (1,)
    assert c.events.of_kind("partition_offline")[-1].previous_leader == 1
    res = c.run_until_idle_produce(c.produce(T, 0, ["b"], acks=1))
    assert res.error == "LEADER_NOT_AVAILABLE"


def test_unclean_election_lets_an_out_of_sync_replica_lead_and_loses_data(tmp_path):
    c = make(tmp_path, [1, 2], **{"unclean.leader.election.enable": True})
    c.pause_follower(2)
    c.run_until_idle_produce(c.produce(T, 0, ["a"], acks=1))
    c.advance(50000)
    c.crash(1)
    c.advance(12000)
    pm = c.controller.partition(T, 0)
    assert pm.leader == 2 and pm.isr == (2,) and pm.leader_epoch == 1
    assert c.events.of_kind("leader_elected")[-1].rule == "unclean"
    c.resume_follower(2)
    c.run_until_idle_produce(c.produce(T, 0, ["b"]))
    c.restart(1)
    c.advance(3000)
    # The committed "a" is gone: the old leader truncated to the new leader's log.
    for b in (1, 2):
        assert [(o, v) for o, v, _ in c.log_values(b, T, 0)] == [(0, b"b")]


def test_preferred_leader_election_moves_leadership_back(tmp_path):
    c = make(tmp_path, [1, 2, 3])
    c.crash(1)
    c.advance(12000)
    assert c.controller.partition(T, 0).leader == 2
    c.restart(1)
    c.advance(3000)                         # 0 catches up and rejoins the ISR
    assert 1 in c.controller.partition(T, 0).isr
    assert c.elect_preferred_leaders() == ["t-0"]
    pm = c.controller.partition(T, 0)
    assert pm.leader == 1 and pm.leader_epoch == 2
    assert c.events.of_kind("leader_elected")[-1].rule == "preferred"
    c.advance(100)
    assert c.replica(1, T, 0).role == "leader" and c.replica(2, T, 0).role == "follower"
    assert c.elect_preferred_leaders() == []


def test_isolated_leader_is_replaced_and_steps_down_after_healing(tmp_path):
    c = make(tmp_path, [1, 2, 3])
    c.isolate(1)
    c.advance(12000)
    assert c.controller.partition(T, 0).leader == 2
    assert c.replica(1, T, 0).role == "leader"          # a zombie: it never heard
    c.heal_all()
    c.advance(3000)
    assert c.replica(1, T, 0).role == "follower"
    assert c.replica(1, T, 0).leader_epoch == 1


def test_enabling_unclean_election_brings_an_offline_partition_back(tmp_path):
    c = make(tmp_path, [1, 2])
    c.pause_follower(2)
    c.run_until_idle_produce(c.produce(T, 0, ["a"], acks=1))
    c.advance(50000)
    c.crash(1)
    c.advance(12000)
    assert c.controller.partition(T, 0).leader == -1
    c.set_config("cluster", None, {"unclean.leader.election.enable": True})
    pm = c.controller.partition(T, 0)
    assert pm.leader == 2 and c.events.of_kind("leader_elected")[-1].rule == "unclean"


def test_isolated_controller_loses_quorum_and_a_majority_broker_takes_over(tmp_path):
    c = make(tmp_path, [1, 2, 3], brokers=5)
    c.isolate(0)
    c.advance(12000)
    assert c.controller.active == 1 and c.controller.epoch == 2
    assert c.events.of_kind("controller_changed")[-1].reason == "lost_quorum"
    assert c.controller.brokers[2].fenced is False        # the majority keeps its sessions


def test_leader_bounced_before_its_session_expired_hands_leadership_to_an_isr_peer(tmp_path):
    c = make(tmp_path, [1, 2, 3])
    c.run_until_idle_produce(c.produce(T, 0, ["a", "b"]))
    c.advance(1000)
    c.crash(1)                     # power loss: its unflushed copy of a, b is gone
    c.restart(1)
    c.advance(3000)
    pm = c.controller.partition(T, 0)
    assert pm.leader == 2 and pm.leader_epoch == 1 and 1 in pm.isr
    assert c.events.of_kind("leader_elected")[-1].rule == "leader_restarted"
    for b in (1, 2, 3):
        assert [v for _, v, _ in c.log_values(b, T, 0)] == [b"a", b"b"]


def test_zombie_leader_accepts_acks1_writes_that_are_lost_when_it_steps_down(tmp_path):
    c = make(tmp_path, [1, 2, 3])
    for other in (0, 2, 3):
        c.cut_link(1, other)                 # 1 is cut from the controller and the followers
    c.advance(12000)
    assert c.controller.partition(T, 0).leader == 2
    rid = c.produce(T, 0, ["lost"], acks=1, broker=1)   # a client with stale metadata
    assert c.run_until_idle_produce(rid).status == "ok"
    rid = c.produce(T, 0, ["kept"])
    assert c.run_until_idle_produce(rid).status == "ok"
    c.heal_all()
    c.advance(3000)
    for b in (1, 2, 3):
        assert [v for _, v, _ in c.log_values(b, T, 0)] == [b"kept"]
