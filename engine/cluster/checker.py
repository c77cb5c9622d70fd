"""The checker: a small Jepsen inside every run.

After each command the run hands the checker a *view* of the cluster (per partition:
the controller's leader, leader epoch and ISR; per replica: alive or not, LEO, HW, log
start offset and the digest of every record by offset) and tells it what the clients
saw (which produce requests were acknowledged at which offsets, which records a
consumer read). The checker also listens to the event stream for high-watermark moves
between commands. It reports, each once, as events in the run's own event stream:

* ``check_acked_record_lost`` — an acknowledged record is not at its offset in the
  current leader's log (the leader is the truth: every follower will truncate to it);
* ``check_replicas_diverged`` — two live in-sync replicas (any two live replicas that are
  done reconciling, in the final check) hold different records below both high watermarks;
* ``check_hw_regressed`` — a leader's high watermark moved backwards within one leader
  epoch (Kafka: "never decreases on the leader");
* ``check_uncommitted_read`` — a consumer was handed a record at or above the leader's
  high watermark, or a record that is not (any longer) the committed record at its offset.

The checker is plain data (it pickles with a run's snapshot), and it is deterministic:
findings are ordered by partition and offset, so they are part of the replayable stream.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

from ..events import Envelope, Event, EventLog, event

__all__ = [
    "Checker", "ReplicaView", "PartitionView", "AckedRecord", "ConsumedRecord",
    "AckedRecordLost", "ReplicasDiverged", "HwRegressed", "UncommittedRead", "CHECK_KINDS",
]


@event("check_acked_record_lost")
class AckedRecordLost(Event):
    """An acknowledged record is gone: the leader holds ``found`` (a digest, or None when
    its log ends before ``offset``) where the client was told ``digest`` was written."""
    topic: str
    partition: int
    offset: int
    digest: str
    acks: int
    request_id: int | None
    leader: int
    leader_epoch: int | None
    found: str | None
    leader_leo: int
    value: str | None = None


@event("check_replicas_diverged")
class ReplicasDiverged(Event):
    """Two replicas hold different records at ``offset``, below both high watermarks."""
    topic: str
    partition: int
    offset: int
    brokers: list
    digests: list
    high_watermarks: list


@event("check_hw_regressed")
class HwRegressed(Event):
    """The leader's high watermark moved from ``old`` down to ``new`` within ``leader_epoch``."""
    topic: str
    partition: int
    broker: int
    leader_epoch: int | None
    old: int
    new: int


@event("check_uncommitted_read")
class UncommittedRead(Event):
    """A consumer saw a record that was not committed. ``reason``: "above_hw" (handed out at or
    above the leader's HW), "replaced" (another record is committed at that offset now),
    "vanished" (the leader's log ends before the offset)."""
    topic: str
    partition: int
    offset: int
    digest: str
    reason: str
    leader: int | None
    high_watermark: int | None
    found: str | None


CHECK_KINDS = ("check_acked_record_lost", "check_replicas_diverged", "check_hw_regressed",
               "check_uncommitted_read")


@dataclass(frozen=True)
class ReplicaView:
    """One replica as the checker sees it. ``records`` maps offset → content digest."""

    broker: int
    alive: bool
    log_start_offset: int
    leo: int
    high_watermark: int
    records: dict
    role: str = "leader"         # what the replica itself believes
    leader_epoch: int | None = None
    incarnation: int = 0
    settled: bool = True         # leader, or follower done reconciling its log (fetching)


@dataclass(frozen=True)
class PartitionView:
    """One partition: the controller's view (leader, epoch, ISR) and every replica."""

    topic: str
    partition: int
    leader: int | None
    leader_epoch: int | None
    isr: tuple
    replicas: dict  # broker -> ReplicaView

    def leader_replica(self) -> ReplicaView | None:
        if self.leader is None:
            return None
        r = self.replicas.get(self.leader)
        return r if r is not None and r.alive else None


@dataclass(frozen=True)
class AckedRecord:
    topic: str
    partition: int
    offset: int
    digest: str
    acks: int
    request_id: int | None
    value: str | None = None   # for people reading the findings


@dataclass(frozen=True)
class ConsumedRecord:
    topic: str
    partition: int
    offset: int
    digest: str


_WATCHED = ("produce_acked", "produce_failed", "leader_elected", "high_watermark_changed")


