"""Controller: Kafka's striped replica placement, broker sessions and fencing, restart
re-registration, and controller failover with an epoch bump."""
from __future__ import annotations

import pytest

from engine.cluster.cluster import Cluster
from engine.cluster.config import ClusterConfig
from engine.cluster.controller import striped_assignment
from engine.disk import Disk
from engine.errors import InvalidRequestError, InvalidTopicError


def make(tmp_path, brokers: int = 3, seed: int = 5, **cfg) -> Cluster:
    return Cluster(Disk(tmp_path / "d"), ClusterConfig.from_mapping({"brokers": brokers, **cfg}), seed=seed)


def test_striped_assignment_matches_kafkas_documented_layout():
    # AdminUtils' example: 5 brokers, 10 partitions, RF 3, start index 0, shift 0.
    got = striped_assignment([0, 1, 2, 3, 4], 10, 3, 0, 0)
    assert got[0] == (0, 1, 2) and got[4] == (4, 0, 1)
    assert got[5] == (0, 2, 3) and got[9] == (4, 1, 2)
    firsts = [r[0] for r in got]
    assert firsts == [0, 1, 2, 3, 4, 0, 1, 2, 3, 4]


def test_assignment_comes_from_the_seeded_rng(tmp_path):
    a = make(tmp_path / "a", brokers=5, seed=11).create_topic("t", 6, 3)
    b = make(tmp_path / "b", brokers=5, seed=11).create_topic("t", 6, 3)
    assert a == b
    for replicas in a.values():
        assert len(set(replicas)) == 3


def test_explicit_assignment_is_kept_and_first_replica_leads(tmp_path):
    c = make(tmp_path)
    c.create_topic("t", 2, 2, assignment=[[2, 0], [1, 2]])
    assert c.controller.partition("t", 0).replicas == (2, 0)
    assert c.controller.partition("t", 0).leader == 2
    assert c.controller.partition("t", 1).leader == 1
    ev = c.events.of_kind("topic_created")[0]
    assert ev.assignment == {"0": [2, 0], "1": [1, 2]} and ev.placement == "explicit"


def test_bad_topic_calls_raise_and_leave_state_unchanged(tmp_path):
    c = make(tmp_path)
    c.create_topic("t", 1, 1)
    before = c.state()
    with pytest.raises(InvalidRequestError):
        c.create_topic("u", 1, 4)               # more replicas than brokers
    with pytest.raises(InvalidRequestError):
        c.create_topic("u", -1, 1)
    with pytest.raises(InvalidTopicError):
        c.create_topic("t", 1, 1)               # exists
    with pytest.raises(InvalidTopicError):
        c.create_topic("bad name", 1, 1)
    with pytest.raises(InvalidRequestError):
        c.create_topic("u", 1, 2, assignment=[[0, 0]])
    assert c.state() == before


def test_crashed_broker_is_fenced_after_the_session_timeout(tmp_path):
    c = make(tmp_path)
    c.advance(100)
    c.crash(2)
    c.advance(6900)                    # at most 7 s since its last heartbeat: still registered
    assert not c.controller.brokers[2].fenced
    c.advance(5000)
    assert c.controller.brokers[2].fenced
    ev = c.events.of_kind("broker_fenced")[0]
    assert ev.broker == 2 and ev.reason == "session_timeout"


def test_restart_registers_again_with_a_new_broker_epoch(tmp_path):
    c = make(tmp_path)
    old = c.controller.brokers[1].broker_epoch
    c.crash(1)
    c.advance(15000)
    c.restart(1)
    c.advance(10)
    reg = c.controller.brokers[1]
    assert not reg.fenced and reg.broker_epoch > old and reg.incarnation == 2


def test_controller_failover_bumps_epoch_and_keeps_metadata(tmp_path):
    c = make(tmp_path)
    c.create_topic("t", 1, 3, assignment=[[0, 1, 2]])
    c.advance(100)
    assert c.controller.active == 0 and c.controller.epoch == 1
    c.crash(0)
    c.advance(8000)
    assert c.controller.active == 0                  # not before the session timeout
    c.advance(3000)
    assert c.controller.active == 1 and c.controller.epoch == 2
    changed = c.events.of_kind("controller_changed")[-1]
    assert (changed.old, changed.new, changed.controller_epoch) == (0, 1, 2)
    c.advance(12000)                                 # the new controller fences 0 and moves its leadership
    pm = c.controller.partition("t", 0)
    assert pm.leader == 1 and 0 not in pm.isr and pm.leader_epoch == 1
    assert c.replica(1, "t", 0).role == "leader"


def test_controlled_shutdown_of_the_controller_hands_over_at_once(tmp_path):
    c = make(tmp_path)
    c.advance(10)
    c.shutdown(0)
    assert c.controller.active == 1 and c.controller.epoch == 2


def test_a_lost_leader_and_isr_is_resent_after_the_next_heartbeat(tmp_path):
    c = make(tmp_path, brokers=4)
    c.create_topic("t", 1, 3, assignment=[[1, 2, 3]])
    c.advance(100)
    c.cut_link(0, 2, both=False)          # the controller cannot reach 2; 2's heartbeats still arrive
    c.crash(1)
    c.advance(12000)
    assert c.controller.partition("t", 0).leader == 2
    assert c.replica(2, "t", 0).role == "follower"     # it never heard
    c.heal_link(0, 2)
    c.advance(2500)
    assert c.replica(2, "t", 0).role == "leader" and c.replica(2, "t", 0).leader_epoch == 1
