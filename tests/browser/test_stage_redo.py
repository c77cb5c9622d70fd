"""The same step always shows the same thing (issue 17): a step reached for the first time
and the same step redone after Back (the run restores its checkpoint and replays) carry the
same events and draw the same stage, sentence and "what the engine did in this step".

Lesson 15's step 1 read "Fetch purgatory · 0 waiting · 6 move(s) in this step" the first
time and "2 move(s)" after Back then Step: a new sandbox's opening events (the cluster
starting, the fetch purgatory's wheels built at 4 ms) stayed in the frame builder and rode
in step 1's first frame, in every lesson; the redo carried step 1's own. What the engine did
in step 1 is what follows the setup (the run's step_seqs, which Back replays too).

Every step of every lesson, without motion (resting tokens are drawn from the frame's events,
so they are compared too): about 2 min on the shared 2-core machine at a load average of 4-6."""
from __future__ import annotations

import pytest
from playwright.sync_api import Browser

from tests.browser.test_frame_protocol import wait_for
from tests.browser.test_stage import SLUGS, fresh, open_lesson

pytestmark = pytest.mark.browser

# Every event the frames of a click carried (seq and kind; run_moved is the click's marker).
LISTEN = """() => { const take = KV.handlers.frame; window.kvCarried = [];
  KV.handlers.frame = (m) => { (m.events || []).forEach((e) => { if (e.kind !== "run_moved") window.kvCarried.push(e.seq + ":" + e.kind); }); take(m); }; }"""
# What a learner sees of the step, as painted.
SEEN = """() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(() => done({
  stage: document.getElementById("stage").innerText,
  say: document.getElementById("step-say").textContent,
  happened: document.getElementById("step-happened").textContent,
  events: window.kvCarried.slice(),
}))))"""


def go(page, button: str, n: int) -> dict:
    page.evaluate("() => { window.kvCarried = []; }")
    page.click(button)
    wait_for(page, f"KV.lastFrame.state.run.step === {n}")
    # A step's frames leave at most one per pacing interval: wait until none came for 150 ms.
    count = -1
    while count != (count := page.evaluate("window.kvCarried.length")):
        page.wait_for_timeout(150)
    return page.evaluate(SEEN)


@pytest.mark.parametrize("slug", SLUGS)
def test_a_step_redone_after_back_shows_what_it_showed_the_first_time(browser: Browser, live_server_url, slug):
    ctx, page, errors = fresh(browser, "wide", reduced=True)
    try:
        open_lesson(page, live_server_url, slug)
        page.evaluate(LISTEN)
        total = page.evaluate("KV.lastFrame.state.run.total")
        assert total
        for n in range(1, total + 1):
            first = go(page, "#step-button", n)
            go(page, "#back-button", n - 1)
            again = go(page, "#step-button", n)
            for part in ("stage", "say", "happened", "events"):
                assert again[part] == first[part], f"{slug} step {n}: {part} differs after Back then Step"
        assert not errors, errors
    finally:
        ctx.close()
