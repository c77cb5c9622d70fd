"""Lessons 8, 9 and 11 in a real browser: their scenarios stepped forwards to the end and
back to the start, a try-it done through the fault buttons and forms, a quiz question, and
what the diagrams show (the leader's HW arithmetic, LEO/HW per replica, the chart, ISR
badges, the produce table with a lost acknowledged write, the controller, epochs)."""
from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from .test_storage_lessons import answer, back_to_start, open_lesson, page, step, task_done  # noqa: F401 (fixture)

# Each walk takes 10-16 s on this box; they run in CI, as the course's proof that every lesson walks.
pytestmark = pytest.mark.browser


def load(page: Page, scenario: str, total: int) -> None:
    page.select_option("#scenario-select", scenario)
    expect(page.locator("#step-counter")).to_have_text(f"Start · 0/{total}")


def test_lesson8_fetch_loop_hw_arithmetic_chart_and_own_produce(page: Page, live_server_url):
    open_lesson(page, live_server_url, "replication")
    for n in range(1, 4):
        step(page, n, 9)
    # m1 is on the leader only: its LEO 1, remote LEOs 0, so HW 0
    expect(page.locator("#hw-leo-0")).to_contain_text("1 (own)")
    expect(page.locator("#hw-remote-1")).to_contain_text("0 (remote)")
    expect(page.locator("#hw-formula")).to_contain_text("min(1, 0, 0) = 0")
    step(page, 4, 9)
    step(page, 5, 9)                                   # the followers' next fetch carries offset 1
    expect(page.locator("#hw-remote-1")).to_contain_text("1 (remote)")
    expect(page.locator("#hw-formula")).to_contain_text("= 1")
    expect(page.locator("#rpc-plot .main-svg").first).to_be_visible()
    for n in range(6, 10):
        step(page, n, 9)
    expect(page.locator("#rpc-caption")).to_contain_text("broker 2: LEO 3, HW 3")
    back_to_start(page, 9)

    for n in range(1, 10):
        step(page, n, 9)
    page.fill("#produce-form input[name=value]", "mine")
    page.click("#produce-button")
    for _ in range(2):
        page.click("#advance-button")
        page.wait_for_timeout(300)
    task_done(page, "own-produce")
    expect(page.locator("#rpc-caption")).to_contain_text("broker 1: LEO 4, HW 4")
    # pause broker 2's fetching, then an acks=all produce waits for it
    page.select_option("#broker-pick", "2")
    page.click("#pause_follower-button")
    page.click("#produce-button")
    page.click("#advance-button")
    task_done(page, "paused-waits")
    expect(page.locator("#hw-formula")).to_contain_text("min(5, 5, 4) = 4")
    answer(page, "hw", 1, "hw-calc")


def test_lesson9_acks_compared_flags_the_lost_acks1_write(page: Page, live_server_url):
    open_lesson(page, live_server_url, "isr-and-acks")
    load(page, "acks-compared", 11)
    for n in range(1, 6):
        step(page, n, 11)
    expect(page.locator("#pr-3")).to_contain_text("acknowledged at offset 2")   # 'one', acks=1
    expect(page.locator("#pr-4")).to_contain_text("waiting")                    # 'all', acks=all
    expect(page.locator("#pr-2")).to_contain_text("no answer")                  # 'zero', acks=0
    for n in range(6, 12):
        step(page, n, 11)
    expect(page.locator("#pr-3")).to_have_class(re.compile(r"\bpr-lost\b"))
    expect(page.locator("#pr-3 .pr-now")).to_contain_text("LOST")
    expect(page.locator("#pr-4")).to_contain_text("REQUEST_TIMED_OUT")
    expect(page.locator("#pr-4")).not_to_have_class(re.compile(r"\bpr-lost\b"))
    task_done(page, "acks1-lost")
    back_to_start(page, 11)
    expect(page.locator("#pr-table tbody")).to_contain_text("No produce request yet")

    load(page, "isr-shrink-acks-all", 14)
    for n in range(1, 10):
        step(page, n, 14)
    expect(page.locator("#pr-table")).to_contain_text("NOT_ENOUGH_REPLICAS")
    task_done(page, "not-enough")
    load(page, "follower-slow-out-of-isr", 5)
    for n in range(1, 4):
        step(page, n, 5)
    task_done(page, "drop-out")
    expect(page.locator("#replica-lanes")).to_contain_text("not in ISR")
    answer(page, "all", 1, "produce-results")


def test_lesson11_clean_then_unclean_election_and_own_crash(page: Page, live_server_url):
    open_lesson(page, live_server_url, "leader-election")
    for n in range(1, 6):
        step(page, n, 10)
    expect(page.locator("#lanes-text")).to_contain_text(re.compile(r"[Ll]eader: Broker 2\b.*epoch 1"))
    task_done(page, "clean")
    back_to_start(page, 10, at=5)
    expect(page.locator("#lanes-text")).not_to_contain_text("epoch 1")

    load(page, "unclean-election-loss", 12)
    for n in range(1, 13):
        step(page, n, 12)
    expect(page.locator("#verdict")).to_contain_text("m2")
    expect(page.locator("#verdict")).to_contain_text("m3")
    task_done(page, "unclean")
    # the learner's own fault: crash the current leader (broker 2) with the fault buttons
    page.select_option("#broker-pick", "2")
    page.click("#crash-button")
    expect(page.locator("#cluster-text")).to_contain_text("Broker 2: DOWN")
    load(page, "controller-failover", 10)
    for n in range(1, 11):
        step(page, n, 10)
    task_done(page, "controller")
    answer(page, "which", 1, "cluster")


def test_a_consumer_in_lesson_10_reads_only_below_the_hw_and_the_lanes_mark_what_it_read(page: Page, live_server_url,
                                                                                         tmp_path):
    open_lesson(page, live_server_url, "leader-epoch")
    expect(page.locator("#lanes-consumer")).to_contain_text("No consumer has read this partition yet")
    for _ in range(3):                                   # m1 sent and committed: HW 1
        page.click("#step-button")
    expect(page.locator("#step-counter")).to_contain_text("Step 3 of")
    page.fill("#consume-form input[name=offset]", "0")
    page.click("#consume-button")
    expect(page.locator("#lanes-consumer")).to_contain_text(re.compile(r"read 1 record\(s\) from offset 0 .* HW was 1"))
    expect(page.locator(".le-read").first).to_contain_text("◆")        # a mark beside the colour: read by the consumer
    page.fill("#consume-form input[name=offset]", "5")
    page.click("#consume-button")                                         # past the HW: refused, nothing read
    expect(page.locator("#consume-error")).to_contain_text("offset")
    for width in (1366, 390):
        page.set_viewport_size({"width": width, "height": 900})
        page.locator("#lanes-consumer").scroll_into_view_if_needed()
        page.screenshot(path=str(tmp_path / f"consumer-{width}.png"))
