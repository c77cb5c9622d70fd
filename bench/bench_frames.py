"""The engine-to-browser pipe against a bare Channels group send (plain script, prints figures).

Both sides use the same in-memory channel layer and a watcher channel in the group:

* **bare**: ``group_send`` of a frame-sized dict, then ``receive`` on the watcher.
* **pipe**: a lesson-2 produce command through the real :class:`Runtime` (validation,
  rate limit, the engine appending one batch, events → frame builder → frame with the
  whole state) published with ``group_send``, then ``receive`` on the watcher.

    DJANGO_SETTINGS_MODULE=kafkaviz.settings .venv/bin/python bench/bench_frames.py [--frames 2000]
"""
from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kafkaviz.settings")

import django  # noqa: E402

django.setup()

from channels.layers import InMemoryChannelLayer  # noqa: E402
from django.conf import settings  # noqa: E402

from kafkaviz.live.runtime import Runtime, group_name, new_sandbox_id  # noqa: E402


async def bare(layer: InMemoryChannelLayer, frame: dict, n: int) -> float:
    ch = await layer.new_channel()
    await layer.group_add("bare", ch)
    started = time.perf_counter()
    for _ in range(n):
        await layer.group_send("bare", {"type": "sandbox.frame", "frame": frame})
        await layer.receive(ch)
    return time.perf_counter() - started


async def pipe(layer: InMemoryChannelLayer, n: int, root: str) -> tuple[float, dict]:
    runtime = Runtime(root, settings={**settings.KAFKAVIZ_RUNTIME, "FRAME_INTERVAL_MS": 0, "REAP_EVERY_SECONDS": 0,
                                      "COMMANDS_PER_SECOND": 1e9, "COMMAND_BURST": 10**9,
                                      "MAX_MESSAGES": 10**9, "MAX_DISK_BYTES": 10**12},
                      publish=layer.group_send)
    sid = new_sandbox_id()
    await runtime.attach(sid, "segments")
    ch = await layer.new_channel()
    await layer.group_add(group_name(sid), ch)
    last: dict = {}
    started = time.perf_counter()
    for _ in range(n):
        await runtime.command(sid, {"type": "produce", "partition": 0, "count": 1, "value_size": 100, "key": ""})
        last = (await layer.receive(ch))["frame"]
    elapsed = time.perf_counter() - started
    runtime.close_all()
    return elapsed, last


async def main(n: int) -> None:
    layer = InMemoryChannelLayer(capacity=10**6)
    with tempfile.TemporaryDirectory() as root:
        t_pipe, frame = await pipe(layer, n, root)
    t_bare = await bare(layer, frame, n)
    print(f"frames: {n}, last frame carried {len(frame['events'])} events and the whole state")
    print(f"  bare group_send + receive     {t_bare / n * 1e6:9.1f} us/frame  {n / t_bare:10.0f} frames/s")
    print(f"  produce -> engine -> frame    {t_pipe / n * 1e6:9.1f} us/frame  {n / t_pipe:10.0f} frames/s")
    print(f"  the pipe costs {t_pipe / t_bare:.1f}x a bare group send of the same frame")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frames", type=int, default=2000)
    asyncio.run(main(ap.parse_args().frames))
