"""The stage (issue 17): a step's sentence points only at what the learner can see, and the
stage shows what the sentence names -- on a phone (390×844), where the least fits.

- Lesson 14 named "the table under the lanes" and "the producers table", a page below the
  stage on a phone; its sentences now point at the tokens on the cluster picture.
- Lesson 3 step 2 names the .index entry '2 → 340'; a phone's stage, which shows only some
  rows of the batch table, showed the newest ones instead.
- Lesson 1 reopened at a step showed the Producer tab where walking to that step shows the
  Consumers tab: a snapshot shows the part the step was about."""
from __future__ import annotations

import re

import pytest
from playwright.sync_api import Browser, expect

from tests.browser.test_frame_protocol import wait_for
from tests.browser.test_stage import fresh, open_lesson, step

pytestmark = pytest.mark.browser

SAY = "document.getElementById('step-say').textContent"


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_lesson_14s_sentences_point_at_the_stage(browser: Browser, live_server_url, lang):
    ctx, page, errors = fresh(browser, "phone", reduced=True)
    try:
        open_lesson(page, live_server_url, "idempotence-and-transactions", lang)
        vh = page.viewport_size["height"]
        for _ in range(page.evaluate("KV.lastFrame.state.run.total")):
            n = step(page)
            say = page.evaluate(SAY)
            # The tables (producers, the coordinator's, the groups' offsets, the reads) are
            # under the lanes: a sentence that names one finds it on the first screen.
            if "table" in say or "表" in say:
                top = page.evaluate("document.querySelector('.txn-tables').getBoundingClientRect().top")
                assert top < vh, f"step {n} names a table {top:.0f} px down, below the first screen: {say}"
            if n == 13:
                # It names the coordinator's answer: that token is on the stage, in view.
                assert "PRODUCER_FENCED" in say, say
                wait_for(page, "Array.from(document.querySelectorAll('#cl-flow [data-flow]')).some((t) => {"
                               " const r = t.getBoundingClientRect();"
                               " return t.textContent.includes('PRODUCER_FENCED') && r.top >= 0 && r.bottom <= innerHeight; })")
        assert not errors, errors
    finally:
        ctx.close()


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_lesson_3s_phone_stage_shows_the_index_entry_its_sentence_names(browser: Browser, live_server_url, lang):
    ctx, page, errors = fresh(browser, "phone", reduced=True)
    try:
        open_lesson(page, live_server_url, "offset-index", lang)
        step(page)
        step(page)
        assert "2 → 340" in page.evaluate(SAY)
        # The batch table's row whose .index cell is that entry ("#1  2 → 340").
        row = page.locator("#ss-rows > tr").filter(has=page.locator("td.col-index", has_text=re.compile(r"(^|\s)2 → 340$")))
        expect(row).to_have_count(1)
        page.evaluate("() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))")
        assert not row.evaluate("(tr) => tr.hasAttribute('data-fit-off')"), "the row '2 → 340' is not among the rows shown"
        expect(row).to_be_in_viewport()
        # The next step's lookup marks its own rows again (the probe, the scan), not this one.
        step(page)
        wait_for(page, "document.querySelector('#ss-rows > tr.fit-focus')")
        assert not row.evaluate("(tr) => tr.classList.contains('fit-focus')")
        assert not errors, errors
    finally:
        ctx.close()


SELECTED = """() => { const t = document.querySelector('#stage .stage-tab[aria-selected="true"]');
  return t && document.getElementById(t.getAttribute('aria-controls')).className; }"""


def test_lesson_1_reopened_shows_the_tab_of_its_last_step(browser: Browser, live_server_url):
    ctx, page, errors = fresh(browser, "phone", reduced=True)
    try:
        open_lesson(page, live_server_url, "topics-partitions-offsets")
        total = page.evaluate("KV.lastFrame.state.run.total")
        for _ in range(total):
            step(page)
        walked = page.evaluate(SELECTED)
        assert walked and "tv-consumers" in walked, walked     # the last step polls consumer B
        # The same session reopens the lesson: the server sends a snapshot at the last step.
        page.reload()
        expect(page.locator("#conn-status")).to_have_attribute("data-state", "open")
        wait_for(page, f"window.KV && KV.lastFrame && KV.lastFrame.state.run && KV.lastFrame.state.run.step === {total}")
        wait_for(page, "document.querySelector('#stage .stage-tab[aria-selected=\"true\"]')")
        assert page.evaluate(SELECTED) == walked
        # Back to a step that produced: the producer's tab.
        page.click("#back-button")
        wait_for(page, f"KV.lastFrame.state.run.step === {total - 1}")
        page.click("#back-button")
        wait_for(page, f"KV.lastFrame.state.run.step === {total - 2}")
        assert "tv-producer" in page.evaluate(SELECTED)
        assert not errors, errors
    finally:
        ctx.close()


# The placements list on a phone: whether it scrolls in a box of its own, how many rows show,
# and whether they are the newest (the list is newest first).
PLACEMENTS = """() => { const ol = document.getElementById('tv-placements'), rows = Array.from(ol.children);
  const shown = rows.filter((li) => getComputedStyle(li).display !== 'none');
  return { scrolls: ol.scrollHeight > ol.clientHeight + 1, visible: ol.getClientRects().length > 0,
           shown: shown.length, total: rows.length, newest: shown.length > 0 && shown[0] === rows[0],
           more: !!(ol.nextElementSibling && ol.nextElementSibling.classList.contains('fit-more') && !ol.nextElementSibling.hidden) }; }"""


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_lesson_1s_placements_are_rows_not_a_scroll_box_on_a_phone(browser: Browser, live_server_url, lang):
    ctx, page, errors = fresh(browser, "phone", reduced=True)
    try:
        open_lesson(page, live_server_url, "topics-partitions-offsets", lang)
        seen = 0
        for _ in range(3):                       # the three producing steps
            n = step(page)
            page.evaluate("() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))")
            pl = page.evaluate(PLACEMENTS)
            assert pl["visible"], f"step {n}: the producer's tab is not shown"
            assert not pl["scrolls"], f"step {n}: the placements scroll in a box of their own: {pl}"
            assert pl["shown"] >= 1 and pl["newest"], pl
            assert pl["more"] == (pl["shown"] < pl["total"]), pl
            if pl["more"]:
                seen += 1
                # The button shows every row (the page scrolls as any page does), and back.
                more = page.locator("#tv-placements + .fit-more")
                more.click()
                assert page.evaluate(PLACEMENTS)["shown"] == pl["total"]
                more.click()
                assert page.evaluate(PLACEMENTS)["shown"] == pl["shown"]
        assert seen, "no step had more placements than fit: the button went untried"
        assert not errors, errors
    finally:
        ctx.close()
