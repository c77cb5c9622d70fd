"""A burst of messages reaches the browser as a bounded number of frames and ends in the
engine's state (issue 6, "Must show").

Lesson 2's sandbox, its quotas raised for this server only (production keeps 5,000
messages, 50 a command): the learner sends the burst through the produce form, a few
commands of many messages each. The page counts what came over the socket
(``KV.received`` in static/js/live.js). The bound: the server's pacer lets at most one
frame leave per FRAME_INTERVAL_MS once a burst is under way (the first after a quiet
spell leaves at once), so over ``t`` ms a browser gets at most ``1 + t / FRAME_INTERVAL_MS``
frames, each with at most MAX_EVENTS_PER_FRAME events; every other event is counted in
"skipped", never lost without a word. The diagram's final state is compared with the same
commands run on a second engine in this process (the engine is deterministic)."""
from __future__ import annotations

import re
import tempfile
import time
from pathlib import Path

import pytest
from django.conf import settings
from playwright.sync_api import Page, expect

from kafkaviz.lessons.content import load_content
from kafkaviz.live.kinds import Limits, get_kind

from .conftest import daphne_server
from .test_frame_protocol import wait_for

pytestmark = pytest.mark.browser

FRAME_INTERVAL_MS = settings.KAFKAVIZ_RUNTIME["FRAME_INTERVAL_MS"]
MAX_EVENTS_PER_FRAME = settings.KAFKAVIZ_RUNTIME["MAX_EVENTS_PER_FRAME"]
PER_COMMAND = 10_000


@pytest.fixture(scope="module")
def burst_server(tmp_path_factory):
    with daphne_server(tmp_path_factory.mktemp("kafkaviz-burst"), {
            "KAFKAVIZ_MAX_SANDBOXES_PER_ADDRESS": "0", "KAFKAVIZ_MAX_CONNECTIONS_PER_ADDRESS": "0",
            "KAFKAVIZ_MAX_MESSAGES": "100000", "KAFKAVIZ_MAX_MESSAGES_PER_COMMAND": str(PER_COMMAND),
            "KAFKAVIZ_MAX_DISK_BYTES": str(64 * 1024 * 1024)}) as url:
        yield url


def received(page: Page) -> dict:
    return page.evaluate("() => Object.assign({}, KV.received)")


def engine_after(commands: int, value_size: int) -> dict:
    """Partition 0 of lesson 2's engine after the same produce commands, how many events
    the engine emitted, and how many of them opened it (the page's snapshot shows those as
    history; no frame carries them again)."""
    lesson = load_content("segments", "en")
    with tempfile.TemporaryDirectory() as tmp:
        engine = get_kind("segments")(Path(tmp), seed=1, limits=Limits(10 ** 6, 1 << 30), lesson=lesson)
        try:
            opening = engine.events.seq
            for _ in range(commands):
                engine.run.apply({"cmd": "produce", "partition": 0, "count": PER_COMMAND, "value_size": value_size})
            part = engine.state()["partitions"][0]
            return {"part": part, "events": engine.events.seq, "opening": opening,
                    "names": sorted(f["name"] for f in part["files"])}
        finally:
            engine.close()


def burst(page: Page, url: str, commands: int) -> None:
    value_size = 20
    page.goto(url + "/lessons/segments/")
    expect(page.locator("#conn-status")).to_have_attribute("data-state", "open")
    wait_for(page, "window.KV && KV.lastFrame && KV.lastFrame.snapshot === true")
    page.fill("input[name=value_size]", str(value_size))
    base = received(page)
    t0 = time.monotonic()
    for i in range(commands):
        page.fill("input[name=count]", str(PER_COMMAND))
        page.click("#produce-button")
        last = (i + 1) * PER_COMMAND - 1
        expect(page.locator("#ack")).to_contain_text(f"–{last}.", timeout=60_000)
    # The frame with the burst's end follows the last ack at once or one interval later.
    wait_for(page, f"/log end offset {commands * PER_COMMAND}\\b/.test("
                   "document.getElementById('pd-sub-0').textContent)", timeout_s=10)
    page.wait_for_timeout(3 * FRAME_INTERVAL_MS)   # nothing more is on its way
    elapsed_ms = (time.monotonic() - t0) * 1000
    got = {k: v - base.get(k, 0) for k, v in received(page).items()}
    got["maxEvents"] = received(page)["maxEvents"]

    want = engine_after(commands, value_size)
    messages = commands * PER_COMMAND
    # Bounded: the pacer's bound, and in practice about one frame per command.
    assert got["frames"] <= 1 + elapsed_ms / FRAME_INTERVAL_MS, (got, elapsed_ms)
    assert got["frames"] <= 2 * commands + 2, got
    assert got["maxEvents"] <= MAX_EVENTS_PER_FRAME
    # Every event the engine emitted after the page's snapshot is either carried or counted
    # as skipped (plus one run_moved marker per command: the learner's command became a step
    # of the run). The opening events are the snapshot's history, not a frame's.
    assert want["events"] > 2 * messages and want["opening"] > 0
    assert got["events"] + got["skipped"] == want["events"] - want["opening"] + commands, (got, want)

    # The diagram shows the engine's final state.
    part = want["part"]
    sub = page.locator("#pd-sub-0").text_content()
    assert f"log start offset {part['log_start_offset']} " in sub, sub
    assert f"log end offset {part['log_end_offset']} " in sub, sub
    assert part["log_end_offset"] == messages
    n = len(part["segments"])
    assert re.search(rf"\b{n} segments?\b", sub), sub
    shown = sorted(page.locator("#pd-svg-0 g.pd-row:not(.pd-leave)").evaluate_all(
        "gs => gs.map(g => g.dataset.name)"))
    assert shown == want["names"]
    assert f"{part['active_segment']:020d}.log" in shown
    # Partition 1 had nothing.
    expect(page.locator("#pd-sub-1")).to_contain_text("log end offset 0")


def test_ten_thousand_messages_arrive_as_a_few_frames(page: Page, burst_server):
    burst(page, burst_server, commands=1)


@pytest.mark.slow
def test_hundred_thousand_messages_arrive_as_a_bounded_number_of_frames(page: Page, burst_server):
    burst(page, burst_server, commands=10)
