"""Consumer groups for real clients, through the engine's own group coordinator.

The engine's :class:`~engine.cluster.consumer.GroupService` keeps one
:class:`~engine.group.coordinator.GroupCoordinator` per broker (the leader of the group's
``__consumer_offsets`` partition), stores GroupMetadata and offset commits in that topic with
acks=all, and answers a member by *name* through ``consumer.answered(rid, payload)`` and
``consumer.on_<kind>(payload)``. A :class:`WireMember` stands in for the engine's Consumer:
one per connection and group (name ``wire-<node>``), forwarding each answer to the request
that waits for it on that connection.

What the coordinator never parses, the client's bytes, is kept as sent: a member's
subscription travels as a :class:`RawSubscription` (the engine's Subscription plus the
client's metadata bytes, which the group leader gets back verbatim in its JoinGroup
response), and the leader's assignment bytes are handed to each member by SyncGroup as they
were sent (``WireGroups.assignments``), so assignor user data survives.

Served: FindCoordinator 0-3, JoinGroup 0-7, SyncGroup 0-5, Heartbeat 0-4, LeaveGroup 0-4,
OffsetCommit 2-8, OffsetFetch 1-7. Group answers travel broker -> client on the engine's
client node (-1), not the connection's own node: the group service routes them by name.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from engine.cluster.consumer import group_service
from engine.group.assignors import Subscription
from engine.group.metadata import decode_assignment, decode_subscription, encode_assignment, encode_subscription

from .protocol import error_code

__all__ = ["WireMember", "RawSubscription", "GROUP_HANDLERS"]


@dataclass(frozen=True)
class RawSubscription(Subscription):
    """A member's subscription as the coordinator needs it, with the bytes the client sent."""
    raw: bytes = b""


class WireMember:
    """The group service's view of one connection in one group (an engine Consumer's
    interface: ``alive``, ``incarnation``, ``group``, ``answered``, ``on_<kind>``)."""

    def __init__(self, name: str, group: str, node: Any) -> None:
        self.name = name
        self.group = group
        self.node = node
        self.incarnation = 1
        self.coordinator: int | None = None
        self.connection: tuple | None = None
        self.waiting: dict[str, Callable[[dict], None]] = {}
        # What the group checker reads of an engine Consumer; a real client's assignment is
        # in its own process (the coordinator's record of it is in the group).
        self.owned: list = []
        self.owned_generation = -1

    @property
    def alive(self) -> bool:
        return self.node.alive

    def answered(self, rid: int, payload: dict) -> bool:
        return True

    def state(self) -> dict:
        """For ``GroupService.state()``: what the listener knows of this connection's member."""
        return {"group": self.group, "alive": self.alive, "status": "wire", "member_id": None,
                "generation": None, "protocol": None, "leader": None, "coordinator": self.coordinator,
                "topics": [], "owned": [], "positions": {}, "heartbeat_delay_ms": 0, "wire_node": self.node.id}

    def _answer(self, kind: str, payload: dict) -> None:
        cb = self.waiting.get(kind)
        if cb is not None:
            cb(payload)

    def on_join(self, payload: dict) -> None:
        self._answer("join", payload)

    def on_sync(self, payload: dict) -> None:
        self._answer("sync", payload)

    def on_heartbeat(self, payload: dict) -> None:
        self._answer("heartbeat", payload)

    def on_commit(self, payload: dict) -> None:
        self._answer("commit", payload)

    def on_leave(self, payload: dict) -> None:
        self._answer("leave", payload)

    def on_offset_fetch(self, payload: dict) -> None:
        self._answer("offset_fetch", payload)


def _service(ctx):
    return group_service(ctx.cluster)


def _member(ctx, group: str) -> WireMember:
    svc = _service(ctx)
    name = f"wire-{ctx.node.id}"
    m = svc.consumers.get(name)
    if not isinstance(m, WireMember) or m.group != group:
        m = WireMember(name, group, ctx.node)
        svc.consumers[name] = m
    return m


def _coordinator(ctx, group: str):
    """(coordinator, offsets partition) if this broker coordinates ``group`` now, else an error name."""
    svc = _service(ctx)
    found = svc.find_coordinator(group)
    if found is None:
        return "COORDINATOR_NOT_AVAILABLE"
    broker_id, p = found
    if broker_id != ctx.broker.id:
        return "NOT_COORDINATOR"
    coord = svc.coordinator(broker_id, p)
    if coord is None:
        return "COORDINATOR_LOAD_IN_PROGRESS"
    return coord, p


