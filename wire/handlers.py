"""What a broker does with each request a real client sends, on the engine's objects.

Every handler runs *at the broker*, when the engine's network delivers the request there
from the connection's node (see :mod:`wire.session`), and answers through ``respond(body)``
which carries the response back over the same link. Handlers read the broker's own
replicas (``broker.partitions``) for data and the controller's records for metadata.

Produce hands the client's batch bytes to the leader's ``Partition.produce``: the log
runs Kafka's LogValidator checks (``engine/records/validation.py``) and acks 0/1/all go
through the engine's replication and produce purgatory. Fetch reads whole batches up to
the HW (or the LSO for read_committed) and, when there is less than ``min_bytes``, waits
in the broker's fetch purgatory on its timing wheel (:class:`DelayedClientFetch`), woken
when the leader appends or its HW moves.
"""
from __future__ import annotations

from typing import Any, Callable

from engine.cluster.fetch_session import FINAL_EPOCH, INVALID_SESSION_ID, FetchContext, PartitionParams, new_context
from engine.cluster.log_dir import identity
from engine.cluster.network import ProduceRequest, ProduceResponse
from engine.errors import KafkaError
from engine.timer import DelayedOperation

from .admin import ADMIN_HANDLERS
from .apis import advertised
from .groups import GROUP_HANDLERS
from .protocol import error_code, uuid_bytes
from .txn import TXN_HANDLERS

__all__ = ["HANDLERS", "Context", "DelayedClientFetch"]

NO_AUTH_OPS = -2147483648   # INT32_MIN: "authorized operations not requested"


class Context:
    """What a handler knows: the listener, the broker the connection is to, and the
    connection's node id in the engine's network."""

    def __init__(self, server: Any, broker: Any, node: Any) -> None:
        self.server = server
        self.cluster = server.cluster
        self.broker = broker
        self.node = node


def _producer_of(records: bytes) -> tuple[int, int, int]:
    """Producer id, epoch and base sequence of the first batch's v2 header (what the
    engine's events about this request name; the log reads the batches themselves)."""
    if len(records) < 61 or records[16] != 2:
        return -1, -1, -1
    return (int.from_bytes(records[43:51], "big", signed=True), int.from_bytes(records[51:53], "big", signed=True),
            int.from_bytes(records[53:57], "big", signed=True))


# ---- ApiVersions -------------------------------------------------------------------------

def api_versions(ctx: Context, version: int, req: dict, respond: Callable) -> None:
    respond({"error_code": 0, "throttle_time_ms": 0,
             "api_keys": [{"api_key": k, "min_version": lo, "max_version": hi} for k, lo, hi in advertised()],
             "finalized_features_epoch": -1})


# ---- Metadata ----------------------------------------------------------------------------

def metadata(ctx: Context, version: int, req: dict, respond: Callable) -> None:
    cluster, server = ctx.cluster, ctx.server
    controller = cluster.controller
    wanted = req["topics"]
    if wanted is None or (version == 0 and not wanted):
        names = [n for n in sorted(controller.topics) if not n.startswith("__")]
    else:
        names = [t["name"] for t in wanted if t["name"] is not None]
    auto = server.auto_create_topics and (version < 4 or req["allow_auto_topic_creation"])
    topics = []
    for name in names:
        meta = controller.topics.get(name)
        if meta is None and auto:
            err = server.auto_create(name)
            topics.append(_topic_error(name, err or "LEADER_NOT_AVAILABLE"))
            continue
        if meta is None:
            topics.append(_topic_error(name, "UNKNOWN_TOPIC_OR_PARTITION"))
            continue
        parts = []
        for pm in meta.partitions:
            offline = [b for b in pm.replicas if not cluster.brokers[b].alive]
            parts.append({"error_code": error_code("LEADER_NOT_AVAILABLE") if pm.leader < 0 else 0,
                          "partition_index": pm.partition, "leader_id": pm.leader,
                          "leader_epoch": pm.leader_epoch, "replica_nodes": list(pm.replicas),
                          "isr_nodes": list(pm.isr), "offline_replicas": offline})
        topics.append({"error_code": 0, "name": name, "topic_id": uuid_bytes(identity(cluster).topic_id(name)),
                       "is_internal": name.startswith("__"), "partitions": parts,
                       "topic_authorized_operations": NO_AUTH_OPS})
    brokers = [{"node_id": b, "host": host, "port": port, "rack": None}
               for b, (host, port) in sorted(server.endpoints.items()) if cluster.brokers[b].alive]
    respond({"throttle_time_ms": 0, "brokers": brokers, "cluster_id": identity(cluster).cluster_id,
             "controller_id": controller.active if controller.active is not None else -1,
             "topics": topics, "cluster_authorized_operations": NO_AUTH_OPS})


