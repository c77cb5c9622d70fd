"""The frame pipe over a real WebSocket, beside a bare Channels group send (plain script).

Starts daphne on loopback as a subprocess (``bench/peer_asgi.py``: the app plus one
peer route), then a client that parses every JSON message (and applies state diffs,
as the browser does) measures, in paired interleaved rounds:

* **click → frame**: a lesson-2 ``produce`` sent every 30 ms; the time until a frame
  whose state shows that message arrives. Peer: a message to ``/ws/bench-peer/``, which
  ``group_send``s a real frame of the same size back (socket + channel layer + JSON,
  no engine). Goal: p99 ≤ 50 ms.
* **frames per second during a burst**: 16 produces of 20 messages sent back to back;
  frames that reached the client per second until the last one shows. Goal: paced, at most the
  frame rate the settings allow (no flood), and every click answered.
* **first-load bytes** of ``/`` and of the lesson-2 page: the HTML and every script,
  style sheet and image it references (gzip as a browser asks), plus the lesson
  socket's first frame. Goal: ≤ 300 KB.

    .venv/bin/python bench/bench_frames.py [--rounds 8] [--clicks 12]
"""
from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import websockets

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from kafkaviz.live.frames import apply_state_diff  # noqa: E402  (the browser's diff, in Python)
from kafkaviz.serve import free_port, healthy, stop_process  # noqa: E402
CLICK_GAP_S = 0.030
BURST_COUNT = 20      # messages per produce in the burst, so the burst lasts a while


def start_server(tmp: Path, port: int, extra_env: dict[str, str]) -> subprocess.Popen:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "kafkaviz.settings", "KAFKAVIZ_DATA_DIR": str(tmp / "data"),
           "DATABASE_URL": f"sqlite:///{tmp / 'db.sqlite3'}", "DJANGO_DEBUG": "0",
           "DJANGO_SECRET_KEY": "bench-only-" + "x" * 40, "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost",
           "KAFKAVIZ_LOG_LEVEL": "WARNING", **extra_env}
    env.pop("REDIS_URL", None)
    log = open(tmp / "daphne.log", "wb")
    proc = subprocess.Popen([sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port),
                             "bench.peer_asgi:application"], cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        healthy(f"http://127.0.0.1:{port}", 30)
    except RuntimeError:
        stop_process(proc)
        raise SystemExit(f"daphne did not start:\n{(tmp / 'daphne.log').read_text()[-3000:]}") from None
    return proc


stop_server = stop_process


# ---- the client's view of the frame protocol (docs/web.md, "Frame shape") -----------

class Client:
    """A lesson socket that keeps the current state the way live.js does."""

    def __init__(self, ws) -> None:
        self.ws = ws
        self.base: dict | None = None
        self.base_seq: int | None = None
        self.state: dict | None = None
        self.frames = 0
        self.stale = 0
        self.frame_bytes: list[int] = []

    def take_text(self, text: str) -> dict:
        msg = json.loads(text)
        if msg.get("type") == "frame":
            self.frame_bytes.append(len(text.encode()))
            self.last_frame = dict(msg)
        self.take(msg)
        return msg

    def take(self, msg: dict) -> bool:
        """True if ``msg`` was a frame (and the state is updated)."""
        if msg.get("type") != "frame":
            return False
        self.frames += 1
        if "state" in msg:
            self.state = msg["state"]
            if msg.get("full", True):
                self.base, self.base_seq = msg["state"], msg["frame_seq"]
        elif "diff" in msg:
            if msg.get("base") == self.base_seq and self.base is not None:
                self.state = apply_state_diff(self.base, msg["diff"])
            else:
                self.stale += 1
        return True


async def lesson_socket(port: int, cookie: str):
    ws = await websockets.connect(f"ws://127.0.0.1:{port}/ws/lessons/segments/", origin=f"http://127.0.0.1:{port}",
                                  additional_headers={"Cookie": cookie}, max_size=2**24, compression=None)
    client = Client(ws)
    first = await ws.recv()
    client.take(json.loads(first))
    return client, len(first.encode())


