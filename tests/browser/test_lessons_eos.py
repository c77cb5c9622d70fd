"""Lessons 14 and 15 in a real browser: walk the guided steps forwards and back (buttons
and arrow keys), read what the diagrams show at the steps that matter, do the try-its
through the forms, answer a quiz question."""
from __future__ import annotations

import os
import pathlib
import re

import pytest
from playwright.sync_api import Page, expect

from .test_frame_protocol import wait_for  # polls from Python: the page's CSP forbids eval

pytestmark = pytest.mark.browser

L14, L15 = "idempotence-and-transactions", "timing-wheel"
DONE = re.compile(r"\bdone\b")

# KAFKAVIZ_SHOTS=<dir>: also save 1366 px and 390 px screenshots of the consume-transform-produce steps.
SHOTS = pathlib.Path(os.environ["KAFKAVIZ_SHOTS"]) if os.environ.get("KAFKAVIZ_SHOTS") else None


def shoot(page: Page, name: str) -> None:
    if SHOTS is not None:
        for width, height in ((1366, 900), (390, 844)):
            page.set_viewport_size({"width": width, "height": height})
            page.screenshot(path=str(SHOTS / f"{name}-{width}.png"), full_page=True)
            page.locator("#tl-po0").screenshot(path=str(SHOTS / f"{name}-{width}-offsets.png"))
            page.locator("#txn-group-offsets").screenshot(path=str(SHOTS / f"{name}-{width}-table.png"))
        page.set_viewport_size({"width": 1366, "height": 900})


def at_step(page: Page, n: int, total: int) -> None:
    expect(page.locator("#step-counter")).to_have_text(f"Step {n} of {total}" if n else f"Start · 0/{total}",
                                                       timeout=15000)


def open_lesson(page: Page, url: str, slug: str, total: int) -> None:
    page.goto(f"{url}/lessons/{slug}/")
    expect(page.locator("#conn-status")).to_have_attribute("data-state", "open")
    at_step(page, 0, total)


def lane(page: Page, partition: int, broker: int) -> list[str]:
    return page.locator(f"#tl-lane-{partition}-{broker} text.tl-value").all_text_contents()


def answer(page: Page, quiz: str, choice: int) -> None:
    form = page.locator(f"#quiz-{quiz}")
    form.locator(f'input[value="{choice}"]').check()
    form.locator("button[type=submit]").click()
    expect(form.locator(".quiz-feedback")).to_contain_text("Right.")


def send(page: Page, form: str, button: str | None = None, **fields: str) -> None:
    for name, value in fields.items():
        field = page.locator(f"#{form} [name={name}]")
        if field.evaluate("n => n.tagName") == "SELECT":
            field.select_option(value)
        else:
            field.fill(value)
    frames = page.evaluate("Number(document.body.dataset.frames || 0)")
    page.click(f"#{button}" if button else f"#{form} button[type=submit]")
    wait_for(page, f"Number(document.body.dataset.frames || 0) > {frames}")


