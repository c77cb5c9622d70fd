"""The quorum's RPCs as frozen dataclasses, fields named after Kafka's JSON message definitions
(``clients/src/main/resources/common/message/``: VoteRequest v2 with PreVote (KIP-996),
BeginQuorumEpoch, EndQuorumEpoch, Fetch with LastFetchedEpoch and DivergingEpoch). Only the
fields the model uses are here; the cluster id and topic-partition are implicit (one quorum,
``__cluster_metadata-0``). ``api`` is what :class:`engine.cluster.network.Network` names in its
drop events. Errors are Kafka's error names, or None.
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["VoteRequest", "VoteResponse", "BeginQuorumEpochRequest", "BeginQuorumEpochResponse",
           "EndQuorumEpochRequest", "EndQuorumEpochResponse", "RaftFetchRequest", "RaftFetchResponse",
           "FetchSnapshotRequest", "FetchSnapshotResponse"]


@dataclass(frozen=True)
class VoteRequest:
    """Prospective (``pre_vote``) or candidate → voter. ``replica_epoch`` is the sender's epoch:
    already bumped for a real vote, not bumped for a pre-vote. ``last_offset_epoch`` and
    ``last_offset`` describe the end of the sender's log (compared epoch first, then offset)."""
    api = "Vote"
    replica_id: int
    replica_epoch: int
    voter_id: int
    last_offset_epoch: int
    last_offset: int
    pre_vote: bool


@dataclass(frozen=True)
class VoteResponse:
    """Voter → sender: its epoch and the leader it knows (-1 if none), and the verdict."""
    api = "VoteResponse"
    error: str | None
    leader_id: int
    leader_epoch: int
    vote_granted: bool
    pre_vote: bool


@dataclass(frozen=True)
class BeginQuorumEpochRequest:
    """New leader → voters: "I lead epoch ``leader_epoch``" (resent until answered)."""
    api = "BeginQuorumEpoch"
    leader_id: int
    leader_epoch: int
    voter_id: int


@dataclass(frozen=True)
class BeginQuorumEpochResponse:
    api = "BeginQuorumEpochResponse"
    error: str | None
    leader_id: int
    leader_epoch: int


@dataclass(frozen=True)
class EndQuorumEpochRequest:
    """Resigning leader → voters, with the voters it prefers as successors, most caught-up first."""
    api = "EndQuorumEpoch"
    leader_id: int
    leader_epoch: int
    preferred_successors: tuple


@dataclass(frozen=True)
class EndQuorumEpochResponse:
    api = "EndQuorumEpochResponse"
    error: str | None
    leader_id: int
    leader_epoch: int


@dataclass(frozen=True)
class RaftFetchRequest:
    """Follower or observer → leader: pull from ``fetch_offset`` (its log end offset);
    ``last_fetched_epoch`` is the epoch of its last batch (-1 for an empty log). The leader
    parks a fetch that finds nothing new for up to ``max_wait_ms``. ``session`` lets the
    fetcher ignore answers to requests it has given up on."""
    api = "Fetch"
    replica_id: int
    current_leader_epoch: int
    fetch_offset: int
    last_fetched_epoch: int
    max_wait_ms: int
    session: int


@dataclass(frozen=True)
class RaftFetchResponse:
    """Leader → fetcher: whole batches from ``fetch_offset`` and the leader's high watermark.
    ``diverging_epoch`` / ``diverging_end_offset`` (-1 = absent): the fetcher's last fetched
    epoch ends earlier in the leader's log; truncate there and fetch again (no records then).
    ``snapshot_end_offset`` / ``snapshot_epoch`` (-1 = absent): the fetch offset is below the
    leader's log start (or its epoch is older than the leader's earliest snapshot): fetch this
    snapshot with FetchSnapshot instead. With an error, ``leader_id`` / ``leader_epoch`` say whom
    the answering node believes leads."""
    api = "FetchResponse"
    error: str | None
    leader_id: int
    leader_epoch: int
    fetch_offset: int
    records: bytes
    high_watermark: int
    log_start_offset: int
    session: int
    diverging_epoch: int = -1
    diverging_end_offset: int = -1
    snapshot_end_offset: int = -1
    snapshot_epoch: int = -1


@dataclass(frozen=True)
class FetchSnapshotRequest:
    """Follower or observer → leader: bytes of snapshot (``end_offset``, ``epoch``) from
    ``position`` (FetchSnapshotRequest v0: CurrentLeaderEpoch, SnapshotId, Position, MaxBytes)."""
    api = "FetchSnapshot"
    replica_id: int
    current_leader_epoch: int
    end_offset: int
    epoch: int
    position: int
    max_bytes: int
    session: int


@dataclass(frozen=True)
class FetchSnapshotResponse:
    """Leader → fetcher: ``records`` are the snapshot file's bytes from ``position`` (not
    batch-aligned: UnalignedRecords); ``size`` is the whole file's. Errors: Kafka's names
    (NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH, SNAPSHOT_NOT_FOUND,
    POSITION_OUT_OF_RANGE)."""
    api = "FetchSnapshotResponse"
    error: str | None
    leader_id: int
    leader_epoch: int
    end_offset: int
    epoch: int
    size: int
    position: int
    records: bytes
    session: int
