"""`make serve-prod` for real: redis-server and a PostgreSQL 15 cluster on loopback,
migrate, collectstatic, two daphne processes with DEBUG off; a visitor's page and
socket work on each, a foreign origin is refused, and stopping the command stops
every process it started (checked by process id)."""
from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import pytest

from kafkaviz.serve import REPO, free_port

websockets = pytest.importorskip("websockets")

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not Path("/usr/local/bin/pg_ctl").exists()
                                 and not Path("/usr/lib/postgresql/15/bin/pg_ctl").exists(),
                                 reason="PostgreSQL 15 is not installed"),
              pytest.mark.skipif(subprocess.run(["which", "redis-server"], capture_output=True).returncode != 0,
                                 reason="redis-server is not installed")]


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie of a process we did not reap still "exists"; count it as gone.
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def two_free_ports() -> int:
    for _ in range(50):
        port = free_port()
        try:
            import socket
            with socket.socket() as s:
                s.bind(("127.0.0.1", port + 1))
            return port
        except OSError:
            continue
    raise RuntimeError("no two adjacent free ports")


async def visit(base: str) -> list[dict]:
    with urllib.request.urlopen(base + "/lessons/segments/") as resp:
        cookie = "; ".join(c.split(";", 1)[0] for c in resp.headers.get_all("Set-Cookie"))
        html = resp.read().decode()
        assert resp.headers["Content-Security-Policy"].startswith("") and "script-src 'self'" in \
            resp.headers["Content-Security-Policy"]
    ws_url = base.replace("http://", "ws://") + "/ws/lessons/segments/"
    async with websockets.connect(ws_url, origin=base, additional_headers={"Cookie": cookie}) as ws:
        got = [json.loads(await asyncio.wait_for(ws.recv(), 10))]
        await ws.send(json.dumps({"cmd": "produce", "count": "2", "partition": "0"}))
        while not any(m["type"] == "ack" for m in got):
            got.append(json.loads(await asyncio.wait_for(ws.recv(), 10)))
    with pytest.raises(Exception):
        async with websockets.connect(ws_url, origin="http://evil.example", additional_headers={"Cookie": cookie}):
            pass
    return got, html


@contextmanager
def serve_prod(tmp_path):
    """``python -m kafkaviz.serve --processes 2`` on fresh ports; yields its serve.json once
    it is up, stops it with SIGTERM after."""
    port = two_free_ports()
    env = {k: v for k, v in os.environ.items()
           if k not in ("REDIS_URL", "DATABASE_URL", "DJANGO_SECRET_KEY", "DJANGO_DEBUG", "KAFKAVIZ_DATA_DIR")}
    env["DJANGO_SETTINGS_MODULE"] = "kafkaviz.settings"
    env["KAFKAVIZ_LAB_PRECOMPUTE"] = "0"    # no Spark sweep outliving the test
    state = tmp_path / "state"
    log = open(tmp_path / "serve.log", "wb")
    proc = subprocess.Popen([sys.executable, "-m", "kafkaviz.serve", "--processes", "2", "--port", str(port),
                             "--state-dir", str(state)], cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
    info = None
    try:
        deadline = time.monotonic() + 90
        while info is None:
            assert proc.poll() is None, (tmp_path / "serve.log").read_text()
            assert time.monotonic() < deadline, (tmp_path / "serve.log").read_text()
            if (state / "serve.json").exists():
                info = json.loads((state / "serve.json").read_text())
            time.sleep(0.2)
        yield info
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
        log.close()


def test_serve_prod_starts_redis_postgres_and_two_daphne_processes_and_stops_them(tmp_path):
    with serve_prod(tmp_path) as info:
        assert set(info["services"]) == {"redis", "postgres"}
        assert info["services"]["postgres"]["url"].startswith("postgres://postgres@127.0.0.1:")
        for base in info["urls"]:
            health = json.loads(urllib.request.urlopen(base + "/healthz").read())
            assert health["status"] == "ok" and health["rooms"] == 0
            got, html = asyncio.run(visit(base))
            assert got[0]["type"] == "frame" and got[0]["snapshot"] and got[0]["full"]
            assert any(m["type"] == "ack" and "offsets 0–1" in m["text"] for m in got)
            # collectstatic ran: pages link hashed file names, served by WhiteNoise.
            static = [part.split('"')[0] for part in html.split('src="')[1:] if part.startswith("/static/")]
            assert static and all(len(Path(s).suffixes) >= 2 for s in static)
            assert urllib.request.urlopen(base + static[0]).status == 200
            # DEBUG is off: a 404 is the plain page, not Django's debug page.
            with pytest.raises(urllib.error.HTTPError) as err:
                urllib.request.urlopen(base + "/no-such-page")
            assert err.value.code == 404 and b"URLconf" not in err.value.read()
    info = json.loads((tmp_path / "state" / "serve.json").read_text())     # the pids as they ended
    pids = info["servers"] + [s["pid"] for s in info["services"].values()]
    deadline = time.monotonic() + 20
    while any(alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not [pid for pid in pids if alive(pid)]


async def _recv_until(ws, predicate, timeout=15):
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        msg = json.loads(await asyncio.wait_for(ws.recv(), max(0.01, deadline - loop.time())))
        if predicate(msg):
            return msg


async def _across_processes(info) -> None:
    a, b = info["urls"]
    with urllib.request.urlopen(a + "/lessons/segments/") as resp:
        cookie = "; ".join(c.split(";", 1)[0] for c in resp.headers.get_all("Set-Cookie"))
    path = "/ws/lessons/segments/"
    ws_a = await websockets.connect(a.replace("http", "ws") + path, origin=a, additional_headers={"Cookie": cookie})
    await _recv_until(ws_a, lambda m: m.get("snapshot"))                 # process A owns the sandbox now
    async with websockets.connect(b.replace("http", "ws") + path, origin=b, additional_headers={"Cookie": cookie}) as ws_b:
        await _recv_until(ws_b, lambda m: m.get("snapshot"))             # B's socket, A's engine
        await ws_b.send(json.dumps({"cmd": "produce", "count": "2", "partition": "0"}))
        assert "offsets 0–1" in (await _recv_until(ws_b, lambda m: m["type"] in ("ack", "error")))["text"]
        for ws in (ws_a, ws_b):                                          # both sockets see A's frames
            await _recv_until(ws, lambda m: m["type"] == "frame" and any(e["kind"] == "batch_appended"
                                                                         for e in m["events"]))
        await ws_a.close()
        os.kill(info["servers"][0], signal.SIGKILL)                      # the owner process dies
        for _ in range(20):
            await ws_b.send(json.dumps({"cmd": "produce", "count": "2", "partition": "0"}))
            reply = await _recv_until(ws_b, lambda m: m["type"] in ("ack", "error"), timeout=30)
            if reply["type"] == "ack":
                break
            assert reply["code"] == "busy", reply                      # until the dead owner's key lapses
            await asyncio.sleep(1)
        assert reply["type"] == "ack" and "offsets 2–3" in reply["text"], reply   # restored at the same step
        await ws_b.send(json.dumps({"type": "sync"}))
        snap = await _recv_until(ws_b, lambda m: m.get("snapshot"))
        assert snap["state"]["partitions"][0]["log_end_offset"] == 4


def test_one_sandbox_across_two_processes_survives_its_owner_dying(tmp_path):
    with serve_prod(tmp_path) as info:
        asyncio.run(_across_processes(info))
