"""Lesson 2 in a real browser: press Produce until partition 0 rolls, and read the new
20-digit file name in the partition-directory diagram, as a person would see it."""
from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.browser

ROLLED_NAME = re.compile(r"^(?!0{20})\d{20}\.log$")


def svg_file_names(page: Page, partition: int) -> list[str]:
    return page.locator(f"#pd-svg-{partition} text.pd-name").all_text_contents()


def open_lesson(page: Page, url: str) -> None:
    page.goto(url + "/lessons/segments/")
    expect(page.locator("#conn-status")).to_have_attribute("data-state", "open")
    expect(page.locator("#pd-svg-0 text.pd-name").first).to_be_visible()


def rolled(page: Page) -> bool:
    return any(ROLLED_NAME.match(n) for n in svg_file_names(page, 0))


def test_pressing_produce_rolls_a_segment_shown_in_the_diagram(page: Page, live_server_url):
    open_lesson(page, live_server_url)
    assert "00000000000000000000.log" in svg_file_names(page, 0)
    page.fill("input[name=count]", "2")
    for _ in range(10):
        page.click("#produce-button")
        page.wait_for_timeout(250)
        if rolled(page):
            break
    new = [n for n in svg_file_names(page, 0) if ROLLED_NAME.match(n)]
    assert new, svg_file_names(page, 0)
    expect(page.locator("#timeline")).to_contain_text(f"rolled a new segment {new[0]}")
    expect(page.locator("#pd-sub-0")).to_contain_text("2 segments")


def test_keyboard_only_produce_and_task_check(page: Page, live_server_url):
    open_lesson(page, live_server_url)
    page.locator("#reset-button").focus()
    page.keyboard.press("Enter")
    expect(page.locator("#pd-sub-0")).to_contain_text("log end offset 0")
    page.locator("input[name=count]").focus()
    page.keyboard.press("Control+A")
    page.keyboard.type("12")
    page.keyboard.press("Tab")   # value size
    page.keyboard.press("Tab")   # key
    page.keyboard.press("Tab")   # the Produce button
    assert page.evaluate("document.activeElement.id") == "produce-button"
    page.keyboard.press("Enter")
    expect(page.locator("#pd-sub-0")).to_contain_text("3 segments")
    assert len([n for n in svg_file_names(page, 0) if ROLLED_NAME.match(n)]) == 2
    task = page.locator('[data-task="third-segment"]')
    expect(task).to_have_class(re.compile(r"\bdone\b"))
    expect(task.locator(".task-status")).to_have_text("✓ Done")


def test_server_side_validation_message_is_shown_next_to_the_form(page: Page, live_server_url):
    open_lesson(page, live_server_url)
    page.fill("input[name=key]", "ключ")
    page.click("#produce-button")
    expect(page.locator("#produce-error")).to_contain_text("Key may only hold printable ASCII characters")
    expect(page.locator("input[name=key]")).to_have_attribute("aria-invalid", "true")
    page.fill("input[name=key]", "k")
    page.click("#produce-button")
    expect(page.locator("#produce-error")).to_be_empty()
    expect(page.locator("#ack")).to_contain_text("Sent 5 message(s) to partition 0")


def test_reduced_motion_draws_new_rows_without_animation(browser, live_server_url):
    context = browser.new_context(reduced_motion="reduce")
    page = context.new_page()
    try:
        open_lesson(page, live_server_url)
        page.fill("input[name=count]", "6")
        page.click("#produce-button")
        expect(page.locator("#pd-sub-0")).to_contain_text("2 segments")
        assert page.locator("#pd-svg-0 g.pd-enter").count() == 0
        assert page.locator("#pd-svg-0 text.pd-name", has_text="00000000000000000005.log").count() == 1
    finally:
        context.close()
