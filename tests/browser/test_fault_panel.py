"""The fault panel in a real browser (issue 18): the broker buttons grey themselves by what
the engine's fault declaration says they need (``data-needs``), and the settings form sends
the engine's own set_config (``changes`` as an object), which the engine applies."""
from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from .test_storage_lessons import open_lesson, page  # noqa: F401 (fixture)

pytestmark = pytest.mark.browser


def test_fault_buttons_follow_their_needs_and_the_settings_form_is_set_config(page: Page, live_server_url):
    open_lesson(page, live_server_url, "isr-and-acks")
    page.click("#step-button")
    expect(page.locator("#step-counter")).to_contain_text("Step 1")
    page.select_option("#broker-pick", "1")
    expect(page.locator("#restart-button")).to_be_disabled()      # needs "down": broker 1 is up
    expect(page.locator("#crash-button")).to_be_enabled()
    page.click("#crash-button")
    expect(page.locator("#restart-button")).to_be_enabled(timeout=15000)
    expect(page.locator("#crash-button")).to_be_disabled()
    page.select_option('#config-form select[name="changes.name"]', "min.insync.replicas")
    page.fill('#config-form input[name="changes.value"]', "2")
    page.click("#config-form button[type=submit]")
    expect(page.locator("#ack")).to_contain_text("min.insync.replicas", timeout=15000)
    expect(page.locator("#set_config-error")).to_have_text("")