def test_lesson_14_forward_and_back_with_what_the_lanes_show(page: Page, live_server_url):
    total = 18
    open_lesson(page, live_server_url, L14, total)
    for n in range(1, total + 1):
        page.click("#step-button")
        at_step(page, n, total)
        if n == 2:      # the plain producer's retry: m1 twice on every replica lane
            for b in (0, 1, 2):
                assert lane(page, 0, b) == ["m1", "m1"]
                expect(page.locator(f"#tl-lane-0-{b} .tl-retried")).to_contain_text("↻ retry")
        if n == 4:      # the idempotent producer's retry: m2 once, with pid 0 seq 0
            for b in (0, 1, 2):
                assert lane(page, 0, b) == ["m1", "m1", "m2"]
            expect(page.locator("#step-happened")).to_contain_text("duplicate")
        if n == 7:      # open transaction: the LSO stops before "a"; the two readers differ
            expect(page.locator("#tl-p0 .tl-title")).to_contain_text("LSO 3")
            expect(page.locator("#txn-reads")).to_contain_text("3:a")
        if n == 10:     # ABORT markers and the .txnindex
            expect(page.locator("#tl-lane-0-0 .tl-abort")).to_have_count(1)
            expect(page.locator("#tl-lane-1-1 .tl-commit")).to_have_count(1)
            expect(page.locator('#tl-p0 [data-file$=".txnindex"]')).to_be_visible()
            expect(page.locator('#tl-p0 [data-file$=".snapshot"]')).to_be_visible()
        if n == 15:     # consume-transform-produce: the offset record is open, pending, not committed
            assert page.locator("#tl-lane-o0-0 text.tl-value").all_text_contents() == ["t-0→3"]
            expect(page.locator("#tl-lane-o0-0 .tl-open")).to_have_count(1)
            expect(page.locator("#txn-group-offsets")).to_contain_text("t-0→3")
            expect(page.locator("#txn-coordinator")).to_contain_text("__consumer_offsets-0")
            shoot(page, "l14-ctp-pending")
        if n == 16:     # the COMMIT marker in __consumer_offsets-0 commits the offset
            expect(page.locator("#tl-lane-o0-0 .tl-commit")).to_have_count(1)
            expect(page.locator("#txn-group-offsets tbody td").nth(1)).to_have_text("t-0→3")
        if n == 18:     # the ABORT marker discards t-0→5; 3 stays committed
            expect(page.locator("#tl-lane-o0-0 .tl-abort")).to_have_count(1)
            expect(page.locator("#tl-lane-o0-0 .tl-aborted")).to_contain_text("t-0→5")
            expect(page.locator("#txn-group-offsets tbody td").nth(1)).to_have_text("t-0→3")
            expect(page.locator("#txn-group-offsets tbody td").nth(2)).to_have_text("—")
            shoot(page, "l14-ctp-abort")
    expect(page.locator("#txn-producers")).to_contain_text("fenced")
    page.locator("#back-button").focus()
    for n in range(total - 1, -1, -1):
        page.keyboard.press("ArrowLeft")
        at_step(page, n, total)
        if n == 16:
            expect(page.locator("#tl-lane-o0-0 .tl-abort")).to_have_count(0)
            expect(page.locator("#tl-lane-o0-0 .tl-commit")).to_have_count(1)
        if n == 9:
            expect(page.locator("#tl-lane-0-0 .tl-abort")).to_have_count(0)
            expect(page.locator("#tl-lane-0-0 .tl-open")).to_have_count(1)
    assert lane(page, 0, 0) == []


def test_lesson_14_try_its_through_the_forms_and_a_quiz(page: Page, live_server_url):
    open_lesson(page, live_server_url, L14, 18)
    send(page, "create-producer-form", name="me", idempotent="true")
    send(page, "answer-form", "lose-answers-button", a="0")
    expect(page.locator(".tl-links")).to_contain_text("is cut")
    send(page, "txn-produce-form", producer="me", partition="0", value="once")
    for _ in range(3):
        send(page, "advance-form")
    send(page, "answer-form", "heal-answers-button", a="0")
    for _ in range(3):
        send(page, "advance-form")
    expect(page.locator('[data-task="no-duplicate"]')).to_have_class(DONE)
    assert lane(page, 0, 0).count("once") == 1
    # A transaction aborted, then read with read_committed.
    send(page, "create-producer-form", name="t1", transactional_id="mine")
    send(page, "txn-form", "init-txn-button", name="t1")
    send(page, "advance-form")
    send(page, "txn-form", "begin-txn-button", name="t1")
    send(page, "txn-produce-form", producer="t1", partition="0", value="gone")
    send(page, "advance-form")
    send(page, "txn-form", "abort-txn-button", name="t1")
    send(page, "advance-form")
    send(page, "consume-form", partition="0", isolation="read_committed")
    expect(page.locator('[data-task="abort-read-committed"]')).to_have_class(DONE)
    expect(page.locator("#txn-reads")).not_to_contain_text(":gone")
    # Offsets sent in a transaction, then aborted: the try-it, and nothing committed.
    send(page, "txn-form", "begin-txn-button", name="t1")
    send(page, "send-offsets-form", name="t1", group="mine", partition="0", offset="2")
    send(page, "advance-form")
    send(page, "txn-form", "abort-txn-button", name="t1")
    send(page, "advance-form")
    expect(page.locator('[data-task="ctp-abort-offsets"]')).to_have_class(DONE)
    expect(page.locator("#txn-group-offsets")).to_contain_text("mine")
    # Commit without begin: Kafka's error next to the transaction form.
    page.click("#commit-txn-button")
    expect(page.locator("#txn-error")).to_contain_text("INVALID_TXN_STATE")
    answer(page, "read-committed", 1)
    expect(page.locator("#txn-log")).to_have_class(re.compile(r"\bkv-pointed\b"))


