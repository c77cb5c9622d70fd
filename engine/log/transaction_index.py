"""The aborted-transaction index: ``<base offset>.txnindex`` beside a segment.

A segment that received an ABORT marker gets one entry per aborted transaction (commits
are never indexed, and a segment without aborts has no ``.txnindex`` file at all). A
``read_committed`` fetch asks it which producers' data to skip. The 34-byte entry layout
(Kafka's ``AbortedTxn``) is in docs/file-formats.md.
"""
from __future__ import annotations

import struct
from typing import NamedTuple

from ..disk import Disk
from ..errors import CorruptIndexError

__all__ = ["AbortedTxn", "TransactionIndex", "TXN_INDEX_SUFFIX", "ENTRY_SIZE"]

TXN_INDEX_SUFFIX = ".txnindex"
_ENTRY = struct.Struct(">hqqqq")
ENTRY_SIZE = _ENTRY.size
assert ENTRY_SIZE == 34
_VERSION = 0


class AbortedTxn(NamedTuple):
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int

    def encode(self) -> bytes:
        return _ENTRY.pack(_VERSION, *self)


class TransactionIndex:
    """One segment's ``.txnindex``; the file is created by the first :meth:`append`."""

    def __init__(self, disk: Disk, rel: str) -> None:
        self.disk = disk
        self.rel = disk.check(rel)

    def exists(self) -> bool:
        return self.disk.exists(self.rel)

    def append(self, txn: AbortedTxn) -> None:
        entries = self.entries()
        if entries and txn.last_offset <= entries[-1].last_offset:
            raise CorruptIndexError(
                f"{self.rel}: aborted transaction ending at {txn.last_offset} is not after the last one "
                f"({entries[-1].last_offset})")
        self.disk.append(self.rel, txn.encode())

    def entries(self) -> list[AbortedTxn]:
        if not self.exists():
            return []
        data = self.disk.read_all(self.rel)
        if len(data) % ENTRY_SIZE:
            raise CorruptIndexError(f"{self.rel}: {len(data)} bytes is not a whole number of {ENTRY_SIZE}-byte entries")
        out = []
        for pos in range(0, len(data), ENTRY_SIZE):
            version, *fields = _ENTRY.unpack_from(data, pos)
            if version != _VERSION:
                raise CorruptIndexError(f"{self.rel}: entry at byte {pos} has version {version}, expected 0")
            out.append(AbortedTxn(*fields))
        return out

    def collect_aborted(self, fetch_offset: int, upper_bound: int) -> tuple[list[AbortedTxn], bool]:
        """Entries overlapping ``[fetch_offset, upper_bound)``; the flag is True once an entry's
        LSO reaches ``upper_bound`` (later segments cannot add anything: Kafka stops there)."""
        found = []
        for txn in self.entries():
            if txn.last_offset >= fetch_offset and txn.first_offset < upper_bound:
                found.append(txn)
            if txn.last_stable_offset >= upper_bound:
                return found, True
        return found, False

    def truncate_to(self, offset: int) -> None:
        """Drop entries whose marker is at or after ``offset`` (log truncation)."""
        entries = self.entries()
        kept = [t for t in entries if t.last_offset < offset]
        if len(kept) != len(entries):
            self.disk.truncate(self.rel, len(kept) * ENTRY_SIZE)

    def sanity_check(self) -> None:
        self.entries()
