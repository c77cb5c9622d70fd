"""Events of the replicated cluster (brokers, network, controller, replication).

Every event names the broker it happened on (``broker``; ``None`` for the client or
the cluster as a whole) and, where it concerns one partition, ``topic`` and
``partition``. Storage events emitted by each broker's Logs (``engine/log/events.py``)
go to the same EventLog with their ``broker`` field set. All fields are JSON-plain.

Offsets follow Kafka's conventions: ``leo`` is the offset after the last record,
``high_watermark`` the first offset not yet committed. Record digests are
``partition.record_digest`` of the record's key and value (12 hex digits).
"""
from __future__ import annotations

from engine.events import Event, event

__all__ = [
    "BrokerStarted", "BrokerCrashed", "BrokerShutdown", "BrokerRegistered", "BrokerFenced",
    "ControllerChanged", "TopicCreated", "LeaderElected", "PartitionOffline", "IsrShrunk",
    "IsrExpanded", "AlterPartitionSent", "AlterPartitionRejected", "BecameLeader", "BecameFollower",
    "FetchSent", "FetchParked", "FetchAnswered", "FetchReceived", "RemoteLeoUpdated", "LeoChanged", "HighWatermarkChanged",
    "EpochRequestSent", "EpochRequestAnswered", "ReplicaTruncated", "ProduceReceived",
    "ProduceAppended", "ProduceWaiting", "ProduceAcked", "ProduceFailed", "ConsumerRead",
    "CheckpointWritten", "LinkChanged", "MessageDropped", "ConfigChanged", "LogsLoaded",
    "ProducerCreated", "ProduceRetried", "ProduceDuplicate", "MetadataApplied",
    "ClientConnected", "ClientDisconnected", "ClientRequest", "ClientResponse",
]


# ---- brokers and controller ---------------------------------------------------------

@event("broker_started")
class BrokerStarted(Event):
    """A broker process started (first boot or restart). ``clean_shutdown`` = the
    ``.kafka_cleanshutdown`` marker was found (recovery of every log can be skipped
    below the recovery point)."""
    broker: int
    incarnation: int
    restart: bool
    clean_shutdown: bool


@event("logs_loaded")
class LogsLoaded(Event):
    """A (re)started broker opened its partition logs. ``logs`` = [{topic, partition,
    log_start_offset, leo, recovery_point, high_watermark}]."""
    broker: int
    logs: list


@event("broker_crashed")
class BrokerCrashed(Event):
    """Hard crash: memory gone, in-flight messages dropped, and with ``power_loss``
    every un-fsynced byte of its log directory lost. ``lost_files`` = [{file, size_before, size_after}]."""
    broker: int
    power_loss: bool
    lost_files: list


@event("broker_shutdown")
class BrokerShutdown(Event):
    """Clean (controlled) shutdown: leadership moved away first (``moved_leaders`` =
    ["topic-p", ...]), then logs flushed, checkpoints and the clean-shutdown marker written."""
    broker: int
    moved_leaders: list


@event("broker_registered")
class BrokerRegistered(Event):
    """The active controller accepted a broker's heartbeat from a new process
    (``incarnation``) and gave it a new ``broker_epoch``; it is unfenced."""
    broker: int
    broker_epoch: int
    incarnation: int
    controller: int


@event("broker_fenced")
class BrokerFenced(Event):
    """The controller fenced a broker. ``reason``: "session_timeout" (no heartbeat for
    broker.session.timeout.ms; ``last_heartbeat_ms``), "controlled_shutdown"."""
    broker: int
    reason: str
    last_heartbeat_ms: int | None
    controller: int


@event("metadata_applied")
class MetadataApplied(Event):
    """Node ``node`` applied the committed metadata records in ``[from_offset, to_offset)`` of
    ``__cluster_metadata`` (``records``: their types in log order): a broker acts on them,
    a controller's view moves on. ``to_offset`` is its applied offset now."""
    node: int
    from_offset: int
    to_offset: int
    records: list


@event("producer_id_block_received")
class ProducerIdBlockReceived(Event):
    """KRaft (KIP-730): broker ``broker`` got the producer-id block ``[first, first + size)`` from
    controller ``controller`` (AllocateProducerIds, answered once its ProducerIdsRecord committed)."""
    broker: int
    first: int
    size: int
    controller: int


__all__ += ["ProducerIdBlockReceived"]


