"""AddOffsetsToTxn and TxnOffsetCommit: offsets committed inside a transaction
(consume-transform-produce), pending until the COMMIT marker, discarded by ABORT,
rebuilt from the log by a new group coordinator."""
from __future__ import annotations

import pytest

from engine.cluster.cluster import Cluster
from engine.cluster.commands import apply_command
from engine.cluster.config import ClusterConfig
from engine.cluster.consumer import group_service
from engine.cluster.transactions import TXN_TOPIC, partition_for_transactional_id
from engine.cluster.txn_offsets import offset_fetch, rebuild
from engine.disk import Disk
from engine.errors import InvalidRequestError, InvalidTxnStateError
from engine.group.java import partition_for_group
from engine.group.offsets import OFFSETS_TOPIC, decode_key, decode_value

IN, OUT, G = "in", "out", "app"


def make(tmp_path, seed: int = 5) -> Cluster:
    c = Cluster(Disk(tmp_path / "d"), ClusterConfig(brokers=3), seed=seed)
    for t in (IN, OUT):
        c.create_topic(t, 1, 3, config={"min.insync.replicas": 2})
    apply_command(c, {"cmd": "configure_transactions", "transaction_state_log_num_partitions": 3})
    group_service(c, offsets_partitions=4).ensure_offsets_topic()
    c.advance(50)
    return c


def ready(c: Cluster, name: str = "p", tid: str = "tx-1") -> None:
    c.create_producer(name, transactional_id=tid)
    c.init_transactions(name)
    c.advance(500)
    assert c.producers[name].txn_state == "ready"


def offsets_leader(c: Cluster) -> int:
    return c.controller.partition(OFFSETS_TOPIC, partition_for_group(G, 4)).leader


def txn_with_offsets(c: Cluster, offset: int, commit: bool, name: str = "p") -> None:
    c.begin_transaction(name)
    c.produce(OUT, 0, [f"out-{offset}"], producer=name)
    c.send_offsets_to_transaction(name, G, {(IN, 0): offset})
    c.advance(300)
    (c.commit_transaction if commit else c.abort_transaction)(name)
    c.advance(500)


def test_add_offsets_puts_the_groups_offsets_partition_into_the_transaction(tmp_path):
    c = make(tmp_path)
    ready(c)
    c.begin_transaction("p")
    c.send_offsets_to_transaction("p", G, {(IN, 0): 3})
    c.advance(300)
    st = c.transactions.state()["tx-1"]
    assert st["state"] == "Ongoing"
    assert f"{OFFSETS_TOPIC}-{partition_for_group(G, 4)}" in st["partitions"]
    apis = [(e.api, e.error) for e in c.events.of_kind("txn_request")]
    assert ("add_offsets", "NONE") in apis and ("txn_offset_commit", "NONE") in apis
    assert apis.index(("add_offsets", "NONE")) < apis.index(("txn_offset_commit", "NONE"))


def test_offsets_are_transactional_records_pending_until_commit(tmp_path):
    c = make(tmp_path)
    ready(c)
    c.begin_transaction("p")
    c.produce(OUT, 0, ["x"], producer="p")
    c.send_offsets_to_transaction("p", G, {(IN, 0): 7})
    c.advance(300)
    # Written to the log as a transactional batch carrying the producer id and epoch.
    leader = offsets_leader(c)
    log = c.replica(leader, OFFSETS_TOPIC, partition_for_group(G, 4)).log
    batches = [b for b in log.batches(0, log.log_end_offset) if not b.is_control]
    prod = c.producers["p"]
    assert [(b.is_transactional, b.producer_id, b.producer_epoch) for b in batches] == \
        [(True, prod.producer_id, prod.producer_epoch)]
    key, value = decode_key(batches[0].records[0].key), decode_value(batches[0].records[0].value)
    assert (key.group, key.topic, key.partition, value.offset) == (G, IN, 0, 7)
    # Pending: not committed, and unstable to a require_stable fetch.
    assert group_service(c).committed(G) == {}
    assert offset_fetch(c, G, require_stable=True) == {"error": "NONE", "offsets": {}, "unstable": [(IN, 0)]}
    assert offset_fetch(c, G)["offsets"] == {}
    c.commit_transaction("p")
    c.advance(500)
    assert group_service(c).committed(G) == {(IN, 0): 7}
    assert offset_fetch(c, G, require_stable=True) == {"error": "NONE", "offsets": {(IN, 0): 7}, "unstable": []}
    markers = [e for e in c.events.of_kind("txn_marker_written") if e.topic == OFFSETS_TOPIC]
    assert [m.commit for m in markers] == [True]
    done = c.events.of_kind("txn_offsets_completed")
    assert [(d.group, d.commit, d.offsets) for d in done] == [(G, True, [[IN, 0, 7]])]


