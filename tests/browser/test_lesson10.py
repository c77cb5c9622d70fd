"""Lesson 10 in a real browser: walk the KIP-101 data-loss scenario forward to the end
and back to the start under both truncation rules (buttons and arrow keys), do the
try-its through the UI (the fault buttons included), answer a quiz question, and read
the replica lanes, verdict and epoch caches as a person sees them."""
from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from engine.cluster.scenarios import get_scenario
from kafkaviz.live.replication import script_ends

pytestmark = pytest.mark.browser

SCENARIO = get_scenario("kip101-data-loss")
ENDS = script_ends(SCENARIO.commands())     # a lesson step ends after these commands
STEPS = len(ENDS)
# The step after which the controller has elected B, A being down (the step after "crash broker 1").
_CRASH_A = max(i for i, s in enumerate(SCENARIO.steps) if s.command["cmd"] == "crash" and s.command["broker"] == 1)
ELECTION = 1 + next(k for k, end in enumerate(ENDS) if end >= _CRASH_A + 2)


def lane_values(page: Page, broker: int) -> list[str]:
    # Ghost cells (cut away in this step) are drawn struck through; they are not in the log.
    return page.locator(f"#lane-{broker} g.le-cell:not(.le-ghost) text.le-cell-value").all_text_contents()


def at_step(page: Page, n: int, total: int = STEPS) -> None:
    expect(page.locator("#step-counter")).to_have_text(f"Step {n} of {total}" if n else f"Start · 0/{total}",
                                                       timeout=15000)


def open_lesson(page: Page, url: str) -> None:
    page.goto(url + "/lessons/leader-epoch/")
    expect(page.locator("#conn-status")).to_have_attribute("data-state", "open")
    at_step(page, 0)


def load(page: Page, rule: str, scenario: str = "kip101-data-loss") -> None:
    page.select_option("#scenario-select", scenario)
    if page.is_checked(f"#trunc-{rule}"):
        page.click("#load-button")
    else:
        page.click(f"#trunc-{rule}")       # changing the rule restarts the scenario under it
    at_step(page, 0, len(script_ends(get_scenario(scenario).commands())))
    expect(page.locator(f"#trunc-{rule}")).to_be_checked()


def run_data_loss(page: Page, rule: str) -> None:
    load(page, rule)
    for n in range(1, ELECTION + 1):
        page.click("#step-button")
        at_step(page, n)
    # One step back (the election undone), then forward again with the keyboard.
    page.click("#back-button")
    at_step(page, ELECTION - 1)
    page.locator("#back-button").focus()
    for n in range(ELECTION, STEPS + 1):
        page.keyboard.press("ArrowRight")
        at_step(page, n)


def test_forward_to_the_end_and_back_to_the_start_under_both_rules(page: Page, live_server_url):
    open_lesson(page, live_server_url)
    run_data_loss(page, "hw")
    assert lane_values(page, 1) == ["m1", "m3"]
    assert lane_values(page, 2) == ["m1", "m3"]
    expect(page.locator("#verdict")).to_contain_text("Acknowledged but lost: m2")
    expect(page.locator("#replica-lanes")).to_contain_text("✗ LOST")
    expect(page.locator('[data-task="see-loss"]')).to_have_class(re.compile(r"\bdone\b"))

    run_data_loss(page, "epoch")
    assert lane_values(page, 1) == ["m1", "m2", "m3"]
    assert lane_values(page, 2) == ["m1", "m2", "m3"]
    expect(page.locator("#verdict")).to_contain_text("Every acknowledged record is in the leader's log")
    expect(page.locator("#replica-lanes")).not_to_contain_text("LOST")
    expect(page.locator("#epoch-cache-1")).to_contain_text("start offset")
    # Two columns only: epoch and start offset (no blank third column).
    assert page.locator("#epoch-cache-1 thead th").count() == 2
    expect(page.locator('[data-task="ask-epoch"]')).to_have_class(re.compile(r"\bdone\b"))
    for n in range(STEPS - 1, -1, -1):
        page.click("#back-button")
        at_step(page, n)
    expect(page.locator("#replica-lanes")).to_contain_text("No topic yet")


def test_the_truncation_is_narrated_in_the_step_that_draws_it(page: Page, live_server_url):
    open_lesson(page, live_server_url)
    load(page, "hw")
    page.locator("#step-button").focus()
    for n in range(1, ELECTION + 1):
        page.keyboard.press("ArrowRight")
        at_step(page, n)
        if n == 1:
            # The stage folds what the engine did under the step's sentence: open it once.
            page.locator("#step-happened-box summary").click()
            page.locator("#step-button").focus()
        said = page.locator("#step-happened").inner_text()
        cut = page.locator("#lane-2 .le-ghost").count()
        # The narration says B truncated exactly when the lanes show the cut.
        assert ("broker 2 truncated" in said) == (cut > 0), (n, said)
    assert lane_values(page, 2) == ["m1"]
    expect(page.locator("#lane-1")).to_contain_text("DOWN")
    page.keyboard.press("ArrowLeft")
    at_step(page, ELECTION - 1)
    expect(page.locator("#step-timeline")).not_to_contain_text(f"Step {ELECTION} of")


