"""With no network delay, a fetch that finds data is answered as soon as the task that read it
returns (``Scheduler.run_soon``), not through a heap task: the same records end up in the same
places as with a delay, the stream replays byte for byte from a seed, and every delivery check
(a crashed follower, a cut link) still applies."""
from __future__ import annotations

from engine.cluster.cluster import Cluster
from engine.cluster.config import ClusterConfig
from engine.cluster.network import FetchRequest, FetchResponse
from engine.disk import Disk
from engine.records import iter_batches


def _cluster(root, latency: int) -> Cluster:
    c = Cluster(Disk(root), ClusterConfig(brokers=3, network_latency_ms=latency), seed=3)
    c.create_topic("t", 1, 3, {"min.insync.replicas": 2}, assignment=[[0, 1, 2]])
    c.advance(1000)
    return c


def _produce(c: Cluster, n: int) -> list[int]:
    ids = []
    for i in range(n):
        ids.append(c.produce("t", 0, [f"v{i}-{j}" for j in range(3)], acks=-1))
        c.advance(2)
    c.advance(600)           # a parked fetch expires: the followers learn the last HW
    return ids



def _values(data: bytes) -> list:
    return [(r.offset, r.value) for _, batch in iter_batches(data) for r in batch.records]


def test_zero_delay_answers_are_not_heap_tasks_and_replicate_the_same_records(tmp_path):
    c0 = _cluster(tmp_path / "zero", 0)
    pushed = []
    push = c0.scheduler._push
    c0.scheduler._push = lambda due, prio, fn, args, name, period: (
        pushed.append(args[0] if name == "net" else []) or push(due, prio, fn, args, name, period))
    ids = _produce(c0, 30)
    c0.scheduler._push = push
    assert all(c0.produce_results[i].status == "ok" for i in ids)
    through_heap = [item[4] for items in pushed for item in items]     # every delivery task's messages
    assert [m for m in through_heap if type(m) is FetchResponse and m.records] == []   # answers with data: soon
    assert sum(type(m) is FetchRequest for m in through_heap) >= 60     # the fetches themselves still travel
    c1 = _cluster(tmp_path / "one", 1)
    ids1 = _produce(c1, 30)
    assert all(c1.produce_results[i].status == "ok" for i in ids1)
    for c in (c0, c1):      # the replicas hold the leader's bytes; both clusters the same records
        logs = [c.brokers[b].partitions[("t", 0)] for b in (0, 1, 2)]
        assert [(p.leo, p.hw) for p in logs] == [(90, 90)] * 3
        data = {p.log.read(0, 1 << 30).records for p in logs}
        assert len(data) == 1
        assert _values(data.pop()) == [(i, f"v{i // 3}-{i % 3}".encode()) for i in range(90)]
    assert c0.network.in_flight() == [] or all(m["api"] != "FetchResponse" or not m["message"].records
                                               for m in c0.network.in_flight())


def test_zero_delay_stream_replays_from_its_seed(tmp_path):
    digests = []
    for k in range(2):
        c = _cluster(tmp_path / str(k), 0)
        _produce(c, 20)
        c.crash(2)
        _produce(c, 5)
        c.restart(2)
        _produce(c, 5)
        digests.append((c.events.seq, c.events.digest()))
    assert digests[0] == digests[1]


def test_a_soon_answer_still_meets_a_cut_link_and_a_crashed_follower(tmp_path):
    c = _cluster(tmp_path, 0)
    _produce(c, 3)
    c.network.cut(0, 1)
    c.crash(2)
    before = c.network.dropped
    c.produce("t", 0, ["x"], acks=1)
    c.advance(50)
    p1 = c.brokers[1].partitions[("t", 0)]
    assert p1.leo == 9                       # nothing crossed the cut link
    assert c.network.dropped >= before
    c.network.heal(0, 1)
    c.advance(35_000)                        # the lost fetch times out (request.timeout.ms) and is sent again
    assert p1.leo == 10
