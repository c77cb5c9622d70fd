"""Lessons 1, 3, 4, 5 and 7 in a real browser, as a learner uses them: walk the guided steps
forwards to the end and back to the start, do each try-it through the page's own forms,
answer a quiz question, and read what the diagrams show (file names, index probes, the scan,
the answer row, .deleted files, the chart, the page cache, the crash report)."""
from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

# Each walk takes 5-16 s on this box; they run in CI; the smoke test below
# keeps one lesson's lookup in the default run.
pytestmark = pytest.mark.browser


@pytest.fixture
def page(browser):
    # Each test gets its own session (its own sandbox) and reduced motion, so a lookup's
    # replay lands on its answer at once and the step list carries every step.
    context = browser.new_context(reduced_motion="reduce", viewport={"width": 1366, "height": 900})
    pg = context.new_page()
    yield pg
    context.close()


def open_lesson(page: Page, url: str, slug: str) -> None:
    page.goto(f"{url}/lessons/{slug}/")
    expect(page.locator("#conn-status")).to_have_attribute("data-state", "open")
    expect(page.locator("#step-counter")).to_contain_text("0/")


def step(page: Page, n: int, total: int) -> None:
    page.click("#step-button")
    expect(page.locator("#step-counter")).to_have_text(f"Step {n} of {total}")


def back_to_start(page: Page, total: int, at: int | None = None) -> None:
    for n in range((total if at is None else at) - 1, -1, -1):
        page.click("#back-button")
        expect(page.locator("#step-counter")).to_have_text(f"Step {n} of {total}" if n else f"Start · 0/{total}")


def task_done(page: Page, task: str) -> None:
    expect(page.locator(f'[data-task="{task}"]')).to_have_class(re.compile(r"\bdone\b"))


def answer(page: Page, quiz: str, choice: int, points_at: str) -> None:
    form = page.locator(f"#quiz-{quiz}")
    form.locator(f'input[name="answer"][value="{choice}"]').check()
    form.locator("button[type=submit]").click()
    expect(form.locator(".quiz-feedback")).to_contain_text("Right.")
    expect(page.locator(f"#{points_at}")).to_have_class(re.compile(r"\bkv-pointed\b"))


def row(page: Page, position: int):
    return page.locator(f'#segment-strip tr.ss-row[data-position="{position}"]')


# ---- lesson 3 ------------------------------------------------------------------------------
def test_lesson3_steps_lookup_probes_and_scan_back_and_try_its(page: Page, live_server_url):
    open_lesson(page, live_server_url, "offset-index")
    step(page, 1, 6)
    expect(page.locator("#segment-strip tr.ss-row")).to_have_count(14)
    expect(page.locator("#segment-strip tr.ss-row.has-index")).to_have_count(6)   # every second batch
    expect(row(page, 340).locator("td.col-index")).to_contain_text("2 → 340")
    step(page, 2, 6)
    expect(page.locator("#ss-file-14")).to_contain_text("00000000000000000014.log (active)")
    step(page, 3, 6)                                   # lookup of offset 19
    expect(page.locator("#ss-lookup-title")).to_have_text("Lookup of offset 19")
    expect(page.locator("#ss-file-14")).to_have_class(re.compile(r"\bchosen\b"))
    expect(page.locator("#ss-file-0")).to_have_class(re.compile(r"\bcandidate\b"))
    expect(row(page, 850)).to_have_class(re.compile(r"\banswer\b"))
    steps = page.locator("#ss-steps li")
    expect(steps).to_have_count(6)                     # segment, 2 probes, 2 scanned batches, answer
    steps.nth(1).click()                               # first binary-search probe: entry #1 (18 → 680)
    expect(row(page, 680)).to_have_class(re.compile(r"\bprobe-index\b"))
    expect(row(page, 680).locator("td.col-pos")).to_have_attribute("data-mark", "probe →")
    steps.nth(2).click()                               # second probe: entry #2 (20 → 1020), go left
    expect(row(page, 1020)).to_have_class(re.compile(r"\bprobe-index\b"))
    steps.nth(3).click()                               # the scan starts where the floor entry points
    expect(row(page, 680)).to_have_class(re.compile(r"\bscan\b"))
    steps.nth(4).click()
    expect(row(page, 850)).to_have_class(re.compile(r"\bhit\b"))
    step(page, 4, 6)                                   # offset 5 in the older segment
    expect(page.locator("#ss-file-0")).to_have_class(re.compile(r"\bchosen\b"))
    step(page, 5, 6)
    step(page, 6, 6)
    expect(page.locator("#ss-lookup-title")).to_have_text("Lookup of offset 29")
    expect(page.locator("#ss-steps li.step-scan")).to_have_count(1)   # the dense index points at its batch
    back_to_start(page, 6)
    expect(page.locator("#segment-strip tr.ss-row")).to_have_count(0)
    expect(page.locator("#ss-lookup")).to_be_hidden()

    # try-its through the forms
    page.fill("#produce-form input[name=count]", "24")
    page.click("#produce-button")
    expect(page.locator("#ss-file-14")).to_be_visible()
    page.fill("#lookup-offset-form input[name=offset]", "5")
    page.click("#lookup-offset-button")
    expect(page.locator("#ss-lookup-title")).to_have_text("Lookup of offset 5")
    task_done(page, "scan-past-entry")
    task_done(page, "older-segment")
    page.select_option("#interval-form select[name=bytes]", "64")
    page.click("#interval-button")
    page.fill("#produce-form input[name=count]", "10")
    page.click("#produce-button")
    task_done(page, "dense-index")
    # bad input: an offset the log does not hold, explained next to the form
    page.fill("#lookup-offset-form input[name=offset]", "999")
    page.click("#lookup-offset-button")
    expect(page.locator("#lookup-offset-error")).to_contain_text("is not in the log")
    answer(page, "steps", 1, "ss-files")


