"""A broker process: its log directory ``broker-<id>/`` on the shared Disk, its
partition replicas, its periodic tasks and its network endpoint.

Log directory layout (reference §1.1)::

    broker-<id>/
      meta.properties                    version=1, node.id, directory.id, cluster.id (see log_dir.py)
      .kafka_cleanshutdown               {"version":0,"brokerEpoch":N}, only after a clean shutdown
      recovery-point-offset-checkpoint   "topic partition offset" lines (text format §1.2)
      replication-offset-checkpoint      "topic partition high-watermark" lines
      log-start-offset-checkpoint        "topic partition log-start-offset" lines
      <topic>-<partition>/               one Log each (segments, indexes, leader-epoch-checkpoint,
                                         partition.metadata with the topic id)

A hard crash drops every in-memory object (the Logs, the replica states, timers) and,
with ``power_loss``, calls ``disk.crash("broker-<id>")`` so un-fsynced bytes vanish. A
restart reopens every partition directory: each Log runs recovery from the recovery
point in the checkpoint, and the HW comes back from replication-offset-checkpoint.
"""
from __future__ import annotations

import json
import random
from typing import Any

from engine.config import LogConfig
from engine.log.checkpoint import CheckpointFile
from engine.records import SimpleRecord
from engine.timer import DelayedOperation, DelayedOperationPurgatory, SystemTimer, TimerDriver

from .log_dir import META_PROPERTIES, check_partition_dirs, ensure_meta_properties, ensure_partition_metadata
from .events import BrokerCrashed, BrokerShutdown, BrokerStarted, CheckpointWritten, FetchParked, LogsLoaded
from .fetch_session import DEFAULT_EVICTION_MS, FetchSessionCache, new_context
from .host import ClusterHost
from .network import (AlterPartitionRequest, BrokerHeartbeat, FetchRequest, FetchResponse, LeaderAndIsr,
                      OffsetsForLeaderEpochRequest, OffsetsForLeaderEpochResponse, ProduceRequest, ProduceResponse,
                      SessionFetchRequest, SessionFetchResponse)
from .partition import Partition
from .replica_fetcher import SourceFetcher


__all__ = ["Broker", "CLEAN_SHUTDOWN_FILE", "HW_CHECKPOINT", "RECOVERY_CHECKPOINT", "LOG_START_CHECKPOINT"]

CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
HW_CHECKPOINT = "replication-offset-checkpoint"
RECOVERY_CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_START_CHECKPOINT = "log-start-offset-checkpoint"


def parse_partition_dir(name: str) -> tuple[str, int] | None:
    """``orders-0`` → ("orders", 0); the partition is the text after the last ``-``."""
    topic, sep, part = name.rpartition("-")
    if not sep or not topic or not part.isdigit():
        return None
    return topic, int(part)


class DelayedSessionFetch(DelayedOperation):
    """A follower's session fetch that found nothing new in any of its partitions, waiting in the
    broker's fetch purgatory (Kafka's ``DelayedFetch``) under every partition of the session:
    completed when one of them gets records past its fetch offset or a new HW, or stops
    being led here at the epoch it was fetched at, or at ``max_wait_ms`` with what there is."""

    def __init__(self, broker: "Broker", src: int, req: SessionFetchRequest, fctx, plan: list, now: int) -> None:
        first = plan[0][2]
        name = f"fetch#{req.replica_id}@{first.fetch_offset}" if len(plan) == 1 else \
            f"fetch#{req.replica_id}x{len(plan)}"
        super().__init__(req.max_wait_ms, name=name)
        self.broker = broker
        self.src = src
        self.req = req
        self.fctx = fctx
        # (key, partition, row, HW at park, leader epoch at park) per partition of the session
        self.plan = [(key, part, row, part.hw, part.leader_epoch) for key, part, row, _, _ in plan]
        self.parked_ms = now

    def try_complete(self) -> bool:
        partitions = self.broker.partitions
        for key, part, row, hw, epoch in self.plan:
            if partitions.get(key) is not part or part.role != "leader" or part.leader_epoch != epoch \
                    or part.log._log_end_offset > row.fetch_offset or part.log.high_watermark != hw:
                return self.force_complete()
        return False

    def on_complete(self) -> None:
        broker = self.broker
        if not broker.alive:
            return
        waited = broker.scheduler.now_ms() - self.parked_ms
        plan = []
        for key, part, row, _, epoch in self.plan:
            if broker.partitions.get(key) is not part or part.role != "leader" or part.leader_epoch != epoch:
                plan.append((key, part, row, "error", "NOT_LEADER_OR_FOLLOWER"))
            else:
                plan.append((key, part, row, "wait", part.hw))
        broker.answer_session_fetch(self.src, self.req, self.fctx, plan, waited)


