"""The KIP-101 failure scenarios of reference §5.7 (and the KIP-279 extra case), driven
through Cluster methods, under truncation="hw" (pre-0.11: they go wrong) and
truncation="epoch" (KIP-101/279: they are fixed) — the epoch rule both by
OffsetsForLeaderEpoch (Kafka 0.11–2.6) and by Fetch v12's DivergingEpoch (Kafka >= 2.7).
Logs are compared as [(offset, value, leader epoch)]."""
from __future__ import annotations

import pytest

from engine.cluster.cluster import Cluster
from engine.cluster.config import ClusterConfig
from engine.config import LONG_MAX
from engine.disk import Disk

A, B, C = 1, 2, 3
T = "t"


PROTOCOLS = ("offsets_for_leader_epoch", "diverging_epoch")


def make(tmp_path, truncation: str, brokers: int = 3, protocol: str = "offsets_for_leader_epoch", **log) -> Cluster:
    cfg = ClusterConfig.from_mapping({"brokers": brokers, "truncation": truncation, "min.insync.replicas": 1,
                                      "fetch.protocol": protocol, **log})
    return Cluster(Disk(tmp_path / "data"), cfg, seed=7)


def epoch_answers(c: Cluster, follower: int, protocol: str, leader: int | None = None) -> list:
    """(requested epoch, answered epoch, end offset) the leader sent ``follower``: the
    OffsetsForLeaderEpoch answers, or the DivergingEpoch of Fetch v12 responses."""
    if protocol == "diverging_epoch":
        assert not c.events.of_kind("epoch_request_sent")
        return [(e.last_fetched_epoch, e.epoch, e.end_offset) for e in c.events.of_kind("fetch_diverging")
                if e.follower == follower and leader in (None, e.broker)]
    assert not c.events.of_kind("fetch_diverging")
    return [(e.requested_epoch, e.epoch, e.end_offset) for e in c.events.of_kind("epoch_request_answered")
            if e.follower == follower and leader in (None, e.broker)]


def produce_and_wait(c: Cluster, value: str, acks: int = -1):
    rid = c.produce(T, 0, [value], acks=acks)
    res = c.run_until_idle_produce(rid)
    assert res is not None and res.status == "ok", res
    return res


def logs(c: Cluster, broker: int):
    return [(o, v.decode(), e) for o, v, e in c.log_values(broker, T, 0)]


# ---- scenario 1: HW truncation followed by an immediate leader election ----------------

def scenario1(tmp_path, truncation: str, protocol: str = "offsets_for_leader_epoch", unclean: bool = True) -> Cluster:
    # unclean.leader.election.enable=true was Kafka 0.10's default; a 0.10 follower may only
    # truncate below its log end (OFFSET_OUT_OF_RANGE) when it is on.
    c = make(tmp_path, truncation, protocol=protocol, **{"flush.messages": 1,
                                                         "unclean.leader.election.enable": unclean})
    c.create_topic(T, 1, 2, assignment=[[A, B]])
    c.advance(10)
    produce_and_wait(c, "m1")
    c.advance(6000)                      # B learns HW=1 and checkpoints it
    assert c.replica(B, T, 0).hw == 1
    produce_and_wait(c, "m2")            # acked the moment A sees B's fetch(2) ...
    assert c.replica(A, T, 0).hw == 2
    assert c.replica(B, T, 0).hw == 1    # ... before any response carrying HW 2 reached B
    c.crash(B)
    c.advance(5100)                      # A checkpoints HW 2; B not yet fenced
    c.restart(B)
    c.crash(A)                           # A dies before B ever fetches from it again
    c.advance(12000)                     # controller fences A and elects B (epoch 1)
    assert c.controller.partition(T, 0).leader == B
    assert c.controller.partition(T, 0).leader_epoch == 1
    c.restart(A)
    c.advance(3000)
    return c


def test_scenario1_hw_truncation_loses_acknowledged_m2(tmp_path):
    c = scenario1(tmp_path, "hw")
    assert logs(c, B) == [(0, "m1", 0)]
    assert logs(c, A) == [(0, "m1", 0)]
    kinds = [(e.broker, e.reason) for e in c.events.of_kind("replica_truncated")]
    assert (B, "hw") in kinds and (A, "out_of_range") in kinds
    produce_and_wait(c, "m3")
    c.advance(1000)
    assert logs(c, A) == logs(c, B) == [(0, "m1", 0), (1, "m3", 1)]