def test_abort_discards_the_offsets_and_keeps_the_previous_commit(tmp_path):
    c = make(tmp_path)
    ready(c)
    txn_with_offsets(c, 5, commit=True)
    txn_with_offsets(c, 9, commit=False)
    assert group_service(c).committed(G) == {(IN, 0): 5}
    assert offset_fetch(c, G, require_stable=True)["unstable"] == []
    log = c.replica(offsets_leader(c), OFFSETS_TOPIC, partition_for_group(G, 4)).log
    assert [t.producer_id for t in log.aborted_transactions(0, log.log_end_offset)] == [c.producers["p"].producer_id]
    assert rebuild(log) == ({G: {(IN, 0): 5}}, {})


def test_txn_offset_commit_without_add_offsets_is_invalid_txn_state_and_writes_nothing(tmp_path):
    c = make(tmp_path)
    ready(c)
    c.begin_transaction("p")
    c.produce(OUT, 0, ["x"], producer="p")
    c.advance(300)
    prod = c.producers["p"]
    # Skip AddOffsetsToTxn: straight to the group coordinator.
    prod.txn_offsets = {"group": G, "offsets": [[IN, 0, 4]], "stage": "txn_offset_commit", "generation": -1,
                        "member_id": ""}
    from engine.cluster.txn_offsets import txn_offset_service
    txn_offset_service(c).request(prod)
    c.advance(300)
    errors = [e.error for e in c.events.of_kind("txn_request") if e.api == "txn_offset_commit"]
    assert errors and set(errors) == {"INVALID_TXN_STATE"}
    assert prod.txn_failed == "INVALID_TXN_STATE"
    log = c.replica(offsets_leader(c), OFFSETS_TOPIC, partition_for_group(G, 4)).log
    assert log.log_end_offset == 0
    # The transaction can no longer commit: only an abort.
    c.commit_transaction("p")
    c.advance(300)
    assert prod.txn_state == "abortable_error"


def test_send_offsets_outside_a_transaction_is_refused_and_changes_nothing(tmp_path):
    c = make(tmp_path)
    ready(c)
    txn_with_offsets(c, 2, commit=False)      # after abort: no transaction open
    before = c.events.digest() if hasattr(c.events, "digest") else len(c.events.envelopes)
    with pytest.raises(InvalidTxnStateError):
        c.send_offsets_to_transaction("p", G, {(IN, 0): 3})
    with pytest.raises(InvalidTxnStateError):
        apply_command(c, {"cmd": "send_offsets_to_transaction", "name": "p", "group": G,
                          "offsets": [[IN, 0, 3]]})
    c.begin_transaction("p")
    with pytest.raises(InvalidRequestError):
        c.send_offsets_to_transaction("p", G, {(IN, 0): -1})
    assert c.producers["p"].txn_offsets is None
    after = c.events.digest() if hasattr(c.events, "digest") else len(c.events.envelopes)
    assert before == after


def test_a_fenced_zombie_cannot_commit_offsets(tmp_path):
    c = make(tmp_path)
    ready(c, "old")
    c.begin_transaction("old")
    c.produce(OUT, 0, ["zombie"], producer="old")
    c.advance(300)
    ready(c, "new")                     # same transactional id: epoch bump, the open txn aborted
    c.advance(1000)
    c.send_offsets_to_transaction("old", G, {(IN, 0): 99})
    c.advance(500)
    assert c.producers["old"].txn_state == "fenced"
    errors = [e.error for e in c.events.of_kind("txn_request") if e.producer == "old"
              and e.api in ("add_offsets", "txn_offset_commit")]
    assert errors and errors[-1] in ("PRODUCER_FENCED", "INVALID_PRODUCER_EPOCH")
    assert group_service(c).committed(G) == {}
    assert offset_fetch(c, G, require_stable=True)["unstable"] == []