def test_lesson_15_forward_and_back_with_what_the_wheels_show(page: Page, live_server_url):
    total = 9
    open_lesson(page, live_server_url, L15, total)
    page.locator("#step-button").focus()
    for n in range(1, total + 1):
        page.keyboard.press("ArrowRight")
        at_step(page, n, total)
        if n == 1:      # two overflow wheels made; the task sits on level 2
            expect(page.locator("#tw-level-2 path.tw-full")).to_have_count(1)
            expect(page.locator("#tw-moves")).to_contain_text("overflow wheel level 2 created")
        if n == 2:
            expect(page.locator("#tw-moves")).to_contain_text("completed")
            expect(page.locator("#timing-wheel path.tw-full")).to_have_count(0)
        if n == 3:
            expect(page.locator("#tw-queue li")).to_have_count(3)
        if n == 6:
            expect(page.locator("#tw-moves")).to_contain_text("level 2 → level 1")
            # The top wheel's hand reached bucket 3 (1200 ms / 400 ms); the middle one bucket 0.
            expect(page.locator("#tw-level-2 .tw-hand")).to_have_attribute("data-angle", "63.0")
            expect(page.locator("#tw-level-2 path.tw-at-hand")).to_have_attribute("data-slot", "3")
            expect(page.locator("#tw-level-1 path.tw-full")).to_have_count(1)
        if n == 7:
            expect(page.locator("#tw-moves")).to_contain_text("REQUEST_TIMED_OUT")
        if n == 8:      # the switch counts the fetches waiting in the other purgatory
            expect(page.locator('.tw-switch-btn[data-purgatory="fetch"]')).to_contain_text("2 waiting")
            expect(page.locator('.tw-switch-btn[data-purgatory="produce"]')).to_have_attribute("aria-pressed", "true")
        if n == 9:
            # Pressed from the keyboard: the fetch purgatory's wheels and moves replace the produce ones.
            page.locator('.tw-switch-btn[data-purgatory="fetch"]').focus()
            page.keyboard.press("Enter")
            expect(page.locator('.tw-switch-btn[data-purgatory="fetch"]')).to_have_attribute("aria-pressed", "true")
            expect(page.locator('.tw-switch-btn[data-purgatory="fetch"]')).to_be_focused()
            expect(page.locator("#tw-head")).to_contain_text("fetch purgatory")
            expect(page.locator(".tw-rings")).to_have_attribute("data-purgatory", "fetch")
            expect(page.locator("#tw-moves")).to_contain_text("fetch#1@5 waited its whole max wait")
            expect(page.locator("#tw-level-2 .tw-task")).to_have_count(2)
            page.locator('.tw-switch-btn[data-purgatory="produce"]').click()
            expect(page.locator("#tw-head")).to_contain_text("produce purgatory")
            expect(page.locator("#tw-moves")).to_contain_text("no timer events")
            page.locator("#step-button").focus()
    for n in range(total - 1, -1, -1):
        page.click("#back-button")
        at_step(page, n, total)
    expect(page.locator("#tw-level-2")).to_have_count(0)     # overflow wheels exist only once needed


def test_lesson_15_try_its_through_the_forms_and_a_quiz(page: Page, live_server_url):
    open_lesson(page, live_server_url, L15, 9)
    send(page, "pause-form", broker="1")
    send(page, "pause-form", broker="2")
    send(page, "tw-produce-form", value="late", timeout_ms="500")
    send(page, "advance-form", ms="2")       # the request reaches the leader and waits
    expect(page.locator("#tw-level-2 path.tw-full")).to_have_count(1)
    expect(page.locator("#tw-level-2 .tw-task")).to_contain_text("produce#1")
    send(page, "advance-form", ms="700")
    expect(page.locator('[data-task="cascade"]')).to_have_class(DONE)
    expect(page.locator('[data-task="timeout"]')).to_have_class(DONE)
    send(page, "resume-form", broker="1")
    send(page, "resume-form", broker="2")
    send(page, "tw-produce-form", value="soon", timeout_ms="1000")
    send(page, "advance-form", ms="100")
    expect(page.locator('[data-task="complete"]')).to_have_class(DONE)
    # The "t" key lets time pass too (the button declares it with aria-keyshortcuts).
    page.locator("#tw-head").click()
    before = page.locator("#tw-head").inner_text()
    page.keyboard.press("t")
    expect(page.locator("#tw-head")).not_to_have_text(before)
    answer(page, "overflow", 1)
