"""A class of students in one room, split over two server processes (plain script).

Starts ``make serve-prod``'s setup on loopback (``python -m kafkaviz.serve``: Redis,
PostgreSQL 15, two daphne processes), signs an instructor in, opens a room on the
``sandbox`` lesson, joins ``--students`` students (half through each process) and opens
one socket per student on their process, the instructor's on the first. Then, per round,
the instructor sends a fault command (crash a broker, then restart it) and the script
measures, for every student, the time from sending the command to the first frame that
carries its events; after the round settles, every student's state (rebuilt from the
frames it got, diffs applied as the browser does) is compared with a fresh snapshot the
instructor asks for. Goals: p99 ≤ 100 ms, zero students with a wrong final state.

    .venv/bin/python bench/bench_classroom.py [--students 200] [--rounds 6]

The peer printed beside it is the same fan-out with every socket on the owner's process
(no cross-process hop), measured in the same run.
"""
from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlencode, urlsplit

import websockets

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from kafkaviz.live.frames import apply_state_diff  # noqa: E402
from kafkaviz.serve import free_port  # noqa: E402

PASSWORD = "bench-classroom-password"


class Browser:
    """Just enough of a browser: cookies by name, no automatic redirects."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.cookies: dict[str, str] = {}

    def request(self, method: str, path: str, form: dict | None = None) -> tuple[int, dict, str]:
        u = urlsplit(self.base)
        conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
        headers = {"Cookie": "; ".join(f"{k}={v}" for k, v in self.cookies.items()), "Origin": self.base}
        body = None
        if form is not None:
            body = urlencode(form)
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        conn.request(method, path, body=body, headers=headers)
        resp = conn.getresponse()
        for value in resp.headers.get_all("Set-Cookie") or ():
            name, _, rest = value.partition("=")
            self.cookies[name.strip()] = rest.split(";", 1)[0]
        text = resp.read().decode("utf-8", "replace")
        conn.close()
        return resp.status, dict(resp.headers), text

    def post_form(self, path: str, fields: dict) -> tuple[int, dict, str]:
        _, _, page = self.request("GET", path)
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)
        return self.request("POST", path, {**fields, "csrfmiddlewaretoken": token.group(1) if token else ""})

    def cookie_header(self) -> str:
        return "; ".join(f"{k}={v}" for k, v in self.cookies.items())


class Watcher:
    """One socket: rebuilds the state from frames (whole states and diffs) like live.js."""

    def __init__(self, ws) -> None:
        self.ws = ws
        self.base = None
        self.base_seq = None
        self.seq = -1
        self.state = None
        self.arrivals: list[tuple[float, set[int]]] = []

    def take(self, msg: dict) -> None:
        if msg.get("type") != "frame":
            return
        if msg.get("snapshot"):
            self.seq = -1
        if msg["frame_seq"] <= self.seq:
            return
        if msg.get("full", True):
            self.base, self.base_seq = msg["state"], msg["frame_seq"]
            self.state = msg["state"]
        elif msg.get("base") == self.base_seq and self.base is not None:
            self.state = apply_state_diff(self.base, msg["diff"])
        else:
            return
        self.seq = msg["frame_seq"]
        if msg.get("events"):
            self.arrivals.append((time.perf_counter(), {e["seq"] for e in msg["events"]}))

    async def pump(self) -> None:
        try:
            async for raw in self.ws:
                self.take(json.loads(raw))
        except websockets.ConnectionClosed:
            pass


def start_servers(tmp: Path) -> tuple[subprocess.Popen, dict, dict]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "DATABASE_URL", "KAFKAVIZ_DATA_DIR")}
    env.update({"DJANGO_SETTINGS_MODULE": "kafkaviz.settings", "DJANGO_SECRET_KEY": "bench-" + "x" * 50,
                "DJANGO_SECURE_COOKIES": "0", "KAFKAVIZ_MAX_CONNECTIONS_PER_ADDRESS": "0",
                "KAFKAVIZ_MAX_SANDBOXES_PER_ADDRESS": "0", "KAFKAVIZ_ROOM_JOINS_PER_ADDRESS": "0",
                "KAFKAVIZ_LOG_LEVEL": "WARNING"})   # a class behind one address, as behind a school's NAT
    state = tmp / "state"
    proc = subprocess.Popen([sys.executable, "-m", "kafkaviz.serve", "--processes", "2", "--port", str(port),
                             "--state-dir", str(state)], cwd=REPO, env=env,
                            stdout=open(tmp / "serve.log", "wb"), stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 120
    while not (state / "serve.json").exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SystemExit("serve did not start:\n" + (tmp / "serve.log").read_text()[-3000:])
        time.sleep(0.2)
    info = json.loads((state / "serve.json").read_text())
    env["DATABASE_URL"] = info["services"]["postgres"]["url"]
    return proc, info, env


async def connect(base: str, path: str, cookie: str) -> Watcher:
    ws = await websockets.connect(base.replace("http://", "ws://") + path, origin=base,
                                  additional_headers={"Cookie": cookie}, max_size=2 ** 24, open_timeout=60)
    w = Watcher(ws)
    w.task = asyncio.ensure_future(w.pump())
    return w


async def until(pred, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise TimeoutError("timed out")
        await asyncio.sleep(0.005)


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, max(0, round(q * (len(values) - 1))))]


async def measure(teacher: Watcher, students: list[Watcher], rounds: int) -> tuple[list[float], int]:
    """Per round: a fault command; latency to each student's first frame with its events."""
    latencies: list[float] = []
    wrong = 0
    brokers = [b["id"] for b in (teacher.state or {}).get("brokers", [])] or [0, 1, 2]
    for r in range(rounds):
        broker = brokers[r // 2 % len(brokers)]
        command = {"cmd": "crash" if r % 2 == 0 else "restart", "broker": broker}
        marks = [len(s.arrivals) for s in students]
        last_seq = max((max(seqs) for _, seqs in teacher.arrivals), default=-1)
        sent = time.perf_counter()
        await teacher.ws.send(json.dumps(command))

        def reached(s: Watcher, mark: int) -> float | None:
            for at, seqs in s.arrivals[mark:]:
                if any(seq > last_seq for seq in seqs):
                    return at
            return None
        await until(lambda: all(reached(s, m) is not None for s, m in zip(students, marks)))
        latencies += [(reached(s, m) - sent) * 1000 for s, m in zip(students, marks)]
        await asyncio.sleep(0.5)                     # let paced frames land
        await teacher.ws.send(json.dumps({"type": "sync"}))
        before = teacher.seq
        await until(lambda: teacher.seq >= before and teacher.state is not None)
        await asyncio.sleep(0.2)
        truth = teacher.state
        wrong += sum(1 for s in students if s.state != truth)
    return latencies, wrong


async def run(args) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="kafkaviz-bench-classroom-"))
    proc, info, env = start_servers(tmp)
    try:
        a, b = info["urls"]
        subprocess.run([sys.executable, "manage.py", "createinstructor", "teacher", "--password-env", "BENCH_PW"],
                       cwd=REPO, env={**env, "BENCH_PW": PASSWORD}, check=True, capture_output=True)
        teacher_http = Browser(a)
        status, _, _ = teacher_http.post_form("/accounts/login/", {"username": "teacher", "password": PASSWORD})
        assert status == 302, f"login failed: {status}"
        status, headers, _ = teacher_http.post_form("/rooms/new", {"lesson": "sandbox"})
        assert status == 302, f"opening a room failed: {status}"
        code = headers["Location"].rstrip("/").split("/")[-1].split("?")[0]
        if code == "present":
            code = headers["Location"].rstrip("/").split("/")[-2]
        teacher = await connect(a, f"/ws/rooms/{code}/", teacher_http.cookie_header())
        await until(lambda: teacher.state is not None)

        t0 = time.perf_counter()
        browsers = []
        for i in range(args.students):
            br = Browser(a if i % 2 == 0 else b)
            status, _, _ = br.post_form("/rooms/join", {"code": code, "name": f"student {i}"})
            assert status == 302, f"join {i} failed: {status}"
            browsers.append(br)
        join_s = time.perf_counter() - t0
        students = []
        for br in browsers:
            students.append(await connect(br.base, f"/ws/rooms/{code}/", br.cookie_header()))
        await until(lambda: all(s.state is not None for s in students), 120)
        split = [s for s, br in zip(students, browsers) if br.base == b]
        local = [s for s, br in zip(students, browsers) if br.base == a]

        lat, wrong = await measure(teacher, students, args.rounds)
        print(f"classroom: {args.students} students in one room over 2 processes "
              f"({len(local)} on the owner's, {len(split)} on the other), {args.rounds} fault commands; "
              f"joining took {join_s:.1f} s")
        lat_local = [x for i, x in enumerate(lat) if students[i % len(students)] in local]
        lat_split = [x for i, x in enumerate(lat) if students[i % len(students)] in split]
        for label, values in (("all students", lat), ("on the owner's process (peer)", lat_local),
                              ("on the other process", lat_split)):
            print(f"  fault → frame, {label:<30} p50 {pct(values, .5):6.1f} ms  p99 {pct(values, .99):6.1f} ms  "
                  f"max {max(values):6.1f} ms   (goal: p99 ≤ 100 ms)")
        print(f"  ratio other ÷ owner's process, p50: {pct(lat_split, .5) / max(pct(lat_local, .5), 1e-9):.2f}×")
        print(f"  students whose final state differed from the instructor's: {wrong} of "
              f"{args.students * args.rounds} checks (goal: 0)")
        print(f"  load average: {os.getloadavg()[0]:.2f}")
        for w in [teacher, *students]:
            await w.ws.close()
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--students", type=int, default=200)
    p.add_argument("--rounds", type=int, default=6)
    asyncio.run(run(p.parse_args()))


if __name__ == "__main__":
    main()
