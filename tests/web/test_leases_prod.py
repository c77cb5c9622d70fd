"""Slots never leak across real processes (issue 19 item 2), on ``make serve-prod``: two
daphne processes over Redis and PostgreSQL (kafkaviz/serve.py). Flood-then-close rounds from
one address (daphne cancels a consumer still busy 10 s after its client left, before
``disconnect()``) leave no ghost sockets, watchers or members in either process's
``/healthz`` within 60 s, and the address opens its whole socket quota again; then once more
with a process killed mid-flood."""
from __future__ import annotations

import asyncio
import json
import os
import signal
import time
import urllib.request

import pytest

from .test_serve_prod import serve_prod

websockets = pytest.importorskip("websockets")

pytestmark = [pytest.mark.slow]

LEASE_ENV = {"KAFKAVIZ_LEASE_SECONDS": "2", "DJANGO_SECURE_COOKIES": "0", "KAFKAVIZ_MAX_SANDBOXES_PER_ADDRESS": "0"}


@pytest.fixture
def prod(tmp_path, monkeypatch):
    for key, value in LEASE_ENV.items():
        monkeypatch.setenv(key, value)
    with serve_prod(tmp_path) as info:
        yield info


def health(base: str) -> dict:
    with urllib.request.urlopen(base + "/healthz", timeout=5) as resp:
        return json.loads(resp.read())


async def flood_and_close(base: str, cookie: str, messages: int = 400) -> bool:
    """One round: open a socket, flood it, drop the connection (no close handshake). False
    when the socket was refused (the address's sockets still held by earlier rounds'
    consumers, busy with their floods) or closed mid-flood."""
    url = base.replace("http://", "ws://") + "/ws/lessons/segments/"
    try:
        ws = await websockets.connect(url, origin=base, additional_headers={"Cookie": cookie})
        first = json.loads(await asyncio.wait_for(ws.recv(), 15))
        if first.get("type") != "frame":
            await ws.close()
            return False
        for i in range(messages):
            await ws.send(json.dumps({"cmd": "produce", "count": "50", "partition": str(i % 2)}))
    except (OSError, asyncio.TimeoutError, websockets.exceptions.WebSocketException):
        return False
    ws.transport.abort()                               # gone, with the consumer still busy
    return True


async def rounds_on(bases: list[str], cookie: str, n: int, within: float = 120) -> None:
    """``n`` flood-then-close rounds that really flooded, alternating between ``bases``."""
    done, deadline = 0, time.monotonic() + within
    while done < n:
        assert time.monotonic() < deadline, f"only {done} of {n} rounds got a socket"
        if await flood_and_close(bases[done % len(bases)], cookie):
            done += 1
        else:
            await asyncio.sleep(1)


async def open_quota(base: str, cookie: str, cap: int, within: float = 60) -> tuple[int, bool]:
    """Open cap + 1 sockets from this address: cap get a frame, the last is refused. Retried
    while a killed process's places (15 s in Redis) have not lapsed yet."""
    url = base.replace("http://", "ws://") + "/ws/lessons/segments/"
    deadline = time.monotonic() + within
    while True:
        sockets, opened = [], 0
        for _ in range(cap + 1):
            ws = await websockets.connect(url, origin=base, additional_headers={"Cookie": cookie})
            sockets.append(ws)
            first = json.loads(await asyncio.wait_for(ws.recv(), 15))
            opened += first["type"] == "frame"
        for ws in sockets:
            await ws.close()
        if opened == cap or time.monotonic() > deadline:
            return opened, opened == cap
        await asyncio.sleep(1)


def visit(base: str) -> str:
    with urllib.request.urlopen(base + "/lessons/segments/") as resp:
        return "; ".join(c.split(";", 1)[0] for c in resp.headers.get_all("Set-Cookie"))


def no_ghosts(urls: list[str], within: float) -> float:
    started = time.monotonic()
    while True:
        bodies = []
        for base in urls:
            try:
                bodies.append(health(base))
            except OSError:
                bodies.append(None)                     # restarting after a kill
        if all(b is not None and b["connections"] == 0 and b["watchers"] == 0 and b["members"] == 0
               for b in bodies):
            return time.monotonic() - started
        assert time.monotonic() - started < within, bodies
        time.sleep(0.5)


def test_flood_then_close_rounds_leave_no_ghosts_even_with_a_process_killed(prod):
    urls = prod["urls"]
    cap = 16                                             # MAX_CONNECTIONS_PER_ADDRESS's default
    cookie = visit(urls[0])

    asyncio.run(rounds_on(urls, cookie, 20))
    took = no_ghosts(urls, 60)
    opened, whole = asyncio.run(open_quota(urls[1], cookie, cap))
    assert whole, opened
    print(f"20 rounds: no ghosts {took:.1f} s after the last; the address opened {opened} of {cap} again")

    # Again, with the process that owns the sandbox killed in the middle of the rounds.
    asyncio.run(rounds_on(urls, cookie, 10))
    os.kill(prod["servers"][0], signal.SIGKILL)
    asyncio.run(rounds_on(urls[1:], cookie, 10))
    took = no_ghosts(urls[1:], 60)
    opened, whole = asyncio.run(open_quota(urls[1], cookie, cap))
    assert whole, opened
    print(f"with a kill: no ghosts on the survivor {took:.1f} s after the last; {opened} of {cap} again")
