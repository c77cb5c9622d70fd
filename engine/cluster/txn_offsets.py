"""Offsets committed inside a transaction: consume-transform-produce (KIP-98, KIP-447).

A transactional producer that read its input through consumer group ``group`` calls
``sendOffsetsToTransaction`` (:meth:`Cluster.send_offsets_to_transaction`):

1. **AddOffsetsToTxn** (transactional id, producer id, epoch, group) to the *transaction*
   coordinator: the group's ``__consumer_offsets`` partition
   ``abs(groupId.hashCode) % offsets.topic.num.partitions`` joins the transaction, through
   the same state transition as AddPartitionsToTxn (:mod:`engine.cluster.transactions`).
2. **TxnOffsetCommit** (transactional id, group, producer id, epoch, generation, member id,
   offsets) to the *group* coordinator, which first verifies the transaction with the
   transaction coordinator (KIP-890): no such producer → ``INVALID_PRODUCER_ID_MAPPING``,
   another epoch → ``INVALID_PRODUCER_EPOCH``, Prepare* → ``CONCURRENT_TRANSACTIONS``, the
   offsets partition not in the open transaction → ``INVALID_TXN_STATE`` (what a v3 client
   is told). It then checks the member/generation like an OffsetCommit and appends one
   OffsetCommit record per partition as a *transactional* batch carrying the producer id and
   epoch (no sequence: a coordinator's write, appended locally on its broker) with acks=all. Append errors are mapped as
   Kafka's ``maybeConvertOffsetCommitError``. The offsets are then *pending*: not committed.
3. The transaction's end writes a COMMIT or ABORT marker into that ``__consumer_offsets``
   partition like every other; **COMMIT** makes the pending offsets the group's committed
   offsets, **ABORT** discards them.

OffsetFetch with ``require_stable`` (the Java consumer sets it under read_committed)
answers ``UNSTABLE_OFFSET_COMMIT`` for a partition with pending offsets, and without it the
last committed offset. A new coordinator rebuilds committed and pending offsets from the
log, markers included (:func:`rebuild`). As in Kafka, a COMMIT makes a pending offset the
committed one only if no later record of the same partition is committed already (a plain
OffsetCommit appended after the transactional one wins; :mod:`engine.group.offset_cache`).
Simplifications, stated: verification reads the transaction coordinator's state directly
(no broker-to-broker round trip); requests and answers take the network's latency and fail
while the coordinator is down or cut off, but are not dropped at random.

Errors in the wrong state change nothing: nothing is appended and no pending offset moves.
"""
from __future__ import annotations

from typing import Any

from ..errors import InvalidRequestError
from ..events import Event, event
from ..group.offset_cache import load_offsets
from ..group.offsets import OFFSETS_TOPIC, OffsetKey, OffsetValue, encode_key, encode_value
from .config import CLIENT
from .produce_wait import ProduceWaiter
from .transactions import TxnRequest, coordinator_error

__all__ = ["TxnOffsetService", "txn_offset_service", "send_offsets", "on_producer_answer", "on_marker", "rebuild",
           "offset_fetch", "TxnOffsetsWritten", "TxnOffsetsCompleted", "TxnOffsetsSuperseded", "TxnOffsetsLoaded"]

RETRIABLE = frozenset({"COORDINATOR_NOT_AVAILABLE", "NOT_COORDINATOR", "COORDINATOR_LOAD_IN_PROGRESS",
                       "CONCURRENT_TRANSACTIONS", "REQUEST_TIMED_OUT", "UNKNOWN_TOPIC_OR_PARTITION"})
FENCED = frozenset({"PRODUCER_FENCED", "INVALID_PRODUCER_EPOCH"})


@event("txn_offsets_written")
class TxnOffsetsWritten(Event):
    """The group coordinator appended TxnOffsetCommit records (a transactional batch per
    partition) to ``__consumer_offsets-<offsets_partition>``: pending until the marker."""
    group: str
    coordinator: int
    offsets_partition: int
    producer_id: int
    producer_epoch: int
    offsets: list          # [[topic, partition, offset], ...]
    record_offsets: list   # where each record landed in the offsets partition


@event("txn_offsets_completed")
class TxnOffsetsCompleted(Event):
    """A COMMIT marker made a producer's pending offsets the group's committed offsets (those
    not superseded by a later record: see :class:`TxnOffsetsSuperseded`), or an ABORT marker
    discarded them."""
    group: str
    coordinator: int
    offsets_partition: int
    producer_id: int
    commit: bool
    offsets: list


