"""Lesson 3 in the default run (the full walks of the course's lessons are marked slow):
three guided steps, and the inside-a-segment diagram shows the lookup of offset 19 — the
segment chosen by file name, the floor entry the binary search found, the answer row."""
from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.browser


def test_lesson3_lookup_of_offset_19_is_drawn(browser, live_server_url):
    context = browser.new_context(reduced_motion="reduce")
    page: Page = context.new_page()
    try:
        page.goto(live_server_url + "/lessons/offset-index/")
        expect(page.locator("#conn-status")).to_have_attribute("data-state", "open")
        for n in (1, 2, 3):
            page.click("#step-button")
            expect(page.locator("#step-counter")).to_have_text(f"Step {n} of 6")
        expect(page.locator("#ss-file-14")).to_have_class(re.compile(r"\bchosen\b"))
        expect(page.locator('#segment-strip tr.ss-row[data-position="850"]')).to_have_class(re.compile(r"\banswer\b"))
        expect(page.locator("#ss-steps li.step-probe")).to_have_count(2)
        expect(page.locator("#ss-steps li.step-answer")).to_contain_text("position 850 of 00000000000000000014.log")
    finally:
        context.close()
