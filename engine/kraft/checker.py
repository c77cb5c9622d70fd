"""Raft's safety rules, checked while a quorum runs (the FoundationDB/TigerBeetle habit:
a checker beside every simulated run).

- **Election safety**: at most one node becomes leader in an epoch.
- **Epochs never go backwards** on a voter, across crashes and restarts (what ``quorum-state`` is for).
- **Leader completeness / committed never lost**: the committed log is what leaders' high
  watermarks have covered (a majority had it, flushed); every new leader's log holds all of it,
  and no leader's later HW move finds a different record at a committed offset.
- **Nothing below a HW differs**: the records below any node's high watermark are the committed ones,
  and a follower never truncates below its own HW.
- **Log matching**: if a replica holds a record at an offset with the same epoch as the committed
  record there, the two logs agree on everything up to it (checked by :meth:`check_logs`).
- **Snapshots hold the committed state**: a snapshot (made by a node or downloaded) with id
  (end offset, epoch) holds exactly the committed data records below its end offset, and the
  committed record before its end has its epoch; below a node's log start its snapshot stands
  for its log, so the rules above compare logs from the log start on.

A record is compared as (batch leader epoch, key, value, control). Findings are plain dicts in
``violations`` and :class:`RaftViolation` events.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from engine.records import iter_batches

from .events import RaftViolation

if TYPE_CHECKING:  # pragma: no cover
    from .host import QuorumHost, RaftReplica

__all__ = ["RaftChecker", "log_entries"]


def log_entries(log, start: int, end: int) -> list[tuple]:
    """``(epoch, key, value)`` for each offset in ``[start, end)`` of ``log``."""
    if end <= start:
        return []
    # Through the offset index (a read like a fetch's), not a decode of whole segments.
    info = log.read(start, 1 << 31, max_offset=end, trace=False)
    out = _entries(iter_batches(info.records), start, end)
    if len(out) == end - start:
        return out
    return _entries(((0, b) for b in log.batches(start, end)), start, end)


def _entries(batches, start: int, end: int) -> list[tuple]:
    out = []
    for _, batch in batches:
        epoch = batch.partition_leader_epoch
        control = batch.is_control
        for r in batch:
            if start <= r.offset < end:
                out.append((epoch, r.key, r.value, control))
    return out


class RaftChecker:
    def __init__(self, quorum: "QuorumHost") -> None:
        self.quorum = quorum
        self.violations: list[dict] = []
        self.leaders: dict[int, int] = {}        # epoch -> node that led it
        self.max_epoch: dict[int, int] = {}      # node -> highest epoch it has been in
        self.committed: list[tuple] = []
        self.elections = 0
        self.snapshots_checked = 0     # snapshots frozen (made or downloaded) and compared
        self.snapshots_loaded = 0      # logs replaced by a downloaded snapshot

    def _violate(self, rule: str, node: int, epoch: int, detail: str) -> None:
        self.violations.append({"rule": rule, "node": node, "epoch": epoch, "detail": detail,
                                "time_ms": self.quorum.now_ms(), "seed": self.quorum.seed})
        self.quorum.events.emit(RaftViolation(rule, node, epoch, detail))

    # ---- hooks called by the nodes ----------------------------------------------------
    def on_state(self, node: "RaftReplica") -> None:
        prev = self.max_epoch.get(node.id, 0)
        if node.voter and node.epoch < prev:
            self._violate("epoch_went_back", node.id, node.epoch, f"node {node.id} was in epoch {prev}, now {node.epoch}")
        self.max_epoch[node.id] = max(prev, node.epoch)
        if node.state != "leader":
            return
        self.elections += 1
        other = self.leaders.get(node.epoch)
        if other is not None and other != node.id:
            self._violate("two_leaders_in_epoch", node.id, node.epoch, f"nodes {other} and {node.id} both led epoch {node.epoch}")
        self.leaders[node.epoch] = node.id
        start = node.log.log_start_offset
        have = log_entries(node.log, start, min(node.log_end_offset, len(self.committed)))
        if have != self.committed[start:start + len(have)] or start + len(have) < len(self.committed):
            at = start + next((i for i, (a, b) in enumerate(zip(have, self.committed[start:])) if a != b), len(have))
            self._violate("committed_lost", node.id, node.epoch,
                          f"new leader {node.id} lacks committed offset {at} (committed log has {len(self.committed)} records, "
                          f"its log ends at {node.log_end_offset})")

    def on_high_watermark(self, node: "RaftReplica", old: int, new: int) -> None:
        n = len(self.committed)
        if node.state == "leader":
            if new > n:
                self.committed.extend(log_entries(node.log, n, new))
            return
        lo, hi = max(old, node.log.log_start_offset), min(new, n)
        if new > n:
            self._violate("below_hw_differs", node.id, node.epoch,
                          f"follower {node.id} HW {new} is past the committed log's end {n}")
        if hi > lo and log_entries(node.log, lo, hi) != self.committed[lo:hi]:
            self._violate("below_hw_differs", node.id, node.epoch,
                          f"follower {node.id} holds records in [{lo}, {hi}) that differ from the committed ones")

    def on_snapshot(self, node: "RaftReplica", sid, values: list) -> None:
        """A snapshot was frozen on ``node`` (made there or downloaded): it must hold the committed
        data records below its end offset, and name the epoch of the committed record before it."""
        self.snapshots_checked += 1
        end, n = sid.end_offset, len(self.committed)
        if end > n:
            self._violate("snapshot_not_committed", node.id, node.epoch,
                          f"node {node.id} snapshot {sid.name} ends past the committed log's end {n}")
            return
        if end > 0 and self.committed[end - 1][0] != sid.epoch:
            self._violate("snapshot_differs", node.id, node.epoch,
                          f"node {node.id} snapshot {sid.name}: the committed record at {end - 1} has epoch "
                          f"{self.committed[end - 1][0]}")
        expected = [value for _, _, value, control in self.committed[:end] if not control]
        state = getattr(self.quorum, "snapshot_state", None)
        if state is not None:
            expected = state(expected)
        if values != expected:
            at = next((i for i, (a, b) in enumerate(zip(values, expected)) if a != b), min(len(values), len(expected)))
            self._violate("snapshot_differs", node.id, node.epoch,
                          f"node {node.id} snapshot {sid.name} holds {len(values)} data records, the committed log "
                          f"{len(expected)} below {end}; they differ from data record {at}")

    def on_snapshot_loaded(self, node: "RaftReplica", sid) -> None:
        self.snapshots_loaded += 1
        if sid.end_offset < node.high_watermark:
            self._violate("committed_lost", node.id, node.epoch,
                          f"node {node.id} replaced its log with snapshot {sid.name}, below its HW {node.high_watermark}")

    def on_truncate(self, node: "RaftReplica", target: int) -> None:
        if target < node.high_watermark:
            self._violate("committed_lost", node.id, node.epoch,
                          f"node {node.id} truncated to {target}, below its high watermark {node.high_watermark}")

    # ---- whole-log checks -------------------------------------------------------------
    def check_logs(self) -> None:
        """Log matching and HW prefixes on every running node."""
        n = len(self.committed)
        for nid in sorted(self.quorum.nodes):
            node = self.quorum.nodes[nid]
            if not node.alive or node.log is None:
                continue
            start = node.log.log_start_offset
            # KafkaRaftLog.recoverSnapshots' rule: a log starting past 0 needs a snapshot at or past
            # its start to stand for the records before it.
            if start > 0 and (not node.snapshots or node.snapshots[-1].end_offset < start):
                self._violate("committed_lost", nid, node.epoch,
                              f"node {nid} log starts at {start} with no snapshot at or past it ({node.snapshots})")
            have = [None] * start + log_entries(node.log, start, min(node.log_end_offset, n))
            bad = next((i for i, (a, b) in enumerate(zip(have, self.committed)) if i >= start and a != b), None)
            if bad is None:
                continue
            if bad < node.high_watermark:
                self._violate("below_hw_differs", nid, node.epoch,
                              f"node {nid} offset {bad} is below its HW {node.high_watermark} but differs from the committed record")
            same_epoch = next((j for j in range(bad, min(len(have), n)) if have[j][0] == self.committed[j][0]), None)
            if same_epoch is not None:
                self._violate("log_matching", nid, node.epoch,
                              f"node {nid} offset {same_epoch} has the committed record's epoch {have[same_epoch][0]} "
                              f"but its log differs from offset {bad}")
