"""The follower side of replication (Kafka's ``ReplicaFetcherThread``, one per partition here).

On becoming a follower it first reconciles its log with the leader, the way the
cluster's ``truncation`` setting says:

* ``"hw"`` (before Kafka 0.11): truncate to its own high watermark, then fetch;
* ``"epoch"`` (KIP-101 + KIP-279): send OffsetsForLeaderEpoch with its latest epoch and
  apply the divergence algorithm of reference §5.6, asking again after each KIP-279 step.

Then it loops: Fetch(fetch_offset = LEO, last_fetched_epoch) → append → HW = min(leader
HW, own LEO) → next Fetch. OFFSET_OUT_OF_RANGE above the leader's LEO truncates to that
LEO (below its log start: starts over at the leader's log start). A lost request is
retried after ``request.timeout.ms``; errors back off ``replica.fetch.backoff.ms``.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .events import EpochRequestSent, FetchReceived, FetchSent, ReplicaTruncated
from .network import FetchRequest, FetchResponse, OffsetsForLeaderEpochRequest, OffsetsForLeaderEpochResponse

if TYPE_CHECKING:  # pragma: no cover
    from .partition import Partition

__all__ = ["ReplicaFetcher"]


class ReplicaFetcher:
    """Fetch state machine of one follower partition.

    ``state``: "idle" (not a follower / no leader), "truncating" (waiting for an
    OffsetsForLeaderEpoch answer), "fetching". ``session`` numbers requests so a reply
    to an older request (previous leader, timed-out request) is ignored.
    """

    def __init__(self, partition: "Partition") -> None:
        self.p = partition
        self.state_name = "idle"
        self.leader: int | None = None
        self.leader_epoch = -1
        self.session = 0
        self.in_flight = False
        self.task: Any = None        # pending send / timeout
        self.paused = False
        self.delay_ms = 0            # slow follower: wait this long before each fetch

    # ---- lifecycle ---------------------------------------------------------------
    @property
    def broker(self):
        return self.p.broker

    def stop(self) -> None:
        self.broker.scheduler.cancel(self.task)
        self.task = None
        self.state_name = "idle"
        self.in_flight = False
        self.session += 1
        self.leader = None

    def become_follower(self, leader: int | None, leader_epoch: int) -> None:
        self.stop()
        self.leader = leader
        self.leader_epoch = leader_epoch
        if leader is None:
            return
        if self.broker.cluster.config.truncation == "hw":
            self.truncate(self.p.hw, "hw", f"truncate to own high watermark {self.p.hw} (pre-0.11 rule)")
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
            from .events import HighWatermarkChanged
            self.broker.events.emit(HighWatermarkChanged(self.broker.id, p.topic, p.partition, old_hw, p.hw,
                                                         p.role, "truncate", {}))

    # ---- sending -------------------------------------------------------------------
    def _next_session(self) -> int:
        self.session += 1
        return self.session

    def _arm_timeout(self, session: int) -> None:
        self.task = self.broker.scheduler.schedule(self.broker.cluster.config.request_timeout_ms,
                                                   self.on_timeout, session, name="fetch-timeout")

    def schedule_next(self, delay_ms: int) -> None:
        self.broker.scheduler.cancel(self.task)
        self.in_flight = False
        delay = delay_ms + self.delay_ms
        if delay > 0:
            self.task = self.broker.scheduler.schedule(delay, self.send_next, self.session, name="fetch-backoff")
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
        cfg = self.broker.cluster.config
        latest = p.log.leader_epoch_cache.latest_epoch
        last_epoch = -1 if latest is None else latest
        session = self._next_session()
        self.in_flight = True
        self.broker.events.emit(FetchSent(self.broker.id, self.leader, p.topic, p.partition, p.leo, last_epoch,
                                          self.leader_epoch))
        self.broker.send(self.leader, FetchRequest(self.broker.id, p.topic, p.partition, p.leo, last_epoch,
                                                   self.leader_epoch, cfg.replica_fetch_wait_max_ms,
                                                   cfg.replica_fetch_max_bytes, session))
        # The leader may park the fetch for max_wait, so allow for that on top of the timeout.
        self.task = self.broker.scheduler.schedule(cfg.request_timeout_ms + cfg.replica_fetch_wait_max_ms,
                                                   self.on_timeout, session, name="fetch-timeout")

    def on_timeout(self, session: int) -> None:
        if session != self.session or not self.in_flight:
            return
        self.in_flight = False
        self.task = None
        self.send_next(self.session)

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
        p = self.p
        leader_epoch, leader_end = resp.epoch, resp.end_offset
        my_leo = p.leo
        cache = p.log.leader_epoch_cache
        if leader_end == -1:
            self.truncate(p.hw, "epoch", f"leader has no end offset for epoch {resp.requested_epoch}: "
                                         f"fall back to own HW {p.hw}")
        elif not cache.entries:
            self.truncate(min(leader_end, my_leo), "epoch",
                          f"no local epochs: min(leader end {leader_end}, LEO {my_leo})")
        else:
            my_epoch, my_end = cache.end_offset_for(leader_epoch, my_leo)
            if my_epoch == leader_epoch:
                self.truncate(min(leader_end, my_end, my_leo), "epoch",
                              f"leader: epoch {leader_epoch} ends at {leader_end}; mine ends at {my_end}; "
                              f"LEO {my_leo} → min = {min(leader_end, my_end, my_leo)}")
            else:
                # KIP-279: the leader's epoch is one this replica never had; cut back to where
                # our largest epoch <= it ends and ask again with our new latest epoch.
                target = min(my_end, my_leo)
                self.truncate(target, "epoch",
                              f"leader answered epoch {leader_epoch} (end {leader_end}) which this replica "
                              f"does not have; my epoch {my_epoch} ends at {my_end} → truncate to {target}, ask again")
                # Ask again while our latest epoch changed: each round drops at least one
                # cache entry, so this ends.
                if cache.latest_epoch is not None and cache.latest_epoch != resp.requested_epoch:
                    self.schedule_next(0)
                    return
        self.state_name = "fetching"
        self.schedule_next(0)

    def on_fetch_response(self, resp: FetchResponse) -> None:
        if resp.session != self.session or self.state_name != "fetching":
            return
        p = self.p
        cfg = self.broker.cluster.config
        self.broker.scheduler.cancel(self.task)
        self.task = None
        self.in_flight = False
        if self.paused:
            return   # a stuck fetcher thread: whatever was in flight is not applied
        if resp.error == "OFFSET_OUT_OF_RANGE":
            self.broker.events.emit(FetchReceived(self.broker.id, resp.leader_id, p.topic, p.partition,
                                                  resp.fetch_offset, 0, resp.high_watermark, resp.error))
            if p.leo > resp.leader_leo:
                self.truncate(resp.leader_leo, "out_of_range",
                              f"fetch offset {p.leo} is above the leader's LEO {resp.leader_leo}")
            elif p.leo < resp.log_start_offset:
                old = p.leo
                p.log.truncate_fully_and_start_at(resp.log_start_offset)
                self.broker.events.emit(ReplicaTruncated(self.broker.id, p.topic, p.partition, old, p.leo,
                                                         "log_start",
                                                         f"fetch offset {old} is below the leader's log start "
                                                         f"{resp.log_start_offset}"))
                p.leo_changed(old, "truncate")
            self.schedule_next(0)
            return
        if resp.error is not None:
            self.broker.events.emit(FetchReceived(self.broker.id, resp.leader_id, p.topic, p.partition,
                                                  resp.fetch_offset, 0, resp.high_watermark, resp.error))
            self.schedule_next(cfg.replica_fetch_backoff_ms)
            return
        if resp.fetch_offset != p.leo:
            self.schedule_next(0)   # our log moved under the request (truncation); refetch
            return
        count = 0
        if resp.records:
            old = p.leo
            info = p.log.append_as_follower(resp.records)
            count = info.records_count if hasattr(info, "records_count") else p.leo - old
            p.leo_changed(old, "append")
        # Follower HW = min(leader HW, own LEO); it only moves forward.
        new_hw = min(resp.high_watermark, p.leo)
        self.broker.events.emit(FetchReceived(self.broker.id, resp.leader_id, p.topic, p.partition,
                                              resp.fetch_offset, count, resp.high_watermark, None))
        if new_hw > p.hw:
            p.set_hw(new_hw, "leader_hw", {"leader": resp.high_watermark, "own_leo": p.leo})
        # Retention/DeleteRecords on the leader move the follower's log start too (bounded by its HW).
        if p.log.log_start_offset < resp.log_start_offset <= p.hw:
            p.log.delete_records(resp.log_start_offset)
        self.schedule_next(0)

    def state(self) -> dict:
        return {"state": self.state_name, "leader": self.leader, "in_flight": self.in_flight,
                "paused": self.paused, "delay_ms": self.delay_ms}
