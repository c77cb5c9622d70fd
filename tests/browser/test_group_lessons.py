"""Lessons 6, 12 and 13 in a real browser: each walked forwards to the end and back to the
start, try-its done through the page's forms, a quiz question answered, and what the diagrams
show checked against the engine's results (compaction keeps the latest value per key with gaps
in the offsets and a tombstone that later goes; a partition is never shared inside a group and
a fourth consumer sits idle; a crash after processing re-delivers records, shown ×2).
Screenshots at 1366 and 390 px go to the temp dir (``KAFKAVIZ_SHOTS`` to choose)."""
from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from .test_storage_lessons import answer, back_to_start, open_lesson, page, step, task_done  # noqa: F401 (fixture)

pytestmark = [pytest.mark.browser]
SHOTS = Path(os.environ.get("KAFKAVIZ_SHOTS", tempfile.gettempdir()))


def shoot(page: Page, name: str) -> None:
    page.screenshot(path=str(SHOTS / f"{name}-{page.viewport_size['width']}.png"), full_page=True)


def walk(page: Page, total: int) -> None:
    for n in range(1, total + 1):
        step(page, n, total)


def test_lesson6_compaction_walk_try_its_and_quiz(page: Page, live_server_url):
    open_lesson(page, live_server_url, "compaction")
    step(page, 1, 5)
    expect(page.locator("#cp-now-s0 .cp-rec")).to_have_count(5)          # 0..4 in the first segment
    step(page, 2, 5)                                                      # first pass
    expect(page.locator("#cp-now-s0 .cp-rec")).to_have_count(3)           # latest fig, apple, pear only
    expect(page.locator("#cp-now-r2")).to_have_text("2 fig=30")
    expect(page.locator("#cp-now-s0 .cp-gap").first).to_have_text("⋯ 0–1")  # offsets keep their gaps
    expect(page.locator("#cp-before-s0 .cp-rec")).to_have_count(5)        # before/after side by side
    expect(page.locator("#cp-point")).to_contain_text("offset 5")
    expect(page.locator("#cp-map-apple")).to_have_text("apple → 3")
    step(page, 3, 5)
    expect(page.locator("#cp-meter-words")).to_contain_text("above")
    step(page, 4, 5)
    expect(page.locator("#cp-now-r6")).to_contain_text("pear ✝")          # the tombstone survives this pass
    step(page, 5, 5)
    expect(page.locator("#cp-now-r6")).to_have_count(0)                   # gone after delete.retention.ms
    names = page.locator("#pd-fig-0 text.pd-name")                        # the swapped-in segment and its old twin
    expect(names.filter(has_text=re.compile(r"^00000000000000000010\.log$"))).to_have_count(1)
    expect(names.filter(has_text=re.compile(r"^00000000000000000010\.log\.deleted$"))).to_have_count(1)
    shoot(page, "lesson6")
    back_to_start(page, 5)
    expect(page.locator("#cp-now .cp-rec")).to_have_count(0)

    # try-its through the forms: an old value removed, then a clean head too big for the dirty tail
    def put(key, value):
        page.fill("#cp-key", key)
        page.fill("#cp-value", value)
        page.click("#cp-put-button")
        expect(page.locator("#ack")).to_contain_text(f"Wrote {key}={value}")

    for i in range(10):
        put(f"k{i}", "1")
    put("k0", "2")                                                          # k0 again: offset 10, active segment
    put("k1", "2")
    put("k2", "2")
    put("k3", "2")
    put("k4", "2")                                                          # rolls: 10..14 dirty
    put("k5", "2")
    page.click("#cp-clean-button")
    task_done(page, "old-value")
    expect(page.locator("#cp-now-r0")).to_have_count(0)                     # k0=1 superseded by offset 10
    for i in range(5):
        put(f"n{i}", "1")                                                   # one more segment: a small dirty tail
    page.click("#cp-clean-button")
    expect(page.locator("#ack")).to_contain_text("Not cleaned")
    task_done(page, "not-dirty-enough")
    # bad input: a key with a space is refused next to the form, nothing written
    page.fill("#cp-key", "two words")
    page.click("#cp-put-button")
    expect(page.locator("#put-error")).to_contain_text("Key must be printable ASCII without spaces")
    answer(page, "gaps", 1, "cp-now")


