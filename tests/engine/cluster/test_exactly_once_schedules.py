"""Seeded fault schedules for the idempotent producer and transactions (issue 11).

Each seed drives one cluster: a producer sends numbered batches (or transactions that
commit or abort at random) while the schedule crashes and restarts brokers, cuts the
leader→client link one way (answers lost, so the producer retries), and fails the
transaction coordinator over. After healing, a consumer reads each partition from the
start. Asserted, seed by seed (the seed is in the failure message):

* idempotent: every acknowledged value appears exactly once, in send order, per partition;
* transactional: read_committed sees exactly the committed transactions' values, once each,
  in order, and nothing of an aborted one;
* the same schedules without idempotence do write duplicates (in some seeds).
"""
from __future__ import annotations

import random

import pytest

from engine.cluster.cluster import Cluster
from engine.cluster.config import ClusterConfig
from engine.cluster.transactions import TXN_TOPIC, transaction_service
from engine.disk import Disk
from engine.errors import KafkaError

T = "t"
CLIENT = -1


def _cluster(root, seed: int) -> Cluster:
    c = Cluster(Disk(root), ClusterConfig.from_mapping({"brokers": 3, "request.timeout.ms": 1500,
                                                         "replica.lag.time.max.ms": 3000,
                                                         "broker.session.timeout.ms": 1800,
                                                         "broker.heartbeat.interval.ms": 300}), seed=seed)
    c.create_topic(T, 2, 3, assignment=[[0, 1, 2], [1, 2, 0]],
                   config={"min.insync.replicas": 2, "flush.messages": 1})
    c.advance(100)
    return c


def _fault(c: Cluster, rng: random.Random, down: set) -> None:
    kind = rng.choice(["lose_answers", "crash", "restart", "coordinator", "none"])
    if kind == "lose_answers":
        leader = c.controller.partition(T, rng.randrange(2)).leader
        if leader >= 0:
            c.cut_link(leader, CLIENT, both=False)
            c.advance(rng.randint(50, 900))
            c.heal_link(leader, CLIENT, both=False)
    elif kind == "crash" and len(down) < 1:
        b = rng.randrange(3)
        c.crash(b)
        down.add(b)
    elif kind == "restart" and down:
        b = down.pop()
        c.restart(b)
    elif kind == "coordinator" and not down and getattr(c, "transactions", None) is not None \
            and TXN_TOPIC in c.controller.topics:
        leader = c.controller.partition(TXN_TOPIC, 0).leader
        if leader >= 0:
            c.crash(leader)
            down.add(leader)


def _heal(c: Cluster, down: set) -> None:
    c.heal_all()
    for b in sorted(down):
        c.restart(b)
    down.clear()
    c.advance(20_000)


def _read_all(c: Cluster, partition: int, isolation: str) -> list[bytes]:
    out, offset = [], 0
    while True:
        recs = c.consume(T, partition, offset, 1000, isolation=isolation)
        if not recs:
            return out
        out.extend(r.value for r in recs)
        offset = recs[-1].offset + 1


def run_idempotent(root, seed: int, idempotent: bool) -> tuple[dict, dict]:
    rng = random.Random(seed)
    c = _cluster(root, seed)
    c.create_producer("p", idempotent=idempotent, delivery_timeout_ms=60_000)
    down: set = set()
    sends = {0: [], 1: []}
    rids = []
    for i in range(8):
        p = rng.randrange(2)
        vals = [f"{seed}.{i}.{j}".encode() for j in range(rng.randint(1, 3))]
        rids.append((p, vals, c.produce(T, p, vals, producer="p")))
        sends[p].append(vals)
        c.advance(rng.randint(1, 200))
        _fault(c, rng, down)
    _heal(c, down)
    acked = {0: [], 1: []}
    for p, vals, rid in rids:
        res = c.produce_results.get(rid)
        if res is not None and res.status == "ok":
            acked[p].extend(vals)
    seen = {p: _read_all(c, p, "read_uncommitted") for p in (0, 1)}
    return acked, seen


