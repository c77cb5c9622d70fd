"""The follower side of replication: a :class:`ReplicaFetcher` state machine per partition, and
one :class:`SourceFetcher` per source broker (Kafka's ``ReplicaFetcherThread``) that sends the
fetches of all the partitions it follows there, in a KIP-227 incremental fetch session
(engine/cluster/fetch_session.py): a partition is in a fetch's message only when the session
does not know its fetch offset and epochs yet, and in the answer only when it has something to
say (records, a moved high watermark or log start offset, an error, a DivergingEpoch).

On becoming a follower it first reconciles its log with the leader, the way the
cluster's ``truncation`` and ``fetch.protocol`` settings say:

* ``truncation = "hw"`` (before Kafka 0.11): truncate to its own high watermark, then
  fetch (no epochs in the protocol);
* ``truncation = "epoch"``, ``fetch.protocol = "offsets_for_leader_epoch"`` (Kafka
  0.11–2.6, KIP-101 + KIP-279): send OffsetsForLeaderEpoch with its latest epoch and apply
  the divergence algorithm of reference §5.6, asking again after each KIP-279 step;
* ``truncation = "epoch"``, ``fetch.protocol = "diverging_epoch"`` (Kafka >= 2.7, KIP-595,
  KAFKA-10554): fetch at once from its log end with LastFetchedEpoch = its latest epoch;
  when the leader answers DivergingEpoch (epoch, end offset) it truncates with the same
  algorithm and fetches again (a replica without epochs truncates to its high watermark).

Then it loops: Fetch(fetch_offset = LEO) → append → HW = min(leader HW, own LEO) → next
Fetch (the source fetcher's next session fetch; a partition that backs off leaves it and is
forgotten by the session until it comes back). OFFSET_OUT_OF_RANGE above the leader's LEO truncates to that LEO (with ``hw``
truncation and unclean election off that is fatal for the partition, as in Kafka 0.10);
below its log start: starts over at the leader's log start. A lost request is retried after
``request.timeout.ms``; errors back off ``replica.fetch.backoff.ms``.

What Kafka's ``AbstractFetcherThread`` does with a response it cannot apply, this does too:
a corrupt batch is retried after the backoff; a first batch starting below the log end (the
leader answered from the start of a batch our log end falls inside) starts the log over at
that batch when our log is empty (Kafka's ``UnexpectedAppendOffsetException`` case), and
otherwise — the two logs disagree below the fetch offset — marks the partition failed on
this follower (``replica_fetch_failed``): its fetcher stops, the broker and its other
partitions go on, and the next leader change (or a restart) starts it again. No error of
one partition's fetch ever escapes to the caller that moved the clock.
"""
from __future__ import annotations

from typing import Any

from engine.errors import CorruptRecordError, InvalidRecordError, KafkaError
from engine.records import read_header

from .events import (EpochRequestSent, FetchReceived, FetchSent, HighWatermarkChanged, ReplicaFetchFailed,
                     ReplicaTruncated)
from .host import FollowerReplica
from .fetch_session import FetchSessionHandler
from .network import (FetchRequest, FetchResponse, OffsetsForLeaderEpochRequest, OffsetsForLeaderEpochResponse,
                      SessionFetchRequest, SessionFetchResponse)


__all__ = ["ReplicaFetcher", "SourceFetcher"]