def test_lesson12_groups_walk_idle_member_rebalance_and_quiz(page: Page, live_server_url):
    open_lesson(page, live_server_url, "consumer-groups")
    total = 13
    for n in range(1, 8):
        step(page, n, total)
    # three consumers, three partitions: one owner each, shown by name and pattern
    owners = [page.locator(f"#cg-p-{p}").get_attribute("data-owner") for p in range(3)]
    assert sorted(owners) == ["c1", "c2", "c3"]
    step(page, 8, total)
    step(page, 9, total)
    expect(page.locator("#cg-consumers .cg-idle")).to_have_count(1)       # the fourth has nothing
    owners = [page.locator(f"#cg-p-{p}").get_attribute("data-owner") for p in range(3)]
    assert len(set(owners)) == 3
    expect(page.locator("#cg-protocol")).to_contain_text("SyncGroup")
    for n in range(10, total + 1):
        step(page, n, total)
    expect(page.locator("#cg-head")).to_contain_text("generation 6")
    expect(page.locator("#cg-consumers .cg-dead")).to_have_count(2)       # c2 crashed, c1 closed
    expect(page.locator("#cg-c-c1")).to_contain_text("left the group")
    shoot(page, "lesson12")
    back_to_start(page, total)
    expect(page.locator("#cg-empty")).to_be_visible()

    # the round-robin assignor on the same group, then the learner's own consumer joins
    page.select_option("#scenario-select", "group-roundrobin")
    expect(page.locator("#step-counter")).to_have_text(f"Start · 0/{total}")
    for n in range(1, 6):
        step(page, n, total)
    expect(page.locator("#cg-head")).to_contain_text("assignor roundrobin")
    assert [page.locator(f"#cg-p-{p}").get_attribute("data-owner") for p in range(3)] == ["c1", "c2", "c1"]
    page.fill("#cg-join-name", "mine")
    page.click("#cg-join-button")
    page.select_option("#cg-advance-ms", "3000")
    page.click("#cg-advance-button")
    task_done(page, "rebalance-join")
    expect(page.locator("#cg-head")).to_contain_text("generation 3")
    page.fill("#cg-join-name", "spare")                                    # a fourth consumer for three partitions
    page.click("#cg-join-button")
    page.click("#cg-advance-button")
    task_done(page, "idle")
    expect(page.locator("#cg-c-spare")).to_have_class(re.compile(r"\bcg-idle\b"))
    page.select_option("#cg-pick", "mine")
    page.click("#cg-crash-button")
    page.select_option("#cg-advance-ms", "7000")
    page.click("#cg-advance-button")
    task_done(page, "session-timeout")
    expect(page.locator("#cg-c-mine")).to_have_class(re.compile(r"\bcg-dead\b"))
    expect(page.locator("#cg-c-spare")).not_to_have_class(re.compile(r"\bcg-idle\b"))   # the spare took over
    answer(page, "range", 0, "cg-parts")


def test_lesson13_commits_duplicates_losses_lag_and_quiz(page: Page, live_server_url):
    open_lesson(page, live_server_url, "committing-offsets")
    total = 16
    walk(page, total)
    # at-least-once: 10..14 were handed to the group twice
    for o in range(10, 15):
        expect(page.locator(f"#lc-0-{o}")).to_have_attribute("data-count", "2")
    expect(page.locator("#lc-0-9")).to_have_attribute("data-count", "1")
    expect(page.locator("#cg-p-0")).to_have_attribute("data-committed", "15")
    expect(page.locator("#lc-plot .main-svg").first).to_be_visible()
    shoot(page, "lesson13")
    back_to_start(page, total)

    page.select_option("#scenario-select", "commit-before-processing")
    expect(page.locator("#step-counter")).to_have_text("Start · 0/18")
    walk(page, 18)
    for o in range(10, 15):
        expect(page.locator(f"#lc-0-{o}")).to_have_attribute("data-count", "1")   # never processed again: lost
    answer(page, "losses", 1, "consumer-group")

    # try-its: produce (lag grows), poll, commit, crash, rejoin
    page.click("#cg-produce-button")
    page.select_option("#cg-advance-ms", "1000")
    page.click("#cg-advance-button")
    task_done(page, "lag")
    expect(page.locator("#cg-p-0")).to_have_attribute("data-lag", "3")
    page.select_option("#cg-pick", "c1")
    page.click("#cg-poll-button")
    page.click("#cg-commit-button")
    page.click("#cg-advance-button")
    task_done(page, "commit")
    expect(page.locator("#cg-p-0")).to_have_attribute("data-lag", "0")
    page.click("#cg-crash-button")
    page.select_option("#cg-advance-ms", "7000")
    page.click("#cg-advance-button")
    page.fill("#cg-join-name", "c1")
    page.click("#cg-join-button")
    page.select_option("#cg-advance-ms", "1000")
    page.click("#cg-advance-button")
    page.select_option("#cg-pick", "c1")
    page.click("#cg-poll-button")
    task_done(page, "resume")


@pytest.mark.parametrize("slug", ["compaction", "consumer-groups", "committing-offsets"])
def test_phone_width_screenshots(browser, live_server_url, slug):
    context = browser.new_context(reduced_motion="reduce", viewport={"width": 390, "height": 844})
    pg = context.new_page()
    try:
        open_lesson(pg, live_server_url, slug)
        total = int(re.search(r"/(\d+)", pg.locator("#step-counter").inner_text()).group(1))
        for n in range(1, min(total, 10) + 1):
            step(pg, n, total)
        width = pg.evaluate("document.documentElement.scrollWidth")
        assert width <= 392, f"{slug} is {width} px wide at 390 px"
        shoot(pg, slug)
        blocks = pg.locator("section.diagram-block")
        for i in range(blocks.count()):          # each diagram on its own, to look at closely
            blocks.nth(i).screenshot(path=str(SHOTS / f"{slug}-390-block{i}.png"))
    finally:
        context.close()


def test_lesson12_in_chinese_narrates_the_protocol_in_chinese(page: Page, live_server_url):
    page.goto(f"{live_server_url}/lessons/consumer-groups/?lang=zh")
    expect(page.locator("#conn-status")).to_have_attribute("data-state", "open")
    for _ in range(6):
        page.click("#step-button")
    expect(page.locator("#cg-head")).to_contain_text("消费组 billing")
    expect(page.locator("#cg-protocol")).to_contain_text("JoinGroup")
    expect(page.locator("#cg-protocol")).to_contain_text("消费组")
    shoot(page, "lesson12-zh")
