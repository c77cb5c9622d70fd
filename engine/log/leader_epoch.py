"""The leader epoch cache (KIP-101 / KIP-279) and its ``leader-epoch-checkpoint`` file.

Entries are ``(epoch, start_offset)`` pairs, both strictly increasing: "epoch E started at
offset O". The file uses the text checkpoint format (see :mod:`engine.log.checkpoint`)::

    0
    2
    0 0
    3 1500

It is rewritten atomically whenever an epoch is assigned or the cache is truncated.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..disk import Disk
from .checkpoint import CheckpointFile
from .events import EpochCacheTruncated, LeaderEpochAssigned

__all__ = ["EpochEntry", "LeaderEpochFileCache", "UNDEFINED_EPOCH", "UNDEFINED_EPOCH_OFFSET"]

UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1


@dataclass(frozen=True)
class EpochEntry:
    epoch: int
    start_offset: int


class LeaderEpochFileCache:
    """``(epoch, start_offset)`` entries kept in memory and written through to ``rel``.

    ``events`` / ``ident`` (broker, topic, partition) are optional: with them every change
    is emitted as ``leader_epoch_assigned`` / ``epoch_cache_truncated``.
    """

    def __init__(self, disk: Disk, rel: str, *, events: Any = None,
                 ident: tuple[int | None, str, int] = (None, "", 0)) -> None:
        self.checkpoint = CheckpointFile(disk, rel, (int, int))
        self.events = events
        self.ident = ident
        self._entries: list[EpochEntry] = [EpochEntry(e, o) for e, o in self.checkpoint.read()]
        # The latest epoch, -1 when there is none: a plain attribute the append path compares
        # each batch's epoch with (kept by _flush, which every change calls).
        self.newest = self._entries[-1].epoch if self._entries else -1

    # ---- queries -------------------------------------------------------------
    @property
    def entries(self) -> list[EpochEntry]:
        return list(self._entries)

    @property
    def latest_epoch(self) -> int | None:
        return self._entries[-1].epoch if self._entries else None

    @property
    def latest_entry(self) -> EpochEntry | None:
        return self._entries[-1] if self._entries else None

    def epoch_for_offset(self, offset: int) -> int | None:
        """The epoch whose range holds ``offset`` (largest start offset <= offset)."""
        found = None
        for e in self._entries:
            if e.start_offset <= offset:
                found = e.epoch
            else:
                break
        return found

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> tuple[int, int]:
        """``(epoch, end offset)`` for OffsetsForLeaderEpoch / fetch divergence (reference §5.5)."""
        if not self._entries or requested_epoch == UNDEFINED_EPOCH:
            return (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)
        if requested_epoch == self._entries[-1].epoch:
            return (requested_epoch, log_end_offset)
        nxt = next((e for e in self._entries if e.epoch > requested_epoch), None)
        if nxt is None:
            return (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)
        floor = None
        for e in self._entries:
            if e.epoch <= requested_epoch:
                floor = e
        if floor is None:
            return (requested_epoch, nxt.start_offset)
        return (floor.epoch, nxt.start_offset)

    # ---- changes -------------------------------------------------------------
    def assign(self, epoch: int, start_offset: int) -> bool:
        """Record that ``epoch`` starts at ``start_offset``. Entries with an epoch or start offset
        >= the new one are dropped first (Kafka's rule). Re-assigning the latest epoch at the same
        or a later offset is a no-op. Returns True if the cache changed."""
        if epoch < 0:
            return False
        last = self.latest_entry
        if last is not None and epoch == last.epoch and start_offset >= last.start_offset:
            return False
        self._entries = [e for e in self._entries if e.epoch < epoch and e.start_offset < start_offset]
        self._entries.append(EpochEntry(epoch, start_offset))
        self._flush()
        self._emit(LeaderEpochAssigned(*self.ident, epoch, start_offset))
        return True

    def truncate_from_end(self, end_offset: int) -> bool:
        """Drop entries starting at or after ``end_offset`` (the log was truncated there)."""
        kept = [e for e in self._entries if e.start_offset < end_offset]
        if len(kept) == len(self._entries):
            return False
        self._entries = kept
        self._flush()
        self._emit(EpochCacheTruncated(*self.ident, "end", end_offset, self._plain()))
        return True

    def truncate_from_start(self, start_offset: int) -> bool:
        """The log start offset moved to ``start_offset``: drop entries wholly below it and move the
        start of the surviving first entry up to it."""
        if not self._entries or self._entries[0].start_offset >= start_offset:
            return False
        idx = 0
        for i, e in enumerate(self._entries):
            if e.start_offset <= start_offset:
                idx = i
        kept = self._entries[idx:]
        kept[0] = EpochEntry(kept[0].epoch, start_offset)
        self._entries = kept
        self._flush()
        self._emit(EpochCacheTruncated(*self.ident, "start", start_offset, self._plain()))
        return True

    def clear(self) -> None:
        had = bool(self._entries)
        self._entries = []
        self._flush()
        if had:
            self._emit(EpochCacheTruncated(*self.ident, "end", 0, []))

    def _plain(self) -> list:
        return [[e.epoch, e.start_offset] for e in self._entries]

    def _flush(self) -> None:
        self.newest = self._entries[-1].epoch if self._entries else -1
        self.checkpoint.write([(e.epoch, e.start_offset) for e in self._entries])

    def _emit(self, ev: Any) -> None:
        if self.events is not None:
            self.events.emit(ev)
