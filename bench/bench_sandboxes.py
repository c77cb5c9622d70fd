"""Memory and files per sandbox, and a soak (plain script; never part of the test suite).

Default run (in this process, no server):

* **500 idle sandboxes**: the RSS growth of opening 500 lesson-2 sandboxes through the
  runtime, per sandbox (goal ≤ 2 MB), beside the peer: the same 500 engines built
  bare (the kind alone: two ``Log``s and their files, no runtime, frame builder or
  snapshot), in the same run; plus open files per sandbox. Lesson 10's kind too.
* **one sandbox at its message quota**: Python heap held by a lesson-2 sandbox after
  ``MAX_MESSAGES`` messages (tracemalloc; goal ≤ 2 MB).

``--soak MINUTES``: a daphne server on loopback and ``--sandboxes`` (50) WebSocket
clients each sending a command every ~0.5 s (produce, jump clock, reset at the quota)
for MINUTES; the server's RSS and open files at the start (after warm-up) and the end
(goal: flat), and commands answered.

    .venv/bin/python bench/bench_sandboxes.py [--count 500]
    .venv/bin/python bench/bench_sandboxes.py --soak 10 [--sandboxes 50]
"""
from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import random
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kafkaviz.settings")
os.environ.setdefault("DJANGO_SECRET_KEY", "bench-only-" + "x" * 40)


def rss_bytes(pid: str | int = "self") -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


def open_files(pid: str | int = "self") -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def mb(n: float) -> str:
    return f"{n / 2**20:.2f} MB"


def _setup():
    import django

    django.setup()
    from django.conf import settings

    return dict(settings.KAFKAVIZ_RUNTIME, REAP_EVERY_SECONDS=0, MAX_SANDBOXES=10**6, MAX_SANDBOXES_PER_ADDRESS=0,
                COMMAND_BURST=10**9, COMMANDS_PER_SECOND=1e9)


def child(kind: str, how: str, count: int) -> None:
    """One measurement in a fresh process (so freed memory of another cannot be reused):
    prints JSON {rss, heap, files} grown by ``count`` sandboxes built ``how``."""
    limits = _setup()
    from kafkaviz.lessons.content import load_content
    from kafkaviz.live.kinds import Limits, get_kind
    from kafkaviz.live.runtime import Runtime, new_sandbox_id

    with tempfile.TemporaryDirectory() as root:
        rt = Runtime(root, settings=limits)
        cls = get_kind(kind)
        lesson = load_content(kind)          # the lesson of that name runs this kind
        keep = []
        # Warm-up: imports and caches, counted in neither.
        asyncio.run(rt.attach(new_sandbox_id(), kind))
        Path(root, "warm").mkdir()
        keep.append(cls(Path(root, "warm"), seed=0, limits=Limits(1, 1), lesson=lesson))
        gc.collect()
        tracemalloc.start()
        rss0, heap0, fd0 = rss_bytes(), tracemalloc.get_traced_memory()[0], open_files()

        async def many() -> None:
            for _ in range(count):
                await rt.attach(new_sandbox_id(), kind)

        if how == "runtime":
            asyncio.run(many())
        else:
            for i in range(count):
                d = Path(root, f"bare-{i}")
                d.mkdir()
                keep.append(cls(d, seed=i, limits=Limits(limits["MAX_MESSAGES"], limits["MAX_DISK_BYTES"]), lesson=lesson))
        gc.collect()
        print(json.dumps({"rss": rss_bytes() - rss0, "heap": tracemalloc.get_traced_memory()[0] - heap0,
                          "files": open_files() - fd0}))
        rt.close_all()
        for engine in keep:
            engine.close()


