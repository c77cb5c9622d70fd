"""What the offset index and the time index share: a file of fixed-size big-endian entries,
kept in memory as two parallel lists and written to the file via :class:`Disk`.

New entries are buffered: lookups see them at once (they search the lists), and they reach
the file with one write at the next :meth:`Index.sync` — when the segment rolls, is flushed,
is closed or truncated — much as Kafka's writes into an mmap'd index cost nothing per append
and reach the disk when the page cache is flushed. A crash loses unsynced entries, just as it
loses an unflushed mmap; the segments that can be missing them are those at or after the
recovery point, whose indexes recovery rebuilds.

While its segment is active an index file is *preallocated*: extended with zeros to
``floor(segment_index_bytes / entry_size) * entry_size`` bytes. When the segment rolls, and on a
clean close, the file is trimmed to exactly ``entries * entry_size``. The entry count of a file
read back is ``length / entry_size`` — so an untrimmed file left by a crash looks full of zero
entries, which the sanity check rejects (entries must be strictly increasing).
"""
from __future__ import annotations

import bisect
import struct
from typing import Callable

from ..disk import Disk
from ..errors import CorruptIndexError

__all__ = ["Index", "ProbeFn"]

#: ``probe(low, high, mid, entry_key, entry_value, went)`` — one binary-search step; the key is the
#: searched column (offset in ``.index``, timestamp in ``.timeindex``), the value the other one.
ProbeFn = Callable[[int, int, int, int, int, str], None]


class Index:
    """Base of :class:`OffsetIndex` and :class:`TimeIndex`. Subclasses set ``ENTRY_SIZE``,
    ``KIND`` and the ``_pack``/``_unpack`` of one entry; ``keys`` is the searched column
    (offsets, or timestamps), ``values`` the other one."""

    ENTRY_SIZE = 8
    KIND = "index"
    SUFFIX = ".index"
    _STRUCT = struct.Struct(">ii")

    def __init__(self, disk: Disk, rel: str, base_offset: int, max_index_size: int) -> None:
        self.disk = disk
        self.rel = rel
        self.base_offset = base_offset
        self.max_entries = max(max_index_size // self.ENTRY_SIZE, 1)
        self.keys: list[int] = []
        self.values: list[int] = []
        self._unwritten_from: int | None = None   # entries from here on are not in the file yet

    # ---- file state ----------------------------------------------------------
    @property
    def file_name(self) -> str:
        return self.rel.rsplit("/", 1)[-1]

    @property
    def entries(self) -> int:
        return len(self.keys)

    @property
    def max_size_bytes(self) -> int:
        return self.max_entries * self.ENTRY_SIZE

    @property
    def size_bytes(self) -> int:
        return self.entries * self.ENTRY_SIZE

    def file_size(self) -> int:
        self.sync()
        return self.disk.size(self.rel)

    def sync(self) -> None:
        """Write the entries appended since the last sync with one write."""
        start = self._unwritten_from
        if start is None:
            return
        self._unwritten_from = None
        to_disk = self._to_disk
        data = b"".join([to_disk(k, v) for k, v in zip(self.keys[start:], self.values[start:])])
        if data:
            self.disk.write_at(self.rel, start * self.ENTRY_SIZE, data)

    def preallocate(self) -> None:
        """Make the file ``max_entries`` entries long (zeros after the last entry)."""
        self.sync()
        if self.disk.size(self.rel) != self.max_size_bytes:
            self.disk.truncate(self.rel, self.max_size_bytes)

    def trim(self) -> tuple[int, int]:
        """Cut the file to its entries; returns (size before, size after)."""
        self.sync()
        before = self.disk.size(self.rel)
        if before != self.size_bytes:
            self.disk.truncate(self.rel, self.size_bytes)
        return before, self.size_bytes

    def fsync(self) -> None:
        self.sync()
        self.disk.fsync(self.rel)

    def reset(self) -> None:
        """Drop every entry (before a rebuild)."""
        self._unwritten_from = None
        self.keys = []
        self.values = []
        self.disk.truncate(self.rel, 0)

    def load(self) -> None:
        """Read the file into memory. Raises :class:`CorruptIndexError` if its length is not a
        multiple of the entry size."""
        if not self.disk.exists(self.rel):
            raise CorruptIndexError(f"{self.file_name}: missing")
        data = self.disk.read_all(self.rel)
        if len(data) % self.ENTRY_SIZE:
            raise CorruptIndexError(
                f"{self.file_name}: length {len(data)} is not a multiple of the entry size {self.ENTRY_SIZE} "
                f"(position {len(data) - len(data) % self.ENTRY_SIZE})")
        keys, values = [], []
        for a, b in self._STRUCT.iter_unpack(data):
            k, v = self._from_disk(a, b)
            keys.append(k)
            values.append(v)
        self.keys, self.values = keys, values
        self._unwritten_from = None

    # ---- entries -------------------------------------------------------------
    def _from_disk(self, a: int, b: int) -> tuple[int, int]:
        raise NotImplementedError

    def _to_disk(self, key: int, value: int) -> bytes:
        raise NotImplementedError

    def _write(self, key: int, value: int, defer: bool = False) -> None:
        if self._unwritten_from is None:
            self._unwritten_from = len(self.keys)
        self.keys.append(key)
        self.values.append(value)
        if not defer:
            self.sync()

    def entry(self, n: int) -> tuple[int, int]:
        return self.keys[n], self.values[n]

    def floor(self, target: int, probe: ProbeFn | list | None = None) -> int:
        """Index of the largest entry whose key is <= ``target`` by binary search, or -1.
        With ``probe`` the same search is walked in Python and each step reported: a callable
        is called, a list gets the tuple ``(low, high, mid, entry_key, entry_value, went)``."""
        keys = self.keys
        if probe is None:
            return bisect.bisect_right(keys, target) - 1
        record = probe.append if isinstance(probe, list) else (lambda step: probe(*step))
        lo, hi, best = 0, len(keys) - 1, -1
        values = self.values
        while lo <= hi:
            mid = (lo + hi) >> 1
            k = keys[mid]
            if k < target:
                record((lo, hi, mid, k, values[mid], "right"))
                best, lo = mid, mid + 1
            elif k > target:
                record((lo, hi, mid, k, values[mid], "left"))
                hi = mid - 1
            else:
                record((lo, hi, mid, k, values[mid], "hit"))
                return mid
        return best

    def _truncate_entries(self, n: int) -> None:
        """Keep the first ``n`` entries; zero the bytes of the dropped ones so the unused tail of
        a preallocated file stays zeros (and a rebuilt index equals this one byte for byte)."""
        self.sync()
        old_n = len(self.keys)
        if n >= old_n:
            return
        del self.keys[n:]
        del self.values[n:]
        start, old_end = n * self.ENTRY_SIZE, old_n * self.ENTRY_SIZE
        if self.disk.size(self.rel) <= old_end:
            self.disk.truncate(self.rel, start)  # a trimmed file: just cut it
        else:
            self.disk.write_at(self.rel, start, bytes(old_end - start))

    def raw_entries(self) -> bytes:
        """The entries as they are on disk (for comparisons and dumps)."""
        return b"".join(self._to_disk(k, v) for k, v in zip(self.keys, self.values))