def test_scenario1_hw_truncation_with_unclean_election_off_stops_that_partition_only(tmp_path):
    """Kafka 0.10's fetcher: the leader's log ends below this replica's and unclean election
    is off, so truncating is refused as fatal. Here the partition's fetcher stops on A (0.10
    exited the broker); A itself keeps running and keeps following its other partitions."""
    c = make(tmp_path, "hw", **{"flush.messages": 1})
    c.create_topic("other", 1, 2, assignment=[[B, A]])        # A follows B here
    c.create_topic(T, 1, 2, assignment=[[A, B]])
    c.advance(10)
    produce_and_wait(c, "m1")
    c.advance(6000)
    produce_and_wait(c, "m2")
    c.crash(B)
    c.advance(5100)
    c.restart(B)
    c.crash(A)
    c.advance(12000)
    c.restart(A)
    c.advance(3000)
    assert c.controller.partition(T, 0).leader == B
    failed = c.events.of_kind("replica_fetch_failed")
    assert [(e.broker, e.topic, e.error) for e in failed] == [(A, T, "TRUNCATION_NOT_ALLOWED")]
    assert logs(c, A) == [(0, "m1", 0), (1, "m2", 0)]          # nothing cut
    assert c.replica(A, T, 0).fetcher.state_name == "failed"
    assert c.brokers[A].alive
    c.produce("other", 0, ["o1"])
    c.advance(1000)
    assert [v for _, v, _ in c.log_values(A, "other", 0)] == [b"o1"]   # A still follows "other"
    assert A not in c.controller.partition(T, 0).isr


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_scenario1_epoch_truncation_keeps_m2(tmp_path, protocol):
    c = scenario1(tmp_path, "epoch", protocol)
    assert logs(c, B) == [(0, "m1", 0), (1, "m2", 0)]
    assert logs(c, A) == [(0, "m1", 0), (1, "m2", 0)]
    assert [[e.epoch, e.start_offset] for e in c.replica(B, T, 0).log.leader_epoch_cache.entries] == [[0, 0], [1, 2]]
    if protocol == "diverging_epoch":
        # A's last fetched epoch 0 ends at 2 on B too: nothing diverges, no answer needed.
        assert epoch_answers(c, A, protocol) == []
        assert any(e.broker == A and e.last_fetched_epoch == 0 and e.fetch_offset == 2
                   for e in c.events.of_kind("fetch_sent"))
    else:
        assert (0, 0, 2) in epoch_answers(c, A, protocol)
    assert not [e for e in c.events.of_kind("replica_truncated") if e.to_offset < e.from_offset]
    produce_and_wait(c, "m3")
    c.advance(1000)
    assert logs(c, A) == logs(c, B) == [(0, "m1", 0), (1, "m2", 0), (2, "m3", 1)]


# ---- scenario 2: replica divergence after multiple hard failures ------------------------

def scenario2(tmp_path, truncation: str, protocol: str = "offsets_for_leader_epoch") -> Cluster:
    c = make(tmp_path, truncation, protocol=protocol)
    c.set_config("broker", A, {"flush.messages": 1})          # A fsyncs every message
    c.set_config("broker", B, {"flush.messages": 1})          # B fsyncs m1 ...
    c.create_topic(T, 1, 2, assignment=[[A, B]])
    c.advance(10)
    produce_and_wait(c, "m1")
    c.advance(1000)
    c.set_config("broker", B, {"flush.messages": LONG_MAX})   # ... but not m2 (page cache only)
    produce_and_wait(c, "m2")
    c.advance(6000)                                           # HW 2 on both, checkpointed
    assert c.replica(A, T, 0).hw == c.replica(B, T, 0).hw == 2
    c.crash(A)
    c.crash(B)                                                # power loss: B loses m2
    c.advance(12000)                                          # both fenced: partition offline
    assert c.controller.partition(T, 0).leader == -1
    c.restart(B)
    c.advance(1000)                                           # B elected, epoch 1
    assert c.controller.partition(T, 0).leader == B
    assert logs(c, B) == [(0, "m1", 0)]
    produce_and_wait(c, "m3")
    c.restart(A)
    c.advance(3000)
    return c