class SourceFetcher:
    """A follower broker's fetcher for one source (leader) broker (Kafka's ``ReplicaFetcherThread``):
    one Fetch in flight at a time for every partition it follows there that is ready to fetch,
    in a KIP-227 session. A full fetch lists them all; then each fetch lists only partitions
    added or whose fetch offset / epochs changed, and forgets the ones no longer ready (backing
    off, truncating, failed, moved to another leader); the leader answers only partitions with
    something to say. An idle partition costs no message, event or timer of its own.

    The fetch's timeout is kept lazily, as a single fetch's was: ``deadline`` = (due ms,
    reserved scheduler counter, request) of the newest fetch and one armed task that re-arms
    itself at the deadline when it fires early."""

    def __init__(self, broker: Any, leader: int) -> None:
        self.broker = broker
        self.leader = leader
        self.members: dict[tuple, "ReplicaFetcher"] = {}    # partitions ready to fetch, in arrival order
        self.rows: dict[tuple, FetchRequest] = {}           # each member's row as last built
        self.handler = FetchSessionHandler()
        self.request = 0
        self.inflight: dict | None = None     # key -> the member's counter, for the fetch in flight
        self.processing = False
        self.task: Any = None                 # a send delayed by the broker's follower delay
        self.deadline: tuple | None = None
        self.timer: Any = None

    def want(self, f: "ReplicaFetcher") -> None:
        key = f.p.key
        self.members[key] = f
        self.rows.pop(key, None)          # its fetch offset or epochs may have moved: build its row again
        self.kick()

    def unwant(self, f: "ReplicaFetcher") -> None:
        key = f.p.key
        if self.members.get(key) is f:
            del self.members[key]
            self.rows.pop(key, None)

    def kick(self) -> None:
        """Send the next fetch unless one is in flight, being answered or already scheduled."""
        if self.inflight is not None or self.processing or self.task is not None or not self.members:
            return
        delay = self.broker.follower_delay_ms
        if delay > 0:
            self.task = self.broker.scheduler.schedule(delay, self._send_delayed, name="fetch-backoff")
        else:
            self.send()

    def _send_delayed(self) -> None:
        self.task = None
        if self.inflight is None and not self.processing:
            self.send()

    def send(self) -> None:
        broker = self.broker
        cfg = broker.cluster.config
        wanted = {}
        rows = self.rows
        for key, f in self.members.items():
            if not f.paused:
                row = rows.get(key)
                if row is None:
                    row = rows[key] = f.fetch_row()
                wanted[key] = row
        if not wanted:
            return
        session_id, epoch, send, forget = self.handler.build(wanted)
        events = broker.events
        bid = broker.id
        inflight = {}
        for key, f in self.members.items():
            if key in wanted:
                f.session += 1
                f.in_flight = True
                inflight[key] = f.session
        for row in send.values():
            events.emit_fields(FetchSent, bid, self.leader, row.topic, row.partition, row.fetch_offset,
                               row.last_fetched_epoch, row.leader_epoch)
        self.request += 1
        self.inflight = inflight
        broker.send(self.leader, SessionFetchRequest(bid, session_id, epoch, tuple(send.values()), tuple(forget),
                                                     cfg.replica_fetch_wait_max_ms, cfg.replica_fetch_max_bytes,
                                                     self.request))
        # The leader may park the fetch for max_wait, so allow for that on top of the timeout.
        scheduler = broker.scheduler
        due = scheduler.clock.now_ms() + cfg.request_timeout_ms + cfg.replica_fetch_wait_max_ms
        self.deadline = (due, scheduler.reserve(due), self.request)
        if self.timer is None:
            self.timer = scheduler.schedule_reserved(due, self.deadline[1], self.on_timer, name="fetch-timeout")

    def on_timer(self) -> None:
        self.timer = None
        deadline = self.deadline
        if deadline is None:
            return
        due, seq, request = deadline
        scheduler = self.broker.scheduler
        if due > scheduler.now_ms():
            self.timer = scheduler.schedule_reserved(due, seq, self.on_timer, name="fetch-timeout")
            return
        self.deadline = None
        if request != self.request or self.inflight is None:
            return
        # Lost: the next fetch is full and closes the session (the leader may have moved it on).
        inflight, self.inflight = self.inflight, None
        self.handler.handle_error()
        self._settle(inflight)
        self.kick()

    def _settle(self, inflight: dict) -> None:
        members = self.members
        for key, counter in inflight.items():
            f = members.get(key)
            if f is not None and f.session == counter:
                f.in_flight = False

    def on_response(self, resp: SessionFetchResponse) -> None:
        if resp.request != self.request or self.inflight is None:
            return            # an answer to an older fetch (timed out, or before a restart)
        inflight, self.inflight = self.inflight, None
        self.deadline = None
        ok = self.handler.handle_response(resp.error, resp.session_id)
        self.processing = True
        try:
            self._settle(inflight)
            if ok:
                fetchers = self.broker.partitions
                discarded = False
                for row in resp.partitions:
                    key = (row.topic, row.partition)
                    part = fetchers.get(key)
                    f = part.fetcher if part is not None else None
                    if f is None or inflight.get(key) != f.session or f.state_name != "fetching" or f.paused:
                        discarded = True     # not applied: the leader must not think we saw it
                        continue
                    f.apply_fetch_response(row)
                if discarded:
                    self.handler.handle_error()
        finally:
            self.processing = False
        self.kick()

    def stop(self) -> None:
        if self.task is not None:
            self.broker.scheduler.cancel(self.task)
            self.task = None
        if self.timer is not None:
            self.broker.scheduler.cancel(self.timer)
            self.timer = None
        self.deadline = None
        self.inflight = None
        self.members = {}
        self.rows = {}

    def state(self) -> dict:
        return {"leader": self.leader, "session_id": self.handler.session_id, "session_epoch": self.handler.epoch,
                "partitions": [f"{t}-{p}" for t, p in self.members], "in_flight": self.inflight is not None}


