"""Transactions on the replicated cluster: the transaction coordinator, transactional
producers and what consumers see at each isolation level (KIP-98).

* The coordinator of ``transactional.id`` is the leader of ``__transaction_state``
  partition ``abs(javaHash(transactional.id)) % transaction.state.log.num.partitions``
  (the internal topic is created on first use: compacted, replication factor min(3,
  brokers), ``min.insync.replicas`` min(2, RF)). Its state lives in that partition as
  ``TransactionLogKey``/``TransactionLogValue`` v0 records (docs/file-formats.md); a
  coordinator commits a state change with acks=all (a local append on its own broker, which
  client-link faults do not touch) before acting on it, and a broker that
  becomes the partition's leader reads the log back — so a coordinator failover in the
  middle of a commit finishes it (a ``PrepareCommit`` found on load sends the markers again
  and completes).
* States: Empty → Ongoing → PrepareCommit / PrepareAbort → CompleteCommit / CompleteAbort
  (→ Ongoing with the next transaction's first partition). InitProducerId on a known id
  bumps the epoch (fencing an older instance — a "zombie" — whose calls then fail with
  ``PRODUCER_FENCED``/``INVALID_PRODUCER_EPOCH``) and aborts a transaction it left open.
  A transaction open longer than its ``transaction.timeout.ms`` is aborted by the
  coordinator, which also bumps the epoch.
* EndTxn writes Prepare*, answers the producer, then sends WriteTxnMarkers: every
  partition's leader appends a COMMIT or ABORT control batch (``Log.append_txn_marker``;
  an abort is indexed in the segment's ``.txnindex``) and once every partition answered
  the coordinator writes Complete*.
* ``Cluster.consume(..., isolation="read_committed")`` reads below the last stable offset
  and skips aborted transactions' batches; ``read_uncommitted`` reads to the high
  watermark. Neither returns control records.

Requests travel with the network's latency and are subject to its faults; a request to a
coordinator that is down, unreachable or no longer the leader fails with
``COORDINATOR_NOT_AVAILABLE`` / ``NOT_COORDINATOR`` and the producer retries after
``retry.backoff.ms``. Simplified, and said so: WriteTxnMarkers is applied by a live
leader at once (no acks wait). ``AddOffsetsToTxn`` adds the group's ``__consumer_offsets``
partition like AddPartitionsToTxn; ``TxnOffsetCommit`` and the pending offsets live in
:mod:`engine.cluster.txn_offsets`.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any

from ..errors import CoordinatorLoadInProgressError, InvalidRequestError
from ..events import Event, event
from ..group.java import java_abs, string_hash
from ..group.offsets import OFFSETS_TOPIC
from .config import CLIENT
from .produce_wait import ProduceWaiter

__all__ = ["TransactionService", "TxnMetadata", "STATES", "TXN_TOPIC", "encode_txn_key", "encode_txn_value",
           "decode_txn_key", "decode_txn_value", "transaction_service", "partition_for_transactional_id"]

TXN_TOPIC = "__transaction_state"
RETRY_BACKOFF_MS = 100
ABORT_TIMED_OUT_INTERVAL_MS = 10_000   # transaction.abort.timed.out.transaction.cleanup.interval.ms

# TransactionState ids as stored in TransactionLogValue.TransactionStatus.
STATES = ("Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Dead",
          "PrepareEpochFence")
_STATE_ID = {s: i for i, s in enumerate(STATES)}


# ---- events ---------------------------------------------------------------------------------

@event("txn_request")
class TxnRequest(Event):
    """A transactional producer's request to its coordinator (``api``: init_producer_id,
    add_partitions, end_txn) and the coordinator's answer (``error`` "NONE" when fine)."""
    transactional_id: str
    producer: str
    api: str
    coordinator: int
    error: str
    detail: str


@event("txn_state_changed")
class TxnStateChanged(Event):
    """The coordinator committed a new state for ``transactional_id`` to its log partition."""
    transactional_id: str
    coordinator: int
    txn_partition: int
    producer_id: int
    producer_epoch: int
    old_state: str
    new_state: str
    partitions: list
    reason: str


@event("txn_marker_written")
class TxnMarkerWritten(Event):
    """A partition leader appended a COMMIT/ABORT marker at ``offset`` (WriteTxnMarkers)."""
    transactional_id: str
    broker: int
    topic: str
    partition: int
    producer_id: int
    commit: bool
    offset: int
    coordinator_epoch: int


