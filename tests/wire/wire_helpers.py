"""Helpers the wire tests share (a module of its own: sibling test directories have\nconftest.py files too, and pytest imports each as ``conftest``)."""
from __future__ import annotations

from pathlib import Path

from engine.records import iter_batches


def segment_records(data_dir: Path, broker: int, topic: str, partition: int) -> list[tuple[int, bytes, bytes]]:
    """(offset, key, value) of every record in a replica's segment files, read from disk."""
    out = []
    part_dir = Path(data_dir) / "cluster" / f"broker-{broker}" / f"{topic}-{partition}"
    for seg in sorted(part_dir.glob("*.log")):
        for _, batch in iter_batches(seg.read_bytes()):
            if batch.is_control:
                continue
            out.extend((r.offset, r.key, r.value) for r in batch.records)
    return out