@event("controller_changed")
class ControllerChanged(Event):
    """A new active controller (KRaft: a new quorum leader; ZooKeeper era: the broker
    that won the /controller znode). ``controller_epoch`` is bumped each time.
    ``reason``: "startup", "session_timeout" (the active broker died), "lost_quorum" (it
    was cut off from a majority of brokers), "controlled_shutdown"."""
    old: int | None
    new: int
    controller_epoch: int
    reason: str


@event("topic_created")
class TopicCreated(Event):
    """``assignment`` = {"0": [replica broker ids, preferred leader first], ...};
    ``placement`` explains how it was chosen ("explicit" or "striped start=S shift=K")."""
    topic: str
    partitions: int
    replication_factor: int
    assignment: dict
    placement: str
    config: dict


@event("leader_elected")
class LeaderElected(Event):
    """The controller chose a leader. ``rule``: "initial", "clean" (first live replica in
    assignment order that is in the ISR), "unclean" (first live replica, not in the ISR),
    "preferred", "controlled_shutdown", "leader_restarted". ``candidates`` = the
    assignment with each replica's status."""
    topic: str
    partition: int
    previous_leader: int | None
    chosen: int
    rule: str
    candidates: list
    leader_epoch: int
    partition_epoch: int
    isr: list
    controller: int


@event("partition_offline")
class PartitionOffline(Event):
    """No replica may lead (none alive in the ISR and unclean election disabled)."""
    topic: str
    partition: int
    previous_leader: int | None
    isr: list
    reason: str
    controller: int


@event("isr_shrunk")
class IsrShrunk(Event):
    """ISR lost members. ``by``: "leader" (AlterPartition after the lag check: ``reason``
    "lagging" with ``lag_ms`` = now - lastCaughtUpTime) or "controller" (fencing /
    controlled shutdown)."""
    broker: int | None
    topic: str
    partition: int
    removed: list
    isr: list
    reason: str
    by: str
    lag_ms: int | None
    partition_epoch: int


@event("isr_expanded")
class IsrExpanded(Event):
    """A follower caught up (its LEO reached the HW and the current epoch's start) and
    was added back to the ISR (committed by the controller)."""
    broker: int | None
    topic: str
    partition: int
    added: list
    isr: list
    reason: str
    partition_epoch: int


@event("alter_partition_sent")
class AlterPartitionSent(Event):
    """A leader asked the controller to change the ISR (KIP-497)."""
    broker: int
    topic: str
    partition: int
    proposed_isr: list
    leader_epoch: int
    partition_epoch: int


@event("alter_partition_rejected")
class AlterPartitionRejected(Event):
    """The controller refused a stale AlterPartition (``reason``: "fenced_leader_epoch",
    "invalid_update_version", "ineligible_replica")."""
    broker: int
    topic: str
    partition: int
    reason: str


@event("became_leader")
class BecameLeader(Event):
    """A broker learned it leads a partition; it appended (leader_epoch, leo) to its
    leader-epoch cache (KIP-279)."""
    broker: int
    topic: str
    partition: int
    leader_epoch: int
    leo: int
    high_watermark: int
    isr: list


@event("became_follower")
class BecameFollower(Event):
    """A broker learned it follows ``leader`` at ``leader_epoch``; ``truncation`` says
    what it does first ("hw": truncate to its high watermark; "epoch": ask the leader
    OffsetsForLeaderEpoch)."""
    broker: int
    topic: str
    partition: int
    leader: int | None
    leader_epoch: int
    leo: int
    high_watermark: int
    truncation: str


# ---- replication ----------------------------------------------------------------

@event("fetch_sent")
class FetchSent(Event):
    """A follower sent Fetch(fetch_offset = its LEO, last_fetched_epoch) to the leader."""
    broker: int
    leader: int
    topic: str
    partition: int
    fetch_offset: int
    last_fetched_epoch: int
    leader_epoch: int


@event("fetch_parked")
class FetchParked(Event):
    """The leader had nothing new for this fetch and parked it (DelayedFetch) for up to
    ``max_wait_ms``; it wakes on new data or an HW change."""
    broker: int
    follower: int
    topic: str
    partition: int
    fetch_offset: int
    max_wait_ms: int


@event("fetch_answered")
class FetchAnswered(Event):
    """Leader's reply. ``high_watermark`` is the value captured *before* this fetch moved
    the follower's remote LEO (or re-read at wake-up for a parked fetch). ``first_offset``/
    ``last_offset`` are None when there are no records; ``error`` is a Kafka error name or None."""
    broker: int
    follower: int
    topic: str
    partition: int
    fetch_offset: int
    records: int
    first_offset: int | None
    last_offset: int | None
    high_watermark: int
    leader_leo: int
    log_start_offset: int
    error: str | None
    waited_ms: int