@event("txn_loaded")
class TxnLoaded(Event):
    """A broker that leads a ``__transaction_state`` partition read its transactions back."""
    broker: int
    txn_partition: int
    records: int
    transactional_ids: list
    resumed: list


# ---- the log format ---------------------------------------------------------------------------

def _string(s: str) -> bytes:
    b = s.encode()
    return struct.pack(">h", len(b)) + b


def encode_txn_key(transactional_id: str) -> bytes:
    """TransactionLogKey v0 (docs/file-formats.md)."""
    return struct.pack(">h", 0) + _string(transactional_id)


def decode_txn_key(data: bytes) -> str | None:
    if data is None or len(data) < 4:
        return None
    version, n = struct.unpack_from(">hh", data)
    return data[4:4 + n].decode() if version == 0 else None


def encode_txn_value(md: "TxnMetadata") -> bytes:
    """TransactionLogValue v0 (docs/file-formats.md)."""
    out = bytearray(struct.pack(">hqhib", 0, md.producer_id, md.producer_epoch, md.timeout_ms,
                                _STATE_ID[md.state]))
    by_topic: dict[str, list[int]] = {}
    for t, p in sorted(md.partitions):
        by_topic.setdefault(t, []).append(p)
    out += struct.pack(">i", len(by_topic))
    for t, ps in by_topic.items():
        out += _string(t) + struct.pack(">i", len(ps)) + b"".join(struct.pack(">i", p) for p in ps)
    out += struct.pack(">qq", md.last_update_ms, md.start_ms)
    return bytes(out)


def decode_txn_value(data: bytes) -> dict | None:
    if data is None:
        return None
    version, pid, epoch, timeout, status = struct.unpack_from(">hqhib", data)
    if version != 0:
        return None
    pos = 17
    (count,) = struct.unpack_from(">i", data, pos)
    pos += 4
    parts = []
    for _ in range(max(count, 0)):
        (n,) = struct.unpack_from(">h", data, pos)
        topic = data[pos + 2:pos + 2 + n].decode()
        pos += 2 + n
        (k,) = struct.unpack_from(">i", data, pos)
        pos += 4
        for _ in range(k):
            parts.append((topic, struct.unpack_from(">i", data, pos)[0]))
            pos += 4
    last, start = struct.unpack_from(">qq", data, pos)
    return {"producer_id": pid, "producer_epoch": epoch, "timeout_ms": timeout, "state": STATES[status],
            "partitions": parts, "last_update_ms": last, "start_ms": start}


def coordinator_error(produce_error: str | None) -> str:
    """What a coordinator answers when its own log append failed (Kafka's
    TransactionStateManager.appendTransactionToLog)."""
    if produce_error in ("UNKNOWN_TOPIC_OR_PARTITION", "NOT_ENOUGH_REPLICAS", "NOT_ENOUGH_REPLICAS_AFTER_APPEND",
                         "REQUEST_TIMED_OUT"):
        return "COORDINATOR_NOT_AVAILABLE"
    if produce_error in ("NOT_LEADER_OR_FOLLOWER", "KAFKA_STORAGE_ERROR"):
        return "NOT_COORDINATOR"
    return "UNKNOWN_SERVER_ERROR"


def partition_for_transactional_id(transactional_id: str, num_partitions: int) -> int:
    return java_abs(string_hash(transactional_id)) % num_partitions


# ---- coordinator state --------------------------------------------------------------------------

@dataclass
class TxnMetadata:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: str = "Empty"
    partitions: set = field(default_factory=set)
    last_update_ms: int = 0
    start_ms: int = -1
    pending_markers: set = field(default_factory=set)
    completing: bool = False       # Complete* is being written: markers are never sent twice

    def to_dict(self) -> dict:
        return {"producer_id": self.producer_id, "producer_epoch": self.producer_epoch, "state": self.state,
                "timeout_ms": self.timeout_ms, "partitions": [f"{t}-{p}" for t, p in sorted(self.partitions)],
                "start_ms": self.start_ms, "pending_markers": [f"{t}-{p}" for t, p in sorted(self.pending_markers)]}


