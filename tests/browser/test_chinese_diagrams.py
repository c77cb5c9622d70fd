"""Chinese pages draw their diagrams in Chinese: open lessons with ?lang=zh, walk the guided
steps (crashes, recovery, fetches, truncations, placements, produce results), and read
everything the diagrams show a learner or a screen reader -- visible text, SVG <title> and
<desc>, title and aria-label attributes. No English word may be left, beside Kafka's own
terms and the names and values the engine's state carries (file names, topics, records)."""
from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from tests.browser.test_frame_protocol import wait_for
from tests.browser.test_storage_lessons import page  # noqa: F401 - a fresh session at 1366 px, reduced motion

pytestmark = pytest.mark.browser

# Kafka's terms that Chinese pages keep as they are (beside the shapes IDENTIFIER names).
TERMS = {
    "Kafka", "leader", "follower", "epoch", "broker", "Broker", "acks", "fsync", "sendfile", "socket", "Fetch", "Produce",
    "murmur2", "deleted", "index", "timeindex", "snapshot", "txnindex", "range", "roundrobin", "sticky",
}
# Config names (retention.bytes), request and state names (JoinGroup, PreparingRebalance), error
# codes (NOT_ENOUGH_REPLICAS) and hyphenated names (cooperative-sticky, cleaner-offset-checkpoint).
IDENTIFIER = re.compile(r"[a-z0-9]+(?:[.-][a-z0-9]+)+|(?:[A-Z][a-z0-9]+){2,}|[A-Z0-9]+(?:_[A-Z0-9]+)+")

# Every text a diagram gives a person or a screen reader.
COLLECT = """(ids) => {
  const out = [];
  ids.forEach((id) => {
    const root = document.getElementById(id);
    if (!root) return;
    out.push(root.innerText);
    root.querySelectorAll("title, desc").forEach((n) => out.push(n.textContent));
    root.querySelectorAll("[title], [aria-label]").forEach((n) => {
      out.push(n.getAttribute("title") || ""); out.push(n.getAttribute("aria-label") || "");
    });
  });
  return out.join("\\n");
}"""

# Names and values in the engine's state (no spaces: identifiers, not prose).
STATE_WORDS = """() => {
  const out = new Set();
  (function walk(v) {
    if (typeof v === "string") { if (!/\\s/.test(v)) out.add(v); }
    else if (Array.isArray(v)) v.forEach(walk);
    else if (v && typeof v === "object") Object.values(v).forEach(walk);
  })(KV.lastFrame && KV.lastFrame.state);
  return Array.from(out);
}"""


def open_zh(page: Page, url: str, slug: str) -> None:
    page.goto(f"{url}/lessons/{slug}/?lang=zh")
    expect(page.locator("#conn-status")).to_have_attribute("data-state", "open")
    wait_for(page, "window.KV && KV.lastFrame && KV.lastFrame.state && KV.lastFrame.state.run")


def step_to(page: Page, n: int) -> None:
    page.click("#step-button")
    wait_for(page, f"KV.lastFrame.state.run.step === {n}")


def english_left(page: Page, ids: list[str], seen: set[str]) -> list[str]:
    text = page.evaluate(COLLECT, ids)
    data = set(page.evaluate(STATE_WORDS))
    left = []
    for word in re.findall(r"[A-Za-z][A-Za-z0-9_.#'-]*[A-Za-z0-9]", text):
        word = word.strip(".")
        if not re.search(r"[A-Za-z]{4,}", word) or word in TERMS or word in data or IDENTIFIER.fullmatch(word):
            continue
        if re.fullmatch(r"\d{20}\.\w+(\.deleted)?|[\w.-]+-\d+|broker-\d+", word):   # file, partition, dir names
            continue
        if any(word in d for d in data):                   # part of a value (e.g. "order-3" → "order")
            continue
        left.append(word)
    seen.update(text.split("\n"))
    return left


LESSONS = {
    # slug: (diagram element ids, steps to walk, a scenario to load first or None)
    "flush-and-page-cache": (["page-cache"], 8, None),
    "leader-epoch": (["replica-lanes", "lanes-arrows", "lanes-text", "cluster", "epoch-cache"], 12, None),
    "topics-partitions-offsets": (["topic-view"], 5, None),
    "isr-and-acks": (["produce-results", "replica-lanes", "lanes-arrows", "cluster"], 14, "acks-compared"),
    "leader-election": (["produce-results", "replica-lanes", "lanes-arrows", "cluster"], 16, "unclean-election-loss"),
    "retention": (["partition-dir", "retention-chart"], 6, None),
    "replication": (["replica-lanes", "lanes-arrows", "hw-calc", "replication-chart", "cluster"], 12, None),
    "compaction": (["compaction", "partition-dir"], 8, None),
    "committing-offsets": (["consumer-group", "lag-chart"], 10, None),
    "offset-index": (["segment-strip"], 4, None),
    "time-index": (["segment-strip"], 5, None),
    "idempotence-and-transactions": (["txn-log", "txn-producers", "txn-coordinator", "txn-group-offsets", "txn-reads"],
                                     18, None),
}


@pytest.mark.parametrize("slug", sorted(LESSONS))
def test_a_chinese_page_shows_no_english_in_its_diagrams(page: Page, live_server_url, slug):
    ids, steps, scenario = LESSONS[slug]
    open_zh(page, live_server_url, slug)
    if scenario:
        page.select_option("#scenario-select", scenario)
        wait_for(page, f"KV.lastFrame.state.scenario && KV.lastFrame.state.scenario.name === '{scenario}'"
                       " && KV.lastFrame.state.run.step === 0")
    seen: set[str] = set()
    left: dict[int, list[str]] = {}
    for n in range(1, steps + 1):
        if page.get_attribute("#step-button", "aria-disabled") == "true":
            break
        step_to(page, n)
        words = english_left(page, ids, seen)
        if words:
            left[n] = words
    assert not left, left
    assert re.search(r"[\u4e00-\u9fff]", "\n".join(seen))    # the diagrams did draw (Chinese) text
