"""The quorum's settings, named as Kafka names them (``controller.quorum.*``), Kafka's defaults.

Timing rules taken from Kafka's raft module (KafkaRaftClient, QuorumState, LeaderState):

- an election timeout is drawn uniformly from ``[election_timeout_ms, 2 * election_timeout_ms)``;
- a candidate that lost backs off ``retry_backoff_base_ms * uniform[0, 2 << min(20, retries - 1))``,
  capped at ``election_backoff_max_ms`` (binary exponential backoff);
- a follower told by EndQuorumEpoch that it is successor number ``p`` of ``n`` waits
  ``min(max, (max >> (n - 1)) << (p - 1))`` (0 for the first): "strict exponential" backoff;
- a leader resigns when a majority of voters has not fetched within
  ``fetch_timeout_ms * 1.5`` (LeaderState's CHECK_QUORUM_TIMEOUT_FACTOR).
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["QuorumConfig", "CHECK_QUORUM_TIMEOUT_FACTOR"]

CHECK_QUORUM_TIMEOUT_FACTOR = 1.5


@dataclass(frozen=True)
class QuorumConfig:
    """``controller.quorum.*`` plus the two safety switches a lesson (or a negative test) may turn off."""

    election_timeout_ms: int = 1000          # controller.quorum.election.timeout.ms
    election_backoff_max_ms: int = 1000      # controller.quorum.election.backoff.max.ms
    fetch_timeout_ms: int = 2000             # controller.quorum.fetch.timeout.ms
    request_timeout_ms: int = 2000           # controller.quorum.request.timeout.ms
    retry_backoff_ms: int = 20               # controller.quorum.retry.backoff.ms
    # KafkaRaftClient constants (not configs): a parked Fetch waits at most this long at the
    # leader, and the base of the candidate's binary exponential backoff.
    fetch_max_wait_ms: int = 500
    retry_backoff_base_ms: int = 100
    fetch_max_bytes: int = 8 * 1024 * 1024
    # Kafka fsyncs the metadata log before a voter's next Fetch reports its end offset (and the
    # leader counts only its flushed end offset toward the HW), and writes quorum-state with
    # tmp + fsync + rename. Turning either off is unsafe; the checker must then find losses.
    flush_metadata_log: bool = True
    fsync_quorum_state: bool = True
    # Snapshots. Every node (leader, follower, observer) snapshots its own state once this many
    # bytes of committed batches have been applied since its last snapshot
    # (metadata.log.max.record.bytes.between.snapshots, 20 MiB).
    max_bytes_between_snapshots: int = 20 * 1024 * 1024
    # ... or, when committed records have been applied since, once this long has passed since its
    # last snapshot (or its start): metadata.log.max.snapshot.interval.ms, 1 hour; 0 turns the
    # time rule off (SnapshotGenerator.publishLogDelta checks bytes first, then time).
    max_snapshot_interval_ms: int = 3_600_000
    # KafkaMetadataLog.maybeClean: while the log and the snapshots together exceed
    # metadata.max.retention.bytes (100 MiB), or a snapshot is older than metadata.max.retention.ms
    # (7 days), the oldest snapshot goes and the log start moves to the next one. KafkaRaftClient
    # runs the cleaner every 60 s (RaftMetadataLogCleanerManager); -1 turns a rule off.
    retention_max_bytes: int = 100 * 1024 * 1024
    retention_ms: int = 7 * 24 * 3600 * 1000
    log_cleaner_interval_ms: int = 60_000
    # One snapshot batch holds at most this many records (the writer's batch accumulator).
    snapshot_batch_records: int = 1000
    # kraft.version (KIP-853): 0 = a static controller.quorum.voters, nothing written about the
    # voters; 1 = formatted with --standalone / --initial-controllers: each initial voter starts
    # with the bootstrap snapshot 0-0 holding KRaftVersionRecord and VotersRecord, the first
    # leader writes both after its LeaderChangeMessage, and every snapshot carries them.
    kraft_version: int = 0

    @property
    def check_quorum_timeout_ms(self) -> int:
        return int(self.fetch_timeout_ms * CHECK_QUORUM_TIMEOUT_FACTOR)

    @property
    def begin_quorum_epoch_timeout_ms(self) -> int:
        # How often a new leader resends BeginQuorumEpoch to voters that have not answered.
        return self.fetch_timeout_ms // 2

    def random_election_timeout_ms(self, rng) -> int:
        t = self.election_timeout_ms
        return t + rng.randrange(t) if t > 0 else 0

    def binary_exponential_backoff_ms(self, retries: int, rng) -> int:
        assert retries > 0, retries
        return min(self.retry_backoff_base_ms * rng.randrange(2 << min(20, retries - 1)),
                   self.election_backoff_max_ms)

    def strict_exponential_backoff_ms(self, position: int, successors: int) -> int:
        if position == 0:
            return 0
        if position < 0 or position >= successors:
            return self.election_backoff_max_ms
        base = self.election_backoff_max_ms >> (successors - 1)
        return min(self.election_backoff_max_ms, base << (position - 1))
