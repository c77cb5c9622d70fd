"""axe-core (through axe-playwright-python, tests only) on every lesson page at 1366×800 and
390×844, in English and in Chinese: no serious or critical violation, with the first frame
drawn and a step taken (the diagrams, tokens and narration are on the page)."""
from __future__ import annotations

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Browser

from kafkaviz.lessons.catalogue import LESSONS
from tests.browser.test_stage import WIDTHS, open_lesson, step

pytestmark = pytest.mark.browser

AXE = Axe()


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("size", sorted(WIDTHS))
def test_no_serious_or_critical_accessibility_violation(browser: Browser, live_server_url, size, lang):
    w, h = WIDTHS[size]
    ctx = browser.new_context(viewport={"width": w, "height": h}, reduced_motion="reduce")
    page = ctx.new_page()
    found = {}
    try:
        for lesson in LESSONS:
            open_lesson(page, live_server_url, lesson.slug, lang)
            step(page)
            results = AXE.run(page)
            bad = [(v["id"], v["impact"], [n["target"] for n in v["nodes"]][:3])
                   for v in results.response["violations"] if v["impact"] in ("serious", "critical")]
            if bad:
                found[lesson.slug] = bad
    finally:
        ctx.close()
    assert not found, found
