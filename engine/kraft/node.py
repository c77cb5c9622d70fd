"""One KRaft node: a voter's (or an observer's) QuorumState and the KafkaRaftClient rules
that move it, over the engine's Network and Scheduler.

States and transitions, as Kafka 4's QuorumState documents them:

- **unattached** (epoch known, no leader; may hold a binding vote): election timeout →
  prospective; a leader at an equal or higher epoch → follower.
- **prospective** (KIP-996 pre-vote, epoch not bumped): a majority of pre-votes → candidate;
  lost or timed out → follower of the last known leader, else unattached.
- **candidate** (epoch + 1, voted for itself): a majority of votes → leader; lost → binary
  exponential backoff, then prospective; timed out → prospective.
- **leader**: appends a LeaderChangeMessage at the start of its epoch, sends
  BeginQuorumEpoch, answers Fetch, advances the high watermark to the majority's end offset
  once a record of its own epoch is covered; resigns (check quorum) when a majority of voters
  has not fetched for ``fetch_timeout_ms * 1.5``; on graceful shutdown resigns and sends
  EndQuorumEpoch with its preferred successors.
- **follower**: fetches from the leader; no successful fetch for ``fetch_timeout_ms`` →
  prospective (a voter) or unattached (an observer, which then asks the voters again).
- **resigned**: election timeout → unattached.

A higher epoch seen in any request or response moves the node to that epoch (follower when
the leader is named, else unattached), except a pre-vote, which never changes the receiver.
The quorum is a majority of the *voters*, whether they are running or not.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine.config import LogConfig
from engine.errors import NotLeaderOrFollowerError
from engine.log.log import Log

from .events import (RaftAppended, RaftBeginEpochSent, RaftEndEpochSent, RaftFetchAnswered, RaftFetchSent,
                     RaftHighWatermarkChanged, RaftNodeStarted, RaftNodeStopped, RaftQuorumStateWritten,
                     RaftStateChanged, RaftTruncated, RaftVoteAnswered, RaftVoteSent)
from .messages import (BeginQuorumEpochRequest, BeginQuorumEpochResponse, EndQuorumEpochRequest,
                       EndQuorumEpochResponse, RaftFetchRequest, RaftFetchResponse, VoteRequest, VoteResponse)
from .quorum_state import ElectionState, QuorumStateFile
from .records import data_batch, leader_change_batch, leader_change_message

if TYPE_CHECKING:  # pragma: no cover
    from .host import QuorumHost

__all__ = ["RaftNode", "METADATA_TOPIC", "METADATA_DIR", "STATES"]

METADATA_TOPIC = "__cluster_metadata"
METADATA_DIR = f"{METADATA_TOPIC}-0"
STATES = ("unattached", "prospective", "candidate", "leader", "follower", "resigned")


class RaftNode:
    """One node of the quorum. ``alive`` and ``incarnation`` are what the Network checks;
    everything else is plain data reset by a crash, except what is on the Disk: the
    metadata log (``node-<id>/__cluster_metadata-0/``) and its ``quorum-state``."""

    def __init__(self, quorum: "QuorumHost", node_id: int, voter: bool, root: str | None = None) -> None:
        self.quorum = quorum
        self.id = node_id
        self.voter = voter
        # ``root``: the node's log directory (a combined node's is its broker's, ``broker-<id>``).
        self.dir = f"{root or f'node-{node_id}'}/{METADATA_DIR}"
        self.alive = False
        self.incarnation = 0
        self.log: Log | None = None
        self.store = QuorumStateFile(quorum.disk, self.dir, quorum.voters)
        self._reset_memory()

    # ---- shortcuts ----------------------------------------------------------------
    @property
    def config(self):
        return self.quorum.config

    @property
    def scheduler(self):
        return self.quorum.scheduler

    @property
    def voters(self) -> tuple:
        return self.quorum.voters

    @property
    def majority(self) -> int:
        return len(self.quorum.voters) // 2 + 1

    def _now(self) -> int:
        return self.scheduler.now_ms()

    def _emit(self, ev: Any) -> None:
        self.quorum.events.emit(ev)

    def _send(self, dst: int, msg: Any) -> None:
        if self.alive:
            self.quorum.network.send(self.id, dst, msg)

    @property
    def log_end_offset(self) -> int:
        return self.log.log_end_offset if self.log is not None else 0

    @property
    def last_fetched_epoch(self) -> int:
        latest = self.log.leader_epoch_cache.latest_epoch if self.log is not None else None
        return -1 if latest is None else latest

    def _reset_memory(self) -> None:
        self.state = "unattached"
        self.epoch = 0
        self.leader_id = -1
        self.voted_id = -1
        self.high_watermark = 0
        self.granted: set = set()
        self.rejected: set = set()
        self.backing_off = False
        self.retries = 0
        self.has_fetched = False
        self.fetch_session = 0
        self.fetch_inflight = False
        self.fetch_dst = -1
        self.unready: dict = {}              # observer: voter -> until when it is not asked (its fetch timed out)
        self.end_offsets: dict = {}          # leader: voter -> fetch offset last reported
        self.unacked_begin: set = set()      # leader: voters not yet answering BeginQuorumEpoch
        self.cq_fetched: set = set()         # leader: voters fetched since the check-quorum timer was reset
        self.epoch_start_offset = -1
        self.parked: dict = {}               # leader: src -> (request, parked at ms, task)
        self._timer = None
        self._leader_tasks: list = []
        self._gen = 0

    # ---- lifecycle --------------------------------------------------------------------
    def start(self) -> None:
        """Start (or restart): recover the metadata log and read back ``quorum-state``."""
        self.incarnation += 1
        self.alive = True
        self._reset_memory()
        self.quorum.disk.mkdir(self.dir)
        self.log = Log(self.quorum.disk, self.dir, METADATA_TOPIC, 0, LogConfig(), self.scheduler,
                       self.quorum.events, broker=self.id, schedule_tasks=False, high_watermark=0)
        stored = self.store.read() if self.voter else None
        self._emit(RaftNodeStarted(self.id, self.voter, self.incarnation, self.log.log_end_offset,
                                   None if stored is None else stored.to_dict()))
        if stored is None:
            self._become_unattached(0, -1, "started with no quorum-state")
        elif stored.leader_id == self.id:
            # It led this epoch before the restart and cannot lead it again.
            self._transition("resigned", stored.leader_epoch, self.id, stored.voted_id, "restarted as the epoch's leader")
            self._set_timer(self.config.random_election_timeout_ms(self.quorum.rng))
        elif stored.leader_id >= 0:
            self.epoch, self.voted_id = stored.leader_epoch, stored.voted_id
            self._become_follower(stored.leader_epoch, stored.leader_id, "restarted; quorum-state names the leader")
        else:
            self._become_unattached(stored.leader_epoch, stored.voted_id, "restarted")

    def crash(self, power_loss: bool) -> None:
        self._stop_timers()
        self.alive = False
        lost: list = []
        if power_loss:
            lost = [{"file": f, "size_before": a, "size_after": b}
                    for f, a, b in self.quorum.disk.crash(self.dir)]
        else:
            self.quorum.disk.close_all()
        self.log = None
        self._emit(RaftNodeStopped(self.id, "crash", power_loss, lost))

    def shutdown(self) -> None:
        """Clean stop: flush and close the log (a leader resigns first: see Quorum.shutdown)."""
        self._stop_timers()
        if self.log is not None:
            self.log.flush()
            self.log.close()
        self.alive = False
        self.log = None
        self._emit(RaftNodeStopped(self.id, "shutdown", False, []))

    def _stop_timers(self) -> None:
        self.scheduler.cancel(self._timer)
        self._timer = None
        for t in self._leader_tasks:
            self.scheduler.cancel(t)
        self._leader_tasks = []
        for _, _, task in self.parked.values():
            self.scheduler.cancel(task)
        self.parked = {}

    # ---- timers -----------------------------------------------------------------------
    def _set_timer(self, delay_ms: int) -> None:
        self.scheduler.cancel(self._timer)
        self._timer = self.scheduler.schedule(delay_ms, self._on_timer, self.incarnation, self._gen,
                                              name=f"raft-{self.id} {self.state} timer")

    def _on_timer(self, incarnation: int, gen: int) -> None:
        if not self.alive or incarnation != self.incarnation or gen != self._gen:
            return
        self._timer = None
        s = self.state
        if s == "unattached":
            if self.voter:
                self._become_prospective("election timeout")
            else:
                self._send_fetch()
                self._set_timer(self.config.request_timeout_ms)
        elif s == "prospective":
            self._lose_pre_vote("election timeout")
        elif s == "candidate":
            self._become_prospective("backoff over" if self.backing_off else "election timeout")
        elif s == "follower":
            if self.voter:
                self._become_prospective(f"no fetch answered by leader {self.leader_id} in {self.config.fetch_timeout_ms} ms")
            else:
                self._mark_unready(self.leader_id)     # its request to the leader is still pending
                self._become_unattached(self.epoch, -1, "fetch timeout: looking for the leader again")
        elif s == "resigned":
            self._become_unattached(self.epoch, self.voted_id, "election timeout after resigning")

    # ---- transitions ------------------------------------------------------------------
    def _transition(self, state: str, epoch: int, leader: int, voted: int, reason: str) -> None:
        assert state in STATES, state
        assert epoch >= self.epoch or self.state == "unattached" and self.epoch == 0, (self.id, epoch, self.epoch)
        old_state, old_epoch = self.state, self.epoch
        self._leave_state()
        self.state, self.epoch, self.leader_id, self.voted_id = state, epoch, leader, voted
        self._gen += 1
        if self.voter:
            durable = self.config.fsync_quorum_state
            self.store.write(ElectionState(epoch, leader, voted), durable=durable)
            self._emit(RaftQuorumStateWritten(self.id, leader, epoch, voted, durable))
        self._emit(RaftStateChanged(self.id, old_state, state, old_epoch, epoch, leader, voted, reason))
        self.quorum.checker.on_state(self)

    def _leave_state(self) -> None:
        self.scheduler.cancel(self._timer)
        self._timer = None
        if self.state == "leader":
            for t in self._leader_tasks:
                self.scheduler.cancel(t)
            self._leader_tasks = []
            for src, (req, _, task) in sorted(self.parked.items()):
                self.scheduler.cancel(task)
                self._answer_fetch(src, req, error="NOT_LEADER_OR_FOLLOWER")
            self.parked = {}
        self.granted, self.rejected = set(), set()
        self.backing_off = False
        self.has_fetched = False
        self.fetch_inflight = False

    def _become_unattached(self, epoch: int, voted: int, reason: str) -> None:
        self._transition("unattached", epoch, -1, voted, reason)
        if self.voter:
            self._set_timer(self.config.random_election_timeout_ms(self.quorum.rng))
        else:
            self._send_fetch()
            self._set_timer(self.config.request_timeout_ms)

    def _become_follower(self, epoch: int, leader: int, reason: str) -> None:
        voted = self.voted_id if epoch == self.epoch else -1
        self._transition("follower", epoch, leader, voted, reason)
        self.retries = 0
        self._set_timer(self.config.fetch_timeout_ms)
        self._send_fetch()

    def _become_prospective(self, reason: str) -> None:
        self._transition("prospective", self.epoch, self.leader_id, self.voted_id, reason)
        self.granted = {self.id}
        self._set_timer(self.config.random_election_timeout_ms(self.quorum.rng))
        self._request_votes(pre_vote=True)
        if len(self.granted) >= self.majority:
            self._become_candidate("a majority of pre-votes")

    def _lose_pre_vote(self, reason: str) -> None:
        if self.leader_id >= 0 and self.leader_id != self.id:
            self._become_follower(self.epoch, self.leader_id, f"pre-vote lost ({reason}); back to the last leader")
        else:
            self._become_unattached(self.epoch, self.voted_id, f"pre-vote lost ({reason})")

    def _become_candidate(self, reason: str) -> None:
        self.retries += 1
        self._transition("candidate", self.epoch + 1, -1, self.id, reason)
        self.granted = {self.id}
        self._set_timer(self.config.random_election_timeout_ms(self.quorum.rng))
        self._request_votes(pre_vote=False)
        if len(self.granted) >= self.majority:
            self._become_leader()

    def _become_leader(self) -> None:
        granting = tuple(sorted(self.granted))
        self._transition("leader", self.epoch, self.id, self.voted_id, f"won the election with votes from {list(granting)}")
        self.retries = 0
        now = self._now()
        self.epoch_start_offset = self.log_end_offset
        self.end_offsets = {v: -1 for v in self.voters if v != self.id}
        self.unacked_begin = {v for v in self.voters if v != self.id}
        self.cq_fetched = {self.id}
        # The HW may only move past a record of this epoch: write one at once.
        msg = leader_change_message(self.id, self.voters, granting)
        self._append_batch(leader_change_batch(msg, base_offset=self.log_end_offset, epoch=self.epoch, now_ms=now),
                           control=True)
        self._send_begin_epoch()
        if len(self.voters) > 1:
            self._leader_tasks = [
                self.scheduler.schedule(self.config.check_quorum_timeout_ms, self._check_quorum_expired,
                                        self.incarnation, self._gen, name=f"raft-{self.id} check quorum"),
                self.scheduler.schedule_periodic(self.config.begin_quorum_epoch_timeout_ms, self._send_begin_epoch,
                                                 name=f"raft-{self.id} BeginQuorumEpoch resend"),
            ]
        self._maybe_advance_hw()

    def _become_resigned(self, preferred: tuple, reason: str) -> None:
        self._transition("resigned", self.epoch, self.id, self.voted_id, reason)
        self._set_timer(self.config.random_election_timeout_ms(self.quorum.rng))
        for v in self.voters:
            if v != self.id:
                self._emit(RaftEndEpochSent(self.id, v, self.epoch, list(preferred)))
                self._send(v, EndQuorumEpochRequest(self.id, self.epoch, tuple(preferred)))

    def resign(self) -> None:
        """Graceful resignation (before a clean shutdown): successors most caught up first."""
        if self.state != "leader":
            return
        order = sorted(self.end_offsets, key=lambda v: (-self.end_offsets[v], v))
        self._become_resigned(tuple(order), "graceful shutdown")

    def _observe_epoch(self, epoch: int, leader: int, reason: str) -> bool:
        """React to an epoch (and leader) named by a message. True if the node moved."""
        if epoch > self.epoch:
            if leader >= 0 and leader != self.id:
                self._become_follower(epoch, leader, reason)
            else:
                self._become_unattached(epoch, -1, reason)
            return True
        # Same epoch: only a node that knows no leader for it learns one (a prospective keeps
        # the leader it lost touch with; a vote answer naming that leader is no news).
        if (epoch == self.epoch and leader >= 0 and leader != self.id and self.leader_id < 0
                and self.state in ("unattached", "prospective", "candidate")):
            self._become_follower(epoch, leader, reason)
            return True
        return False

    # ---- elections --------------------------------------------------------------------
    def _request_votes(self, pre_vote: bool) -> None:
        last_epoch, leo = self.last_fetched_epoch, self.log_end_offset
        for v in self.voters:
            if v != self.id:
                self._emit(RaftVoteSent(self.id, v, self.epoch, pre_vote, last_epoch, leo))
                self._send(v, VoteRequest(self.id, self.epoch, v, last_epoch, leo, pre_vote))

    def _vote_verdict(self, req: VoteRequest) -> tuple[bool, str]:
        up_to_date = (req.last_offset_epoch, req.last_offset) >= (self.last_fetched_epoch, self.log_end_offset)
        if req.replica_epoch > self.epoch:      # only a pre-vote gets here: we are behind
            return up_to_date, "" if up_to_date else "log not up to date"
        s = self.state
        if s == "leader":
            return False, "already leader in this epoch"
        if s == "resigned":
            return False, "resigned from this epoch"
        if s == "follower":
            if not req.pre_vote:
                return False, f"already following leader {self.leader_id}"
            if self.has_fetched:
                return False, f"leader {self.leader_id} answered my fetches"
            return up_to_date, "" if up_to_date else "log not up to date"
        if req.pre_vote:
            return up_to_date, "" if up_to_date else "log not up to date"
        if s == "candidate":
            return False, "voted for myself"
        if self.voted_id >= 0:
            return self.voted_id == req.replica_id, "" if self.voted_id == req.replica_id else f"voted for {self.voted_id}"
        if self.leader_id >= 0:
            return False, f"leader {self.leader_id} is known"
        return up_to_date, "" if up_to_date else "log not up to date"

    def _on_vote_request(self, src: int, req: VoteRequest) -> None:
        if not self.voter or req.replica_id not in self.voters:
            return
        if req.replica_epoch < self.epoch:
            granted, why, error = False, f"epoch {req.replica_epoch} < {self.epoch}", "FENCED_LEADER_EPOCH"
        else:
            if req.replica_epoch > self.epoch and not req.pre_vote:
                self._become_unattached(req.replica_epoch, -1, f"vote request from {src} at a higher epoch")
            granted, why = self._vote_verdict(req)
            error = None
            if granted and not req.pre_vote and self.voted_id != src:
                self._transition("unattached", self.epoch, -1, src, f"voted for {src}")
                self._set_timer(self.config.random_election_timeout_ms(self.quorum.rng))
        self._emit(RaftVoteAnswered(self.id, src, req.replica_epoch, req.pre_vote, granted, why))
        self._send(src, VoteResponse(error, self.leader_id, self.epoch, granted, req.pre_vote))

    def _on_vote_response(self, src: int, resp: VoteResponse) -> None:
        if self._observe_epoch(resp.leader_epoch, resp.leader_id, f"vote answer from {src}"):
            return
        if resp.pre_vote and self.state == "prospective" and resp.leader_epoch <= self.epoch:
            (self.granted if resp.vote_granted else self.rejected).add(src)
            if len(self.granted) >= self.majority:
                self._become_candidate("a majority of pre-votes")
            elif len(self.rejected) >= self.majority:
                self._lose_pre_vote(f"pre-vote refused by {sorted(self.rejected)}")
        elif (not resp.pre_vote and self.state == "candidate" and resp.leader_epoch == self.epoch
              and not self.backing_off):
            (self.granted if resp.vote_granted else self.rejected).add(src)
            if len(self.granted) >= self.majority:
                self._become_leader()
            elif len(self.rejected) >= self.majority:
                self.backing_off = True
                self._set_timer(self.config.binary_exponential_backoff_ms(self.retries, self.quorum.rng))

    # ---- BeginQuorumEpoch / EndQuorumEpoch ---------------------------------------------
    def _send_begin_epoch(self) -> None:
        if self.state != "leader":
            return
        for v in sorted(self.unacked_begin):
            self._emit(RaftBeginEpochSent(self.id, v, self.epoch))
            self._send(v, BeginQuorumEpochRequest(self.id, self.epoch, v))

    def _on_begin_epoch(self, src: int, req: BeginQuorumEpochRequest) -> None:
        if req.leader_epoch < self.epoch:
            self._send(src, BeginQuorumEpochResponse("FENCED_LEADER_EPOCH", self.leader_id, self.epoch))
            return
        if not (self.state == "follower" and self.epoch == req.leader_epoch and self.leader_id == req.leader_id):
            if req.leader_epoch > self.epoch or self.state in ("unattached", "prospective", "candidate"):
                self._become_follower(req.leader_epoch, req.leader_id, f"BeginQuorumEpoch from {src}")
        self._send(src, BeginQuorumEpochResponse(None, self.leader_id, self.epoch))

    def _on_begin_epoch_response(self, src: int, resp: BeginQuorumEpochResponse) -> None:
        if self._observe_epoch(resp.leader_epoch, resp.leader_id, f"BeginQuorumEpoch answer from {src}"):
            return
        if self.state == "leader" and resp.error is None and resp.leader_epoch == self.epoch:
            self.unacked_begin.discard(src)

    def _on_end_epoch(self, src: int, req: EndQuorumEpochRequest) -> None:
        if req.leader_epoch < self.epoch:
            self._send(src, EndQuorumEpochResponse("FENCED_LEADER_EPOCH", self.leader_id, self.epoch))
            return
        if req.leader_epoch > self.epoch:
            self._become_unattached(req.leader_epoch, -1, f"EndQuorumEpoch from {src}")
        elif self.state == "follower" and self.leader_id == req.leader_id:
            successors = list(req.preferred_successors)
            pos = successors.index(self.id) if self.id in successors else -1
            # The leader said it is gone: stop counting its last fetch against pre-votes.
            self.has_fetched = False
            self._set_timer(self.config.strict_exponential_backoff_ms(pos, len(successors)))
        self._send(src, EndQuorumEpochResponse(None, self.leader_id, self.epoch))

    # ---- leader: appends, fetches, high watermark -----------------------------------------
    def append(self, values: list[bytes]) -> tuple[int, int]:
        """The leader's write path: one batch of opaque records in this epoch. Returns its
        (base offset, last offset); NotLeaderOrFollowerError on any other node."""
        if not self.alive or self.state != "leader":
            raise NotLeaderOrFollowerError(f"node {self.id} is {self.state} in epoch {self.epoch}, not the leader")
        base = self.log_end_offset
        self._append_batch(data_batch(values, base_offset=base, epoch=self.epoch, now_ms=self._now()), control=False)
        self._maybe_advance_hw()
        self._complete_parked()
        return base, self.log_end_offset - 1

    def _append_batch(self, batch: bytes, control: bool) -> None:
        info = self.log.append_as_follower(batch)
        if self.config.flush_metadata_log:
            self.log.flush()
        self._emit(RaftAppended(self.id, "leader", self.epoch, info.first_offset, info.last_offset, control))

    def _flushed_end(self) -> int:
        return self.log.recovery_point if self.config.flush_metadata_log else self.log_end_offset

    def _maybe_advance_hw(self) -> bool:
        if self.state != "leader":
            return False
        offsets = sorted([self._flushed_end()] + [self.end_offsets.get(v, -1) for v in self.voters if v != self.id],
                         reverse=True)
        candidate = offsets[self.majority - 1]
        if candidate > self.epoch_start_offset and candidate > self.high_watermark:
            self._set_hw(candidate)
            return True
        return False

    def _set_hw(self, hw: int) -> None:
        old = self.high_watermark
        self.high_watermark = hw
        self.log.update_high_watermark(hw)
        self._emit(RaftHighWatermarkChanged(self.id, self.epoch, old, hw))
        self.quorum.checker.on_high_watermark(self, old, hw)

    def _diverging(self, req: RaftFetchRequest) -> tuple[int, int] | None:
        if req.fetch_offset == 0 and req.last_fetched_epoch < 0:
            return None
        epoch, end = self.log.leader_epoch_cache.end_offset_for(req.last_fetched_epoch, self.log_end_offset)
        if epoch != req.last_fetched_epoch or end < req.fetch_offset:
            return epoch, end
        return None

    def _on_fetch(self, src: int, req: RaftFetchRequest) -> None:
        if self.state != "leader":
            self._answer_fetch(src, req, error="NOT_LEADER_OR_FOLLOWER")
            return
        if req.current_leader_epoch != self.epoch:
            err = "FENCED_LEADER_EPOCH" if req.current_leader_epoch < self.epoch else "UNKNOWN_LEADER_EPOCH"
            self._answer_fetch(src, req, error=err)
            return
        div = self._diverging(req)
        if div is not None:
            self._answer_fetch(src, req, diverging=div)
            return
        hw_moved = False
        if src in self.end_offsets:
            self.end_offsets[src] = req.fetch_offset
            self.unacked_begin.discard(src)
            self._note_voter_fetch(src)
            hw_moved = self._maybe_advance_hw()
        if hw_moved:
            self._complete_parked()
        if req.fetch_offset < self.log_end_offset or hw_moved or req.max_wait_ms <= 0:
            self._answer_fetch(src, req)
            return
        old = self.parked.pop(src, None)
        if old is not None:
            self.scheduler.cancel(old[2])
        task = self.scheduler.schedule(req.max_wait_ms, self._parked_expired, src, req.session, self._gen,
                                       name=f"raft-{self.id} parked fetch from {src}")
        self.parked[src] = (req, self._now(), task)

    def _note_voter_fetch(self, src: int) -> None:
        self.cq_fetched.add(src)
        if len(self.cq_fetched) >= self.majority and self._leader_tasks:
            self.scheduler.cancel(self._leader_tasks[0])
            self._leader_tasks[0] = self.scheduler.schedule(self.config.check_quorum_timeout_ms,
                                                            self._check_quorum_expired, self.incarnation, self._gen,
                                                            name=f"raft-{self.id} check quorum")
            self.cq_fetched = {self.id}

    def _check_quorum_expired(self, incarnation: int, gen: int) -> None:
        if not self.alive or incarnation != self.incarnation or gen != self._gen or self.state != "leader":
            return
        self._become_resigned((), f"check quorum: only {sorted(self.cq_fetched)} fetched in "
                                  f"{self.config.check_quorum_timeout_ms} ms, a majority is {self.majority}")

    def _parked_expired(self, src: int, session: int, gen: int) -> None:
        entry = self.parked.get(src)
        if entry is None or entry[0].session != session or gen != self._gen:
            return
        del self.parked[src]
        self._answer_fetch(src, entry[0], parked_since=entry[1])

    def _complete_parked(self) -> None:
        for src in sorted(self.parked):
            req, since, task = self.parked.pop(src)
            self.scheduler.cancel(task)
            self._answer_fetch(src, req, parked_since=since)

    def _answer_fetch(self, src: int, req: RaftFetchRequest, error: str | None = None,
                      diverging: tuple[int, int] | None = None, parked_since: int | None = None) -> None:
        records = b""
        count = 0
        if error is None and diverging is None and req.fetch_offset < self.log_end_offset:
            info = self.log.read(req.fetch_offset, self.config.fetch_max_bytes, trace=False)
            records = info.records
            count = sum(h.records_count for h in info.batches)
        div_epoch, div_end = diverging if diverging is not None else (-1, -1)
        parked = self._now() - parked_since if parked_since is not None else 0
        self._emit(RaftFetchAnswered(self.id, src, self.epoch, error, req.fetch_offset, count, self.high_watermark,
                                     div_epoch, div_end, parked))
        leader = self.leader_id if self.state in ("leader", "follower") else -1
        self._send(src, RaftFetchResponse(error, leader, self.epoch, req.fetch_offset, records, self.high_watermark,
                                          self.log.log_start_offset if self.log else 0, req.session,
                                          div_epoch, div_end))

    # ---- follower / observer: fetching ------------------------------------------------
    def _fetch_target(self) -> int | None:
        if self.state == "follower":
            return self.leader_id
        if not self.voter and self.state == "unattached":
            # Kafka's RequestManager: a voter whose last request timed out is not ready; ask another.
            now = self._now()
            ready = [v for v in self.voters if self.unready.get(v, -1) <= now]
            return self.quorum.rng.choice(ready or self.voters)
        return None

    def _send_fetch(self) -> None:
        dst = self._fetch_target()
        if dst is None or not self.alive:
            return
        self.fetch_session += 1
        self.fetch_inflight = True
        self.fetch_dst = dst
        req = RaftFetchRequest(self.id, self.epoch, self.log_end_offset, self.last_fetched_epoch,
                               self.config.fetch_max_wait_ms, self.fetch_session)
        self._emit(RaftFetchSent(self.id, dst, self.epoch, req.fetch_offset, req.last_fetched_epoch))
        self._send(dst, req)
        self.scheduler.schedule(self.config.request_timeout_ms, self._fetch_request_timeout, self.incarnation,
                                self.fetch_session, name=f"raft-{self.id} fetch request timeout")

    def _fetch_request_timeout(self, incarnation: int, session: int) -> None:
        if self.alive and incarnation == self.incarnation and session == self.fetch_session and self.fetch_inflight:
            self._mark_unready(self.fetch_dst)
            self._send_fetch()

    def _mark_unready(self, node: int) -> None:
        """Kafka's RequestManager: a node whose request timed out is not asked again for a while."""
        self.unready = {**self.unready, node: self._now() + self.config.request_timeout_ms}

    def _retry_fetch_later(self) -> None:
        self.fetch_inflight = True
        self.scheduler.schedule(self.config.retry_backoff_ms, self._retry_fetch, self.incarnation, self.fetch_session,
                                name=f"raft-{self.id} fetch retry")

    def _retry_fetch(self, incarnation: int, session: int) -> None:
        if self.alive and incarnation == self.incarnation and session == self.fetch_session:
            self._send_fetch()

    def _on_fetch_response(self, src: int, resp: RaftFetchResponse) -> None:
        if resp.session != self.fetch_session or not self.fetch_inflight:
            return
        self.fetch_inflight = False
        if resp.error is not None:
            if not self._observe_epoch(resp.leader_epoch, resp.leader_id, f"fetch answer from {src}: {resp.error}"):
                self._retry_fetch_later()
            return
        if (not self.voter and self.state == "unattached" and resp.leader_id == src
                and resp.leader_epoch >= self.epoch):
            # An observer's fetch reached the leader itself: follow it (and fetch again as its follower).
            self._become_follower(resp.leader_epoch, src, f"fetch answered by leader {src}")
            return
        if self.state != "follower" or src != self.leader_id or resp.leader_epoch != self.epoch:
            return
        self.has_fetched = True
        self.unready = {}
        self._set_timer(self.config.fetch_timeout_ms)
        if resp.diverging_epoch >= 0 or resp.diverging_end_offset >= 0:
            # The truncated log may still diverge further back (the next fetch checks again):
            # learn no HW from this answer.
            self._truncate_diverging(resp.diverging_epoch, resp.diverging_end_offset)
            self._send_fetch()
            return
        if resp.records and resp.fetch_offset == self.log_end_offset:
            info = self.log.append_as_follower(resp.records)
            if self.voter and self.config.flush_metadata_log:
                # A voter's next Fetch reports this end offset to the leader: make it durable first.
                self.log.flush()
            self._emit(RaftAppended(self.id, "follower" if self.voter else "observer", self.epoch,
                                    info.first_offset, info.last_offset, False))
        hw = min(resp.high_watermark, self.log_end_offset)
        if hw > self.high_watermark:
            self._set_hw(hw)
        self._send_fetch()

    def _truncate_diverging(self, epoch: int, end_offset: int) -> None:
        old = self.log_end_offset
        if epoch < 0:
            target = 0
        else:
            local_epoch, local_end = self.log.leader_epoch_cache.end_offset_for(epoch, old)
            target = min(end_offset, local_end) if local_epoch >= 0 else 0
        target = max(0, min(target, old))
        self.log.truncate_to(target, reason=f"diverging epoch {epoch} ends at {end_offset}")
        self._emit(RaftTruncated(self.id, old, self.log_end_offset, epoch, end_offset))
        self.quorum.checker.on_truncate(self, target)

    # ---- network endpoint ---------------------------------------------------------------
    def receive(self, src: int, msg: Any) -> None:
        handler = _HANDLERS.get(type(msg))
        if handler is not None:
            handler(self, src, msg)

    def _on_response_ignored(self, src: int, msg: Any) -> None:
        self._observe_epoch(msg.leader_epoch, msg.leader_id, f"{msg.api} from {src}")

    def describe(self) -> dict:
        return {"node": self.id, "voter": self.voter, "alive": self.alive, "state": self.state, "epoch": self.epoch,
                "leader": self.leader_id, "voted": self.voted_id, "log_end_offset": self.log_end_offset,
                "high_watermark": self.high_watermark}


_HANDLERS = {
    VoteRequest: RaftNode._on_vote_request,
    VoteResponse: RaftNode._on_vote_response,
    BeginQuorumEpochRequest: RaftNode._on_begin_epoch,
    BeginQuorumEpochResponse: RaftNode._on_begin_epoch_response,
    EndQuorumEpochRequest: RaftNode._on_end_epoch,
    EndQuorumEpochResponse: RaftNode._on_response_ignored,
    RaftFetchRequest: RaftNode._on_fetch,
    RaftFetchResponse: RaftNode._on_fetch_response,
}