def _topic_error(name: str, error: str) -> dict:
    return {"error_code": error_code(error), "name": name, "topic_id": bytes(16), "is_internal": False,
            "partitions": [], "topic_authorized_operations": NO_AUTH_OPS}


# ---- Produce -----------------------------------------------------------------------------

def produce(ctx: Context, version: int, req: dict, respond: Callable) -> None:
    """One engine ProduceRequest per partition, all sent by the connection's node to this
    broker's replica (the leader checks are the partition's own); the response is built when
    every partition has answered (acks=0: nothing is answered)."""
    cluster, broker, node = ctx.cluster, ctx.broker, ctx.node
    acks, timeout = req["acks"], req["timeout_ms"]
    results: dict[tuple[str, int], dict] = {}
    waiting: set[int] = set()
    order: list[tuple[str, int]] = []

    def finish() -> None:
        out: dict[str, list] = {}
        for topic, p in order:
            out.setdefault(topic, []).append(results[(topic, p)])
        respond({"throttle_time_ms": 0,
                 "responses": [{"name": t, "partition_responses": ps} for t, ps in out.items()]})

    sent: dict[int, bytes] = {}

    def answered(resp: ProduceResponse) -> None:
        waiting.discard(resp.request_id)
        if resp.error is None and resp.base_offset is not None and resp.request_id in sent:
            ctx.server.note_acked(resp.topic, resp.partition, resp.base_offset, acks, resp.request_id,
                                  sent.pop(resp.request_id))
        results[(resp.topic, resp.partition)] = _partition_result(resp.partition, resp.error, resp.message,
                                                                  resp.base_offset, ctx, resp.topic)
        if not waiting:
            finish()

    for t in req["topic_data"]:
        topic = t["name"]
        for pd in t["partition_data"]:
            p = pd["index"]
            order.append((topic, p))
            records = pd["records"]
            part = broker.partitions.get((topic, p))
            if topic not in cluster.controller.topics:
                results[(topic, p)] = _partition_result(p, "UNKNOWN_TOPIC_OR_PARTITION", "", None, ctx, topic)
                continue
            if part is None:
                results[(topic, p)] = _partition_result(p, "NOT_LEADER_OR_FOLLOWER", "", None, ctx, topic)
                continue
            if not records:
                results[(topic, p)] = _partition_result(p, "INVALID_RECORD", "no record batch", None, ctx, topic)
                continue
            rid = ctx.server.next_request_id()
            pid, epoch, seq = _producer_of(records)
            request = ProduceRequest(rid, topic, p, (), None, acks, timeout, pid, epoch, seq,
                                     is_transactional=req["transactional_id"] is not None)
            if acks != 0:
                waiting.add(rid)
                node.pending[rid] = answered
                if ctx.server.checker is not None:
                    sent[rid] = records
            part.produce(node.id, request, records)
    if acks == 0:
        respond(None)
    elif not waiting:
        finish()


def _partition_result(p: int, error: str | None, message: str, base: int | None, ctx: Context,
                      topic: str) -> dict:
    part = ctx.broker.partitions.get((topic, p))
    start = part.log.log_start_offset if part is not None else -1
    return {"index": p, "error_code": error_code(error), "base_offset": base if base is not None and not error else -1,
            "log_append_time_ms": -1, "log_start_offset": start, "record_errors": [],
            "error_message": message or None if error else None}


