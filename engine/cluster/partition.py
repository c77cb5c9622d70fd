"""One broker's replica of one partition (Kafka's ``Partition``): the leader side.

As leader it keeps a :class:`RemoteReplica` per follower (remote LEO, last fetch time,
the leader's LEO at that fetch, ``lastCaughtUpTimeMs``), answers Fetch and
OffsetsForLeaderEpoch requests, moves the high watermark to the lowest LEO in the
(maximal) ISR (reference §5.3, with the KAFKA-15583 min-ISR guard), proposes ISR
shrinks/expansions to the controller (AlterPartition), parks fetches with nothing new
(DelayedFetch) and acks=all produces (DelayedProduce, §8.2). With ``replica.fetch.sessions`` a
follower's fetch arrives instead as one KIP-227 session fetch for every partition it follows on
this broker (broker.py ``handle_session_fetch``); each partition's part of it is
:meth:`Partition.fetch_as_leader` and :meth:`Partition.fetch_answer`, and a session fetch with
nothing new anywhere waits in the fetch purgatory (broker.py ``DelayedSessionFetch``). As follower it hands the
work to its :class:`~engine.cluster.replica_fetcher.ReplicaFetcher`.

The HW placed in a fetch response is captured *before* the fetch moves the follower's
remote LEO (§5.1) — the one-round-trip lag behind the KIP-101 scenarios.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from engine.timer import DelayedOperation
from engine.errors import KafkaError, NotEnoughReplicasAfterAppendError, NotEnoughReplicasError, RequestTimedOutError

from .events import (AlterPartitionSent, BecameFollower, BecameLeader, EpochRequestAnswered, FetchAnswered,
                     FetchDiverging, FetchParked, HighWatermarkChanged, LeoChanged, ProduceAppended,
                     ProduceDuplicate, ProduceFailed,
                     ProduceReceived, ProduceWaiting, RemoteLeoUpdated)
from .host import ReplicaHost
from .network import (AlterPartitionRequest, FetchRequest, FetchResponse, LeaderAndIsr,
                      OffsetsForLeaderEpochRequest, OffsetsForLeaderEpochResponse, ProduceRequest, ProduceResponse)
from .replica_fetcher import ReplicaFetcher


__all__ = ["Partition", "RemoteReplica", "digest", "record_digest", "record_digests"]

UNKNOWN_OFFSET = -1
_blake2b = hashlib.blake2b


def record_digest(key: bytes | None, value: bytes | None) -> str:
    """Identity of a record's content: BLAKE2b over (key, value), 12 hex digits (48 bits); a
    marker before each part tells null from empty, and the key's length bounds it. One
    hashing call per record. Events, ``state()``, run summaries and the checker all use this
    one function."""
    k = b"\x00" if key is None else b"\x01%d:%b" % (len(key), key)
    return _blake2b(k + (b"\x00" if value is None else b"\x01" + value), digest_size=6).hexdigest()


def record_digests(key: bytes | None, values) -> list[str]:
    """``record_digest(key, v)`` of each value of one produce request."""
    k = b"\x00" if key is None else b"\x01%d:%b" % (len(key), key)
    k0, k1 = k + b"\x00", k + b"\x01"
    return [_blake2b(k0 if v is None else k1 + v, digest_size=6).hexdigest() for v in values]


def digest(value: bytes | None, key: bytes | None = None) -> str:
    """``record_digest(key, value)`` with the value first (most records have no key)."""
    return record_digest(key, value)


@dataclass
class RemoteReplica:
    """What the leader knows about one follower (Kafka's ``Replica``)."""

    broker: int
    leo: int = UNKNOWN_OFFSET
    last_fetch_ms: int = 0
    last_fetch_leader_leo: int = 0
    last_caught_up_ms: int = 0


class DelayedFetch(DelayedOperation):
    """A follower fetch that found nothing new, waiting in the broker's fetch purgatory (Kafka's
    ``DelayedFetch``) on its own timing wheel: completed when the leader's log end passes the
    fetch offset or its HW moves (checked when the leader appends and when the HW moves), when
    this replica stops leading (NOT_LEADER_OR_FOLLOWER), or at ``max_wait_ms`` with what there is."""

    def __init__(self, partition: "Partition", src: int, request: FetchRequest, parked_ms: int) -> None:
        super().__init__(request.max_wait_ms, name=f"fetch#{request.replica_id}@{request.fetch_offset}")
        self.partition = partition
        self.src = src
        self.request = request
        self.parked_ms = parked_ms
        self.hw_at_park = partition.log.high_watermark
        self.leader_epoch = partition.leader_epoch

    def try_complete(self) -> bool:
        p = self.partition
        log = p.log
        if p.role != "leader" or p.leader_epoch != self.leader_epoch or log._log_end_offset > self.request.fetch_offset \
                or log.high_watermark != self.hw_at_park:
            return self.force_complete()
        return False

    def on_complete(self) -> None:
        self.partition.complete_fetch(self)


class DelayedProduce(DelayedOperation):
    """An acks=all produce waiting in the broker's produce purgatory for HW >= ``required_offset``
    (Kafka's ``DelayedProduce``): completed when the HW passes it, when this replica stops
    leading (NOT_LEADER_OR_FOLLOWER), or by its timeout on the timing wheel (REQUEST_TIMED_OUT)."""

    def __init__(self, partition: "Partition", request: ProduceRequest, src: int, base_offset: int,
                 last_offset: int, required_offset: int) -> None:
        super().__init__(request.timeout_ms, name=f"produce#{request.request_id}")
        self.partition = partition
        self.request = request
        self.src = src
        self.base_offset = base_offset
        self.last_offset = last_offset
        self.required_offset = required_offset
        self.leader_epoch = partition.leader_epoch

    def try_complete(self) -> bool:
        p = self.partition
        if p.role != "leader" or p.leader_epoch != self.leader_epoch or p.log.high_watermark >= self.required_offset:
            return self.force_complete()
        return False

    def on_complete(self) -> None:
        self.partition.complete_produce(self)


@dataclass
class PendingIsr:
    """An AlterPartition sent to the controller and not yet answered."""
    isr: tuple
    sent_ms: int
    expansion: bool


class Partition:
    """Replica state of ``topic-partition`` on ``broker``; the Log holds the data."""

    def __init__(self, broker: ReplicaHost, topic: str, partition: int, log: Any) -> None:
        self.broker = broker
        self.topic = topic
        self.partition = partition
        self.log = log
        self.role = "none"              # "leader" | "follower" | "none"
        self.leader: int | None = None
        self.leader_epoch = -1
        self.partition_epoch = -1
        self.isr: tuple = ()
        self.replicas: tuple = ()
        self.remotes: dict[int, RemoteReplica] = {}
        self.pending_isr: PendingIsr | None = None
        self.fetcher = ReplicaFetcher(self)
        # The request path's constants, kept on the replica (see __getattr__ for older pickles):
        # what the broker's purgatories watch it under, and the cluster's event log.
        self.key = (topic, partition)
        self._events = broker.cluster.events

    def __getattr__(self, name: str) -> Any:
        # A replica pickled before these were kept: derive them once.
        if name == "key":
            self.key = (self.topic, self.partition)
            return self.key
        if name == "_events":
            self._events = self.broker.cluster.events
            return self._events
        raise AttributeError(name)

    # ---- helpers ------------------------------------------------------------------
    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"

    @property
    def leo(self) -> int:
        return self.log.log_end_offset

    @property
    def hw(self) -> int:
        return self.log.high_watermark

    def now(self) -> int:
        return self.broker.cluster.clock.now_ms()

    def emit(self, ev: Any) -> None:
        self.broker.events.emit(ev)

    def emit_fields(self, cls: Any, *values: Any) -> None:
        """``emit(cls(*values))`` without building the event while nobody listens for it."""
        self._events.emit_fields(cls, *values)

    @property
    def cfg(self):
        return self.broker.cluster.config

    def topic_config(self):
        return self.broker.cluster.controller.topic_config(self.topic)

    def effective_min_isr(self) -> int:
        return min(self.broker.cluster.controller.topic_config(self.topic).min_insync_replicas,
                   max(1, len(self.replicas)))

    def maximal_isr(self) -> tuple:
        if self.pending_isr is not None and self.pending_isr.expansion:
            return tuple(sorted(set(self.isr) | set(self.pending_isr.isr)))
        return self.isr

    def set_hw(self, new: int, reason: str, isr_leos: dict | None = None) -> bool:
        log = self.log
        old = log.high_watermark
        if new == old:
            return False
        hw = log.update_high_watermark(new)
        if hw != old:
            self._events.emit_fields(HighWatermarkChanged, self.broker.id, self.topic, self.partition,
                                     old, hw, self.role, reason, isr_leos or {})
            return True
        return False

    def leo_changed(self, old: int, reason: str) -> None:
        leo = self.log._log_end_offset
        if leo != old:
            self._events.emit_fields(LeoChanged, self.broker.id, self.topic, self.partition, old, leo, self.role,
                                     reason)

    # ---- metadata from the controller ----------------------------------------------
    def apply_state(self, msg: LeaderAndIsr) -> None:
        """Apply a LeaderAndIsr: a role change on a new leader epoch (or a leader change
        at the same epoch, which is how an offline partition is announced), else an ISR update."""
        if msg.leader_epoch < self.leader_epoch or (
                msg.leader_epoch == self.leader_epoch and msg.partition_epoch < self.partition_epoch):
            return   # stale (reordered or resent) metadata
        new_leader = None if msg.leader < 0 else msg.leader
        self.replicas = tuple(msg.replicas)
        if msg.leader_epoch > self.leader_epoch or new_leader != self.leader or \
                (self.role == "none" and new_leader is not None):
            self.partition_epoch = msg.partition_epoch
            self.isr = tuple(msg.isr)
            self.pending_isr = None
            if new_leader == self.broker.id:
                self.make_leader(msg)
            else:
                self.make_follower(msg, new_leader)
            return
        if msg.partition_epoch >= self.partition_epoch:
            self.partition_epoch = msg.partition_epoch
            self.isr = tuple(msg.isr)
            # Any word from the controller settles a pending AlterPartition: either it was
            # applied (this is the new ISR) or refused/overtaken (propose again if still needed).
            self.pending_isr = None
            if self.role == "leader":
                self.maybe_increment_hw("isr_change")

    def make_leader(self, msg: LeaderAndIsr) -> None:
        now = self.now()
        self.fetcher.stop()
        self.role = "leader"
        self.leader = self.broker.id
        self.leader_epoch = msg.leader_epoch
        # KIP-279: the new leader records where its epoch starts before writing anything.
        self.log.assign_epoch_start_offset(self.leader_epoch)
        self.remotes = {}
        for r in self.replicas:
            if r != self.broker.id:
                self.remotes[r] = RemoteReplica(r, UNKNOWN_OFFSET, 0, 0, now if r in self.isr else 0)
        self.emit(BecameLeader(self.broker.id, self.topic, self.partition, self.leader_epoch, self.leo, self.hw,
                               list(self.isr)))
        self.maybe_increment_hw("became_leader")
        txns = getattr(self.broker.cluster, "transactions", None)
        if txns is not None and self.topic == txns.topic:
            # Kafka's coordinator loads its transactions when it is elected (onElection).
            self.broker.scheduler.schedule(0, txns.load_on_election, self.broker.id, self.partition,
                                           name="txn-coordinator-load")

    def make_follower(self, msg: LeaderAndIsr, leader: int | None) -> None:
        was_leader = self.role == "leader"
        self.role = "follower"
        self.leader = leader
        self.leader_epoch = msg.leader_epoch
        self.remotes = {}
        if was_leader:
            # Waiting produces see the lost leadership and answer NOT_LEADER_OR_FOLLOWER.
            self.broker.produce_purgatory.check_and_complete(self.key)
        self.wake_parked_fetches()      # parked fetches answer NOT_LEADER_OR_FOLLOWER
        self.emit(BecameFollower(self.broker.id, self.topic, self.partition, leader, self.leader_epoch, self.leo,
                                 self.hw, self.cfg.truncation))
        self.fetcher.become_follower(leader, self.leader_epoch)

    def stop(self) -> None:
        """The broker is going away (crash or shutdown): cancel timers, forget waiters."""
        self.fetcher.stop()
        # Waiting produces and fetches die with the broker's purgatories (Broker.stop_tasks):
        # nobody answers them.

    # ---- leader: high watermark -----------------------------------------------------
    def is_caught_up(self, r: RemoteReplica, now: int) -> bool:
        return r.leo == self.leo or now - r.last_caught_up_ms <= self.cfg.replica_lag_time_max_ms

    def maybe_increment_hw(self, reason: str) -> bool:
        if self.role != "leader":
            return False
        log = self.log
        leo = log._log_end_offset
        hw = log.high_watermark
        if leo <= hw:
            return False          # nothing above the HW: the min over the ISR cannot pass it
        pending = self.pending_isr
        maximal = self.isr if pending is None or not pending.expansion else self.maximal_isr()
        cluster = self.broker.cluster
        cfg = cluster.config
        now = cluster.clock._now_ms
        eligible = cluster.controller.is_eligible
        lag_max = cfg.replica_lag_time_max_ms
        remotes = self.remotes
        # The minimum LEO over the replicas that count (the maximal ISR, and eligible followers
        # caught up within replica.lag.time.max.ms): the first one at or below the HW settles it.
        candidate = leo
        for rid, r in remotes.items():
            rleo = r.leo
            if rid in maximal or (eligible(rid) and rleo >= 0 and
                                  (rleo == leo or now - r.last_caught_up_ms <= lag_max)):
                if rleo <= hw:
                    return False
                if rleo < candidate:
                    candidate = rleo
        if cfg.hw_min_isr_guard and len(self.isr) < min(
                cluster.controller.topic_config(self.topic).min_insync_replicas, max(1, len(self.replicas))):
            return False
        # The HW moves: the event names every LEO that counted, in broker order (the same test).
        leos = {str(self.broker.id): leo}
        for rid in sorted(remotes):
            r = remotes[rid]
            rleo = r.leo
            if rid in maximal or (eligible(rid) and rleo >= 0 and
                                  (rleo == leo or now - r.last_caught_up_ms <= lag_max)):
                leos[str(rid)] = rleo
        self.set_hw(candidate, "isr_leo", leos)
        self.on_hw_increased()
        return True

    def _follower_in_maximal_isr(self) -> bool:
        """Some follower this leader keeps a remote replica for is in the maximal ISR (so it counts
        toward the HW, whatever its LEO)."""
        pending = self.pending_isr
        maximal = self.isr if pending is None or not pending.expansion else self.maximal_isr()
        for rid in self.remotes:
            if rid in maximal:
                return True
        return False

    def on_hw_increased(self) -> None:
        self.broker.produce_purgatory.check_and_complete(self.key)
        self.wake_parked_fetches()

    # ---- leader: fetch ---------------------------------------------------------------
    def error_for_epoch(self, leader_epoch: int) -> str | None:
        if self.role != "leader":
            return "NOT_LEADER_OR_FOLLOWER"
        if leader_epoch < self.leader_epoch:
            return "FENCED_LEADER_EPOCH"
        if leader_epoch > self.leader_epoch:
            return "UNKNOWN_LEADER_EPOCH"
        return None

    def _record_follower_fetch(self, req: FetchRequest, fetch_offset: int, leo: int, now: int) -> int:
        """A follower's valid fetch at the leader, in both fetch paths: record its remote LEO and
        caught-up time (§5.2), maybe expand the ISR, move the HW. Returns the HW from *before*
        this fetch moved the remote LEO, which is what the response carries (§5.1)."""
        hw_before = self.log.high_watermark
        r = self.remotes[req.replica_id]
        old = r.leo
        if fetch_offset >= leo:
            r.last_caught_up_ms = max(r.last_caught_up_ms, now)
        elif fetch_offset >= r.last_fetch_leader_leo:
            r.last_caught_up_ms = max(r.last_caught_up_ms, r.last_fetch_ms)
        r.leo = fetch_offset
        r.last_fetch_ms = now
        r.last_fetch_leader_leo = leo
        if old != fetch_offset:
            self._events.emit_fields(RemoteLeoUpdated, self.broker.id, req.replica_id, self.topic, self.partition,
                                     old, fetch_offset, r.last_caught_up_ms)
        if r.broker not in self.isr and self.pending_isr is None:
            self.maybe_expand_isr(r)
        self.maybe_increment_hw("follower_fetch")
        return hw_before

    def handle_fetch(self, src: int, req: FetchRequest) -> None:
        now = self.broker.cluster.clock._now_ms
        log = self.log
        leo = log._log_end_offset
        if self.role == "leader" and req.leader_epoch == self.leader_epoch:
            error = None
        else:
            error = self.error_for_epoch(req.leader_epoch)
        if error is None and req.replica_id not in self.remotes:
            error = "NOT_LEADER_OR_FOLLOWER"
        if error is None and req.last_fetched_epoch >= 0:
            error = self.check_last_fetched_epoch(src, req)
            if error == "":
                return   # answered with DivergingEpoch
        fetch_offset = req.fetch_offset
        if error is None and not (log.log_start_offset <= fetch_offset <= leo):
            error = "OFFSET_OUT_OF_RANGE"
        if error is not None:
            self.respond_fetch(src, req, b"", (), self.hw, error, 0)
            return
        hw_before = self._record_follower_fetch(req, fetch_offset, leo, now)
        if fetch_offset < leo or req.max_wait_ms <= 0:
            self.answer_fetch(src, req, hw_before, 0)
            return
        if self.broker.fetch_purgatory.try_complete_else_watch(DelayedFetch(self, src, req, now), [self.key]):
            return
        self.broker.fetch_timer_driver.arm()
        self._events.emit_fields(FetchParked, self.broker.id, req.replica_id, self.topic, self.partition,
                                 fetch_offset, req.max_wait_ms)

    def check_last_fetched_epoch(self, src: int, req: FetchRequest) -> str | None:
        """Fetch v12 (Kafka's ``Partition.readRecords``): where does the follower's last
        fetched epoch end here? An error name; "" when the fetch was answered with
        DivergingEpoch (the follower's epoch is unknown here or ends below its fetch
        offset) — then without records and without moving the follower's remote LEO;
        None to read normally."""
        epoch, end = self.log.leader_epoch_cache.end_offset_for(req.last_fetched_epoch, self.leo)
        if epoch == UNKNOWN_OFFSET or end == UNKNOWN_OFFSET:
            return "OFFSET_OUT_OF_RANGE"      # cannot place the follower's last fetched epoch
        if req.fetch_offset < self.log.log_start_offset:
            return "OFFSET_OUT_OF_RANGE"
        if epoch < req.last_fetched_epoch or end < req.fetch_offset:
            self.emit(FetchDiverging(self.broker.id, req.replica_id, self.topic, self.partition, req.fetch_offset,
                                     req.last_fetched_epoch, epoch, end))
            self.broker.send(src, FetchResponse(self.broker.id, self.topic, self.partition, req.fetch_offset, b"",
                                                self.hw, self.log.log_start_offset, self.leo, self.leader_epoch,
                                                None, req.session, epoch, end))
            return ""
        return None

    def answer_fetch(self, src: int, req: FetchRequest, hw: int, waited_ms: int) -> None:
        try:
            info = self.log.read(req.fetch_offset, max(1, req.max_bytes), trace=False)
        except KafkaError as exc:  # truncated under a parked fetch
            self.respond_fetch(src, req, b"", (), self.hw, getattr(exc, "name", "UNKNOWN_SERVER_ERROR"), waited_ms)
            return
        self.respond_fetch(src, req, info.records, info.batches, hw, None, waited_ms)

    def respond_fetch(self, src: int, req: FetchRequest, records: bytes, batches: tuple, hw: int,
                      error: str | None, waited_ms: int) -> None:
        if batches:
            count = 0
            for b in batches:
                count += b.records_count
            first, last = batches[0].base_offset, batches[-1].last_offset
        else:
            count, first, last = 0, None, None
        log = self.log
        leo, start = log._log_end_offset, log.log_start_offset
        broker = self.broker
        self._events.emit_fields(FetchAnswered, broker.id, req.replica_id, self.topic, self.partition,
                                 req.fetch_offset, count, first, last, hw, leo, start, error, waited_ms)
        resp = FetchResponse(broker.id, self.topic, self.partition, req.fetch_offset, bytes(records), hw,
                             start, leo, self.leader_epoch, error, req.session)
        broker.send(src, resp)

    def complete_fetch(self, d: DelayedFetch) -> None:
        """Answer a parked fetch whose wait is over: at expiry with what there is, on lost
        leadership with NOT_LEADER_OR_FOLLOWER, else with the new data or HW."""
        waited = self.now() - d.parked_ms
        if self.role != "leader" or self.leader_epoch != d.leader_epoch:
            if not d.expired:
                self.respond_fetch(d.src, d.request, b"", (), self.hw, "NOT_LEADER_OR_FOLLOWER", waited)
            return
        self.answer_fetch(d.src, d.request, self.hw, waited)

    # ---- leader: KIP-227 session fetches (replica.fetch.sessions) ---------------------------
    def fetch_as_leader(self, req: FetchRequest, now: int) -> tuple:
        """One partition of a follower's session fetch, as leader (Kafka's ``Partition.fetchRecords``
        for a follower): check the epoch and the follower's last fetched epoch, record its
        remote LEO and caught-up time, maybe expand the ISR and move the HW. Returns
        (kind, value): ("error", name), ("diverging", (epoch, end offset)), ("data", HW before
        this fetch moved the remote LEO, §5.1) when there are records past the fetch offset, or
        ("wait", that HW) when there is nothing new."""
        log = self.log
        leo = log._log_end_offset
        error = self.error_for_epoch(req.leader_epoch)
        if error is None and req.replica_id not in self.remotes:
            error = "NOT_LEADER_OR_FOLLOWER"
        if error is None and req.last_fetched_epoch >= 0:
            diverging = self.diverging_for(req)
            if diverging is not None:
                return diverging
        fetch_offset = req.fetch_offset
        if error is None and not (log.log_start_offset <= fetch_offset <= leo):
            error = "OFFSET_OUT_OF_RANGE"
        if error is not None:
            return "error", error
        hw_before = self._record_follower_fetch(req, fetch_offset, leo, now)
        return ("data" if fetch_offset < leo else "wait"), hw_before

    def diverging_for(self, req: FetchRequest) -> tuple | None:
        """Fetch v12 (Kafka's ``Partition.readRecords``): where does the follower's last
        fetched epoch end here? ("error", name) when it cannot be placed, ("diverging",
        (epoch, end)) when it is unknown here or ends below the fetch offset — answered then
        without records and without moving the follower's remote LEO — or None to read normally."""
        epoch, end = self.log.leader_epoch_cache.end_offset_for(req.last_fetched_epoch, self.leo)
        if epoch == UNKNOWN_OFFSET or end == UNKNOWN_OFFSET:
            return "error", "OFFSET_OUT_OF_RANGE"      # cannot place the follower's last fetched epoch
        if req.fetch_offset < self.log.log_start_offset:
            return "error", "OFFSET_OUT_OF_RANGE"
        if epoch < req.last_fetched_epoch or end < req.fetch_offset:
            self.emit(FetchDiverging(self.broker.id, req.replica_id, self.topic, self.partition, req.fetch_offset,
                                     req.last_fetched_epoch, epoch, end))
            return "diverging", (epoch, end)
        return None

    def fetch_answer(self, req: FetchRequest, kind: str, value: Any, request: int) -> tuple:
        """The answer row for one partition of a session fetch, and what the session and the
        event need: (FetchResponse, record count, first offset, last offset). ``kind``/``value``
        as :meth:`fetch_as_leader` returns them; "wait" and "data" read from the fetch offset
        with ``value`` as the HW."""
        log = self.log
        leo, start = log._log_end_offset, log.log_start_offset
        if kind == "error":
            return (FetchResponse(self.broker.id, self.topic, self.partition, req.fetch_offset, b"", self.hw, start,
                                  leo, self.leader_epoch, value, request), 0, None, None)
        if kind == "diverging":
            return (FetchResponse(self.broker.id, self.topic, self.partition, req.fetch_offset, b"", self.hw, start,
                                  leo, self.leader_epoch, None, request, value[0], value[1]), 0, None, None)
        records, count, first, last = b"", 0, None, None
        if req.fetch_offset < leo:
            try:
                info = log.read(req.fetch_offset, max(1, req.max_bytes), trace=False)
            except KafkaError as exc:  # truncated under a parked fetch
                return (FetchResponse(self.broker.id, self.topic, self.partition, req.fetch_offset, b"", self.hw,
                                      start, leo, self.leader_epoch, getattr(exc, "name", "UNKNOWN_SERVER_ERROR"),
                                      request), 0, None, None)
            batches = info.batches
            if batches:
                for b in batches:
                    count += b.records_count
                first, last = batches[0].base_offset, batches[-1].last_offset
                records = bytes(info.records)
        return (FetchResponse(self.broker.id, self.topic, self.partition, req.fetch_offset, records, value, start, leo,
                              self.leader_epoch, None, request), count, first, last)

    def emit_answered(self, follower: int, row: FetchResponse, count: int, first: Any, last: Any,
                      waited_ms: int) -> None:
        self._events.emit_fields(FetchAnswered, self.broker.id, follower, self.topic, self.partition,
                                 row.fetch_offset, count, first, last, row.high_watermark, row.leader_leo,
                                 row.log_start_offset, row.error, waited_ms)

    @property
    def parked_fetches(self) -> int:
        """Fetches of this partition waiting in the broker's fetch purgatory."""
        return self.broker.fetch_purgatory.watched(self.key)

    def wake_parked_fetches(self) -> None:
        """New data, a moved HW or lost leadership: complete the parked fetches that can go."""
        self.broker.fetch_purgatory.check_and_complete(self.key)

    def handle_epoch_request(self, src: int, req: OffsetsForLeaderEpochRequest) -> None:
        error = self.error_for_epoch(req.current_leader_epoch)
        if error is None:
            epoch, end = self.log.leader_epoch_cache.end_offset_for(req.epoch, self.leo)
        else:
            epoch, end = -1, -1
        self.emit(EpochRequestAnswered(self.broker.id, req.replica_id, self.topic, self.partition, req.epoch,
                                       epoch, end))
        self.broker.send(src, OffsetsForLeaderEpochResponse(self.broker.id, self.topic, self.partition, req.epoch,
                                                            epoch, end, error, req.session))

    # ---- leader: ISR -------------------------------------------------------------
    def epoch_start_offset(self) -> int:
        for e in reversed(self.log.leader_epoch_cache.entries):
            if e.epoch == self.leader_epoch:
                return e.start_offset
        return 0

    def maybe_expand_isr(self, r: RemoteReplica) -> None:
        if r.broker in self.isr or self.pending_isr is not None:
            return
        if r.leo >= self.hw and r.leo >= self.epoch_start_offset() and \
                self.broker.cluster.controller.is_eligible(r.broker):
            self.propose_isr(tuple(sorted(set(self.isr) | {r.broker})), "caught_up", (), expansion=True)

    def maybe_shrink_isr(self) -> None:
        if self.role != "leader":
            return
        now = self.now()
        if self.pending_isr is not None:
            if now - self.pending_isr.sent_ms < self.cfg.request_timeout_ms:
                return
            self.pending_isr = None   # the controller never answered; propose again
        out = []
        for rid in self.isr:
            if rid == self.broker.id:
                continue
            r = self.remotes.get(rid)
            if r is None or not self.is_caught_up(r, now):
                out.append((rid, now - (r.last_caught_up_ms if r else 0)))
        if out:
            removed = {rid for rid, _ in out}
            new_isr = tuple(x for x in self.isr if x not in removed)
            self.propose_isr(new_isr, "lagging", tuple(out), expansion=False)

    def propose_isr(self, new_isr: tuple, reason: str, lag: tuple, expansion: bool) -> None:
        self.pending_isr = PendingIsr(new_isr, self.now(), expansion)
        self.emit(AlterPartitionSent(self.broker.id, self.topic, self.partition, list(new_isr), self.leader_epoch,
                                     self.partition_epoch))
        self.broker.send_to_controller(AlterPartitionRequest(self.broker.id, self.topic, self.partition,
                                                             self.leader_epoch, self.partition_epoch, new_isr,
                                                             reason, lag))

    # ---- leader: produce ---------------------------------------------------------
    def produce(self, src: int, req: ProduceRequest, records: list) -> None:
        digests = req.digests
        if digests is None:
            digests = record_digests(req.key, req.values)
        events = self._events
        events.emit_fields(ProduceReceived, req.request_id, self.broker.id, self.topic, self.partition, req.acks,
                           len(req.values), digests)
        if self.role != "leader":
            self.reply_produce(src, req, "NOT_LEADER_OR_FOLLOWER",
                               f"broker {self.broker.id} is not the leader of {self.name}", None, None, False)
            return
        if req.acks == -1 and len(self.isr) < self.effective_min_isr():
            exc = NotEnoughReplicasError(
                f"{self.name}: ISR {list(self.isr)} has {len(self.isr)} replica(s), fewer than min.insync.replicas="
                f"{self.effective_min_isr()}; nothing was written")
            self.reply_produce(src, req, exc.name, str(exc), None, None, False)
            return
        log = self.log
        old = log._log_end_offset
        try:
            info = log.append_as_leader(records, self.leader_epoch, producer_id=req.producer_id,
                                        producer_epoch=req.producer_epoch, base_sequence=req.base_sequence,
                                        is_transactional=req.is_transactional)
        except KafkaError as exc:
            self.reply_produce(src, req, exc.name, str(exc), None, None, False)
            return
        if info.duplicate:
            self.emit(ProduceDuplicate(req.request_id, self.broker.id, self.topic, self.partition, req.producer_id,
                                       req.producer_epoch, req.base_sequence, info.first_offset, info.last_offset))
        else:
            events.emit_fields(ProduceAppended, req.request_id, self.broker.id, self.topic, self.partition,
                               info.first_offset, info.last_offset, self.leader_epoch, digests)
            self.leo_changed(old, "append")
            self.wake_parked_fetches()
            # A single-replica ISR commits at once. With a follower in the (maximal) ISR the HW
            # cannot move on an append: the minimum over the ISR is at most that follower's LEO,
            # which is at most the log end before this append; so when the HW is already there,
            # the check is skipped (it could only answer "no").
            if log.high_watermark < old or not self._follower_in_maximal_isr():
                self.maybe_increment_hw("append")
        if req.acks == -1:
            required = info.last_offset + 1
            d = DelayedProduce(self, req, src, info.first_offset, info.last_offset, required)
            if not self.broker.produce_purgatory.try_complete_else_watch(d, [self.key]):
                self.broker.produce_timer_driver.arm()
                events.emit_fields(ProduceWaiting, req.request_id, self.broker.id, self.topic, self.partition,
                                   required, req.timeout_ms)
        elif req.acks == 1:
            self.reply_produce(src, req, None, "", info.first_offset, info.last_offset, True)

    def complete_produce(self, d: DelayedProduce) -> None:
        """Answer a produce whose wait is over, saying why it ended."""
        if d.expired:
            exc = RequestTimedOutError(
                f"{self.name}: HW {self.hw} did not reach {d.required_offset} within {d.request.timeout_ms} ms "
                f"(ISR {list(self.isr)})")
            self.reply_produce(d.src, d.request, exc.name, str(exc), d.base_offset, d.last_offset, True)
        elif self.role != "leader" or self.leader_epoch != d.leader_epoch:
            self.reply_produce(d.src, d.request, "NOT_LEADER_OR_FOLLOWER",
                               f"broker {self.broker.id} is no longer the leader", d.base_offset, d.last_offset, True)
        elif len(self.maximal_isr()) < self.effective_min_isr():
            exc = NotEnoughReplicasAfterAppendError(
                f"{self.name}: records {d.base_offset}..{d.last_offset} are committed but the ISR "
                f"{list(self.maximal_isr())} shrank below min.insync.replicas={self.effective_min_isr()}")
            self.reply_produce(d.src, d.request, exc.name, str(exc), d.base_offset, d.last_offset, True)
        else:
            self.reply_produce(d.src, d.request, None, "", d.base_offset, d.last_offset, True)

    def reply_produce(self, src: int, req: ProduceRequest, error: str | None, message: str,
                      base: int | None, last: int | None, appended: bool) -> None:
        if req.acks == 0:
            if error is not None:
                self.emit(ProduceFailed(req.request_id, self.broker.id, self.topic, self.partition, 0, error,
                                        message + " (acks=0: the client is never told)", appended,
                                        record_digests(req.key, req.values)))
            return
        self.broker.send(src, ProduceResponse(req.request_id, self.broker.id, self.topic, self.partition, error,
                                              message, base, last, appended))

    # ---- view ----------------------------------------------------------------------
    def state(self) -> dict:
        cache = self.log.leader_epoch_cache.entries
        out = {
            "role": self.role, "leader": self.leader, "leader_epoch": self.leader_epoch,
            "partition_epoch": self.partition_epoch, "isr": list(self.isr),
            "pending_isr": list(self.pending_isr.isr) if self.pending_isr else None,
            "log_start_offset": self.log.log_start_offset, "leo": self.leo, "high_watermark": self.hw,
            "recovery_point": self.log.recovery_point,
            "epoch_cache": [[e.epoch, e.start_offset] for e in cache],
            "fetcher": self.fetcher.state(),
            "remotes": {str(k): {"leo": v.leo, "last_fetch_ms": v.last_fetch_ms,
                                 "last_caught_up_ms": v.last_caught_up_ms}
                        for k, v in sorted(self.remotes.items())},
            "waiting_produces": self.broker.produce_purgatory.watched(self.key), "parked_fetches": self.parked_fetches,
        }
        return out
