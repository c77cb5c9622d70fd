"""The controller as Kafka 4 runs it: a Raft quorum of voters keeps ``__cluster_metadata``,
the quorum's leader is the active controller, and brokers learn everything by fetching
that log and applying what is committed.

- **Voters** (``controller.quorum.voters``): in *combined* mode some brokers (by default
  the first three) each run a voter beside the broker, in the same process and node id,
  with the log in ``broker-<id>/__cluster_metadata-0/``; in *dedicated* mode
  (``controllers`` > 0) controller nodes ``100, 101, ...`` run the voters, in
  ``node-<id>/__cluster_metadata-0/``, and every broker is an observer.
- **The active controller** is the leader of the highest epoch. Its decisions (broker
  registration, fencing and unfencing, topics, partitions, leader and ISR changes, topic
  configs) are appended as metadata records (:mod:`engine.cluster.metadata`); its working
  state is the replay of its whole log, kept up to date as it appends. A new leader
  replays its log (uncommitted records of earlier epochs included: Raft commits them).
- **Brokers** apply the records below their node's high watermark, in order, to their own
  :class:`MetadataState` and act on what they have applied (leader and follower roles,
  ISR): nothing is pushed. A broker cut off from the quorum keeps its old metadata, so a
  deposed leader goes on believing it leads (the zombie of the replication lessons).
  Heartbeats carry the broker's applied metadata offset; a registered broker is unfenced
  once it has applied its own registration (Kafka: caught up to it).
- **No leader, no metadata**: without a majority of voters nothing commits, so there are no
  elections, ISR changes or new topics; the data path goes on with the leaders it has.

Simplification: a deposed leader that has not yet noticed (it resigns by check quorum)
ignores heartbeats and AlterPartition requests rather than appending records that would be
truncated; the brokers that sent them retry.
"""
from __future__ import annotations

from typing import Any

from engine.errors import BrokerNotAvailableError, InvalidConfigError
from engine.kraft.checker import RaftChecker
from engine.kraft.config import QuorumConfig
from engine.kraft.image import compact
from engine.kraft.node import RaftNode
from engine.records import iter_batches

from .controller import Controller, PartitionMeta
from .events import (BrokerFenced, BrokerRegistered, ControllerChanged, IsrShrunk,
                     MetadataApplied)
from .metadata import (NO_LEADER_CHANGE, TOPIC_RESOURCE, AlterPartitionResponse, ConfigRecord, FeatureLevelRecord,
                       FenceBrokerRecord, MetadataState, METADATA_VERSION, PartitionChangeRecord, PartitionRecord,
                       ProducerIdsRecord, RegisterBrokerRecord, TopicRecord, UnfenceBrokerRecord, config_value,
                       decode_record, encode_record)
from .network import AlterPartitionRequest, BrokerHeartbeat, LeaderAndIsr
from .producer_ids import (PRODUCER_ID_BLOCK_SIZE, AllocateProducerIdsRequest, AllocateProducerIdsResponse,
                           BrokerProducerIds)

__all__ = ["KRaftController", "ControllerNode", "ClusterQuorum", "parse_voters", "DEDICATED_BASE_ID",
           "metadata_records"]

DEDICATED_BASE_ID = 100
BOOTSTRAP_LIMIT_MS = 60_000


def parse_voters(text: str) -> list[int]:
    """``controller.quorum.voters``: ``id@host:port`` entries (Kafka's form) or bare ids, comma-separated."""
    out = []
    for part in (p.strip() for p in str(text).split(",")):
        if not part:
            continue
        head = part.split("@", 1)[0].strip()
        if not head.isdigit():
            raise InvalidConfigError(f"controller.quorum.voters: {part!r} is not id@host:port")
        out.append(int(head))
    if len(set(out)) != len(out):
        raise InvalidConfigError(f"controller.quorum.voters names a voter twice: {text!r}")
    return out


