"""The controller: owner of topic and partition metadata (leader, ISR, leader epoch,
partition epoch) and of broker liveness.

Modelled on KRaft's active controller, hosted by one broker (``active``) with a
``controller_epoch`` bumped on every failover. The metadata itself stands for the
replicated ``__cluster_metadata`` log, so it survives the active broker's death; the
next live broker takes over after ``broker.session.timeout.ms`` (in the ZooKeeper era:
the next broker to win the ``/controller`` znode). Brokers learn changes through
LeaderAndIsr messages sent over the network from the active controller's broker, so a
broker cut off from it keeps acting on stale metadata (a zombie leader).

Rules (reference §5.8): elections pick the first replica in assignment order that is
in the ISR and acceptable (registered, unfenced, not shutting down); with
``unclean.leader.election.enable`` the first acceptable replica otherwise; every leader
change bumps the leader epoch; every change bumps the partition epoch. A fenced broker
leaves every ISR except where it is the last member (KRaft keeps the last one). When no
replica may lead, the partition is offline (leader -1) and — as the ZooKeeper
controller did — its leader epoch is not bumped until a real leader is elected.
A broker process that re-registers (restart) stays in its ISRs (the pre-KIP-903
behaviour the KIP-101 scenarios assume); partitions it led get a fresh election.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from engine.config import LogConfig
from engine.errors import InvalidRequestError, UnknownTopicOrPartitionError

from .events import (AlterPartitionRejected, BrokerFenced, BrokerRegistered, ControllerChanged, IsrExpanded,
                     IsrShrunk, LeaderElected, PartitionOffline)
from .host import ClusterHost
from .network import AlterPartitionRequest, BrokerHeartbeat, LeaderAndIsr


__all__ = ["Controller", "PartitionMeta", "TopicMeta", "BrokerRegistration", "striped_assignment"]


@dataclass
class PartitionMeta:
    """The controller's record of one partition (KRaft PartitionRecord): replicas in assignment order, leader (-1 = none), leader epoch, partition epoch, ISR."""
    topic: str
    partition: int
    replicas: tuple
    leader: int = -1
    leader_epoch: int = 0
    partition_epoch: int = 0
    isr: tuple = ()

    def to_dict(self) -> dict:
        return {"replicas": list(self.replicas), "leader": self.leader, "leader_epoch": self.leader_epoch,
                "partition_epoch": self.partition_epoch, "isr": list(self.isr),
                "preferred_leader": self.replicas[0] if self.replicas else None}


@dataclass
class TopicMeta:
    """A topic: its effective LogConfig, the overrides it was created with, and its partitions."""
    name: str
    config: LogConfig
    config_changes: dict
    partitions: list = field(default_factory=list)


@dataclass
class BrokerRegistration:
    """A registered broker process: ``incarnation`` (process), ``broker_epoch`` (per registration), fenced / shutting down, last heartbeat time."""
    broker: int
    incarnation: int
    broker_epoch: int
    fenced: bool = False
    shutting_down: bool = False
    last_heartbeat_ms: int = 0


def striped_assignment(brokers: list[int], partitions: int, rf: int, start_index: int, shift: int) -> list[tuple]:
    """Kafka's rack-unaware placement (AdminUtils / StripedReplicaPlacer): partition p's
    first replica is broker ``(p + start) % n``; the others follow at a shift that grows by
    one every n partitions, so replicas spread evenly and leaders rotate."""
    n = len(brokers)
    out = []
    next_shift = shift
    for p in range(partitions):
        if p > 0 and p % n == 0:
            next_shift += 1
        first = (p + start_index) % n
        replicas = [brokers[first]]
        for j in range(rf - 1):
            replicas.append(brokers[(first + 1 + (next_shift + j) % (n - 1)) % n])
        out.append(tuple(replicas))
    return out