@event("txn_offsets_superseded")
class TxnOffsetsSuperseded(Event):
    """A COMMIT marker found a later record already committed for some of a producer's
    pending offsets: those stay as they are (Kafka keeps whichever record is later in the
    log). ``offsets``: [[topic, partition, pending offset, its record's position, committed
    offset, its record's position], ...]."""
    group: str
    coordinator: int
    offsets_partition: int
    producer_id: int
    offsets: list


@event("txn_offsets_loaded")
class TxnOffsetsLoaded(Event):
    """A new group coordinator replayed the transactional offset records of its partition:
    ``committed`` offsets come from committed transactions, ``pending`` still await a marker."""
    coordinator: int
    offsets_partition: int
    committed: int
    pending: list          # ["group by producer <id>", ...]


def _triples(offsets: Any) -> list:
    """[[topic, partition, offset], ...] sorted, from a dict {(topic, partition): offset} or a list."""
    items = offsets.items() if isinstance(offsets, dict) else [((o[0], o[1]), o[2]) for o in offsets]
    out = []
    for (topic, partition), offset in items:
        if not isinstance(topic, str) or isinstance(partition, bool) or not isinstance(partition, int) \
                or isinstance(offset, bool) or not isinstance(offset, int) or offset < 0 or partition < 0:
            raise InvalidRequestError(f"offsets need (topic, partition >= 0) -> offset >= 0, got "
                                      f"{(topic, partition)!r} -> {offset!r}")
        out.append([topic, partition, offset])
    if not out:
        raise InvalidRequestError("sendOffsetsToTransaction needs at least one offset")
    return sorted(out)


# ---- rebuilding from the log ----------------------------------------------------------------

def rebuild(log: Any) -> tuple[dict, dict]:
    """(committed, pending) offsets of a ``__consumer_offsets`` log, as Kafka's loader reads
    it (:func:`engine.group.offset_cache.load_offsets`). committed: {group: {(topic,
    partition): offset}}; pending: {producer id: {group: {(topic, partition): offset}}}."""
    loaded = load_offsets(log.batches(log.log_start_offset, log.log_end_offset))
    return loaded.offsets.plain(), {pid: {g: {tp: o for tp, (o, _) in offs.items()} for g, offs in by_group.items()}
                                    for pid, by_group in loaded.pending.items()}


# ---- the service ------------------------------------------------------------------------------

