"""Lesson 16 in a real browser, at 1366 px and 390 px: the guided steps replay a real
client's recorded session. The requests table shows the bootstrap's ApiVersions and
Metadata, the NOT_LEADER_OR_FOLLOWER answer, the lost answer; a locked-in prediction is
judged by the engine (the retry is a duplicate); Back rebuilds from the record; a quiz
question is answered."""
from __future__ import annotations

import pytest
from playwright.sync_api import Browser, Page, expect

from .test_frame_protocol import wait_for  # polls from Python: the page's CSP forbids eval

pytestmark = pytest.mark.browser

SLUG = "what-your-client-says"
TOTAL = 9
SIZES = {"wide": (1366, 800), "phone": (390, 844)}


def at_step(page: Page, n: int) -> None:
    expect(page.locator("#step-counter")).to_have_text(f"Step {n} of {TOTAL}" if n else f"Start · 0/{TOTAL}",
                                                       timeout=15000)
    # The counter is on the stage, drawn at once; the requests table is below it, drawn after
    # the next paint. KV.lastFrame is set once a frame is drawn whole.
    wait_for(page, f"window.KV && KV.lastFrame && KV.lastFrame.state && KV.lastFrame.state.run"
                   f" && KV.lastFrame.state.run.step === {n}")


def step(page: Page, n: int) -> None:
    page.click("#step-button")
    at_step(page, n)


def table(page: Page) -> list[list[str]]:
    rows = page.locator("#client-requests tbody tr")
    return [rows.nth(i).locator("td").all_text_contents() for i in range(rows.count())]


@pytest.mark.parametrize("size", sorted(SIZES))
def test_lesson16_replays_the_clients_session(browser: Browser, live_server_url, size):
    w, h = SIZES[size]
    ctx = browser.new_context(viewport={"width": w, "height": h}, reduced_motion="reduce")
    page = ctx.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.goto(f"{live_server_url}/lessons/{SLUG}/")
        expect(page.locator("#conn-status")).to_have_attribute("data-state", "open")
        at_step(page, 0)
        step(page, 1)
        first = table(page)
        assert [r[2] for r in first[:2]] == ["ApiVersions v3", "Metadata v12"], first
        assert first[0][:2] == ["1000", "Broker 0"], first                # the bootstrap address first
        step(page, 2)
        assert any(r[2].startswith("Produce") and r[1] != "Broker 0" for r in table(page))
        step(page, 3)
        # step 4 asks; plain Step skips predicting and still shows the engine's answer
        expect(page.locator("#predict-form")).to_be_visible()
        step(page, 4)
        assert ["Produce v10", "NOT_LEADER_OR_FOLLOWER"] in [[r[2], r[4]] for r in table(page)]
        # step 5: lock in "it answers with the first try's offsets"
        expect(page.locator("#predict-question")).to_contain_text("order-10")
        page.locator('#predict-choices input[name="predict"]').nth(1).check()
        page.click("#predict-lock")
        at_step(page, 5)
        expect(page.locator("#predict-outcome .pv-you")).to_contain_text("✓")
        expect(page.locator("#predict-outcome .pv-evidence li").first).to_contain_text("duplicate")
        assert any(r[2].startswith("Produce") and r[4] == "no answer in this step" for r in table(page))
        for n in range(6, TOTAL + 1):
            step(page, n)
        expect(page.locator("#predict-outcome .pv-engine")).to_contain_text("leaves the group")
        # Back rebuilds step 8 from the recorded requests
        page.click("#back-button")
        at_step(page, TOTAL - 1)
        expect(page.locator("#predict-outcome .pv-engine")).to_contain_text("session.timeout.ms")
        wait_for(page, "KV.lastFrame.state.run.step === 8")
        form = page.locator("#quiz-no-duplicate")
        form.locator('input[value="1"]').check()
        form.locator("button[type=submit]").click()
        expect(form.locator(".quiz-feedback")).to_contain_text("Right.")
        assert not errors, errors
    finally:
        ctx.close()
