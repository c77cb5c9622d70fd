"""A wire listener on free loopback ports, run on its own event loop in a thread, so
blocking clients (confluent-kafka, kafka-python, kcat) can drive it from the test."""
from __future__ import annotations

from pathlib import Path

import pytest

from engine.records import iter_batches
from wire.threaded import Listener


@pytest.fixture(scope="module")
def listener(tmp_path_factory):
    lst = Listener(tmp_path_factory.mktemp("wire")).start()
    yield lst
    lst.stop()


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