def test_stale_epoch_at_the_group_coordinator_is_invalid_producer_epoch(tmp_path):
    c = make(tmp_path)
    ready(c)
    c.begin_transaction("p")
    c.send_offsets_to_transaction("p", G, {(IN, 0): 1})
    c.advance(300)
    prod = c.producers["p"]
    from engine.cluster.txn_offsets import txn_offset_service
    svc = txn_offset_service(c)
    p = partition_for_group(G, 4)
    payload = {"producer_id": prod.producer_id, "producer_epoch": prod.producer_epoch - 1}
    assert svc.verify(prod, p, payload) == "INVALID_PRODUCER_EPOCH"
    assert svc.verify(prod, p, {"producer_id": prod.producer_id + 7, "producer_epoch": 0}) == \
        "INVALID_PRODUCER_ID_MAPPING"


def test_a_new_group_coordinator_rebuilds_pending_and_committed_offsets_from_the_log(tmp_path):
    c = make(tmp_path)
    ready(c)
    txn_with_offsets(c, 4, commit=True)
    c.begin_transaction("p")
    c.produce(OUT, 0, ["y"], producer="p")
    c.send_offsets_to_transaction("p", G, {(IN, 0): 8})
    c.advance(300)
    old = offsets_leader(c)
    tcoord = c.controller.partition(TXN_TOPIC, partition_for_transactional_id("tx-1", 3)).leader
    if old == tcoord:
        pytest.skip("seed puts both coordinators on one broker")
    c.crash(old)
    c.advance(40_000)   # the controller may be on the crashed broker too
    new = offsets_leader(c)
    assert new != old
    # The new coordinator read the log: 4 committed, 8 pending under the producer id.
    assert offset_fetch(c, G, require_stable=True) == {"error": "NONE", "offsets": {}, "unstable": [(IN, 0)]}
    assert offset_fetch(c, G)["offsets"] == {(IN, 0): 4}
    loaded = c.events.of_kind("txn_offsets_loaded")
    assert loaded and loaded[-1].coordinator == new
    c.commit_transaction("p")
    c.advance(2000)
    assert group_service(c).committed(G) == {(IN, 0): 8}


def test_commands_send_offsets_and_narration_tells_it(tmp_path):
    from engine import narration
    c = make(tmp_path)
    for cmd in ({"cmd": "create_producer", "name": "p", "transactional_id": "tx-1"},
                {"cmd": "init_transactions", "name": "p"}, {"cmd": "advance", "ms": 500},
                {"cmd": "begin_transaction", "name": "p"},
                {"cmd": "send_offsets_to_transaction", "name": "p", "group": G, "offsets": [[IN, 0, 6]]},
                {"cmd": "advance", "ms": 300}, {"cmd": "commit_transaction", "name": "p"},
                {"cmd": "advance", "ms": 500}):
        apply_command(c, cmd)
    got = apply_command(c, {"cmd": "offset_fetch", "group": G, "require_stable": True})
    assert (got["error"], got["offsets"], got["unstable"]) == ("NONE", [[IN, 0, 6]], [])
    written = c.events.of_kind("txn_offsets_written")[0].to_dict()
    done = c.events.of_kind("txn_offsets_completed")[0].to_dict()
    assert "pending until the transaction ends" in narration.describe(written)
    assert "committed offset 6 for in-0" in narration.describe(done)
    assert "提交" in narration.describe(done, "zh")


