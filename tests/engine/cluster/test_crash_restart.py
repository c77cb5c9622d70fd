"""Crashes and restarts: a hard crash loses what was not fsynced, a process kill keeps
the page cache, a clean (controlled) shutdown flushes, writes the per-log-dir
checkpoints and the .kafka_cleanshutdown marker and moves leadership first; a restart
recovers every log and rejoins. Also snapshot/restore and bad calls."""
from __future__ import annotations

import json

import pytest

from engine.cluster.cluster import Cluster
from engine.cluster.config import ClusterConfig
from engine.disk import Disk
from engine.errors import BrokerNotAvailableError, InvalidRequestError, UnknownTopicOrPartitionError

T = "t"


def single(tmp_path, **log) -> Cluster:
    c = Cluster(Disk(tmp_path / "d"), ClusterConfig.from_mapping({"brokers": 1, **log}), seed=1)
    c.create_topic(T, 1, 1)
    c.advance(10)
    return c


def values(c: Cluster, b: int = 0):
    return [v for _, v, _ in c.log_values(b, T, 0)]


def test_hard_crash_loses_unflushed_records(tmp_path):
    c = single(tmp_path)
    c.run_until_idle_produce(c.produce(T, 0, ["a", "b"], acks=1))
    c.crash(0)
    ev = c.events.of_kind("broker_crashed")[0]
    assert ev.power_loss and any(f["file"].endswith(".log") for f in ev.lost_files)
    c.restart(0)
    c.advance(100)
    assert values(c) == [] and c.replica(0, T, 0).leo == 0


def test_hard_crash_keeps_records_fsynced_by_flush_messages(tmp_path):
    c = single(tmp_path, **{"flush.messages": 1})
    c.run_until_idle_produce(c.produce(T, 0, ["a", "b"], acks=1))
    c.crash(0)
    c.restart(0)
    c.advance(100)
    assert values(c) == [b"a", b"b"]


def test_process_kill_keeps_the_page_cache(tmp_path):
    c = single(tmp_path)
    c.run_until_idle_produce(c.produce(T, 0, ["a"], acks=1))
    c.crash(0, power_loss=False)
    c.restart(0)
    c.advance(100)
    assert values(c) == [b"a"]


def test_clean_shutdown_keeps_data_and_writes_checkpoints_and_marker(tmp_path):
    c = single(tmp_path)
    c.run_until_idle_produce(c.produce(T, 0, ["a", "b", "c"], acks=1))
    c.shutdown(0)
    disk = c.disk
    assert disk.read_all("broker-0/replication-offset-checkpoint") == b"0\n1\nt 0 3\n"
    assert disk.read_all("broker-0/recovery-point-offset-checkpoint") == b"0\n1\nt 0 3\n"
    assert disk.read_all("broker-0/log-start-offset-checkpoint") == b"0\n0\n"
    marker = json.loads(disk.read_all("broker-0/.kafka_cleanshutdown"))
    assert marker == {"version": 0, "brokerEpoch": c.brokers[0].broker_epoch}
    disk.crash("broker-0")                 # nothing left to lose
    c.restart(0)
    c.advance(100)
    assert c.events.of_kind("broker_started")[-1].clean_shutdown is True
    assert not disk.exists("broker-0/.kafka_cleanshutdown")
    assert values(c) == [b"a", b"b", b"c"] and c.replica(0, T, 0).hw == 3


def test_hw_checkpoint_written_every_interval(tmp_path):
    c = single(tmp_path)
    c.run_until_idle_produce(c.produce(T, 0, ["a"], acks=1))
    c.advance(5000)
    assert c.disk.read_all("broker-0/replication-offset-checkpoint") == b"0\n1\nt 0 1\n"


def test_controlled_shutdown_moves_leadership_first(tmp_path):
    c = Cluster(Disk(tmp_path / "d"), ClusterConfig(brokers=3), seed=1)
    c.create_topic(T, 1, 3, assignment=[[1, 2, 0]])
    c.advance(100)
    moved = c.shutdown(1)
    assert moved == ["t-0"]
    pm = c.controller.partition(T, 0)
    assert pm.leader == 2 and pm.isr == (2, 0) and pm.leader_epoch == 1
    elected = c.events.of_kind("leader_elected")[-1]
    assert elected.rule == "controlled_shutdown" and elected.chosen == 2
    c.advance(100)
    assert c.replica(2, T, 0).role == "leader"
    rid = c.produce(T, 0, ["x"])
    assert c.run_until_idle_produce(rid).status == "ok"


def test_crash_drops_in_flight_messages(tmp_path):
    c = Cluster(Disk(tmp_path / "d"), ClusterConfig(brokers=2), seed=1)
    c.create_topic(T, 1, 2, assignment=[[0, 1]])
    c.advance(100)
    c.produce(T, 0, ["x"])              # in flight to broker 0
    c.crash(0)
    c.advance(10)
    reasons = {e.reason for e in c.events.of_kind("message_dropped")}
    assert "destination_down" in reasons


def test_restarted_follower_rejoins_and_catches_up(tmp_path):
    c = Cluster(Disk(tmp_path / "d"), ClusterConfig(brokers=3), seed=1)
    c.create_topic(T, 1, 3, assignment=[[0, 1, 2]])
    c.advance(100)
    c.crash(2)
    c.advance(12000)
    assert c.controller.partition(T, 0).isr == (0, 1)
    c.run_until_idle_produce(c.produce(T, 0, ["a", "b"]))
    c.restart(2)
    c.advance(2000)
    assert values(c, 2) == [b"a", b"b"]
    assert c.controller.partition(T, 0).isr == (0, 1, 2)


def test_bad_calls_raise_and_leave_state_unchanged(tmp_path):
    c = single(tmp_path)
    before = c.state()
    with pytest.raises(InvalidRequestError):
        c.crash(5)
    with pytest.raises(InvalidRequestError):
        c.restart(0)                    # live broker
    with pytest.raises(UnknownTopicOrPartitionError):
        c.produce("nope", 0, ["x"])
    with pytest.raises(UnknownTopicOrPartitionError):
        c.produce(T, 3, ["x"])
    with pytest.raises(InvalidRequestError):
        c.produce(T, 0, ["x"], acks=2)
    with pytest.raises(InvalidRequestError):
        c.consume(T, 0, -1, 10)
    with pytest.raises(InvalidRequestError):
        c.advance(-5)
    with pytest.raises(InvalidRequestError):
        c.slow_follower(0, -1)
    with pytest.raises(InvalidRequestError):
        c.cut_link(0, 7)
    with pytest.raises(InvalidRequestError):
        c.set_config("galaxy", 0, {"x": 1})
    assert c.state() == before
    c.crash(0)
    with pytest.raises(BrokerNotAvailableError):
        c.crash(0)


def test_snapshot_restore_continues_identically(tmp_path):
    c = Cluster(Disk(tmp_path / "a"), ClusterConfig(brokers=3), seed=4)
    c.create_topic(T, 2, 3)
    c.advance(10)
    c.run_until_idle_produce(c.produce(T, 0, ["a"]))
    blob = c.snapshot()
    d = Cluster.restore(blob, tmp_path / "b")
    for x in (c, d):
        x.crash(1)
        x.produce(T, 1, ["b", "c"], acks=1)
        x.advance(15000)
    assert c.events.digest() == d.events.digest()
    assert c.state()["topics"] == d.state()["topics"]
    assert d.disk.root != c.disk.root
