"""Predict, then watch with a class: the instructor opens a room one step before a
question, a student answers on a phone-sized page (keyboard only) and locks in; the
projector shows the class's answer come in; the instructor steps; the student sees their
pick, the engine's answer and the class's spread with ✓/✗. Screenshots of both pages are
saved in the test's temp dir to look at."""
from __future__ import annotations

import re

import pytest
from playwright.sync_api import Browser, expect

from .test_frame_protocol import wait_for
from .test_rooms import log_in, room_server  # noqa: F401 (fixture)

pytestmark = pytest.mark.browser

LESSON = "idempotence-and-transactions"


def test_the_class_predicts_and_the_projector_shows_the_spread(browser: Browser, room_server, tmp_path):  # noqa: F811
    teacher_ctx = browser.new_context(viewport={"width": 1366, "height": 900}, reduced_motion="reduce")
    student_ctx = browser.new_context(viewport={"width": 390, "height": 844}, reduced_motion="reduce")
    teacher, student = teacher_ctx.new_page(), student_ctx.new_page()
    try:
        log_in(teacher, room_server)
        teacher.goto(f"{room_server}/lessons/{LESSON}/")
        expect(teacher.locator("#conn-status")).to_have_attribute("data-state", "open")
        teacher.click("#step-button")
        expect(teacher.locator("#step-counter")).to_contain_text("Step 1 of")
        teacher.click("#open-room-button")
        teacher.wait_for_url("**/rooms/*/present")
        code = teacher.locator(".join-code").inner_text().strip()
        wait_for(teacher, "KV.lastFrame && KV.lastFrame.state.run.step === 1")
        # The projector shows the question without answer buttons: the class answers.
        expect(teacher.locator("#predict-form")).to_be_hidden()
        expect(teacher.locator("#predict-spread")).to_contain_text("The class (0 answered)")

        student.goto(f"{room_server}/r/{code}")
        student.fill("#id_name", "Ada")
        student.click("button[type=submit]")
        expect(student.locator("#conn-status")).to_have_attribute("data-state", "open")
        expect(student.locator("#predict-form")).to_be_visible()
        expect(student.locator("#predict-spread")).to_be_hidden()      # no peeking at the class before the step
        student.locator('#predict-choices input[name="predict"]').first.focus()
        student.keyboard.press("Space")
        student.keyboard.press("Enter")
        expect(student.locator("#predict-msg")).to_contain_text("Locked in")   # watching: the instructor steps
        expect(teacher.locator("#predict-spread")).to_contain_text("The class (1 answered)")
        expect(teacher.locator("#predict-spread .pv-spread-row").first).to_contain_text("1 (100 %)")
        teacher.screenshot(path=str(tmp_path / "present-1366-question.png"))

        teacher.click("#step-button")
        wait_for(student, "KV.lastFrame && KV.lastFrame.state.run.step === 2")
        outcome = student.locator("#predict-outcome")
        expect(outcome.locator(".pv-you")).to_have_class(re.compile(r"\bright\b"))
        expect(outcome.locator(".pv-you")).to_contain_text("✓ You predicted: It appends m1 a second time")
        rows = student.locator("#predict-spread .pv-spread-row")
        expect(rows.first).to_contain_text("✓ It appends m1 a second time")
        expect(rows.first).to_contain_text("1 (100 %)")
        expect(rows.nth(1)).to_contain_text("✗ ")
        expect(teacher.locator("#predict-spread .pv-spread-row").first).to_have_class(re.compile(r"\bright\b"))
        student.locator("#predict").scroll_into_view_if_needed()
        student.screenshot(path=str(tmp_path / "student-390-outcome.png"))
        teacher.screenshot(path=str(tmp_path / "present-1366-outcome.png"))
    finally:
        teacher_ctx.close()
        student_ctx.close()