def test_a_member_unknown_to_the_group_is_refused_like_an_offset_commit_and_writes_nothing(tmp_path):
    from engine.cluster.txn_offsets import send_offsets
    c = make(tmp_path)
    ready(c)
    c.begin_transaction("p")
    # KIP-447: the consumer's group metadata travels with the offsets; this member is not in the group.
    send_offsets(c, c.producers["p"], G, {(IN, 0): 3}, generation=4, member_id="ghost")
    c.advance(300)
    errors = [e.error for e in c.events.of_kind("txn_request") if e.api == "txn_offset_commit"]
    assert errors == ["UNKNOWN_MEMBER_ID"]
    assert c.producers["p"].txn_failed == "UNKNOWN_MEMBER_ID"
    log = c.replica(offsets_leader(c), OFFSETS_TOPIC, partition_for_group(G, 4)).log
    assert log.log_end_offset == 0 and offset_fetch(c, G, require_stable=True)["unstable"] == []


def _member(c: Cluster, name: str = "c1"):
    """A consumer of group G on IN, stable, with auto-commit off."""
    apply_command(c, {"cmd": "consumer_join", "name": name, "group": G, "topics": [IN],
                      "auto_offset_reset": "earliest", "enable_auto_commit": False})
    c.advance(5000)
    con = group_service(c).consumers[name]
    assert con.status == "stable" and con.owned == [(IN, 0)]
    return con


def _txn_then_plain_commit(c: Cluster, txn_offset: int, plain_offset: int):
    """The transaction's offset record first, a plain OffsetCommit of the same partition
    after it in the log, then the transaction's COMMIT marker."""
    con = _member(c)
    from engine.cluster.txn_offsets import send_offsets
    c.begin_transaction("p")
    c.produce(OUT, 0, ["x"], producer="p")
    send_offsets(c, c.producers["p"], G, {(IN, 0): txn_offset}, generation=con.generation, member_id=con.member_id)
    c.advance(300)
    assert [e.error for e in c.events.of_kind("txn_request") if e.api == "txn_offset_commit"] == ["NONE"]
    con.commit({(IN, 0): plain_offset})
    c.advance(300)
    assert [(e.offset, e.partition) for e in c.events.of_kind("offset_committed")] == [(plain_offset, 0)]
    return con


def _offset_records(c: Cluster) -> list:
    log = c.replica(offsets_leader(c), OFFSETS_TOPIC, partition_for_group(G, 4)).log
    out = []
    for b in log.batches(0, log.log_end_offset):
        for r in b.records:
            k = None if b.is_control else decode_key(r.key)
            if k is not None:
                out.append((r.offset, b.is_transactional, decode_value(r.value).offset))
    return out


def test_commit_marker_keeps_a_later_plain_offset_commit_of_the_same_partition(tmp_path):
    # Kafka (GroupMetadata.completePendingTxnOffsetCommit): the record later in the log wins.
    c = make(tmp_path)
    ready(c)
    _txn_then_plain_commit(c, txn_offset=5, plain_offset=9)
    recs = _offset_records(c)
    assert [(txn, off) for _, txn, off in recs] == [(True, 5), (False, 9)] and recs[0][0] < recs[1][0]
    c.commit_transaction("p")
    c.advance(500)
    assert c.transactions.state()["tx-1"]["state"] == "CompleteCommit"
    assert group_service(c).committed(G) == {(IN, 0): 9}
    assert offset_fetch(c, G, require_stable=True) == {"error": "NONE", "offsets": {(IN, 0): 9}, "unstable": []}
    kept = c.events.of_kind("txn_offsets_superseded")
    assert [(e.group, e.offsets) for e in kept] == [(G, [[IN, 0, 5, recs[0][0], 9, recs[1][0]]])]
    assert [e.offsets for e in c.events.of_kind("txn_offsets_completed")] == [[]]
    from engine import narration
    assert "in-0 keeps committed offset 9" in narration.describe(kept[0].to_dict())
    assert "changed no committed offset" in narration.describe(c.events.of_kind("txn_offsets_completed")[0].to_dict())
    # The log says the same to a loader.
    assert rebuild(c.replica(offsets_leader(c), OFFSETS_TOPIC, partition_for_group(G, 4)).log)[0] == {G: {(IN, 0): 9}}