@event("fetch_received")
class FetchReceived(Event):
    """Follower processed a fetch response (appended ``records`` records)."""
    broker: int
    leader: int
    topic: str
    partition: int
    fetch_offset: int
    records: int
    leader_high_watermark: int
    error: str | None


@event("remote_leo_updated")
class RemoteLeoUpdated(Event):
    """Leader recorded a follower's LEO (= its fetch offset) and caught-up time."""
    broker: int
    follower: int
    topic: str
    partition: int
    old: int
    new: int
    last_caught_up_ms: int


@event("leo_changed")
class LeoChanged(Event):
    """``role``: "leader" | "follower"; ``reason``: "append", "truncate", "recovery"."""
    broker: int
    topic: str
    partition: int
    old: int
    new: int
    role: str
    reason: str


@event("high_watermark_changed")
class HighWatermarkChanged(Event):
    """``reason``: "isr_leo" (leader: min LEO over the ISR moved), "leader_hw" (follower:
    min(leader HW from a fetch response, own LEO)), "truncate", "checkpoint" (restart)."""
    broker: int
    topic: str
    partition: int
    old: int
    new: int
    role: str
    reason: str
    isr_leos: dict


@event("epoch_request_sent")
class EpochRequestSent(Event):
    """OffsetsForLeaderEpoch: the follower asks where ``epoch`` ends on the leader."""
    broker: int
    leader: int
    topic: str
    partition: int
    epoch: int


@event("epoch_request_answered")
class EpochRequestAnswered(Event):
    """Leader's answer (endOffsetFor): (``epoch``, ``end_offset``); (-1, -1) = undefined."""
    broker: int
    follower: int
    topic: str
    partition: int
    requested_epoch: int
    epoch: int
    end_offset: int


@event("replica_truncated")
class ReplicaTruncated(Event):
    """A follower cut its log. ``reason``: "hw" (pre-0.11: to its high watermark),
    "epoch" (KIP-101/279 OffsetsForLeaderEpoch answer), "diverging_epoch" (a Fetch v12
    DivergingEpoch), "out_of_range" (leader LEO below its fetch offset), "log_start" (fetch
    below the leader's log start, or a first batch that starts below it). ``detail`` explains the min()."""
    broker: int
    topic: str
    partition: int
    from_offset: int
    to_offset: int
    reason: str
    detail: str


@event("fetch_diverging")
class FetchDiverging(Event):
    """Leader's reply to a Fetch v12 whose ``last_fetched_epoch`` does not end where the
    follower's log does here (KIP-595, KAFKA-10554): DivergingEpoch = (``epoch``,
    ``end_offset``), the largest epoch <= the follower's and where it ends on the leader.
    No records are sent and the follower's remote LEO is not updated; the follower
    truncates and fetches again."""
    broker: int
    follower: int
    topic: str
    partition: int
    fetch_offset: int
    last_fetched_epoch: int
    epoch: int
    end_offset: int


@event("replica_fetch_failed")
class ReplicaFetchFailed(Event):
    """The follower's fetcher stopped for this partition (Kafka's ``markPartitionFailed``);
    the broker and its other partitions go on, and the partition is fetched again after the
    next leader change or a restart. ``error``: "UNEXPECTED_APPEND_OFFSET" (the leader's
    batch starts below this replica's log end: the logs disagree below the fetch offset),
    "TRUNCATION_NOT_ALLOWED" (``truncation`` hw, unclean election off: the leader's log
    ends below this replica's, which 0.10's fetcher treated as fatal), or the Kafka name
    of the storage error."""
    broker: int
    leader: int | None
    topic: str
    partition: int
    fetch_offset: int
    error: str
    detail: str


__all__ += ["FetchDiverging", "ReplicaFetchFailed"]


# ---- produce / consume ------------------------------------------------------------

@event("produce_received")
class ProduceReceived(Event):
    """The broker got a produce request (digests identify each record's key+value)."""
    request_id: int
    broker: int
    topic: str
    partition: int
    acks: int
    records: int
    digests: list


@event("produce_appended")
class ProduceAppended(Event):
    """The leader appended the batch at ``base_offset``..``last_offset`` stamped ``leader_epoch``."""
    request_id: int
    broker: int
    topic: str
    partition: int
    base_offset: int
    last_offset: int
    leader_epoch: int
    digests: list


