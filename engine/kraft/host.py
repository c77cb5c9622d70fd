"""What the quorum's parts see of each other, so none imports another for its type: a node
sees its :class:`QuorumHost` (the harness that owns the network, disk, clock and checker), and
the checker sees the nodes as :class:`RaftReplica` (engine/cluster/host.py does the same for
the cluster's brokers)."""
from __future__ import annotations

from typing import Any, Protocol

__all__ = ["QuorumHost", "RaftReplica"]


class QuorumHost(Protocol):
    """The harness of a quorum, as its nodes and its checker use it."""
    config: Any
    disk: Any
    events: Any
    network: Any
    scheduler: Any
    rng: Any
    voters: Any
    nodes: dict
    checker: Any
    seed: int
    snapshot_state: Any

    def now_ms(self) -> int: ...


class RaftReplica(Protocol):
    """One voter or observer, as the checker reads it."""
    id: int
    voter: bool
    alive: bool
    state: str
    epoch: int
    high_watermark: int
    log: Any
    snapshots: list

    @property
    def log_end_offset(self) -> int: ...
