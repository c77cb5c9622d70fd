"""The KIP-101 failure scenarios of reference §5.7 (and the KIP-279 extra case), driven
through Cluster methods, under truncation="hw" (pre-0.11: they go wrong) and
truncation="epoch" (KIP-101/279: they are fixed). Logs are compared as
[(offset, value, leader epoch)]."""
from __future__ import annotations

from engine.cluster.cluster import Cluster
from engine.cluster.config import ClusterConfig
from engine.config import LONG_MAX
from engine.disk import Disk

A, B, C = 1, 2, 3
T = "t"


def make(tmp_path, truncation: str, brokers: int = 3, **log) -> Cluster:
    cfg = ClusterConfig.from_mapping({"brokers": brokers, "truncation": truncation, "min.insync.replicas": 1, **log})
    return Cluster(Disk(tmp_path / "data"), cfg, seed=7)


def produce_and_wait(c: Cluster, value: str, acks: int = -1):
    rid = c.produce(T, 0, [value], acks=acks)
    res = c.run_until_idle_produce(rid)
    assert res is not None and res.status == "ok", res
    return res


def logs(c: Cluster, broker: int):
    return [(o, v.decode(), e) for o, v, e in c.log_values(broker, T, 0)]


# ---- scenario 1: HW truncation followed by an immediate leader election ----------------

def scenario1(tmp_path, truncation: str) -> Cluster:
    c = make(tmp_path, truncation, **{"flush.messages": 1})
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


def test_scenario1_epoch_truncation_keeps_m2(tmp_path):
    c = scenario1(tmp_path, "epoch")
    assert logs(c, B) == [(0, "m1", 0), (1, "m2", 0)]
    assert logs(c, A) == [(0, "m1", 0), (1, "m2", 0)]
    assert [[e.epoch, e.start_offset] for e in c.replica(B, T, 0).log.leader_epoch_cache.entries] == [[0, 0], [1, 2]]
    answered = c.events.of_kind("epoch_request_answered")
    assert any(e.follower == A and e.requested_epoch == 0 and (e.epoch, e.end_offset) == (0, 2) for e in answered)
    assert not [e for e in c.events.of_kind("replica_truncated") if e.to_offset < e.from_offset]
    produce_and_wait(c, "m3")
    c.advance(1000)
    assert logs(c, A) == logs(c, B) == [(0, "m1", 0), (1, "m2", 0), (2, "m3", 1)]


# ---- scenario 2: replica divergence after multiple hard failures ------------------------

def scenario2(tmp_path, truncation: str) -> Cluster:
    c = make(tmp_path, truncation)
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


def test_scenario2_epoch_truncation_converges(tmp_path):
    c = scenario2(tmp_path, "epoch")
    assert logs(c, A) == logs(c, B) == [(0, "m1", 0), (1, "m3", 1)]
    for b in (A, B):
        cache = c.replica(b, T, 0).log.leader_epoch_cache.entries
        assert [[e.epoch, e.start_offset] for e in cache] == [[0, 0], [1, 1]]
    cut = [e for e in c.events.of_kind("replica_truncated") if e.broker == A]
    assert [(e.from_offset, e.to_offset, e.reason) for e in cut] == [(2, 1, "epoch")]


# ---- KIP-279: a follower holding an epoch the leader never saw -------------------------

def kip279(tmp_path, truncation: str) -> Cluster:
    c = make(tmp_path, truncation, brokers=4, **{"flush.messages": 1})
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


def test_kip279_epoch_truncation_removes_unseen_epoch(tmp_path):
    c = kip279(tmp_path, "epoch")
    assert [[e.epoch, e.start_offset] for e in c.replica(B, T, 0).log.leader_epoch_cache.entries] == [[0, 0], [2, 2]]
    ans = [e for e in c.events.of_kind("epoch_request_answered") if e.follower == C and e.broker == B]
    assert (ans[0].requested_epoch, ans[0].epoch, ans[0].end_offset) == (1, 0, 2)
    assert logs(c, C) == logs(c, B) == [(0, "m1", 0), (1, "m2", 0), (2, "m3", 2)]


def test_kip279_under_hw_truncation_loses_uncommitted_m2(tmp_path):
    c = kip279(tmp_path, "hw")
    # Pre-0.11, B cut its log to its HW (1) when it became C's follower: m2 is gone, and
    # every replica agrees on the rest.
    assert logs(c, C) == logs(c, B) == [(0, "m1", 0), (1, "m3", 2)]