def session_cookie(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/lessons/segments/") as resp:
        cookies = resp.headers.get_all("Set-Cookie") or []
    return "; ".join(c.split(";", 1)[0] for c in cookies)


# ---- figures ---------------------------------------------------------------------

async def clicks_lesson(client: Client, n: int, start_count: int) -> list[float]:
    """Send n produces CLICK_GAP_S apart; latency of each until a frame shows it."""
    sent: dict[int, float] = {}
    got: dict[int, float] = {}

    async def reader():
        while len(got) < n:
            msg = client.take_text(await client.ws.recv())
            if msg.get("type") == "frame" and client.state is not None:
                now = time.perf_counter()
                shown = client.state["messages_sent"] - start_count
                for k in range(1, shown + 1):
                    if k in sent and k not in got:
                        got[k] = now - sent[k]
            elif msg.get("type") == "error":
                raise SystemExit(f"server refused a click: {msg}")

    task = asyncio.create_task(reader())
    for k in range(1, n + 1):
        sent[k] = time.perf_counter()
        await client.ws.send(json.dumps({"cmd": "produce", "partition": 0, "count": 1, "value_size": 20, "key": ""}))
        await asyncio.sleep(CLICK_GAP_S)
    await asyncio.wait_for(task, 30)
    return [got[k] for k in sorted(got)]


async def clicks_peer(ws, n: int) -> list[float]:
    sent: dict[int, float] = {}
    got: dict[int, float] = {}

    async def reader():
        while len(got) < n:
            msg = json.loads(await ws.recv())
            got[msg["click"]] = time.perf_counter() - sent[msg["click"]]

    task = asyncio.create_task(reader())
    for k in range(1, n + 1):
        sent[k] = time.perf_counter()
        await ws.send(json.dumps({"click": k}))
        await asyncio.sleep(CLICK_GAP_S)
    await asyncio.wait_for(task, 30)
    return [got[k] for k in sorted(got)]


async def burst_lesson(client: Client, n: int, start_count: int) -> tuple[float, int]:
    """n produces back to back; (frames per second received, frames)."""
    t0 = time.perf_counter()
    frames0 = client.frames
    for _ in range(n):
        await client.ws.send(json.dumps({"cmd": "produce", "partition": 1, "count": BURST_COUNT, "value_size": 20,
                                         "key": ""}))
    while client.state is None or client.state["messages_sent"] - start_count < n * BURST_COUNT:
        msg = json.loads(await asyncio.wait_for(client.ws.recv(), 30))
        if msg.get("type") == "error":
            raise SystemExit(f"server refused a burst click: {msg}")
        client.take(msg)
    elapsed = time.perf_counter() - t0
    frames = client.frames - frames0
    return frames / elapsed, frames


async def burst_peer(ws, n: int) -> tuple[float, int]:
    t0 = time.perf_counter()
    for k in range(n):
        await ws.send(json.dumps({"click": k}))
    for _ in range(n):
        json.loads(await asyncio.wait_for(ws.recv(), 30))
    elapsed = time.perf_counter() - t0
    return n / elapsed, n


def page_bytes(port: int, path: str) -> tuple[int, int, int]:
    """(transferred bytes, uncompressed bytes, assets) of a first load of ``path``."""
    base = f"http://127.0.0.1:{port}"

    def get(url: str) -> tuple[int, bytes]:
        req = urllib.request.Request(url, headers={"Accept-Encoding": "gzip"})
        with urllib.request.urlopen(req) as resp:
            raw = resp.read()
            body = gzip.decompress(raw) if resp.headers.get("Content-Encoding") == "gzip" else raw
            return len(raw), body

    wire, html = get(base + path)
    total_wire, total_raw = wire, len(html)
    assets = set(re.findall(rb'(?:src|href)="(/static/[^"]+)"', html))
    for asset in sorted(assets):
        w, body = get(base + asset.decode())
        total_wire += w
        total_raw += len(body)
    return total_wire, total_raw, len(assets)


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(round(q / 100 * (len(s) - 1))))]


def spread(values: list[float], fmt: str = "{:.1f}") -> str:
    return f"{fmt.format(statistics.median(values))} (min {fmt.format(min(values))}, max {fmt.format(max(values))})"


