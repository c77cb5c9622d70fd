"""The network between brokers and the client: requests are data, delivered later.

A message is a frozen dataclass (the request/response types below, named after the
Kafka APIs they model). :meth:`Network.send` decides its fate at send time from the
link's faults — cut (per direction), drop probability (drawn from the cluster's one
seeded ``rng``), extra delay — and schedules delivery after ``latency + delay`` ms.
At delivery the message is dropped if either end crashed since it was sent (each
node has an *incarnation* that a crash or restart bumps), so a dead broker's
in-flight traffic never arrives. Node ``-1`` is the client.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from engine.clock import Scheduler
from engine.events import EventLog, _fast_init
from engine.errors import InvalidRequestError

from .config import CLIENT
from .events import LinkChanged, MessageDropped

__all__ = [
    "Network", "Link", "FetchRequest", "FetchResponse", "SessionFetchRequest", "SessionFetchResponse",
    "OffsetsForLeaderEpochRequest",
    "OffsetsForLeaderEpochResponse", "ProduceRequest", "ProduceResponse", "BrokerHeartbeat",
    "AlterPartitionRequest", "LeaderAndIsr",
]


# ---- messages -----------------------------------------------------------------------

@dataclass(frozen=True)
class FetchRequest:
    """Follower → leader. ``fetch_offset`` is the follower's LEO; ``last_fetched_epoch``
    the epoch of its last batch (Fetch v12's LastFetchedEpoch), -1 when absent: an empty
    log, or a follower on the older protocol (``fetch.protocol`` offsets_for_leader_epoch,
    or ``truncation`` hw), whose leader then does not check it."""
    api = "Fetch"
    replica_id: int
    topic: str
    partition: int
    fetch_offset: int
    last_fetched_epoch: int
    leader_epoch: int
    max_wait_ms: int
    max_bytes: int
    session: int          # follower's fetch counter; stale responses are ignored


@dataclass(frozen=True)
class FetchResponse:
    """Leader → follower: whole batches from ``fetch_offset`` plus the leader's HW (captured before the fetch moved the remote LEO), log start offset and LEO; ``error`` is a Kafka error name."""
    api = "FetchResponse"
    leader_id: int
    topic: str
    partition: int
    fetch_offset: int
    records: bytes
    high_watermark: int
    log_start_offset: int
    leader_leo: int
    leader_epoch: int
    error: str | None
    session: int
    # Fetch v12 DivergingEpoch: the follower's last fetched epoch does not end where its
    # log does on the leader; epoch -1 = absent. Such a response carries no records.
    diverging_epoch: int = -1
    diverging_end_offset: int = -1


@dataclass(frozen=True)
class SessionFetchRequest:
    """Follower → leader: one Fetch for every partition this follower fetches from that leader
    (Kafka's one fetcher per source broker), in a KIP-227 session (engine/cluster/fetch_session.py).
    ``partitions`` holds only what the session does not know yet — every partition on a full
    fetch (``session_epoch`` 0), only added or changed ones on an incremental fetch — as
    per-partition :class:`FetchRequest` rows; ``forgotten`` names partitions to drop.
    ``request`` is the follower's counter for this source (a stale answer is ignored)."""
    api = "Fetch"
    replica_id: int
    session_id: int
    session_epoch: int
    partitions: tuple
    forgotten: tuple
    max_wait_ms: int
    max_bytes: int
    request: int


@dataclass(frozen=True)
class SessionFetchResponse:
    """Leader → follower: the session's answer. ``error``: a session error (FETCH_SESSION_ID_NOT_FOUND,
    INVALID_FETCH_SESSION_EPOCH) or None; ``session_id`` 0 when no session was (or could be)
    made. ``partitions``: :class:`FetchResponse` rows, on an incremental fetch only for the
    partitions with something to say (records, a moved HW or log start, an error)."""
    api = "FetchResponse"
    leader_id: int
    error: str | None
    session_id: int
    partitions: tuple
    request: int
    has_records: bool = False


@dataclass(frozen=True)
class OffsetsForLeaderEpochRequest:
    """Follower → leader (KIP-101): where does ``epoch`` end in your log?"""
    api = "OffsetsForLeaderEpoch"
    replica_id: int
    topic: str
    partition: int
    epoch: int
    current_leader_epoch: int
    session: int


@dataclass(frozen=True)
class OffsetsForLeaderEpochResponse:
    """Leader's ``endOffsetFor(requested_epoch)``: (``epoch``, ``end_offset``), (-1, -1) if unknown."""
    api = "OffsetsForLeaderEpochResponse"
    leader_id: int
    topic: str
    partition: int
    requested_epoch: int
    epoch: int
    end_offset: int
    error: str | None
    session: int


@dataclass(frozen=True)
class ProduceRequest:
    """Client → leader: one batch of ``values`` with ``acks`` (-1 = all) and the purgatory timeout."""
    api = "Produce"
    request_id: int
    topic: str
    partition: int
    values: tuple          # tuple[bytes | None, ...]
    key: bytes | None
    acks: int
    timeout_ms: int
    producer_id: int = -1         # idempotent producers: the same three on every retry
    producer_epoch: int = -1
    base_sequence: int = -1
    is_transactional: bool = False
    # record_digests(key, values), when the sender already made them (the engine's client does,
    # for its own events): the leader's events reuse them instead of hashing every record again.
    digests: Any = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class ProduceResponse:
    """Leader → client: base/last offset or an error name; ``appended`` = the records are in the log."""
    api = "ProduceResponse"
    request_id: int
    broker: int
    topic: str
    partition: int
    error: str | None
    message: str
    base_offset: int | None
    last_offset: int | None
    appended: bool


@dataclass(frozen=True)
class BrokerHeartbeat:
    """Broker → active controller (KRaft BrokerHeartbeat / registration). ``known`` lists
    ``(topic, partition, leader_epoch, partition_epoch)`` the broker has applied — standing
    for its metadata-log offset, so the controller can resend what it missed."""
    api = "BrokerHeartbeat"
    broker: int
    incarnation: int
    known: tuple = ()
    metadata_offset: int = -1    # KRaft: the broker's applied offset of __cluster_metadata


@dataclass(frozen=True)
class AlterPartitionRequest:
    """Leader → controller: proposed new ISR (KIP-497)."""
    api = "AlterPartition"
    broker: int
    topic: str
    partition: int
    leader_epoch: int
    partition_epoch: int
    new_isr: tuple
    reason: str
    lag_ms: tuple          # ((broker, lag_ms), ...) for removed followers


@dataclass(frozen=True)
class LeaderAndIsr:
    """Controller → replica: the partition's current state (in KRaft a replayed
    PartitionRecord/PartitionChangeRecord; in the ZooKeeper era the LeaderAndIsr request)."""
    api = "LeaderAndIsr"
    controller: int
    controller_epoch: int
    topic: str
    partition: int
    leader: int            # -1 = no leader
    leader_epoch: int
    partition_epoch: int
    isr: tuple
    replicas: tuple


def _fast_messages(*classes: type) -> None:
    """Give each frozen message class an ``__init__`` that writes its fields straight into the
    instance's ``__dict__`` (a frozen dataclass's own calls ``object.__setattr__`` per field,
    and every request makes several messages); equality, hashing, pickling stay the dataclass's."""
    for cls in classes:
        cls.__init__ = _fast_init(cls, dataclasses.fields(cls))


_fast_messages(FetchRequest, FetchResponse, OffsetsForLeaderEpochRequest, OffsetsForLeaderEpochResponse,
               ProduceRequest, ProduceResponse, BrokerHeartbeat, AlterPartitionRequest, LeaderAndIsr)


# ---- links --------------------------------------------------------------------------

@dataclass
class Link:
    """Faults of one direction ``src → dst``."""
    cut: bool = False
    delay_ms: int = 0
    drop_probability: float = 0.0


@dataclass
class Network:
    """Delivers messages between nodes through the scheduler.

    ``nodes`` maps a node id to the object whose ``receive(src, msg)`` handles its
    messages and whose ``incarnation`` / ``alive`` tell whether it is up.
    """

    scheduler: Scheduler
    rng: Any
    events: EventLog
    latency_ms: int = 1
    nodes: dict = field(default_factory=dict)
    links: dict = field(default_factory=dict)   # (src, dst) -> Link
    sent: int = 0
    delivered: int = 0
    dropped: int = 0
    # The newest delivery task's (due ms, scheduler counter, items): a message due at the same
    # instant, sent before anything else was scheduled, joins it (see send).
    _batch: Any = field(default=None, repr=False, compare=False)

    def register(self, node_id: int, node: Any) -> None:
        self.nodes[node_id] = node

    def link(self, src: int, dst: int) -> Link:
        key = (src, dst)
        if key not in self.links:
            self.links[key] = Link()
        return self.links[key]

    def check_node(self, node: Any) -> int:
        if isinstance(node, bool) or not isinstance(node, int) or (node not in self.nodes):
            known = ", ".join(str(n) for n in sorted(self.nodes))
            raise InvalidRequestError(f"unknown network node {node!r}; known nodes: {known} (-1 is the client)")
        return node

    # ---- faults ----------------------------------------------------------------
    def _pairs(self, a: int, b: int, both: bool) -> list[tuple[int, int]]:
        self.check_node(a)
        self.check_node(b)
        if a == b:
            raise InvalidRequestError(f"a link needs two different nodes, got {a} and {b}")
        return [(a, b), (b, a)] if both else [(a, b)]

    def cut(self, a: int, b: int, both: bool = True) -> None:
        for src, dst in self._pairs(a, b, both):
            self.link(src, dst).cut = True
        self.events.emit(LinkChanged(a, b, both, "cut", self.link(a, b).delay_ms, self.link(a, b).drop_probability))

    def heal(self, a: int, b: int, both: bool = True) -> None:
        for src, dst in self._pairs(a, b, both):
            self.links[(src, dst)] = Link()
        self.events.emit(LinkChanged(a, b, both, "healed", 0, 0.0))

    def heal_all(self) -> list[tuple[int, int]]:
        faulty = sorted(k for k, l in self.links.items() if l.cut or l.delay_ms or l.drop_probability)
        self.links = {}
        for a, b in faulty:
            self.events.emit(LinkChanged(a, b, False, "healed", 0, 0.0))
        return faulty

    def set_delay(self, a: int, b: int, delay_ms: int, both: bool = True) -> None:
        if isinstance(delay_ms, bool) or not isinstance(delay_ms, int) or delay_ms < 0:
            raise InvalidRequestError(f"link delay must be an integer >= 0 ms, got {delay_ms!r}")
        for src, dst in self._pairs(a, b, both):
            self.link(src, dst).delay_ms = delay_ms
        self.events.emit(LinkChanged(a, b, both, "delay", delay_ms, self.link(a, b).drop_probability))

    def set_drop_probability(self, a: int, b: int, p: float, both: bool = True) -> None:
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 <= p <= 1.0:
            raise InvalidRequestError(f"drop probability must be between 0 and 1, got {p!r}")
        for src, dst in self._pairs(a, b, both):
            self.link(src, dst).drop_probability = float(p)
        self.events.emit(LinkChanged(a, b, both, "drop", self.link(a, b).delay_ms, float(p)))

    def reachable(self, a: int, b: int) -> bool:
        """Both directions between ``a`` and ``b`` are up (not cut)."""
        if a == b:
            return True
        return not any(self.links.get(k, Link()).cut for k in ((a, b), (b, a)))

    def faults(self) -> list[dict]:
        return [{"src": s, "dst": d, "cut": l.cut, "delay_ms": l.delay_ms, "drop_probability": l.drop_probability}
                for (s, d), l in sorted(self.links.items()) if l.cut or l.delay_ms or l.drop_probability]

    # ---- delivery ---------------------------------------------------------------
    def send(self, src: int, dst: int, msg: Any) -> bool:
        """Queue ``msg``; returns False if it was dropped at once (cut link, random drop).

        Messages due at the same instant are one scheduler task when nothing else was scheduled
        between their sends (the task's items run in send order, so every message is delivered
        exactly where a task of its own would have run); each keeps its send and delivery time
        (:meth:`in_flight`). A fetch response with records over a link without delay is
        delivered as soon as the sending task returns (:meth:`Scheduler.run_soon`), before
        anything else due at that instant; it is never in flight between two tasks."""
        self.sent += 1
        links = self.links
        link = links.get((src, dst)) if links else None
        if link is not None:
            if link.cut:
                return self._drop(src, dst, msg, "link_cut", f"link {src}→{dst} is cut")
            if link.drop_probability > 0.0 and self.rng.random() < link.drop_probability:
                return self._drop(src, dst, msg, "random_drop", f"p={link.drop_probability}")
            delay = self.latency_ms + link.delay_ms
        else:
            delay = self.latency_ms
        nodes = self.nodes
        node = nodes.get(src)
        src_inc = getattr(node, "incarnation", 0) if node is not None else -1
        node = nodes.get(dst)
        dst_inc = getattr(node, "incarnation", 0) if node is not None else -1
        scheduler = self.scheduler
        now = scheduler.clock._now_ms
        item = (src, dst, src_inc, dst_inc, msg, now)
        if not delay and ((type(msg) is FetchResponse and msg.records) or
                          (type(msg) is SessionFetchResponse and msg.has_records)) and \
                scheduler.run_soon(self._deliver_soon, item):
            # A fetch that found data, over a link without delay: delivered as soon as the task
            # that read it returns, at the same instant, without a heap entry. The one order
            # this changes: it comes before other tasks already due at that instant.
            return True
        due = now + delay
        batch = self._batch
        if batch is not None and batch[0] == due and (batch[1] == scheduler._seq or (
                batch[1] == scheduler._pushed and scheduler._reserved_due > due and self.latency_ms > 0)):
            # Joins the task due at this instant: nothing was scheduled since it, or only timeouts
            # reserved for later instants (which cannot run between them); with a latency no
            # message is delivered run_soon, so the order of every delivery stays the same.
            batch[2].append(item)
        else:
            items = [item]
            task = scheduler._push(due, 0, self._deliver_all, (items,), "net", None)   # due >= now
            self._batch = (due, task.seq, items)
        return True

    def _deliver_all(self, items: list) -> None:
        batch = self._batch
        if batch is not None and batch[2] is items:
            self._batch = None          # running: a message sent from here gets a task of its own
        nodes, links = self.nodes, self.links
        for src, dst, src_inc, dst_inc, msg, _ in items:
            # The checks of _deliver, inline for a message that arrives; any other goes through it.
            sender = nodes.get(src)
            target = nodes.get(dst)
            if sender is not None and sender.alive and sender.incarnation == src_inc and target is not None \
                    and target.alive and (target.incarnation == dst_inc or dst == CLIENT) and \
                    (not links or (link := links.get((src, dst))) is None or not link.cut):
                self.delivered += 1
                target.receive(src, msg)
            else:
                self._deliver(src, dst, src_inc, dst_inc, msg)

    def _deliver_soon(self, item: tuple) -> None:
        src, dst, src_inc, dst_inc, msg, _ = item
        self._deliver(src, dst, src_inc, dst_inc, msg)

    def in_flight(self) -> list[dict]:
        """Every message on its way, in delivery order: ``src``, ``dst``, ``api``, ``sent_ms``,
        ``deliver_ms`` and the message itself (what a stage draws travelling)."""
        out = []
        for task in self.scheduler.pending():
            if task.fn == self._deliver_all:
                for src, dst, _, _, msg, sent in task.args[0]:
                    out.append({"src": src, "dst": dst, "api": msg.api, "sent_ms": sent, "deliver_ms": task.due_ms,
                                "message": msg})
        return out

    def route(self, src: int, dst: int, api: str, fn: Any, *args: Any) -> bool:
        """Carry a call that is not a :class:`Network` message (the group protocol's
        requests and answers) over link ``src → dst``: the link's cut, drop probability and
        delay apply as to :meth:`send`, then ``fn(*args)`` runs at delivery unless the link
        was cut in flight. Whether either end is still up is ``fn``'s to check (the group
        service knows its consumers). Returns False if dropped at once."""
        self.sent += 1
        link = self.links.get((src, dst))
        if link is not None and link.cut:
            return self._drop_api(src, dst, api, "link_cut", f"link {src}→{dst} is cut")
        if link is not None and link.drop_probability > 0.0 and self.rng.random() < link.drop_probability:
            return self._drop_api(src, dst, api, "random_drop", f"p={link.drop_probability}")
        delay = self.latency_ms + (link.delay_ms if link is not None else 0)
        self.scheduler.schedule(delay, self._route_deliver, src, dst, api, fn, args, name=f"net:{api}")
        return True

    def _route_deliver(self, src: int, dst: int, api: str, fn: Any, args: tuple) -> None:
        link = self.links.get((src, dst))
        if link is not None and link.cut:
            self._drop_api(src, dst, api, "link_cut", f"link {src}→{dst} was cut in flight")
            return
        self.delivered += 1
        fn(*args)

    def _drop_api(self, src: int, dst: int, api: str, reason: str, detail: str) -> bool:
        self.dropped += 1
        self.events.emit(MessageDropped(src, dst, api, reason, detail))
        return False

    def _incarnation(self, node_id: int) -> int:
        node = self.nodes.get(node_id)
        return getattr(node, "incarnation", 0) if node is not None else -1

    def _deliver(self, src: int, dst: int, src_inc: int, dst_inc: int, msg: Any) -> None:
        sender = self.nodes.get(src)
        target = self.nodes.get(dst)
        if sender is None or not sender.alive or sender.incarnation != src_inc:
            self._drop(src, dst, msg, "source_crashed", f"node {src} crashed after sending")
            return
        if target is None or not target.alive:
            self._drop(src, dst, msg, "destination_down", f"node {dst} is down")
            return
        if target.incarnation != dst_inc and dst != CLIENT:
            # A reply to a process that has since restarted: the connection is gone.
            self._drop(src, dst, msg, "destination_down", f"node {dst} restarted since the message was sent")
            return
        link = self.links.get((src, dst))
        if link is not None and link.cut:
            # Cut while in flight.
            self._drop(src, dst, msg, "link_cut", f"link {src}→{dst} was cut in flight")
            return
        self.delivered += 1
        target.receive(src, msg)

    def _drop(self, src: int, dst: int, msg: Any, reason: str, detail: str) -> bool:
        self.dropped += 1
        self.events.emit(MessageDropped(src, dst, msg.api, reason, detail))
        return False