def _adopt(coord, group: str, member_id: str, name: str) -> None:
    """Answers to ``member_id`` go to this connection from now on (a client that reconnected
    to its coordinator rejoins from a new connection, hence a new name)."""
    g = coord.groups.get(group)
    if g is not None and member_id in g.members:
        g.members[member_id].client = name


# ---- FindCoordinator ----------------------------------------------------------------------

def find_coordinator(ctx, version: int, req: dict, respond: Callable) -> None:
    """key_type 0: the group's coordinator; 1: the transactional id's."""
    out = {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "node_id": -1, "host": "", "port": -1}
    if req["key_type"] == 1:
        from engine.cluster.transactions import transaction_service
        found = transaction_service(ctx.cluster).coordinator_for(req["key"])
    else:
        found = _service(ctx).find_coordinator(req["key"])
    if found is None or not ctx.cluster.brokers[found[0]].alive:
        out["error_code"] = error_code("COORDINATOR_NOT_AVAILABLE")
    else:
        host, port = ctx.server.endpoints[found[0]]
        out.update(node_id=found[0], host=host, port=port)
    respond(out)


# ---- JoinGroup / SyncGroup ----------------------------------------------------------------

def join_group(ctx, version: int, req: dict, respond: Callable) -> None:
    group = req["group_id"]

    def fail(err: str, member_id: str = "") -> None:
        respond({"throttle_time_ms": 0, "error_code": error_code(err), "generation_id": -1,
                 "protocol_type": None, "protocol_name": None if version >= 7 else "", "leader": "",
                 "skip_assignment": False, "member_id": member_id, "members": []})
    found = _coordinator(ctx, group)
    if isinstance(found, str):
        fail(found)
        return
    coord, p = found
    protocols = []
    for proto in req["protocols"]:
        try:
            topics, owned, gen = decode_subscription(proto["metadata"])
        except Exception:
            fail("INCONSISTENT_GROUP_PROTOCOL")
            return
        protocols.append((proto["name"], RawSubscription(tuple(topics), tuple(owned), gen, None, proto["metadata"])))
    member = _member(ctx, group)
    svc = _service(ctx)
    rebalance = req["rebalance_timeout_ms"] if version >= 1 else req["session_timeout_ms"]

    def answered(payload: dict) -> None:
        if payload["error"] == "MEMBER_ID_REQUIRED" and version < 4:
            # before KIP-394 the coordinator gives the id and joins in one request
            coord.join_group(group, payload["member_id"], member.name, req["session_timeout_ms"], rebalance,
                             protocols)
            return
        if payload["error"] != "NONE":
            fail(payload["error"], payload.get("member_id", ""))
            return
        members = [{"member_id": mid, "group_instance_id": None,
                    "metadata": sub.raw if isinstance(sub, RawSubscription) and sub.raw
                    else encode_subscription(list(sub.topics), list(sub.owned), sub.generation)}
                   for mid, sub in payload["members"]]
        respond({"throttle_time_ms": 0, "error_code": 0, "generation_id": payload["generation"],
                 "protocol_type": "consumer", "protocol_name": payload["protocol"], "leader": payload["leader"],
                 "skip_assignment": False, "member_id": payload["member_id"], "members": members})
    member.waiting["join"] = answered
    svc.awaiting[(member.name, "join")] = 0
    _adopt(coord, group, req["member_id"], member.name)
    coord.join_group(group, req["member_id"], member.name, req["session_timeout_ms"], rebalance, protocols)


def sync_group(ctx, version: int, req: dict, respond: Callable) -> None:
    group, member_id, generation = req["group_id"], req["member_id"], req["generation_id"]

    def reply(err: str, assignment: bytes = b"", protocol: str | None = None) -> None:
        respond({"throttle_time_ms": 0, "error_code": error_code(err), "protocol_type": "consumer" if protocol else None,
                 "protocol_name": protocol, "assignment": assignment})
    found = _coordinator(ctx, group)
    if isinstance(found, str):
        reply(found)
        return
    coord, p = found
    member = _member(ctx, group)
    raw = ctx.server.assignments
    assignment = None
    if req["assignments"]:
        for key in [k for k in raw if k[0] == group and k[1] < generation]:
            del raw[key]                     # an older generation's assignment is never asked for again
        assignment = {}
        for a in req["assignments"]:
            raw[(group, generation, a["member_id"])] = a["assignment"]
            try:
                assignment[a["member_id"]] = decode_assignment(a["assignment"]) if a["assignment"] else []
            except Exception:
                assignment[a["member_id"]] = []

    def answered(payload: dict) -> None:
        if payload["error"] != "NONE":
            reply(payload["error"])
            return
        g = coord.groups.get(group)
        data = raw.get((group, payload["generation"], member_id))
        if data is None:
            data = encode_assignment(payload["assignment"])
        reply("NONE", data, g.protocol if g is not None else None)
    member.waiting["sync"] = answered
    _service(ctx).awaiting[(member.name, "sync")] = 0
    _adopt(coord, group, member_id, member.name)
    err = coord.sync_group(group, member_id, generation, assignment)
    if err is not None:
        reply(err)


