"""A failover no student notices (issue 19 item 1), on ``make serve-prod`` for real: two
daphne processes over Redis and PostgreSQL (kafkaviz/serve.py), a room opened on process A
(which owns its sandbox), the instructor driving it from a tab on process B and three
students in Chromium on B. Process A is killed with SIGKILL mid-lesson; the instructor's next
step, once B has taken the sandbox over, reaches every student's page within 2 s, without a
reload (the restored sandbox numbers its frames from 1 under a new generation).

And slots never leak across real processes (issue 19 item 2): flood-then-close rounds from
one address against real daphne (which cancels a busy consumer 10 s after its client left,
before ``disconnect()``) leave no ghost sockets, watchers or members in either process's
``/healthz``, and the address opens its whole socket quota again; then once more with a
process killed mid-flood."""
from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request

import pytest
from playwright.sync_api import Browser, expect

from tests.web.test_serve_prod import REPO, serve_prod

from .test_frame_protocol import wait_for

websockets = pytest.importorskip("websockets")

pytestmark = [pytest.mark.slow, pytest.mark.browser]

PASSWORD = "failover-test-password"
LEASE_ENV = {"KAFKAVIZ_LEASE_SECONDS": "2", "DJANGO_SECURE_COOKIES": "0", "KAFKAVIZ_MAX_SANDBOXES_PER_ADDRESS": "0"}


@pytest.fixture
def prod(tmp_path, monkeypatch):
    for key, value in LEASE_ENV.items():
        monkeypatch.setenv(key, value)
    with serve_prod(tmp_path) as info:
        env = {**os.environ, "DJANGO_SETTINGS_MODULE": "kafkaviz.settings", "DJANGO_DEBUG": "0",
               "DJANGO_SECRET_KEY": "createinstructor-only-" + "x" * 40,
               "DATABASE_URL": info["services"]["postgres"]["url"], "ROOM_PW": PASSWORD}
        env.pop("REDIS_URL", None)
        subprocess.run([sys.executable, "manage.py", "createinstructor", "teacher", "--password-env", "ROOM_PW"],
                       cwd=REPO, env=env, check=True, capture_output=True)
        yield info


def step_of(page) -> int:
    return page.evaluate("() => KV.lastFrame ? KV.lastFrame.state.run.step : -1")