# ---- lesson 4 ------------------------------------------------------------------------------
def test_lesson4_four_steps_between_entries_and_past_the_end(page: Page, live_server_url):
    open_lesson(page, live_server_url, "time-index")
    step(page, 1, 5)
    step(page, 2, 5)                                   # timestamp 1850
    expect(page.locator("#ss-lookup-title")).to_have_text("Lookup of timestamp 1850")
    expect(page.locator("#ss-file-14")).to_have_class(re.compile(r"\bchosen\b"))
    expect(page.locator("#ss-steps li.step-tprobe").first).to_contain_text(".timeindex probe 1")
    expect(page.locator('#segment-strip tr.ss-row[data-first="18"]')).to_have_class(re.compile(r"\banswer\b"))
    expect(page.locator("#ss-steps li.step-answer")).to_contain_text("Answer: offset 18 (timestamp 1900)")
    step(page, 3, 5)
    step(page, 4, 5)
    expect(page.locator("#ss-steps li.step-answer")).to_contain_text("Answer: offset 0")
    step(page, 5, 5)                                   # past the end
    expect(page.locator("#ss-steps li.step-answer")).to_contain_text("offset -1")
    back_to_start(page, 5)

    page.fill("#produce-form input[name=count]", "24")
    page.click("#produce-button")
    expect(page.locator("#ss-file-14")).to_be_visible()
    page.fill("#lookup-time-form input[name=timestamp]", "650")
    page.click("#lookup-time-button")
    task_done(page, "time-between")
    task_done(page, "time-older-segment")
    page.fill("#lookup-time-form input[name=timestamp]", "500000")
    page.click("#lookup-time-button")
    task_done(page, "time-past-end")
    answer(page, "floor", 1, "ss-steps")


# ---- lesson 1 ------------------------------------------------------------------------------
def test_lesson1_keys_sticky_batches_and_two_consumers(page: Page, live_server_url):
    open_lesson(page, live_server_url, "topics-partitions-offsets")
    step(page, 1, 5)
    keyed = page.locator("#topic-view .tv-cells .tv-cell")
    expect(keyed).to_have_count(6)
    parts_with_records = [p for p in range(3) if page.locator(f"#tv-cells-{p} .tv-cell").count()]
    assert len(parts_with_records) == 1
    expect(page.locator(f"#tv-cells-{parts_with_records[0]} .tv-off").first).to_have_text("0")
    expect(page.locator("#tv-placements li").first).to_contain_text("murmur2")
    step(page, 2, 5)
    step(page, 3, 5)
    expect(page.locator("#tv-placements")).to_contain_text("was full, stick to")
    step(page, 4, 5)
    step(page, 5, 5)
    expect(page.locator("#tv-verdict")).to_contain_text("same (offset) order")
    expect(page.locator("#tv-verdict")).to_contain_text("overall orders differ")
    back_to_start(page, 5)
    expect(page.locator("#topic-view .tv-cells .tv-cell")).to_have_count(0)

    page.fill("#produce-form input[name=count]", "5")
    page.select_option("#produce-form select[name=key_mode]", "fixed")
    page.click("#produce-button")
    task_done(page, "same-key")
    page.fill("#produce-form input[name=count]", "20")
    page.select_option("#produce-form select[name=key_mode]", "none")
    page.click("#produce-button")
    task_done(page, "sticky-switch")
    for c in "AB":
        page.fill(f"#poll-{c}-form input[name=max_records]", "50")
        for _ in range(3):
            page.click(f"#poll-{c}-button")
            page.wait_for_timeout(150)
    task_done(page, "orders-differ")
    answer(page, "order", 1, "tv-verdict")


