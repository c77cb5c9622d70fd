"""A :class:`~wire.server.WireServer` on its own event loop in a background thread, for
callers that are not asyncio (tests with blocking clients, benchmarks, a web worker)."""
from __future__ import annotations

import asyncio
import threading
from pathlib import Path

from .server import WireServer

__all__ = ["Listener"]


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