@event("produce_waiting")
class ProduceWaiting(Event):
    """acks=all: parked in the produce purgatory until HW > ``required_offset``-1."""
    request_id: int
    broker: int
    topic: str
    partition: int
    required_offset: int
    timeout_ms: int


@event("produce_acked")
class ProduceAcked(Event):
    """The client got a success response (acks=0: recorded at send, offsets None)."""
    request_id: int
    broker: int | None
    topic: str
    partition: int
    acks: int
    base_offset: int | None
    last_offset: int | None
    digests: list


@event("produce_failed")
class ProduceFailed(Event):
    """``error``: Kafka error name (NOT_ENOUGH_REPLICAS, NOT_ENOUGH_REPLICAS_AFTER_APPEND,
    REQUEST_TIMED_OUT, NOT_LEADER_OR_FOLLOWER, LEADER_NOT_AVAILABLE, ...); ``appended``
    says whether the records are in the leader's log anyway."""
    request_id: int
    broker: int | None
    topic: str
    partition: int
    acks: int
    error: str
    message: str
    appended: bool
    digests: list


@event("consumer_read")
class ConsumerRead(Event):
    """A consumer read ``records`` records from ``offset`` on the leader, bounded by the HW."""
    broker: int
    topic: str
    partition: int
    offset: int
    records: int
    next_offset: int
    high_watermark: int
    digests: list


@event("checkpoint_written")
class CheckpointWritten(Event):
    """A per-log-dir checkpoint file (replication-offset-checkpoint = HWs,
    recovery-point-offset-checkpoint, log-start-offset-checkpoint) or the clean-shutdown
    marker. ``entries`` = [[topic, partition, offset], ...]."""
    broker: int
    file: str
    entries: list


# ---- network / config ------------------------------------------------------------

@event("link_changed")
class LinkChanged(Event):
    """``state``: "cut", "healed", "delay", "drop". Node -1 is the client."""
    a: int
    b: int
    both: bool
    state: str
    delay_ms: int
    drop_probability: float


@event("message_dropped")
class MessageDropped(Event):
    """``reason``: "link_cut", "random_drop", "destination_down", "source_crashed"."""
    src: int
    dst: int
    api: str
    reason: str
    detail: str


@event("config_changed")
class ConfigChanged(Event):
    """``scope``: "cluster" | "broker" | "topic"."""
    scope: str
    target: str
    changes: dict


# ---- producers: retries and idempotence -------------------------------------------------

@event("producer_created")
class ProducerCreated(Event):
    """A producer on the client node; ``producer_id`` -1 unless idempotent (InitProducerId)."""
    name: str
    idempotent: bool
    producer_id: int
    producer_epoch: int
    retries: int


@event("produce_retried")
class ProduceRetried(Event):
    """Attempt ``attempt`` of send ``send_id`` failed with ``error``; it goes again as
    ``request_id`` after ``backoff_ms`` with the same ``base_sequence``."""
    send_id: int
    request_id: int
    producer: str
    attempt: int
    error: str
    base_sequence: int
    backoff_ms: int


@event("produce_duplicate")
class ProduceDuplicate(Event):
    """The leader recognised a retried batch (same producer id, epoch and sequences as one
    of the last five) and answered with the first write's offsets, writing nothing."""
    request_id: int
    broker: int
    topic: str
    partition: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    base_offset: int
    last_offset: int


# ---- real clients over the wire protocol (wire/: a connection is a node from 1000 up) ----

@event("client_connected")
class ClientConnected(Event):
    """A real Kafka client opened a connection to ``broker``; the connection is network
    node ``node`` (so link faults apply to it)."""
    node: int
    broker: int


@event("client_disconnected")
class ClientDisconnected(Event):
    """A real client's connection ``node`` to ``broker`` closed."""
    node: int
    broker: int


@event("client_request")
class ClientRequest(Event):
    """A real client's request left its connection ``node`` for ``broker``: Kafka's API
    name, the version the client chose and its correlation id."""
    node: int
    broker: int
    api: str
    version: int
    correlation_id: int


@event("client_response")
class ClientResponse(Event):
    """``broker`` answered request ``correlation_id`` of connection ``node``; ``error`` is
    the answer's first error code by Kafka's name ("NONE" when every code is 0)."""
    node: int
    broker: int
    api: str
    version: int
    correlation_id: int
    error: str