class ReplicaFetcher:
    """Fetch state machine of one follower partition.

    ``state``: "idle" (not a follower / no leader), "truncating" (waiting for an
    OffsetsForLeaderEpoch answer), "fetching", "failed" (stopped by an error that retrying
    cannot fix; ``failure`` says which). ``session`` numbers requests so a reply to an older
    request (previous leader, timed-out request) is ignored.
    """

    def __init__(self, partition: FollowerReplica) -> None:
        self.p = partition
        self.state_name = "idle"
        self.leader: int | None = None
        self.leader_epoch = -1
        self.session = 0
        self.in_flight = False
        self.task: Any = None        # pending send / epoch-request timeout
        # A fetch's timeout, kept lazily (the issue-23 hot path: most fetches are answered long
        # before it): ``deadline`` = (due ms, reserved scheduler counter, session) of the newest
        # fetch, and one armed scheduler task that, when it fires early, re-arms itself at the
        # deadline with the counter reserved at send time — so it runs exactly where a task
        # scheduled with the fetch would have, without a push and a cancel per fetch.
        self.deadline: tuple | None = None
        self.timer: Any = None
        self.paused = False
        self.delay_ms = 0            # slow follower: wait this long before each fetch
        self.failure: dict | None = None

    # ---- lifecycle ---------------------------------------------------------------
    @property
    def broker(self):
        return self.p.broker

    @property
    def diverging_epoch_protocol(self) -> bool:
        """Fetch v12: LastFetchedEpoch in the fetch, DivergingEpoch in the answer."""
        cfg = self.broker.cluster.config
        return cfg.truncation == "epoch" and cfg.fetch_protocol == "diverging_epoch"

    def _drop_timer(self) -> None:
        self.deadline = None
        timer = getattr(self, "timer", None)
        if timer is not None:
            self.broker.scheduler.cancel(timer)
            self.timer = None

    def _leave_source(self) -> None:
        """Stop fetching from the current leader: the source fetcher forgets this partition."""
        if self.leader is not None:
            fetcher = self.broker.fetchers.get(self.leader)
            if fetcher is not None:
                fetcher.unwant(self)

    def stop(self) -> None:
        self.broker.scheduler.cancel(self.task)
        self.task = None
        self._drop_timer()
        self._leave_source()
        self.state_name = "idle"
        self.failure = None
        self.in_flight = False
        self.session += 1
        self.leader = None

    def become_follower(self, leader: int | None, leader_epoch: int) -> None:
        self.stop()
        self.leader = leader
        self.leader_epoch = leader_epoch
        if leader is None:
            return
        p = self.p
        if self.broker.cluster.config.truncation == "hw":
            self.truncate(p.hw, "hw", f"truncate to own high watermark {p.hw} (pre-0.11 rule)")
            self.state_name = "fetching"
            self.send_fetch()
        elif self.diverging_epoch_protocol:
            # Kafka >= 2.7 (ReplicaManager.initialFetchOffset): with epochs, fetch from the log
            # end and let the leader say where we diverge; without, truncate to the HW first.
            if p.log.leader_epoch_cache.latest_epoch is None:
                self.truncate(p.hw, "hw", f"no leader epochs in this log: truncate to own high watermark {p.hw}")
            self.state_name = "fetching"
            self.send_fetch()
        else:
            self.state_name = "truncating"
            self.send_epoch_request()

    def pause(self) -> None:
        self.paused = True

    def resume(self) -> None:
        self.paused = False
        if self.state_name == "fetching" and not self.in_flight:
            self.send_fetch()
        elif self.state_name == "truncating" and not self.in_flight:
            self.send_epoch_request()

    def truncate(self, offset: int, reason: str, detail: str) -> None:
        p = self.p
        old = p.leo
        old_hw = p.hw
        if not p.log.truncate_to(offset, reason=reason):
            return  # at or past the LEO: only the epoch cache's empty tail was trimmed
        self.broker.events.emit(ReplicaTruncated(self.broker.id, p.topic, p.partition, old, p.leo, reason, detail))
        p.leo_changed(old, "truncate")
        if p.hw != old_hw:
            self.broker.events.emit_fields(HighWatermarkChanged, self.broker.id, p.topic, p.partition, old_hw, p.hw,
                                                         p.role, "truncate", {})

    def start_over_at(self, offset: int, detail: str) -> None:
        """Drop the whole log and start it empty at ``offset`` (Kafka's truncateFullyAndStartAt)."""
        p = self.p
        old = p.leo
        p.log.truncate_fully_and_start_at(offset)
        self.broker.events.emit(ReplicaTruncated(self.broker.id, p.topic, p.partition, old, p.leo, "log_start",
                                                 detail))
        p.leo_changed(old, "truncate")

    def fail(self, fetch_offset: int, error: str, detail: str) -> None:
        """Kafka's markPartitionFailed: stop fetching this partition; nothing else stops."""
        p = self.p
        self.broker.scheduler.cancel(self.task)
        self.task = None
        self._drop_timer()
        self._leave_source()
        self.in_flight = False
        self.session += 1
        self.state_name = "failed"
        self.failure = {"error": error, "detail": detail, "fetch_offset": fetch_offset}
        self.broker.events.emit(ReplicaFetchFailed(self.broker.id, self.leader, p.topic, p.partition, fetch_offset,
                                                   error, detail))

    # ---- sending -------------------------------------------------------------------
    def _next_session(self) -> int:
        self.session += 1
        return self.session

    def _arm_timeout(self, session: int) -> None:
        self.task = self.broker.scheduler.schedule(self.broker.cluster.config.request_timeout_ms,
                                                   self.on_timeout, session, name="fetch-timeout")

    def schedule_next(self, delay_ms: int) -> None:
        broker = self.p.broker
        scheduler = broker.scheduler
        if self.task is not None:
            scheduler.cancel(self.task)
        self.deadline = None
        self.in_flight = False
        if broker.fetchers:
            # Sessions: a fetching partition leaves its source fetcher while it backs off (the next
            # fetch forgets it); the source fetcher itself waits the follower delay before each fetch.
            self._leave_source()
        if self.state_name == "fetching" and broker.cluster.config.replica_fetch_sessions:
            delay = delay_ms
        else:
            delay = delay_ms + self.delay_ms
        if delay > 0:
            self.task = scheduler.schedule(delay, self.send_next, self.session, name="fetch-backoff")
        else:
            self.task = None
            self.send_next(self.session)

    def send_next(self, session: int) -> None:
        if session != self.session or self.in_flight:
            return
        if self.state_name == "truncating":
            self.send_epoch_request()
        elif self.state_name == "fetching":
            self.send_fetch()

    def send_epoch_request(self) -> None:
        if self.paused or self.leader is None:
            return
        p = self.p
        latest = p.log.leader_epoch_cache.latest_epoch
        epoch = -1 if latest is None else latest
        session = self._next_session()
        self.in_flight = True
        self.broker.events.emit(EpochRequestSent(self.broker.id, self.leader, p.topic, p.partition, epoch))
        self.broker.send(self.leader, OffsetsForLeaderEpochRequest(self.broker.id, p.topic, p.partition, epoch,
                                                                   self.leader_epoch, session))
        self._arm_timeout(session)

    def send_fetch(self) -> None:
        if self.paused or self.leader is None:
            return
        p = self.p
        broker = p.broker
        cluster = broker.cluster
        cfg = cluster.config
        if cfg.replica_fetch_sessions:
            # KIP-227: ready to fetch; the leader's source fetcher sends when it can.
            broker.source_fetcher(self.leader).want(self)
            return
        log = p.log
        latest = log.leader_epoch_cache.latest_epoch
        # LastFetchedEpoch exists from Fetch v12 on; the older protocols send none.
        last_epoch = -1 if latest is None or not (cfg.truncation == "epoch" and
                                                  cfg.fetch_protocol == "diverging_epoch") else latest
        self.session = session = self.session + 1
        self.in_flight = True
        leo = log._log_end_offset
        leader = self.leader
        cluster.events.emit_fields(FetchSent, broker.id, leader, p.topic, p.partition, leo, last_epoch,
                                   self.leader_epoch)
        broker.send(leader, FetchRequest(broker.id, p.topic, p.partition, leo, last_epoch, self.leader_epoch,
                                         cfg.replica_fetch_wait_max_ms, cfg.replica_fetch_max_bytes, session))
        # The leader may park the fetch for max_wait, so allow for that on top of the timeout.
        scheduler = cluster.scheduler
        due = scheduler.clock.now_ms() + cfg.request_timeout_ms + cfg.replica_fetch_wait_max_ms
        self.deadline = (due, scheduler.reserve(due), session)
        if self.timer is None:
            self.timer = scheduler.schedule_reserved(due, self.deadline[1], self.on_timer, name="fetch-timeout")

    def fetch_row(self) -> FetchRequest:
        """This partition's row of the next fetch: fetch offset = LEO, and the epochs."""
        p = self.p
        broker = p.broker
        cfg = broker.cluster.config
        latest = p.log.leader_epoch_cache.latest_epoch
        # LastFetchedEpoch exists from Fetch v12 on; the older protocols send none.
        last_epoch = -1 if latest is None or not self.diverging_epoch_protocol else latest
        return FetchRequest(broker.id, p.topic, p.partition, p.log._log_end_offset, last_epoch, self.leader_epoch,
                            cfg.replica_fetch_wait_max_ms, cfg.replica_fetch_max_bytes, 0)

    def on_timer(self) -> None:
        """The armed fetch timer fired: re-arm it at the newest fetch's deadline, or time that fetch out."""
        self.timer = None
        deadline = self.deadline
        if deadline is None:
            return
        due, seq, session = deadline
        scheduler = self.p.broker.scheduler
        if due > scheduler.now_ms():
            self.timer = scheduler.schedule_reserved(due, seq, self.on_timer, name="fetch-timeout")
            return
        self.deadline = None
        self.on_timeout(session)

    def on_timeout(self, session: int) -> None:
        if session != self.session or not self.in_flight:
            return
        self.in_flight = False
        self.task = None
        self.send_next(self.session)

    # ---- divergence ----------------------------------------------------------------
    def truncate_to_epoch_end(self, leader_epoch: int, leader_end: int, requested_epoch: int,
                              reason: str) -> bool:
        """Apply a leader's (epoch, end offset) answer — OffsetsForLeaderEpoch or a fetch's
        DivergingEpoch — with Kafka's ``getOffsetTruncationState`` (reference §5.6). Returns
        True when truncation is complete, False after a KIP-279 step that must ask again."""
        p = self.p
        my_leo = p.leo
        cache = p.log.leader_epoch_cache
        if leader_end == -1:
            self.truncate(p.hw, reason, f"leader has no end offset for epoch {requested_epoch}: "
                                        f"fall back to own HW {p.hw}")
            return True
        if not cache.entries:
            self.truncate(min(leader_end, my_leo), reason,
                          f"no local epochs: min(leader end {leader_end}, LEO {my_leo})")
            return True
        my_epoch, my_end = cache.end_offset_for(leader_epoch, my_leo)
        if my_epoch == leader_epoch:
            target = min(leader_end, my_end, my_leo)
            self.truncate(target, reason, f"leader: epoch {leader_epoch} ends at {leader_end}; mine ends at {my_end}; "
                                          f"LEO {my_leo} → min = {target}")
            return True
        # KIP-279: the leader's epoch is one this replica never had; cut back to where our
        # largest epoch <= it ends and ask again with our new latest epoch.
        target = min(my_end, my_leo)
        self.truncate(target, reason,
                      f"leader answered epoch {leader_epoch} (end {leader_end}) which this replica "
                      f"does not have; my epoch {my_epoch} ends at {my_end} → truncate to {target}, ask again")
        return False

    # ---- responses -----------------------------------------------------------------
    def on_epoch_response(self, resp: OffsetsForLeaderEpochResponse) -> None:
        if resp.session != self.session or self.state_name != "truncating":
            return
        self.broker.scheduler.cancel(self.task)
        self.task = None
        self.in_flight = False
        if self.paused:
            return
        if resp.error is not None:
            self.schedule_next(self.broker.cluster.config.replica_fetch_backoff_ms)
            return
        cache = self.p.log.leader_epoch_cache
        if not self.truncate_to_epoch_end(resp.epoch, resp.end_offset, resp.requested_epoch, "epoch"):
            # Ask again while our latest epoch changed: each round drops at least one
            # cache entry, so this ends.
            if cache.latest_epoch is not None and cache.latest_epoch != resp.requested_epoch:
                self.schedule_next(0)
                return
        self.state_name = "fetching"
        self.schedule_next(0)

    def on_fetch_response(self, resp: FetchResponse) -> None:
        """The answer to this partition's own Fetch (without sessions)."""
        if resp.session != self.session or self.state_name != "fetching":
            return
        if self.paused:
            if self.task is not None:
                self.broker.scheduler.cancel(self.task)
                self.task = None
            self.deadline = None
            self.in_flight = False
            return   # a stuck fetcher thread: whatever was in flight is not applied
        self.apply_fetch_response(resp)

    def apply_fetch_response(self, resp: FetchResponse) -> None:
        """Apply this partition's answer: its own Fetch's, or its row of a session fetch's answer
        (the source fetcher checked that it answers this partition's newest fetch and that the
        fetcher is not paused)."""
        if self.state_name != "fetching":
            return
        p = self.p
        broker = p.broker
        cfg = broker.cluster.config
        if self.task is not None:
            broker.scheduler.cancel(self.task)
            self.task = None
        self.deadline = None
        self.in_flight = False
        if resp.error == "OFFSET_OUT_OF_RANGE":
            self._received(resp, 0, resp.error)
            self.on_out_of_range(resp)
            return
        if resp.error is not None:
            self._received(resp, 0, resp.error)
            self.schedule_next(cfg.replica_fetch_backoff_ms)
            return
        log = p.log
        if resp.fetch_offset != log._log_end_offset:
            self.schedule_next(0)   # our log moved under the request (truncation); refetch
            return
        if resp.diverging_epoch >= 0:
            self.on_diverging_epoch(resp)
            return
        count = 0
        if resp.records:
            appended = self.append(resp)
            if appended is None:
                return        # failed, or retrying after the backoff
            count = appended
        # Follower HW = min(leader HW, own LEO); it only moves forward.
        leo = log._log_end_offset
        leader_hw = resp.high_watermark
        new_hw = leader_hw if leader_hw < leo else leo
        broker.cluster.events.emit_fields(FetchReceived, broker.id, resp.leader_id, p.topic, p.partition,
                                          resp.fetch_offset, count, leader_hw, None)
        if new_hw > log.high_watermark:
            p.set_hw(new_hw, "leader_hw", {"leader": leader_hw, "own_leo": leo})
        # Retention/DeleteRecords on the leader move the follower's log start too (bounded by its HW).
        if log.log_start_offset < resp.log_start_offset <= log.high_watermark:
            log.delete_records(resp.log_start_offset)
        if self.delay_ms or broker.fetchers or cfg.replica_fetch_sessions:
            self.schedule_next(0)
        elif self.state_name == "fetching" and not self.in_flight:
            # schedule_next(0) without a follower delay or sessions: fetch again at once.
            self.send_fetch()

    def _received(self, resp: FetchResponse, count: int, error: str | None) -> None:
        p = self.p
        p.broker.events.emit_fields(FetchReceived, p.broker.id, resp.leader_id, p.topic, p.partition,
                                    resp.fetch_offset, count, resp.high_watermark, error)

    def append(self, resp: FetchResponse) -> int | None:
        """Append the fetched batches; the number of records, or None when nothing was
        appended (the fetcher then retries after the backoff or has failed)."""
        p = self.p
        log = p.log
        backoff = p.broker.cluster.config.replica_fetch_backoff_ms
        try:
            first = read_header(resp.records)
        except CorruptRecordError as exc:
            self._received(resp, 0, exc.name)
            self.schedule_next(backoff)
            return None
        if first.base_offset < log._log_end_offset:
            last = first.base_offset + first.last_offset_delta
            if p.leo == p.log.log_start_offset and last >= p.leo:
                # Kafka's Partition.appendRecordsToFollowerOrFutureReplica: our (empty) log
                # starts inside the leader's first batch; start it at that batch instead.
                self.start_over_at(first.base_offset,
                                   f"log start {p.leo} falls inside the leader's batch {first.base_offset}..{last}: "
                                   f"the log starts over at {first.base_offset}")
            else:
                self._received(resp, 0, "UNEXPECTED_APPEND_OFFSET")
                self.fail(resp.fetch_offset, "UNEXPECTED_APPEND_OFFSET",
                          f"the leader answered a fetch at {resp.fetch_offset} with a batch "
                          f"{first.base_offset}..{last} that starts below this replica's log end {p.leo}: "
                          f"the two logs disagree below the fetch offset")
                return None
        old = log._log_end_offset
        try:
            log.append_as_follower(resp.records)
        except (CorruptRecordError, InvalidRecordError) as exc:
            # AbstractFetcherThread: log and retry; a transient state usually fixes itself.
            self._received(resp, 0, exc.name)
            self.schedule_next(backoff)
            return None
        except KafkaError as exc:
            self._received(resp, 0, exc.name)
            self.fail(resp.fetch_offset, exc.name, str(exc))
            return None
        p.leo_changed(old, "append")
        return log._log_end_offset - old

    def on_diverging_epoch(self, resp: FetchResponse) -> None:
        """Fetch v12: the leader says our last fetched epoch diverges. Truncate (no HW or log
        start update from this response: Kafka applies them with the next fetch) and fetch
        again with the new latest epoch."""
        p = self.p
        cache = p.log.leader_epoch_cache
        before = (p.leo, cache.latest_epoch, len(cache.entries))
        requested = -1 if cache.latest_epoch is None else cache.latest_epoch
        self.truncate_to_epoch_end(resp.diverging_epoch, resp.diverging_end_offset, requested, "diverging_epoch")
        if (p.leo, cache.latest_epoch, len(cache.entries)) == before:
            # Nothing moved, so the leader would answer the same again: back off rather than spin.
            self.schedule_next(self.broker.cluster.config.replica_fetch_backoff_ms)
            return
        self.schedule_next(0)

    def on_out_of_range(self, resp: FetchResponse) -> None:
        p = self.p
        cfg = self.broker.cluster.config
        if p.leo > resp.leader_leo:
            if cfg.truncation == "hw" and not self.broker.cluster.controller.topic_config(
                    p.topic).unclean_leader_election_enable:
                # Kafka 0.10's ReplicaFetcherThread.handleOffsetOutOfRange: truncating below what
                # this replica holds is only allowed with unclean election ("Exiting because log
                # truncation is not allowed"; 0.10 exited the whole broker — here the partition stops).
                self.fail(resp.fetch_offset, "TRUNCATION_NOT_ALLOWED",
                          f"the leader's log ends at {resp.leader_leo}, below this replica's log end {p.leo}, "
                          f"and unclean.leader.election.enable is false: truncating would drop records this "
                          f"replica holds")
                return
            self.truncate(resp.leader_leo, "out_of_range",
                          f"fetch offset {p.leo} is above the leader's LEO {resp.leader_leo}")
        elif p.leo < resp.log_start_offset:
            self.start_over_at(resp.log_start_offset,
                               f"fetch offset {p.leo} is below the leader's log start {resp.log_start_offset}")
        else:
            # In range by now, or the leader could not place our last fetched epoch: retry later.
            self.schedule_next(cfg.replica_fetch_backoff_ms)
            return
        self.schedule_next(0)

    def state(self) -> dict:
        return {"state": self.state_name, "leader": self.leader, "in_flight": self.in_flight,
                "paused": self.paused, "delay_ms": self.delay_ms, "failure": self.failure}
