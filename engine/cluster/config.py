"""Cluster-wide settings, with Kafka's names (``.`` → ``_``) and Kafka's defaults.

``log`` is the default :class:`LogConfig` for new topics (a topic's own ``config``
overrides it; per-broker overrides of log settings, e.g. ``flush_interval_messages``
on one broker, are applied on top of both so a lesson can make one replica fsync
and another not). ``truncation`` selects how a follower reconciles its log with a new
leader: ``"hw"`` = before Kafka 0.11 (truncate to the checkpointed high watermark),
``"epoch"`` = KIP-101 + KIP-279, by OffsetsForLeaderEpoch or, with ``fetch_protocol =
"diverging_epoch"``, by the DivergingEpoch of Fetch v12.
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Mapping

from engine.config import INT_MAX, LONG_MAX, LogConfig, _check, _f, config_from_mapping
from engine.errors import InvalidConfigError

# Kafka's acks values by the names a form offers ("all" is -1, which a command may also send
# as -1 or "-1"): the one home of what acks may be. Commands parse with it
# (engine/cluster/commands.py), Cluster.produce checks with it, the web offers its keys.
ACKS: dict[str, int] = {"all": -1, "1": 1, "0": 0}

__all__ = ["ClusterConfig", "MAX_BROKERS", "CLIENT"]

MAX_BROKERS = 7
CLIENT = -1  # network node id of the (single) client: producers and consumers


@dataclass(frozen=True)
class ClusterConfig:
    """Settings of a whole cluster. Validated on construction; ``replace(**changes)``
    accepts dotted Kafka names or field names and digit strings, like LogConfig."""

    brokers: int = _f(3, 1, MAX_BROKERS, kafka="brokers")
    truncation: str = _f("epoch", choices=("hw", "epoch"), kafka="truncation")
    # How an epoch-truncating follower learns where its log diverges (docs/commands.md):
    # "offsets_for_leader_epoch" (Kafka 0.11–2.6: an OffsetsForLeaderEpoch round trip before
    # fetching) or "diverging_epoch" (Kafka >= 2.7, KIP-595/KAFKA-10554: Fetch v12 carries
    # LastFetchedEpoch and the leader answers DivergingEpoch).
    fetch_protocol: str = _f("offsets_for_leader_epoch", choices=("offsets_for_leader_epoch", "diverging_epoch"),
                             kafka="fetch.protocol")
    initial_controller: int = _f(0, 0, MAX_BROKERS - 1, kafka="initial.controller")
    replica_lag_time_max_ms: int = _f(30000, 1, LONG_MAX, kafka="replica.lag.time.max.ms")
    replica_fetch_wait_max_ms: int = _f(500, 0, INT_MAX, kafka="replica.fetch.wait.max.ms")
    replica_fetch_max_bytes: int = _f(1048576, 0, INT_MAX, kafka="replica.fetch.max.bytes")
    replica_fetch_backoff_ms: int = _f(1000, 0, INT_MAX, kafka="replica.fetch.backoff.ms")
    request_timeout_ms: int = _f(30000, 1, INT_MAX, kafka="request.timeout.ms")
    broker_session_timeout_ms: int = _f(9000, 1, INT_MAX, kafka="broker.session.timeout.ms")
    broker_heartbeat_interval_ms: int = _f(2000, 1, INT_MAX, kafka="broker.heartbeat.interval.ms")
    replica_high_watermark_checkpoint_interval_ms: int = _f(
        5000, 1, LONG_MAX, kafka="replica.high.watermark.checkpoint.interval.ms")
    log_flush_offset_checkpoint_interval_ms: int = _f(
        60000, 1, INT_MAX, kafka="log.flush.offset.checkpoint.interval.ms")
    log_flush_start_offset_checkpoint_interval_ms: int = _f(
        60000, 1, INT_MAX, kafka="log.flush.start.offset.checkpoint.interval.ms")
    network_latency_ms: int = _f(1, 0, 60000, kafka="network.latency.ms")
    # KAFKA-15583 (Kafka >= 3.7): the leader does not advance the HW while |ISR| < effective
    # min ISR. False gives the older behaviour, where an acks=all produce could complete with
    # NOT_ENOUGH_REPLICAS_AFTER_APPEND after the ISR shrank during its wait.
    hw_min_isr_guard: bool = _f(True, kafka="hw.min.isr.guard")
    controller_check_interval_ms: int = _f(1000, 1, INT_MAX, kafka="controller.check.interval.ms")
    # KRaft (engine/cluster/kraft_controller.py): a Raft quorum of voters keeps __cluster_metadata and
    # brokers fetch it. Off = the hybrid controller (a majority of running brokers, metadata pushed
    # as LeaderAndIsr) the lessons were recorded with. ``controllers`` > 0 = dedicated mode (that
    # many controller nodes, ids 100, 101, ...; implies kraft); 0 with kraft = combined mode, the
    # voters being brokers (``controller.quorum.voters``, default the first three).
    kraft: bool = _f(False, kafka="kraft")
    controllers: int = _f(0, 0, 5, kafka="controllers")
    controller_quorum_voters: str = field(default="", metadata={"kafka": "controller.quorum.voters"})
    controller_quorum_election_timeout_ms: int = _f(1000, 0, INT_MAX, kafka="controller.quorum.election.timeout.ms")
    controller_quorum_election_backoff_max_ms: int = _f(
        1000, 0, INT_MAX, kafka="controller.quorum.election.backoff.max.ms")
    controller_quorum_fetch_timeout_ms: int = _f(2000, 1, INT_MAX, kafka="controller.quorum.fetch.timeout.ms")
    controller_quorum_request_timeout_ms: int = _f(2000, 1, INT_MAX, kafka="controller.quorum.request.timeout.ms")
    controller_quorum_retry_backoff_ms: int = _f(20, 0, INT_MAX, kafka="controller.quorum.retry.backoff.ms")
    # Emit an event for every step of the brokers' purgatory timing wheels (lesson 15); off by
    # default because an acks=all produce would then cost several more events.
    timer_events: bool = _f(False, kafka="timer.events")
    # Per-topic defaults that Kafka also has as broker settings; None = take them from ``log``.
    min_insync_replicas: int | None = field(default=None, metadata={"kafka": "min.insync.replicas"})
    unclean_leader_election_enable: bool | None = field(
        default=None, metadata={"kafka": "unclean.leader.election.enable"})
    log: LogConfig = field(default_factory=LogConfig, metadata={"kafka": "log"})

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "log":
                if not isinstance(value, LogConfig):
                    raise InvalidConfigError(f"log must be a LogConfig, got {type(value).__name__}")
            elif f.name == "min_insync_replicas":
                if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                    raise InvalidConfigError(f"min_insync_replicas must be an integer >= 1, got {value!r}")
            elif f.name == "controller_quorum_voters":
                if not isinstance(value, str):
                    raise InvalidConfigError(f"controller_quorum_voters must be text like '0@broker-0:9093,1@...', "
                                             f"got {value!r}")
            elif f.name == "unclean_leader_election_enable":
                if value is not None and not isinstance(value, bool):
                    raise InvalidConfigError(f"unclean_leader_election_enable must be true or false, got {value!r}")
            else:
                _check(f, value)
        if self.initial_controller >= self.brokers:
            raise InvalidConfigError(
                f"initial_controller must be a broker id below brokers={self.brokers}, got {self.initial_controller}")
        if self.controllers > 0 and not self.kraft:
            object.__setattr__(self, "kraft", True)
        # Fold the convenience fields into the topic defaults so there is one source of truth.
        changes: dict[str, Any] = {}
        if self.min_insync_replicas is not None:
            changes["min_insync_replicas"] = self.min_insync_replicas
        if self.unclean_leader_election_enable is not None:
            changes["unclean_leader_election_enable"] = self.unclean_leader_election_enable
        if changes:
            object.__setattr__(self, "log", self.log.replace(**changes))

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any], base: "ClusterConfig | None" = None) -> "ClusterConfig":
        """Build from a mapping; a nested ``log`` mapping (or any key that is a LogConfig
        field, e.g. ``segment.bytes``) goes to the topic defaults."""
        values = dict(values)
        base = base or cls()
        own = {f.name for f in fields(cls)}
        own_kafka = {f.metadata.get("kafka") for f in fields(cls)}
        log_changes: dict[str, Any] = {}
        if isinstance(values.get("log"), Mapping):
            log_changes.update(values.pop("log"))
        for key in sorted(list(values)):
            name = key.replace(".", "_")
            if key not in own_kafka and name not in own:
                log_changes[key] = values.pop(key)
        log = config_from_mapping(LogConfig, log_changes, base=base.log) if log_changes else base.log
        values["log"] = log
        if isinstance(values.get("truncation"), str):
            values["truncation"] = values["truncation"].lower()
        return config_from_mapping(cls, values, base=base)

    def replace(self, **changes: Any) -> "ClusterConfig":
        return self.from_mapping(changes, base=self)

    @property
    def controller_mode(self) -> str:
        """"hybrid" (no Raft quorum), "combined" or "dedicated"."""
        return "dedicated" if self.controllers > 0 else "combined" if self.kraft else "hybrid"

    def to_dict(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "log"}
        out["log"] = self.log.to_dict()
        return out

    @property
    def isr_check_interval_ms(self) -> int:
        """Kafka runs the ISR shrink task every replica.lag.time.max.ms / 2."""
        return max(1, self.replica_lag_time_max_ms // 2)
