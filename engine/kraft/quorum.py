"""A KRaft quorum to run on its own: N voters and some observers on one Disk, one seeded
rng, the engine's Scheduler and the cluster's Network (so link cuts, one-way cuts, delays,
drops and crashes apply to the quorum's messages as to the brokers').

Each node's metadata log lives in ``node-<id>/__cluster_metadata-0/`` beside its
``quorum-state``. Same seed and same calls ⇒ same event stream (``events.digest()``).
"""
from __future__ import annotations

import random
from typing import Callable

from engine.clock import Scheduler, VirtualClock
from engine.cluster.network import Network
from engine.disk import Disk
from engine.errors import InvalidRequestError
from engine.events import EventLog

from .checker import RaftChecker
from .config import QuorumConfig
from .node import RaftNode

__all__ = ["Quorum"]

SHUTDOWN_GRACE_MS = 20   # a resigning leader's EndQuorumEpoch leaves before the process stops


class Quorum:
    """Voters ``voters`` and ``observers`` (node ids), started by :meth:`start`."""

    def __init__(self, root: str, voters=(1, 2, 3), observers=(), *, seed: int = 0,
                 config: QuorumConfig | None = None, latency_ms: int = 1, keep_events: int | None = None,
                 snapshot_state: Callable[[list], list] | None = None) -> None:
        ids = list(voters) + list(observers)
        if len(set(ids)) != len(ids) or not voters or any(i < 0 for i in ids):
            raise InvalidRequestError(f"voters {list(voters)} and observers {list(observers)} must be distinct ids >= 0")
        self.seed = seed
        self.config = config or QuorumConfig()
        # What a snapshot holds, from the committed data records' values in log order: the values
        # themselves (None), or a fold such as engine.kraft.image.compact (the metadata image).
        self.snapshot_state = snapshot_state
        self.scheduler = Scheduler(VirtualClock(0))
        self.rng = random.Random(seed)
        self.events = EventLog(self.scheduler.clock, keep=keep_events)
        self.disk = Disk(root, os_fsync=False)
        self.network = Network(self.scheduler, self.rng, self.events, latency_ms=latency_ms)
        self.voters = tuple(sorted(voters))
        self.observers = tuple(sorted(observers))
        self.checker = RaftChecker(self)
        self.nodes: dict[int, RaftNode] = {}
        for i in sorted(ids):
            self.nodes[i] = RaftNode(self, i, i in self.voters)
            self.network.register(i, self.nodes[i])

    # ---- running ----------------------------------------------------------------------
    def start(self) -> "Quorum":
        for i in sorted(self.nodes):
            self.nodes[i].start()
        return self

    def now_ms(self) -> int:
        return self.scheduler.now_ms()

    def run(self, ms: int) -> None:
        self.scheduler.advance(ms)

    def run_until(self, done: Callable[[], bool], limit_ms: int, step_ms: int = 5) -> bool:
        """Advance ``step_ms`` at a time until ``done()`` or ``limit_ms`` has passed."""
        end = self.now_ms() + limit_ms
        while not done():
            if self.now_ms() >= end:
                return False
            self.scheduler.advance(min(step_ms, end - self.now_ms()))
        return True

    # ---- views ------------------------------------------------------------------------
    def node(self, node_id: int) -> RaftNode:
        if node_id not in self.nodes:
            raise InvalidRequestError(f"unknown node {node_id!r}; nodes: {sorted(self.nodes)}")
        return self.nodes[node_id]

    def leader(self) -> RaftNode | None:
        """The running leader with the highest epoch, or None."""
        leaders = [n for n in self.nodes.values() if n.alive and n.state == "leader"]
        return max(leaders, key=lambda n: n.epoch) if leaders else None

    def alive(self) -> list[int]:
        return [i for i in sorted(self.nodes) if self.nodes[i].alive]

    def describe(self) -> list[dict]:
        return [self.nodes[i].describe() for i in sorted(self.nodes)]

    # ---- commands ---------------------------------------------------------------------
    def append(self, values: list[bytes]) -> tuple[int, int, int] | None:
        """Append on the current leader: (leader, base offset, last offset), or None without one."""
        leader = self.leader()
        if leader is None:
            return None
        base, last = leader.append(values)
        return leader.id, base, last

    def crash(self, node_id: int, power_loss: bool = True) -> None:
        node = self.node(node_id)
        if node.alive:
            node.crash(power_loss)

    def restart(self, node_id: int) -> None:
        node = self.node(node_id)
        if not node.alive:
            node.start()

    def shutdown(self, node_id: int) -> None:
        """Graceful: a leader resigns (EndQuorumEpoch with preferred successors), then the
        process stops cleanly a moment later."""
        node = self.node(node_id)
        if not node.alive:
            return
        if node.state == "leader":
            node.resign()
            self.scheduler.schedule(SHUTDOWN_GRACE_MS, self._finish_shutdown, node_id, node.incarnation,
                                    name=f"raft-{node_id} shutdown")
        else:
            node.shutdown()

    def _finish_shutdown(self, node_id: int, incarnation: int) -> None:
        node = self.nodes[node_id]
        if node.alive and node.incarnation == incarnation:
            node.shutdown()

    def isolate(self, node_id: int, both: bool = True) -> None:
        for other in sorted(self.nodes):
            if other != node_id:
                self.network.cut(node_id, other, both)

    def cut(self, a: int, b: int, both: bool = True) -> None:
        self.network.cut(a, b, both)

    def heal(self, a: int, b: int, both: bool = True) -> None:
        self.network.heal(a, b, both)

    def heal_all(self) -> None:
        self.network.heal_all()
