"""Events of the KRaft quorum: every election step, message, append, truncation and HW move.

Each names the ``node`` it happened on. Kinds start with ``raft_`` so they sit beside the
cluster's and the log's events in one stream; the metadata log's own storage events
(BatchAppended, LogTruncated, ...) come from its :class:`engine.log.log.Log` with
``broker`` = the node id and topic ``__cluster_metadata``. States are Kafka's names:
"unattached", "prospective", "candidate", "leader", "follower", "resigned".
"""
from __future__ import annotations

from engine.events import Event, event

__all__ = ["RaftNodeStarted", "RaftNodeStopped", "RaftStateChanged", "RaftQuorumStateWritten", "RaftVoteSent",
           "RaftVoteAnswered", "RaftBeginEpochSent", "RaftEndEpochSent", "RaftFetchSent", "RaftFetchAnswered",
           "RaftAppended", "RaftTruncated", "RaftHighWatermarkChanged", "RaftViolation", "RaftSnapshotWritten",
           "RaftSnapshotDeleted", "RaftSnapshotFetchSent", "RaftSnapshotFetchAnswered", "RaftSnapshotLoaded"]


@event("raft_node_started")
class RaftNodeStarted(Event):
    """A voter or observer process started; ``quorum_state`` is what it read back
    ({leader_id, leader_epoch, voted_id} or None when the file was missing)."""
    node: int
    voter: bool
    incarnation: int
    log_end_offset: int
    quorum_state: dict | None


@event("raft_node_stopped")
class RaftNodeStopped(Event):
    """``how``: "crash" (memory gone; with ``power_loss`` the un-fsynced bytes too,
    ``lost_files`` = [{file, size_before, size_after}]) or "shutdown" (clean)."""
    node: int
    how: str
    power_loss: bool
    lost_files: list


@event("raft_state_changed")
class RaftStateChanged(Event):
    """A QuorumState transition. ``leader`` / ``voted`` are -1 when unknown / none."""
    node: int
    old_state: str
    state: str
    old_epoch: int
    epoch: int
    leader: int
    voted: int
    reason: str


@event("raft_quorum_state_written")
class RaftQuorumStateWritten(Event):
    """``quorum-state`` rewritten (every transition); ``durable``: fsync'd before the rename."""
    node: int
    leader_id: int
    leader_epoch: int
    voted_id: int
    durable: bool


@event("raft_vote_sent")
class RaftVoteSent(Event):
    node: int
    to: int
    epoch: int
    pre_vote: bool
    last_offset_epoch: int
    last_offset: int


@event("raft_vote_answered")
class RaftVoteAnswered(Event):
    """``reason`` says why a vote was refused ("" when granted)."""
    node: int
    to: int
    epoch: int
    pre_vote: bool
    granted: bool
    reason: str


@event("raft_begin_epoch_sent")
class RaftBeginEpochSent(Event):
    node: int
    to: int
    epoch: int


@event("raft_end_epoch_sent")
class RaftEndEpochSent(Event):
    node: int
    to: int
    epoch: int
    preferred_successors: list


@event("raft_fetch_sent")
class RaftFetchSent(Event):
    node: int
    to: int
    epoch: int
    fetch_offset: int
    last_fetched_epoch: int


@event("raft_fetch_answered")
class RaftFetchAnswered(Event):
    """``parked_ms``: how long the fetch waited at the leader for something new;
    ``snapshot_end_offset`` / ``snapshot_epoch`` (-1 = none): "fetch this snapshot instead"."""
    node: int
    to: int
    epoch: int
    error: str | None
    fetch_offset: int
    records: int
    high_watermark: int
    diverging_epoch: int
    diverging_end_offset: int
    parked_ms: int
    snapshot_end_offset: int
    snapshot_epoch: int


@event("raft_appended")
class RaftAppended(Event):
    """Records written to a node's metadata log: by the leader (``role`` "leader") or fetched."""
    node: int
    role: str
    epoch: int
    base_offset: int
    last_offset: int
    control: bool


@event("raft_truncated")
class RaftTruncated(Event):
    """A follower cut its log after a DivergingEpoch answer."""
    node: int
    old_leo: int
    new_leo: int
    diverging_epoch: int
    diverging_end_offset: int


@event("raft_high_watermark_changed")
class RaftHighWatermarkChanged(Event):
    node: int
    epoch: int
    old: int
    new: int


@event("raft_snapshot_written")
class RaftSnapshotWritten(Event):
    """A node froze a snapshot file ``name``: its own state at the committed offset ``end_offset``
    (how "created", once ``max_bytes_between_snapshots`` of committed batches had been applied), or
    one downloaded whole from the leader (how "fetched"). ``records``: data records in it."""
    node: int
    how: str
    name: str
    end_offset: int
    epoch: int
    records: int
    size: int


@event("raft_snapshot_deleted")
class RaftSnapshotDeleted(Event):
    """An older snapshot was removed: the log start moved to a later one (``reason``:
    "retention_bytes", "retention_ms"), or the log was replaced by a newer one ("full_truncation")."""
    node: int
    name: str
    reason: str


@event("raft_snapshot_fetch_sent")
class RaftSnapshotFetchSent(Event):
    node: int
    to: int
    epoch: int
    end_offset: int
    snapshot_epoch: int
    position: int


@event("raft_snapshot_fetch_answered")
class RaftSnapshotFetchAnswered(Event):
    """The leader sent ``bytes`` of snapshot (``end_offset``, ``snapshot_epoch``) from ``position``
    (of ``size``), or refused with ``error``."""
    node: int
    to: int
    epoch: int
    error: str | None
    end_offset: int
    snapshot_epoch: int
    position: int
    bytes: int
    size: int


@event("raft_snapshot_loaded")
class RaftSnapshotLoaded(Event):
    """A follower or observer replaced its log with a downloaded snapshot: the log now starts, empty,
    at ``end_offset`` (``old_leo`` was its end before)."""
    node: int
    end_offset: int
    epoch: int
    old_leo: int


@event("raft_violation")
class RaftViolation(Event):
    """The checker found a broken safety rule (``rule``: "two_leaders_in_epoch",
    "epoch_went_back", "committed_lost", "log_matching", "below_hw_differs")."""
    rule: str
    node: int
    epoch: int
    detail: str