# ---- lesson 5 ------------------------------------------------------------------------------
def test_lesson5_size_delete_records_time_and_the_chart(page: Page, live_server_url):
    open_lesson(page, live_server_url, "retention")
    names = page.locator("#pd-svg-0 text.pd-name")
    step(page, 1, 6)
    expect(page.locator("#pd-svg-0 text.pd-name", has_text="00000000000000000015.log")).to_have_count(1)
    step(page, 2, 6)                                   # size pass: segment 0 renamed .deleted
    expect(page.locator("#pd-svg-0 text.pd-name", has_text="00000000000000000000.log.deleted")).to_have_count(1)
    step(page, 3, 6)
    step(page, 4, 6)                                   # log start offset pass: segment 5 goes
    expect(page.locator("#pd-svg-0 text.pd-name", has_text="00000000000000000005.log.deleted")).to_have_count(1)
    step(page, 5, 6)                                   # file.delete.delay.ms: gone from disk
    expect(page.locator("#pd-svg-0 text.pd-name", has_text=".deleted")).to_have_count(0)
    step(page, 6, 6)                                   # all expired: roll first, then delete
    expect(page.locator("#pd-svg-0 text.pd-name", has_text="00000000000000000020.log")).to_have_count(1)
    expect(page.locator("#rc-plot .main-svg").first).to_be_visible()   # plotly drew the chart
    expect(page.locator("#rc-caption")).to_contain_text("retention.bytes is 2000")
    back_to_start(page, 6)
    expect(names.filter(has_text="00000000000000000000.log")).to_have_count(1)

    page.fill("#produce-form input[name=count]", "20")
    page.click("#produce-button")
    page.select_option("#advance-form select[name=ms]", "5000")
    page.click("#advance-button")
    task_done(page, "by-size")
    page.fill("#delete-records-form input[name=offset]", "12")
    page.click("#delete-records-button")
    page.click("#advance-button")
    task_done(page, "by-start")
    page.select_option("#advance-form select[name=ms]", "65000")
    page.click("#advance-button")
    task_done(page, "by-time")
    task_done(page, "gone")
    page.fill("#delete-records-form input[name=offset]", "1")
    page.click("#delete-records-button")
    expect(page.locator("#delete-records-error")).to_contain_text("only moves the log start offset forward")
    answer(page, "consumed", 1, "timeline")


# ---- lesson 7 ------------------------------------------------------------------------------
def test_lesson7_power_loss_torn_batch_kill_and_sendfile(page: Page, live_server_url):
    open_lesson(page, live_server_url, "flush-and-page-cache")
    step(page, 1, 8)
    expect(page.locator("#pc-file-rows tr.is-dirty").first).to_be_visible()   # bytes in the page cache only
    step(page, 2, 8)
    expect(page.locator("#pc-status")).to_have_text("✕ Broker down")
    step(page, 3, 8)
    expect(page.locator("#pc-report")).to_contain_text("12 acknowledged record(s) lost")
    step(page, 4, 8)
    expect(page.locator("#pc-page-1")).to_have_attribute("aria-label", re.compile("page cache only|partly on disk"))
    expect(page.locator(".pc-batch.torn")).to_have_count(2)          # one batch, drawn on both pages it spans
    step(page, 5, 8)
    expect(page.locator("#pc-report")).to_contain_text("Recovery found a torn batch and cut")
    step(page, 6, 8)
    step(page, 7, 8)
    expect(page.locator("#pc-report")).to_contain_text("no acknowledged record lost")
    step(page, 8, 8)
    expect(page.locator("#pc-fetch")).to_contain_text("sendfile(00000000000000000000.log")
    expect(page.locator(".pc-sendfile").first).to_be_visible()
    back_to_start(page, 8)

    page.fill("#produce-form input[name=count]", "3")
    page.click("#produce-button")
    page.click("#power-loss-button")
    expect(page.locator("#pc-status")).to_have_text("✕ Broker down")
    page.click("#produce-button")                       # refused while down: a message, not a crash
    expect(page.locator("#produce-error")).to_contain_text("The broker is down")
    page.click("#restart-button")
    task_done(page, "lose-unflushed")
    page.click("#produce-button")
    page.click("#kill-button")
    page.click("#restart-button")
    task_done(page, "process-kill")
    answer(page, "kill", 1, "pc-report")


def test_plotly_is_fetched_only_when_a_chart_comes_near_the_screen(browser, live_server_url):
    """A lesson page's first load leaves plotly out (~490 KB compressed): on a short phone
    screen the retention chart is far below, and the script is fetched once the reader
    scrolls towards it; the chart is then drawn from the latest frame."""
    context = browser.new_context(viewport={"width": 390, "height": 500})
    page = context.new_page()
    try:
        open_lesson(page, live_server_url, "retention")
        step(page, 1, 6)
        expect(page.locator("#rc-caption")).to_contain_text("retention.bytes is 2000")   # the caption needs no plotly
        assert page.locator('script[src*="plotly"]').count() == 0
        expect(page.locator("#rc-plot .main-svg")).to_have_count(0)
        page.locator("#retention-chart").scroll_into_view_if_needed()
        expect(page.locator("#rc-plot .main-svg").first).to_be_visible()
        assert page.locator('script[src*="plotly"]').count() == 1
    finally:
        context.close()
