"""The replicated cluster: brokers, controller, network and the client, on one clock.

Every public method validates its arguments first and raises an engine error (leaving
the cluster untouched) on a bad call; everything after that happens through the
scheduler, so ``advance(ms)`` is what moves replication along. All randomness comes
from ``rng = random.Random(seed)``: the same seed and the same calls give the same
event stream (``events.digest()``).
"""
from __future__ import annotations

import heapq
import pickle
import random
from dataclasses import dataclass, fields
from typing import Any, Callable

from engine.clock import Scheduler, VirtualClock
from engine.config import LogConfig, config_from_mapping, validate_topic_name
from engine.disk import Disk
from engine.errors import (BrokerNotAvailableError, CoordinatorLoadInProgressError, InvalidConfigError,
                           InvalidRequestError, InvalidTopicError, InvalidTxnStateError, LeaderNotAvailableError,
                           OffsetOutOfRangeError)
from engine.events import EventLog

from .broker import Broker
from .config import ACKS, CLIENT, ClusterConfig
from .consumer import GroupService
from .controller import Controller
from .kraft_controller import KRaftController
from .events import (ConfigChanged, ConsumerRead, ProduceAcked, ProduceFailed, ProducerCreated, ProduceRetried,
                     TopicCreated)
from .network import Network, ProduceRequest, ProduceResponse
from .partition import digest, record_digests
from .producer import RETRIABLE_ERRORS, PendingSend, Producer, check_producer_settings
from .transactions import TransactionService
from .txn_offsets import TxnOffsetService, on_producer_answer, send_offsets

__all__ = ["Cluster", "ClusterServices", "ProduceResult", "Client"]


@dataclass(frozen=True)
class ClusterServices:
    """How a cluster makes its coordinators, given to it when it is built.

    Each factory is called as ``factory(cluster, **settings)`` the first time the service
    is needed (a cluster that never runs a transaction has no transaction coordinator, and
    its event stream shows none); the services reach each other through the cluster's
    ``*_service()`` methods, never by importing one another."""

    transactions: Callable[..., Any] = TransactionService
    groups: Callable[..., Any] = GroupService
    txn_offsets: Callable[..., Any] = TxnOffsetService


@dataclass(frozen=True)
class ProduceResult:
    """Outcome of one produce request as the client saw it. ``status``: "ok" | "error".
    acks=0 results are recorded at send time with offsets None."""

    request_id: int
    topic: str
    partition: int
    acks: int
    status: str
    error: str | None
    message: str
    base_offset: int | None
    last_offset: int | None
    broker: int | None
    sent_ms: int
    completed_ms: int
    values: tuple
    key: bytes | None = None
    attempts: int = 1            # > 1 when a producer retried the batch

    def to_dict(self) -> dict:
        return {"request_id": self.request_id, "topic": self.topic, "partition": self.partition, "acks": self.acks,
                "attempts": self.attempts,
                "status": self.status, "error": self.error, "message": self.message,
                "base_offset": self.base_offset, "last_offset": self.last_offset, "broker": self.broker,
                "sent_ms": self.sent_ms, "completed_ms": self.completed_ms,
                "digests": [digest(v, self.key) for v in self.values]}


class Client:
    """Network node -1: the producer/consumer. Receives produce responses."""

    alive = True
    incarnation = 0

    def __init__(self, cluster: "Cluster") -> None:
        self.cluster = cluster

    def receive(self, src: int, msg: Any) -> None:
        if isinstance(msg, ProduceResponse):
            self.cluster.deliver_produce_response(msg)


