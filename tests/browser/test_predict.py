"""Predict, then watch in a real browser: the question appears above the step controls
before the step that teaches; a learner picks a choice with the keyboard and locks it in
(which steps); the page shows their pick beside what the engine did, with ✓/✗ in text and
the events that decided it; Back brings the question back with the pick remembered; plain
Step skips the prediction and still shows the engine's answer."""
from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from .test_frame_protocol import wait_for
from .test_storage_lessons import open_lesson, page  # noqa: F401 (fixture)

pytestmark = pytest.mark.browser


def seek(page: Page, n: int, total: int) -> None:
    page.locator("#scrubber").fill(str(n))     # the scrubber's change event sends "seek"
    expect(page.locator("#step-counter")).to_have_text(f"Step {n} of {total}")


def test_lock_in_with_the_keyboard_then_see_the_engines_answer(page: Page, live_server_url):
    open_lesson(page, live_server_url, "isr-and-acks")
    page.select_option("#scenario-select", "isr-shrink-acks-all")
    expect(page.locator("#step-counter")).to_have_text("Start · 0/14")
    expect(page.locator("#predict")).to_be_hidden()
    seek(page, 8, 14)
    box = page.locator("#predict")
    expect(box).to_be_visible()
    expect(page.locator("#predict-question")).to_contain_text("min.insync.replicas is still 2")
    choices = page.locator('#predict-choices input[name="predict"]')
    expect(choices).to_have_count(3)
    # Keyboard only: focus the first choice, arrow to the second (the arrows stay in the group
    # instead of stepping the run), Enter locks it in, which runs the step.
    choices.nth(0).focus()
    page.keyboard.press("Space")
    page.keyboard.press("ArrowDown")
    expect(choices.nth(1)).to_be_checked()
    expect(page.locator("#step-counter")).to_have_text("Step 8 of 14")
    page.keyboard.press("Enter")
    expect(page.locator("#step-counter")).to_have_text("Step 9 of 14")
    expect(page.locator("#step-button")).to_be_focused()   # the form hid: the keyboard stays on the run
    outcome = page.locator("#predict-outcome")
    expect(outcome.locator(".pv-you")).to_have_class(re.compile(r"\bright\b"))
    expect(outcome.locator(".pv-you")).to_contain_text("✓ You predicted: It refuses m3 with NOT_ENOUGH_REPLICAS")
    expect(outcome.locator(".pv-engine")).to_contain_text("The engine: It refuses m3 with NOT_ENOUGH_REPLICAS")
    expect(outcome.locator(".pv-evidence li").first).to_contain_text("NOT_ENOUGH_REPLICAS")
    expect(page.locator("#predict-form")).to_be_hidden()

    # Back: the question again, the pick remembered; plain Step skips predicting and still shows the answer.
    page.click("#back-button")
    expect(page.locator("#step-counter")).to_have_text("Step 8 of 14")
    expect(page.locator("#predict-form")).to_be_visible()
    expect(choices.nth(1)).to_be_checked()
    page.evaluate("() => window.sessionStorage.clear()")
    page.click("#back-button")
    seek(page, 8, 14)
    expect(choices.nth(1)).not_to_be_checked()
    page.click("#step-button")
    expect(page.locator("#step-counter")).to_have_text("Step 9 of 14")
    expect(outcome.locator(".pv-you")).to_have_text("You did not predict this step.")
    expect(outcome.locator(".pv-engine")).to_contain_text("NOT_ENOUGH_REPLICAS")
    # The step after it asks nothing: the box goes away.
    page.click("#step-button")
    expect(page.locator("#step-counter")).to_have_text("Step 10 of 14")
    expect(box).to_be_hidden()


def test_a_wrong_pick_is_marked_in_text_and_chinese_pages_translate_it(page: Page, live_server_url):
    page.goto(f"{live_server_url}/lessons/leader-epoch/?lang=zh")
    expect(page.locator("#conn-status")).to_have_attribute("data-state", "open")
    page.check("#trunc-hw")
    page.click("#load-button")
    wait_for(page, "window.KV.lastFrame && window.KV.lastFrame.state.truncation === 'hw'")
    expect(page.locator("#step-counter")).to_contain_text("0/13")
    seek_zh = page.locator("#scrubber")
    seek_zh.fill("8")
    expect(page.locator("#predict-form")).to_be_visible()
    expect(page.locator("#predict-title")).to_have_text("先预测，再观察")
    page.locator('#predict-choices input[name="predict"]').nth(1).check()   # "B keeps m2": not under HW truncation
    page.click("#predict-lock")
    you = page.locator("#predict-outcome .pv-you")
    expect(you).to_have_class(re.compile(r"\bwrong\b"))
    expect(you).to_contain_text("✗ 你的预测：")
    expect(you).to_contain_text("（没有发生）")
    expect(page.locator("#predict-outcome .pv-engine")).to_contain_text("截掉")
    expect(page.locator("#predict-outcome .pv-evidence li")).to_have_count(4)


def test_play_stops_where_the_lesson_asks(page: Page, live_server_url):
    open_lesson(page, live_server_url, "isr-and-acks")
    page.select_option("#scenario-select", "isr-shrink-acks-all")
    expect(page.locator("#step-counter")).to_have_text("Start · 0/14")
    seek(page, 3, 14)
    page.select_option("#speed", "8")
    page.click("#play-button")
    expect(page.locator("#step-counter")).to_have_text("Step 5 of 14")   # step 6 asks first
    expect(page.locator("#play-button")).to_have_attribute("aria-pressed", "false")
    expect(page.locator("#predict-msg")).to_contain_text("Paused")
    page.wait_for_timeout(600)                                          # three ticks at 8×: nothing moves
    expect(page.locator("#step-counter")).to_have_text("Step 5 of 14")
