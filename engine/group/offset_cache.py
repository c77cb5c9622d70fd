"""A group coordinator's committed offsets for one ``__consumer_offsets`` partition, and
the loader that rebuilds them from the partition's log.

Which commit wins is decided by where its record sits in the log, not by when the
coordinator heard about it (Kafka's ``CommitRecordMetadataAndOffset.olderThan``, used by
``GroupMetadata.onOffsetCommitAppend`` and ``completePendingTxnOffsetCommit`` and by the
loader, ``GroupMetadataManager.doLoadGroupsAndOffsets``): an offset replaces the current one
only if its record is later in the log. So a transaction's offset record followed by a
plain OffsetCommit of the same partition leaves the plain one committed when the
transaction's COMMIT marker arrives, live and after a failover alike. A transactional
record's position is the offset of the first record of its batch, as Kafka's.

Pending transactional offsets: {producer id: {group: {(topic, partition): (offset,
position)}}}, ``position`` None until the coordinator's append is acknowledged.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

from ..records import ControlRecordType, read_end_txn_marker
from .metadata import GroupMetadataValue, decode_group_key, decode_group_value
from .offsets import decode_key, decode_value

__all__ = ["OffsetCache", "LoadedOffsets", "load_offsets"]


class OffsetCache:
    """Committed offsets of the groups of one offsets partition, each with the log position
    of the record that committed it."""

    def __init__(self) -> None:
        self.offsets: dict[str, dict] = {}     # group -> {(topic, partition): offset}
        self.positions: dict[str, dict] = {}   # group -> {(topic, partition): record's log offset}
        self.from_txn: set = set()             # (group, (topic, partition)) committed by a transaction

    def of(self, group: str) -> dict:
        """The group's committed offsets, {(topic, partition): offset} (a copy)."""
        return dict(self.offsets.get(group, {}))

    def groups(self) -> list[str]:
        return sorted(self.offsets)

    def put(self, group: str, tp: tuple, offset: int, position: int | None, txn: bool = False) -> bool:
        """Commit ``offset`` written by the record at ``position`` unless the current one's
        record is later in the log. ``position`` None (not known yet) counts as latest.
        Returns whether it was applied."""
        current = self.positions.get(group, {}).get(tp)
        if current is not None and position is not None and current > position:
            return False
        self.offsets.setdefault(group, {})[tp] = offset
        if position is None:
            self.positions.get(group, {}).pop(tp, None)
        else:
            self.positions.setdefault(group, {})[tp] = position
        (self.from_txn.add if txn else self.from_txn.discard)((group, tp))
        return True

    def later(self, group: str, tp: tuple) -> tuple[int, int] | None:
        """(offset, position) of the current commit, or None."""
        pos = self.positions.get(group, {}).get(tp)
        off = self.offsets.get(group, {}).get(tp)
        return None if off is None else (off, -1 if pos is None else pos)

    def delete(self, group: str, tp: tuple) -> None:
        self.offsets.get(group, {}).pop(tp, None)
        self.positions.get(group, {}).pop(tp, None)
        self.from_txn.discard((group, tp))

    def commit_pending(self, by_group: dict) -> tuple[dict, dict]:
        """A COMMIT marker for one producer's pending offsets ``{group: {tp: (offset,
        position)}}``: ({group: {tp: offset}} made committed, {group: {tp: (offset,
        position, later offset, later position)}} kept out by a later record)."""
        applied: dict[str, dict] = {}
        kept: dict[str, dict] = {}
        for group, offs in sorted(by_group.items()):
            for tp, (offset, position) in sorted(offs.items()):
                if self.put(group, tp, offset, position, txn=True):
                    applied.setdefault(group, {})[tp] = offset
                else:
                    kept.setdefault(group, {})[tp] = (offset, position, *self.later(group, tp))
        return applied, kept

    def plain(self) -> dict:
        """{group: {tp: offset}} (a copy)."""
        return {g: dict(offs) for g, offs in self.offsets.items()}


@dataclass
class LoadedOffsets:
    """What a new coordinator reads from its offsets partition."""

    offsets: OffsetCache
    pending: dict                                     # producer id -> {group: {tp: (offset, position)}}
    groups: dict = field(default_factory=dict)        # group id -> latest GroupMetadataValue
    records: int = 0                                  # data records read
    named: set = field(default_factory=set)           # groups any offset record names

    @property
    def committed_by_txns(self) -> int:
        return sum(1 for g, tp in self.offsets.from_txn if tp in self.offsets.offsets.get(g, {}))


def load_offsets(batches: Iterable[Any]) -> LoadedOffsets:
    """Replay an offsets partition's batches as Kafka's loader does: a plain OffsetCommit
    commits at once (a null value deletes); a transactional batch's records wait under
    their producer id until its COMMIT marker (committed, unless a later record of the same
    partition already is) or ABORT marker (dropped); GroupMetadata records keep the latest
    per group (a null value removes it)."""
    cache = OffsetCache()
    pending: dict[int, dict] = {}
    out = LoadedOffsets(cache, pending)
    for batch in batches:
        if batch.is_control:
            marker = read_end_txn_marker(batch.records[0]) if batch.records else None
            if marker is None:
                continue
            done = pending.pop(batch.producer_id, {})
            if marker.type == ControlRecordType.COMMIT:
                cache.commit_pending(done)
            continue
        if not batch.records:
            continue
        position = batch.records[0].offset
        for r in batch.records:
            out.records += 1
            if r.key is None:
                continue
            k = decode_key(r.key)
            if k is None:
                gid = decode_group_key(r.key)
                if gid is not None:
                    v: GroupMetadataValue | None = decode_group_value(r.value)
                    if v is None:
                        out.groups.pop(gid, None)
                    else:
                        out.groups[gid] = v
                continue
            out.named.add(k.group)
            v = decode_value(r.value)
            tp = (k.topic, k.partition)
            if batch.is_transactional:
                mine = pending.setdefault(batch.producer_id, {}).setdefault(k.group, {})
                if v is None:
                    mine.pop(tp, None)
                else:
                    mine[tp] = (v.offset, position)
            elif v is None:
                cache.delete(k.group, tp)
            else:
                cache.put(k.group, tp, v.offset, position)
    for pid in list(pending):   # a producer whose records were all tombstones holds nothing
        by_group = {g: offs for g, offs in pending[pid].items() if offs}
        if by_group:
            pending[pid] = by_group
        else:
            del pending[pid]
    return out
