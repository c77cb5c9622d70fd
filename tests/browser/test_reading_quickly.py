"""Issue 17 item 6 in Chromium: one tab walks lessons 1 to 17 in order, quickly, at 1366×800
and at 390×844, from an address whose sandbox quota is 2, and every lesson gets its sandbox
(the session's sandboxes no socket watches are reclaimed first). A page that is refused all the same
(two other tabs really open) says so in words and disables its step buttons, and gets its
sandbox by itself, without a reload, once one of the other tabs closes."""
from __future__ import annotations

import time

import pytest
from playwright.sync_api import Browser, expect

from kafkaviz.lessons.catalogue import LESSONS

from .conftest import daphne_server
from .test_frame_protocol import wait_for

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def tight_server(tmp_path_factory):
    with daphne_server(tmp_path_factory.mktemp("kafkaviz-reading"),
                       {"KAFKAVIZ_MAX_SANDBOXES_PER_ADDRESS": "2", "KAFKAVIZ_MAX_CONNECTIONS_PER_ADDRESS": "0"}) as url:
        yield url


@pytest.fixture(scope="module")
def one_session(browser: Browser):
    """One browser session for the module: the quota is the address's, and only the
    session's own unwatched sandboxes may be reclaimed for it."""
    context = browser.new_context()
    yield context
    context.close()


WIDTHS = {"wide": (1366, 800), "phone": (390, 844)}


@pytest.mark.parametrize("size", sorted(WIDTHS))
def test_one_tab_walks_every_lesson_in_order_and_each_gets_a_sandbox(one_session, tight_server, size):
    # Lessons 1 to 17 in order, each opened, read and stepped once, within two minutes: every
    # one gets its sandbox and a Step that works (never refused, never disabled before the end).
    # Both widths in the one session: the quota is the address's, and only the session's own
    # unwatched sandboxes are reclaimed for it.
    page = one_session.new_page()
    page.set_viewport_size(dict(zip(("width", "height"), WIDTHS[size])))
    started = time.monotonic()
    try:
        lessons = [lesson for lesson in LESSONS if lesson.sandbox_kind]
        assert len(lessons) >= 17
        for lesson in lessons:
            page.goto(f"{tight_server}/lessons/{lesson.slug}/")
            wait_for(page, "window.KV && KV.lastFrame && KV.lastFrame.snapshot === true", timeout_s=20)
            assert not page.evaluate("document.body.dataset.refused || ''"), (size, lesson.slug)
            at = page.evaluate("KV.lastFrame.state.run.step")      # the wide walk left its step 1 behind
            if at:
                page.keyboard.press("Home")
                wait_for(page, "KV.lastFrame.state.run.step === 0")
            expect(page.locator("#step-button")).to_be_enabled()
            expect(page.locator("#step-button")).not_to_have_attribute("aria-disabled", "true")
            page.click("#step-button")
            wait_for(page, "KV.lastFrame.state.run.step === 1", timeout_s=20)
            assert page.inner_text("#step-say").strip(), (size, lesson.slug)
        assert time.monotonic() - started < 120
    finally:
        page.close()


def test_a_lesson_opened_again_at_its_end_says_why_step_is_off(one_session, tight_server):
    # The run is kept (a revisit, the language switch): a page that opens at its end has Step
    # off, and the step's box says so in words, at both widths.
    page = one_session.new_page()
    try:
        page.goto(f"{tight_server}/lessons/topics-partitions-offsets/")
        wait_for(page, "window.KV && KV.lastFrame && KV.lastFrame.snapshot === true", timeout_s=20)
        page.keyboard.press("End")
        wait_for(page, "KV.lastFrame.state.run.step === KV.lastFrame.state.run.total", timeout_s=20)
        for lang, words in (("zh", "本课的步骤到此结束"), ("en", "The lesson's steps end here")):
            for size in sorted(WIDTHS):
                page.set_viewport_size(dict(zip(("width", "height"), WIDTHS[size])))
                page.goto(f"{tight_server}/lessons/topics-partitions-offsets/?lang={lang}")
                wait_for(page, "window.KV && KV.lastFrame && KV.lastFrame.snapshot === true", timeout_s=20)
                expect(page.locator("#step-button")).to_have_attribute("aria-disabled", "true")
                expect(page.locator("#next-step")).to_be_visible()
                expect(page.locator("#next-step")).to_contain_text(words)
        page.keyboard.press("Home")
        wait_for(page, "KV.lastFrame.state.run.step === 0")
        expect(page.locator("#next-step")).not_to_contain_text("The lesson's steps end here")
        # A learner who walks to the end saw it come: no line is added under the picture.
        page.keyboard.press("End")
        wait_for(page, "KV.lastFrame.state.run.step === KV.lastFrame.state.run.total", timeout_s=20)
        expect(page.locator("#next-step")).to_be_empty()
    finally:
        page.close()


def test_a_refused_page_says_so_and_disables_its_step_buttons(one_session, tight_server):
    context = one_session
    slugs = [lesson.slug for lesson in LESSONS if lesson.sandbox_kind]
    try:
        kept = []
        for slug in slugs[:2]:                   # two tabs stay open: the address's quota is full
            page = context.new_page()
            page.goto(f"{tight_server}/lessons/{slug}/")
            wait_for(page, "window.KV && KV.lastFrame && KV.lastFrame.snapshot === true", timeout_s=20)
            kept.append(page)
        page = context.new_page()
        page.goto(f"{tight_server}/lessons/{slugs[2]}/")
        wait_for(page, "document.body.dataset.refused === 'quota'", timeout_s=20)
        expect(page.locator("#step-error")).to_contain_text("live sandboxes")
        expect(page.locator("#conn-status")).to_have_attribute("data-state", "refused")
        expect(page.locator("#step-button")).to_be_disabled()
        expect(page.locator("#back-button")).to_be_disabled()
        kept[0].close()                          # a tab closes: the refused page gets in by itself
        wait_for(page, "!document.body.dataset.refused && KV.lastFrame && KV.lastFrame.snapshot", timeout_s=90)
        assert page.evaluate("performance.getEntriesByType('navigation')[0].type") == "navigate"   # no reload
        expect(page.locator("#step-button")).to_be_enabled()
    finally:
        for open_page in context.pages:
            open_page.close()
