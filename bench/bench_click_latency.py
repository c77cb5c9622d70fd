"""Click → diagram change over a real WebSocket: a headless Chromium (Debian's) presses
Step / Back on lesson pages served by daphne, and the page itself times from the click
to the moment the diagram's element changed (a MutationObserver). Prints p50 and p99
against the issue's goal (p99 <= 50 ms), and frames per second during a burst of steps.
On the cluster lessons it also times click -> the first message token moving (flow.js;
issue 17's goal: p99 <= 50 ms), over the clicks whose step sent messages.

    .venv/bin/python bench/bench_click_latency.py [--clicks 100]
"""
from __future__ import annotations

import argparse
import json
import os
import secrets
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

from playwright.sync_api import sync_playwright

REPO = Path(__file__).resolve().parents[1]
GOAL_P99_MS = 50.0

# In the page: click a button, resolve with ms until `target` (an element) changes.
TIMED_CLICK = """async ([button, target]) => {
  const node = document.querySelector(target);
  const t0 = performance.now();
  const done = new Promise(resolve => {
    const obs = new MutationObserver(() => { obs.disconnect(); resolve(performance.now() - t0); });
    obs.observe(node, {subtree: true, childList: true, characterData: true, attributes: true});
  });
  document.querySelector(button).click();
  return await done;
}"""


# In the page: click, resolve with ms until a message token of this click is on the cluster
# picture with its animation running (flow.js), or with null when the step sent nothing
# (within 1.5 s). Tokens already there (an earlier step's, still in flight) do not count.
TIMED_TOKEN = """async (button) => {
  const layer = document.getElementById("cl-flow");
  const before = new Set(layer.children);
  const t0 = performance.now();
  const done = new Promise(resolve => {
    const timer = setTimeout(() => { obs.disconnect(); resolve(null); }, 1500);
    const obs = new MutationObserver(() => {
      const moving = Array.from(layer.querySelectorAll("[data-flow]")).some(n => !before.has(n) &&
        n.getAnimations().some(a => a.playState === "running" && (a.currentTime || 0) >= 0 && !(a.effect.getTiming().delay > 0)));
      if (moving) { clearTimeout(timer); obs.disconnect(); resolve(performance.now() - t0); }
    });
    obs.observe(layer, {childList: true});
  });
  document.querySelector(button).click();
  return await done;
}"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve(tmp: str) -> tuple[subprocess.Popen, str]:
    port = free_port()
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "kafkaviz.settings", "KAFKAVIZ_DATA_DIR": f"{tmp}/data",
           "DATABASE_URL": f"sqlite:///{tmp}/db.sqlite3", "KAFKAVIZ_LOG_LEVEL": "WARNING",
           # Production settings (DEBUG off) need a key; this one lives as long as the run.
           "DJANGO_SECRET_KEY": secrets.token_urlsafe(40), "KAFKAVIZ_MAX_SANDBOXES_PER_ADDRESS": "0",
           "KAFKAVIZ_MAX_CONNECTIONS_PER_ADDRESS": "0"}
    subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"], cwd=REPO, env=env, check=True)
    proc = subprocess.Popen([sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port),
                             "kafkaviz.asgi:application"], cwd=REPO, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    for _ in range(100):
        try:
            urllib.request.urlopen(url + "/healthz", timeout=1)
            return proc, url
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise SystemExit("daphne did not start")


@contextmanager
def served_browser(prefix: str):
    """daphne on a temp data dir and Debian's headless chromium: yields (url, browser)."""
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        proc, url = serve(tmp)
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path="/usr/bin/chromium",
                                            args=["--no-sandbox", "--disable-gpu"])
                try:
                    yield url, browser
                finally:
                    browser.close()
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=10)


