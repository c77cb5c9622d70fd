"""Transactions for real clients, through the engine's own transaction coordinator.

The engine's :class:`~engine.cluster.transactions.TransactionService` keeps each
transactional id's state in ``__transaction_state`` (acks=all), fences older epochs, writes
Prepare*/Complete* and has every partition's leader append the COMMIT or ABORT control
batch. It knows a producer by name in ``cluster.producers`` and answers through
``cluster.on_txn_answer``; a :class:`WireTxnProducer` (name ``wire-txn:<transactional id>``)
stands in for the engine's Producer and hands each answer to the request waiting for it.

Served: InitProducerId with a transactional id (0-4), AddPartitionsToTxn 0-3, AddOffsetsToTxn
0-3, EndTxn 0-3, TxnOffsetCommit 0-3 (``send_offsets_to_transaction``).
"""
from __future__ import annotations

from typing import Any, Callable

from engine.cluster.transactions import transaction_service
from engine.errors import KafkaError

from .protocol import error_code

__all__ = ["WireTxnProducer", "TXN_HANDLERS", "transaction_coordinator"]


class WireTxnProducer:
    """What the transaction service needs of a producer, plus the waiting requests."""

    def __init__(self, transactional_id: str) -> None:
        self.name = f"wire-txn:{transactional_id}"
        self.transactional_id = transactional_id
        self.waiting: dict[str, Callable[[str, dict], None]] = {}

    def on_txn_answer(self, api: str, error: str, result: dict) -> None:
        cb = self.waiting.pop(api, None)
        if cb is not None:
            cb(error, result)


def _producer(ctx, tid: str) -> WireTxnProducer:
    name = f"wire-txn:{tid}"
    prod = ctx.cluster.producers.get(name)
    if not isinstance(prod, WireTxnProducer):
        prod = ctx.cluster.producers[name] = WireTxnProducer(tid)
    return prod


def transaction_coordinator(ctx, tid: str) -> tuple[int, int] | str:
    """(this broker, ``__transaction_state`` partition) if this broker coordinates ``tid``."""
    found = transaction_service(ctx.cluster).coordinator_for(tid)
    if found is None:
        return "COORDINATOR_NOT_AVAILABLE"
    if found[0] != ctx.broker.id:
        return "NOT_COORDINATOR"
    return found


def _ask(ctx, tid: str, api: str, payload: dict, done: Callable[[str, dict], None]) -> None:
    """Hand ``api`` to the coordinator on this broker; ``done(error, result)`` gets its answer."""
    found = transaction_coordinator(ctx, tid)
    if isinstance(found, str):
        done(found, {})
        return
    prod = _producer(ctx, tid)
    prod.waiting[api] = done
    svc = transaction_service(ctx.cluster)
    svc._handle(ctx.broker.id, ctx.broker.incarnation, found[1], prod.name, api, payload)


def _code(error: str | None) -> int:
    return error_code(None if error in (None, "NONE") else error)


def init_producer_id(ctx, version: int, req: dict, respond: Callable) -> None:
    tid = req["transactional_id"]
    if tid is None:
        try:
            pid = ctx.cluster.allocate_producer_id(ctx.broker.id)
        except KafkaError as exc:       # KRaft: the broker is waiting for its next block (retriable)
            respond({"throttle_time_ms": 0, "error_code": exc.code or -1, "producer_id": -1, "producer_epoch": -1})
            return
        respond({"throttle_time_ms": 0, "error_code": 0, "producer_id": pid, "producer_epoch": 0})
        return

    def done(error: str, result: dict) -> None:
        respond({"throttle_time_ms": 0, "error_code": _code(error),
                 "producer_id": result.get("producer_id", -1), "producer_epoch": result.get("producer_epoch", -1)})
    _ask(ctx, tid, "init_producer_id", {"timeout_ms": req["transaction_timeout_ms"]}, done)


def add_partitions_to_txn(ctx, version: int, req: dict, respond: Callable) -> None:
    tid = req["v3_and_below_transactional_id"]
    topics = req["v3_and_below_topics"]

    def done(error: str, result: dict) -> None:
        respond({"throttle_time_ms": 0, "results_by_topic_v3_and_below": [
            {"name": t["name"], "results_by_partition": [{"partition_index": p, "partition_error_code": _code(error)}
                                                         for p in t["partitions"]]} for t in topics]})
    unknown = [t["name"] for t in topics if t["name"] not in ctx.cluster.controller.topics]
    if unknown:
        done("UNKNOWN_TOPIC_OR_PARTITION", {})
        return
    _ask(ctx, tid, "add_partitions", {"producer_id": req["v3_and_below_producer_id"],
                                      "producer_epoch": req["v3_and_below_producer_epoch"],
                                      "partitions": [(t["name"], p) for t in topics for p in t["partitions"]]}, done)


def end_txn(ctx, version: int, req: dict, respond: Callable) -> None:
    def done(error: str, result: dict) -> None:
        respond({"throttle_time_ms": 0, "error_code": _code(error), "producer_id": -1, "producer_epoch": -1})
    _ask(ctx, req["transactional_id"], "end_txn", {"producer_id": req["producer_id"],
                                                   "producer_epoch": req["producer_epoch"],
                                                   "commit": req["committed"]}, done)


def add_offsets_to_txn(ctx, version: int, req: dict, respond: Callable) -> None:
    """The group's ``__consumer_offsets`` partition joins the transaction."""
    def done(error: str, result: dict) -> None:
        respond({"throttle_time_ms": 0, "error_code": _code(error)})
    _ask(ctx, req["transactional_id"], "add_offsets", {"producer_id": req["producer_id"],
                                                       "producer_epoch": req["producer_epoch"],
                                                       "group": req["group_id"]}, done)


def txn_offset_commit(ctx, version: int, req: dict, respond: Callable) -> None:
    """At the group's coordinator: the offsets are appended as transactional records and
    stay pending until the transaction's marker (engine/cluster/txn_offsets.py)."""
    from engine.cluster.consumer import group_service
    from engine.cluster.txn_offsets import txn_offset_service
    group = req["group_id"]
    offsets = [(t["name"], p["partition_index"], p["committed_offset"]) for t in req["topics"]
               for p in t["partitions"]]

    def done(error: str, result: dict) -> None:
        topics: dict[str, list] = {}
        for t, q, _ in offsets:
            topics.setdefault(t, []).append({"partition_index": q, "error_code": _code(error)})
        respond({"throttle_time_ms": 0, "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()]})
    found = group_service(ctx.cluster).find_coordinator(group)
    if found is None:
        done("COORDINATOR_NOT_AVAILABLE", {})
        return
    if found[0] != ctx.broker.id:
        done("NOT_COORDINATOR", {})
        return
    svc = txn_offset_service(ctx.cluster)
    svc.groups_seen.add(group)
    prod = _producer(ctx, req["transactional_id"])
    prod.waiting["txn_offset_commit"] = done
    svc.handle(ctx.broker.id, ctx.broker.incarnation, found[1], prod.name,
               {"group": group, "offsets": offsets, "producer_id": req["producer_id"],
                "producer_epoch": req["producer_epoch"], "generation": req["generation_id"],
                "member_id": req["member_id"]})


TXN_HANDLERS = {22: init_producer_id, 24: add_partitions_to_txn, 25: add_offsets_to_txn, 26: end_txn,
                28: txn_offset_commit}