@dataclass
class Checker:
    """Collects what clients were told and checks it against replica state.

    Use: ``checker.attach(events)`` once (and again after unpickling); after every
    command ``checker.note_acked(...)`` / ``note_consumed(...)`` for what the client saw,
    then ``checker.check(views)``; at the end ``checker.check(views, final=True)``.
    Findings are emitted into the attached EventLog and kept in ``findings``.
    """

    acked: list = field(default_factory=list)
    consumed: list = field(default_factory=list)
    findings: list = field(default_factory=list)   # plain dicts (event.to_dict())
    _reported: set = field(default_factory=set)
    _leader_hw: dict = field(default_factory=dict)  # (topic, p) -> ((broker, incarnation), epoch, hw)
    _pending: list = field(default_factory=list)
    _epochs: dict = field(default_factory=dict)     # (topic, p) -> current leader epoch (from events)
    requests: dict = field(default_factory=dict)   # request id -> {topic, partition, acks, digests, outcome}
    _early: dict = field(default_factory=dict)     # acks seen before expect_produce (request id -> event dict)
    _acked_by_tp: dict = field(default_factory=dict)
    # How many events of each kind the run emitted, over the whole stream (a run keeps only
    # the most recent events; these counts do not forget).
    event_counts: dict = field(default_factory=dict)
    _events: Any = None
    # Transient (not pickled): what was verified against which record dicts. Views whose
    # record dicts are the *same objects* as last time only grew at the end (see
    # run.ReplicaReader), so what was verified then still holds and is not re-checked.
    _fast: dict = field(default_factory=dict)

    # ---- wiring ----------------------------------------------------------------
    def attach(self, events: EventLog) -> None:
        self._events = events
        # Counted for every kind; built and handed over only for the kinds read below.
        events.count_into(self.event_counts)
        events.subscribe(self._on_event, kinds=_WATCHED)

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state["_events"] = None
        state["_fast"] = {}
        return state

    def _on_event(self, env: Envelope) -> None:
        ev = env.event
        kind = ev.kind
        if kind in ("produce_acked", "produce_failed"):
            outcome = ev.to_dict()
            outcome["time_ms"] = env.time_ms
            if ev.request_id in self.requests:
                self._resolve(ev.request_id, outcome)
            else:
                self._early[ev.request_id] = outcome
        elif kind == "leader_elected":
            self._epochs[(ev.topic, ev.partition)] = ev.leader_epoch
        elif kind == "high_watermark_changed" and getattr(ev, "role", "") == "leader":
            key = (ev.topic, ev.partition)
            epoch = self._epochs.get(key)
            if ev.new < ev.old and ev.reason != "checkpoint":
                self._pending.append(HwRegressed(ev.topic, ev.partition, ev.broker, epoch, ev.old, ev.new))

    # ---- what clients saw --------------------------------------------------------
    def expect_produce(self, request_id: int, topic: str, partition: int, acks: int, digests: list,
                       values: list | None = None) -> None:
        """A produce request was sent with records of these content digests (and values, for
        display); its answer (a ``produce_acked`` / ``produce_failed`` event) tells which
        offsets they got."""
        self.requests[request_id] = {"request_id": request_id, "topic": topic, "partition": partition,
                                     "acks": acks, "digests": list(digests),
                                     "values": list(values) if values is not None else [None] * len(digests),
                                     "outcome": None}
        early = self._early.pop(request_id, None)
        if early is not None:
            self._resolve(request_id, early)

    def _resolve(self, request_id: int, outcome: dict) -> None:
        req = self.requests[request_id]
        if req["outcome"] is not None:
            return  # a request is answered once
        req["outcome"] = outcome
        base = outcome.get("base_offset")
        if outcome["kind"] == "produce_acked" and base is not None:
            self.note_acked(AckedRecord(req["topic"], req["partition"], base + i, d, req["acks"], request_id, v)
                            for i, (d, v) in enumerate(zip(req["digests"], req["values"])))

    def note_acked(self, records: Iterable[AckedRecord]) -> None:
        for a in records:
            self.acked.append(a)
            self._acked_by_tp.setdefault((a.topic, a.partition), []).append(a)

    def note_consumed(self, records: Iterable[ConsumedRecord], views: dict | None = None) -> None:
        """Record what a consumer read; with ``views`` (state right after the read) also
        check that each record was below the leader's high watermark when it was handed out."""
        records = list(records)
        self.consumed.extend(records)
        if views is None:
            return
        for r in records:
            pv = views.get((r.topic, r.partition))
            lr = pv.leader_replica() if pv else None
            if lr is not None and r.offset >= lr.high_watermark:
                self._report(("read", r.topic, r.partition, r.offset, r.digest),
                             UncommittedRead(r.topic, r.partition, r.offset, r.digest, "above_hw",
                                             pv.leader, lr.high_watermark, lr.records.get(r.offset)))

    # ---- checks ------------------------------------------------------------------------
    def check(self, views: dict, *, final: bool = False) -> list[dict]:
        """Check the state ``views`` ((topic, partition) → PartitionView). Returns the
        findings new since the last call (as dicts) and emits them as events."""
        before = len(self.findings)
        for ev in self._pending:
            self._report(("hw", ev.topic, ev.partition, ev.broker, ev.leader_epoch, ev.old, ev.new), ev)
        self._pending = []
        for key in sorted(views):
            pv = views[key]
            lr = pv.leader_replica()
            # Only a replica that itself acts as leader counts: a restarted leader reads an
            # older HW from its checkpoint before the controller re-elects it.
            if lr is not None and lr.role == "leader":
                epoch = pv.leader_epoch if lr.leader_epoch is None else lr.leader_epoch
                self._observe_leader_hw(key, (pv.leader, lr.incarnation), epoch, lr.high_watermark, view=True)
        self._check_acked(views)
        self._check_consumed(views)
        self._check_divergence(views, final)
        return self.findings[before:]

    def _observe_leader_hw(self, key: tuple, who: tuple, epoch: int | None, hw: int, view: bool = False) -> None:
        """``who`` = (broker, incarnation): one leader process within one leader epoch."""
        last = self._leader_hw.get(key)
        if view and last is not None and last[0] == who and last[1] == epoch and hw < last[2]:
            ev = HwRegressed(key[0], key[1], who[0], epoch, last[2], hw)
            self._report(("hw", key[0], key[1], who[0], epoch, last[2], hw), ev)
        if last is None or (last[0], last[1]) != (who, epoch) or hw > last[2]:
            self._leader_hw[key] = (who, epoch, hw)

    def _check_acked(self, views: dict) -> None:
        for tp in sorted(self._acked_by_tp):
            pv = views.get(tp)
            lr = pv.leader_replica() if pv else None
            if lr is None:
                continue  # no leader to ask
            acked = self._acked_by_tp[tp]
            start = 0
            prev = self._fast.get(("acked", tp))
            if prev is not None and prev[0] is lr.records and prev[1] == (pv.leader, lr.log_start_offset):
                start = prev[2]
            for a in acked[start:]:
                rid = ("lost", a.topic, a.partition, a.offset, a.digest)
                if a.offset < lr.log_start_offset or rid in self._reported:
                    continue  # deleted by retention (not a loss), or already said
                found = lr.records.get(a.offset)
                if found != a.digest:
                    self._report(rid, AckedRecordLost(a.topic, a.partition, a.offset, a.digest, a.acks,
                                                      a.request_id, pv.leader, pv.leader_epoch, found, lr.leo,
                                                      a.value))
            self._fast[("acked", tp)] = (lr.records, (pv.leader, lr.log_start_offset), len(acked))

    def _check_consumed(self, views: dict) -> None:
        for c in sorted(self.consumed, key=lambda c: (c.topic, c.partition, c.offset)):
            rid = ("read", c.topic, c.partition, c.offset, c.digest)
            if rid in self._reported:
                continue
            pv = views.get((c.topic, c.partition))
            lr = pv.leader_replica() if pv else None
            if lr is None or c.offset < lr.log_start_offset:
                continue
            found = lr.records.get(c.offset)
            if c.offset >= lr.leo:
                self._report(rid, UncommittedRead(c.topic, c.partition, c.offset, c.digest, "vanished",
                                                  pv.leader, lr.high_watermark, None))
            elif c.offset < lr.high_watermark and found != c.digest:
                self._report(rid, UncommittedRead(c.topic, c.partition, c.offset, c.digest, "replaced",
                                                  pv.leader, lr.high_watermark, found))

    def _check_divergence(self, views: dict, final: bool) -> None:
        for key in sorted(views):
            pv = views[key]
            # A follower still reconciling after a restart may hold, below a stale checkpointed
            # HW, records it is about to truncate: only settled replicas are compared.
            live = [r for b, r in sorted(pv.replicas.items())
                    if r.alive and r.settled and (final or b in pv.isr)]
            for i, ra in enumerate(live):
                for rb in live[i + 1:]:
                    self._compare(pv, ra, rb)

    def _compare(self, pv: PartitionView, ra: ReplicaView, rb: ReplicaView) -> None:
        upto = min(ra.high_watermark, rb.high_watermark, ra.leo, rb.leo)
        start = max(ra.log_start_offset, rb.log_start_offset)
        key = ("div", pv.topic, pv.partition, ra.broker, rb.broker)
        prev = self._fast.get(key)
        if prev is not None and prev[0] is ra.records and prev[1] is rb.records:
            start = max(start, prev[2])
        for offset in range(start, upto):
            da, db = ra.records.get(offset), rb.records.get(offset)
            if da != db:
                rid = ("div", pv.topic, pv.partition, ra.broker, rb.broker, offset, da, db)
                self._report(rid, ReplicasDiverged(pv.topic, pv.partition, offset, [ra.broker, rb.broker],
                                                   [da, db], [ra.high_watermark, rb.high_watermark]))
                self._fast.pop(key, None)
                return  # the first differing offset says it; the rest follows from it
        self._fast[key] = (ra.records, rb.records, max(upto, start))

    def _report(self, rid: tuple, ev: Event) -> None:
        if rid in self._reported:
            return
        self._reported.add(rid)
        self.findings.append(ev.to_dict())
        if self._events is not None:
            self._events.emit(ev)

    # ---- summary ----------------------------------------------------------------------
    def summary(self) -> dict[str, Any]:
        counts = {k: 0 for k in CHECK_KINDS}
        for f in self.findings:
            counts[f["kind"]] += 1
        return {"ok": not self.findings, "counts": counts, "findings": list(self.findings),
                "acknowledged_records": len(self.acked), "consumed_records": len(self.consumed)}
