"""The free sandbox in a real browser: build a cluster of one's own shape, break it with
the fault buttons, and fork a lesson's run into it through a share link."""
from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.browser


def test_build_a_cluster_then_crash_two_followers_and_see_acks_all_refused(page: Page, live_server_url):
    page.goto(live_server_url + "/lessons/sandbox/")
    expect(page.locator("#conn-status")).to_have_attribute("data-state", "open")
    page.fill("#shape-form input[name=brokers]", "4")
    page.fill("#shape-form input[name=replication_factor]", "3")
    page.fill("#shape-form input[name=min_insync_replicas]", "2")
    page.click("#shape-button")
    expect(page.locator("#step-counter")).to_have_text("Step 2 of 2")
    expect(page.locator("#cluster-text")).to_contain_text("Broker 3")
    leader = int(re.search(r"Broker (\d+)[^·]*leads t-0", page.locator("#cluster-text").inner_text()).group(1))
    followers = [b for b in range(4) if b != leader][:3]
    crashed = 0
    for b in followers:
        if crashed == 2:
            break
        if "holds a replica" not in page.locator(f"#cl-broker-{b}").text_content():
            continue
        page.select_option("#broker-pick", str(b))
        page.click("#crash-button")
        crashed += 1
    # Long enough for the ISR to shrink even when a crashed follower was the controller
    # (the sandbox's seed, from its random id, decides which brokers those are).
    for _ in range(12):
        page.click("#advance-button")
    page.select_option("#produce-form select[name=acks]", "all")
    page.click("#produce-button")
    page.click("#advance-button")
    expect(page.locator('[data-task="refuse"]')).to_have_class(re.compile(r"\bdone\b"))
    # The impossible shape is refused by the engine, next to the form, and the cluster stays.
    page.fill("#shape-form input[name=brokers]", "2")
    page.click("#shape-button")
    expect(page.locator("#shape-error")).to_contain_text("larger than the number of brokers")
    expect(page.locator("#cluster-text")).to_contain_text("Broker 3")


def test_a_lesson_run_continues_in_the_sandbox(page: Page, live_server_url):
    page.goto(live_server_url + "/lessons/leader-epoch/")
    expect(page.locator("#conn-status")).to_have_attribute("data-state", "open")
    for n in range(1, 5):
        page.click("#step-button")
        expect(page.locator("#step-counter")).to_have_text(f"Step {n} of 13")
    page.locator("#run-tools summary").click()
    page.click("#share-button")
    expect(page.locator("#fork-link")).to_have_attribute("href", re.compile(r"^/sandbox/\?run="))
    page.click("#fork-link")
    expect(page.locator("h1")).to_contain_text("Sandbox")
    expect(page.locator("#step-counter")).to_have_text("Step 4 of 13")
    expect(page.locator("#replica-lanes")).to_contain_text("m1")


def test_a_cluster_with_three_partitions_shows_each_through_the_partition_switch(page: Page, live_server_url):
    page.goto(live_server_url + "/lessons/sandbox/")
    expect(page.locator("#conn-status")).to_have_attribute("data-state", "open")
    expect(page.locator("#partition-form")).to_be_hidden()       # one partition: nothing to switch
    page.fill("#shape-form input[name=partitions]", "3")
    page.click("#shape-button")
    expect(page.locator("#step-counter")).to_have_text("Step 2 of 2")
    expect(page.locator("#partition-form")).to_be_visible()
    expect(page.locator("#partition-select option")).to_have_text(["t-0", "t-1", "t-2"])
    expect(page.locator("#lanes-tp")).to_have_text("t-0")
    # Keyboard only: focus the select, pick t-2 with the arrow keys, Enter submits.
    page.locator("#partition-select").focus()
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    expect(page.locator("#lanes-tp")).to_have_text("t-2")
    expect(page.locator("#ack")).to_have_text("Showing partition t-2.")
    expect(page.locator("#lanes-svg-title")).to_have_text("t-2")
    # Viewing changes nothing in the run: still two steps, and stepping back keeps t-2 shown.
    expect(page.locator("#step-counter")).to_have_text("Step 2 of 2")
    page.click("#produce-button")
    expect(page.locator("#step-counter")).to_have_text("Step 3 of 3")
    expect(page.locator("#lanes-tp")).to_have_text("t-2")
