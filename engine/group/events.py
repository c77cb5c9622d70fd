"""Consumer-group events: the classic group protocol step by step (JoinGroup, SyncGroup,
Heartbeat, LeaveGroup), rebalances and their reasons, committed offsets, consumer fetches
and positions. ``group`` names the group; ``coordinator`` is the broker acting as its
coordinator (leader of its ``__consumer_offsets`` partition); ``member`` a member id;
partitions are ``[topic, partition]`` pairs."""
from __future__ import annotations

from ..events import Event, event

__all__ = ["CoordinatorFound", "JoinGroupSent", "RebalanceStarted", "JoinGroupCompleted", "SyncGroupSent",
           "SyncGroupCompleted", "HeartbeatAnswered", "MemberRemoved", "GroupStateChanged", "OffsetCommitSent",
           "OffsetCommitted", "OffsetCommitFailed", "OffsetsLoaded", "ConsumerFetched", "PositionReset",
           "PartitionsRevoked", "PartitionsAssigned", "ConsumerStopped", "PartitionsAdded", "GroupRequestFailed"]


@event("coordinator_found")
class CoordinatorFound(Event):
    """FindCoordinator: ``partition`` = abs(hash(group)) % offsets.topic.num.partitions."""
    group: str
    consumer: str
    partition: int
    coordinator: int


@event("group_request_failed")
class GroupRequestFailed(Event):
    """A group request could not be answered (coordinator down, unreachable, moved)."""
    group: str
    consumer: str
    api: str
    error: str
    detail: str


@event("join_group_sent")
class JoinGroupSent(Event):
    group: str
    consumer: str
    member: str
    coordinator: int
    protocols: list
    owned: list


@event("rebalance_started")
class RebalanceStarted(Event):
    """The group moved to PreparingRebalance. ``reason``: member_joined, member_left,
    session_timeout, poll_timeout, metadata_changed, rejoin."""
    group: str
    coordinator: int
    generation: int
    reason: str
    member: str


@event("join_group_completed")
class JoinGroupCompleted(Event):
    """The join phase ended: new generation, chosen protocol (by vote), leader, members."""
    group: str
    coordinator: int
    generation: int
    protocol: str | None
    leader: str | None
    members: list
    removed: list


@event("sync_group_sent")
class SyncGroupSent(Event):
    """``assignment`` is only filled by the leader (member -> partitions)."""
    group: str
    member: str
    generation: int
    leader: bool
    assignment: dict


@event("sync_group_completed")
class SyncGroupCompleted(Event):
    group: str
    coordinator: int
    generation: int
    assignment: dict


@event("heartbeat_answered")
class HeartbeatAnswered(Event):
    group: str
    member: str
    generation: int
    error: str


@event("member_removed")
class MemberRemoved(Event):
    """``reason``: leave_group, session_timeout, rebalance_timeout."""
    group: str
    coordinator: int
    member: str
    reason: str


@event("group_state_changed")
class GroupStateChanged(Event):
    group: str
    coordinator: int
    old_state: str
    new_state: str
    generation: int


@event("offset_commit_sent")
class OffsetCommitSent(Event):
    group: str
    member: str
    generation: int
    offsets: list
    auto: bool


@event("offset_committed")
class OffsetCommitted(Event):
    """The commit record is in ``__consumer_offsets`` (acknowledged with acks=all)."""
    group: str
    coordinator: int
    topic: str
    partition: int
    offset: int
    offsets_partition: int
    record_offset: int | None


@event("offset_commit_failed")
class OffsetCommitFailed(Event):
    group: str
    member: str
    error: str
    offsets: list


@event("offsets_loaded")
class OffsetsLoaded(Event):
    """A broker became coordinator for an ``__consumer_offsets`` partition and read it."""
    coordinator: int
    offsets_partition: int
    records: int
    groups: list


@event("consumer_fetched")
class ConsumerFetched(Event):
    """A consumer read from the partition's leader, below its high watermark."""
    group: str
    consumer: str
    topic: str
    partition: int
    offset: int
    records: int
    next_offset: int
    high_watermark: int
    digests: list


@event("position_reset")
class PositionReset(Event):
    """Where a consumer starts in a partition: the committed offset, or auto.offset.reset."""
    group: str
    consumer: str
    topic: str
    partition: int
    offset: int
    source: str


@event("partitions_revoked")
class PartitionsRevoked(Event):
    group: str
    consumer: str
    member: str
    generation: int
    partitions: list


@event("partitions_assigned")
class PartitionsAssigned(Event):
    group: str
    consumer: str
    member: str
    generation: int
    partitions: list
    owned: list


@event("consumer_stopped")
class ConsumerStopped(Event):
    """``how``: crash (no LeaveGroup, the session must time out), close, poll_timeout."""
    group: str
    consumer: str
    member: str
    how: str


@event("partitions_added")
class PartitionsAdded(Event):
    topic: str
    old_count: int
    new_count: int
    replicas: dict