def _int(name: str, value: Any, low: int | None = None, high: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidRequestError(f"{name} must be an integer, got {value!r}")
    if low is not None and value < low:
        raise InvalidRequestError(f"{name} must be at least {low}, got {value}")
    if high is not None and value > high:
        raise InvalidRequestError(f"{name} must be at most {high}, got {value}")
    return value


def _as_bytes(value: Any) -> bytes | None:
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode()
    raise InvalidRequestError(f"record values must be str, bytes or None, got {type(value).__name__}")


def _log_field_names(changes: dict) -> dict:
    """Map Kafka's dotted names (``flush.messages``) to LogConfig field names."""
    known = {f.name for f in fields(LogConfig)}
    by_kafka = {f.metadata.get("kafka"): f.name for f in fields(LogConfig) if f.metadata.get("kafka")}
    out = {}
    for key, value in changes.items():
        name = key if key in known else by_kafka.get(key) or key.replace(".", "_")
        if name not in known:
            raise InvalidConfigError(f"unknown config {key!r}; known: {', '.join(sorted(known))}")
        out[name] = value
    return out


class Cluster:
    """1–7 brokers with their log directories on ``disk``; see the module docstring."""

    # The services made so far (None until first use); class-level so older snapshots load.
    transactions: TransactionService | None = None
    groups: GroupService | None = None
    txn_offsets: TxnOffsetService | None = None
    services: ClusterServices = ClusterServices()
    # request id of an attempt -> record_digests of its batch, made once per attempt for the
    # leader's and the client's events (None until first use; class-level so older snapshots load).
    _digests: dict | None = None

    def __init__(self, disk: Disk, config: ClusterConfig | None = None, seed: int = 0,
                 events: EventLog | None = None, services: ClusterServices | None = None) -> None:
        config = config or ClusterConfig()
        if not isinstance(config, ClusterConfig):
            raise InvalidConfigError(f"config must be a ClusterConfig, got {type(config).__name__}")
        _int("seed", seed)
        if services is not None:
            self.services = services
        self.disk = disk
        self.config = config
        self.seed = seed
        if events is None:
            clock = VirtualClock()
            events = EventLog(clock)
        self.clock = events.clock
        self.scheduler = Scheduler(self.clock)
        self.events = events
        self.rng = random.Random(seed)
        self.network = Network(self.scheduler, self.rng, self.events, config.network_latency_ms)
        self.controller = KRaftController(self) if config.kraft else Controller(self)
        self.brokers: dict[int, Broker] = {i: Broker(self, i) for i in range(config.brokers)}
        self.client = Client(self)
        self.network.register(CLIENT, self.client)
        for i in sorted(self.brokers):
            self.network.register(i, self.brokers[i])
            if config.kraft:
                self.controller.attach_broker(self.brokers[i])
        self.produce_results: dict[int, ProduceResult] = {}
        self._pending_produces: dict[int, tuple] = {}
        self._keys: dict[int, bytes | None] = {}
        # The client's request timeouts, kept lazily: a heap of (due ms, reserved scheduler
        # counter, request id) and one armed scheduler task at its head. Almost every request is
        # answered long before its timeout; an entry whose request is answered is dropped when it
        # reaches the head, and the one that is not runs exactly where a task scheduled with the
        # request would have (the counter was reserved then).
        self._client_timeouts: list = []
        self._client_timer: Any = None
        self._next_request_id = 1
        self.producers: dict[str, Producer] = {}
        self._sends: dict[int, PendingSend] = {}     # request id of an attempt -> the batch it carries
        self._coordinator_txn: dict[int, tuple] = {}  # request id -> (producer id, epoch) of a coordinator's write
        self._local: set[int] = set()                 # request ids of a broker's own appends (coordinators)
        self._next_producer_id = 0
        self.controller.start(config.initial_controller)
        for i in sorted(self.brokers):
            self.brokers[i].start(restart=False)
            self.controller.bootstrap_register(i, self.brokers[i].incarnation)
        self._controller_task = self.scheduler.schedule_periodic(config.controller_check_interval_ms,
                                                                 self.controller.tick, name="controller-check")
        if config.kraft:
            # A fresh KRaft cluster's first seconds: an election, then every broker registers,
            # catches up on the metadata log and is unfenced.
            self.controller.bootstrap()

    # ---- validation helpers ---------------------------------------------------------

    def next_request_id(self) -> int:
        """A fresh request id, from the one counter the engine's own producers use (a wire
        listener's requests take theirs here too)."""
        rid = self._next_request_id
        self._next_request_id += 1
        return rid
    def _broker(self, broker: Any) -> Broker:
        if isinstance(broker, bool) or not isinstance(broker, int) or broker not in self.brokers:
            raise InvalidRequestError(
                f"unknown broker {broker!r}; brokers are {', '.join(str(b) for b in sorted(self.brokers))}")
        return self.brokers[broker]

    def _node(self, node: Any) -> int:
        if node == CLIENT and not isinstance(node, bool):
            return CLIENT
        if not isinstance(node, bool) and node in self.controller_nodes():
            return node
        return self._broker(node).id

    def controller_nodes(self) -> dict:
        """KRaft dedicated mode: controller node id -> its process; else empty."""
        return getattr(self.controller, "controller_nodes", None) or {}

    def _controller_node(self, node: Any) -> Any:
        if not isinstance(node, bool) and node in self.controller_nodes():
            return self.controller_nodes()[node]
        return None

    def now_ms(self) -> int:
        return self.scheduler.now_ms()

    # ---- topics --------------------------------------------------------------------
    def create_topic(self, name: str, partitions: int, replication_factor: int, config: dict | None = None,
                     assignment: Any = None) -> dict:
        """Create a topic. ``assignment``: None (Kafka's striped placement from ``rng``), a
        list of replica lists (one per partition, preferred leader first), or a dict
        {partition: [replicas]}. Returns {partition: [replicas]}."""
        validate_topic_name(name)
        if self.config.kraft:
            self.controller.require_active(f"create topic {name!r}")
        if name in self.controller.topics:
            raise InvalidTopicError(f"topic {name!r} already exists")
        _int("partitions", partitions, 1, 1000)
        _int("replication_factor", replication_factor, 1, len(self.brokers))
        changes = dict(config or {})
        topic_cfg = config_from_mapping(LogConfig, changes, base=self.config.log) if changes else self.config.log
        if assignment is not None:
            if isinstance(assignment, dict):
                rows = [assignment.get(p, assignment.get(str(p))) for p in range(partitions)]
            else:
                rows = list(assignment)
            if len(rows) != partitions or any(r is None for r in rows):
                raise InvalidRequestError(f"assignment must give replicas for each of the {partitions} partitions")
            plan = []
            for p, row in enumerate(rows):
                row = tuple(row)
                if len(row) != replication_factor:
                    raise InvalidRequestError(
                        f"partition {p}: {len(row)} replicas given, replication factor is {replication_factor}")
                if len(set(row)) != len(row):
                    raise InvalidRequestError(f"partition {p}: duplicate replicas in {list(row)}")
                for b in row:
                    self._broker(b)
                plan.append(row)
            placement = "explicit"
        else:
            plan, placement = self.controller.assign(partitions, replication_factor)
        meta = self.controller.create_topic(name, topic_cfg, changes, plan, placement)
        self.events.emit(TopicCreated(name, partitions, replication_factor,
                                      {str(p): list(r) for p, r in enumerate(plan)}, placement,
                                      {k: v for k, v in sorted(changes.items())}))
        self.controller.announce_topic(meta)
        return {p: list(r) for p, r in enumerate(plan)}

    # ---- produce / consume ---------------------------------------------------------
    def create_producer(self, name: str, *, idempotent: bool = True, retries: int = 1000,
                        retry_backoff_ms: int = 100, delivery_timeout_ms: int = 120_000,
                        transactional_id: str | None = None, transaction_timeout_ms: int = 60_000) -> Producer:
        """A producer on the client node that retries retriable failures; ``idempotent``
        gives it a producer id (InitProducerId) and sequence numbers, so retries are not
        written twice (see :mod:`engine.cluster.producer`). A ``transactional_id`` makes it
        transactional (idempotent too); call :meth:`init_transactions` before its first
        transaction (see :mod:`engine.cluster.transactions`)."""
        check_producer_settings(name, retries, retry_backoff_ms, delivery_timeout_ms)
        if not isinstance(idempotent, bool):
            raise InvalidRequestError(f"idempotent must be true or false, got {idempotent!r}")
        if name in self.producers:
            raise InvalidRequestError(f"producer {name!r} already exists")
        if transactional_id is not None:
            if not isinstance(transactional_id, str) or not transactional_id or len(transactional_id) > 64:
                raise InvalidRequestError(f"transactional_id must have 1-64 characters, got {transactional_id!r}")
            _int("transaction_timeout_ms", transaction_timeout_ms, 1, 900_000)
            idempotent = True
        prod = Producer(name, idempotent, retries, retry_backoff_ms, delivery_timeout_ms)
        if transactional_id is not None:
            prod.transactional_id, prod.transaction_timeout_ms = transactional_id, transaction_timeout_ms
            prod.txn_state = "uninitialized"
        elif idempotent:
            prod.producer_id, prod.producer_epoch = self._init_producer_id(retry_backoff_ms, delivery_timeout_ms), 0
        self.producers[name] = prod
        self.events.emit(ProducerCreated(name, idempotent, prod.producer_id, prod.producer_epoch, retries))
        return prod

    def _init_producer_id(self, retry_backoff_ms: int, timeout_ms: int) -> int:
        """The client's InitProducerId: under KRaft a broker still waiting for its producer-id block
        answers COORDINATOR_LOAD_IN_PROGRESS, and the client tries again after retry.backoff.ms."""
        end = self.scheduler.now_ms() + timeout_ms
        while True:
            try:
                return self.allocate_producer_id()
            except CoordinatorLoadInProgressError:
                if not self.config.kraft or self.scheduler.now_ms() >= end:
                    raise
                self.advance(retry_backoff_ms)

    def allocate_producer_id(self, broker: int | None = None) -> int:
        """InitProducerId's producer id. Under KRaft, from the block the controller gave ``broker``
        (engine/cluster/producer_ids.py, KIP-730); the hybrid controller keeps one counter."""
        if self.config.kraft:
            return self.controller.allocate_producer_id(broker)
        pid = self._next_producer_id
        self._next_producer_id += 1
        return pid

    # ---- services ---------------------------------------------------------------------
    def transaction_service(self, **settings: Any) -> TransactionService:
        """The transaction coordinator, made on first use with ``settings`` (e.g.
        ``num_partitions``); settings after that first use are refused."""
        if self.transactions is None:
            self.transactions = self.services.transactions(self, **settings)
        elif settings:
            raise InvalidRequestError("transactions are already in use; configure them before the first one")
        return self.transactions

    def group_service(self, **settings: Any) -> GroupService:
        """The group coordinators and consumers, made on first use with ``settings`` (later
        settings are ignored, as they always were)."""
        if self.groups is None:
            self.groups = self.services.groups(self, **settings)
        return self.groups

    def txn_offset_service(self) -> TxnOffsetService:
        """Offsets sent to transactions, pending until their markers; made on first use."""
        if self.txn_offsets is None:
            self.txn_offsets = self.services.txn_offsets(self)
        return self.txn_offsets

    # ---- transactions (engine/cluster/transactions.py) ---------------------------------
    def _txn_producer(self, name: str, *states: str) -> Producer:
        prod = self.producers.get(name)
        if prod is None or prod.transactional_id is None:
            raise InvalidRequestError(f"{name!r} is not a transactional producer; create it with a transactional_id")
        if states and prod.txn_state not in states:
            raise InvalidTxnStateError(
                f"producer {name!r} is {prod.txn_state}; this needs it to be {' or '.join(states)}")
        return prod

    def init_transactions(self, name: str) -> None:
        """InitProducerId with the transactional id: gets (or bumps) the producer epoch,
        fencing older instances; the answer arrives as the clock moves."""
        prod = self._txn_producer(name, "uninitialized", "ready", "fenced")
        prod.txn_state = "initializing"
        self.transaction_service().request(prod, "init_producer_id", {"timeout_ms": prod.transaction_timeout_ms})

    def begin_transaction(self, name: str) -> None:
        prod = self._txn_producer(name, "ready")
        prod.txn_state = "in_transaction"
        prod.txn_partitions = set()
        prod.txn_failed = None

    def commit_transaction(self, name: str) -> None:
        self._end_transaction(self._txn_producer(name, "in_transaction"), True)

    def abort_transaction(self, name: str) -> None:
        self._end_transaction(self._txn_producer(name, "in_transaction", "abortable_error"), False)

    def _end_transaction(self, prod: Producer, commit: bool) -> None:
        prod.txn_state = "committing" if commit else "aborting"
        self._send_end_txn(prod.name)

    def _send_end_txn(self, name: str) -> None:
        """EndTxn once the producer's sends are done (commitTransaction flushes first)."""
        prod = self.producers[name]
        if prod.txn_waiting or prod.txn_offsets is not None or any(s.producer == name for s in self._sends.values()):
            self.scheduler.schedule(5, self._send_end_txn, name, name="txn-flush")
            return
        if prod.txn_state == "committing" and prod.txn_failed is not None:
            # commitTransaction after a failed send: Kafka throws and only an abort is allowed.
            prod.txn_state = "abortable_error"
            return
        self.transaction_service().request(prod, "end_txn", {"producer_id": prod.producer_id,
                                                            "producer_epoch": prod.producer_epoch,
                                                            "commit": prod.txn_state == "committing"})

    def on_txn_answer(self, name: str, api: str, error: str, result: dict) -> None:
        """A coordinator's answer to a transactional producer."""
        prod = self.producers[name]
        if hasattr(prod, "on_txn_answer"):
            # a producer outside the engine (wire/: a real client's connection) takes its own answers
            prod.on_txn_answer(api, error, result)
            return
        retriable = error in ("COORDINATOR_NOT_AVAILABLE", "NOT_COORDINATOR", "CONCURRENT_TRANSACTIONS",
                              "COORDINATOR_LOAD_IN_PROGRESS",
                              "REQUEST_TIMED_OUT", "NOT_ENOUGH_REPLICAS", "NOT_ENOUGH_REPLICAS_AFTER_APPEND")
        if error in ("PRODUCER_FENCED", "INVALID_PRODUCER_EPOCH"):
            prod.txn_state = "fenced"
            return
        if api == "init_producer_id":
            if error == "NONE":
                prod.producer_id, prod.producer_epoch = result["producer_id"], result["producer_epoch"]
                prod.next_sequence = {}
                prod.txn_state = "ready"
            elif retriable:
                self.scheduler.schedule(prod.retry_backoff_ms, self.transaction_service().request, prod,
                                        "init_producer_id", {"timeout_ms": prod.transaction_timeout_ms},
                                        name="txn-init-retry")
            else:
                prod.txn_state = f"error:{error}"
        elif api == "add_partitions":
            if error == "NONE":
                for tp in sorted(prod.txn_adding):
                    prod.txn_partitions.add(tp)
                    for args in prod.txn_waiting.pop(tp, []):
                        self._attempt(*args)
                prod.txn_adding = set()
                if prod.txn_waiting:          # partitions that came while the request was out
                    self._add_partitions(name)
            elif retriable:
                self.scheduler.schedule(prod.retry_backoff_ms, self._add_partitions, name, name="txn-add-retry")
            else:
                for tp in sorted(prod.txn_waiting):
                    for rid, topic, partition, values, key, acks, _, _, sent in prod.txn_waiting.pop(tp):
                        self._finish(rid, topic, partition, acks, error, "AddPartitionsToTxn failed", None, None,
                                     None, sent, values)
                prod.txn_adding = set()
        elif api in ("add_offsets", "txn_offset_commit"):
            on_producer_answer(self, prod, api, error, retriable)
        elif api == "end_txn":
            if error == "NONE":
                prod.txn_state = "ready"
                prod.txn_partitions = set()
            elif retriable:
                self.scheduler.schedule(prod.retry_backoff_ms, self._send_end_txn, name, name="txn-end-retry")
            else:
                prod.txn_state = f"error:{error}"

    def send_offsets_to_transaction(self, name: str, group: str, offsets: Any) -> None:
        """``sendOffsetsToTransaction``: the consumed positions ``offsets`` ({(topic,
        partition): next offset} or [[topic, partition, offset], ...]) of ``group`` become
        part of the open transaction — AddOffsetsToTxn, then TxnOffsetCommit (see
        :mod:`engine.cluster.txn_offsets`); commitTransaction waits for both."""
        send_offsets(self, self._txn_producer(name, "in_transaction"), group, offsets)

    def _add_partitions(self, name: str) -> None:
        prod = self.producers[name]
        prod.txn_adding = set(prod.txn_waiting)
        self.transaction_service().request(prod, "add_partitions", {
            "producer_id": prod.producer_id, "producer_epoch": prod.producer_epoch,
            "partitions": [list(tp) for tp in sorted(prod.txn_adding)]})

    def produce(self, topic: str, partition: int, values: Any, *, key: Any = None, acks: int = -1,
                timeout_ms: int | None = None, broker: int | None = None, producer: str | None = None,
                transactional_for: tuple[int, int] | None = None, local: bool = False) -> int:
        """Send one batch (``values``: a value or a list of values; str/bytes/None) to the
        partition's current leader as the metadata says — or to ``broker`` (a client with
        stale metadata, e.g. still writing to a zombie leader). Returns the request id; the
        outcome lands in ``produce_results[id]`` once the response (or a timeout) arrives.
        With ``producer`` (see :meth:`create_producer`) failed attempts are retried and the
        final outcome lands under the first attempt's id. ``transactional_for`` = (producer
        id, epoch) makes it a broker-side transactional write on that producer's behalf (the
        group coordinator's TxnOffsetCommit records: no sequence, not retried). ``local``: the
        append is made by ``broker`` itself (a coordinator writing its own partition, as
        Kafka's coordinators append locally): request and response stay on that broker, so
        no client link's cut, drop or delay applies (the hand-off still takes the network's
        latency, and a broker that restarts meanwhile loses the answer)."""
        self.controller.partition(topic, partition)
        target = None if broker is None else self._broker(broker).id
        if acks not in ACKS.values() or isinstance(acks, bool):
            raise InvalidRequestError(f"acks must be -1 (all), 0 or 1, got {acks!r}")
        prod = None
        if producer is not None:
            prod = self.producers.get(producer)
            if prod is None:
                raise InvalidRequestError(f"unknown producer {producer!r}; create it first")
        if isinstance(values, (str, bytes)) or values is None:
            values = [values]
        values = tuple(values)
        if set(map(type, values)) != {bytes}:
            values = tuple(_as_bytes(v) for v in values)
        if not values:
            raise InvalidRequestError("produce needs at least one record value")
        key = _as_bytes(key)
        timeout = self.config.request_timeout_ms if timeout_ms is None else _int("timeout_ms", timeout_ms, 1)
        rid = self._next_request_id
        self._next_request_id += 1
        now = self.now_ms()
        if prod is not None and prod.transactional_id is not None:
            if prod.txn_state != "in_transaction":
                raise InvalidTxnStateError(f"producer {prod.name!r} is {prod.txn_state}: begin a transaction "
                                           f"before sending (INVALID_TXN_STATE)")
            if acks != -1:
                raise InvalidRequestError("a transactional producer sends with acks=all")
        if transactional_for is not None:
            self._coordinator_txn[rid] = tuple(transactional_for)
        if local:
            if target is None or prod is not None:
                raise InvalidRequestError("a local append needs the broker that makes it and no producer")
            self._local.add(rid)
        if prod is not None:
            seq = prod.take_sequence(topic, partition, len(values))
            self._sends[rid] = PendingSend(rid, prod.name, topic, partition, seq, now, target)
        args = (rid, topic, partition, values, key, acks, timeout, target, now)
        if prod is not None and prod.transactional_id is not None and (topic, partition) not in prod.txn_partitions:
            # AddPartitionsToTxn before the first write to a partition; the batch waits for it.
            prod.txn_waiting.setdefault((topic, partition), []).append(args)
            if not prod.txn_adding:
                self._add_partitions(prod.name)
            return rid
        self._attempt(*args)
        return rid

    def _attempt(self, rid: int, topic: str, partition: int, values: tuple, key: bytes | None, acks: int,
                 timeout: int, target: int | None, sent_ms: int) -> None:
        """Send attempt ``rid`` of a batch to the leader the metadata names (or ``target``)."""
        self._keys[rid] = key
        pm = self.controller.partition(topic, partition)
        dest = pm.leader if target is None else target
        if dest < 0:
            self._finish(rid, topic, partition, acks, "LEADER_NOT_AVAILABLE",
                         f"{topic}-{partition} has no leader", None, None, None, sent_ms, values)
            return
        pid = epoch = seq = -1
        txn = False
        send = self._sends.get(rid)
        if send is not None:
            prod = self.producers[send.producer]
            pid, epoch, seq = prod.producer_id, prod.producer_epoch, send.base_sequence
            txn = prod.transactional_id is not None
        elif rid in self._coordinator_txn:
            (pid, epoch), txn = self._coordinator_txn[rid], True
        digests = record_digests(key, values)
        store = self._digests
        if store is None:
            store = self._digests = {}
        store[rid] = digests
        req = ProduceRequest(rid, topic, partition, values, key, acks, timeout, pid, epoch, seq, txn, digests)
        self._pending_produces[rid] = (topic, partition, acks, sent_ms, values, dest)
        self.network.send(dest if rid in self._local else CLIENT, dest, req)
        if acks == 0:
            self._finish(rid, topic, partition, 0, None, "acks=0: no response expected", None, None, dest,
                         sent_ms, values)
        else:
            # The client's own request.timeout.ms (a little after the broker's, so a broker
            # timeout response wins when it can arrive).
            scheduler = self.scheduler
            due = scheduler.now_ms() + timeout + 2 * self.config.network_latency_ms + 1
            entry = (due, scheduler.reserve(due), rid)
            heapq.heappush(self._client_timeouts, entry)
            timer = self._client_timer
            if timer is not None and entry[:2] < (timer.due_ms, timer.seq):
                scheduler.cancel(timer)
                timer = None
            if timer is None:
                self._client_timer = scheduler.schedule_reserved(entry[0], entry[1], self._client_timer_fired,
                                                                 entry[0], entry[1], name="produce-client-timeout")

    def _retry(self, rid: int, topic: str, partition: int, acks: int, error: str, values: tuple) -> bool:
        """Attempt ``rid`` failed with ``error``: send the batch again if its producer may."""
        send = self._sends.get(rid)
        if send is None:
            return False
        if error not in RETRIABLE_ERRORS and not (error == "OUT_OF_ORDER_SEQUENCE_NUMBER" and any(
                s.producer == send.producer and (s.topic, s.partition) == (send.topic, send.partition)
                and s.base_sequence < send.base_sequence for s in self._sends.values())):
            return False
        prod = self.producers[send.producer]
        now = self.now_ms()
        if send.attempts > prod.retries or now + prod.retry_backoff_ms - send.first_sent_ms >= prod.delivery_timeout_ms:
            return False
        del self._sends[rid]
        self._pending_produces.pop(rid, None)
        if self._digests is not None:
            self._digests.pop(rid, None)
        key = self._keys.pop(rid, None)
        new_rid = self._next_request_id
        self._next_request_id += 1
        send.attempts += 1
        self._sends[new_rid] = send
        self.events.emit(ProduceRetried(send.send_id, new_rid, prod.name, send.attempts, error, send.base_sequence,
                                        prod.retry_backoff_ms))
        timeout = self.config.request_timeout_ms
        self.scheduler.schedule(prod.retry_backoff_ms, self._resend, new_rid, topic, partition, values, key, acks,
                                timeout, send.target, name="produce-retry")
        return True

    def _resend(self, rid: int, topic: str, partition: int, values: tuple, key: bytes | None, acks: int,
                timeout: int, target: int | None) -> None:
        self._attempt(rid, topic, partition, values, key, acks, timeout, target, self.now_ms())

    def _finish(self, rid: int, topic: str, partition: int, acks: int, error: str | None, message: str,
                base: int | None, last: int | None, broker: int | None, sent_ms: int, values: tuple) -> None:
        if rid in self.produce_results:
            return
        if error is not None and self._retry(rid, topic, partition, acks, error, values):
            return
        self._pending_produces.pop(rid, None)
        self._coordinator_txn.pop(rid, None)
        self._local.discard(rid)
        status = "ok" if error is None else "error"
        key = self._keys.pop(rid, None)
        digests = self._digests.pop(rid, None) if self._digests is not None else None
        send = self._sends.pop(rid, None)
        attempts = 1
        if send is not None:       # a producer's batch: the outcome goes under its first id
            rid, sent_ms, attempts = send.send_id, send.first_sent_ms, send.attempts
            prod = self.producers[send.producer]
            if error in ("INVALID_PRODUCER_EPOCH", "PRODUCER_FENCED") and prod.transactional_id is not None:
                prod.txn_state = "fenced"     # fatal: a newer instance owns the transactional id
            elif error is not None and prod.txn_state in ("in_transaction", "committing", "aborting"):
                prod.txn_failed = error       # the transaction can no longer commit
        self.produce_results[rid] = ProduceResult(rid, topic, partition, acks, status, error, message, base, last,
                                                  broker, sent_ms, self.now_ms(), values, key, attempts)
        if digests is None:
            digests = record_digests(key, values)
        if error is None:
            self.events.emit_fields(ProduceAcked, rid, broker, topic, partition, acks, base, last, digests)
        else:
            self.events.emit(ProduceFailed(rid, broker, topic, partition, acks, error, message,
                                           base is not None, digests))

    def deliver_produce_response(self, resp: ProduceResponse) -> None:
        """A ProduceResponse reached the client (from the network, or from a broker's own
        append on the coordinator's behalf): finish the request it answers."""
        pending = self._pending_produces.get(resp.request_id)
        if pending is None:
            return
        topic, partition, acks, sent, values, _ = pending
        self._finish(resp.request_id, topic, partition, acks, resp.error, resp.message, resp.base_offset,
                     resp.last_offset, resp.broker, sent, values)

    def _client_timer_fired(self, due: int, seq: int) -> None:
        self._client_timer = None
        heap = self._client_timeouts
        if heap and heap[0][0] == due and heap[0][1] == seq:
            self._client_timeout(heapq.heappop(heap)[2])
        # Arm at the next request still waiting (the answered ones would do nothing).
        pending = self._pending_produces
        while heap and heap[0][2] not in pending:
            heapq.heappop(heap)
        if heap and self._client_timer is None:
            due, seq, _ = heap[0]
            self._client_timer = self.scheduler.schedule_reserved(due, seq, self._client_timer_fired, due, seq,
                                                                  name="produce-client-timeout")

    def _client_timeout(self, rid: int) -> None:
        pending = self._pending_produces.get(rid)
        if pending is None:
            return
        topic, partition, acks, sent, values, leader = pending
        self._finish(rid, topic, partition, acks, "REQUEST_TIMED_OUT",
                     f"no response from broker {leader} within the request timeout", None, None, leader, sent, values)

    def check_consume(self, topic: str, partition: int, offset: int = 0, max_records: int = 100,
                      isolation: str = "read_uncommitted") -> Any:
        """Everything that can refuse a consume, without changing anything: the leader's
        replica (a Partition) that would serve it."""
        if isolation not in ("read_uncommitted", "read_committed"):
            raise InvalidRequestError(f"isolation must be read_uncommitted or read_committed, got {isolation!r}")
        pm = self.controller.partition(topic, partition)
        _int("offset", offset, 0)
        _int("max_records", max_records, 1)
        if isolation not in ("read_uncommitted", "read_committed"):
            raise InvalidRequestError(f"isolation must be read_uncommitted or read_committed, got {isolation!r}")
        if pm.leader < 0:
            raise LeaderNotAvailableError(f"{topic}-{partition} has no leader")
        broker = self.brokers[pm.leader]
        part = broker.partitions.get((topic, partition)) if broker.alive else None
        if part is None:
            raise BrokerNotAvailableError(f"leader {pm.leader} of {topic}-{partition} is not reachable")
        if offset < part.log.log_start_offset or offset > part.hw:
            raise OffsetOutOfRangeError(offset, part.log.log_start_offset, part.hw,
                                        where=f"{topic}-{partition} (up to HW)")
        return part

    def consume(self, topic: str, partition: int, offset: int = 0, max_records: int = 100,
                isolation: str = "read_uncommitted") -> list:
        """Read records from the current leader: below the high watermark
        (``read_uncommitted``), or below the last stable offset skipping the batches of
        aborted transactions (``read_committed``). Control records (transaction markers)
        are never returned; they still take their offsets."""
        part = self.check_consume(topic, partition, offset, max_records, isolation)
        broker = part.broker
        log = part.log
        hw = part.hw
        bound = log.last_stable_offset if isolation == "read_committed" else hw
        aborted: dict[int, list] = {}
        if isolation == "read_committed":
            for txn in log.aborted_transactions(offset, bound):
                aborted.setdefault(txn.producer_id, []).append((txn.first_offset, txn.last_offset))
        records = []
        for batch in log.batches(offset, bound):
            if batch.is_control or any(first <= batch.base_offset <= last
                                       for first, last in aborted.get(batch.producer_id, ())):
                continue
            records.extend(r for r in batch.records if offset <= r.offset < bound)
            if len(records) >= max_records:
                break
        records = records[:max_records]
        nxt = records[-1].offset + 1 if records else offset
        self.events.emit(ConsumerRead(broker.id, topic, partition, offset, len(records), nxt, hw,
                                      [digest(r.value, r.key) for r in records]))
        return records

    # ---- faults ---------------------------------------------------------------------
    def crash(self, broker: int, *, power_loss: bool = True) -> None:
        """Hard crash. With ``power_loss`` (default) un-fsynced bytes of its log directory
        are lost (``disk.crash``); without, it is a process kill (the page cache survives)."""
        node = self._controller_node(broker)
        if node is not None:
            if not node.alive:
                raise BrokerNotAvailableError(f"controller {broker} is already down")
            self.controller.stop_node(broker, "crash", power_loss)
            return
        b = self._broker(broker)
        if not b.alive:
            raise BrokerNotAvailableError(f"broker {broker} is already down")
        b.crash(power_loss=power_loss)

    def shutdown(self, broker: int) -> list:
        """Controlled shutdown: leadership moves away, then flush + checkpoints + marker."""
        node = self._controller_node(broker)
        if node is not None:
            if not node.alive:
                raise BrokerNotAvailableError(f"controller {broker} is already down")
            self.controller.stop_node(broker, "shutdown")
            return []
        b = self._broker(broker)
        if not b.alive:
            raise BrokerNotAvailableError(f"broker {broker} is already down")
        moved = self.controller.controlled_shutdown(broker)
        b.shutdown(moved)
        return moved

    def restart(self, broker: int) -> None:
        """Start a stopped broker: reopen (and recover) every log, rejoin via heartbeat."""
        node = self._controller_node(broker)
        if node is not None:
            if node.alive:
                raise InvalidRequestError(f"controller {broker} is running; crash or shut it down first")
            self.controller.start_node(broker)
            return
        b = self._broker(broker)
        if b.alive:
            raise InvalidRequestError(f"broker {broker} is running; crash or shut it down first")
        b.start(restart=True)

    def isolate(self, broker: int) -> None:
        """Cut every link between ``broker`` and all other nodes (client included)."""
        nid = broker if self._controller_node(broker) is not None else self._broker(broker).id
        for other in [CLIENT] + sorted(self.brokers) + sorted(self.controller_nodes()):
            if other != nid:
                self.network.cut(nid, other, True)

    def cut_link(self, a: int, b: int, both: bool = True) -> None:
        self.network.cut(self._node(a), self._node(b), bool(both))

    def heal_link(self, a: int, b: int, both: bool = True) -> None:
        self.network.heal(self._node(a), self._node(b), bool(both))

    def heal_all(self) -> None:
        self.network.heal_all()

    def set_link_delay(self, a: int, b: int, ms: int, both: bool = True) -> None:
        self.network.set_delay(self._node(a), self._node(b), ms, bool(both))

    def set_drop_probability(self, a: int, b: int, p: float, both: bool = True) -> None:
        self.network.set_drop_probability(self._node(a), self._node(b), p, bool(both))

    def slow_follower(self, broker: int, delay_ms: int) -> None:
        """Make ``broker`` wait ``delay_ms`` before each fetch it sends as a follower."""
        b = self._broker(broker)
        _int("delay_ms", delay_ms, 0)
        b.set_follower_delay(delay_ms)

    def pause_follower(self, broker: int) -> None:
        """Stop ``broker``'s fetchers (it stays alive and heartbeats: a stuck follower)."""
        self._broker(broker).set_follower_paused(True)

    def resume_follower(self, broker: int) -> None:
        self._broker(broker).set_follower_paused(False)

    def elect_preferred_leaders(self) -> list:
        return self.controller.elect_preferred()

    def check_config(self, scope: str, target: Any, changes: dict) -> Any:
        """Everything that can refuse :meth:`set_config`, without changing anything: the
        new ClusterConfig (scope cluster), topic LogConfig (topic) or override dict (broker)."""
        if not isinstance(changes, dict) or not changes:
            raise InvalidRequestError("changes must be a non-empty dict")
        if scope == "cluster":
            new = ClusterConfig.from_mapping(changes, base=self.config)
            if new.brokers != self.config.brokers:
                raise InvalidConfigError("the number of brokers cannot change in a running cluster")
            return new
        if scope == "topic":
            if self.config.kraft:
                self.controller.require_active(f"change topic {target!r}'s config")
            meta = self.controller.topics.get(target)
            if meta is None:
                self.controller.partition(target, 0)  # raises UnknownTopicOrPartitionError
            return config_from_mapping(LogConfig, changes, base=meta.config)
        if scope == "broker":
            b = self._broker(target)
            config_from_mapping(LogConfig, changes, base=self.config.log)  # validate
            merged = {**b.log_overrides, **_log_field_names(changes)}
            config_from_mapping(LogConfig, merged, base=self.config.log)
            return merged
        raise InvalidRequestError(f"scope must be 'cluster', 'topic' or 'broker', got {scope!r}")

    def set_config(self, scope: str, target: Any, changes: dict) -> None:
        """``scope``: "cluster" (ClusterConfig fields; target ignored), "topic" (target = topic
        name; LogConfig fields) or "broker" (target = broker id; LogConfig overrides applied on
        top of the topic config on that broker only, e.g. flush_interval_messages)."""
        checked = self.check_config(scope, target, changes)
        if scope == "cluster":
            new = checked
            self.config = new
            self.network.latency_ms = new.network_latency_ms
            # Topics take the (new) cluster defaults except where they override them, as in Kafka.
            for name in sorted(self.controller.topics):
                meta = self.controller.topics[name]
                meta.config = config_from_mapping(LogConfig, meta.config_changes, base=new.log)
            for i in sorted(self.brokers):
                self.brokers[i].apply_log_overrides()
                if self.brokers[i].alive:
                    self.brokers[i].schedule_tasks()
            self.scheduler.cancel(self._controller_task)
            self._controller_task = self.scheduler.schedule_periodic(new.controller_check_interval_ms,
                                                                     self.controller.tick, name="controller-check")
            target_name = "cluster"
        elif scope == "topic":
            meta = self.controller.topics[target]
            meta.config = checked
            meta.config_changes = {**meta.config_changes, **changes}
            if self.config.kraft:
                self.controller.set_topic_config(target, changes)
            for i in sorted(self.brokers):
                self.brokers[i].apply_log_overrides()
            target_name = str(target)
        else:
            b = self._broker(target)
            b.log_overrides = checked
            b.apply_log_overrides()
            target_name = str(b.id)
        self.events.emit(ConfigChanged(scope, target_name, {k: v for k, v in sorted(changes.items())}))
        if scope in ("topic", "cluster"):
            # e.g. unclean.leader.election.enable turned on: offline partitions may now get a leader.
            self.controller.elect_offline()
        if scope in ("topic", "cluster"):
            # A lower min.insync.replicas may let a leader's HW move now (KAFKA-15583 guard).
            for pm in self.controller.all_partitions():
                leader = self.brokers.get(pm.leader)
                part = leader.partitions.get((pm.topic, pm.partition)) if leader is not None and leader.alive else None
                if part is not None:
                    part.maybe_increment_hw("config_change")

    # ---- time ------------------------------------------------------------------------
    def advance(self, ms: int) -> int:
        _int("ms", ms, 0)
        return self.scheduler.advance(ms)

    def run_until_idle_produce(self, request_id: int, limit_ms: int = 120000, step_ms: int = 1) -> ProduceResult | None:
        """Advance in ``step_ms`` steps until ``produce_results`` has ``request_id`` (or ``limit_ms``)."""
        end = self.now_ms() + limit_ms
        while request_id not in self.produce_results and self.now_ms() < end:
            self.scheduler.advance(step_ms)
        return self.produce_results.get(request_id)

    # ---- views -----------------------------------------------------------------------
    def replica(self, broker: int, topic: str, partition: int):
        """The broker-local Partition object (None if that broker is down or has no replica)."""
        return self._broker(broker).partitions.get((topic, partition))

    def log_values(self, broker: int, topic: str, partition: int) -> list:
        """[(offset, value, leader_epoch)] of a replica's whole log, for tests and checkers."""
        part = self.replica(broker, topic, partition)
        if part is None:
            return []
        out = []
        for batch_epoch, rec in self._records_with_epochs(part.log):
            out.append((rec.offset, rec.value, batch_epoch))
        return out

    @staticmethod
    def _records_with_epochs(log: Any) -> list:
        from engine.records import iter_batches
        out = []
        offset = log.log_start_offset
        while offset < log.log_end_offset:
            info = log.read(offset, 1 << 30, trace=False)
            if not info.batches:
                break
            for _, batch in iter_batches(info.records):
                for rec in batch.records:
                    out.append((batch.partition_leader_epoch, rec))
                offset = batch.last_offset + 1
        return out

    def state(self) -> dict:
        topics = {}
        for name in sorted(self.controller.topics):
            meta = self.controller.topics[name]
            parts = []
            for pm in meta.partitions:
                replicas = {}
                for r in pm.replicas:
                    b = self.brokers[r]
                    part = b.partitions.get((pm.topic, pm.partition)) if b.alive else None
                    if part is None:
                        replicas[str(r)] = None
                        continue
                    st = part.state()
                    st["records"] = [[rec.offset, digest(rec.value, rec.key), e]
                                     for e, rec in self._records_with_epochs(part.log)]
                    replicas[str(r)] = st
                parts.append({**pm.to_dict(), "partition": pm.partition, "replica_states": replicas})
            topics[name] = {"config": {k: v for k, v in sorted(meta.config_changes.items())},
                            "partitions": parts}
        return {
            "time_ms": self.now_ms(),
            "seed": self.seed,
            "config": self.config.to_dict(),
            "controller": self.controller.state(),
            "brokers": {str(i): self.brokers[i].state() for i in sorted(self.brokers)},
            "topics": topics,
            "network": {"latency_ms": self.network.latency_ms, "faults": self.network.faults(),
                        "sent": self.network.sent, "delivered": self.network.delivered,
                        "dropped": self.network.dropped},
            "produce_results": {str(k): v.to_dict() for k, v in sorted(self.produce_results.items())},
        }

    # ---- snapshots --------------------------------------------------------------------
    def snapshot(self) -> bytes:
        """Pickle of the whole cluster plus every file of the data directory."""
        return pickle.dumps({"cluster": self, "files": self.disk.capture(), "durable": dict(self.disk._durable)},
                            protocol=pickle.HIGHEST_PROTOCOL)

    @classmethod
    def restore(cls, blob: bytes, disk_root: Any) -> "Cluster":
        """A live copy of a snapshot whose files live under ``disk_root``."""
        data = pickle.loads(blob)
        cluster: Cluster = data["cluster"]
        disk = cluster.disk
        disk.relocate(disk_root)
        disk.restore(data["files"], data["durable"])
        return cluster
