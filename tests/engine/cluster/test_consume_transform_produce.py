"""Seeded fault schedules for consume-transform-produce (issue 11, KIP-98/KIP-447).

An input topic holds numbered records. A transactional app reads them (read_committed),
writes each one's transform to the output topic and commits its input positions with
``sendOffsetsToTransaction`` in the same transaction. The schedule, from the seed, loses
answers (leader→client cut one way, so produces are retried), crashes and restarts
brokers, fails the transaction coordinator and the group coordinator over, aborts some
transactions and crashes the app itself mid-transaction (a new instance with the same
``transactional.id`` fences the old one and resumes from the committed offsets).
Asserted, seed by seed (the seed is in the failure message):

* a read_committed reader of the output sees each input record's transform exactly once,
  in input order per partition, once the app has caught up;
* every time the app (re)starts, OffsetFetch(require_stable) gives the position after the
  last transaction that committed — never an aborted one's;
* at the end the group's committed offsets are the input's end, and every replica of the
  offsets partition rebuilds the same from its own log.
"""
from __future__ import annotations

import random

import pytest

from engine.cluster.cluster import Cluster
from engine.cluster.config import ClusterConfig
from engine.cluster.consumer import group_service
from engine.cluster.transactions import TXN_TOPIC, transaction_service
from engine.cluster.txn_offsets import offset_fetch, rebuild
from engine.disk import Disk
from engine.errors import KafkaError
from engine.group.offsets import OFFSETS_TOPIC

IN, OUT, GROUP, TID = "in", "out", "ctp", "ctp-app"
PARTS = (0, 1)
CLIENT = -1
PER_PARTITION = 8


def transform(v: bytes) -> bytes:
    return b"T(" + v + b")"


def _cluster(root, seed: int) -> Cluster:
    c = Cluster(Disk(root), ClusterConfig.from_mapping({"brokers": 3, "request.timeout.ms": 1500,
                                                         "replica.lag.time.max.ms": 3000,
                                                         "broker.session.timeout.ms": 1800,
                                                         "broker.heartbeat.interval.ms": 300}), seed=seed)
    for t in (IN, OUT):
        c.create_topic(t, 2, 3, assignment=[[0, 1, 2], [1, 2, 0]],
                       config={"min.insync.replicas": 2, "flush.messages": 1})
    transaction_service(c, num_partitions=1)
    group_service(c, offsets_partitions=1).ensure_offsets_topic()
    c.advance(200)
    inputs = {p: [f"{seed}.{p}.{i}".encode() for i in range(PER_PARTITION)] for p in PARTS}
    rids = [c.produce(IN, p, inputs[p][i:i + 2]) for p in PARTS for i in range(0, PER_PARTITION, 2)]
    for _ in range(100):
        if all(r in c.produce_results for r in rids):
            break
        c.advance(50)
    assert all(c.produce_results[r].status == "ok" for r in rids), f"seed {seed}: input not written"
    return c, inputs


class App:
    """One instance of the transactional app (a producer plus positions)."""

    def __init__(self, c: Cluster, n: int) -> None:
        self.c, self.name = c, f"app-{n}"
        c.create_producer(self.name, transactional_id=TID, transaction_timeout_ms=30_000)
        c.init_transactions(self.name)

    @property
    def prod(self):
        return self.c.producers[self.name]

    def wait(self, *states: str, limit: int = 600) -> bool:
        for _ in range(limit):
            if self.prod.txn_state in states:
                return True
            self.c.advance(50)
        return self.prod.txn_state in states

    def positions(self) -> dict | None:
        """OffsetFetch with require_stable, retried while offsets are unstable."""
        for _ in range(400):
            got = offset_fetch(self.c, GROUP, require_stable=True)
            if got["error"] == "NONE" and not got["unstable"]:
                return {p: got["offsets"].get((IN, p), 0) for p in PARTS}
            self.c.advance(50)
        return None


def _fault(c: Cluster, rng: random.Random, down: set) -> str:
    kind = rng.choice(["lose_answers", "crash", "restart", "txn_coordinator", "group_coordinator", "none"])
    if kind == "lose_answers":
        leader = c.controller.partition(OUT, rng.choice(PARTS)).leader
        if leader >= 0:
            c.cut_link(leader, CLIENT, both=False)
            c.advance(rng.randint(50, 900))
            c.heal_link(leader, CLIENT, both=False)
    elif kind == "crash" and not down:
        b = rng.randrange(3)
        c.crash(b)
        down.add(b)
    elif kind == "restart" and down:
        c.restart(down.pop())
    elif kind in ("txn_coordinator", "group_coordinator") and not down:
        leader = c.controller.partition(TXN_TOPIC if kind == "txn_coordinator" else OFFSETS_TOPIC, 0).leader
        if leader >= 0:
            c.crash(leader)
            down.add(leader)
    return kind