# ---- Fetch -------------------------------------------------------------------------------

class DelayedClientFetch(DelayedOperation):
    """A consumer's fetch with less than ``min_bytes`` to return, parked in the broker's
    fetch purgatory under every partition it asks for (Kafka's DelayedFetch for a consumer):
    completed when a read would now return ``min_bytes``, when a partition hits an error
    (e.g. leadership moved), or at ``max_wait_ms`` with what there is. Its fetch session
    context (KIP-227) was settled when the request arrived; the answer is filtered by it."""

    def __init__(self, ctx: Context, version: int, req: dict, fctx: FetchContext, respond: Callable) -> None:
        super().__init__(max(0, req["max_wait_ms"]), name=f"client-fetch@node{ctx.node.id}")
        self.ctx, self.version, self.req, self.fctx, self.respond = ctx, version, req, fctx, respond

    def try_complete(self) -> bool:
        answers, size, errors = read_fetch(self.ctx, self.req, self.fctx)
        if errors or size >= max(1, self.req["min_bytes"]):
            return self.force_complete()
        return False

    def on_complete(self) -> None:
        if not self.ctx.broker.alive:
            return
        self.respond(fetch_body(self.fctx, read_fetch(self.ctx, self.req, self.fctx)[0]))


def fetch_context(ctx: Context, version: int, req: dict) -> FetchContext:
    """The request's fetch session context (KIP-227, Fetch v7+): sessionless before v7."""
    data = {}
    for t in req["topics"]:
        name = t["topic"]
        for p in t["partitions"]:
            data[(name, p["partition"])] = PartitionParams(p["fetch_offset"], p["partition_max_bytes"],
                                                           p["current_leader_epoch"], p["log_start_offset"],
                                                           p["last_fetched_epoch"])
    now = ctx.cluster.scheduler.now_ms()
    cache = ctx.broker.fetch_sessions
    if version < 7:
        return new_context(cache, now, INVALID_SESSION_ID, FINAL_EPOCH, data, (), False)
    forgotten = [(t["topic"], p) for t in req["forgotten_topics_data"] or () for p in t["partitions"]]
    # A consumer's session is not privileged; a follower's (replica_id >= 0) would be.
    return new_context(cache, now, req["session_id"], req["session_epoch"], data, forgotten,
                       req["replica_id"] >= 0)


def fetch(ctx: Context, version: int, req: dict, respond: Callable) -> None:
    fctx = fetch_context(ctx, version, req)
    if fctx.kind == "error":
        respond(fetch_body(fctx, {}))
        return
    answers, size, errors = read_fetch(ctx, req, fctx)
    if errors or size >= max(1, req["min_bytes"]) or req["max_wait_ms"] <= 0:
        respond(fetch_body(fctx, answers))
        return
    keys = [key for key, _ in fctx.partitions()]
    broker = ctx.broker
    if not broker.fetch_purgatory.try_complete_else_watch(DelayedClientFetch(ctx, version, req, fctx, respond),
                                                          keys):
        broker.fetch_timer_driver.arm()


def fetch_body(fctx: FetchContext, answers: dict) -> dict:
    """The response: the partitions the session context keeps (all but unchanged ones of an
    incremental fetch), grouped by topic in order, with the session id and top-level error."""
    error, session_id, keys = fctx.respond({key: (len(entry["records"]), entry["high_watermark"],
                                                  entry["log_start_offset"], entry["error_code"] != 0,
                                                  entry["preferred_read_replica"])
                                            for key, entry in answers.items()})
    topics: list[dict] = []
    for key in keys:
        if not topics or topics[-1]["topic"] != key[0]:
            topics.append({"topic": key[0], "partitions": []})
        topics[-1]["partitions"].append(answers[key])
    return {"throttle_time_ms": 0, "error_code": error_code(error), "session_id": session_id,
            "responses": topics}


