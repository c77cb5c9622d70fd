"""Issue 17 item 6 in Chromium: one tab walks lessons 1 to 15 in order, quickly, from an
address whose sandbox quota is 2, and every lesson gets its sandbox (the session's
sandboxes no socket watches are reclaimed first). A page that is refused all the same
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


def test_one_tab_walks_lessons_1_to_15_and_each_gets_a_sandbox(one_session, tight_server):
    page = one_session.new_page()
    started = time.monotonic()
    try:
        for lesson in [lesson for lesson in LESSONS if lesson.sandbox_kind][:15]:
            page.goto(f"{tight_server}/lessons/{lesson.slug}/")
            wait_for(page, "window.KV && KV.lastFrame && KV.lastFrame.snapshot === true", timeout_s=20)
            assert not page.evaluate("document.body.dataset.refused || ''"), lesson.slug
        assert time.monotonic() - started < 120
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
