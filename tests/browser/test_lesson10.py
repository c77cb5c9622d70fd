"""Lesson 10 in a real browser: run the KIP-101 data-loss scenario under both truncation
rules with the step buttons and the arrow keys, step back once, and read the final
replica lanes as a person sees them: m2 gone under the HW rule, kept with leader epochs."""
from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from engine.cluster.scenarios import get_scenario

pytestmark = pytest.mark.browser

SCENARIO = get_scenario("kip101-data-loss")
STEPS = len(SCENARIO.steps)
# The step after which the controller has elected B, A being down (the step after "crash broker 1").
ELECTION = 2 + max(i for i, s in enumerate(SCENARIO.steps) if s.command["cmd"] == "crash" and s.command["broker"] == 1)


def lane_values(page: Page, broker: int) -> list[str]:
    # Ghost cells (cut away in this step) are drawn struck through; they are not in the log.
    return page.locator(f"#lane-{broker} g.le-cell:not(.le-ghost) text.le-cell-value").all_text_contents()


def at_step(page: Page, n: int) -> None:
    expect(page.locator("#step-counter")).to_have_text(f"Step {n} of {STEPS}", timeout=15000)


def open_lesson(page: Page, url: str) -> None:
    page.goto(url + "/lessons/leader-epoch/")
    expect(page.locator("#conn-status")).to_have_attribute("data-state", "open")
    expect(page.locator("#step-counter")).to_have_text(re.compile(r"^Step \d+ of \d+$"))


def run_data_loss(page: Page, rule: str) -> None:
    page.select_option("#scenario-select", "kip101-data-loss")
    page.check(f"#trunc-{rule}")
    page.click("#load-button")
    at_step(page, 0)
    expect(page.locator("#mode-label")).to_contain_text("high-watermark" if rule == "hw" else "leader-epoch")
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


def test_data_loss_under_hw_loses_m2_and_under_epoch_keeps_it(page: Page, live_server_url):
    open_lesson(page, live_server_url)
    run_data_loss(page, "hw")
    assert lane_values(page, 1) == ["m1", "m3"]
    assert lane_values(page, 2) == ["m1", "m3"]
    expect(page.locator("#verdict")).to_contain_text("Acknowledged but lost: m2")
    expect(page.locator("#replica-lanes")).to_contain_text("✗ LOST")

    run_data_loss(page, "epoch")
    assert lane_values(page, 1) == ["m1", "m2", "m3"]
    assert lane_values(page, 2) == ["m1", "m2", "m3"]
    expect(page.locator("#verdict")).to_contain_text("Every acknowledged record is in the leader's log")
    expect(page.locator("#replica-lanes")).not_to_contain_text("LOST")
    expect(page.locator("#epoch-cache-1")).to_contain_text("start offset")


def test_step_back_with_the_left_arrow_shows_the_earlier_lanes(page: Page, live_server_url):
    open_lesson(page, live_server_url)
    page.select_option("#scenario-select", "kip101-data-loss")
    page.check("#trunc-hw")
    page.click("#load-button")
    at_step(page, 0)
    page.locator("#step-button").focus()
    for n in range(1, ELECTION + 1):
        page.keyboard.press("ArrowRight")
        at_step(page, n)
    # After the election B leads without m2 (it cut m2 back at its stale HW); A is down.
    assert lane_values(page, 2) == ["m1"]
    expect(page.locator("#lane-1")).to_contain_text("down")
    # The truncation of this step is drawn: m2 cut from B's lane, with the rule that cut it.
    expect(page.locator("#lane-2 .le-ghost")).to_have_count(1)
    expect(page.locator("#lane-2 .le-ghost")).to_contain_text("m2")
    expect(page.locator("#lane-2")).to_contain_text("truncated 2 → 1 (hw)")
    page.keyboard.press("ArrowLeft")
    at_step(page, ELECTION - 1)
    assert lane_values(page, 2) == ["m1", "m2"]
    expect(page.locator("#step-timeline")).not_to_contain_text(f"Step {ELECTION}:")


def test_restarting_a_running_broker_shows_the_refusal_beside_the_buttons(page: Page, live_server_url):
    open_lesson(page, live_server_url)
    expect(page.locator("#restart-1")).to_have_attribute("aria-disabled", "true")
    page.locator("#restart-1").focus()   # aria-disabled keeps it focusable; the server says why
    page.keyboard.press("Enter")
    expect(page.locator("#broker-error")).to_contain_text("Broker 1 is running")
    page.click("#crash-1")
    expect(page.locator("#cluster-text")).to_contain_text("Broker 1: down")
    expect(page.locator("#restart-1")).not_to_have_attribute("aria-disabled", "true")