def test_fault_buttons_crash_the_leader_and_a_new_one_is_elected(page: Page, live_server_url):
    open_lesson(page, live_server_url)
    load(page, "epoch")
    page.click("#step-button")
    at_step(page, 1)
    page.click("#step-button")
    at_step(page, 2)
    # Pick A (broker 1, the leader) by clicking its box, then crash it.
    page.locator("#cl-broker-1").click()
    expect(page.locator("#broker-pick")).to_have_value("1")
    expect(page.locator("#restart-button")).to_have_attribute("aria-disabled", "true")
    page.click("#crash-button")
    expect(page.locator("#cluster-text")).to_contain_text("Broker 1 (A): DOWN")
    at_step(page, 3, 3)    # the rest of the scenario was dropped: the learner's command is step 3
    for _ in range(5):
        page.click("#advance-button")
    expect(page.locator('[data-task="own-crash"]')).to_have_class(re.compile(r"\bdone\b"))
    expect(page.locator("#cluster-text")).to_contain_text("Broker 2 (B): up")
    expect(page.locator("#cluster-text")).to_contain_text("leads t-0")
    # Restarting a running broker is refused by the engine; the words appear by the buttons.
    page.select_option("#broker-pick", "2")
    page.locator("#restart-button").focus()
    page.keyboard.press("Enter")
    expect(page.locator("#broker-error")).to_contain_text("running")
    # A one-way link cut is drawn with its direction.
    page.select_option("#link-form select[name=both]", "false")
    page.click("#cut_link-button")
    expect(page.locator("#cluster")).to_contain_text("1→2")


def test_quiz_answer_points_at_the_lanes(page: Page, live_server_url):
    open_lesson(page, live_server_url)
    quiz = page.locator("#quiz-stale-hw")
    quiz.locator("input[value='0']").check()
    quiz.get_by_role("button", name="Answer").click()
    expect(quiz.locator(".quiz-feedback")).to_contain_text("Not quite.")
    quiz.locator("input[value='1']").check()
    quiz.get_by_role("button", name="Answer").click()
    expect(quiz.locator(".quiz-feedback")).to_contain_text("Right.")
    expect(page.locator("#replica-lanes")).to_have_class(re.compile(r"\bkv-pointed\b"))


def test_produce_with_every_broker_down_does_not_claim_success(page: Page, live_server_url):
    open_lesson(page, live_server_url)
    load(page, "epoch")
    for n in range(1, 5):
        page.click("#step-button")
        at_step(page, n)
    for b in ("0", "1", "2"):
        page.select_option("#broker-pick", b)
        page.click("#crash-button")
        expect(page.locator("#cluster-text")).to_contain_text(f"Broker {b}")
    page.click("#produce-button")
    expect(page.locator("#ack")).not_to_contain_text("Sent")
    page.click("#advance-button")
    expect(page.locator("#verdict")).to_contain_text("No broker leads the partition now")


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_phone_width_has_no_horizontal_overflow(browser, live_server_url, lang):
    context = browser.new_context(viewport={"width": 390, "height": 844})
    page = context.new_page()
    try:
        page.goto(live_server_url + f"/lessons/leader-epoch/?lang={lang}")
        expect(page.locator("#conn-status")).to_have_attribute("data-state", "open")
        for _ in range(4):
            page.click("#step-button")
        expect(page.locator("#lane-1")).to_be_visible()
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        if lang == "zh":
            expect(page.locator("#crash-button")).to_have_text("崩溃")
    finally:
        context.close()


def test_share_link_and_exported_file_reproduce_the_run_in_a_fresh_browser(page: Page, browser, live_server_url):
    open_lesson(page, live_server_url)
    load(page, "hw", "kip101-divergence")
    for n in range(1, 9):                    # to "B restarts first" (12 steps, 15 commands)
        page.click("#step-button")
        at_step(page, n, 12)
    page.locator("#run-tools summary").click()
    page.click("#share-button")
    link = page.locator("#share-link")
    expect(link).to_have_value(re.compile(r"\?run=[A-Za-z0-9_-]{8}$"))
    with page.expect_download() as dl:
        page.click("#export-button")
    path = dl.value.path()
    seen = {b: lane_values(page, b) for b in (1, 2)}
    text = page.locator("#cluster-text").inner_text()

    for how in ("link", "file"):
        context = browser.new_context()
        other = context.new_page()
        try:
            if how == "link":
                other.goto(link.input_value())
            else:
                other.goto(live_server_url + "/lessons/leader-epoch/")
                expect(other.locator("#conn-status")).to_have_attribute("data-state", "open")
                other.locator("#run-tools summary").click()
                other.set_input_files("#import-file", path)
            other.wait_for_timeout(1500)
            assert other.locator("#general-error").inner_text() + other.locator("#open_shared-error").inner_text() + other.locator("#import-error").inner_text() == "", how
            at_step(other, 8, 12)
            expect(other.locator("#trunc-hw")).to_be_checked()
            expect(other.locator("#scenario-select")).to_have_value("kip101-divergence")
            expect(other.locator("#cluster-text")).to_have_text(text)
            assert {b: lane_values(other, b) for b in (1, 2)} == seen
        finally:
            context.close()


def test_a_tampered_share_link_says_so(page: Page, live_server_url):
    page.goto(live_server_url + "/lessons/leader-epoch/?run=AAAAAAAA")
    expect(page.locator("#open_shared-error")).to_contain_text("share link is unknown")
    expect(page.locator("#conn-status")).to_have_attribute("data-state", "open")
    page.click("#step-button")
    at_step(page, 1)
