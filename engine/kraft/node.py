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

import base64
import hashlib
from typing import TYPE_CHECKING, Any

from engine.config import LogConfig
from engine.errors import CorruptRecordError, NotLeaderOrFollowerError
from engine.log.log import Log
from engine.records import ControlRecordType

from .events import (RaftAppended, RaftBeginEpochSent, RaftEndEpochSent, RaftFetchAnswered, RaftFetchSent,
                     RaftHighWatermarkChanged, RaftNodeStarted, RaftNodeStopped, RaftQuorumStateWritten,
                     RaftSnapshotDeleted, RaftSnapshotFetchAnswered, RaftSnapshotFetchSent, RaftSnapshotLoaded,
                     RaftSnapshotWritten, RaftStateChanged, RaftTruncated, RaftVoteAnswered, RaftVoteSent)
from .messages import (BeginQuorumEpochRequest, BeginQuorumEpochResponse, EndQuorumEpochRequest,
                       EndQuorumEpochResponse, FetchSnapshotRequest, FetchSnapshotResponse, RaftFetchRequest,
                       RaftFetchResponse, VoteRequest, VoteResponse)
from .quorum_state import ElectionState, QuorumStateFile
from .records import (control_batch, control_type, data_batch, kraft_version_record, leader_change_message,
                      voters_record)
