"""Kafka's text checkpoint files (``leader-epoch-checkpoint``, ``recovery-point-offset-checkpoint``,
``replication-offset-checkpoint``, ``log-start-offset-checkpoint``, ``cleaner-offset-checkpoint``).

The text layout, the atomic write and what a reader rejects are in docs/file-formats.md.
"""
from __future__ import annotations

from typing import Sequence

from ..disk import Disk
from ..errors import CorruptCheckpointError

__all__ = ["CheckpointFile", "CHECKPOINT_VERSION"]

CHECKPOINT_VERSION = 0


class CheckpointFile:
    """One checkpoint file. ``fields`` gives the type of each entry field (``int`` or ``str``),
    e.g. ``(int, int)`` for the leader-epoch checkpoint, ``(str, int, int)`` for the per-log-dir ones."""

    def __init__(self, disk: Disk, rel: str, fields: Sequence[type] = (int, int)) -> None:
        self.disk = disk
        self.rel = disk.check(rel)
        self.fields = tuple(fields)

    @property
    def name(self) -> str:
        return self.rel.rsplit("/", 1)[-1]

    def encode(self, entries: Sequence[Sequence]) -> bytes:
        lines = [str(CHECKPOINT_VERSION), str(len(entries))]
        for entry in entries:
            if len(entry) != len(self.fields):
                raise ValueError(f"{self.name}: entry {entry!r} must have {len(self.fields)} fields")
            lines.append(" ".join(str(v) for v in entry))
        return ("\n".join(lines) + "\n").encode()

    def write(self, entries: Sequence[Sequence]) -> None:
        self.disk.write_atomic(self.rel, self.encode(entries))

    def read(self) -> list[tuple]:
        if not self.disk.exists(self.rel):
            return []
        return self.decode(self.disk.read_all(self.rel))

    def decode(self, data: bytes) -> list[tuple]:
        try:
            text = data.decode()
        except UnicodeDecodeError as exc:
            raise CorruptCheckpointError(f"{self.name}: not UTF-8 at byte {exc.start}") from None
        if not text.strip():
            return []
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        if len(lines) < 2:
            raise CorruptCheckpointError(f"{self.name}: expected a version line and a count line, got {len(lines)} line(s)")
        version = self._int(lines[0], 1)
        if version != CHECKPOINT_VERSION:
            raise CorruptCheckpointError(f"{self.name}: unknown version {version} on line 1 (expected {CHECKPOINT_VERSION})")
        count = self._int(lines[1], 2)
        body = lines[2:]
        if count != len(body):
            raise CorruptCheckpointError(f"{self.name}: line 2 says {count} entries but the file has {len(body)}")
        out = []
        for n, line in enumerate(body, start=3):
            parts = line.split()
            if len(parts) != len(self.fields):
                raise CorruptCheckpointError(f"{self.name}: line {n} {line!r} should have {len(self.fields)} fields")
            out.append(tuple(self._int(p, n) if t is int else p for p, t in zip(parts, self.fields)))
        return out

    def _int(self, text: str, line: int) -> int:
        try:
            return int(text.strip())
        except ValueError:
            raise CorruptCheckpointError(f"{self.name}: line {line} {text!r} is not an integer") from None