class TxnOffsetService:
    """Pending transactional offsets per group coordinator (``cluster.txn_offsets``)."""

    def __init__(self, cluster: Any) -> None:
        self.cluster = cluster
        # (broker, offsets partition) -> (leader epoch, {producer id: {group: {tp: offset}}})
        self.pending: dict[tuple[int, int], tuple[int, dict]] = {}
        # the offset records' appends; once a TxnOffsetCommit's records all have their outcome it is answered
        self.writes = ProduceWaiter(cluster, "txn-offset-writes", after=self._answer_done)
        self.batches: dict[int, dict] = {}     # commit id -> {"left": n, "error": ..., ...}
        self.next_commit = 1
        self.groups_seen: set = set()          # groups a transaction sent offsets for (for views)

    @property
    def groups(self):
        return self.cluster.group_service()

    def emit(self, ev: Any) -> None:
        self.cluster.events.emit(ev)

    def answer(self, prod: Any, api: str, broker: int, error: str, detail: str) -> None:
        self.emit(TxnRequest(prod.transactional_id, prod.name, api, broker, error, detail))
        self.cluster.scheduler.schedule(self.cluster.network.latency_ms, self.cluster.on_txn_answer, prod.name,
                                        api, error, {}, name=f"txn:{api}-answer")

    def pending_for(self, broker_id: int, p: int) -> dict:
        """This coordinator's pending offsets for partition ``p`` (the current leadership's)."""
        part = self.groups._leader_partition(broker_id, p)
        cur = self.pending.get((broker_id, p))
        if part is None:
            return {}
        if cur is None or cur[0] != part.leader_epoch:
            # Loaded together with the committed offsets (GroupService.coordinator → loaded()).
            self.groups.coordinator(broker_id, p)
            cur = self.pending.get((broker_id, p))
        return cur[1] if cur is not None and cur[0] == part.leader_epoch else {}

    def loaded(self, broker_id: int, p: int, leader_epoch: int, result: Any) -> None:
        """A coordinator loaded ``__consumer_offsets-p`` (``result``: a LoadedOffsets): keep
        the offsets still pending under each producer id."""
        pending = result.pending
        self.pending[(broker_id, p)] = (leader_epoch, pending)
        from_txns = result.committed_by_txns
        if pending or from_txns:
            self.emit(TxnOffsetsLoaded(broker_id, p, from_txns,
                                       [f"{g} by producer {pid}" for pid in sorted(pending) for g in sorted(pending[pid])]))

    # ---- TxnOffsetCommit ------------------------------------------------------------------------
    def request(self, prod: Any) -> None:
        op = prod.txn_offsets
        found = self.groups.find_coordinator(op["group"])
        if found is None:
            self.answer(prod, "txn_offset_commit", -1, "COORDINATOR_NOT_AVAILABLE", "the offsets partition has no leader")
            return
        broker_id, p = found
        b = self.cluster.brokers[broker_id]
        if not b.alive or not self.cluster.network.reachable(CLIENT, broker_id):
            self.answer(prod, "txn_offset_commit", broker_id, "COORDINATOR_NOT_AVAILABLE", "not reachable")
            return
        payload = {"group": op["group"], "offsets": op["offsets"], "producer_id": prod.producer_id,
                   "producer_epoch": prod.producer_epoch, "generation": op["generation"], "member_id": op["member_id"]}
        self.cluster.scheduler.schedule(self.cluster.network.latency_ms, self.handle, broker_id, b.incarnation, p,
                                        prod.name, payload, name="txn:txn_offset_commit")

    def verify(self, prod: Any, p: int, payload: dict) -> str:
        """KIP-890's check at the transaction coordinator, with the errors a v3 client gets."""
        tsvc = self.cluster.transaction_service()
        found = tsvc.coordinator_for(prod.transactional_id)
        txns = tsvc.txns(*found) if found is not None else None
        if txns is None:
            return "COORDINATOR_LOAD_IN_PROGRESS"   # Kafka's answer when verification cannot run
        md = txns.get(prod.transactional_id)
        if md is None or md.producer_id != payload["producer_id"]:
            return "INVALID_PRODUCER_ID_MAPPING"
        if md.producer_epoch != payload["producer_epoch"]:
            return "INVALID_PRODUCER_EPOCH"         # PRODUCER_FENCED as the produce path reports it
        if md.state in ("PrepareCommit", "PrepareAbort"):
            return "CONCURRENT_TRANSACTIONS"
        if md.state != "Ongoing" or (OFFSETS_TOPIC, p) not in md.partitions:
            return "INVALID_TXN_STATE"
        return "NONE"

    def handle(self, broker_id: int, incarnation: int, p: int, name: str, payload: dict) -> None:
        prod = self.cluster.producers[name]
        b = self.cluster.brokers[broker_id]
        api = "txn_offset_commit"
        if not b.alive or b.incarnation != incarnation:
            self.answer(prod, api, broker_id, "COORDINATOR_NOT_AVAILABLE", "went down")
            return
        coord = self.groups.coordinator(broker_id, p)
        if coord is None:
            self.answer(prod, api, broker_id, "NOT_COORDINATOR", f"no longer leads {OFFSETS_TOPIC}-{p}")
            return
        error = self.verify(prod, p, payload)
        if error == "NONE":
            error = coord.check_commit(payload["group"], payload["member_id"], payload["generation"])
        if error != "NONE":
            self.answer(prod, api, broker_id, error, f"group {payload['group']}")
            return
        cid = self.next_commit
        self.next_commit += 1
        now = self.cluster.now_ms()
        identity = (payload["producer_id"], payload["producer_epoch"])
        self.batches[cid] = {"left": len(payload["offsets"]), "error": None, "broker": broker_id, "p": p,
                             "name": name, "payload": payload, "record_offsets": []}
        # Pending from now on, as Kafka's prepareTxnOffsetCommit: a marker that lands before the
        # append is acknowledged (a zombie's abort) must find and settle them.
        mine = self.pending_for(broker_id, p).setdefault(payload["producer_id"], {}).setdefault(payload["group"], {})
        for topic, partition, offset in payload["offsets"]:
            mine[(topic, partition)] = (offset, None)     # its log position once acknowledged
        sent = []
        for topic, partition, offset in payload["offsets"]:
            key = encode_key(OffsetKey(payload["group"], topic, partition))
            value = encode_value(OffsetValue(offset, -1, "", now))
            sent.append((self.cluster.produce(OFFSETS_TOPIC, p, [value], key=key, acks=-1, broker=broker_id,
                                              transactional_for=identity, local=True), topic, partition, offset))
        for rid, topic, partition, offset in sent:
            self.writes.watch(rid, self._written, cid, topic, partition, offset)

    def _written(self, res: Any, cid: int, topic: str, partition: int, offset: int) -> None:
        batch = self.batches[cid]
        batch["left"] -= 1
        if res.status != "ok":
            err = res.error
            if err in ("UNKNOWN_TOPIC_OR_PARTITION", "NOT_ENOUGH_REPLICAS", "NOT_ENOUGH_REPLICAS_AFTER_APPEND",
                       "NOT_LEADER_OR_FOLLOWER", "KAFKA_STORAGE_ERROR"):
                err = coordinator_error(err)
            batch["error"] = batch["error"] or err
            return
        batch["record_offsets"].append(res.base_offset)
        # Kafka's onTxnOffsetCommitAppend: the pending offset learns where its record is.
        payload = batch["payload"]
        mine = self.pending_for(batch["broker"], batch["p"]).get(payload["producer_id"], {}).get(payload["group"], {})
        if mine.get((topic, partition)) == (offset, None):
            mine[(topic, partition)] = (offset, res.base_offset)

    def _answer_done(self) -> None:
        for cid in sorted(c for c, b in self.batches.items() if b["left"] == 0):
            self.finish(self.batches.pop(cid))

    def finish(self, batch: dict) -> None:
        prod = self.cluster.producers[batch["name"]]
        payload, broker_id, p = batch["payload"], batch["broker"], batch["p"]
        if batch["error"] is not None:
            # Kafka's failedTxnOffsetCommit: what this request made pending is dropped again.
            by_group = self.pending_for(broker_id, p).get(payload["producer_id"], {})
            mine = by_group.get(payload["group"], {})
            for topic, partition, offset in payload["offsets"]:
                if mine.get((topic, partition), (None,))[0] == offset:
                    del mine[(topic, partition)]
            if not mine:
                by_group.pop(payload["group"], None)
            if not by_group:
                self.pending_for(broker_id, p).pop(payload["producer_id"], None)
            self.answer(prod, "txn_offset_commit", broker_id, batch["error"], "appending the offsets failed")
            return
        self.emit(TxnOffsetsWritten(payload["group"], broker_id, p, payload["producer_id"], payload["producer_epoch"],
                                    [list(o) for o in payload["offsets"]], sorted(batch["record_offsets"])))
        self.answer(prod, "txn_offset_commit", broker_id, "NONE", f"pending in {OFFSETS_TOPIC}-{p}")

    # ---- markers ------------------------------------------------------------------------------
    def marker(self, broker_id: int, p: int, producer_id: int, commit: bool) -> None:
        cur = self.pending.get((broker_id, p))
        part = self.groups._leader_partition(broker_id, p)
        if cur is None or part is None or cur[0] != part.leader_epoch:
            return   # not loaded under this leadership: the next load reads the marker from the log
        done = cur[1].pop(producer_id, {})
        loaded = self.groups.loaded.get((broker_id, p))
        for group, offs in sorted(done.items()):
            made = {tp: o for tp, (o, _) in offs.items()}
            if commit and loaded is not None:
                # Kafka's completePendingTxnOffsetCommit: only where no later record is committed.
                applied, kept = loaded[1].commit_pending({group: offs})
                made = applied.get(group, {})
                if kept:
                    self.emit(TxnOffsetsSuperseded(group, broker_id, p, producer_id,
                                                   [[t, q, *v] for (t, q), v in sorted(kept[group].items())]))
            self.emit(TxnOffsetsCompleted(group, broker_id, p, producer_id, commit,
                                          [[t, q, o] for (t, q), o in sorted(made.items())]))

    # ---- OffsetFetch ----------------------------------------------------------------------------
    def fetch(self, group: str, require_stable: bool = False) -> dict:
        """OffsetFetch read at once from the group's coordinator (the ``offset_fetch``
        command; a consumer's OffsetFetch travels through the network and is answered by
        :meth:`fetch_answer`): {"error": ..., "offsets": {(topic, partition): offset},
        "unstable": [...]}."""
        found = self.groups.find_coordinator(group)
        if found is None or self.groups.coordinator(*found) is None:
            return {"error": "COORDINATOR_NOT_AVAILABLE", "offsets": {}, "unstable": []}
        return self.fetch_answer(*found, group, require_stable)

    def fetch_answer(self, broker_id: int, p: int, group: str, require_stable: bool = False) -> dict:
        """The OffsetFetch answer of coordinator ``broker_id`` (leading ``p``): the group's
        committed offsets; with ``require_stable`` a partition with pending transactional
        offsets is answered UNSTABLE_OFFSET_COMMIT (listed in "unstable", left out of
        "offsets")."""
        committed = self.groups.loaded[(broker_id, p)][1].of(group)
        unstable = set()
        if require_stable:
            for by_group in self.pending_for(broker_id, p).values():
                unstable.update(by_group.get(group, {}))
        return {"error": "NONE", "offsets": {tp: o for tp, o in committed.items() if tp not in unstable},
                "unstable": sorted(unstable)}

    def state(self) -> dict:
        out = {}
        for (broker_id, p), (_, pending) in sorted(self.pending.items()):
            for pid, by_group in sorted(pending.items()):
                for group, offs in sorted(by_group.items()):
                    out.setdefault(group, []).append({"coordinator": broker_id, "producer_id": pid,
                                                      "offsets": [[t, q, o[0]] for (t, q), o in sorted(offs.items())]})
        return out