from .snapshots import (BOOTSTRAP_SNAPSHOT_ID, PART_SUFFIX, SnapshotId, decode_snapshot, encode_snapshot,
                        parse_snapshot_name)

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
        self.root = root or f"node-{node_id}"
        self.dir = f"{self.root}/{METADATA_DIR}"
        self.snapshots: list[SnapshotId] = []   # frozen snapshots on disk, oldest first
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
        """The epoch of the log's last batch; with an empty log, the latest snapshot's (Kafka's
        ``lastFetchedEpoch``); -1 with neither."""
        latest = self.log.leader_epoch_cache.latest_epoch if self.log is not None else None
        if latest is None and self.snapshots and self.log is not None and self.snapshots[-1] != BOOTSTRAP_SNAPSHOT_ID \
                and self.snapshots[-1].end_offset >= self.log.log_end_offset:
            return self.snapshots[-1].epoch
        return -1 if latest is None else latest

    @property
    def log_start_offset(self) -> int:
        return self.log.log_start_offset if self.log is not None else 0

    @property
    def latest_snapshot(self) -> SnapshotId | None:
        return self.snapshots[-1] if self.snapshots else None

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
        self.fetching_snapshot: dict | None = None   # follower: {"id", "position"} of a download
        self.snapshot_counted_to = 0         # committed bytes are counted up to this offset ...
        self.bytes_since_snapshot = 0        # ... and add up to this since the last snapshot
        self.last_snapshot_ms = 0            # when the last snapshot was made or loaded (or the node started)
        self.last_clean_ms = None
        self._clean_task = None              # the log cleaner's 60 s timer

    # ---- lifecycle --------------------------------------------------------------------
    def start(self) -> None:
        """Start (or restart): recover the metadata log and read back ``quorum-state``."""
        self.incarnation += 1
        self.alive = True
        self._reset_memory()
        self.quorum.disk.mkdir(self.dir)
        if self.voter and self.config.kraft_version >= 1 and not self.quorum.disk.listdir(self.dir):
            self._format_bootstrap()
        self.snapshots = self._recover_snapshots()
        # The metadata log is not one of the log manager's logs: Kafka opens it with log start 0 and
        # no log-start-offset-checkpoint, so the log's own recovery gives its start (its first
        # segment's base offset, at or below the oldest snapshot the cleaner moved it to).
        self.log = Log(self.quorum.disk, self.dir, METADATA_TOPIC, 0, LogConfig(), self.scheduler,
                       self.quorum.events, broker=self.id, schedule_tasks=False, high_watermark=0)
        # KafkaRaftLog.recoverSnapshots: snapshots below the log start are not needed; a log that
        # starts past 0 must have a snapshot at or past its start to stand for what is gone.
        for sid in [s for s in self.snapshots if s.end_offset < self.log.log_start_offset]:
            self.snapshots.remove(sid)
            self.quorum.disk.delete(self._snap_rel(sid))
            self._emit(RaftSnapshotDeleted(self.id, sid.name, "below_log_start"))
        self._truncate_to_latest_snapshot(recovering=True)
        # Everything below the log start is in a snapshot, so committed: the HW starts there.
        self.high_watermark = self.log.log_start_offset
        self.log.update_high_watermark(self.high_watermark)
        self.snapshot_counted_to = max(self.log.log_start_offset,
                                       self.snapshots[-1].end_offset if self.snapshots else 0)
        self.last_clean_ms = self._now()
        self.last_snapshot_ms = self._now()        # SnapshotGenerator resets its counters at start
        if self.config.log_cleaner_interval_ms > 0:
            # KafkaRaftClient polls its RaftMetadataLogCleanerManager, due every 60 s, whether or
            # not anything commits.
            self._clean_task = self.scheduler.schedule_periodic(
                self.config.log_cleaner_interval_ms, self._clean_due, self.incarnation,
                name=f"raft-{self.id} log cleaner")
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
        self.scheduler.cancel(self._clean_task)
        self._clean_task = None
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
        msgs = [leader_change_message(self.id, self.voters, granting)]
        if self.config.kraft_version >= 1 and not self._voters_in_log():
            # LeaderState: the voter set came from the bootstrap snapshot only, so the leader writes it
            # to the log, with the kraft.version, in the same control batch.
            msgs += self._voter_set_records()
        self._append_batch(control_batch(msgs, base_offset=self.log_end_offset, epoch=self.epoch, now_ms=now),
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
            pos = successors.index(self.id) if self.id in successors else len(successors)
            # Kafka only shortens the fetch timeout here (FollowerState.overrideFetchTimeout):
            # hasFetchedFromLeader stays set, so this follower still refuses pre-votes until it
            # leaves the follower state itself.
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
        self._after_commit()

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
        snap = self._snapshot_for(req)
        if snap is not None:
            self._answer_fetch(src, req, snapshot=snap)
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
                      diverging: tuple[int, int] | None = None, parked_since: int | None = None,
                      snapshot: SnapshotId | None = None) -> None:
        records = b""
        count = 0
        if (error is None and diverging is None and snapshot is None and req.fetch_offset < self.log_end_offset
                and req.fetch_offset >= self.log_start_offset):
            info = self.log.read(req.fetch_offset, self.config.fetch_max_bytes, trace=False)
            records = info.records
            count = sum(h.records_count for h in info.batches)
        div_epoch, div_end = diverging if diverging is not None else (-1, -1)
        snap_end, snap_epoch = (snapshot.end_offset, snapshot.epoch) if snapshot is not None else (-1, -1)
        parked = self._now() - parked_since if parked_since is not None else 0
        self._emit(RaftFetchAnswered(self.id, src, self.epoch, error, req.fetch_offset, count, self.high_watermark,
                                     div_epoch, div_end, parked, snap_end, snap_epoch))
        leader = self.leader_id if self.state in ("leader", "follower") else -1
        self._send(src, RaftFetchResponse(error, leader, self.epoch, req.fetch_offset, records, self.high_watermark,
                                          self.log.log_start_offset if self.log else 0, req.session,
                                          div_epoch, div_end, snap_end, snap_epoch))

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
        if self.fetching_snapshot is not None:
            self._send_fetch_snapshot(dst)
            return
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
        if resp.snapshot_end_offset >= 0 and resp.snapshot_epoch >= 0:
            # Below the leader's log start: download its latest snapshot first.
            sid = SnapshotId(resp.snapshot_end_offset, resp.snapshot_epoch)
            if sid in self.snapshots:
                self._load_snapshot(sid)       # already here whole (a crash after freezing it)
            else:
                self._begin_snapshot_fetch(sid)
            self._send_fetch()
            return
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

    # ---- snapshots ----------------------------------------------------------------------
    def _snap_rel(self, sid: SnapshotId) -> str:
        return f"{self.dir}/{sid.name}"

    def _recover_snapshots(self) -> list[SnapshotId]:
        """The frozen snapshots on disk; a ``.checkpoint.part`` a crash left is deleted."""
        disk = self.quorum.disk
        found = []
        for name in sorted(disk.listdir(self.dir)):
            if name.endswith(PART_SUFFIX):
                disk.delete(f"{self.dir}/{name}")
                continue
            sid = parse_snapshot_name(name)
            if sid is not None:
                found.append(sid)
        return sorted(found)

    def _truncate_to_latest_snapshot(self, recovering: bool = False) -> bool:
        """KafkaMetadataLog.truncateToLatestSnapshot: when the latest snapshot is ahead of the log
        (a later epoch, or the same epoch past its end), the log restarts empty at the snapshot."""
        sid = self.latest_snapshot
        if sid is None:
            return False
        latest_epoch = self.log.leader_epoch_cache.latest_epoch
        latest_epoch = 0 if latest_epoch is None else latest_epoch
        if not (sid.epoch > latest_epoch or (sid.epoch == latest_epoch and sid.end_offset > self.log_end_offset)):
            return False
        old_leo = self.log_end_offset
        self.log.truncate_fully_and_start_at(sid.end_offset, reason=f"snapshot {sid.name}")
        self._forget_snapshots_before(sid, "full_truncation")
        self._emit(RaftSnapshotLoaded(self.id, sid.end_offset, sid.epoch, old_leo))
        return True

    def _forget_snapshots_before(self, sid: SnapshotId, reason: str) -> None:
        for old in [s for s in self.snapshots if s < sid]:
            self.snapshots.remove(old)
            self.quorum.disk.delete(self._snap_rel(old))
            self._emit(RaftSnapshotDeleted(self.id, old.name, reason))

    # ---- KIP-853: the voter set as records ------------------------------------------------
    def _voter_set_records(self) -> list:
        """KRaftVersionRecord and VotersRecord for this quorum's voters."""
        q = self.quorum
        directory_id = getattr(q, "directory_id", None) or _directory_id
        nodes = getattr(q, "nodes", {})
        host = lambda v: nodes[v].root if v in nodes else f"node-{v}"  # noqa: E731
        ids = {v: directory_id(v) for v in self.voters}
        return [kraft_version_record(self.config.kraft_version),
                voters_record(self.voters, ids, host, self.config.kraft_version)]

    def _format_bootstrap(self) -> None:
        """``kafka-storage format --initial-controllers``: the bootstrap snapshot 0-0 holding only the
        kraft.version and the voter set (Formatter.writeDynamicQuorumSnapshot)."""
        sid = BOOTSTRAP_SNAPSHOT_ID
        now = self._now()
        data = encode_snapshot(sid, [], now, now, header_extras=tuple(self._voter_set_records()))
        disk = self.quorum.disk
        part = self._snap_rel(sid) + ".part"
        disk.append(part, data)
        disk.fsync(part)
        disk.rename(part, self._snap_rel(sid))
        self._emit(RaftSnapshotWritten(self.id, "bootstrap", sid.name, 0, 0, 0, disk.size(self._snap_rel(sid))))

    def _voters_in_log(self) -> bool:
        """Whether a VotersRecord is in this node's log or in a snapshot made from it."""
        if any(s != BOOTSTRAP_SNAPSHOT_ID for s in self.snapshots):
            return True
        for batch in self.log.batches(self.log.log_start_offset, self.log_end_offset):
            if batch.is_control and any(control_type(r.key) == ControlRecordType.KRAFT_VOTERS for r in batch.records):
                return True
        return False

    def read_snapshot(self, sid: SnapshotId) -> list:
        """The data values of one of this node's snapshots."""
        data = self.quorum.disk.read_all(self._snap_rel(sid))
        return decode_snapshot(data, f"node {self.id} {sid.name}").values

    def _after_commit(self) -> None:
        """Count the committed bytes the state machine has applied; snapshot past the threshold;
        run the log cleaner when its interval has passed."""
        if self.log is None:
            return
        hw = self.high_watermark
        if self.snapshot_counted_to < self.log.log_start_offset:
            self.snapshot_counted_to = self.log.log_start_offset
        applied = False
        if hw > self.snapshot_counted_to:
            info = self.log.read(self.snapshot_counted_to, 1 << 31, max_offset=hw, trace=False)
            for b in info.batches:
                if b.last_offset >= hw:
                    break
                self.bytes_since_snapshot += b.size_in_bytes
                self.snapshot_counted_to = b.last_offset + 1
                applied = True
        now = self._now()
        # SnapshotGenerator.publishLogDelta: bytes first, then (when committed batches were just
        # applied) the time since the last snapshot.
        interval = self.config.max_snapshot_interval_ms
        if self.bytes_since_snapshot >= self.config.max_bytes_between_snapshots:
            self._create_snapshot("created")
        elif applied and interval > 0 and now - self.last_snapshot_ms >= interval:
            self._create_snapshot("interval")
        if self.last_clean_ms is None or now - self.last_clean_ms >= self.config.log_cleaner_interval_ms:
            self.last_clean_ms = now
            self._maybe_clean()

    def _clean_due(self, incarnation: int) -> None:
        if not self.alive or incarnation != self.incarnation or self.log is None:
            return
        now = self._now()
        if now - self.last_clean_ms >= self.config.log_cleaner_interval_ms:
            self.last_clean_ms = now
            self._maybe_clean()

    def _create_snapshot(self, how: str = "created") -> None:
        """Freeze this node's state at its last counted committed offset (the snapshot id's offset
        is the first offset after it, its epoch that record's batch epoch)."""
        end = self.snapshot_counted_to
        prev = self.latest_snapshot
        if end <= 0 or (prev is not None and end <= prev.end_offset) or end > self.high_watermark:
            return
        last = self.log.read(end - 1, 1, trace=False).batches
        if not last:
            return
        sid = SnapshotId(end, last[0].partition_leader_epoch)
        values = self.read_snapshot(prev) if prev is not None else []
        start = prev.end_offset if prev is not None else self.log.log_start_offset
        for batch in self.log.batches(start, end):
            if not batch.is_control:
                values.extend(r.value for r in batch.records if start <= r.offset < end)
        state = getattr(self.quorum, "snapshot_state", None)
        if state is not None:
            values = state(values)
        extras = tuple(self._voter_set_records()) if self.config.kraft_version >= 1 else ()
        data = encode_snapshot(sid, values, last[0].max_timestamp, self._now(), self.config.snapshot_batch_records,
                               header_extras=extras)
        self._freeze(sid, data, how, len(values))
        self.bytes_since_snapshot = 0
        self.last_snapshot_ms = self._now()

    def _freeze(self, sid: SnapshotId, data: bytes, how: str, records: int) -> None:
        disk = self.quorum.disk
        part = self._snap_rel(sid) + ".part"
        if how != "fetched":
            disk.delete(part)
            disk.append(part, data)
        disk.fsync(part)
        disk.rename(part, self._snap_rel(sid))
        if sid not in self.snapshots:
            self.snapshots.append(sid)
            self.snapshots.sort()
        self._emit(RaftSnapshotWritten(self.id, how, sid.name, sid.end_offset, sid.epoch, records,
                                       disk.size(self._snap_rel(sid))))
        self.quorum.checker.on_snapshot(self, sid, self.read_snapshot(sid))

    def _maybe_clean(self) -> None:
        """KafkaMetadataLog.maybeClean: retention by size, then by time. With two snapshots or
        more, while the oldest breaks a rule, the log start moves to the next one (never past
        the HW) and the older snapshots go."""
        cfg = self.config
        if cfg.retention_max_bytes >= 0:
            sizes = {s: self.quorum.disk.size(self._snap_rel(s)) for s in self.snapshots}
            total = sum(sizes.values())

            def by_size(s: SnapshotId) -> bool:
                nonlocal total
                if self.log.size_bytes + total > cfg.retention_max_bytes:
                    total -= sizes[s]
                    return True
                return False
            self._clean_snapshots(by_size, "retention_bytes")
        if cfg.retention_ms >= 0:
            def by_time(s: SnapshotId) -> bool:
                data = self.quorum.disk.read_all(self._snap_rel(s))
                header = decode_snapshot(data).header
                return self._now() - header.last_contained_log_timestamp > cfg.retention_ms
            self._clean_snapshots(by_time, "retention_ms")

    def _clean_snapshots(self, breaks, reason: str) -> None:
        for older, newer in list(zip(self.snapshots, self.snapshots[1:])):
            if not breaks(older) or not self._delete_before_snapshot(newer, reason):
                return

    def _delete_before_snapshot(self, sid: SnapshotId, reason: str) -> bool:
        latest = self.latest_snapshot
        if (latest is None or sid not in self.snapshots or not self.log.log_start_offset < sid.end_offset
                or sid.end_offset > latest.end_offset or sid.end_offset > self.log.high_watermark):
            return False
        self.log.delete_records(sid.end_offset, reason="snapshot")
        self.log.delete_old_segments()
        self._forget_snapshots_before(sid, reason)
        return True

    def _snapshot_for(self, req: RaftFetchRequest) -> SnapshotId | None:
        """The snapshot a fetch must take instead, or None: an empty fetcher always gets the latest
        snapshot (KafkaRaftClient.tryCompleteFetchRequest: it is cheaper than the segments), else
        ReplicatedLog.validateOffsetAndEpoch."""
        start = self.log_start_offset
        if not self.snapshots:
            return None
        if req.fetch_offset == 0:
            # Always cheaper than the segments, except the bootstrap snapshot, which holds no state.
            return self.latest_snapshot if self.latest_snapshot != BOOTSTRAP_SNAPSHOT_ID else None
        earliest = self.snapshots[0]
        if (req.fetch_offset < start or (req.fetch_offset == start and req.last_fetched_epoch != earliest.epoch)
                or req.last_fetched_epoch < earliest.epoch):
            return self.latest_snapshot
        return None

    def _on_fetch_snapshot(self, src: int, req: FetchSnapshotRequest) -> None:
        error = None
        if self.state != "leader":
            error = "NOT_LEADER_OR_FOLLOWER"
        elif req.current_leader_epoch != self.epoch:
            error = "FENCED_LEADER_EPOCH" if req.current_leader_epoch < self.epoch else "UNKNOWN_LEADER_EPOCH"
        sid = SnapshotId(req.end_offset, req.epoch)
        size, chunk = 0, b""
        if error is None:
            if sid not in self.snapshots:
                error = "SNAPSHOT_NOT_FOUND"
            else:
                size = self.quorum.disk.size(self._snap_rel(sid))
                if req.position < 0 or req.position >= size:
                    error = "POSITION_OUT_OF_RANGE"
                else:
                    chunk = self.quorum.disk.read(self._snap_rel(sid), req.position,
                                                  min(req.max_bytes, size - req.position))
                    if src in self.end_offsets:
                        self._note_voter_fetch(src)     # it counts for check quorum, as a Fetch does
        self._emit(RaftSnapshotFetchAnswered(self.id, src, self.epoch, error, sid.end_offset, sid.epoch,
                                             req.position, len(chunk), size))
        leader = self.leader_id if self.state in ("leader", "follower") else -1
        self._send(src, FetchSnapshotResponse(error, leader, self.epoch, sid.end_offset, sid.epoch, size,
                                              req.position, chunk, req.session))

    def _begin_snapshot_fetch(self, sid: SnapshotId) -> None:
        part = self._snap_rel(sid) + ".part"
        self.quorum.disk.delete(part)
        self.quorum.disk.touch(part)
        self.fetching_snapshot = {"id": sid, "position": 0}

    def _send_fetch_snapshot(self, dst: int) -> None:
        sid, pos = self.fetching_snapshot["id"], self.fetching_snapshot["position"]
        self._emit(RaftSnapshotFetchSent(self.id, dst, self.epoch, sid.end_offset, sid.epoch, pos))
        self._send(dst, FetchSnapshotRequest(self.id, self.epoch, sid.end_offset, sid.epoch, pos,
                                             self.config.fetch_max_bytes, self.fetch_session))
        self.scheduler.schedule(self.config.request_timeout_ms, self._fetch_request_timeout, self.incarnation,
                                self.fetch_session, name=f"raft-{self.id} fetch snapshot request timeout")

    def _on_fetch_snapshot_response(self, src: int, resp: FetchSnapshotResponse) -> None:
        if resp.session != self.fetch_session or not self.fetch_inflight:
            return
        self.fetch_inflight = False
        if resp.error is not None and resp.error not in ("SNAPSHOT_NOT_FOUND", "POSITION_OUT_OF_RANGE"):
            if not self._observe_epoch(resp.leader_epoch, resp.leader_id, f"FetchSnapshot answer from {src}: {resp.error}"):
                self._retry_fetch_later()
            return
        if self.state != "follower" or src != self.leader_id or resp.leader_epoch != self.epoch:
            return
        fetching = self.fetching_snapshot
        if fetching is None:
            return
        sid = fetching["id"]
        if resp.error is not None or (resp.end_offset, resp.epoch) != (sid.end_offset, sid.epoch):
            # The leader no longer has it (its log start moved on): back to Fetch, which names the new one.
            self.quorum.disk.delete(self._snap_rel(sid) + ".part")
            self.fetching_snapshot = None
            self._send_fetch()
            return
        self.has_fetched = True
        self._set_timer(self.config.fetch_timeout_ms)
        if resp.position != fetching["position"]:
            self._send_fetch()
            return
        part = self._snap_rel(sid) + ".part"
        self.quorum.disk.append(part, resp.records)
        fetching["position"] += len(resp.records)
        if fetching["position"] >= resp.size:
            self.fetching_snapshot = None
            try:
                values = decode_snapshot(self.quorum.disk.read_all(part), f"node {self.id} {sid.name}").values
            except CorruptRecordError:
                self.quorum.disk.delete(part)      # not whole: fetch it again
                self._send_fetch()
                return
            self._freeze(sid, b"", "fetched", len(values))
            self._load_snapshot(sid)
        self._send_fetch()

    def _load_snapshot(self, sid: SnapshotId) -> None:
        """The downloaded snapshot replaces the log: empty from its end offset, HW at least there."""
        old_leo = self.log_end_offset
        self.log.truncate_fully_and_start_at(sid.end_offset, reason=f"snapshot {sid.name} fetched")
        self._forget_snapshots_before(sid, "full_truncation")
        self._emit(RaftSnapshotLoaded(self.id, sid.end_offset, sid.epoch, old_leo))
        self.quorum.checker.on_snapshot_loaded(self, sid)
        self.snapshot_counted_to = sid.end_offset
        self.bytes_since_snapshot = 0
        self.last_snapshot_ms = self._now()     # SnapshotGenerator.publishSnapshot resets its counters
        if sid.end_offset > self.high_watermark:
            self._set_hw(sid.end_offset)
        else:
            self.log.update_high_watermark(self.high_watermark)

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
    FetchSnapshotRequest: RaftNode._on_fetch_snapshot,
    FetchSnapshotResponse: RaftNode._on_fetch_snapshot_response,
}


def _directory_id(node_id: int) -> str:
    """A directory id for a quorum without log directories of its own (a Kafka Uuid's text form)."""
    raw = hashlib.sha256(f"kafkaviz directory {node_id}".encode()).digest()[:16]
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")