# ---- Heartbeat / LeaveGroup -----------------------------------------------------------------

def heartbeat(ctx, version: int, req: dict, respond: Callable) -> None:
    found = _coordinator(ctx, req["group_id"])
    err = found if isinstance(found, str) else found[0].heartbeat(req["group_id"], req["member_id"],
                                                                  req["generation_id"])
    respond({"throttle_time_ms": 0, "error_code": error_code(err if err != "NONE" else None)})


def leave_group(ctx, version: int, req: dict, respond: Callable) -> None:
    group = req["group_id"]
    found = _coordinator(ctx, group)
    ids = [m["member_id"] for m in req["members"]] if version >= 3 else [req["member_id"]]
    if isinstance(found, str):
        respond({"throttle_time_ms": 0, "error_code": error_code(found), "members": []})
        return
    members = []
    for mid in ids:
        err = found[0].leave_group(group, mid)
        members.append({"member_id": mid, "group_instance_id": None,
                        "error_code": error_code(err if err != "NONE" else None)})
    respond({"throttle_time_ms": 0, "error_code": 0, "members": members})


# ---- OffsetCommit / OffsetFetch -------------------------------------------------------------

def offset_commit(ctx, version: int, req: dict, respond: Callable) -> None:
    group = req["group_id"]
    asked = [(t["name"], p["partition_index"], p["committed_offset"]) for t in req["topics"] for p in t["partitions"]]

    def reply(errors: dict) -> None:
        topics: dict[str, list] = {}
        for t, q, _ in asked:
            e = errors.get((t, q))
            topics.setdefault(t, []).append({"partition_index": q, "error_code": error_code(e if e != "NONE" else None)})
        respond({"throttle_time_ms": 0, "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()]})
    found = _coordinator(ctx, group)
    if isinstance(found, str):
        reply({(t, q): found for t, q, _ in asked})
        return
    coord, p = found
    err = coord.check_commit(group, req["member_id"], req["generation_id_or_member_epoch"])
    if err != "NONE" or not asked:
        reply({(t, q): err for t, q, _ in asked})
        return
    member = _member(ctx, group)
    errors: dict = {}

    def answered(payload: dict) -> None:
        for t, q, _ in payload.get("offsets", []):
            errors[(t, q)] = payload["error"]
        if len(errors) >= len({(t, q) for t, q, _ in asked}):
            reply(errors)
    member.waiting["commit"] = answered
    _service(ctx)._append_commits(ctx.broker.id, p, member.name, group, [list(a) for a in asked], 0)


def offset_fetch(ctx, version: int, req: dict, respond: Callable) -> None:
    group = req["group_id"]
    found = _coordinator(ctx, group)
    err = found if isinstance(found, str) else None
    committed = {}
    if err is None:
        from engine.cluster.txn_offsets import txn_offset_service
        got = txn_offset_service(ctx.cluster).fetch_answer(ctx.broker.id, found[1], group,
                                                          bool(req.get("require_stable")))
        committed = got["offsets"]
    wanted = req["topics"]
    if wanted is None:
        by_topic: dict[str, list] = {}
        for (t, q) in sorted(committed):
            by_topic.setdefault(t, []).append(q)
        wanted = [{"name": t, "partition_indexes": qs} for t, qs in by_topic.items()]
    topics = []
    for t in wanted:
        parts = [{"partition_index": q, "committed_offset": committed.get((t["name"], q), -1),
                  "committed_leader_epoch": -1, "metadata": "", "error_code": 0}
                 for q in t["partition_indexes"]]
        topics.append({"name": t["name"], "partitions": parts})
    respond({"throttle_time_ms": 0, "topics": topics, "error_code": error_code(err)})


GROUP_HANDLERS = {10: find_coordinator, 11: join_group, 12: heartbeat, 13: leave_group, 14: sync_group,
                  8: offset_commit, 9: offset_fetch}