async def measure(port: int, rounds: int, clicks: int, burst: int, pause: float) -> None:
    cookie = session_cookie(port)
    client, first_frame_bytes = await lesson_socket(port, cookie)
    peer = await websockets.connect(f"ws://127.0.0.1:{port}/ws/bench-peer/", origin=f"http://127.0.0.1:{port}",
                                    max_size=2**24, compression=None)
    count = client.state["messages_sent"]
    # Warm up and capture a real frame (as the pipe sent it) for the peer to send.
    await clicks_lesson(client, 2, count)
    count += 2
    frame = client.last_frame
    await peer.send(json.dumps({"frame": frame}))
    await asyncio.sleep(pause)

    lesson_lat, peer_lat = [], []
    p50_ratio, p99_lesson, p99_peer = [], [], []
    for _ in range(rounds):
        a = await clicks_lesson(client, clicks, count)
        count += clicks
        b = await clicks_peer(peer, clicks)
        lesson_lat += a
        peer_lat += b
        p50_ratio.append(statistics.median(a) / statistics.median(b))
        p99_lesson.append(pct(a, 99) * 1e3)
        p99_peer.append(pct(b, 99) * 1e3)
        await asyncio.sleep(pause)  # the command-rate bucket refills
    fps_lesson, fps_peer, frames_lesson = [], [], []
    for _ in range(max(3, rounds // 2)):
        f, n = await burst_lesson(client, burst, count)
        count += burst * BURST_COUNT
        fps_lesson.append(f)
        frames_lesson.append(n)
        g, _ = await burst_peer(peer, burst)
        fps_peer.append(g)
        await asyncio.sleep(pause * 2)
    stale = client.stale
    click_frames = sorted(client.frame_bytes)
    await client.ws.close()
    await peer.close()

    home = page_bytes(port, "/")
    lesson = page_bytes(port, "/lessons/segments/")
    print(f"click -> frame over a real WebSocket, clicks {CLICK_GAP_S * 1e3:.0f} ms apart, "
          f"{rounds} paired rounds x {clicks} clicks")
    print(f"  lesson 2 produce   p50 {pct(lesson_lat, 50) * 1e3:6.1f} ms   p99 {pct(lesson_lat, 99) * 1e3:6.1f} ms"
          f"   max {max(lesson_lat) * 1e3:6.1f} ms      goal p99 <= 50 ms")
    print(f"  peer (group send)  p50 {pct(peer_lat, 50) * 1e3:6.1f} ms   p99 {pct(peer_lat, 99) * 1e3:6.1f} ms"
          f"   max {max(peer_lat) * 1e3:6.1f} ms")
    print(f"  per round: lesson p99 {spread(p99_lesson)} ms; peer p99 {spread(p99_peer)} ms; "
          f"p50 lesson/peer {spread(p50_ratio, '{:.2f}')}x")
    print(f"frames per second to one browser during a burst of {burst} back-to-back produces of "
          f"{BURST_COUNT} messages each")
    print(f"  lesson 2  {spread(fps_lesson)} frames/s, {spread(frames_lesson, '{:.0f}')} frames per burst   "
          f"goal: paced (no flood), every click shown")
    print(f"  peer      {spread(fps_peer)} frames/s (one group send per message)")
    print(f"  frames the client could not apply (diff against a base it missed): {stale}")
    print(f"bytes per frame to the browser: median {statistics.median(click_frames):.0f}, "
          f"max {click_frames[-1]} (the whole state: {len(json.dumps(client.state, separators=(',', ':')))})")
    print("first load (HTML + referenced static files, gzip as a browser asks)")
    print(f"  /                   {home[0] / 1024:7.1f} KB on the wire ({home[1] / 1024:.1f} KB raw, {home[2]} files)"
          f"   goal <= 300 KB")
    print(f"  /lessons/segments/  {(lesson[0] + first_frame_bytes) / 1024:7.1f} KB on the wire "
          f"({lesson[1] / 1024:.1f} KB raw, {lesson[2]} files, first socket frame {first_frame_bytes / 1024:.1f} KB)"
          f"   goal <= 300 KB")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--clicks", type=int, default=12, help="clicks per round (the command-rate burst allows 20)")
    ap.add_argument("--burst", type=int, default=16)
    ap.add_argument("--pause", type=float, default=2.0, help="seconds between rounds (the rate bucket refills)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        port = free_port()
        proc = start_server(Path(tmp), port, {})
        try:
            asyncio.run(measure(port, args.rounds, args.clicks, args.burst, args.pause))
        finally:
            stop_server(proc)


if __name__ == "__main__":
    main()