class TransactionService:
    """Coordinators and transactional producers of one cluster (``cluster.transactions``)."""

    def __init__(self, cluster: Any, num_partitions: int = 50) -> None:
        self.cluster = cluster
        self.num_partitions = num_partitions
        # (broker, txn partition) -> (broker incarnation, leader epoch, {tid: TxnMetadata})
        self.loaded: dict[tuple[int, int], tuple[int, int, dict]] = {}
        self.writes = ProduceWaiter(cluster, "txn-log-writes")   # state changes waiting for acks=all
        self.cleanup_task = None

    # ---- plumbing -------------------------------------------------------------------------------
    @property
    def scheduler(self):
        return self.cluster.scheduler

    def emit(self, ev: Any) -> None:
        self.cluster.events.emit(ev)

    def ensure_topic(self) -> None:
        if TXN_TOPIC not in self.cluster.controller.topics:
            rf = min(3, len(self.cluster.brokers))
            self.cluster.create_topic(TXN_TOPIC, self.num_partitions, rf,
                                      {"cleanup.policy": "compact", "min.insync.replicas": min(2, rf)})
        if self.cleanup_task is None:
            self.cleanup_task = self.scheduler.schedule_periodic(ABORT_TIMED_OUT_INTERVAL_MS,
                                                                 self.abort_timed_out, name="txn-timeout-check")

    def partition_for(self, transactional_id: str) -> int:
        return partition_for_transactional_id(transactional_id, self.num_partitions)

    def _leader_part(self, broker_id: int, p: int) -> Any:
        b = self.cluster.brokers.get(broker_id)
        if b is None or not b.alive:
            return None
        part = b.partitions.get((TXN_TOPIC, p))
        return part if part is not None and part.role == "leader" else None

    def txns(self, broker_id: int, p: int) -> dict | None:
        """The coordinator's transactions for partition ``p`` on ``broker_id`` if it leads
        it now, (re)loaded from the log on a new leadership or incarnation."""
        part = self._leader_part(broker_id, p)
        if part is None:
            return None
        b = self.cluster.brokers[broker_id]
        key = (broker_id, p)
        cur = self.loaded.get(key)
        if cur is None or cur[0] != b.incarnation or cur[1] != part.leader_epoch:
            self.loaded[key] = (b.incarnation, part.leader_epoch, self._load(broker_id, p, part))
        return self.loaded[key][2]

    def _load(self, broker_id: int, p: int, part: Any) -> dict:
        txns: dict[str, TxnMetadata] = {}
        # Up to the log end, as Kafka loads coordinator state: a new leader's HW may still lag.
        records = part.log.records(part.log.log_start_offset, part.log.log_end_offset)
        for r in records:
            tid = decode_txn_key(r.key)
            if tid is None:
                continue
            v = decode_txn_value(r.value)
            if v is None:
                txns.pop(tid, None)
                continue
            txns[tid] = TxnMetadata(tid, v["producer_id"], v["producer_epoch"], v["timeout_ms"], v["state"],
                                    set(v["partitions"]), v["last_update_ms"], v["start_ms"])
        resumed = []
        for tid, md in sorted(txns.items()):
            if md.state in ("PrepareCommit", "PrepareAbort"):
                # The old coordinator died between Prepare* and Complete*: finish the job.
                resumed.append(tid)
                self.scheduler.schedule(0, self._send_markers, broker_id, p, tid, name="txn-resume-markers")
        self.emit(TxnLoaded(broker_id, p, len(records), sorted(txns), resumed))
        return txns

    topic = TXN_TOPIC

    def load_on_election(self, broker_id: int, p: int) -> None:
        """The broker became leader of ``__transaction_state-p``: load it now, so transactions
        caught between Prepare* and Complete* are finished without waiting for a request."""
        self.txns(broker_id, p)

    def coordinator_for(self, transactional_id: str) -> tuple[int, int] | None:
        self.ensure_topic()
        p = self.partition_for(transactional_id)
        leader = self.cluster.controller.partition(TXN_TOPIC, p).leader
        return None if leader < 0 else (leader, p)

    # ---- requests from producers -------------------------------------------------------------
    def request(self, producer: Any, api: str, payload: dict) -> None:
        """Send ``api`` to the producer's coordinator; the answer reaches
        ``cluster.on_txn_answer(producer, api, error, result)`` after the network's latency
        both ways."""
        on_done = producer.name
        found = self.coordinator_for(producer.transactional_id)
        if found is None:
            self._answer(producer, api, -1, "COORDINATOR_NOT_AVAILABLE", "no leader", on_done, {})
            return
        broker_id, p = found
        b = self.cluster.brokers[broker_id]
        if not b.alive or not self.cluster.network.reachable(CLIENT, broker_id):
            self._answer(producer, api, broker_id, "COORDINATOR_NOT_AVAILABLE", "not reachable", on_done, {})
            return
        self.scheduler.schedule(self.cluster.network.latency_ms, self._handle, broker_id, b.incarnation, p,
                                producer.name, api, payload, name=f"txn:{api}")

    def _answer(self, producer: Any, api: str, broker_id: int, error: str, detail: str, on_done: Any,
                result: dict) -> None:
        self.emit(TxnRequest(producer.transactional_id, producer.name, api, broker_id, error, detail))
        self.scheduler.schedule(self.cluster.network.latency_ms, self.cluster.on_txn_answer, producer.name, api,
                                error, result, name=f"txn:{api}-answer")

    def _answer_by_name(self, name: str, api: str, broker_id: int, error: str, result: dict) -> None:
        self._answer(self.cluster.producers[name], api, broker_id, error, "", name, result)

    def _handle(self, broker_id: int, incarnation: int, p: int, name: str, api: str, payload: dict) -> None:
        producer = self.cluster.producers[name]
        on_done = name
        b = self.cluster.brokers[broker_id]
        if not b.alive or b.incarnation != incarnation:
            self._answer(producer, api, broker_id, "COORDINATOR_NOT_AVAILABLE", "went down", on_done, {})
            return
        txns = self.txns(broker_id, p)
        if txns is None:
            self._answer(producer, api, broker_id, "NOT_COORDINATOR", f"no longer leads {TXN_TOPIC}-{p}", on_done, {})
            return
        tid = producer.transactional_id
        md = txns.get(tid)
        now = self.cluster.now_ms()
        if api != "init_producer_id":
            err = self._check_epoch(md, payload)
            if err is not None:
                self._answer(producer, api, broker_id, err, "", on_done, {})
                return
        if md is not None and any(w[0] == broker_id and w[2].transactional_id == tid for w in self.writes.waiting()):
            # Kafka's pendingTransitionInProgress: one state change at a time, or a change built
            # on the state before the pending one would undo it (AddPartitionsToTxn racing
            # AddOffsetsToTxn would drop a partition from the transaction).
            self._answer(producer, api, broker_id, "CONCURRENT_TRANSACTIONS",
                         "another state change is being written", on_done, {})
            return
        if md is not None and md.state in ("PrepareCommit", "PrepareAbort", "PrepareEpochFence"):
            self._answer(producer, api, broker_id, "CONCURRENT_TRANSACTIONS",
                         f"the previous transaction is still completing ({md.state})", on_done, {})
            return
        if api == "init_producer_id":
            self._init(broker_id, p, txns, tid, md, payload, now, producer, on_done)
        elif api in ("add_partitions", "add_offsets"):
            if api == "add_offsets":
                # AddOffsetsToTxn: the group's __consumer_offsets partition joins the transaction,
                # through the same transition as AddPartitionsToTxn (Kafka's handler does likewise).
                wanted = {(OFFSETS_TOPIC, self.cluster.group_service().partition_for(payload["group"]))}
            else:
                wanted = set(map(tuple, payload["partitions"]))
            new = wanted - md.partitions
            if md.state not in ("Empty", "Ongoing", "CompleteCommit", "CompleteAbort"):
                self._answer(producer, api, broker_id, "INVALID_TXN_STATE", md.state, on_done, {})
                return
            if not new and md.state == "Ongoing":
                self._answer(producer, api, broker_id, "NONE", "already in the transaction", on_done, {})
                return
            target = self._copy(md, state="Ongoing", partitions=(md.partitions if md.state == "Ongoing" else set())
                                | new, start_ms=md.start_ms if md.state == "Ongoing" else now, last_update_ms=now)
            self._write(broker_id, p, target, "add_partitions",
                        (self._answer_by_name, (name, api, broker_id, "NONE", {})), (name, api, broker_id))
        elif api == "end_txn":
            commit = payload["commit"]
            if md.state == ("CompleteCommit" if commit else "CompleteAbort") and \
                    payload["producer_epoch"] == md.producer_epoch:
                # A retry of an EndTxn whose answer was lost: it already happened.
                self._answer(producer, api, broker_id, "NONE", "already completed", on_done, {})
                return
            if md.state != "Ongoing":
                # Empty/Complete*: nothing open (commit without begin, abort twice, ...).
                self._answer(producer, api, broker_id, "INVALID_TXN_STATE",
                             f"no transaction is open (state {md.state})", on_done, {})
                return
            target = self._copy(md, state="PrepareCommit" if commit else "PrepareAbort", last_update_ms=now)
            self._write(broker_id, p, target, "end_txn", (self._prepared, (name, broker_id, p, tid)),
                        (name, api, broker_id))

    def _prepared(self, name: str, broker_id: int, p: int, tid: str) -> None:
        """Prepare* is in the log: the commit or abort will happen now, whatever fails next."""
        self._answer_by_name(name, "end_txn", broker_id, "NONE", {})
        self._send_markers(broker_id, p, tid)

    def _check_epoch(self, md: TxnMetadata | None, payload: dict) -> str | None:
        if md is None or md.producer_id != payload["producer_id"]:
            return "INVALID_PRODUCER_ID_MAPPING"
        if payload["producer_epoch"] < md.producer_epoch:
            return "PRODUCER_FENCED"
        return None

    def _init(self, broker_id: int, p: int, txns: dict, tid: str, md: TxnMetadata | None, payload: dict,
              now: int, producer: Any, on_done: Any) -> None:
        if md is None:
            try:
                pid = self.cluster.allocate_producer_id(broker_id)
            except CoordinatorLoadInProgressError as exc:     # KRaft: waiting for a producer-id block
                self._answer(producer, "init_producer_id", broker_id, exc.name, str(exc), on_done, {})
                return
            target = TxnMetadata(tid, pid, 0, payload["timeout_ms"], "Empty", set(), now, -1)
        elif md.state == "Ongoing":
            # An instance left a transaction open: abort it under a bumped epoch, then answer
            # (the client retries on CONCURRENT_TRANSACTIONS until the abort completed).
            fenced = self._copy(md, state="PrepareAbort", producer_epoch=md.producer_epoch + 1, last_update_ms=now)
            self._write(broker_id, p, fenced, "init_producer_id: abort the open transaction",
                        (self._send_markers, (broker_id, p, tid)), None)
            self._answer(producer, "init_producer_id", broker_id, "CONCURRENT_TRANSACTIONS",
                         "aborting the transaction the previous instance left open", on_done, {})
            return
        else:
            target = self._copy(md, producer_epoch=md.producer_epoch + 1, state="Empty", partitions=set(),
                                timeout_ms=payload["timeout_ms"], last_update_ms=now, start_ms=-1)
        self._write(broker_id, p, target, "init_producer_id",
                    (self._answer_by_name, (producer.name, "init_producer_id", broker_id, "NONE",
                                            {"producer_id": target.producer_id,
                                             "producer_epoch": target.producer_epoch})),
                    (producer.name, "init_producer_id", broker_id))

    @staticmethod
    def _copy(md: TxnMetadata, **changes: Any) -> TxnMetadata:
        fields = dict(md.__dict__)
        fields["partitions"] = set(md.partitions)
        fields["pending_markers"] = set()
        fields["completing"] = False
        fields.update(changes)
        return TxnMetadata(**fields)

    # ---- writing state: acks=all to the coordinator's own partition ------------------------------
    def _write(self, broker_id: int, p: int, target: TxnMetadata, reason: str, then: tuple,
               fail_to: tuple | None) -> None:
        """Append ``target`` to the coordinator's partition with acks=all. Once acknowledged the
        in-memory state follows and ``then`` = (bound method, args) runs; a failed append is
        answered to ``fail_to`` = (producer name, api, broker) if given."""
        rid = self.cluster.produce(TXN_TOPIC, p, [encode_txn_value(target)],
                                   key=encode_txn_key(target.transactional_id), acks=-1, broker=broker_id, local=True)
        self.writes.watch(rid, self._written, broker_id, p, target, reason, then, fail_to)

    def _written(self, res: Any, broker_id: int, p: int, target: TxnMetadata, reason: str, then: tuple | None,
                 fail_to: tuple | None) -> None:
        txns = self.txns(broker_id, p)
        if res.status != "ok" or txns is None:
            error = "NOT_COORDINATOR" if txns is None else coordinator_error(res.error)
            if fail_to is not None:
                self._answer_by_name(fail_to[0], fail_to[1], fail_to[2], error, {})
            elif txns is not None and target.transactional_id in txns and target.state.startswith("Complete"):
                # Complete* must reach the log: try again (the markers are already written).
                txns[target.transactional_id].completing = False
                self.scheduler.schedule(RETRY_BACKOFF_MS, self._maybe_complete, broker_id, p,
                                        target.transactional_id, name="txn-complete-retry")
            return
        old = txns.get(target.transactional_id)
        txns[target.transactional_id] = target
        self.emit(TxnStateChanged(target.transactional_id, broker_id, p, target.producer_id,
                                  target.producer_epoch, old.state if old else "none", target.state,
                                  [f"{t}-{q}" for t, q in sorted(target.partitions)], reason))
        if then is not None:
            then[0](*then[1])

    # ---- markers --------------------------------------------------------------------------------
    def _send_markers(self, broker_id: int, p: int, tid: str) -> None:
        txns = self.txns(broker_id, p)
        if txns is None or tid not in txns:
            return   # not the coordinator any more: the next one resumes from the log
        md = txns[tid]
        if md.state not in ("PrepareCommit", "PrepareAbort") or md.completing:
            return
        commit = md.state == "PrepareCommit"
        coordinator_epoch = self.cluster.brokers[broker_id].partitions[(TXN_TOPIC, p)].leader_epoch
        md.pending_markers = set(md.partitions)
        for (topic, partition) in sorted(md.partitions):
            self._write_marker(broker_id, p, tid, topic, partition, commit, coordinator_epoch)
        self._maybe_complete(broker_id, p, tid)

    def _write_marker(self, broker_id: int, p: int, tid: str, topic: str, partition: int, commit: bool,
                      coordinator_epoch: int) -> None:
        txns = self.txns(broker_id, p)
        if txns is None or tid not in txns:
            return
        md = txns[tid]
        pm = self.cluster.controller.partition(topic, partition)
        b = self.cluster.brokers.get(pm.leader)
        part = b.partitions.get((topic, partition)) if b is not None and b.alive else None
        if part is None or part.role != "leader" or not self.cluster.network.reachable(broker_id, b.id):
            # Retried until a leader takes it: markers must reach every partition.
            self.scheduler.schedule(RETRY_BACKOFF_MS, self._write_marker, broker_id, p, tid, topic, partition,
                                    commit, coordinator_epoch, name="txn-marker-retry")
            return
        old = part.leo
        info = part.log.append_txn_marker(commit, md.producer_id, md.producer_epoch, coordinator_epoch,
                                          part.leader_epoch)
        part.leo_changed(old, "txn_marker")
        part.wake_parked_fetches()
        part.maybe_increment_hw("append")
        self.emit(TxnMarkerWritten(tid, b.id, topic, partition, md.producer_id, commit, info.first_offset,
                                   coordinator_epoch))
        md.pending_markers.discard((topic, partition))
        if topic == "__consumer_offsets":
            offsets = self.cluster.txn_offsets   # pending transactional offsets commit or vanish
            if offsets is not None:
                offsets.marker(b.id, partition, md.producer_id, commit)
        self._maybe_complete(broker_id, p, tid)

    def _maybe_complete(self, broker_id: int, p: int, tid: str) -> None:
        txns = self.txns(broker_id, p)
        if txns is None or tid not in txns:
            return
        md = txns[tid]
        if md.pending_markers or md.completing or md.state not in ("PrepareCommit", "PrepareAbort"):
            return
        done = self._copy(md, state="CompleteCommit" if md.state == "PrepareCommit" else "CompleteAbort",
                          partitions=set(), last_update_ms=self.cluster.now_ms())
        md.completing = True
        self._write(broker_id, p, done, "markers written", None, None)

    # ---- transaction.timeout.ms ----------------------------------------------------------------------
    def abort_timed_out(self) -> None:
        now = self.cluster.now_ms()
        for (broker_id, p), (_, _, txns) in sorted(self.loaded.items()):
            if self.txns(broker_id, p) is not txns:
                continue
            for tid, md in sorted(txns.items()):
                if md.state == "Ongoing" and now - md.start_ms > md.timeout_ms:
                    target = self._copy(md, state="PrepareAbort", producer_epoch=md.producer_epoch + 1,
                                        last_update_ms=now)
                    self._write(broker_id, p, target, "transaction.timeout.ms passed",
                                (self._send_markers, (broker_id, p, tid)), None)

    def state(self) -> dict:
        out = {}
        for (broker_id, p), (_, _, txns) in sorted(self.loaded.items()):
            if self.txns(broker_id, p) is not txns:
                continue
            for tid, md in sorted(txns.items()):
                out[tid] = {"coordinator": broker_id, "txn_partition": p, **md.to_dict()}
        return out


def transaction_service(cluster: Any, **kwargs: Any) -> TransactionService:
    """The cluster's transaction coordinator (see :meth:`Cluster.transaction_service`)."""
    return cluster.transaction_service(**kwargs)
