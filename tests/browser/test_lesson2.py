"""Lesson 2 in a real browser, as a person uses it: walk the guided steps forward to the
end and back to the start, do the try-its through the forms, answer a quiz question,
and read the partition-directory diagram (20-digit file names, .deleted files)."""
from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.browser

ROLLED_NAME = re.compile(r"^(?!0{20})\d{20}\.log$")
STEPS = 6


def svg_file_names(page: Page, partition: int) -> list[str]:
    return page.locator(f"#pd-svg-{partition} text.pd-name").all_text_contents()


def open_lesson(page: Page, url: str, lang: str = "en") -> None:
    page.goto(url + f"/lessons/segments/?lang={lang}")
    expect(page.locator("#conn-status")).to_have_attribute("data-state", "open")
    expect(page.locator("#pd-svg-0 text.pd-name").first).to_be_visible()


def at_step(page: Page, n: int) -> None:
    expect(page.locator("#step-counter")).to_have_text(f"Step {n} of {STEPS}" if n else f"Start · 0/{STEPS}",
                                                       timeout=15000)


def test_guided_steps_forward_to_the_end_and_back_to_the_start(page: Page, live_server_url):
    open_lesson(page, live_server_url)
    page.click("#reset-button")
    at_step(page, 0)
    seen_deleted = False
    for n in range(1, STEPS + 1):
        page.click("#step-button")
        at_step(page, n)
        expect(page.locator("#step-happened")).not_to_be_empty()
        if n == 2:   # the second step rolls the first segment
            expect(page.locator("#pd-sub-0")).to_contain_text("2 segments")
            assert "00000000000000000005.log" in svg_file_names(page, 0)
            expect(page.locator("#step-happened")).to_contain_text("rolled a new segment 00000000000000000005.log")
        if n == 4:   # retention by size renames the oldest segment
            expect(page.locator("#pd-svg-0")).to_contain_text("00000000000000000000.log.deleted")
            seen_deleted = True
        if n == 5:   # file.delete.delay.ms later the files are gone
            expect(page.locator("#pd-svg-0")).not_to_contain_text("00000000000000000000.log.deleted")
    assert seen_deleted
    # All expired: the log rolled a new, empty active segment named after the log end offset.
    expect(page.locator("#pd-sub-0")).to_contain_text("log end offset 20")
    assert "00000000000000000020.log" in svg_file_names(page, 0)
    for t in ("third-segment", "retention-delete", "file-removed"):
        expect(page.locator(f'[data-task="{t}"]')).to_have_class(re.compile(r"\bdone\b"))
    expect(page.locator("#step-button")).to_have_attribute("aria-disabled", "true")
    for n in range(STEPS - 1, -1, -1):
        page.click("#back-button")
        at_step(page, n)
    expect(page.locator("#pd-sub-0")).to_contain_text("log end offset 0")
    rows = page.locator("#pd-svg-0 g.pd-row:not(.pd-leave)")
    expect(rows).to_have_count(3)    # the first segment's three files, as before any append
    assert sorted(rows.locator("text.pd-name").all_text_contents()) == [
        "00000000000000000000.index", "00000000000000000000.log", "00000000000000000000.timeindex"]
    expect(page.locator("#back-button")).to_have_attribute("aria-disabled", "true")


def test_scrubber_and_keyboard_go_to_any_step(page: Page, live_server_url):
    open_lesson(page, live_server_url)
    page.click("#reset-button")
    at_step(page, 0)
    page.locator("#scrubber").fill("3")
    page.locator("#scrubber").dispatch_event("change")
    at_step(page, 3)
    expect(page.locator("#pd-sub-0")).to_contain_text("4 segments")
    page.locator("body").click(position={"x": 5, "y": 5})
    page.keyboard.press("ArrowLeft")
    at_step(page, 2)
    page.keyboard.press("End")
    at_step(page, STEPS)
    page.keyboard.press("Home")
    at_step(page, 0)
    page.keyboard.press("?")
    expect(page.locator("#keys-dialog")).to_be_visible()
    expect(page.locator("#keys-dialog")).to_contain_text("Play or pause")
    page.keyboard.press("Escape")
    expect(page.locator("#keys-dialog")).to_be_hidden()


def test_play_runs_the_steps_and_pause_stops(page: Page, live_server_url):
    open_lesson(page, live_server_url)
    page.click("#reset-button")
    at_step(page, 0)
    page.select_option("#speed", "8")
    page.click("#play-button")
    expect(page.locator("#play-button")).to_have_attribute("aria-pressed", "true")
    at_step(page, STEPS)
    expect(page.locator("#play-button")).to_have_attribute("aria-pressed", "false")


