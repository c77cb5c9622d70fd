"""The cleaner's offset map: key → the largest offset seen for it in the dirty section.

Like Kafka's ``SkimpyOffsetMap`` it stores the MD5 digest of each key (16 bytes; a shorter key as
it is) rather than the key, so its memory is bounded by its number of slots whatever the key sizes:
``slots = memory // (16 + 8)`` and the map counts as full at ``slots * load_factor`` entries
(``log.cleaner.dedupe.buffer.size`` 128 MiB, ``log.cleaner.io.buffer.load.factor`` 0.9).
A full map ends the dirty range early; the cleaner point then moves only that far.
"""
from __future__ import annotations

import hashlib

_md5 = hashlib.md5

__all__ = ["OffsetMap", "DEFAULT_DEDUPE_BUFFER_SIZE", "DEFAULT_LOAD_FACTOR", "BYTES_PER_ENTRY"]

DEFAULT_DEDUPE_BUFFER_SIZE = 134217728
DEFAULT_LOAD_FACTOR = 0.9
BYTES_PER_ENTRY = 16 + 8


class OffsetMap:
    def __init__(self, memory: int = DEFAULT_DEDUPE_BUFFER_SIZE, load_factor: float = DEFAULT_LOAD_FACTOR) -> None:
        if memory < BYTES_PER_ENTRY:
            raise ValueError(f"offset map memory {memory} is below one entry ({BYTES_PER_ENTRY} bytes)")
        self.slots = memory // BYTES_PER_ENTRY
        self.capacity = max(1, int(self.slots * load_factor))
        self._map: dict[bytes, int] = {}
        self.latest_offset = -1

    @staticmethod
    def digest(key: bytes) -> bytes:
        return hashlib.md5(key).digest()

    @staticmethod
    def slot_key(key: bytes) -> bytes:
        """What the map stores for ``key`` (itself when shorter than a digest, else its MD5)."""
        return key if len(key) < 16 else _md5(key).digest()

    @property
    def table(self) -> dict[bytes, int]:
        """slot key → offset, for the cleaner's hot loops (which keep ``latest_offset`` themselves)."""
        return self._map

    def put(self, key: bytes, offset: int) -> None:
        # Keys shorter than a digest are stored as they are (no longer than a digest, and a
        # different length, so they cannot collide with one); the rest as their MD5 digest.
        self._map[key if len(key) < 16 else _md5(key).digest()] = offset
        if offset > self.latest_offset:
            self.latest_offset = offset

    def get(self, key: bytes) -> int:
        """The mapped offset, or -1 when the key is not in the map."""
        return self._map.get(key if len(key) < 16 else _md5(key).digest(), -1)

    def update_latest_offset(self, offset: int) -> None:
        if offset > self.latest_offset:
            self.latest_offset = offset

    @property
    def size(self) -> int:
        return len(self._map)

    @property
    def full(self) -> bool:
        return len(self._map) >= self.capacity

    def clear(self) -> None:
        self._map.clear()
        self.latest_offset = -1
