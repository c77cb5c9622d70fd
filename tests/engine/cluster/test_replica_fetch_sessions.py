"""Followers fetch in KIP-227 sessions, one fetcher per source broker (engine/cluster/replica_fetcher.py
SourceFetcher, the leader's answer in broker.py): an idle partition costs no message, event or
timer, so an idle cluster's cost does not grow with its partitions; a produce to one partition
of many sends only that partition; a leader that lost the session (restart) is answered with a
full fetch, and nothing is lost."""
from __future__ import annotations

from engine.cluster.cluster import Cluster
from engine.cluster.config import ClusterConfig
from engine.cluster.network import SessionFetchRequest
from engine.disk import Disk


def _cluster(root, partitions: int) -> Cluster:
    c = Cluster(Disk(root), ClusterConfig(brokers=3, replica_fetch_sessions=True), seed=5)
    c.create_topic("t", partitions, 3, {"min.insync.replicas": 2}, assignment=[[0, 1, 2]] * partitions)
    c.advance(2000)
    return c


def _idle_cost(c: Cluster, ms: int) -> tuple[int, int, dict]:
    seq, sent = c.events.seq, c.network.sent
    kinds: dict[str, int] = {}
    c.advance(ms)
    for ev in c.events.since(seq):
        kinds[ev.event.kind] = kinds.get(ev.event.kind, 0) + 1
    return c.events.seq - seq, c.network.sent - sent, kinds


def test_idle_cost_does_not_grow_with_partitions(tmp_path):
    one = _cluster(tmp_path / "one", 1)
    many = _cluster(tmp_path / "many", 100)
    e1, m1, k1 = _idle_cost(one, 10_000)
    e100, m100, k100 = _idle_cost(many, 10_000)
    # The same messages (heartbeats, two followers' session fetches every 500 ms and their
    # answers) and the same events: no per-partition fetch, park, answer or receipt.
    assert m100 == m1 and e100 == e1, (k1, k100)
    for kind in ("fetch_sent", "fetch_parked", "fetch_answered", "fetch_received"):
        assert k100.get(kind, 0) == 0
    sessions = many.brokers[0].fetch_sessions
    assert sorted((s.privileged, len(s.partitions)) for s in sessions.sessions.values()) == [(True, 100)] * 2


def test_a_produce_to_one_partition_of_many_sends_only_that_partition(tmp_path):
    c = _cluster(tmp_path / "c", 100)
    sent: list = []
    send = c.network.send

    def spy(src, dst, msg):
        if type(msg) is SessionFetchRequest:
            sent.append(msg)
        return send(src, dst, msg)
    c.network.send = spy
    seq = c.events.seq
    rid = c.produce("t", 37, ["x", "y"], acks=-1)
    c.advance(50)
    assert c.produce_results[rid].status == "ok"
    rows = {(r.topic, r.partition) for m in sent for r in m.partitions}
    assert rows == {("t", 37)}
    assert all(m.session_id != 0 and m.session_epoch > 0 for m in sent)    # incremental
    answered = [(e.event.follower, e.event.partition, e.event.records) for e in c.events.since(seq)
                if e.event.kind == "fetch_answered"]
    assert answered and {p for _, p, _ in answered} == {37}
    for b in (1, 2):
        assert c.brokers[b].partitions[("t", 37)].leo == 2
        assert c.brokers[b].partitions[("t", 36)].leo == 0


def test_a_follower_restart_opens_a_new_session_and_an_evicted_session_starts_over_full(tmp_path):
    c = _cluster(tmp_path / "c", 4)
    for p in range(4):
        c.produce("t", p, [f"a{p}"], acks=-1)
    c.advance(100)
    before = {b: c.brokers[b].fetchers[0].handler.session_id for b in (1, 2)}
    c.crash(1)
    c.advance(3000)
    c.restart(1)
    c.advance(3000)
    after = {b: c.brokers[b].fetchers[0].handler.session_id for b in (1, 2)}
    assert after[1] not in (0, before[1])          # the restarted follower opened a new session
    assert after[2] == before[2]                   # the other one's survived
    # The leader forgets every session (as an eviction or its own restart would): the next
    # incremental fetches are refused with FETCH_SESSION_ID_NOT_FOUND and start over full.
    cache = c.brokers[0].fetch_sessions
    for sid in list(cache.sessions):
        cache.remove(sid)
    sent: list = []
    send = c.network.send

    def spy(src, dst, msg):
        sent.append(msg)
        return send(src, dst, msg)
    c.network.send = spy
    for p in range(4):
        c.produce("t", p, [f"b{p}"], acks=-1)
    c.advance(1000)
    errors = [m.error for m in sent if m.api == "FetchResponse" and getattr(m, "error", None)]
    assert "FETCH_SESSION_ID_NOT_FOUND" in errors
    full = [m for m in sent if type(m) is SessionFetchRequest and m.session_epoch == 0]
    assert {m.replica_id for m in full} == {1, 2} and all(len(m.partitions) == 4 for m in full)
    for b in (0, 1, 2):
        for p in range(4):
            part = c.brokers[b].partitions[("t", p)]
            assert (part.leo, part.hw) == (2, 2), (b, p)
    for b in (1, 2):      # each fetcher's session is one its leader holds, at the epoch it expects
        f = c.brokers[b].fetchers[0]
        s = cache.get(f.handler.session_id)
        assert s is not None and s.epoch == f.handler.epoch + (1 if f.inflight is not None else 0)


# ---- seeded fault schedules with sessions ---------------------------------------------------

def _schedule(seed, truncation, acks, root):
    from engine.cluster.scenarios import run_schedule
    return run_schedule(seed, root, truncation=truncation, acks=acks, brokers=3 + seed % 5, steps=8 + seed % 13,
                        overrides={"replica.fetch.sessions": True})


def test_fault_schedules_with_sessions_never_lose_an_acknowledged_record(tmp_path):
    for seed in range(150):
        run = _schedule(seed, "epoch", "all", str(tmp_path / f"s{seed}"))
        assert run.checker.findings == [], (seed, run.checker.findings[0])
        assert run.checker.event_counts.get("replica_fetch_failed", 0) == 0, seed


def test_the_same_harness_with_sessions_finds_losses_under_hw_truncation(tmp_path):
    for seed in range(300):
        run = _schedule(seed, "hw", "all", str(tmp_path / f"s{seed}"))
        if any(f["kind"] == "check_acked_record_lost" for f in run.checker.findings):
            return
    raise AssertionError("no schedule lost an acknowledged record under truncation=hw with sessions")