def test_a_new_coordinator_keeps_the_later_plain_commit_over_a_committed_transaction(tmp_path):
    c = make(tmp_path, seed=2)     # offsets partition on broker 1, transactions on 2, controller on 0
    ready(c)
    _txn_then_plain_commit(c, txn_offset=5, plain_offset=9)
    c.commit_transaction("p")
    c.advance(500)
    old = offsets_leader(c)
    tcoord = c.controller.partition(TXN_TOPIC, partition_for_transactional_id("tx-1", 3)).leader
    if old == tcoord or old == c.controller.active:
        pytest.skip("seed puts the coordinators or the controller on one broker")
    c.crash(old)
    c.advance(10_000)
    new = offsets_leader(c)
    assert new not in (old, -1)
    assert offset_fetch(c, G)["offsets"] == {(IN, 0): 9}
    loaded = [e for e in c.events.of_kind("offsets_loaded") if e.coordinator == new]
    assert loaded and G in loaded[-1].groups


def test_a_committed_transaction_still_wins_over_an_earlier_plain_commit(tmp_path):
    c = make(tmp_path)
    ready(c)
    con = _member(c)
    con.commit({(IN, 0): 3})
    c.advance(300)
    from engine.cluster.txn_offsets import send_offsets
    c.begin_transaction("p")
    send_offsets(c, c.producers["p"], G, {(IN, 0): 6}, generation=con.generation, member_id=con.member_id)
    c.advance(300)
    c.commit_transaction("p")
    c.advance(500)
    assert group_service(c).committed(G) == {(IN, 0): 6}
    assert c.events.of_kind("txn_offsets_superseded") == []
    log = c.replica(offsets_leader(c), OFFSETS_TOPIC, partition_for_group(G, 4)).log
    assert rebuild(log)[0] == {G: {(IN, 0): 6}}


def test_loader_keeps_the_later_record_whatever_the_marker_order():
    """load_offsets over hand-built batches: plain at 1 after txn at 0, COMMIT at 2 -> 1's
    offset; txn at 3, COMMIT at 4 -> 3's; an aborted one changes nothing."""
    from engine.group.offset_cache import load_offsets
    from engine.group.offsets import OffsetKey, OffsetValue, encode_key, encode_value
    from engine.records import SimpleRecord, build_batch, build_end_txn_marker, decode_batch

    key = encode_key(OffsetKey("g", "t", 0))

    def B(o, value, pid=-1):      # one OffsetCommit record; transactional when pid is given
        txn = dict(producer_id=pid, producer_epoch=0, base_sequence=-1, is_transactional=True) if pid >= 0 else {}
        return decode_batch(build_batch([SimpleRecord(encode_value(OffsetValue(value, -1, "", 0)), key=key)],
                                        base_offset=o, **txn))

    def marker(o, pid, commit):
        return decode_batch(build_end_txn_marker(commit, pid, 0, 0, base_offset=o))

    got = load_offsets([B(0, 5, 7), B(1, 9), marker(2, 7, True)])
    assert got.offsets.of("g") == {("t", 0): 9} and got.committed_by_txns == 0
    got = load_offsets([B(0, 5, 7), B(1, 9), marker(2, 7, True), B(3, 12, 8), marker(4, 8, True), B(5, 20, 9),
                        marker(6, 9, False)])
    assert got.offsets.of("g") == {("t", 0): 12} and got.committed_by_txns == 1 and got.pending == {}


def test_the_transaction_coordinators_state_writes_are_local_to_its_broker(tmp_path):
    c = make(tmp_path, seed=2)
    ready(c)
    c.begin_transaction("p")
    c.produce(OUT, 0, ["x"], producer="p")
    c.advance(300)
    tcoord = c.controller.partition(TXN_TOPIC, partition_for_transactional_id("tx-1", 3)).leader
    c.commit_transaction("p")
    c.advance(1)                 # EndTxn reached the coordinator, which appends PrepareCommit
    c.network.cut(-1, tcoord)
    c.advance(500)
    changes = [(e.old_state, e.new_state) for e in c.events.of_kind("txn_state_changed")]
    assert changes[-2:] == [("Ongoing", "PrepareCommit"), ("PrepareCommit", "CompleteCommit")]
    assert "Produce" not in [e.api for e in c.events.of_kind("message_dropped")]


# ---- seeded schedules: plain and transactional commits of the same partitions ------------------

