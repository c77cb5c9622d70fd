"""A wire listener on free loopback ports, run on its own event loop in a thread, so
blocking clients (confluent-kafka, kafka-python, kcat) can drive it from the test."""
from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from engine.records import iter_batches
from wire.server import WireServer


class Listener:
    """A started :class:`WireServer`; ``call(fn)`` runs ``fn(server)`` on its loop."""

    def __init__(self, data_dir: Path, **kwargs) -> None:
        self.server = WireServer(data_dir, port=0, **kwargs)
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="wire-listener", daemon=True)

    def start(self) -> "Listener":
        self.thread.start()
        asyncio.run_coroutine_threadsafe(self.server.start(), self.loop).result(10)
        return self

    def call(self, fn, timeout: float = 10):
        async def run():
            return fn(self.server)
        return asyncio.run_coroutine_threadsafe(run(), self.loop).result(timeout)

    @property
    def bootstrap(self) -> str:
        return self.server.bootstrap

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self.server.stop(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()


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
