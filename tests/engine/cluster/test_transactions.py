"""Transactions on the cluster (seed 003: exactly-once = idempotence + transactions; what
read_committed and read_uncommitted consumers see; zombie fencing by epoch)."""
from __future__ import annotations

import pytest

from engine.cluster.cluster import Cluster
from engine.cluster.commands import apply_command
from engine.cluster.config import ClusterConfig
from engine.cluster.transactions import (TXN_TOPIC, TxnMetadata, decode_txn_key, decode_txn_value, encode_txn_key,
                                         encode_txn_value, partition_for_transactional_id)
from engine.disk import Disk
from engine.errors import InvalidRequestError, InvalidTxnStateError

T = "t"


def make(tmp_path, seed: int = 5) -> Cluster:
    c = Cluster(Disk(tmp_path / "d"), ClusterConfig(brokers=3), seed=seed)
    c.create_topic(T, 2, 3, assignment=[[0, 1, 2], [1, 2, 0]], config={"min.insync.replicas": 2})
    apply_command(c, {"cmd": "configure_transactions", "transaction_state_log_num_partitions": 3})
    c.advance(50)
    return c


def ready(c: Cluster, name: str = "p", tid: str = "tx-1", **kw) -> None:
    c.create_producer(name, transactional_id=tid, **kw)
    c.init_transactions(name)
    c.advance(500)
    assert c.producers[name].txn_state == "ready", c.producers[name].txn_state


def values(records) -> list[bytes]:
    return [r.value for r in records]


def settle(c: Cluster, ms: int = 1000) -> None:
    c.advance(ms)


def test_txn_log_records_use_kafkas_key_and_value_layout():
    md = TxnMetadata("tx-1", 7, 2, 60000, "Ongoing", {("t", 1), ("t", 0), ("u", 3)}, 1000, 900)
    key = encode_txn_key("tx-1")
    assert key == b"\x00\x00\x00\x04tx-1" and decode_txn_key(key) == "tx-1"
    value = encode_txn_value(md)
    assert value[:17] == b"\x00\x00" + (7).to_bytes(8, "big") + b"\x00\x02" + (60000).to_bytes(4, "big") + b"\x01"
    back = decode_txn_value(value)
    assert back["state"] == "Ongoing" and sorted(back["partitions"]) == [("t", 0), ("t", 1), ("u", 3)]
    assert (back["last_update_ms"], back["start_ms"]) == (1000, 900)


def test_the_coordinator_is_the_leader_of_the_hashed_txn_state_partition(tmp_path):
    c = make(tmp_path)
    ready(c)
    p = partition_for_transactional_id("tx-1", 3)
    leader = c.controller.partition(TXN_TOPIC, p).leader
    assert c.transactions.state()["tx-1"]["coordinator"] == leader
    assert c.transactions.state()["tx-1"]["state"] == "Empty"


def test_committed_transaction_is_visible_to_read_committed_only_after_the_commit(tmp_path):
    c = make(tmp_path)
    ready(c)
    c.begin_transaction("p")
    c.produce(T, 0, ["a", "b"], producer="p")
    c.produce(T, 1, ["c"], producer="p")
    settle(c)
    assert values(c.consume(T, 0, isolation="read_uncommitted")) == [b"a", b"b"]
    assert c.consume(T, 0, isolation="read_committed") == []       # LSO holds at the transaction's start
    c.commit_transaction("p")
    settle(c)
    assert values(c.consume(T, 0, isolation="read_committed")) == [b"a", b"b"]
    assert values(c.consume(T, 1, isolation="read_committed")) == [b"c"]
    markers = c.events.of_kind("txn_marker_written")
    assert sorted((m.topic, m.partition, m.commit) for m in markers) == [(T, 0, True), (T, 1, True)]
    assert c.transactions.state()["tx-1"]["state"] == "CompleteCommit"
    assert c.producers["p"].txn_state == "ready"


def test_aborted_transaction_is_skipped_by_read_committed_and_indexed(tmp_path):
    c = make(tmp_path)
    ready(c)
    c.begin_transaction("p")
    c.produce(T, 0, ["x1", "x2"], producer="p")
    settle(c)
    c.abort_transaction("p")
    settle(c)
    c.begin_transaction("p")
    c.produce(T, 0, ["y"], producer="p")
    settle(c)
    c.commit_transaction("p")
    settle(c)
    assert values(c.consume(T, 0, isolation="read_uncommitted")) == [b"x1", b"x2", b"y"]
    assert values(c.consume(T, 0, isolation="read_committed")) == [b"y"]
    leader = c.replica(c.controller.partition(T, 0).leader, T, 0)
    aborted = leader.log.aborted_transactions(0, leader.hw)
    assert [(a.first_offset, a.last_offset) for a in aborted] == [(0, 2)]
    # Markers occupy offsets: x1 x2 ABORT y COMMIT.
    assert leader.log.log_end_offset == 5
    for b in range(3):
        assert c.replica(b, T, 0).log.aborted_transactions(0, 5) == aborted


