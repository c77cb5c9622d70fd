"""The time index (``.timeindex``): a sparse map from timestamp to offset.

Byte layout: a sequence of 12-byte entries, big-endian::

    int64 timestamp         the largest timestamp seen in the segment up to this offset
    int32 relative_offset   offset of the record carrying it - segment base offset

Timestamps strictly increase (an entry is only added when its timestamp is larger than the
last one) and offsets never decrease. The last slot is reserved for the entry written when the
segment rolls (its maximum timestamp), so the index counts as full one entry early. The file is
named ``<base offset, 20 digits>.timeindex``.
"""
from __future__ import annotations

import struct
from typing import NamedTuple

from ..errors import CorruptIndexError
from .index import Index, ProbeFn

__all__ = ["TimeIndex", "TimestampOffset"]

_ENTRY = struct.Struct(">qi")
NO_TIMESTAMP = -1


class TimestampOffset(NamedTuple):
    """A (timestamp, offset) pair; as a ListOffsets answer it also carries the batch's leader epoch."""

    timestamp: int
    offset: int
    leader_epoch: int | None = None


class TimeIndex(Index):
    """Sparse timestamp → offset index of one segment (12-byte entries, see module docstring).
    In memory ``keys`` are timestamps and ``values`` absolute offsets."""

    ENTRY_SIZE = 12
    KIND = "time"
    SUFFIX = ".timeindex"
    _STRUCT = _ENTRY

    def _from_disk(self, a: int, b: int) -> tuple[int, int]:
        return a, self.base_offset + b

    def _to_disk(self, key: int, value: int) -> bytes:
        return _ENTRY.pack(key, value - self.base_offset)

    @property
    def is_full(self) -> bool:
        return len(self.keys) >= self.max_entries - 1

    @property
    def last_entry(self) -> TimestampOffset:
        if not self.keys:
            return TimestampOffset(NO_TIMESTAMP, self.base_offset)
        return TimestampOffset(self.keys[-1], self.values[-1])

    def maybe_append(self, timestamp: int, offset: int, skip_full_check: bool = False, defer: bool = False) -> bool:
        """Append ``(timestamp, offset)`` if ``timestamp`` is larger than the last entry's.
        Returns True if an entry was written."""
        keys = self.keys
        assert skip_full_check or len(keys) < self.max_entries - 1, f"{self.file_name} is full"
        if keys and offset < self.values[-1]:
            raise CorruptIndexError(
                f"{self.file_name}: entry ({timestamp}, {offset}) would go below the last offset {self.values[-1]}")
        if timestamp > (keys[-1] if keys else NO_TIMESTAMP):
            self._write(timestamp, offset, defer)
            return True
        return False

    def lookup(self, target: int, probe: ProbeFn | list | None = None) -> TimestampOffset:
        """Largest entry with timestamp <= ``target``, or ``(-1, base_offset)`` if there is none."""
        n = self.floor(target, probe)
        if n < 0:
            return TimestampOffset(NO_TIMESTAMP, self.base_offset)
        return TimestampOffset(self.keys[n], self.values[n])

    def truncate_to(self, offset: int) -> None:
        """Remove every entry whose offset is >= ``offset``."""
        n = len(self.keys)
        while n and self.values[n - 1] >= offset:
            n -= 1
        self._truncate_entries(n)

    def sanity_check(self, next_offset: int | None) -> None:
        """Raise :class:`CorruptIndexError` unless timestamps strictly increase, offsets never
        decrease, and every offset lies in ``[base_offset, next_offset)``."""
        prev_t, prev_o = None, None
        for n, (t, o) in enumerate(zip(self.keys, self.values)):
            at = n * self.ENTRY_SIZE
            if o < self.base_offset:
                raise CorruptIndexError(f"{self.file_name}: entry at position {at} ({t}, {o}) is below the base offset {self.base_offset}")
            if prev_t is not None and (t <= prev_t or o < prev_o):
                raise CorruptIndexError(
                    f"{self.file_name}: entry at position {at} ({t}, {o}) does not follow ({prev_t}, {prev_o})")
            if next_offset is not None and o >= next_offset:
                raise CorruptIndexError(
                    f"{self.file_name}: entry at position {at} points to offset {o}, past the segment end {next_offset}")
            prev_t, prev_o = t, o
