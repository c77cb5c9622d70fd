"""What the parts of a cluster see of each other: named, narrow interfaces.

:class:`~engine.cluster.cluster.Cluster` builds the controller and the brokers, and a
broker builds its partitions, each of which owns a replica fetcher; so the builder
imports the built. The way back up goes through the protocols here, never through an
import of the builder:

* a :class:`Broker <engine.cluster.broker.Broker>` and the
  :class:`Controller <engine.cluster.controller.Controller>` see the cluster as a
  :class:`ClusterHost`;
* a :class:`Partition <engine.cluster.partition.Partition>` sees its broker as a
  :class:`ReplicaHost`;
* a :class:`ReplicaFetcher <engine.cluster.replica_fetcher.ReplicaFetcher>` sees its
  partition as a :class:`FollowerReplica`, and a
  :class:`SourceFetcher <engine.cluster.replica_fetcher.SourceFetcher>` its broker as a
  :class:`ReplicaHost`.

A call that is not named here is not part of the contract between them.
"""
from __future__ import annotations

import random
from typing import Any, Mapping, Protocol

from engine.clock import Scheduler, VirtualClock
from engine.config import LogConfig
from engine.disk import Disk
from engine.events import EventLog

from .config import ClusterConfig
from .network import Network, ProduceResponse

__all__ = ["ClusterHost", "ControllerView", "ReplicaHost", "FollowerReplica"]


class ControllerView(Protocol):
    """The active controller as brokers and partitions use it."""

    active: int | None
    topics: dict

    def topic_config(self, topic: str) -> LogConfig: ...

    def partition(self, topic: str, partition: int) -> Any: ...

    def is_eligible(self, broker: int) -> bool: ...

    def handle(self, src: int, msg: Any) -> None: ...


class ClusterHost(Protocol):
    """The cluster as its brokers and its controller see it: the shared clock, scheduler,
    event log, disk, network and seeded generator; the brokers and the controller; the
    transaction coordinator once there is one; and where a produce answer for the client
    (or for a coordinator's own append) is delivered."""

    seed: int
    config: ClusterConfig
    disk: Disk
    rng: random.Random
    clock: VirtualClock
    scheduler: Scheduler
    events: EventLog
    network: Network
    controller: ControllerView
    brokers: Mapping[int, Any]
    transactions: Any

    def now_ms(self) -> int: ...

    def deliver_produce_response(self, resp: ProduceResponse) -> None: ...


class ReplicaHost(Protocol):
    """A broker as the partitions it hosts see it."""

    id: int
    cluster: ClusterHost
    produce_purgatory: Any
    fetch_purgatory: Any
    fetch_timer_driver: Any
    # Follower side: the source fetchers by leader id (KIP-227 sessions), the follower delay
    # each of them waits before a fetch, and the partitions a fetch answer is for.
    fetchers: dict
    follower_delay_ms: int
    partitions: dict

    def source_fetcher(self, leader: int) -> Any: ...

    @property
    def scheduler(self) -> Scheduler: ...

    @property
    def events(self) -> EventLog: ...

    def send(self, dst: int, msg: Any) -> None: ...

    def send_to_controller(self, msg: Any) -> None: ...


class FollowerReplica(Protocol):
    """A partition as its replica fetcher sees it: the log it appends to, its offsets, and
    the two hooks that report a moved log end and high watermark."""

    topic: str
    partition: int
    role: str
    log: Any
    broker: ReplicaHost
    key: tuple

    @property
    def leo(self) -> int: ...

    @property
    def hw(self) -> int: ...

    def set_hw(self, new: int, reason: str, isr_leos: dict | None = None) -> bool: ...

    def leo_changed(self, old: int, reason: str) -> None: ...
