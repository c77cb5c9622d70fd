"""A failover no student notices (issue 19 item 1), on ``make serve-prod`` for real: two
daphne processes over Redis and PostgreSQL (kafkaviz/serve.py), a room opened on process A
(which owns its sandbox), the instructor driving it from a tab on process B and three
students in Chromium on B. Process A is killed with SIGKILL mid-lesson; the instructor's next
step, once B has taken the sandbox over, reaches every student's page within 2 s, without a
reload (the restored sandbox numbers its frames from 1 under a new generation).

The flood-then-close rounds across real processes are in tests/web/test_leases_prod.py
(asyncio.run cannot run beside Playwright's loop)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from playwright.sync_api import Browser, expect

from tests.web.test_serve_prod import REPO, serve_prod

from .test_frame_protocol import wait_for

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
        wait_for(owner, "KV.lastFrame")      # its snapshot, or already the seed run's frame after it
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