def poll(page, expression: str, timeout_s: float = 60) -> None:
    """Wait for a JS expression from Python: the page's CSP forbids the eval that
    Playwright's wait_for_function needs."""
    deadline = time.monotonic() + timeout_s
    while not page.evaluate(f"() => Boolean({expression})"):
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {expression}")
        page.wait_for_timeout(5)


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def measure(page, url: str, path: str, target: str, clicks: int) -> list[float]:
    page.goto(url + path)
    page.wait_for_selector("#conn-status[data-state=open]")
    out = []
    forward = True
    for _ in range(clicks):
        counter = page.inner_text("#step-counter")
        at_end = page.get_attribute("#step-button", "aria-disabled") == "true"
        at_start = page.get_attribute("#back-button", "aria-disabled") == "true"
        forward = (forward and not at_end) or at_start
        out.append(page.evaluate(TIMED_CLICK, ["#step-button" if forward else "#back-button", target]))
        poll(page, f"document.querySelector('#step-counter').textContent !== {json.dumps(counter)}")
    return out


def measure_tokens(page, url: str, path: str, clicks: int) -> list[float]:
    """Click -> the first token moving, over the steps that send messages (Step to the end,
    then Back to the start, and again: Back replays the step's own messages too)."""
    page.goto(url + path)
    page.wait_for_selector("#conn-status[data-state=open]")
    out: list[float] = []
    forward = True
    for _ in range(clicks):
        counter = page.inner_text("#step-counter")
        at_end = page.get_attribute("#step-button", "aria-disabled") == "true"
        at_start = page.get_attribute("#back-button", "aria-disabled") == "true"
        forward = (forward and not at_end) or at_start
        ms = page.evaluate(TIMED_TOKEN, "#step-button" if forward else "#back-button")
        if ms is not None:
            out.append(ms)
        poll(page, f"document.querySelector('#step-counter').textContent !== {json.dumps(counter)}")
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--clicks", type=int, default=100)
    args = ap.parse_args()
    with served_browser("kafkaviz-bench-") as (url, browser):
        page = browser.new_page()
        print(f"click -> diagram change over a real WebSocket, {args.clicks} clicks each "
              f"(goal p99 <= {GOAL_P99_MS:.0f} ms; load average {os.getloadavg()[0]:.2f} at the start)")
        for path, target in (("/lessons/segments/", "#partition-dir"),
                             ("/lessons/leader-epoch/", "#cluster")):
            ms = measure(page, url, path, target, args.clicks)
            print(f"  {path:24} p50 {statistics.median(ms):6.1f} ms   p99 {pct(ms, 99):6.1f} ms   "
                  f"{'met' if pct(ms, 99) <= GOAL_P99_MS else 'NOT met'}")
        for path in ("/lessons/replication/", "/lessons/committing-offsets/"):
            ms = measure_tokens(page, url, path, args.clicks)
            print(f"  {path:24} click -> first token moving: p50 {statistics.median(ms):6.1f} ms   "
                  f"p99 {pct(ms, 99):6.1f} ms   ({len(ms)} of {args.clicks} clicks sent messages)   "
                  f"{'met' if pct(ms, 99) <= GOAL_P99_MS else 'NOT met'}")
        # A burst: play at 8x on lesson 10 and count frames the page drew per second.
        page.goto(url + "/lessons/leader-epoch/")
        page.wait_for_selector("#conn-status[data-state=open]")
        # The same session's lesson 10 sandbox is where the clicks above left it (often near its
        # end, where Play has one step left): play from step 0.
        poll(page, "window.KV && KV.lastFrame && KV.lastFrame.state.run")
        page.locator("#scrubber").fill("0")
        page.locator("#scrubber").dispatch_event("change")
        poll(page, "KV.lastFrame.state.run.step === 0")
        page.select_option("#speed", "8")
        before = int(page.evaluate("Number(document.body.dataset.frames || 0)"))
        t0 = time.monotonic()
        page.click("#play-button")
        poll(page, "document.querySelector('#play-button').getAttribute('aria-pressed') === 'false'")
        frames = int(page.evaluate("Number(document.body.dataset.frames || 0)")) - before
        took = time.monotonic() - t0
        # Play stops where the lesson asks "what will happen?" (lesson 10: before step 9).
        where = page.evaluate("[KV.lastFrame.state.run.step, KV.lastFrame.state.run.total, "
                              "!!(document.getElementById('predict-msg') || {}).textContent]")
        print(f"  play at 8x through lesson 10: {frames} frames in {took:.1f} s ({frames / took:.1f} frames/s drawn), "
              f"stopped at step {where[0]} of {where[1]}{' (the lesson asks a question there)' if where[2] else ''}")


if __name__ == "__main__":
    main()