def test_try_it_through_the_forms_and_a_quiz_answer_points_at_the_diagram(page: Page, live_server_url):
    open_lesson(page, live_server_url)
    page.click("#reset-button")
    expect(page.locator("#pd-sub-0")).to_contain_text("log end offset 0")
    page.fill("input[name=count]", "12")
    page.click("#produce-button")
    expect(page.locator("#pd-sub-0")).to_contain_text("3 segments")
    assert len([n for n in svg_file_names(page, 0) if ROLLED_NAME.match(n)]) == 2
    task = page.locator('[data-task="third-segment"]')
    expect(task).to_have_class(re.compile(r"\bdone\b"))
    expect(task.locator(".task-status")).to_have_text("✓ Done")
    page.select_option("select[name=ms]", "65000")
    page.click("#advance-button")
    expect(page.locator('[data-task="retention-delete"]')).to_have_class(re.compile(r"\bdone\b"))
    page.select_option("select[name=ms]", "30000")
    page.click("#advance-button")
    expect(page.locator('[data-task="file-removed"]')).to_have_class(re.compile(r"\bdone\b"))
    # The learner's own commands are steps of the run too.
    expect(page.locator("#step-counter")).to_have_text("Step 3 of 3")
    quiz = page.locator("#quiz-name")
    quiz.get_by_label("The first record in this segment has offset 7.").check()
    quiz.get_by_role("button", name="Answer").click()
    expect(quiz.locator(".quiz-feedback")).to_contain_text("Right.")
    expect(page.locator("#pd-fig-0")).to_have_class(re.compile(r"\bkv-pointed\b"))


def test_keyboard_only_produce(page: Page, live_server_url):
    open_lesson(page, live_server_url)
    page.locator("#reset-button").focus()
    page.keyboard.press("Enter")
    expect(page.locator("#pd-sub-0")).to_contain_text("log end offset 0")
    page.locator("input[name=count]").focus()
    page.keyboard.press("Control+A")
    page.keyboard.type("6")
    page.keyboard.press("Tab")   # value size
    page.keyboard.press("Tab")   # key
    page.keyboard.press("Tab")   # the Produce button
    assert page.evaluate("document.activeElement.id") == "produce-button"
    page.keyboard.press("Enter")
    expect(page.locator("#pd-sub-0")).to_contain_text("2 segments")
    # "m" presses Produce from anywhere outside a text field.
    page.locator("body").click(position={"x": 5, "y": 5})
    page.keyboard.press("m")
    expect(page.locator("#pd-sub-0")).to_contain_text("log end offset 12")


def test_form_limits_follow_the_sandbox_and_errors_sit_by_the_form(page: Page, live_server_url):
    open_lesson(page, live_server_url)
    assert page.get_attribute("input[name=value_size]", "max") == "883"
    page.fill("input[name=value_size]", "2000")
    page.click("#produce-button")
    expect(page.locator("#produce-error")).to_contain_text("between 1 and 883")
    expect(page.locator("input[name=value_size]")).to_have_attribute("aria-invalid", "true")
    page.fill("input[name=value_size]", "100")
    page.fill("input[name=count]", "")
    page.click("#produce-button")
    expect(page.locator("#produce-error")).to_contain_text("Number of messages is required")
    page.fill("input[name=count]", "5")
    page.fill("input[name=key]", "ключ")
    page.click("#produce-button")
    expect(page.locator("#produce-error")).to_contain_text("Key may only hold printable ASCII characters")
    page.fill("input[name=key]", "k")
    page.click("#produce-button")
    expect(page.locator("#produce-error")).to_be_empty()
    expect(page.locator("#ack")).to_contain_text("Sent 5 message(s) to partition 0")


def test_reduced_motion_draws_new_rows_without_animation(browser, live_server_url):
    context = browser.new_context(reduced_motion="reduce")
    page = context.new_page()
    try:
        open_lesson(page, live_server_url)
        page.click("#reset-button")
        expect(page.locator("#pd-sub-0")).to_contain_text("log end offset 0")
        page.fill("input[name=count]", "6")
        page.click("#produce-button")
        expect(page.locator("#pd-sub-0")).to_contain_text("2 segments")
        assert page.locator("#pd-svg-0 g.pd-enter").count() == 0
        assert page.locator("#pd-svg-0 text.pd-name", has_text="00000000000000000005.log").count() == 1
    finally:
        context.close()


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_phone_width_has_no_horizontal_overflow(browser, live_server_url, lang):
    context = browser.new_context(viewport={"width": 390, "height": 844})
    page = context.new_page()
    try:
        open_lesson(page, live_server_url, lang)
        page.click("#step-button")
        expect(page.locator("#step-happened")).not_to_be_empty()
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        if lang == "zh":
            expect(page.locator("#step-button")).to_contain_text("前进")
            expect(page.locator("#produce-button")).to_have_text("发送")
    finally:
        context.close()


def test_progress_survives_a_reload(page: Page, live_server_url):
    open_lesson(page, live_server_url)
    page.fill("input[name=count]", "12")
    page.click("#produce-button")
    expect(page.locator('[data-task="third-segment"]')).to_have_class(re.compile(r"\bdone\b"))
    quiz = page.locator("#quiz-unit")
    quiz.locator("input[value='1']").check()
    quiz.get_by_role("button", name="Answer").click()
    expect(quiz.locator(".quiz-feedback")).to_contain_text("Right.")
    page.reload()
    expect(page.locator("#conn-status")).to_have_attribute("data-state", "open")
    page.click("#reset-button")      # even a fresh sandbox keeps what the learner achieved
    expect(page.locator("#pd-sub-0")).to_contain_text("log end offset 0")
    expect(page.locator('[data-task="third-segment"]')).to_have_class(re.compile(r"\bdone\b"))
    expect(page.locator("#quiz-unit .quiz-feedback")).to_contain_text("Right.")
    expect(page.locator("#quiz-unit input[value='1']")).to_be_checked()
