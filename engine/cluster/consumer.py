"""Consumers and consumer groups on the replicated cluster.

* :class:`GroupService` (``cluster.groups``, made by :func:`group_service`) routes group
  requests to the coordinator — the broker leading the group's ``__consumer_offsets``
  partition ``abs(hash(group)) % offsets.topic.num.partitions`` — with the network's latency
  and faults: a request to a coordinator that is down, cut off or no longer the leader of
  that partition fails (COORDINATOR_NOT_AVAILABLE / NOT_COORDINATOR) and the consumer finds
  the coordinator again after ``retry.backoff.ms``. Each broker's coordinator state
  (:class:`engine.group.coordinator.GroupCoordinator`) lives as long as the broker process
  and its leadership of the partition; a new coordinator reads the partition's log to
  load the committed offsets and each group's latest GroupMetadata record (so offsets,
  generation and assignment survive a failover without a rebalance).
* ``__consumer_offsets`` is a real compacted topic (created on first use, replication
  factor min(3, brokers)); a commit appends one record per partition with Kafka's
  OffsetCommit key (v1) and value (v3) through the cluster's produce path with acks=all,
  and the commit counts once acknowledged. Brokers run the log cleaner on compacted
  topics every ``log.cleaner.backoff.ms`` (:class:`ClusterCleaner`).
* :class:`Consumer` is a KafkaConsumer in a group: JoinGroup / SyncGroup / Heartbeat /
  LeaveGroup with generation ids, the leader computing the assignment with the chosen
  assignor, eager or cooperative rebalancing, ``session.timeout.ms``,
  ``heartbeat.interval.ms``, ``max.poll.interval.ms``; ``poll`` fetches from each owned
  partition's leader up to the high watermark, starting at the committed offset (OffsetFetch,
  sent through the network when the assignment arrives) or by ``auto.offset.reset``;
  auto-commit commits the positions at the start of a poll once ``auto.commit.interval.ms``
  has passed (at-least-once); ``commit`` is the manual commit.
* Lag per partition = high watermark − committed offset.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..errors import InvalidRequestError, OffsetOutOfRangeError, KafkaError
from ..group.assignors import EAGER_STRATEGIES, STRATEGIES, Subscription, assign
from ..group.coordinator import GROUP_INITIAL_REBALANCE_DELAY_MS, GroupCoordinator, store_error
from ..group.events import (ConsumerFetched, ConsumerStopped, CoordinatorFound, GroupRequestFailed,
                            HeartbeatAnswered, JoinGroupSent, OffsetCommitFailed, OffsetCommitSent, OffsetCommitted,
                            OffsetsLoaded, PartitionsAdded, PartitionsAssigned, PartitionsRevoked, PositionReset,
                            SyncGroupSent)
from ..group.java import partition_for_group
from ..group.metadata import (GroupMetadataValue, MemberMetadata, decode_assignment, decode_subscription,
                              encode_assignment, encode_group_key, encode_group_value, encode_subscription)
from ..group.offset_cache import OffsetCache, load_offsets
from ..group.offsets import OFFSETS_TOPIC, OffsetKey, OffsetValue, encode_key, encode_value
from .config import CLIENT
from .controller import PartitionMeta
from .partition import record_digest
from .produce_wait import ProduceWaiter

__all__ = ["GroupService", "Consumer", "ConsumerConfig", "ClusterCleaner", "group_service", "add_partitions",
           "ownership_findings"]

RETRY_BACKOFF_MS = 100
# The group protocol's names on the wire (MessageDropped shows these).
API_NAMES = {"join": "JoinGroup", "sync": "SyncGroup", "heartbeat": "Heartbeat", "leave": "LeaveGroup",
             "commit": "OffsetCommit", "offset_fetch": "OffsetFetch"}
JOIN_TIMEOUT_EXTRA_MS = 5000     # JoinGroup waits max(request.timeout.ms, rebalance timeout + 5 s), as the Java client
LOG_CLEANER_BACKOFF_MS = 15000


@dataclass(frozen=True)
class ConsumerConfig:
    """Java consumer settings (defaults as Kafka's)."""

    session_timeout_ms: int = 45000
    heartbeat_interval_ms: int = 3000
    max_poll_interval_ms: int = 300000
    auto_offset_reset: str = "latest"
    enable_auto_commit: bool = True
    auto_commit_interval_ms: int = 5000
    strategies: tuple = ("range", "cooperative-sticky")
    request_timeout_ms: int = 30000

    def __post_init__(self) -> None:
        if self.auto_offset_reset not in ("earliest", "latest", "none"):
            raise InvalidRequestError(f"auto.offset.reset must be earliest, latest or none, "
                                      f"got {self.auto_offset_reset!r}")
        if not self.strategies:
            raise InvalidRequestError("partition.assignment.strategy needs at least one assignor")
        for s in self.strategies:
            if s not in STRATEGIES:
                raise InvalidRequestError(f"unknown assignment strategy {s!r}; known: {', '.join(STRATEGIES)}")
        if any(s not in EAGER_STRATEGIES for s in self.strategies) and \
                any(s in EAGER_STRATEGIES for s in self.strategies) and self.strategies[0] not in EAGER_STRATEGIES:
            pass  # Kafka allows mixing while upgrading; the chosen protocol decides eager or cooperative
        for name in ("session_timeout_ms", "heartbeat_interval_ms", "max_poll_interval_ms",
                     "auto_commit_interval_ms", "request_timeout_ms"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise InvalidRequestError(f"{name} must be a positive integer, got {v!r}")
        if self.heartbeat_interval_ms >= self.session_timeout_ms:
            raise InvalidRequestError(f"heartbeat.interval.ms ({self.heartbeat_interval_ms}) must be lower than "
                                      f"session.timeout.ms ({self.session_timeout_ms})")


def _tp(tp) -> tuple[str, int]:
    return (tp[0], int(tp[1]))


def _tps(items) -> list:
    return [[t, p] for t, p in items]


class ClusterCleaner:
    """Each live broker's log cleaner over its compacted logs, every ``log.cleaner.backoff.ms``."""

    def __init__(self, cluster: Any, backoff_ms: int = LOG_CLEANER_BACKOFF_MS) -> None:
        self.cluster = cluster
        self.task = cluster.scheduler.schedule_periodic(backoff_ms, self.run, name="log-cleaner")

    def run(self) -> list:
        from ..log.cleaner import LogCleaner
        out = []
        now = self.cluster.now_ms()
        for bid in sorted(self.cluster.brokers):
            b = self.cluster.brokers[bid]
            if not b.alive:
                continue
            logs = [b.partitions[k].log for k in sorted(b.partitions)]
            result = LogCleaner(self.cluster.disk, b.dir).run_once(logs, now)
            if result is not None:
                out.append({"broker": bid, **result.to_dict()})
        return out


class _CoordinatorGuard:
    """Whether broker ``broker`` (this incarnation) still coordinates a group: alive and the
    leader of the group's offsets partition. Picklable, unlike a closure."""

    def __init__(self, service: "GroupService", broker: int, incarnation: int) -> None:
        self.service, self.broker, self.incarnation = service, broker, incarnation

    def __call__(self, group: str) -> bool:
        b = self.service.cluster.brokers[self.broker]
        if not b.alive or b.incarnation != self.incarnation:
            return False
        p = self.service.partition_for(group)
        part = self.service._leader_partition(self.broker, p)
        loaded = self.service.loaded.get((self.broker, p))
        return part is not None and loaded is not None and loaded[0] == part.leader_epoch


class _GroupStore:
    """``store`` for broker ``broker``'s coordinator: append the group's GroupMetadata record
    to its offsets partition (picklable, unlike a closure)."""

    def __init__(self, service: "GroupService", broker: int) -> None:
        self.service, self.broker = service, broker

    def __call__(self, group: Any) -> None:
        self.service._store_group(self.broker, group)


class _Replier:
    """``reply`` for broker ``broker``'s coordinator: answers travel broker → client through
    the network (picklable, unlike a closure)."""

    def __init__(self, service: "GroupService", broker: int) -> None:
        self.service, self.broker = service, broker

    def __call__(self, client: str, kind: str, payload: dict) -> None:
        self.service._reply(client, kind, payload, broker=self.broker)


class GroupService:
    """See the module docstring. One per cluster (``cluster.groups``)."""

    def __init__(self, cluster: Any, offsets_partitions: int = 50,
                 initial_rebalance_delay_ms: int = GROUP_INITIAL_REBALANCE_DELAY_MS) -> None:
        self.cluster = cluster
        self.offsets_partitions = offsets_partitions
        self.initial_rebalance_delay_ms = initial_rebalance_delay_ms
        self.consumers: dict[str, Consumer] = {}
        self.coordinators: dict[int, tuple[int, GroupCoordinator]] = {}   # broker -> (incarnation, coordinator)
        self.loaded: dict[tuple[int, int], tuple[int, OffsetCache]] = {}  # (broker, p) -> (leader epoch, offsets)
        # the coordinators' appends: OffsetCommit records (lane 0), then GroupMetadata records (lane 1)
        self.appends = ProduceWaiter(cluster, "offset-commit-completion", lanes=2)
        # (consumer, "join"|"sync") -> id of the request the coordinator holds: its answer carries it
        self.awaiting: dict[tuple[str, str], int] = {}
        self.cleaner = ClusterCleaner(cluster)

    # ---- plumbing --------------------------------------------------------------------------
    @property
    def scheduler(self):
        return self.cluster.scheduler

    def emit(self, ev: Any) -> None:
        self.cluster.events.emit(ev)

    def ensure_offsets_topic(self) -> None:
        if OFFSETS_TOPIC not in self.cluster.controller.topics:
            rf = min(3, len(self.cluster.brokers))
            self.cluster.create_topic(OFFSETS_TOPIC, self.offsets_partitions, rf,
                                      {"cleanup.policy": "compact", "min.insync.replicas": 1})

    def partition_for(self, group: str) -> int:
        return partition_for_group(group, self.offsets_partitions)

    def _leader_partition(self, broker_id: int, p: int):
        b = self.cluster.brokers.get(broker_id)
        if b is None or not b.alive:
            return None
        part = b.partitions.get((OFFSETS_TOPIC, p))
        if part is None or part.role != "leader":
            return None
        return part

    def find_coordinator(self, group: str) -> tuple[int, int] | None:
        """(coordinator broker, offsets partition) as the metadata says, or None."""
        self.ensure_offsets_topic()
        p = self.partition_for(group)
        leader = self.cluster.controller.partition(OFFSETS_TOPIC, p).leader
        return None if leader < 0 else (leader, p)

    def coordinator(self, broker_id: int, p: int) -> GroupCoordinator | None:
        """The broker's coordinator for partition ``p``, if it is alive and leads it now;
        (re)loads the partition's committed offsets on a new leadership."""
        part = self._leader_partition(broker_id, p)
        if part is None:
            return None
        b = self.cluster.brokers[broker_id]
        inc, coord = self.coordinators.get(broker_id, (None, None))
        if coord is None or inc != b.incarnation:
            if coord is not None:
                coord.shutdown()
            coord = GroupCoordinator(broker_id, self.scheduler, self.emit, _Replier(self, broker_id),
                                     self.initial_rebalance_delay_ms,
                                     _CoordinatorGuard(self, broker_id, b.incarnation), _GroupStore(self, broker_id))
            self.coordinators[broker_id] = (b.incarnation, coord)
            for key in [k for k in self.loaded if k[0] == broker_id]:
                del self.loaded[key]
        epoch = part.leader_epoch
        key = (broker_id, p)
        if key not in self.loaded or self.loaded[key][0] != epoch:
            for gid in [g for g in coord.groups if self.partition_for(g) == p]:
                coord.unload(gid)  # leadership came back: the groups' membership is gone
            offsets, groups = self._load_partition(broker_id, p, part)
            self.loaded[key] = (epoch, offsets)
            for gid in sorted(groups):
                v = groups[gid]
                members = []
                for m in v.members:
                    topics, owned, gen = decode_subscription(m.subscription)
                    members.append((m.member_id, m.client_id, m.session_timeout_ms, m.rebalance_timeout_ms,
                                    Subscription(tuple(topics), tuple(owned), gen), decode_assignment(m.assignment)))
                coord.load_group(gid, v.generation, v.protocol, v.leader, members)
            for other, (_, oc) in self.coordinators.items():  # the previous coordinator resigns
                if other != broker_id:
                    for gid in [g for g in oc.groups if self.partition_for(g) == p]:
                        oc.unload(gid)
        return coord

    def _load_partition(self, broker_id: int, p: int, part: Any) -> tuple[OffsetCache, dict]:
        """Replay the partition's log (:func:`engine.group.offset_cache.load_offsets`): the
        committed offsets, those pending in transactions, and each group's latest
        GroupMetadata record."""
        result = load_offsets(part.log.batches(part.log.log_start_offset, part.log.log_end_offset))
        # transactional offsets wait for their COMMIT marker
        self.cluster.txn_offset_service().loaded(broker_id, p, part.leader_epoch, result)
        self.emit(OffsetsLoaded(broker_id, p, result.records, sorted(result.named | set(result.groups))))
        return result.offsets, result.groups

    def _store_group(self, broker_id: int, g: Any) -> None:
        p = self.partition_for(g.group_id)
        members = tuple(MemberMetadata(m.member_id, None, m.client, "/client", m.rebalance_timeout_ms,
                                       m.session_timeout_ms, self._subscription_bytes(m, g.protocol),
                                       encode_assignment(m.assignment)) for m in g.members.values())
        value = encode_group_value(GroupMetadataValue("consumer", g.generation, g.protocol, g.leader,
                                                      self.cluster.now_ms(), members))
        rid = self.cluster.produce(OFFSETS_TOPIC, p, [value], key=encode_group_key(g.group_id), acks=-1,
                                   broker=broker_id, local=True)
        self.appends.watch(rid, self._group_appended, broker_id, g.group_id, g.generation, lane=1)

    @staticmethod
    def _subscription_bytes(m: Any, protocol: str | None) -> bytes:
        sub = dict(m.protocols).get(protocol)
        if sub is None:
            return encode_subscription([])
        return encode_subscription(list(sub.topics), list(sub.owned), sub.generation)

    def committed(self, group: str) -> dict | None:
        """The group's committed offsets as its coordinator knows them, or None when no
        coordinator is available: a view (lag, the group's state). A consumer asks with an
        OffsetFetch through the network (:meth:`Consumer.poll`)."""
        found = self.find_coordinator(group)
        if found is None or self.coordinator(*found) is None:
            return None
        return self.loaded[found][1].of(group)

    # ---- request / response through the network model ------------------------------------
    def request(self, consumer: "Consumer", api: str, payload: dict, rid: int = 0) -> None:
        """Send ``api`` (request id ``rid``) from ``consumer`` to its group's coordinator,
        through the network (the client → coordinator link's cut, drops and delay apply, and
        so do the answer's). A coordinator that cannot be found or connected to fails the
        request at once: the consumer's ``on_<api>`` hears the error after ``retry.backoff.ms``.
        A request or answer lost on the way is the consumer's request timeout to notice."""
        found = self.find_coordinator(consumer.group)
        if found is None:
            self._fail(consumer, api, "COORDINATOR_NOT_AVAILABLE", "the offsets partition has no leader", rid)
            return
        broker_id, p = found
        if consumer.coordinator != broker_id:
            consumer.coordinator = broker_id
            self.emit(CoordinatorFound(consumer.group, consumer.name, p, broker_id))
        b = self.cluster.brokers[broker_id]
        if not b.alive or not self.cluster.network.reachable(CLIENT, broker_id):
            self._fail(consumer, api, "COORDINATOR_NOT_AVAILABLE", f"broker {broker_id} is not reachable", rid)
            return
        part = self._leader_partition(broker_id, p)
        consumer.connection = (broker_id, b.incarnation, p, part.leader_epoch if part is not None else -1)
        self.cluster.network.route(CLIENT, broker_id, API_NAMES[api], self._handle, broker_id, b.incarnation, p,
                                   consumer.name, consumer.incarnation, api, payload, rid)

    def connection_alive(self, connection: tuple | None) -> bool:
        """Whether the coordinator a request went to is still up (same process) and still
        leads the offsets partition (same leader epoch): otherwise a client waiting for a
        JoinGroup/SyncGroup answer sees its connection fail (or NOT_COORDINATOR) and retries."""
        if connection is None:
            return True
        broker_id, incarnation, p, epoch = connection
        b = self.cluster.brokers[broker_id]
        if not b.alive or b.incarnation != incarnation:
            return False
        part = self._leader_partition(broker_id, p)
        return part is not None and part.leader_epoch == epoch

    def _fail(self, consumer: "Consumer", api: str, error: str, detail: str, rid: int) -> None:
        self.emit(GroupRequestFailed(consumer.group, consumer.name, api, error, detail))
        consumer.coordinator = None
        self.scheduler.schedule(RETRY_BACKOFF_MS, self._deliver, consumer.name, consumer.incarnation, api,
                                {"error": error}, rid, name=f"group:{api}-failed")

    def _handle(self, broker_id: int, incarnation: int, p: int, name: str, cinc: int, api: str, payload: dict,
                rid: int) -> None:
        consumer = self.consumers.get(name)
        if consumer is None or not consumer.alive or consumer.incarnation != cinc:
            return
        b = self.cluster.brokers[broker_id]
        if not b.alive or b.incarnation != incarnation:
            self._fail(consumer, api, "COORDINATOR_NOT_AVAILABLE", f"broker {broker_id} went down", rid)
            return
        coord = self.coordinator(broker_id, p)
        if coord is None:
            self._fail(consumer, api, "NOT_COORDINATOR", f"broker {broker_id} no longer leads "
                                                         f"{OFFSETS_TOPIC}-{p}", rid)
            return
        group = consumer.group
        if api in ("join", "sync"):
            self.awaiting[(name, api)] = rid     # the coordinator may hold it until the rebalance completes
        if api == "join":
            coord.join_group(group, payload["member_id"], name, payload["session_timeout_ms"],
                             payload["rebalance_timeout_ms"], payload["protocols"])
        elif api == "sync":
            err = coord.sync_group(group, payload["member_id"], payload["generation"], payload["assignment"])
            if err is not None:
                self._reply(name, "sync", {"error": err}, broker=broker_id)
        elif api == "heartbeat":
            err = coord.heartbeat(group, payload["member_id"], payload["generation"])
            self.emit(HeartbeatAnswered(group, payload["member_id"], payload["generation"], err))
            self._reply(name, "heartbeat", {"error": err}, broker=broker_id, rid=rid)
            if payload.get("rejoin_reason") and err == "NONE":
                coord.request_rejoin(group, payload["member_id"], payload["rejoin_reason"])
        elif api == "leave":
            coord.leave_group(group, payload["member_id"])
        elif api == "commit":
            err = coord.check_commit(group, payload["member_id"], payload["generation"])
            if err != "NONE":
                self.emit(OffsetCommitFailed(group, payload["member_id"], err, [[t, q] for t, q, _ in payload["offsets"]]))
                self._reply(name, "commit", {"error": err, "offsets": payload["offsets"]}, broker=broker_id, rid=rid)
                return
            self._append_commits(broker_id, p, name, group, payload["offsets"], rid)
        elif api == "offset_fetch":
            got = self.cluster.txn_offset_service().fetch_answer(broker_id, p, group, payload["require_stable"])
            asked = {tuple(tp) for tp in payload["partitions"]}
            # "partitions" and "generation" stand for what the client keeps beside the request id
            self._reply(name, "offset_fetch", {"error": got["error"], "partitions": payload["partitions"],
                                               "generation": payload["generation"],
                                               "committed": [[t, q, o] for (t, q), o in sorted(got["offsets"].items())
                                                             if (t, q) in asked]},
                        broker=broker_id, rid=rid)

    def _reply(self, name: str, kind: str, payload: dict, *, broker: int, rid: int | None = None) -> None:
        """Answer request ``rid`` of consumer ``name`` (a held JoinGroup/SyncGroup: the one
        the coordinator holds) over the broker → client link."""
        consumer = self.consumers.get(name)
        if consumer is None:
            return
        if rid is None:
            rid = self.awaiting.pop((name, kind), 0)
        self.cluster.network.route(broker, CLIENT, API_NAMES[kind] + "Response", self._deliver, name,
                                   consumer.incarnation, kind, payload, rid)

    def _deliver(self, name: str, cinc: int, kind: str, payload: dict, rid: int) -> None:
        consumer = self.consumers.get(name)
        if consumer is None or not consumer.alive or consumer.incarnation != cinc:
            return
        if consumer.answered(rid, payload):
            getattr(consumer, f"on_{kind}")(payload)

    # ---- commits -----------------------------------------------------------------------------
    def _append_commits(self, broker_id: int, p: int, name: str, group: str, offsets: list, rid: int) -> None:
        now = self.cluster.now_ms()
        sent = []
        for (topic, partition, offset) in offsets:
            key = encode_key(OffsetKey(group, topic, partition))
            value = encode_value(OffsetValue(offset, -1, "", now))
            prid = self.cluster.produce(OFFSETS_TOPIC, p, [value], key=key, acks=-1, broker=broker_id, local=True)
            sent.append((prid, topic, partition, offset))
        for prid, topic, partition, offset in sent:
            self.appends.watch(prid, self._commit_appended, broker_id, p, name, group, topic, partition, offset, rid)

    def _commit_appended(self, res: Any, broker_id: int, p: int, name: str, group: str, topic: str, partition: int,
                         offset: int, crid: int) -> None:
        if res.status == "ok":
            loaded = self.loaded.get((broker_id, p))
            if loaded is not None:   # Kafka's onOffsetCommitAppend: unless a later record is committed
                loaded[1].put(group, (topic, partition), offset, res.base_offset)
            self.emit(OffsetCommitted(group, broker_id, topic, partition, offset, p, res.base_offset))
            self._reply(name, "commit", {"error": "NONE", "offsets": [[topic, partition, offset]]},
                        broker=broker_id, rid=crid)
        else:
            self.emit(OffsetCommitFailed(group, name, res.error or "UNKNOWN", [[topic, partition]]))
            self._reply(name, "commit", {"error": res.error, "offsets": [[topic, partition, offset]]},
                        broker=broker_id, rid=crid)

    def _group_appended(self, res: Any, broker_id: int, group: str, generation: int) -> None:
        inc, coord = self.coordinators.get(broker_id, (None, None))
        if coord is not None:
            coord.group_stored(group, generation, None if res.status == "ok" else store_error(res.error or "UNKNOWN"))

    # ---- reads --------------------------------------------------------------------------------
    def partition_counts(self, topics) -> dict[str, int]:
        out = {}
        for t in topics:
            meta = self.cluster.controller.topics.get(t)
            if meta is not None:
                out[t] = len(meta.partitions)
        return out

    def high_watermark(self, topic: str, partition: int) -> int | None:
        pm = self.cluster.controller.partition(topic, partition)
        part = self._leader_partition(pm.leader, partition) if pm.leader >= 0 else None
        if part is None or part.topic != topic:
            b = self.cluster.brokers.get(pm.leader)
            part = b.partitions.get((topic, partition)) if b is not None and b.alive else None
        return None if part is None else part.hw

    def lag(self, group: str) -> dict:
        committed = self.committed(group) or {}
        out = {}
        for (t, p), off in sorted(committed.items()):
            hw = self.high_watermark(t, p)
            out[f"{t}-{p}"] = {"committed": off, "high_watermark": hw, "lag": None if hw is None else hw - off}
        return out

    def state(self) -> dict:
        groups = {}
        for name in sorted({c.group for c in self.consumers.values()}):
            found = self.find_coordinator(name)
            entry: dict[str, Any] = {"offsets_partition": self.partition_for(name),
                                     "coordinator": found[0] if found else None}
            coord = self.coordinator(*found) if found else None
            g = coord.groups.get(name) if coord is not None else None
            entry.update(g.to_dict() if g is not None else {"state": "Unknown" if coord is None else "Empty"})
            entry["lag"] = self.lag(name)
            groups[name] = entry
        return {"groups": groups, "consumers": {n: c.state() for n, c in sorted(self.consumers.items())}}


def group_service(cluster: Any, **kwargs: Any) -> GroupService:
    """The cluster's group service (see :meth:`Cluster.group_service`)."""
    return cluster.group_service(**kwargs)


class Consumer:
    """A group member (see the module docstring)."""

    def __init__(self, service: GroupService, name: str, group: str, topics: list, config: ConsumerConfig) -> None:
        self.service = service
        self.name = name
        self.group = group
        self.topics = list(dict.fromkeys(topics))
        self.config = config
        self.alive = True
        self.incarnation = 1
        self.member_id = ""
        self.generation = -1
        self.protocol: str | None = None
        self.leader = False
        self.status = "unjoined"
        self.coordinator: int | None = None
        self.owned: list = []
        self.owned_generation = -1
        self.previous: list = []          # last assignment (sticky's user data)
        self.positions: dict = {}
        self.assigned_counts: dict = {}
        self.last_poll_ms = service.cluster.now_ms()
        self.last_auto_commit_ms = self.last_poll_ms
        self.heartbeat_delay_ms = 0
        self.heartbeat_task = None
        self.connection: tuple | None = None   # (coordinator, its incarnation, offsets partition, leader epoch)
        self.rejoin_reason: str | None = None
        self.delivered: list = []          # (topic, partition, offset) returned by poll, in order
        self.commit_log: list = []
        self.next_request_id = 0
        self.inflight: dict[int, list] = {}   # request id -> [api, timeout task, answers still due, offsets]
        self.fetched: dict = {}               # OffsetFetch answers not used yet: (topic, partition) -> offset | None

    # ---- helpers ---------------------------------------------------------------------------
    @property
    def now(self) -> int:
        return self.service.cluster.now_ms()

    @property
    def cooperative(self) -> bool:
        return self.protocol == "cooperative-sticky" if self.protocol else \
            self.config.strategies[0] == "cooperative-sticky"

    def emit(self, ev: Any) -> None:
        self.service.emit(ev)

    def state(self) -> dict:
        return {"group": self.group, "alive": self.alive, "status": self.status, "member_id": self.member_id,
                "generation": self.generation, "protocol": self.protocol, "leader": self.leader,
                "coordinator": self.coordinator, "topics": list(self.topics), "owned": _tps(self.owned),
                "positions": {f"{t}-{p}": o for (t, p), o in sorted(self.positions.items())},
                "heartbeat_delay_ms": self.heartbeat_delay_ms}

    # ---- requests, with the client's request timeout -----------------------------------------
    def _send(self, api: str, payload: dict) -> None:
        """Send a group request with a fresh id and arm its timeout (``request.timeout.ms``;
        JoinGroup: max(that, rebalance timeout + 5 s)). A new JoinGroup/SyncGroup abandons
        the one still waiting, so its late answer is ignored. LeaveGroup is not waited for."""
        self.next_request_id += 1
        rid = self.next_request_id
        if api != "leave":
            if api in ("join", "sync"):
                for old in [r for r, e in self.inflight.items() if e[0] in ("join", "sync")]:
                    self.service.scheduler.cancel(self.inflight.pop(old)[1])
            timeout = self.config.request_timeout_ms
            if api == "join":
                timeout = max(timeout, self.config.max_poll_interval_ms + JOIN_TIMEOUT_EXTRA_MS)
            task = self.service.scheduler.schedule(timeout, self._timed_out, self.incarnation, rid, timeout,
                                                   name=f"request-timeout {self.name}")
            offsets = payload.get("offsets") or []
            self.inflight[rid] = [api, task, len(offsets) if api == "commit" else 1, offsets]
        self.service.request(self, api, payload, rid)

    def answered(self, rid: int, resp: dict) -> bool:
        """Whether ``resp`` answers a request still waited for (False: a late answer to a
        request that timed out or was superseded -- dropped, as the client does)."""
        entry = self.inflight.get(rid)
        if entry is None:
            return False
        # an OffsetCommit is answered partition by partition, as each record is acknowledged
        entry[2] -= len(resp["offsets"]) if entry[0] == "commit" and "offsets" in resp else entry[2]
        if entry[2] <= 0:
            self.service.scheduler.cancel(self.inflight.pop(rid)[1])
        return True

    def _timed_out(self, incarnation: int, rid: int, timeout: int) -> None:
        if not self.alive or incarnation != self.incarnation or rid not in self.inflight:
            return
        api, _, _, offsets = self.inflight.pop(rid)
        to = "the coordinator" if self.coordinator is None else f"broker {self.coordinator}"
        self.emit(GroupRequestFailed(self.group, self.name, api, "REQUEST_TIMED_OUT",
                                     f"no answer from {to} within {timeout} ms"))
        self.coordinator = self.connection = None      # markCoordinatorUnknown: find it again
        getattr(self, f"on_{api}")({"error": "REQUEST_TIMED_OUT", "offsets": offsets})

    def _drop_requests(self, apis: tuple = ("join", "sync", "heartbeat", "commit", "offset_fetch")) -> None:
        for rid in [r for r, e in sorted(self.inflight.items()) if e[0] in apis]:
            self.service.scheduler.cancel(self.inflight.pop(rid)[1])

    def _revoke(self, partitions: list, reason_generation: int) -> None:
        if partitions:
            self.emit(PartitionsRevoked(self.group, self.name, self.member_id, reason_generation, _tps(partitions)))
            for tp in partitions:
                self.positions.pop(tp, None)
                self.fetched.pop(tp, None)
            self.owned = [tp for tp in self.owned if tp not in partitions]

    def _arm_heartbeat(self) -> None:
        sched = self.service.scheduler
        sched.cancel(self.heartbeat_task)
        self.heartbeat_task = sched.schedule_periodic(self.config.heartbeat_interval_ms, self._heartbeat_tick,
                                                      name=f"consumer-heartbeat {self.name}")

    # ---- membership ----------------------------------------------------------------------
    def join(self) -> None:
        if not self.alive:
            return
        if self.config.enable_auto_commit and self.member_id and self.generation >= 0 and self.status == "stable":
            # onJoinPrepare (seed 003): with auto-commit the consumer commits its positions
            # before it rejoins, so the next owner starts where it stopped
            self.commit(auto=True)
        self.status = "joining"
        if not self.cooperative:
            self._revoke(list(self.owned), self.generation)  # eager: give everything up first
        sub_owned = tuple(self.owned) if self.cooperative else tuple(self.previous)
        protocols = [(s, Subscription(tuple(self.topics), sub_owned, self.generation)) for s in self.config.strategies]
        self.emit(JoinGroupSent(self.group, self.name, self.member_id, self.coordinator if self.coordinator is not None
                                else -1, list(self.config.strategies), _tps(self.owned)))
        self._send("join", {"member_id": self.member_id,
                                            "session_timeout_ms": self.config.session_timeout_ms,
                                            "rebalance_timeout_ms": self.config.max_poll_interval_ms,
                                            "protocols": protocols})
        if self.heartbeat_task is None:
            self._arm_heartbeat()

    def on_join(self, resp: dict) -> None:
        err = resp["error"]
        if err in ("COORDINATOR_NOT_AVAILABLE", "NOT_COORDINATOR", "REQUEST_TIMED_OUT"):
            self.join()
            return
        if err == "MEMBER_ID_REQUIRED":
            self.member_id = resp["member_id"]
            self.join()
            return
        if err == "UNKNOWN_MEMBER_ID":
            self.member_id, self.generation = "", -1
            self.join()
            return
        if err != "NONE":
            self.status = f"error:{err}"
            return
        self.member_id = resp["member_id"]
        self.generation = resp["generation"]
        self.protocol = resp["protocol"]
        self.leader = resp["leader"] == self.member_id
        self.status = "syncing"
        assignment = None
        if self.leader:
            subs = {mid: sub for mid, sub in resp["members"]}
            topics = sorted({t for s in subs.values() for t in s.topics})
            counts = self.service.partition_counts(topics)
            self.assigned_counts = counts
            result = assign(self.protocol, subs, counts)
            assignment = {m: [list(tp) for tp in v] for m, v in result.items()}
        self.emit(SyncGroupSent(self.group, self.member_id, self.generation, self.leader, assignment or {}))
        self._send("sync", {"member_id": self.member_id, "generation": self.generation,
                                            "assignment": assignment})

    def on_sync(self, resp: dict) -> None:
        err = resp["error"]
        if err in ("REBALANCE_IN_PROGRESS", "COORDINATOR_NOT_AVAILABLE", "NOT_COORDINATOR", "REQUEST_TIMED_OUT"):
            self.join()
            return
        if err in ("UNKNOWN_MEMBER_ID", "ILLEGAL_GENERATION"):
            self._revoke(list(self.owned), self.generation)
            self.member_id, self.generation = "", -1
            self.join()
            return
        if err != "NONE":
            # "Unexpected error from SyncGroup": the Java consumer's poll throws it; the next
            # poll joins again.
            self.status = f"error:{err}"
            self.emit(GroupRequestFailed(self.group, self.name, "sync", err, "not retried: the next poll joins again"))
            return
        new = [_tp(tp) for tp in resp["assignment"]]
        revoked = [tp for tp in self.owned if tp not in new]
        added = [tp for tp in new if tp not in self.owned]
        self._revoke(revoked, self.generation)
        self.owned = list(new)
        self.owned_generation = self.generation
        self.previous = list(new)
        self.status = "stable"
        self.emit(PartitionsAssigned(self.group, self.name, self.member_id, self.generation, _tps(added),
                                     _tps(self.owned)))
        self._fetch_committed()
        if self.cooperative and revoked:
            self.join()  # KIP-429: give the revoked partitions back, then a second rebalance

    def _heartbeat_tick(self) -> None:
        if not self.alive:
            return
        if self.status in ("joining", "syncing") and not self.service.connection_alive(self.connection):
            # the coordinator holding our JoinGroup/SyncGroup died or resigned: find it again
            self.emit(GroupRequestFailed(self.group, self.name, "join" if self.status == "joining" else "sync",
                                         "NOT_COORDINATOR", "the coordinator went away while the request waited"))
            self.coordinator = self.connection = None
            self.join()
            return
        if not self.member_id or self.status not in ("stable", "syncing"):
            return
        if self.now - self.last_poll_ms > self.config.max_poll_interval_ms:
            self._leave("poll_timeout")
            return
        if self.leader and self.status == "stable":
            counts = self.service.partition_counts(self.assigned_counts)
            if counts != self.assigned_counts:
                self.rejoin_reason = "metadata_changed"
        payload = {"member_id": self.member_id, "generation": self.generation, "rejoin_reason": self.rejoin_reason}
        self.rejoin_reason = None
        if self.heartbeat_delay_ms:
            self.service.scheduler.schedule(self.heartbeat_delay_ms, self._send_heartbeat, self.incarnation, payload,
                                            name=f"slow-heartbeat {self.name}")
        else:
            self._send("heartbeat", payload)

    def _send_heartbeat(self, incarnation: int, payload: dict) -> None:
        if self.alive and self.incarnation == incarnation and self.member_id == payload["member_id"]:
            self._send("heartbeat", payload)

    def on_heartbeat(self, resp: dict) -> None:
        err = resp["error"]
        if self.status not in ("stable", "syncing"):
            return
        if err == "REBALANCE_IN_PROGRESS":
            self.join()
        elif err in ("UNKNOWN_MEMBER_ID", "ILLEGAL_GENERATION"):
            self._revoke(list(self.owned), self.generation)
            self.member_id, self.generation = "", -1
            self.join()

    def _leave(self, how: str) -> None:
        self._drop_requests(("join", "sync", "heartbeat", "offset_fetch"))   # a pending commit may still be answered
        if self.member_id:
            self._send("leave", {"member_id": self.member_id})
        self._revoke(list(self.owned), self.generation)
        self.emit(ConsumerStopped(self.group, self.name, self.member_id, how))
        self.member_id, self.generation = "", -1
        self.status = "unjoined" if how == "poll_timeout" else "closed"

    def on_leave(self, resp: dict) -> None:
        pass

    def close(self) -> None:
        """KafkaConsumer.close(): commit (if auto-commit), LeaveGroup, stop."""
        if self.config.enable_auto_commit and self.owned and self.member_id:
            self.commit(auto=True)
        self._leave("close")
        self.service.scheduler.cancel(self.heartbeat_task)
        self.heartbeat_task = None

    def crash(self) -> None:
        """The process dies: no LeaveGroup, no commit; the coordinator notices after
        ``session.timeout.ms``."""
        self.emit(ConsumerStopped(self.group, self.name, self.member_id, "crash"))
        self.alive = False
        self.service.scheduler.cancel(self.heartbeat_task)
        self.heartbeat_task = None
        self._drop_requests()

    def restart(self) -> None:
        """A new process with the same name (a new member: it joins afresh)."""
        self.incarnation += 1
        self.alive = True
        self._drop_requests()
        self.member_id, self.generation, self.protocol, self.leader = "", -1, None, False
        self.status, self.coordinator = "unjoined", None
        self.owned, self.previous, self.positions, self.fetched = [], [], {}, {}
        self.owned_generation = -1
        self.last_poll_ms = self.last_auto_commit_ms = self.now
        self.join()

    # ---- consuming -------------------------------------------------------------------------
    def poll(self, max_records: int = 500) -> list:
        """Fetch from each owned partition's leader, up to its high watermark. Returns
        ``[(topic, partition, record)]``; [] while (re)joining."""
        if not self.alive:
            raise InvalidRequestError(f"consumer {self.name!r} has crashed; restart it with consumer_join")
        self.last_poll_ms = self.now
        if self.status in ("unjoined", "closed") or self.status.startswith("error:"):
            self.join()
            return []
        if self.status != "stable":
            return []
        if self.config.enable_auto_commit and self.now - self.last_auto_commit_ms >= self.config.auto_commit_interval_ms:
            self.commit(auto=True)
        out = []
        for tp in sorted(self.owned):
            if len(out) >= max_records:
                break
            if tp not in self.positions:
                if tp not in self.fetched:
                    continue  # its OffsetFetch is on the way (or sent below)
                committed = self.fetched[tp]
                if committed is not None:
                    del self.fetched[tp]
                    self._set_position(tp, committed, "committed")
                elif not self._reset(tp):
                    continue
                else:
                    del self.fetched[tp]
            out.extend(self._fetch(tp, max_records - len(out)))
        self._fetch_committed()
        return out

    # ---- OffsetFetch ---------------------------------------------------------------------------
    def _fetch_committed(self) -> None:
        """Ask the coordinator for the committed offsets of owned partitions that have no
        position yet (OffsetFetch, through the network). Sent when an assignment arrives, so
        the answer is usually there by the next poll, and by a poll that still misses one."""
        missing = [tp for tp in self.owned if tp not in self.positions and tp not in self.fetched]
        if not missing or any(e[0] == "offset_fetch" for e in self.inflight.values()):
            return
        self._send("offset_fetch", {"partitions": [list(tp) for tp in sorted(missing)], "require_stable": False,
                                    "generation": self.generation})

    def on_offset_fetch(self, resp: dict) -> None:
        if resp["error"] != "NONE" or resp["generation"] != self.generation:
            return   # the next poll asks again (an answer for an older assignment may be stale)
        committed = {(t, p): o for t, p, o in resp["committed"]}
        for t, p in resp["partitions"]:
            tp = (t, p)
            if tp in self.owned and tp not in self.positions:
                self.fetched[tp] = committed.get(tp)

    def _set_position(self, tp, offset: int, source: str) -> None:
        self.positions[tp] = offset
        self.emit(PositionReset(self.group, self.name, tp[0], tp[1], offset, source))

    def _reset(self, tp) -> bool:
        policy = self.config.auto_offset_reset
        cluster = self.service.cluster
        pm = cluster.controller.partition(*tp)
        b = cluster.brokers.get(pm.leader)
        part = b.partitions.get(tp) if b is not None and b.alive else None
        if part is None:
            return False
        if policy == "none":
            self.emit(PositionReset(self.group, self.name, tp[0], tp[1], -1, "none: NoOffsetForPartition"))
            return False
        offset = part.log.log_start_offset if policy == "earliest" else part.hw
        self._set_position(tp, offset, f"auto.offset.reset={policy}")
        return True

    def _fetch(self, tp, max_records: int) -> list:
        cluster = self.service.cluster
        offset = self.positions[tp]
        try:
            records = cluster.consume(tp[0], tp[1], offset, max_records)
        except OffsetOutOfRangeError:
            self.positions.pop(tp)
            if self._reset(tp):
                return self._fetch(tp, max_records)
            return []
        except KafkaError:
            return []  # leader unavailable: try again at the next poll
        nxt = records[-1].offset + 1 if records else offset
        self.positions[tp] = nxt
        hw = self.service.high_watermark(*tp)
        self.emit(ConsumerFetched(self.group, self.name, tp[0], tp[1], offset, len(records), nxt,
                                  -1 if hw is None else hw, [record_digest(r.key, r.value) for r in records]))
        self.delivered.extend((tp[0], tp[1], r.offset) for r in records)
        return [(tp[0], tp[1], r) for r in records]

    def commit(self, offsets: dict | None = None, *, auto: bool = False) -> None:
        """OffsetCommit of ``{(topic, partition): next offset}`` (default: the positions of
        the owned partitions). Completes once the records are acknowledged."""
        if offsets is None:
            offsets = {tp: self.positions[tp] for tp in self.owned if tp in self.positions}
        if auto:
            self.last_auto_commit_ms = self.now
        if not offsets:
            return
        items = [[t, p, o] for (t, p), o in sorted(offsets.items())]
        self.emit(OffsetCommitSent(self.group, self.member_id, self.generation, items, auto))
        self._send("commit", {"member_id": self.member_id, "generation": self.generation,
                                              "offsets": items})

    def on_commit(self, resp: dict) -> None:
        self.commit_log.append(resp)
        if resp["error"] in ("UNKNOWN_MEMBER_ID", "ILLEGAL_GENERATION") and self.status == "stable":
            self._revoke(list(self.owned), self.generation)
            self.member_id, self.generation = "", -1
            self.join()


# ---- topics grow -------------------------------------------------------------------------------
def add_partitions(cluster: Any, topic: str, count: int) -> dict:
    """Grow ``topic`` to ``count`` partitions (never shrink, as Kafka)."""
    ctl = cluster.controller
    meta = ctl.topics.get(topic)
    if meta is None:
        raise InvalidRequestError(f"add_partitions: unknown topic {topic!r}")
    old = len(meta.partitions)
    if count <= old:
        raise InvalidRequestError(f"add_partitions: {topic!r} has {old} partitions; the count can only grow "
                                  f"(asked for {count})")
    rf = len(meta.partitions[0].replicas)
    plan, _ = ctl.assign(count - old, rf)
    new = []
    for i, replicas in enumerate(plan):
        pm = PartitionMeta(topic, old + i, tuple(replicas))
        live = [r for r in replicas if ctl.is_eligible(r)]
        pm.isr = tuple(live)
        pm.leader = live[0] if live else -1
        meta.partitions.append(pm)
        new.append(pm)
    cluster.events.emit(PartitionsAdded(topic, old, count, {str(pm.partition): list(pm.replicas) for pm in new}))
    for pm in new:
        ctl.broadcast(pm)
    return {pm.partition: list(pm.replicas) for pm in new}


# ---- the group checker --------------------------------------------------------------------------
def ownership_findings(service: GroupService) -> list[str]:
    """Two live members of one group owning the same partition in the same generation."""
    out = []
    seen: dict[tuple, str] = {}
    for name in sorted(service.consumers):
        c = service.consumers[name]
        if not c.alive:
            continue
        for tp in c.owned:
            key = (c.group, c.owned_generation, tp)
            if key in seen:
                out.append(f"{tp[0]}-{tp[1]} owned by {seen[key]} and {name} in generation {c.owned_generation} "
                           f"of group {c.group}")
            else:
                seen[key] = name
    return out
