"""The frame protocol in a real browser (static/js/live.js): diffs against the last
whole state are applied before diagrams see a frame, and a diff whose base the page
lost makes it ask for a snapshot ("sync") and recover."""
from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.browser


def wait_for(page: Page, expression: str, timeout_s: float = 10) -> None:
    """Poll a JS expression from Python (Playwright's wait_for_function evaluates its
    predicate with eval, which the page's CSP forbids, rightly)."""
    for _ in range(int(timeout_s / 0.05)):
        if page.evaluate(f"() => Boolean({expression})"):
            return
        page.wait_for_timeout(50)
    raise AssertionError(f"timed out waiting for {expression}")


def open_lesson(page: Page, url: str) -> None:
    page.goto(url + "/lessons/segments/")
    expect(page.locator("#conn-status")).to_have_attribute("data-state", "open")
    wait_for(page, "window.KV && KV.lastFrame && KV.lastFrame.snapshot === true")


def produce(page: Page, sent_before: int, count: int) -> None:
    page.fill("input[name=count]", str(count))
    page.click("#produce-button")
    wait_for(page, f"KV.lastFrame && KV.lastFrame.state.messages_sent === {sent_before + count}")


def test_diff_frames_are_applied_and_a_lost_base_is_recovered_with_a_snapshot(page: Page, live_server_url):
    open_lesson(page, live_server_url)
    sent = page.evaluate("KV.lastFrame.state.messages_sent")
    produce(page, sent, 1)          # the first frame after a watcher attached is whole
    produce(page, sent + 1, 2)      # then diffs
    frame = page.evaluate("KV.lastFrame")
    assert frame["full"] is False and "diff" in frame and frame["state"]["partitions"][0]["log_end_offset"] >= 3
    assert page.locator("#clock").text_content().strip() == f"{frame['state']['clock_ms'] / 1000:.1f} s"

    # A diff against a whole state this page never got (as if that frame was dropped).
    page.evaluate("""KV.dispatch({type: "frame", kind: "segments", frame_seq: KV.lastFrame.frame_seq + 1000,
                                  mode: "live", reset: false, snapshot: false, events: [], skipped: 0,
                                  full: false, base: 987654, diff: {s: {messages_sent: -1}}})""")
    wait_for(page, "KV.lastFrame.snapshot === true")
    state = page.evaluate("KV.lastFrame.state")
    assert state["messages_sent"] == sent + 3            # the bogus diff was never applied
    produce(page, sent + 3, 1)                            # and the page follows the sandbox again


def test_a_new_generation_is_taken_whole_even_when_its_numbers_restart(page: Page, live_server_url):
    """A sandbox rebuilt by another process after its owner died numbers its frames from 1
    again under a new generation (docs/web.md "Failover"): the page takes the new
    generation's whole state at once (as a snapshot), asks for one if the first frame it sees
    is a diff, and drops stragglers of the generation it left."""
    open_lesson(page, live_server_url)
    sent = page.evaluate("KV.lastFrame.state.messages_sent")
    produce(page, sent, 1)
    produce(page, sent + 1, 1)
    old = page.evaluate("KV.lastFrame")
    assert old["gen"] and old["frame_seq"] >= 2
    # The new owner's first whole state, numbered 1: taken, as a snapshot.
    page.evaluate("""(() => { const f = JSON.parse(JSON.stringify(KV.lastFrame));
        f.gen = "feedface"; f.frame_seq = 1; f.full = true; f.snapshot = false; delete f.base; delete f.diff;
        f.state.messages_sent = 4242; KV.dispatch(f); })()""")
    wait_for(page, "KV.lastFrame.state.messages_sent === 4242 && KV.lastFrame.snapshot === true")
    # A straggler of the old generation (a high number) is not taken any more.
    page.evaluate("""(() => { const f = JSON.parse(JSON.stringify(KV.lastFrame));
        f.gen = "%s"; f.frame_seq = 999; f.snapshot = false; f.state.messages_sent = 1; KV.dispatch(f); })()"""
                  % old["gen"])
    page.wait_for_timeout(100)
    assert page.evaluate("KV.lastFrame.state.messages_sent") == 4242
    # Another generation whose first frame is a diff: the page asks for a snapshot (the real
    # sandbox's, with its own generation, which the page takes again).
    page.evaluate("""KV.dispatch({type: "frame", kind: "segments", gen: "0badcafe", frame_seq: 3, mode: "live",
                                  reset: false, snapshot: false, events: [], skipped: 0, full: false, base: 2,
                                  diff: {s: {messages_sent: -1}}})""")
    wait_for(page, "KV.lastFrame.snapshot === true && KV.lastFrame.gen === '%s'" % old["gen"])
    produce(page, sent + 2, 1)
