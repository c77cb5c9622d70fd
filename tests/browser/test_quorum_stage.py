"""Lesson 17 in the browser, at 1366x800 and 390x844: the controller nodes are drawn on the
cluster picture within the first screen, and the raft messages of a step travel as tokens
between the nodes that the engine's events name (Vote / PreVote and their answers,
BeginQuorumEpoch, metadata Fetch and its answer)."""
from __future__ import annotations

import pytest
from playwright.sync_api import Browser

from tests.browser.test_stage import TOKENS, WIDTHS, check_stage, fresh, open_lesson, step

pytestmark = pytest.mark.browser

SLUG = "controller-quorum"
CONTROLLERS = {"100", "101", "102"}
# The step whose events hold an election (controller 101 crashed in step 4).
ELECTION_STEP = 5


def seen_tokens(page, ms: int = 4500) -> list[dict]:
    """Every token shown while the step's messages play (they queue over a few seconds)."""
    seen: dict[tuple, dict] = {}
    for _ in range(ms // 100):
        for t in page.evaluate(TOKENS):
            seen[(t["flow"], t["label"], t["from"], t["to"])] = t
        page.wait_for_timeout(100)
    return list(seen.values())


@pytest.mark.parametrize("size", sorted(WIDTHS))
def test_an_election_travels_between_the_controllers_and_out_to_the_brokers(browser: Browser, live_server_url, size):
    ctx, page, errors = fresh(browser, size)
    try:
        open_lesson(page, live_server_url, SLUG)
        # The controllers are on the picture from the start, the active one marked.
        boxes = page.evaluate("""() => Array.from(document.querySelectorAll('#cl-boxes .cl-ctl')).map((n) => {
            const r = n.getBoundingClientRect(); return { id: n.dataset.node, top: r.top, bottom: r.bottom, text: n.textContent }; })""")
        assert {b["id"] for b in boxes} == CONTROLLERS
        vh = WIDTHS[size][1]
        assert all(0 <= b["top"] and b["bottom"] <= vh for b in boxes), boxes
        assert "★" in next(b for b in boxes if b["id"] == "101")["text"]
        while page.evaluate("KV.lastFrame.state.run.step") < ELECTION_STEP - 1:
            step(page)
        step(page)
        tokens = seen_tokens(page)
        flows = {t["flow"] for t in tokens}
        assert {"pre-vote", "vote", "vote-response", "begin-quorum-epoch", "metadata-fetch",
                "metadata-fetch-response"} <= flows, flows
        for t in tokens:
            assert t["label"].strip() and t["from"] != t["to"] and t["nodes"], t
            if t["flow"] in ("pre-vote", "vote", "begin-quorum-epoch"):
                assert t["from"] in CONTROLLERS and t["to"] in CONTROLLERS, t
        # The new leader's epoch is on its box and on its BeginQuorumEpoch.
        state = page.evaluate("KV.lastFrame.state.quorum")
        assert state["active"] == 100 and state["epoch"] == 2
        assert any(t["flow"] == "begin-quorum-epoch" and t["from"] == "100" and t["label"].endswith("e2") for t in tokens)
        # Brokers fetch from the new leader: a metadata Fetch from a broker to controller 100.
        assert any(t["flow"] == "metadata-fetch" and t["from"] in {"0", "1", "2"} and t["to"] == "100" for t in tokens), tokens
        check_stage(page, f"{SLUG} {size} after the election")
        # Under KRaft no decision is pushed: no "metadata" (LeaderAndIsr-like) token ever travels.
        assert "metadata" not in flows
        assert not errors, errors
    finally:
        ctx.close()


def test_the_metadata_log_shows_the_topic_records_and_every_nodes_applied_offset(browser: Browser, live_server_url):
    ctx, page, errors = fresh(browser, "wide")
    try:
        open_lesson(page, live_server_url, SLUG, "zh")
        step(page)
        # The new records leave the active controller at once in the answers to parked fetches ...
        out = {(t["from"], t["to"]): t["label"] for t in seen_tokens(page, 2500) if t["flow"] == "metadata-fetch-response"}
        assert all(out.get(("101", b)) == "10–12 · HW 10" for b in ("0", "1", "2", "100", "102")), out
        step(page)
        # ... and one round of fetches later the HW passes them: that answer is what lets a broker apply them.
        hw = {(t["from"], t["to"]): t["label"] for t in seen_tokens(page, 2500) if t["flow"] == "metadata-fetch-response"}
        assert any(f == "101" and to in ("0", "1", "2") and label == "HW 13" for (f, to), label in hw.items()), hw
        cells = page.evaluate("Array.from(document.querySelectorAll('#metadata-log .ml-cell .ml-type')).map((n) => n.textContent)")
        assert cells[-3:] == ["Topic", "Config", "Partition"], cells
        applied = page.evaluate("Array.from(document.querySelectorAll('#metadata-log .ml-node')).map((n) => n.textContent)")
        assert len(applied) == 6 and all("已应用到 13" in a for a in applied), applied
        assert not errors, errors
    finally:
        ctx.close()


@pytest.mark.parametrize("size", sorted(WIDTHS))
def test_the_snapshot_step_moves_the_log_start_and_the_laggards_fetch_the_snapshot(browser: Browser, live_server_url,
                                                                                    size):
    ctx, page, errors = fresh(browser, size)
    try:
        open_lesson(page, live_server_url, SLUG)
        while page.evaluate("KV.lastFrame.state.run.step") < 14:
            step(page)
        start = page.evaluate("document.querySelector('#metadata-log .ml-start').textContent")
        assert "16" in start and "00000000000000000016-0000000003.checkpoint" in start, start
        while page.evaluate("KV.lastFrame.state.run.step") < 16:
            step(page)
        step(page)
        tokens = seen_tokens(page)
        flows = {(t["flow"], t["from"], t["to"]) for t in tokens}
        # The leader names its snapshot, and 102 and broker 0 download it with FetchSnapshot.
        assert any(t["flow"] == "fetch-snapshot-id" and t["label"] == "SnapshotId 16-3" and t["to"] == "102"
                   for t in tokens), tokens
        for laggard in ("102", "0"):
            assert ("fetch-snapshot", laggard, "100") in flows and ("fetch-snapshot-response", "100", laggard) in flows
        check_stage(page, f"{SLUG} {size} after the snapshot catch-up")
        page.screenshot(path=f"/tmp/kafkaviz-l17-snapshot-{size}.png", full_page=False)
        assert not errors, errors
    finally:
        ctx.close()