def node_records(node: RaftNode, end: int) -> list[tuple[int, Any]]:
    """``(offset, record)`` that rebuild ``node``'s state up to ``end``: its log from 0, or, once its
    log starts past 0, the snapshot standing for what is gone (each of its records given the
    snapshot's last offset) and the log from the snapshot's end."""
    start = node.log_start_offset
    if start == 0:
        return metadata_records(node.log, 0, end)
    sid = max((s for s in node.snapshots if start <= s.end_offset <= min(end, node.log_end_offset)), default=None)
    if sid is None:
        return metadata_records(node.log, start, end)
    return ([(sid.end_offset - 1, decode_record(v)) for v in node.read_snapshot(sid)]
            + metadata_records(node.log, sid.end_offset, end))


def metadata_records(log: Any, start: int, end: int) -> list[tuple[int, Any]]:
    """``(offset, record)`` of the data records in ``[start, end)`` of a metadata log
    (LeaderChangeMessage control batches skipped)."""
    if log is None or end <= start:
        return []
    info = log.read(start, 1 << 31, max_offset=end, trace=False)
    out = []
    for _, batch in iter_batches(info.records, verify_crc=False):
        if batch.is_control:
            continue
        for r in batch.records:
            if start <= r.offset < end:
                out.append((r.offset, decode_record(r.value)))
    return out


class MetadataChecker(RaftChecker):
    """Raft's rules (:class:`RaftChecker`), plus the hooks through which the controller
    learns of elections and commits."""

    def __init__(self, quorum: "ClusterQuorum", controller: "KRaftController") -> None:
        super().__init__(quorum)
        self.controller = controller

    def on_state(self, node) -> None:
        super().on_state(node)
        self.controller.on_raft_state(node)

    def on_high_watermark(self, node, old: int, new: int) -> None:
        super().on_high_watermark(node, old, new)
        self.controller.on_raft_hw(node, old, new)

    def check_applied(self) -> None:
        """Every running node's applied metadata is the replay of the committed log's prefix."""
        ctl = self.controller
        committed = ctl.committed
        for nid in sorted(ctl.images):
            image = ctl.images[nid]
            node = self.quorum.nodes[nid]
            if not node.alive:
                continue
            replay = MetadataState(ctl.cluster.config.log)
            for off, rec in committed:
                if off >= image.offset:
                    break
                replay.apply(rec)
            if image.offset > ctl.committed_offset or replay.signature() != image.signature():
                self._violate("applied_not_committed_prefix", nid, node.epoch,
                              f"node {nid} applied metadata up to {image.offset} that is not the committed log's "
                              f"prefix (committed up to {ctl.committed_offset})")


class ClusterQuorum:
    """What a :class:`RaftNode` needs of its harness (engine/kraft/host.py's QuorumHost),
    from the cluster: its disk, events, network, scheduler and rng."""

    def __init__(self, cluster: Any, controller: "KRaftController", voters: tuple, config: QuorumConfig) -> None:
        self.cluster = cluster
        self.config = config
        self.voters = tuple(sorted(voters))
        self.nodes: dict[int, RaftNode] = {}
        self.seed = cluster.seed
        self.checker = MetadataChecker(self, controller)

    @property
    def disk(self):
        return self.cluster.disk

    @property
    def events(self):
        return self.cluster.events

    @property
    def network(self):
        return self.cluster.network

    @property
    def scheduler(self):
        return self.cluster.scheduler

    @property
    def rng(self):
        return self.cluster.rng

    def now_ms(self) -> int:
        return self.cluster.scheduler.now_ms()

    @staticmethod
    def snapshot_state(values: list) -> list:
        """A snapshot holds the metadata image (Kafka's MetadataImage.write), not the history."""
        return compact(values)

    def directory_id(self, node_id: int) -> str:
        """The voter's log directory id (meta.properties' directory.id), as VotersRecord names it."""
        from .log_dir import identity
        return identity(self.cluster).directory_id(node_id)


class ControllerNode:
    """A dedicated controller process on the network: its voter, and the controller's
    requests (heartbeats, AlterPartition) when it is the active one."""

    def __init__(self, controller: "KRaftController", raft: RaftNode) -> None:
        self.controller = controller
        self.raft = raft
        self.id = raft.id

    @property
    def alive(self) -> bool:
        return self.raft.alive

    @property
    def incarnation(self) -> int:
        return self.raft.incarnation

    def receive(self, src: int, msg: Any) -> None:
        if isinstance(msg, (BrokerHeartbeat, AlterPartitionRequest, AllocateProducerIdsRequest)):
            if self.controller.active == self.id:
                self.controller.handle(src, msg)
        else:
            self.raft.receive(src, msg)