def _read_all(c: Cluster, topic: str, p: int) -> list:
    out, offset = [], 0
    while True:
        recs = c.consume(topic, p, offset, 1000, isolation="read_committed")
        if not recs:
            return out
        out.extend(r.value for r in recs)
        offset = recs[-1].offset + 1


def run_schedule(root, seed: int, rounds: int = 14) -> dict:
    rng = random.Random(seed)
    c, inputs = _cluster(root, seed)
    down: set = set()
    instances = 0
    app = App(c, instances)
    confirmed = {p: 0 for p in PARTS}        # positions of the last transaction known committed
    uncertain = None                         # positions of a transaction whose outcome a crash hid
    pos = None
    resumes = []
    for i in range(rounds + 40):
        caught_up = pos is not None and all(pos[p] >= PER_PARTITION for p in PARTS)
        if i >= rounds:                      # the schedule is over: heal and let the app catch up
            if down or i == rounds:
                c.heal_all()
                for b in sorted(down):
                    c.restart(b)
                down.clear()
                c.advance(5000)
            if caught_up:
                break
        if pos is None:                      # (re)start: wait for the epoch, then the committed offsets
            if not app.wait("ready"):
                if i < rounds:
                    continue
                instances += 1
                app = App(c, instances)
                continue
            pos = app.positions()
            if pos is None:
                continue
            allowed = [confirmed] + ([uncertain] if uncertain is not None else [])
            assert pos in allowed, f"seed {seed}: resumed at {pos}, committed {allowed}"
            if pos == uncertain:
                confirmed = dict(uncertain)
            uncertain = None
            resumes.append(dict(pos))
        c.begin_transaction(app.name)
        new = dict(pos)
        try:
            for p in PARTS:
                recs = c.consume(IN, p, pos[p], rng.randint(1, 3), isolation="read_committed")
                if recs:
                    c.produce(OUT, p, [transform(r.value) for r in recs], producer=app.name)
                    new[p] = recs[-1].offset + 1
        except KafkaError:
            pass                              # input leader unavailable: commit what was read so far
        if i < rounds:
            _fault(c, rng, down)
        if new != pos:
            c.send_offsets_to_transaction(app.name, GROUP, {(IN, p): new[p] for p in PARTS})
        if i < rounds and rng.random() < 0.15:
            # The app crashes mid-transaction; a new instance takes over the transactional id.
            uncertain = None
            instances += 1
            app = App(c, instances)
            pos = None
            continue
        commit = i >= rounds or rng.random() < 0.8
        (c.commit_transaction if commit else c.abort_transaction)(app.name)
        app.wait("ready", "abortable_error", "fenced", "error:INVALID_TXN_STATE")
        state = app.prod.txn_state
        if state == "abortable_error":
            c.abort_transaction(app.name)
            app.wait("ready", "fenced")
            commit = False
            state = app.prod.txn_state
        if state == "ready":
            if commit:
                confirmed = dict(new)
                pos = new
            else:
                pos = app.positions()         # an abort: back to the committed positions
                assert pos in (None, confirmed), f"seed {seed}: after abort at {pos}, committed {confirmed}"
        else:                                 # stuck (a coordinator still down) or fenced: restart the app
            uncertain = dict(new) if commit else None
            instances += 1
            app = App(c, instances)
            pos = None
    c.advance(3000)
    out = {p: _read_all(c, OUT, p) for p in PARTS}
    final = offset_fetch(c, GROUP, require_stable=True)
    # What any replica would rebuild from its own log (a failover to it, markers included).
    replayed = [rebuild(c.replica(b, OFFSETS_TOPIC, 0).log)[0].get(GROUP, {})
                for b in sorted(c.brokers) if c.brokers[b].alive]
    return {"inputs": inputs, "out": out, "final": final, "resumes": resumes, "instances": instances,
            "replayed": replayed}


def check(seed: int, r: dict) -> None:
    for p in PARTS:
        want = [transform(v) for v in r["inputs"][p]]
        assert r["out"][p] == want, f"seed {seed}: out-{p} read {r['out'][p]}, want each transform once: {want}"
    assert r["final"]["offsets"] == {(IN, p): PER_PARTITION for p in PARTS}, f"seed {seed}: {r['final']}"
    assert all(x == r["final"]["offsets"] for x in r["replayed"]), f"seed {seed}: replicas rebuild {r['replayed']}"


@pytest.mark.parametrize("seed", range(8))
def test_each_input_record_is_transformed_exactly_once_under_faults(tmp_path, seed):
    check(seed, run_schedule(tmp_path, seed))


def test_the_schedules_include_app_restarts_that_resume_from_committed_offsets(tmp_path):
    restarts = 0
    for seed in range(8):
        r = run_schedule(tmp_path / str(seed), seed)
        restarts += r["instances"]
    assert restarts > 0, "no schedule restarted the app"


@pytest.mark.slow
def test_sweep_of_consume_transform_produce_schedules(tmp_path):
    for seed in range(100, 300):
        check(seed, run_schedule(tmp_path / str(seed), seed, rounds=20))