def test_students_follow_the_instructor_through_a_kill_9_of_the_owner_process(browser: Browser, prod, tmp_path):
    a, b = prod["urls"]
    teacher_ctx = browser.new_context(viewport={"width": 1366, "height": 900})
    contexts = [teacher_ctx]
    try:
        # The instructor logs in and opens a room on A: A's process owns the room's sandbox.
        owner = teacher_ctx.new_page()
        owner.goto(a + "/accounts/login/")
        owner.fill("#id_username", "teacher")
        owner.fill("#id_password", PASSWORD)
        owner.click("button[type=submit]")
        owner.goto(a + "/lessons/sandbox/")
        expect(owner.locator("#conn-status")).to_have_attribute("data-state", "open")
        owner.click("#open-room-button")
        owner.wait_for_url("**/rooms/*/present")
        code = owner.locator(".join-code").inner_text().strip()
        wait_for(owner, "KV.lastFrame && KV.lastFrame.snapshot")
        # The instructor drives from a tab on B (the same login: cookies are per host).
        teacher = teacher_ctx.new_page()
        teacher.goto(f"{b}/rooms/{code}/present")
        expect(teacher.locator("#conn-status")).to_have_attribute("data-state", "open")
        owner.close()                                    # A keeps the sandbox; no page of ours is on A
        students = []
        for name in ("Ada", "Grace", "Edsger"):
            ctx = browser.new_context(viewport={"width": 390, "height": 844})
            contexts.append(ctx)
            page = ctx.new_page()
            page.goto(f"{b}/r/{code}")
            page.fill("#id_name", name)
            page.click("button[type=submit]")
            expect(page.locator("#conn-status")).to_have_attribute("data-state", "open")
            students.append(page)
        for n in (1, 2):
            teacher.click("#step-button")
            wait_for(teacher, f"KV.lastFrame.state.run.step === {n}")
            for page in students:
                wait_for(page, f"KV.lastFrame.state.run.step === {n}", timeout_s=5)
        generation = students[0].evaluate("() => KV.generation")

        os.kill(prod["servers"][0], signal.SIGKILL)      # the owner process dies mid-lesson
        killed = time.monotonic()
        # The instructor steps on; until B has taken over, the step may be answered "busy".
        while step_of(teacher) < 3:
            assert time.monotonic() - killed < 60, "the room never came back"
            teacher.click("#step-button")
            for _ in range(40):
                if step_of(teacher) >= 3 or teacher.locator("#step-error").inner_text().strip():
                    break
                teacher.wait_for_timeout(100)
            teacher.evaluate("() => { const e = document.getElementById('step-error'); if (e) e.textContent = ''; }")
        shown = time.monotonic()
        lags = []
        for page in students:
            wait_for(page, "KV.lastFrame.state.run.step === 3", timeout_s=max(0.1, 2 - (time.monotonic() - shown)))
            lags.append(time.monotonic() - shown)
        assert max(lags) <= 2.0, lags
        for page in students:
            assert page.evaluate("() => KV.generation") != generation         # a new owner, taken whole
            expect(page.locator("#conn-status")).to_have_attribute("data-state", "open")   # never reloaded
            assert page.evaluate("() => performance.getEntriesByType('navigation')[0].type") == "navigate"
        (tmp_path / "failover.json").write_text(json.dumps({"takeover_s": round(shown - killed, 2),
                                                             "student_lags_s": [round(x, 3) for x in lags]}))
        print(f"takeover {shown - killed:.1f} s after the kill; students {', '.join(f'{x:.2f}' for x in lags)} s "
              "after the instructor")
    finally:
        for ctx in contexts:
            ctx.close()


# ---- slots never leak, across real processes ---------------------------------------------------

def health(base: str) -> dict:
    with urllib.request.urlopen(base + "/healthz", timeout=5) as resp:
        return json.loads(resp.read())


async def flood_and_close(base: str, cookie: str, messages: int = 400) -> None:
    url = base.replace("http://", "ws://") + "/ws/lessons/segments/"
    ws = await websockets.connect(url, origin=base, additional_headers={"Cookie": cookie})
    for i in range(messages):
        await ws.send(json.dumps({"type": "produce", "count": "50", "partition": str(i % 2)}))
    ws.transport.abort()                               # gone, with the consumer still busy


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

    async def rounds(n: int) -> None:
        for i in range(n):
            await flood_and_close(urls[i % 2], cookie)

    asyncio.run(rounds(20))
    took = no_ghosts(urls, 60)
    opened, whole = asyncio.run(open_quota(urls[1], cookie, cap))
    assert whole, opened
    print(f"20 rounds: no ghosts {took:.1f} s after the last; the address opened {opened} of {cap} again")

    # Again, with the process that owns the sandbox killed in the middle of the rounds.
    asyncio.run(rounds(10))
    os.kill(prod["servers"][0], signal.SIGKILL)
    asyncio.run(_rounds_on(urls[1], cookie, 10))
    took = no_ghosts(urls[1:], 60)
    opened, whole = asyncio.run(open_quota(urls[1], cookie, cap))
    assert whole, opened
    print(f"with a kill: no ghosts on the survivor {took:.1f} s after the last; {opened} of {cap} again")


async def _rounds_on(base: str, cookie: str, n: int) -> None:
    for _ in range(n):
        try:
            await flood_and_close(base, cookie)
        except Exception:  # noqa: BLE001 - the first rounds may meet the takeover ("busy") and close early
            await asyncio.sleep(0.5)