def quorum_config(cfg: Any) -> QuorumConfig:
    return QuorumConfig(election_timeout_ms=cfg.controller_quorum_election_timeout_ms,
                        election_backoff_max_ms=cfg.controller_quorum_election_backoff_max_ms,
                        fetch_timeout_ms=cfg.controller_quorum_fetch_timeout_ms,
                        request_timeout_ms=cfg.controller_quorum_request_timeout_ms,
                        retry_backoff_ms=cfg.controller_quorum_retry_backoff_ms,
                        max_bytes_between_snapshots=cfg.metadata_log_max_record_bytes_between_snapshots,
                        max_snapshot_interval_ms=cfg.metadata_log_max_snapshot_interval_ms,
                        retention_max_bytes=cfg.metadata_max_retention_bytes,
                        retention_ms=cfg.metadata_max_retention_ms,
                        # A static controller.quorum.voters is kraft.version 0 (Kafka's formatter
                        # takes --initial-controllers only without it).
                        kraft_version=0 if cfg.controller_quorum_voters else cfg.kraft_version)


class KRaftController(Controller):
    """The active controller's rules (those of :class:`Controller`), with every decision
    written to the metadata log and the quorum deciding who is active."""

    def __init__(self, cluster: Any) -> None:
        super().__init__(cluster)
        cfg = cluster.config
        self.dedicated = cfg.controllers > 0
        if self.dedicated:
            voters = [DEDICATED_BASE_ID + i for i in range(cfg.controllers)]
            if cfg.controller_quorum_voters:
                given = parse_voters(cfg.controller_quorum_voters)
                if sorted(given) != voters:
                    raise InvalidConfigError(f"controller.quorum.voters {given} must be the dedicated controllers "
                                             f"{voters}")
        else:
            voters = (parse_voters(cfg.controller_quorum_voters) if cfg.controller_quorum_voters
                      else list(range(min(3, cfg.brokers))))
            bad = [v for v in voters if not 0 <= v < cfg.brokers]
            if bad or not voters:
                raise InvalidConfigError(f"controller.quorum.voters {voters}: in combined mode every voter is a "
                                         f"broker (0..{cfg.brokers - 1})")
        self.voter_ids = tuple(sorted(voters))
        self.quorum = ClusterQuorum(cluster, self, self.voter_ids, quorum_config(cfg))
        self.image = MetadataState(cfg.log)          # the active controller's working state (or the committed one)
        self.topics = self.image.topics
        self.brokers = self.image.brokers
        self.images: dict[int, MetadataState] = {}    # node -> what it has applied (committed records)
        self.committed: list[tuple[int, Any]] = []    # (offset, record) of the committed log
        self.committed_offset = 0
        self.registered_at: dict[int, int] = {}     # broker -> offset just after its registration record
        self.published: dict[tuple, tuple] = {}     # (topic, p) -> (leader, leader epoch, partition epoch, isr)
        self.controller_nodes: dict[int, ControllerNode] = {}
        # AllocateProducerIds answered once the block's ProducerIdsRecord commits: offset after it -> answers
        self.pending_pid_blocks: list[tuple[int, int, AllocateProducerIdsResponse]] = []
        for v in self.voter_ids if self.dedicated else ():
            raft = RaftNode(self.quorum, v, True)
            self.quorum.nodes[v] = raft
            self.controller_nodes[v] = ControllerNode(self, raft)
            cluster.network.register(v, self.controller_nodes[v])

    @property
    def mode(self) -> str:
        return "dedicated" if self.dedicated else "combined"

    # ---- nodes --------------------------------------------------------------------------
    def attach_broker(self, broker: Any) -> None:
        """Give a broker its metadata node: the voter it hosts, or an observer."""
        voter = not self.dedicated and broker.id in self.voter_ids
        raft = RaftNode(self.quorum, broker.id, voter, root=broker.dir)
        self.quorum.nodes[broker.id] = raft
        broker.raft = raft

    def start_node(self, node_id: int) -> None:
        raft = self.quorum.nodes[node_id]
        self.images[node_id] = MetadataState(self.cluster.config.log)
        broker = self.cluster.brokers.get(node_id) if node_id not in self.controller_nodes else None
        if broker is not None:
            broker.producer_ids = BrokerProducerIds(broker)    # a process's blocks die with it
        raft.start()

    def stop_node(self, node_id: int, how: str, power_loss: bool = True) -> None:
        raft = self.quorum.nodes[node_id]
        if not raft.alive:
            return
        if how == "shutdown":
            raft.resign()
            raft.shutdown()
        else:
            raft.crash(power_loss)
        if self.active == node_id:
            self._lose_active(raft, f"node {node_id} stopped")

    def start(self, active: int) -> None:   # the legacy start-up names an active broker; Raft elects one
        for nid in sorted(self.controller_nodes):
            self.start_node(nid)

    def bootstrap_register(self, broker: int, incarnation: int) -> None:
        """Brokers register by heartbeat once there is an active controller."""

    def bootstrap(self) -> None:
        """Run the clock until a leader is elected and every broker is registered, unfenced
        and has applied the metadata (a fresh cluster's first seconds)."""
        cluster = self.cluster
        end = cluster.scheduler.now_ms() + BOOTSTRAP_LIMIT_MS

        def ready() -> bool:
            if self.active is None or "metadata.version" not in self.image.features:
                return False
            return all(b in self.brokers and not self.brokers[b].fenced for b in cluster.brokers) and \
                all(self.images[b].offset >= self.committed_offset for b in cluster.brokers)

        while not ready() and cluster.scheduler.now_ms() < end:
            cluster.scheduler.advance(10)

    # ---- raft hooks ---------------------------------------------------------------------
    def on_raft_state(self, node: RaftNode) -> None:
        if node.state == "leader":
            self._become_active(node)
        elif node.id == self.active:
            self._lose_active(node, f"node {node.id} is {node.state} in epoch {node.epoch}")

    def _become_active(self, node: RaftNode) -> None:
        old = self.active
        self.active = node.id
        self.epoch = node.epoch
        self._load(node_records(node, node.log_end_offset))
        now = self.now()
        for reg in self.brokers.values():
            reg.last_heartbeat_ms = now      # a new controller gives every broker a fresh session
        self.events.emit(ControllerChanged(old, node.id, node.epoch, "raft_election"))
        self.cluster.scheduler.schedule(0, self._activated, node.id, node.epoch, node.incarnation,
                                        name=f"controller-{node.id} activate")

    def _activated(self, node_id: int, epoch: int, incarnation: int) -> None:
        node = self.quorum.nodes[node_id]
        if not self._leads(node, epoch, incarnation):
            return
        if "metadata.version" not in self.image.features:
            rec = FeatureLevelRecord("metadata.version", METADATA_VERSION)
            self.image.apply(rec)
            self._append([rec])

    def _leads(self, node: RaftNode, epoch: int, incarnation: int) -> bool:
        return (self.active == node.id and node.alive and node.state == "leader" and node.epoch == epoch
                and node.incarnation == incarnation)

    def _lose_active(self, node: RaftNode, reason: str) -> None:
        self.active = None
        self.pending_pid_blocks = []        # never answered: the brokers ask again after their timeout
        # Without a leader the cluster's metadata is what was committed.
        self._load(self.committed)

    def _load(self, records: list) -> None:
        st = MetadataState(self.cluster.config.log)
        self.registered_at = {}
        for off, rec in records:
            st.apply(rec, self.now())
            if type(rec) is RegisterBrokerRecord:
                self.registered_at[rec.BrokerId] = off + 1
        self.image = st
        self.topics = st.topics
        self.brokers = st.brokers
        self.next_broker_epoch = st.next_broker_epoch
        self.published = {(pm.topic, pm.partition): self._key(pm) for pm in self.all_partitions()}

    @staticmethod
    def _key(pm: PartitionMeta) -> tuple:
        return (pm.leader, pm.leader_epoch, pm.partition_epoch, tuple(pm.isr))

    def on_raft_hw(self, node: RaftNode, old: int, new: int) -> None:
        if node.state == "leader" and new > self.committed_offset:
            self.committed.extend(metadata_records(node.log, self.committed_offset, new))
            self.committed_offset = new
        if node.state == "leader" and node.id == self.active and self.pending_pid_blocks:
            done = [p for p in self.pending_pid_blocks if p[0] <= new]
            self.pending_pid_blocks = [p for p in self.pending_pid_blocks if p[0] > new]
            for _, broker, resp in done:
                self.cluster.network.send(node.id, broker, resp)
        image = self.images.get(node.id)
        if image is None or new <= image.offset:
            return
        start = image.offset
        now = self.now()
        touched: dict = {}
        kinds: list = []
        broker = self.cluster.brokers.get(node.id) if node.id not in self.controller_nodes else None
        if start < node.log_start_offset:
            # Its log now starts past what it applied (it loaded a snapshot): the state is the snapshot's.
            image = self.images[node.id] = MetadataState(self.cluster.config.log)
            records = node_records(node, new)
        else:
            records = metadata_records(node.log, start, new)
        for _, rec in records:
            kinds.append(type(rec).__name__)
            pm = image.apply(rec, now)
            if pm is not None:
                touched[(pm.topic, pm.partition)] = pm
            elif broker is not None and type(rec) is RegisterBrokerRecord and rec.BrokerId == broker.id \
                    and rec.IncarnationId == broker.incarnation:
                broker.broker_epoch = rec.BrokerEpoch
        image.offset = new
        self.events.emit(MetadataApplied(node.id, start, new, kinds))
        if broker is None or not broker.alive:
            return
        for key in sorted(touched):
            pm = touched[key]
            if broker.id in pm.replicas:
                broker.apply_leader_and_isr(LeaderAndIsr(node.leader_id, node.epoch, pm.topic, pm.partition,
                                                         pm.leader, pm.leader_epoch, pm.partition_epoch,
                                                         tuple(pm.isr), tuple(pm.replicas)))

    def applied_offset(self, node_id: int) -> int:
        image = self.images.get(node_id)
        return image.offset if image is not None else 0

    def broker_target(self, broker_id: int) -> int | None:
        """Where broker ``broker_id`` sends heartbeats and AlterPartition: the leader its
        metadata node knows of."""
        raft = self.quorum.nodes.get(broker_id)
        if raft is None or not raft.alive or raft.leader_id < 0:
            return None
        return raft.leader_id

    # ---- writing records ----------------------------------------------------------------
    def _leader(self) -> RaftNode | None:
        if self.active is None:
            return None
        node = self.quorum.nodes[self.active]
        return node if node.alive and node.state == "leader" else None

    def _append(self, records: list) -> int | None:
        """Append ``records`` as one batch on the active controller; returns the offset after it."""
        node = self._leader()
        if node is None or not records:
            return None
        _, last = node.append([encode_record(r) for r in records])
        return last + 1

    def require_active(self, what: str) -> None:
        if self._leader() is None:
            raise BrokerNotAvailableError(f"no active controller (the metadata quorum has no leader): cannot {what}")

    def _publish(self, pm: PartitionMeta) -> None:
        key = (pm.topic, pm.partition)
        pub = self.published.get(key)
        if pub is None:
            return
        leader, leader_epoch, partition_epoch, isr = pub
        leader_changed = pm.leader != leader or pm.leader_epoch != leader_epoch
        isr_changed = tuple(pm.isr) != isr
        if not leader_changed and not isr_changed:
            pm.leader_epoch, pm.partition_epoch = leader_epoch, partition_epoch
            return
        tid = self.image.topic_id(pm.topic)
        rec = PartitionChangeRecord(pm.partition, tid, tuple(pm.isr) if isr_changed else None,
                                    pm.leader if leader_changed else NO_LEADER_CHANGE)
        # Kafka's merge decides the epochs; the working state follows it.
        pm.leader_epoch = leader_epoch + 1 if leader_changed else leader_epoch
        pm.partition_epoch = partition_epoch + 1
        self.published[key] = self._key(pm)
        self._append([rec])

    def broadcast(self, pm: PartitionMeta) -> None:
        self._publish(pm)

    def send_state(self, pm: PartitionMeta, broker: int) -> None:
        self._publish(pm)

    # ---- brokers ----------------------------------------------------------------------
    def tick(self) -> None:
        """Periodic, on the active controller only: session expiry of brokers."""
        if self._leader() is None:
            return
        now = self.now()
        timeout = self.cluster.config.broker_session_timeout_ms
        expired = [b for b in sorted(self.brokers)
                   if not self.brokers[b].fenced and now - self.brokers[b].last_heartbeat_ms > timeout]
        if expired:
            self.fence(expired, "session_timeout")

    def failover(self, reason: str) -> None:
        """Raft elects the next controller; nothing to do here."""

    def _register(self, broker: int, incarnation: int):
        epoch = self.next_broker_epoch
        self.next_broker_epoch += 1
        rec = RegisterBrokerRecord(broker, incarnation, epoch, True, False)
        self.image.apply(rec, self.now())
        self.registered_at[broker] = self._append([rec]) or 1 << 62
        reg = self.brokers[broker]
        self.events.emit(BrokerRegistered(broker, epoch, incarnation, self.active))
        return reg

    def on_heartbeat(self, hb: BrokerHeartbeat) -> None:
        if self._leader() is None:
            return
        reg = self.brokers.get(hb.broker)
        now = self.now()
        if reg is None or reg.incarnation != hb.incarnation:
            restarted = reg is not None
            reg = self._register(hb.broker, hb.incarnation)
            reg.last_heartbeat_ms = now
            if restarted:
                for pm in self.all_partitions():
                    if pm.leader == hb.broker:
                        # Its successor starts from disk: move leadership to another ISR member if there is one.
                        self.elect(pm, "leader_restarted", avoid=hb.broker)
            return
        reg.last_heartbeat_ms = now
        if reg.fenced and hb.metadata_offset >= self._registration_offset(hb.broker):
            self._unfence(reg)

    def _registration_offset(self, broker: int) -> int:
        """The log end just after this broker's registration (it must have applied it)."""
        return self.registered_at.get(broker, 1 << 62)

    def _unfence(self, reg) -> None:
        rec = UnfenceBrokerRecord(reg.broker, reg.broker_epoch)
        self.image.apply(rec, self.now())
        self._append([rec])
        for pm in self.all_partitions():
            if reg.broker in pm.replicas and pm.leader < 0:
                self.elect(pm, "clean")

    def fence(self, brokers: list[int], reason: str) -> None:
        for b in brokers:
            reg = self.brokers[b]
            rec = FenceBrokerRecord(b, reg.broker_epoch)
            self.image.apply(rec, self.now())
            self._append([rec])
            self.events.emit(BrokerFenced(b, reason, reg.last_heartbeat_ms, self.active))
        gone = set(brokers)
        for pm in self.all_partitions():
            if set(pm.isr) & gone:
                remaining = tuple(r for r in pm.isr if r not in gone)
                if remaining:
                    removed = [r for r in pm.isr if r in gone]
                    pm.isr = remaining
                    self._publish(pm)
                    self.events.emit(IsrShrunk(None, pm.topic, pm.partition, removed, list(pm.isr), reason,
                                               "controller", None, pm.partition_epoch))
            if pm.leader in gone:
                self.elect(pm, "clean")

    def controlled_shutdown(self, broker: int) -> list[str]:
        if self._leader() is None:
            return []
        reg = self.brokers.get(broker)
        if reg is not None and not reg.fenced:
            rec = FenceBrokerRecord(broker, reg.broker_epoch)
            self.image.apply(rec, self.now())
            self._append([rec])
            reg.shutting_down = True
            self.events.emit(BrokerFenced(broker, "controlled_shutdown", reg.last_heartbeat_ms, self.active))
        moved = []
        for pm in self.all_partitions():
            if broker in pm.isr and len(pm.isr) > 1:
                pm.isr = tuple(r for r in pm.isr if r != broker)
                self._publish(pm)
                self.events.emit(IsrShrunk(None, pm.topic, pm.partition, [broker], list(pm.isr),
                                           "controlled_shutdown", "controller", None, pm.partition_epoch))
            if pm.leader == broker:
                self.elect(pm, "controlled_shutdown")
                if pm.leader >= 0:
                    moved.append(f"{pm.topic}-{pm.partition}")
        return moved

    # ---- topics ------------------------------------------------------------------------
    def create_topic(self, name, config, changes, assignment, placement):
        self.require_active(f"create topic {name!r}")
        meta = super().create_topic(name, config, changes, assignment, placement)
        tid = self.image.topic_id(name) or self._topic_id(name)
        records: list = [TopicRecord(name, tid)]
        records += [ConfigRecord(TOPIC_RESOURCE, name, k, config_value(v)) for k, v in sorted(changes.items())]
        self.image.topic_ids[tid] = name
        for pm in meta.partitions:
            records.append(PartitionRecord(pm.partition, tid, tuple(pm.replicas), tuple(pm.isr), pm.leader,
                                           pm.leader_epoch, pm.partition_epoch))
            self.published[(name, pm.partition)] = self._key(pm)
        self._append(records)
        return meta

    def _topic_id(self, name: str) -> str:
        from .log_dir import identity
        return identity(self.cluster).topic_id(name)

    def set_topic_config(self, name: str, changes: dict) -> None:
        self._append([ConfigRecord(TOPIC_RESOURCE, name, k, config_value(v)) for k, v in sorted(changes.items())])

    # ---- producer ids (KIP-730) -------------------------------------------------------------
    def handle(self, src: int, msg: Any) -> None:
        if isinstance(msg, AllocateProducerIdsRequest):
            self.on_allocate_producer_ids(src, msg)
        else:
            super().handle(src, msg)

    def on_allocate_producer_ids(self, src: int, req: AllocateProducerIdsRequest) -> None:
        """ProducerIdControlManager.generateNextProducerId: the next block after the last
        ProducerIdsRecord, answered once its record is committed."""
        node = self._leader()
        if node is None:
            return
        reg = self.brokers.get(req.broker)
        if reg is None or reg.broker_epoch != req.broker_epoch:
            self.cluster.network.send(node.id, req.broker, AllocateProducerIdsResponse(
                node.id, "STALE_BROKER_EPOCH", -1, 0, req.session))
            return
        first = self.image.next_producer_id
        rec = ProducerIdsRecord(req.broker, req.broker_epoch, first + PRODUCER_ID_BLOCK_SIZE)
        self.image.apply(rec, self.now())
        end = self._append([rec])
        if end is not None:
            self.pending_pid_blocks.append((end, req.broker, AllocateProducerIdsResponse(
                node.id, None, first, PRODUCER_ID_BLOCK_SIZE, req.session)))

    def allocate_producer_id(self, broker: int | None = None) -> int:
        """InitProducerId on ``broker`` (default: the first running broker with an id to give, as a
        client picks its least loaded node): the next id of that broker's block."""
        brokers = self.cluster.brokers
        if broker is None:
            ready = [b for b in sorted(brokers) if brokers[b].alive and brokers[b].producer_ids.has_id()]
            broker = ready[0] if ready else next((b for b in sorted(brokers) if brokers[b].alive), None)
            if broker is None:
                raise BrokerNotAvailableError("no broker is running to answer InitProducerId")
        b = brokers[broker]
        if not b.alive:
            raise BrokerNotAvailableError(f"broker {broker} is down: cannot answer InitProducerId")
        return b.producer_ids.generate()

    # ---- AlterPartition -------------------------------------------------------------------
    def on_alter_partition(self, req: AlterPartitionRequest) -> None:
        if self._leader() is None:
            return
        super().on_alter_partition(req)

    def refuse_alter_partition(self, pm: Any, req: AlterPartitionRequest, reason: str) -> None:
        # Refused at once (accepted changes are answered by the metadata log).
        self.cluster.network.send(self.active, req.broker, AlterPartitionResponse(
            self.active, req.topic, req.partition, reason.upper()))

    # ---- views ----------------------------------------------------------------------------
    def describe(self) -> dict:
        """The run summary's ``controller`` object."""
        nodes = sorted(self.quorum.nodes)
        return {
            "mode": self.mode, "active": self.active,
            "epoch": max((self.quorum.nodes[n].epoch for n in nodes if self.quorum.nodes[n].alive), default=0),
            "voters": list(self.voter_ids),
            "metadata_high_watermark": self.committed_offset,
            # A stopped node's memory is gone with it: None until it runs again.
            "applied_offsets": {str(n): self.applied_offset(n) if self.quorum.nodes[n].alive else None
                                for n in nodes},
            "nodes": [self.quorum.nodes[n].describe() for n in nodes],
        }

    def state(self) -> dict:
        return {**super().state(), "quorum": self.describe()}