class Controller:
    """Cluster metadata and the rules that change it."""

    def __init__(self, cluster: ClusterHost) -> None:
        self.cluster = cluster
        self.active: int | None = None
        self.epoch = 0
        self.topics: dict[str, TopicMeta] = {}
        self.brokers: dict[int, BrokerRegistration] = {}
        self.next_broker_epoch = 1
        self.active_down_since: int | None = None

    # ---- helpers --------------------------------------------------------------------
    @property
    def events(self):
        return self.cluster.events

    def now(self) -> int:
        return self.cluster.scheduler.now_ms()

    def topic_config(self, topic: str) -> LogConfig:
        meta = self.topics.get(topic)
        return meta.config if meta is not None else self.cluster.config.log

    def partition(self, topic: str, partition: int) -> PartitionMeta:
        meta = self.topics.get(topic)
        if meta is None:
            known = ", ".join(sorted(self.topics)) or "none"
            raise UnknownTopicOrPartitionError(f"unknown topic {topic!r} (topics: {known})")
        if isinstance(partition, bool) or not isinstance(partition, int) or not 0 <= partition < len(meta.partitions):
            raise UnknownTopicOrPartitionError(
                f"topic {topic!r} has partitions 0..{len(meta.partitions) - 1}; got {partition!r}")
        return meta.partitions[partition]

    def all_partitions(self) -> list[PartitionMeta]:
        return [pm for name in sorted(self.topics) for pm in self.topics[name].partitions]

    def is_eligible(self, broker: int) -> bool:
        reg = self.brokers.get(broker)
        return reg is not None and not reg.fenced and not reg.shutting_down

    def live_brokers(self) -> list[int]:
        return sorted(b for b in self.brokers if self.is_eligible(b))

    # ---- startup / failover ------------------------------------------------------------
    def start(self, active: int) -> None:
        self.active = active
        self.epoch = 1
        self.events.emit(ControllerChanged(None, active, self.epoch, "startup"))

    def bootstrap_register(self, broker: int, incarnation: int) -> None:
        """First boot: brokers register with the controller before anything else happens."""
        self._register(broker, incarnation)

    def _register(self, broker: int, incarnation: int) -> BrokerRegistration:
        reg = BrokerRegistration(broker, incarnation, self.next_broker_epoch, False, False, self.now())
        self.next_broker_epoch += 1
        self.brokers[broker] = reg
        self.cluster.brokers[broker].broker_epoch = reg.broker_epoch
        self.events.emit(BrokerRegistered(broker, reg.broker_epoch, incarnation, self.active))
        return reg

    def tick(self) -> None:
        """Periodic: controller failover, then session expiry of brokers."""
        now = self.now()
        cluster = self.cluster
        timeout = cluster.config.broker_session_timeout_ms
        if self.active is None or not cluster.brokers[self.active].alive or not self.has_quorum():
            # KRaft: a dead active controller, or one cut off from a majority of the
            # quorum, is replaced once the others stop hearing from it.
            if self.active_down_since is None:
                self.active_down_since = now
            if now - self.active_down_since >= timeout or self.active is None:
                self.failover("session_timeout" if self.active is None or not cluster.brokers[self.active].alive
                              else "lost_quorum")
            return
        self.active_down_since = None
        expired = [b for b in sorted(self.brokers)
                   if not self.brokers[b].fenced and now - self.brokers[b].last_heartbeat_ms > timeout]
        if expired:
            self.fence(expired, "session_timeout")

    def alive_brokers(self) -> list[int]:
        return [b for b in sorted(self.cluster.brokers) if self.cluster.brokers[b].alive]

    def has_quorum(self) -> bool:
        """The active controller's broker can reach (both ways) a majority of the running
        brokers. (The metadata quorum is abstract here: dead brokers do not take it down,
        but a network partition that isolates the active controller does.)"""
        return self.reaches_majority(self.active)

    def reaches_majority(self, broker: int) -> bool:
        net = self.cluster.network
        alive = self.alive_brokers()
        reach = [b for b in alive if net.reachable(broker, b)]
        return 2 * len(reach) > len(alive)

    def failover(self, reason: str) -> None:
        alive = [b for b in sorted(self.cluster.brokers) if self.cluster.brokers[b].alive and b != self.active]
        # Prefer a broker that itself can reach a majority (the side of a partition that can win a vote).
        majority = [b for b in alive if self.reaches_majority(b)]
        alive = majority or alive
        if not alive:
            return
        old = self.active
        self.active = alive[0]
        self.epoch += 1
        self.active_down_since = None
        self.events.emit(ControllerChanged(old, self.active, self.epoch, reason))
        # A new controller gives every broker a fresh session (it cannot know when they last beat).
        now = self.now()
        for b in sorted(self.brokers):
            self.brokers[b].last_heartbeat_ms = now
        for pm in self.all_partitions():
            self.broadcast(pm)

    # ---- brokers ---------------------------------------------------------------------
    def handle(self, src: int, msg: Any) -> None:
        if isinstance(msg, BrokerHeartbeat):
            self.on_heartbeat(msg)
        elif isinstance(msg, AlterPartitionRequest):
            self.on_alter_partition(msg)

    def on_heartbeat(self, hb: BrokerHeartbeat) -> None:
        reg = self.brokers.get(hb.broker)
        now = self.now()
        if reg is not None and reg.incarnation == hb.incarnation and not reg.fenced:
            reg.last_heartbeat_ms = now
            self.catch_up(hb)
            return
        restarted = reg is not None and reg.incarnation != hb.incarnation and not reg.fenced
        reg = self._register(hb.broker, hb.incarnation)
        reg.last_heartbeat_ms = now
        for pm in self.all_partitions():
            if hb.broker not in pm.replicas:
                continue
            if restarted and pm.leader == hb.broker:
                # The old process led this partition and its successor starts from disk
                # (possibly missing what was never fsynced): as the ZooKeeper controller did
                # for a "bounced" broker, move leadership to another in-sync replica if there is one.
                self.elect(pm, "leader_restarted", avoid=hb.broker)
            elif pm.leader < 0:
                self.elect(pm, "clean")
            else:
                self.send_state(pm, hb.broker)

    def catch_up(self, hb: BrokerHeartbeat) -> None:
        """Resend partition states a broker has not applied (a LeaderAndIsr lost on a cut
        link, say): in KRaft the broker would replay them from the metadata log."""
        known = {(t, p): (le, pe) for t, p, le, pe in hb.known}
        for pm in self.all_partitions():
            if hb.broker not in pm.replicas:
                continue
            seen = known.get((pm.topic, pm.partition))
            if seen is None or seen < (pm.leader_epoch, pm.partition_epoch):
                self.send_state(pm, hb.broker)

    def fence(self, brokers: list[int], reason: str) -> None:
        for b in brokers:
            reg = self.brokers[b]
            reg.fenced = True
            self.events.emit(BrokerFenced(b, reason, reg.last_heartbeat_ms, self.active))
        gone = set(brokers)
        for pm in self.all_partitions():
            touched = False
            if set(pm.isr) & gone:
                remaining = tuple(r for r in pm.isr if r not in gone)
                if remaining:
                    removed = [r for r in pm.isr if r in gone]
                    pm.isr = remaining
                    pm.partition_epoch += 1
                    self.events.emit(IsrShrunk(None, pm.topic, pm.partition, removed, list(pm.isr), reason,
                                               "controller", None, pm.partition_epoch))
                    touched = True
            if pm.leader in gone:
                self.elect(pm, "clean")
            elif touched:
                self.broadcast(pm)

    def controlled_shutdown(self, broker: int) -> list[str]:
        """Move leadership off ``broker`` and take it out of every ISR (KRaft controlled
        shutdown). Returns the partitions whose leadership moved."""
        reg = self.brokers.get(broker)
        if reg is not None:
            reg.shutting_down = True
            reg.fenced = True
            self.events.emit(BrokerFenced(broker, "controlled_shutdown", reg.last_heartbeat_ms, self.active))
        moved = []
        for pm in self.all_partitions():
            if broker in pm.isr and len(pm.isr) > 1:
                pm.isr = tuple(r for r in pm.isr if r != broker)
                pm.partition_epoch += 1
                self.events.emit(IsrShrunk(None, pm.topic, pm.partition, [broker], list(pm.isr),
                                           "controlled_shutdown", "controller", None, pm.partition_epoch))
                if pm.leader != broker:
                    self.broadcast(pm)
            if pm.leader == broker:
                self.elect(pm, "controlled_shutdown")
                if pm.leader >= 0:
                    moved.append(f"{pm.topic}-{pm.partition}")
        if self.active == broker:
            self.failover("controlled_shutdown")
        return moved

    # ---- elections -------------------------------------------------------------------
    def candidates(self, pm: PartitionMeta) -> list[dict]:
        return [{"broker": r, "in_isr": r in pm.isr, "acceptable": self.is_eligible(r)} for r in pm.replicas]

    def elect(self, pm: PartitionMeta, rule: str, avoid: int | None = None) -> bool:
        """Choose a leader for ``pm`` (clean first, then unclean if the topic allows).
        ``avoid`` is passed over in the clean pass unless it is the only choice."""
        previous = pm.leader if pm.leader >= 0 else None
        chosen = None
        applied = rule
        clean = [r for r in pm.replicas if r in pm.isr and self.is_eligible(r)]
        if clean:
            preferred = [r for r in clean if r != avoid]
            chosen = (preferred or clean)[0]
        if chosen is None and self.topic_config(pm.topic).unclean_leader_election_enable:
            for r in pm.replicas:
                if self.is_eligible(r):
                    chosen, applied = r, "unclean"
                    break
        if chosen is None:
            candidates = self.candidates(pm)
            if previous is not None:
                pm.partition_epoch += 1
            pm.leader = -1
            self.events.emit(PartitionOffline(pm.topic, pm.partition, previous, list(pm.isr),
                                              "no live replica in the ISR" +
                                              ("" if self.topic_config(pm.topic).unclean_leader_election_enable
                                               else " and unclean.leader.election.enable=false"), self.active))
            if previous is not None:
                self.broadcast(pm)
            del candidates
            return False
        candidates = self.candidates(pm)
        if applied == "unclean":
            pm.isr = (chosen,)
        else:
            pm.isr = tuple(r for r in pm.isr if self.is_eligible(r) or r == chosen) or (chosen,)
        pm.leader = chosen
        pm.leader_epoch += 1
        pm.partition_epoch += 1
        self.events.emit(LeaderElected(pm.topic, pm.partition, previous, chosen, applied, candidates,
                                       pm.leader_epoch, pm.partition_epoch, list(pm.isr), self.active))
        self.broadcast(pm)
        return True

    def elect_offline(self) -> list[str]:
        """Try to elect a leader for every offline partition (after a config change such as
        enabling unclean leader election)."""
        out = []
        for pm in self.all_partitions():
            if pm.leader < 0 and self.elect(pm, "clean"):
                out.append(f"{pm.topic}-{pm.partition}")
        return out

    def elect_preferred(self) -> list[str]:
        moved = []
        for pm in self.all_partitions():
            pref = pm.replicas[0]
            if pm.leader != pref and pref in pm.isr and self.is_eligible(pref):
                previous = pm.leader if pm.leader >= 0 else None
                candidates = self.candidates(pm)
                pm.leader = pref
                pm.leader_epoch += 1
                pm.partition_epoch += 1
                self.events.emit(LeaderElected(pm.topic, pm.partition, previous, pref, "preferred", candidates,
                                               pm.leader_epoch, pm.partition_epoch, list(pm.isr), self.active))
                self.broadcast(pm)
                moved.append(f"{pm.topic}-{pm.partition}")
        return moved

    # ---- topics ----------------------------------------------------------------------
    def create_topic(self, name: str, config: LogConfig, changes: dict, assignment: list[tuple],
                     placement: str) -> TopicMeta:
        meta = TopicMeta(name, config, changes)
        for p, replicas in enumerate(assignment):
            pm = PartitionMeta(name, p, tuple(replicas))
            live = [r for r in replicas if self.is_eligible(r)]
            pm.isr = tuple(live)
            pm.leader = live[0] if live else -1
            meta.partitions.append(pm)
        self.topics[name] = meta
        return meta

    def announce_topic(self, meta: TopicMeta) -> None:
        for pm in meta.partitions:
            if pm.leader >= 0:
                self.events.emit(LeaderElected(pm.topic, pm.partition, None, pm.leader, "initial",
                                               self.candidates(pm), pm.leader_epoch, pm.partition_epoch,
                                               list(pm.isr), self.active))
            else:
                self.events.emit(PartitionOffline(pm.topic, pm.partition, None, list(pm.isr),
                                                  "no live replica at creation", self.active))
            self.broadcast(pm)

    def assign(self, partitions: int, rf: int) -> tuple[list[tuple], str]:
        brokers = self.live_brokers()
        if rf > len(brokers):
            raise InvalidRequestError(
                f"replication factor {rf} is larger than the {len(brokers)} available broker(s) {brokers}")
        rng = self.cluster.rng
        start = rng.randrange(len(brokers))
        shift = rng.randrange(len(brokers))
        return striped_assignment(brokers, partitions, rf, start, shift), f"striped start={start} shift={shift}"

    # ---- ISR changes from leaders -------------------------------------------------------
    def alter_partition_refusal(self, pm: Any, req: AlterPartitionRequest) -> str | None:
        """Why the controller refuses an ISR change (Kafka's error, lower case), or None."""
        if pm.leader != req.broker or pm.leader_epoch != req.leader_epoch:
            return "fenced_leader_epoch"
        if pm.partition_epoch != req.partition_epoch:
            return "invalid_update_version"
        if any(not self.is_eligible(r) for r in req.new_isr if r not in pm.isr):
            return "ineligible_replica"
        return None

    def refuse_alter_partition(self, pm: Any, req: AlterPartitionRequest, reason: str) -> None:
        """Tell the leader: here, by pushing the partition's state back to it."""
        self.send_state(pm, req.broker)

    def on_alter_partition(self, req: AlterPartitionRequest) -> None:
        try:
            pm = self.partition(req.topic, req.partition)
        except UnknownTopicOrPartitionError:
            return
        reason = self.alter_partition_refusal(pm, req)
        if reason is not None:
            self.events.emit(AlterPartitionRejected(req.broker, req.topic, req.partition, reason))
            self.refuse_alter_partition(pm, req, reason)
            return
        old = pm.isr
        pm.isr = tuple(r for r in pm.replicas if r in req.new_isr)
        pm.partition_epoch += 1
        removed = [r for r in old if r not in pm.isr]
        added = [r for r in pm.isr if r not in old]
        lag = dict(req.lag_ms)
        if removed:
            self.events.emit(IsrShrunk(req.broker, pm.topic, pm.partition, removed, list(pm.isr), req.reason,
                                       "leader", max((lag.get(r, 0) for r in removed), default=None),
                                       pm.partition_epoch))
        if added:
            self.events.emit(IsrExpanded(req.broker, pm.topic, pm.partition, added, list(pm.isr), req.reason,
                                         pm.partition_epoch))
        self.broadcast(pm)

    # ---- propagation -------------------------------------------------------------------
    def message(self, pm: PartitionMeta) -> LeaderAndIsr:
        return LeaderAndIsr(self.active if self.active is not None else -1, self.epoch, pm.topic, pm.partition,
                            pm.leader, pm.leader_epoch, pm.partition_epoch, tuple(pm.isr), tuple(pm.replicas))

    def send_state(self, pm: PartitionMeta, broker: int) -> None:
        if self.active is None:
            return
        src = self.cluster.brokers[self.active]
        if src.alive:
            src.send(broker, self.message(pm))

    def broadcast(self, pm: PartitionMeta) -> None:
        for r in pm.replicas:
            self.send_state(pm, r)

    def state(self) -> dict:
        return {
            "active": self.active, "controller_epoch": self.epoch,
            "brokers": {str(b): {"broker_epoch": r.broker_epoch, "incarnation": r.incarnation, "fenced": r.fenced,
                                 "shutting_down": r.shutting_down, "last_heartbeat_ms": r.last_heartbeat_ms}
                        for b, r in sorted(self.brokers.items())},
        }