def txn_offset_service(cluster: Any) -> TxnOffsetService:
    """The cluster's pending transactional offsets (see :meth:`Cluster.txn_offset_service`)."""
    return cluster.txn_offset_service()


# ---- hooks called from the cluster, the transaction coordinator and the group service ----------

def send_offsets(cluster: Any, prod: Any, group: str, offsets: Any, generation: int = -1,
                 member_id: str = "") -> None:
    """Client side of sendOffsetsToTransaction: AddOffsetsToTxn first, TxnOffsetCommit after."""
    if not isinstance(group, str) or not group or len(group) > 255:
        raise InvalidRequestError(f"group must have 1-255 characters, got {group!r}")
    if prod.txn_offsets is not None:
        raise InvalidRequestError(f"producer {prod.name!r} is still sending offsets for group "
                                  f"{prod.txn_offsets['group']!r}")
    triples = _triples(offsets)
    txn_offset_service(cluster).groups_seen.add(group)
    prod.txn_offsets = {"group": group, "offsets": triples, "stage": "add_offsets", "generation": generation,
                        "member_id": member_id}
    cluster.transaction_service().request(prod, "add_offsets", {"producer_id": prod.producer_id,
                                                               "producer_epoch": prod.producer_epoch, "group": group})


def on_producer_answer(cluster: Any, prod: Any, api: str, error: str, retriable: bool) -> None:
    """The producer's handling of AddOffsetsToTxn / TxnOffsetCommit answers."""
    op = prod.txn_offsets
    if op is None or op["stage"] != api:
        return   # an answer to a request this instance no longer waits for
    if error == "NONE":
        if api == "add_offsets":
            op["stage"] = "txn_offset_commit"
            txn_offset_service(cluster).request(prod)
        else:
            prod.txn_offsets = None
        return
    if error in FENCED:
        prod.txn_offsets = None
        prod.txn_state = "fenced"
    elif retriable or error in RETRIABLE:
        if api == "add_offsets":
            cluster.scheduler.schedule(prod.retry_backoff_ms, cluster.transaction_service().request, prod, api,
                                       {"producer_id": prod.producer_id, "producer_epoch": prod.producer_epoch,
                                        "group": op["group"]}, name="txn-add-offsets-retry")
        else:
            cluster.scheduler.schedule(prod.retry_backoff_ms, txn_offset_service(cluster).request, prod,
                                       name="txn-offset-commit-retry")
    else:
        prod.txn_offsets = None
        prod.txn_failed = error      # the transaction can only abort now


def on_marker(cluster: Any, broker_id: int, p: int, producer_id: int, commit: bool) -> None:
    svc = cluster.txn_offsets
    if svc is not None:
        svc.marker(broker_id, p, producer_id, commit)


def loaded(cluster: Any, broker_id: int, p: int, leader_epoch: int, result: Any) -> None:
    """GroupService loaded ``__consumer_offsets-p``: keep its pending transactional offsets."""
    txn_offset_service(cluster).loaded(broker_id, p, leader_epoch, result)


def offset_fetch(cluster: Any, group: str, require_stable: bool = False) -> dict:
    return txn_offset_service(cluster).fetch(group, require_stable)