def read_fetch(ctx: Context, req: dict, fctx: FetchContext) -> tuple[dict, int, int]:
    """(partition key → response entry, record bytes in them, partitions with an error), for
    every partition the session context names (an incremental fetch reads the whole session)."""
    broker = ctx.broker
    topics_meta = ctx.cluster.controller.topics
    read_committed = req["isolation_level"] == 1
    budget = req["max_bytes"]
    total = errors = 0
    answers = {}
    for key, params in fctx.partitions():
        name, index = key
        part = broker.partitions.get(key)
        entry = {"partition_index": index, "error_code": 0, "high_watermark": -1, "last_stable_offset": -1,
                 "log_start_offset": -1, "aborted_transactions": None, "preferred_read_replica": -1,
                 "records": b""}
        error = None
        if name not in topics_meta:
            error = "UNKNOWN_TOPIC_OR_PARTITION"
        elif part is None:
            error = "NOT_LEADER_OR_FOLLOWER"
        else:
            epoch = params.leader_epoch
            error = part.error_for_epoch(epoch) if epoch >= 0 else (
                None if part.role == "leader" else "NOT_LEADER_OR_FOLLOWER")
        if error is None:
            log = part.log
            hw = part.hw
            lso = log.last_stable_offset
            bound = lso if read_committed else hw
            offset = params.fetch_offset
            entry.update(high_watermark=hw, last_stable_offset=lso, log_start_offset=log.log_start_offset)
            if offset < log.log_start_offset or offset > part.leo:
                error = "OFFSET_OUT_OF_RANGE"
            elif offset < bound and budget > 0:
                limit = min(params.max_bytes, budget)
                try:
                    info = log.read(offset, max(1, limit), max_offset=bound, trace=False)
                except KafkaError as exc:
                    error = exc.name
                else:
                    entry["records"] = bytes(info.records)
                    total += len(info.records)
                    budget -= len(info.records)
                    if read_committed:
                        entry["aborted_transactions"] = [
                            {"producer_id": a.producer_id, "first_offset": a.first_offset}
                            for a in log.aborted_transactions(offset, bound)]
            if read_committed and entry["aborted_transactions"] is None:
                entry["aborted_transactions"] = []
        if error is not None:
            errors += 1
            entry["error_code"] = error_code(error)
        answers[key] = entry
    return answers, total, errors


# ---- ListOffsets -------------------------------------------------------------------------

def list_offsets(ctx: Context, version: int, req: dict, respond: Callable) -> None:
    broker = ctx.broker
    read_committed = req["isolation_level"] == 1
    topics = []
    for t in req["topics"]:
        parts = []
        for p in t["partitions"]:
            index = p["partition_index"]
            part = broker.partitions.get((t["name"], index))
            out = {"partition_index": index, "error_code": 0, "old_style_offsets": [], "timestamp": -1,
                   "offset": -1, "leader_epoch": -1}
            if t["name"] not in ctx.cluster.controller.topics:
                out["error_code"] = error_code("UNKNOWN_TOPIC_OR_PARTITION")
            elif part is None or part.role != "leader":
                out["error_code"] = error_code("NOT_LEADER_OR_FOLLOWER")
            elif p["current_leader_epoch"] >= 0 and part.error_for_epoch(p["current_leader_epoch"]):
                out["error_code"] = error_code(part.error_for_epoch(p["current_leader_epoch"]))
            else:
                ts = p["timestamp"]
                log = part.log
                if ts == -1:
                    out["offset"] = log.last_stable_offset if read_committed else part.hw
                elif ts == -2:
                    out["offset"] = log.log_start_offset
                else:
                    found = log.offset_for_timestamp(ts)
                    if found is not None and found.offset < part.hw:
                        out["timestamp"], out["offset"] = found.timestamp, found.offset
                out["leader_epoch"] = part.leader_epoch
            parts.append(out)
        topics.append({"name": t["name"], "partitions": parts})
    respond({"throttle_time_ms": 0, "topics": topics})


# Groups, transactions and admin requests are adapters of their own (they import nothing of
# this module, so there is no import circle).
HANDLERS = {0: produce, 1: fetch, 2: list_offsets, 3: metadata, 18: api_versions,
            **GROUP_HANDLERS, **TXN_HANDLERS, **ADMIN_HANDLERS}