class Broker:
    """One broker. ``alive`` and ``incarnation`` are what the network checks."""

    # KRaft: this broker's metadata node (the voter it hosts, or an observer); None under the
    # hybrid controller. Class-level so older snapshots load.
    raft: Any = None

    def __init__(self, cluster: ClusterHost, broker_id: int) -> None:
        self.cluster = cluster
        self.id = broker_id
        self.dir = f"broker-{broker_id}"
        self.alive = False
        self.incarnation = 0
        self.broker_epoch = -1
        self.partitions: dict[tuple[str, int], Partition] = {}
        self.tasks: list = []
        self.log_overrides: dict[str, Any] = {}   # per-broker LogConfig overrides (set_config scope="broker")
        self.follower_delay_ms = 0
        self.follower_paused = False
        self.started_ms = 0
        self.fetchers: dict[int, SourceFetcher] = {}     # follower side: one per source (leader) broker
        self._new_purgatories()

    def _new_purgatories(self) -> None:
        """A fresh produce and fetch purgatory, each on its own timing wheel (Kafka: tick 1 ms, 20 buckets), for
        each incarnation: what waited in a crashed broker's memory is gone with it."""
        timer = SystemTimer(self.scheduler.now_ms(), clock=self.scheduler.clock, name=f"broker-{self.id}.produce",
                            events=self.events if self.cluster.config.timer_events else None)
        self.produce_purgatory = DelayedOperationPurgatory("produce", timer)
        self.produce_timer_driver = TimerDriver(timer, self.scheduler, f"broker-{self.id} produce purgatory")
        # Fetches that found nothing new wait on a wheel of their own, as in Kafka (DelayedFetch);
        # its steps are events too (``timer`` = "broker-N.fetch"), for lesson 15's second wheel.
        timer = SystemTimer(self.scheduler.now_ms(), clock=self.scheduler.clock, name=f"broker-{self.id}.fetch",
                            events=self.events if self.cluster.config.timer_events else None)
        self.fetch_purgatory = DelayedOperationPurgatory("fetch", timer)
        self.fetch_timer_driver = TimerDriver(timer, self.scheduler, f"broker-{self.id} fetch purgatory")
        # KIP-227 incremental fetch sessions live in the broker's memory and die with it. Their
        # ids come from a generator of their own (seeded by the run's seed, this broker and its
        # incarnation), so serving sessions never moves the cluster's other random draws.
        self.fetch_sessions = FetchSessionCache(
            self.cluster.config.max_incremental_fetch_session_cache_slots, DEFAULT_EVICTION_MS,
            random.Random(f"fetch-sessions:{getattr(self.cluster, 'seed', 0)}:{self.id}:{self.incarnation}"))

    # ---- shortcuts ----------------------------------------------------------------
    @property
    def scheduler(self):
        return self.cluster.scheduler

    @property
    def events(self):
        return self.cluster.events

    @property
    def disk(self):
        return self.cluster.disk

    def send(self, dst: int, msg: Any) -> None:
        if self.alive:
            self.cluster.network.send(self.id, dst, msg)

    def send_to_controller(self, msg: Any) -> None:
        if self.raft is not None:
            # KRaft: the leader this broker's metadata node knows of (it may be stale).
            active = self.cluster.controller.broker_target(self.id)
        else:
            active = self.cluster.controller.active
        if active is not None:
            self.send(active, msg)

    def checkpoint(self, name: str) -> CheckpointFile:
        return CheckpointFile(self.disk, f"{self.dir}/{name}", (str, int, int))

    def log_config(self, topic: str) -> LogConfig:
        base = self.cluster.controller.topic_config(topic)
        return base.replace(**self.log_overrides) if self.log_overrides else base

    # ---- lifecycle -----------------------------------------------------------------
    def start(self, restart: bool) -> None:
        self.disk.mkdir(self.dir)
        meta, written = ensure_meta_properties(self.disk, self.dir, self.cluster, self.id, self.scheduler.now_ms())
        check_partition_dirs(self.disk, self.dir, self.cluster, [
            (name, parsed[0]) for name in self.disk.listdir(self.dir)
            if (parsed := parse_partition_dir(name)) is not None and parsed[0] in self.cluster.controller.topics])
        if written:
            self.events.emit(CheckpointWritten(self.id, META_PROPERTIES, [
                ["node.id", meta.node_id], ["directory.id", meta.directory_id], ["version", meta.version],
                ["cluster.id", meta.cluster_id]]))
        self.incarnation += 1
        self.alive = True
        self.started_ms = self.scheduler.now_ms()
        self._new_purgatories()
        marker = f"{self.dir}/{CLEAN_SHUTDOWN_FILE}"
        clean = self.disk.exists(marker)
        self.events.emit(BrokerStarted(self.id, self.incarnation, restart, clean))
        self._clean_start = clean
        try:
            self.load_logs()
        finally:
            self._clean_start = False
        if clean:
            # The marker is only valid for one start: a crash after this must recover.
            self.disk.delete(marker)
        if self.raft is not None:
            self.cluster.controller.start_node(self.id)
        self.schedule_tasks()

    def schedule_tasks(self) -> None:
        """(Re-)arm the periodic tasks with the current cluster config's intervals."""
        for t in self.tasks:
            self.scheduler.cancel(t)
        cfg = self.cluster.config
        sched = self.scheduler
        self.tasks = [
            sched.schedule_periodic(cfg.broker_heartbeat_interval_ms, self.heartbeat, initial_delay_ms=0,
                                    name=f"heartbeat-{self.id}"),
            sched.schedule_periodic(cfg.replica_high_watermark_checkpoint_interval_ms, self.checkpoint_high_watermarks,
                                    name=f"hw-checkpoint-{self.id}"),
            sched.schedule_periodic(cfg.log_flush_offset_checkpoint_interval_ms, self.checkpoint_recovery_points,
                                    name=f"recovery-checkpoint-{self.id}"),
            sched.schedule_periodic(cfg.log_flush_start_offset_checkpoint_interval_ms, self.checkpoint_log_starts,
                                    name=f"log-start-checkpoint-{self.id}"),
            sched.schedule_periodic(cfg.isr_check_interval_ms, self.isr_check, name=f"isr-expiration-{self.id}"),
        ]

    def open_log(self, topic: str, partition: int, recovery_point: int = 0, log_start_offset: int | None = None,
                 high_watermark: int | None = None) -> Any:
        from engine.log.log import Log
        log = Log(self.disk, f"{self.dir}/{topic}-{partition}", topic, partition, self.log_config(topic),
                  self.scheduler, self.events, broker=self.id, recovery_point=recovery_point,
                  log_start_offset=log_start_offset, high_watermark=high_watermark, rng=self.cluster.rng,
                  clean_shutdown=getattr(self, "_clean_start", False))
        ensure_partition_metadata(self.disk, log.dir, self.cluster, topic)
        return log

    def load_logs(self) -> None:
        recovery = {(t, p): o for t, p, o in self.checkpoint(RECOVERY_CHECKPOINT).read()}
        hws = {(t, p): o for t, p, o in self.checkpoint(HW_CHECKPOINT).read()}
        starts = {(t, p): o for t, p, o in self.checkpoint(LOG_START_CHECKPOINT).read()}
        loaded = []
        for name in self.disk.listdir(self.dir):
            parsed = parse_partition_dir(name)
            if parsed is None or self.cluster.controller.topics.get(parsed[0]) is None:
                continue
            topic, part = parsed
            log = self.open_log(topic, part, recovery.get(parsed, 0), starts.get(parsed), hws.get(parsed, 0))
            self.partitions[parsed] = Partition(self, topic, part, log)
            loaded.append({"topic": topic, "partition": part, "log_start_offset": log.log_start_offset,
                           "leo": log.log_end_offset, "recovery_point": log.recovery_point,
                           "high_watermark": log.high_watermark})
        if loaded:
            self.events.emit(LogsLoaded(self.id, loaded))

    def stop_tasks(self) -> None:
        for t in self.tasks:
            self.scheduler.cancel(t)
        self.tasks = []
        self.produce_timer_driver.stop()
        self.fetch_timer_driver.stop()
        for key in sorted(self.partitions):
            self.partitions[key].stop()
            log = self.partitions[key].log
            log.cancel_tasks()
        for leader in sorted(self.fetchers):
            self.fetchers[leader].stop()
        self.fetchers = {}

    def crash(self, power_loss: bool = True) -> None:
        if self.raft is not None:
            self.cluster.controller.stop_node(self.id, "crash", power_loss)
        self.stop_tasks()
        self.partitions = {}
        self.alive = False
        lost = []
        if power_loss:
            lost = [{"file": f, "size_before": a, "size_after": b} for f, a, b in self.disk.crash(self.dir)]
        else:
            self.disk.close_all()
        self.events.emit(BrokerCrashed(self.id, power_loss, lost))

    def shutdown(self, moved: list) -> None:
        """Clean shutdown after the controller moved leadership away: flush, checkpoint, marker."""
        if self.raft is not None:
            self.cluster.controller.stop_node(self.id, "shutdown")
        self.stop_tasks()
        for key in sorted(self.partitions):
            self.partitions[key].log.flush()
        self.checkpoint_recovery_points()
        self.checkpoint_high_watermarks()
        self.checkpoint_log_starts()
        for key in sorted(self.partitions):
            self.partitions[key].log.close()
        self.partitions = {}
        body = json.dumps({"version": 0, "brokerEpoch": self.broker_epoch}, separators=(",", ":")).encode()
        self.disk.write_atomic(f"{self.dir}/{CLEAN_SHUTDOWN_FILE}", body)
        self.events.emit(CheckpointWritten(self.id, CLEAN_SHUTDOWN_FILE, []))
        self.alive = False
        self.events.emit(BrokerShutdown(self.id, moved))

    # ---- periodic tasks ------------------------------------------------------------
    def heartbeat(self) -> None:
        known = tuple((t, p, part.leader_epoch, part.partition_epoch)
                      for (t, p), part in sorted(self.partitions.items()))
        offset = self.cluster.controller.applied_offset(self.id) if self.raft is not None else -1
        self.send_to_controller(BrokerHeartbeat(self.id, self.incarnation, known, offset))

    def _write(self, name: str, entries: list) -> None:
        self.checkpoint(name).write(entries)
        self.events.emit(CheckpointWritten(self.id, name, [list(e) for e in entries]))

    def checkpoint_high_watermarks(self) -> None:
        self._write(HW_CHECKPOINT, [(t, p, self.partitions[(t, p)].hw) for t, p in sorted(self.partitions)])

    def checkpoint_recovery_points(self) -> None:
        self._write(RECOVERY_CHECKPOINT,
                    [(t, p, self.partitions[(t, p)].log.recovery_point) for t, p in sorted(self.partitions)])

    def checkpoint_log_starts(self) -> None:
        entries = []
        for t, p in sorted(self.partitions):
            log = self.partitions[(t, p)].log
            segs = log.segments
            first_base = segs[0].base_offset if segs else 0
            if log.log_start_offset > first_base:
                entries.append((t, p, log.log_start_offset))
        # The metadata log of a combined node lives in this directory too, but it is not one of the
        # log manager's logs: its start comes from its segments and snapshots (engine/kraft/node.py),
        # never from this file.
        self._write(LOG_START_CHECKPOINT, entries)

    def isr_check(self) -> None:
        for key in sorted(self.partitions):
            self.partitions[key].maybe_shrink_isr()

    # ---- network endpoint --------------------------------------------------------------
    def receive(self, src: int, msg: Any) -> None:
        t = type(msg)
        if t is FetchRequest:
            part = self.partitions.get((msg.topic, msg.partition))
            if part is not None:
                part.handle_fetch(src, msg)
                return
        elif t is FetchResponse:
            part = self.partitions.get((msg.topic, msg.partition))
            if part is not None:
                part.fetcher.on_fetch_response(msg)
            return
        elif t is SessionFetchRequest:
            self.handle_session_fetch(src, msg)
            return
        elif t is SessionFetchResponse:
            fetcher = self.fetchers.get(msg.leader_id)
            if fetcher is not None:
                fetcher.on_response(msg)
            return
        elif t is ProduceRequest:
            self.handle_produce(src, msg)
            return
        self._receive(src, msg)

    def source_fetcher(self, leader: int) -> SourceFetcher:
        """The follower's fetcher for partitions led by ``leader`` (made on first use)."""
        fetcher = self.fetchers.get(leader)
        if fetcher is None:
            fetcher = self.fetchers[leader] = SourceFetcher(self, leader)
        return fetcher

    # ---- leader: session fetches ---------------------------------------------------------
    def handle_session_fetch(self, src: int, req: SessionFetchRequest) -> None:
        """A follower's fetch (KIP-227 session): settle the session, do each partition's leader
        bookkeeping, then answer at once if any partition has records or an error, else park."""
        now = self.scheduler.clock.now_ms()
        data = {(r.topic, r.partition): r for r in req.partitions}
        fctx = new_context(self.fetch_sessions, now, req.session_id, req.session_epoch, data,
                           req.forgotten, True)
        if fctx.kind == "error":
            self.send(src, SessionFetchResponse(self.id, fctx.error, 0, (), req.request))
            return
        plan = []
        ready = req.max_wait_ms <= 0
        partitions = self.partitions
        rid = req.replica_id
        for key, row in fctx.partitions():
            part = partitions.get(key)
            if part is None:
                plan.append((key, None, row, "error", "NOT_LEADER_OR_FOLLOWER"))
                ready = True
                continue
            if key not in data and row.last_fetched_epoch < 0:
                # A partition the request left out (its fetch offset did not change): when the
                # follower was and is caught up with nothing above the HW, all the bookkeeping
                # does is note the fetch time (what fetch_as_leader would do, without its calls).
                log = part.log
                leo = log._log_end_offset
                r = part.remotes.get(rid)
                if r is not None and r.leo == row.fetch_offset == leo and leo <= log.high_watermark and \
                        part.role == "leader" and row.leader_epoch == part.leader_epoch and rid in part.isr:
                    if now > r.last_caught_up_ms:
                        r.last_caught_up_ms = now
                    r.last_fetch_ms = now
                    r.last_fetch_leader_leo = leo
                    plan.append((key, part, row, "wait", log.high_watermark))
                    continue
            kind, value = part.fetch_as_leader(row, now)
            plan.append((key, part, row, kind, value))
            if kind != "wait":
                ready = True
        if ready or not plan:
            self.answer_session_fetch(src, req, fctx, plan, 0)
            return
        op = DelayedSessionFetch(self, src, req, fctx, plan, now)
        if self.fetch_purgatory.try_complete_else_watch(op, [key for key, _, _, _, _ in plan]):
            return
        self.fetch_timer_driver.arm()
        for r in req.partitions:
            self.events.emit_fields(FetchParked, self.id, req.replica_id, r.topic, r.partition, r.fetch_offset,
                                    req.max_wait_ms)

    def answer_session_fetch(self, src: int, req: SessionFetchRequest, fctx, plan: list, waited_ms: int) -> None:
        rows = {}
        answers = {}
        later = {}
        for key, part, row, kind, value in plan:
            if kind == "wait" and part is not None and row.fetch_offset >= part.log._log_end_offset:
                # Nothing to read: the session decides from the HW and log start alone whether
                # this partition is answered; its row is built only if it is.
                answers[key] = (0, value, part.log.log_start_offset, False, -1)
                later[key] = (part, row, value)
                continue
            if part is None:
                resp = FetchResponse(self.id, key[0], key[1], row.fetch_offset, b"", 0, 0, 0, -1, value, req.request)
                rows[key] = (None, resp, 0, None, None)
                answers[key] = (0, 0, 0, True, -1)
                continue
            resp, count, first, last = part.fetch_answer(row, kind, value, req.request)
            rows[key] = (part, resp, count, first, last)
            answers[key] = (len(resp.records), resp.high_watermark, resp.log_start_offset, resp.error is not None,
                            0 if resp.diverging_epoch >= 0 else -1)
        error, session_id, keep = fctx.respond(answers)
        out = []
        has_records = False
        for key in keep:
            if key in later:
                part, row, value = later[key]
                rows[key] = (part, *part.fetch_answer(row, "wait", value, req.request))
            part, resp, count, first, last = rows[key]
            if part is not None:
                part.emit_answered(req.replica_id, resp, count, first, last, waited_ms)
            if resp.records:
                has_records = True
            out.append(resp)
        self.send(src, SessionFetchResponse(self.id, error, session_id, tuple(out), req.request, has_records))

    def _receive(self, src: int, msg: Any) -> None:
        if isinstance(msg, FetchRequest):
            part = self.partitions.get((msg.topic, msg.partition))
            if part is None:
                self.send(src, FetchResponse(self.id, msg.topic, msg.partition, msg.fetch_offset, b"", 0, 0, 0, -1,
                                             "NOT_LEADER_OR_FOLLOWER", msg.session))
            else:
                part.handle_fetch(src, msg)
        elif isinstance(msg, FetchResponse):
            part = self.partitions.get((msg.topic, msg.partition))
            if part is not None:
                part.fetcher.on_fetch_response(msg)
        elif isinstance(msg, OffsetsForLeaderEpochRequest):
            part = self.partitions.get((msg.topic, msg.partition))
            if part is None:
                self.send(src, OffsetsForLeaderEpochResponse(self.id, msg.topic, msg.partition, msg.epoch, -1, -1,
                                                             "NOT_LEADER_OR_FOLLOWER", msg.session))
            else:
                part.handle_epoch_request(src, msg)
        elif isinstance(msg, OffsetsForLeaderEpochResponse):
            part = self.partitions.get((msg.topic, msg.partition))
            if part is not None:
                part.fetcher.on_epoch_response(msg)
        elif isinstance(msg, ProduceRequest):
            self.handle_produce(src, msg)
        elif isinstance(msg, LeaderAndIsr):
            self.apply_leader_and_isr(msg)
        elif isinstance(msg, (BrokerHeartbeat, AlterPartitionRequest)):
            if self.cluster.controller.active == self.id:
                self.cluster.controller.handle(src, msg)
        elif isinstance(msg, ProduceResponse):  # the answer to this broker's own (coordinator's) append
            self.cluster.deliver_produce_response(msg)
        elif self.raft is not None:
            api = getattr(msg, "api", "")
            if api == "AllocateProducerIds":          # KRaft broker -> controller (KIP-730)
                if self.cluster.controller.active == self.id:
                    self.cluster.controller.handle(src, msg)
            elif api == "AllocateProducerIdsResponse":
                self.producer_ids.on_response(src, msg)
            elif api == "AlterPartitionResponse":
                part = self.partitions.get((msg.topic, msg.partition))
                if part is not None:
                    part.pending_isr = None      # refused: propose again once the metadata says so
            else:
                self.raft.receive(src, msg)      # the quorum's Vote, BeginQuorumEpoch, Fetch, ...

    def handle_produce(self, src: int, req: ProduceRequest) -> None:
        part = self.partitions.get((req.topic, req.partition))
        if part is None:
            self.send(src, ProduceResponse(req.request_id, self.id, req.topic, req.partition,
                                           "NOT_LEADER_OR_FOLLOWER",
                                           f"broker {self.id} has no replica of {req.topic}-{req.partition}",
                                           None, None, False))
            return
        now = self.cluster.clock.now_ms()
        key, new = req.key, tuple.__new__          # SimpleRecord(v, key, now) without its Python __new__
        records = [new(SimpleRecord, (v, key, now, ())) for v in req.values]
        part.produce(src, req, records)

    def apply_leader_and_isr(self, msg: LeaderAndIsr) -> None:
        if self.id not in msg.replicas:
            return
        key = (msg.topic, msg.partition)
        part = self.partitions.get(key)
        if part is None:
            part = Partition(self, msg.topic, msg.partition, self.open_log(msg.topic, msg.partition))
            part.fetcher.paused = self.follower_paused
            part.fetcher.delay_ms = self.follower_delay_ms
            self.partitions[key] = part
        part.apply_state(msg)

    # ---- follower knobs ---------------------------------------------------------------
    def set_follower_delay(self, delay_ms: int) -> None:
        self.follower_delay_ms = delay_ms
        for key in sorted(self.partitions):
            self.partitions[key].fetcher.delay_ms = delay_ms

    def set_follower_paused(self, paused: bool) -> None:
        self.follower_paused = paused
        for key in sorted(self.partitions):
            f = self.partitions[key].fetcher
            if paused:
                f.pause()
            else:
                f.resume()

    def apply_log_overrides(self) -> None:
        for key in sorted(self.partitions):
            log = self.partitions[key].log
            log.update_config(self.log_config(key[0]))

    # ---- view ------------------------------------------------------------------------
    def state(self) -> dict:
        return {
            "id": self.id, "alive": self.alive, "incarnation": self.incarnation, "broker_epoch": self.broker_epoch,
            "dir": self.dir, "log_overrides": dict(sorted(self.log_overrides.items())),
            "follower_delay_ms": self.follower_delay_ms, "follower_paused": self.follower_paused,
        }