def test_scenario2_hw_truncation_diverges(tmp_path):
    c = scenario2(tmp_path, "hw")
    assert logs(c, A) == [(0, "m1", 0), (1, "m2", 0)]
    assert logs(c, B) == [(0, "m1", 0), (1, "m3", 1)]
    # Same offsets, same HW, different data: and A is back in the ISR.
    assert c.replica(A, T, 0).hw == c.replica(B, T, 0).hw == 2
    assert A in c.controller.partition(T, 0).isr


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_scenario2_epoch_truncation_converges(tmp_path, protocol):
    c = scenario2(tmp_path, "epoch", protocol)
    assert logs(c, A) == logs(c, B) == [(0, "m1", 0), (1, "m3", 1)]
    for b in (A, B):
        cache = c.replica(b, T, 0).log.leader_epoch_cache.entries
        assert [[e.epoch, e.start_offset] for e in cache] == [[0, 0], [1, 1]]
    # A's epoch 0 ends at 1 on B (epoch 1 starts there), below A's log end 2.
    assert (0, 0, 1) in epoch_answers(c, A, protocol)
    reason = "diverging_epoch" if protocol == "diverging_epoch" else "epoch"
    cut = [e for e in c.events.of_kind("replica_truncated") if e.broker == A]
    assert [(e.from_offset, e.to_offset, e.reason) for e in cut] == [(2, 1, reason)]


# ---- KIP-279: a follower holding an epoch the leader never saw -------------------------

def kip279(tmp_path, truncation: str, protocol: str = "offsets_for_leader_epoch") -> Cluster:
    c = make(tmp_path, truncation, brokers=4, protocol=protocol, **{"flush.messages": 1})
    c.create_topic(T, 1, 3, assignment=[[A, C, B]])     # C before B in assignment order
    c.advance(10)
    produce_and_wait(c, "m1")
    c.advance(1000)
    c.cut_link(A, C)                                      # C stops receiving from A
    produce_and_wait(c, "m2", acks=1)                     # A: m2@1(0); B copies it, C does not
    c.advance(100)
    c.cut_link(B, C)                                      # B will never fetch from C
    c.crash(A)
    c.advance(12000)                                      # C (first in ISR order) leads, epoch 1
    assert c.controller.partition(T, 0).leader == C
    produce_and_wait(c, "m2'", acks=1)                    # C: m2'@1(1)
    c.crash(C)
    c.advance(12000)                                      # B leads, epoch 2
    assert c.controller.partition(T, 0).leader == B
    c.heal_all()
    produce_and_wait(c, "m3", acks=1)
    c.restart(C)
    c.advance(3000)
    return c


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_kip279_epoch_truncation_removes_unseen_epoch(tmp_path, protocol):
    c = kip279(tmp_path, "epoch", protocol)
    assert [[e.epoch, e.start_offset] for e in c.replica(B, T, 0).log.leader_epoch_cache.entries] == [[0, 0], [2, 2]]
    # C asks about (or last fetched) epoch 1, which B never had: B answers with epoch 0, ending at 2.
    assert epoch_answers(c, C, protocol, leader=B)[0] == (1, 0, 2)
    if protocol == "diverging_epoch":
        # The diverged fetch (offset 2, epoch 1) did not count as C's position on B: the
        # first remote LEO B records for C is where C truncated to.
        ups = [e.new for e in c.events.of_kind("remote_leo_updated") if e.broker == B and e.follower == C]
        assert ups[0] == 1
    assert logs(c, C) == logs(c, B) == [(0, "m1", 0), (1, "m2", 0), (2, "m3", 2)]


def test_kip279_under_hw_truncation_loses_uncommitted_m2(tmp_path):
    c = kip279(tmp_path, "hw")
    # Pre-0.11, B cut its log to its HW (1) when it became C's follower: m2 is gone, and
    # every replica agrees on the rest.
    assert logs(c, C) == logs(c, B) == [(0, "m1", 0), (1, "m3", 2)]
