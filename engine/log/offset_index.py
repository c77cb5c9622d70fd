"""The offset index (``.index``): a sparse map from offset to byte position in the ``.log``.

Byte layout: a sequence of 8-byte entries, big-endian::

    int32 relative_offset   offset - segment base offset
    int32 position          byte position of a batch in the segment's .log

Entries are strictly increasing in offset and position. An entry is written when more than
``index.interval.bytes`` have been appended since the previous one; it maps the append's *last*
offset to the append's *start* position (reference §3.3). The file is named
``<base offset, 20 digits>.index``.
"""
from __future__ import annotations

import struct
from typing import NamedTuple

from ..errors import CorruptIndexError
from .index import Index, ProbeFn

__all__ = ["OffsetIndex", "OffsetPosition"]

_ENTRY = struct.Struct(">ii")


class OffsetPosition(NamedTuple):
    offset: int
    position: int


class OffsetIndex(Index):
    """Sparse offset → position index of one segment (8-byte entries, see module docstring).
    In memory ``keys`` are absolute offsets and ``values`` positions."""

    ENTRY_SIZE = 8
    KIND = "offset"
    SUFFIX = ".index"
    _STRUCT = _ENTRY

    def _from_disk(self, a: int, b: int) -> tuple[int, int]:
        return self.base_offset + a, b

    def _to_disk(self, key: int, value: int) -> bytes:
        return _ENTRY.pack(key - self.base_offset, value)

    @property
    def is_full(self) -> bool:
        return len(self.keys) >= self.max_entries

    @property
    def last_offset(self) -> int:
        return self.keys[-1] if self.keys else self.base_offset

    def append(self, offset: int, position: int, defer: bool = False) -> None:
        """Add an entry (written through, or at the next :meth:`sync` with ``defer``)."""
        keys = self.keys
        assert len(keys) < self.max_entries, f"{self.file_name} is full ({self.max_entries} entries)"
        assert not keys or (offset > keys[-1] and position > self.values[-1]), \
            f"{self.file_name}: entry ({offset}, {position}) after {self.entry(len(keys) - 1)}"
        self._write(offset, position, defer)

    def lookup(self, target: int, probe: ProbeFn | list | None = None) -> OffsetPosition:
        """Largest entry with offset <= ``target``, or ``(base_offset, 0)`` if there is none."""
        n = self.floor(target, probe)
        if n < 0:
            return OffsetPosition(self.base_offset, 0)
        return OffsetPosition(self.keys[n], self.values[n])

    def truncate_to(self, offset: int) -> None:
        """Remove every entry whose offset is >= ``offset``."""
        n = len(self.keys)
        while n and self.keys[n - 1] >= offset:
            n -= 1
        self._truncate_entries(n)

    def sanity_check(self, log_size: int) -> None:
        """Raise :class:`CorruptIndexError` unless offsets and positions strictly increase,
        offsets are >= the base offset and every position lies inside the .log."""
        prev_o, prev_p = None, None
        for n, (o, p) in enumerate(zip(self.keys, self.values)):
            at = n * self.ENTRY_SIZE
            if o < self.base_offset or p < 0:
                raise CorruptIndexError(f"{self.file_name}: entry at position {at} ({o}, {p}) is below the base offset {self.base_offset}")
            if prev_o is not None and (o <= prev_o or p <= prev_p):
                raise CorruptIndexError(
                    f"{self.file_name}: entry at position {at} ({o}, {p}) does not follow ({prev_o}, {prev_p})")
            if p >= log_size:
                raise CorruptIndexError(
                    f"{self.file_name}: entry at position {at} points to log position {p}, past the end {log_size}")
            prev_o, prev_p = o, p