def measure_child(kind: str, how: str, count: int) -> dict:
    import subprocess

    env = {**os.environ, "KAFKAVIZ_LOG_LEVEL": "WARNING"}
    out = subprocess.run([sys.executable, __file__, "--child", kind, how, str(count)], env=env, capture_output=True,
                         text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def idle(count: int) -> None:
    limits = _setup()
    from kafkaviz.live.runtime import Runtime, new_sandbox_id

    print(f"{count} idle sandboxes in one process, growth per sandbox (RSS, and Python heap by tracemalloc); "
          "peer: the kind's engine alone")
    for kind in ("segments", "replication"):
        peer = measure_child(kind, "bare", count)
        ours = measure_child(kind, "runtime", count)
        print(f"  {kind:<12} RSS {mb(ours['rss'] / count)} per sandbox (goal <= 2 MB), heap {mb(ours['heap'] / count)};"
              f" bare engine RSS {mb(peer['rss'] / count)}, heap {mb(peer['heap'] / count)};"
              f" heap ratio {ours['heap'] / max(peer['heap'], 1):.2f}x; open files per sandbox "
              f"{ours['files'] / count:.1f} (bare {peer['files'] / count:.1f})")

    async def at_quota(root: str) -> tuple[int, int, int, int]:
        rt = Runtime(root, settings={**limits, "MAX_DISK_BYTES": 10**9, "MAX_SANDBOXES_PER_ADDRESS": 0})

        async def fill(sid: str) -> None:
            await rt.attach(sid, "segments")
            sent = 0
            while sent < limits["MAX_MESSAGES"]:
                await rt.command(sid, {"cmd": "produce", "partition": str(sent // 50 % 2), "count": "50",
                                       "value_size": "100"})
                await rt.flush(rt.sandboxes[sid])
                sent += 50

        # Warm-up: a first sandbox taken to its quota too. What it grows once per process (the
        # interpreter's table of interned strings, which pathlib fills with file names; caches)
        # is no sandbox's: measured inside the window it added ~1.9 MB to whichever came first.
        await fill(new_sandbox_id())
        sid = new_sandbox_id()
        gc.collect()
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        await fill(sid)
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
        # Diagnostic: how much of that is the engine Disk's path caches (engine/disk.py).
        disk = rt.sandboxes[sid].engine.disk
        disk._paths.clear()
        disk._checked.clear()
        gc.collect()
        without_caches = tracemalloc.get_traced_memory()[0] - before
        tracemalloc.stop()
        files = len(list(Path(root, sid).rglob("*")))
        events = len(rt.sandboxes[sid].engine.events.envelopes)
        rt.close_all()
        return held, without_caches, files, events

    with tempfile.TemporaryDirectory() as root:
        held, without, files, events = asyncio.run(at_quota(root))
    print(f"one lesson-2 sandbox at its quota ({limits['MAX_MESSAGES']} messages): {mb(held)} of Python heap "
          f"(goal <= 2 MB), {mb(without)} without engine/disk.py's path caches; {events} events kept; "
          f"{files} files on disk")


# ---- soak -------------------------------------------------------------------------

async def soak(minutes: float, sandboxes: int) -> None:
    import websockets

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_frames import free_port, start_server, stop_server, session_cookie

    with tempfile.TemporaryDirectory() as tmp:
        port = free_port()
        proc = start_server(Path(tmp), port, {"KAFKAVIZ_MAX_SANDBOXES_PER_ADDRESS": "0",
                                              "KAFKAVIZ_MAX_CONNECTIONS_PER_ADDRESS": "0"})
        stats = {"acks": 0, "errors": 0, "frames": 0, "codes": {}}
        stop_at = [time.monotonic() + 10**9]

        async def client(i: int) -> None:
            rng = random.Random(i)
            cookie = await asyncio.to_thread(session_cookie, port)
            async with websockets.connect(f"ws://127.0.0.1:{port}/ws/lessons/segments/",
                                          origin=f"http://127.0.0.1:{port}", additional_headers={"Cookie": cookie},
                                          max_size=2**24) as ws:

                async def reader() -> None:
                    async for text in ws:
                        msg = json.loads(text)
                        kind = msg.get("type")
                        if kind == "ack":
                            stats["acks"] += 1
                        elif kind == "error":
                            stats["errors"] += 1
                            stats["codes"][msg["code"]] = stats["codes"].get(msg["code"], 0) + 1
                            if msg["code"] == "quota":
                                await ws.send(json.dumps({"cmd": "reset"}))
                        else:
                            stats["frames"] += 1

                task = asyncio.create_task(reader())
                while time.monotonic() < stop_at[0]:
                    r = rng.random()
                    if r < 0.8:
                        cmd = {"cmd": "produce", "partition": str(rng.randrange(2)), "count": str(rng.randint(1, 10)),
                               "value_size": str(rng.randint(10, 300))}
                    else:
                        cmd = {"cmd": "advance", "ms": str(rng.randint(1, 60) * 1000)}
                    await ws.send(json.dumps(cmd))
                    await asyncio.sleep(rng.uniform(0.3, 0.7))
                task.cancel()

        try:
            tasks = [asyncio.create_task(client(i)) for i in range(sandboxes)]
            await asyncio.sleep(20)  # warm-up: every sandbox open and busy
            start = (rss_bytes(proc.pid), open_files(proc.pid), time.monotonic(), dict(stats))
            stop_at[0] = time.monotonic() + minutes * 60
            samples = []
            while time.monotonic() < stop_at[0]:
                await asyncio.sleep(min(60, max(1, stop_at[0] - time.monotonic())))
                samples.append((round((time.monotonic() - start[2]) / 60, 1), rss_bytes(proc.pid) / 2**20,
                                open_files(proc.pid)))
            end = (rss_bytes(proc.pid), open_files(proc.pid))
            await asyncio.gather(*tasks, return_exceptions=True)
        finally:
            stop_server(proc)
        acks = stats["acks"] - start[3]["acks"]
        print(f"soak: {sandboxes} active lesson-2 sandboxes for {minutes:g} min, one daphne process")
        print(f"  server RSS   start {mb(start[0])}   end {mb(end[0])}   ({(end[0] - start[0]) / start[0] * 100:+.1f} %)"
              f"   goal: flat")
        print(f"  open files   start {start[1]}   end {end[1]}   goal: flat")
        print(f"  commands answered {acks} ({acks / (minutes * 60):.0f}/s), errors by code {stats['codes']}, "
              f"frames {stats['frames']}")
        print("  samples (min, RSS MB, open files): " + ", ".join(f"({t}, {r:.0f}, {f})" for t, r, f in samples))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=500)
    ap.add_argument("--soak", type=float, default=0, help="minutes of soak instead of the idle figures")
    ap.add_argument("--sandboxes", type=int, default=50)
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child[0], args.child[1], int(args.child[2]))
    elif args.soak:
        asyncio.run(soak(args.soak, args.sandboxes))
    else:
        idle(args.count)


if __name__ == "__main__":
    main()