@pytest.mark.parametrize("seed", range(20))
def test_idempotent_producer_writes_every_acknowledged_value_once_in_order(tmp_path, seed):
    acked, seen = run_idempotent(tmp_path, seed, idempotent=True)
    for p in (0, 1):
        assert len(seen[p]) == len(set(seen[p])), f"seed {seed}: duplicates in partition {p}: {seen[p]}"
        missing = [v for v in acked[p] if v not in seen[p]]
        assert not missing, f"seed {seed}: acknowledged but not read: {missing}"
        order = [v for v in seen[p] if v in acked[p]]
        assert order == [v for v in acked[p] if v in order], f"seed {seed}: reordered in partition {p}"


def test_without_idempotence_the_same_schedules_write_duplicates(tmp_path):
    dup_seeds = []
    for seed in range(20):
        _, seen = run_idempotent(tmp_path / str(seed), seed, idempotent=False)
        if any(len(s) != len(set(s)) for s in seen.values()):
            dup_seeds.append(seed)
    assert dup_seeds, "no schedule produced a duplicate without idempotence"


def run_transactions(root, seed: int) -> tuple[dict, dict, dict]:
    rng = random.Random(seed)
    c = _cluster(root, seed)
    transaction_service(c, num_partitions=1)
    c.create_producer("tx", transactional_id="app-1", transaction_timeout_ms=60_000)
    c.init_transactions("tx")
    c.advance(1000)
    down: set = set()
    committed = {0: [], 1: []}
    aborted = {0: [], 1: []}
    for i in range(5):
        prod = c.producers["tx"]
        for _ in range(200):
            if prod.txn_state == "ready":
                break
            c.advance(50)
        if prod.txn_state != "ready":
            break
        c.begin_transaction("tx")
        batch = {0: [], 1: []}
        for j in range(rng.randint(1, 3)):
            p = rng.randrange(2)
            vals = [f"{seed}.{i}.{j}".encode()]
            c.produce(T, p, vals, producer="tx")
            batch[p].extend(vals)
            c.advance(rng.randint(1, 100))
            _fault(c, rng, down)
        commit = rng.random() < 0.6
        try:
            (c.commit_transaction if commit else c.abort_transaction)("tx")
        except KafkaError:
            break
        for _ in range(400):
            if prod.txn_state not in ("committing", "aborting"):
                break
            c.advance(50)
            if down and rng.random() < 0.05:
                c.restart(down.pop())
        if prod.txn_state == "abortable_error":      # a send failed: the commit became an abort
            c.abort_transaction("tx")
            for _ in range(400):
                if prod.txn_state != "aborting":
                    break
                c.advance(50)
            commit = False
        target = committed if (commit and prod.txn_state == "ready") else aborted
        for p in (0, 1):
            target[p].extend(batch[p])
        if prod.txn_state != "ready":
            break
    _heal(c, down)
    seen = {p: _read_all(c, p, "read_committed") for p in (0, 1)}
    return committed, aborted, seen


@pytest.mark.parametrize("seed", range(15))
def test_read_committed_sees_committed_transactions_once_and_no_aborted_record(tmp_path, seed):
    committed, aborted, seen = run_transactions(tmp_path, seed)
    for p in (0, 1):
        assert not set(seen[p]) & set(aborted[p]), f"seed {seed}: aborted records read in partition {p}"
        assert seen[p] == committed[p], f"seed {seed}: partition {p} read {seen[p]}, committed {committed[p]}"


@pytest.mark.slow
def test_sweep_of_1000_exactly_once_schedules(tmp_path):
    for seed in range(1000, 1500):
        acked, seen = run_idempotent(tmp_path / f"i{seed}", seed, idempotent=True)
        for p in (0, 1):
            assert len(seen[p]) == len(set(seen[p])), f"seed {seed}: duplicates"
            assert all(v in seen[p] for v in acked[p]), f"seed {seed}: acknowledged value lost"
        committed, aborted, seen = run_transactions(tmp_path / f"t{seed}", seed)
        for p in (0, 1):
            assert seen[p] == committed[p] and not set(seen[p]) & set(aborted[p]), f"seed {seed}"