def test_wrong_state_calls_get_invalid_txn_state_and_change_nothing(tmp_path):
    c = make(tmp_path)
    ready(c)
    with pytest.raises(InvalidTxnStateError):
        apply_command(c, {"cmd": "commit_transaction", "name": "p"})     # commit without begin
    with pytest.raises(InvalidTxnStateError):
        c.produce(T, 0, ["z"], producer="p")                             # produce outside a transaction
    c.begin_transaction("p")
    c.produce(T, 0, ["a"], producer="p")
    settle(c)
    c.abort_transaction("p")
    settle(c)
    with pytest.raises(InvalidTxnStateError):
        c.produce(T, 0, ["b"], producer="p")                             # produce after abort, no new begin
    with pytest.raises(InvalidRequestError):
        apply_command(c, {"cmd": "begin_transaction", "name": "nobody"})
    assert c.producers["p"].txn_state == "ready"


def test_a_new_instance_fences_the_zombie_and_aborts_what_it_left_open(tmp_path):
    c = make(tmp_path)
    ready(c, "old", "tx-z")
    c.begin_transaction("old")
    c.produce(T, 0, ["zombie"], producer="old")
    settle(c)
    c.create_producer("new", transactional_id="tx-z")
    c.init_transactions("new")
    settle(c, 2000)
    assert c.producers["new"].txn_state == "ready"
    assert c.producers["new"].producer_epoch > c.producers["old"].producer_epoch
    # The zombie's open transaction was aborted; its next write is refused by the leader.
    assert c.consume(T, 0, isolation="read_committed") == []
    rid = c.produce(T, 0, ["late"], producer="old")
    res = c.run_until_idle_produce(rid)
    assert res.error == "INVALID_PRODUCER_EPOCH"
    assert c.producers["old"].txn_state == "fenced"
    with pytest.raises(InvalidTxnStateError):
        c.commit_transaction("old")


def test_transaction_timeout_aborts_a_stuck_transaction(tmp_path):
    c = make(tmp_path)
    ready(c, transaction_timeout_ms=5000)
    c.begin_transaction("p")
    c.produce(T, 0, ["stuck"], producer="p")
    settle(c, 25_000)                           # the coordinator checks every 10 s
    assert c.transactions.state()["tx-1"]["state"] == "CompleteAbort"
    assert values(c.consume(T, 0, isolation="read_uncommitted")) == [b"stuck"]
    assert c.consume(T, 0, isolation="read_committed") == []
    c.commit_transaction("p")
    settle(c)
    assert c.producers["p"].txn_state == "fenced"


def test_a_coordinator_failover_between_prepare_and_complete_finishes_the_commit(tmp_path):
    c = make(tmp_path)
    ready(c)
    c.begin_transaction("p")
    c.produce(T, 0, ["a"], producer="p")
    c.produce(T, 1, ["b"], producer="p")
    settle(c)
    p = partition_for_transactional_id("tx-1", 3)
    coord = c.controller.partition(TXN_TOPIC, p).leader
    c.commit_transaction("p")
    # Let PrepareCommit reach the log, then kill the coordinator before it completes.
    for _ in range(200):
        c.advance(1)
        if any(e.new_state == "PrepareCommit" for e in c.events.of_kind("txn_state_changed")):
            break
    c.crash(coord)
    settle(c, 15_000)
    new = c.controller.partition(TXN_TOPIC, p).leader
    assert new != coord
    assert c.transactions.state()["tx-1"]["state"] == "CompleteCommit"
    assert values(c.consume(T, 0, isolation="read_committed")) == [b"a"]
    assert values(c.consume(T, 1, isolation="read_committed")) == [b"b"]


def test_commands_drive_a_whole_transaction(tmp_path):
    c = make(tmp_path)
    apply_command(c, {"cmd": "create_producer", "name": "p", "transactional_id": "tx-c"})
    apply_command(c, {"cmd": "init_transactions", "name": "p"})
    c.advance(500)
    apply_command(c, {"cmd": "begin_transaction", "name": "p"})
    apply_command(c, {"cmd": "produce", "topic": T, "values": ["q"], "producer": "p"})
    c.advance(500)
    apply_command(c, {"cmd": "commit_transaction", "name": "p"})
    c.advance(500)
    out = apply_command(c, {"cmd": "consume", "topic": T, "isolation": "read_committed"})
    assert [r["value"] for r in out["records"]] == ["q"]