def _expected_from_log(log) -> dict:
    """What the group must have committed, said without the coordinator's rules: per
    partition, the offset of the latest record in the log that is either a plain OffsetCommit
    or belongs to a transaction whose next marker is a COMMIT."""
    from engine.records import ControlRecordType, read_end_txn_marker
    batches = log.batches(log.log_start_offset, log.log_end_offset)
    ends = []                                   # (position, producer id, commit) of every marker
    for b in batches:
        if b.is_control and b.records:
            m = read_end_txn_marker(b.records[0])
            if m is not None:
                ends.append((b.records[0].offset, b.producer_id, m.type == ControlRecordType.COMMIT))
    latest: dict = {}
    for b in batches:
        if b.is_control:
            continue
        for r in b.records:
            k = decode_key(r.key) if r.key is not None else None
            if k is None or k.group != G:
                continue
            if b.is_transactional:
                end = next(((pos, ok) for pos, pid, ok in ends if pid == b.producer_id and pos > r.offset), None)
                if end is None or not end[1]:
                    continue
            latest[(k.topic, k.partition)] = decode_value(r.value).offset   # log order: later wins
    return latest


def run_mixed_commits(tmp_path, seed: int, rounds: int = 12):
    import random

    from engine.cluster.txn_offsets import send_offsets
    rng = random.Random(seed)
    c = make(tmp_path, seed=seed)
    ready(c)
    con = _member(c)
    tps = [(IN, 0), (OUT, 0)]
    down = None
    for _ in range(rounds):
        action = rng.choice(["plain", "txn", "txn", "txn_then_plain", "failover"])
        prod = c.producers["p"]
        if action == "plain":
            con.commit({rng.choice(tps): rng.randint(0, 99)})
            c.advance(rng.choice([5, 50, 300]))
        elif action == "failover":
            if down is None:
                down = offsets_leader(c)
                c.crash(down)
            else:
                c.restart(down)
                down = None
            c.advance(rng.choice([3000, 9000]))
        elif prod.txn_state == "ready":
            c.begin_transaction("p")
            send_offsets(c, prod, G, {tp: rng.randint(0, 99) for tp in rng.sample(tps, rng.randint(1, 2))},
                         generation=con.generation, member_id=con.member_id)
            c.advance(rng.choice([50, 300]))
            if action == "txn_then_plain":
                con.commit({rng.choice(tps): rng.randint(0, 99)})
                c.advance(rng.choice([5, 300]))
            if prod.txn_state == "in_transaction":
                (c.commit_transaction if rng.random() < 0.7 else c.abort_transaction)("p")
            c.advance(1000)
            if prod.txn_state == "abortable_error":
                c.abort_transaction("p")
                c.advance(1000)
        else:
            c.advance(1000)
        if con.status not in ("stable", "syncing", "joining") or not con.alive:
            con.poll()
    if down is not None:
        c.restart(down)
    c.heal_all()
    c.advance(40_000)
    log = c.replica(offsets_leader(c), OFFSETS_TOPIC, partition_for_group(G, 4)).log
    return c, _expected_from_log(log), log


@pytest.mark.parametrize("seed", [*range(1, 5), *(pytest.param(s, marks=pytest.mark.slow) for s in range(5, 80))])
def test_committed_offsets_are_the_latest_committed_record_in_the_log_live_and_rebuilt(tmp_path, seed):
    c, expected, log = run_mixed_commits(tmp_path, seed)
    assert group_service(c).committed(G) == expected, f"seed {seed}: live cache"
    assert rebuild(log)[0].get(G, {}) == expected, f"seed {seed}: rebuilt from the log"
    assert offset_fetch(c, G, require_stable=True) == {"error": "NONE", "offsets": expected, "unstable": []}


def test_the_mixed_schedules_do_supersede_transactional_offsets(tmp_path):
    kept = 0
    for seed in range(1, 3):
        c, _, _ = run_mixed_commits(tmp_path / str(seed), seed)
        kept += len(c.events.of_kind("txn_offsets_superseded"))
    assert kept > 0, "no schedule had a plain commit after a transaction's offsets"
