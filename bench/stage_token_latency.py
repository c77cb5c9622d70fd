"""Click -> the first message token moving on the stage (issue 17's goal: p99 <= 50 ms), on the
cluster lessons whose steps send the most messages: 8 (replication), 13 (committing offsets)
and 14 (idempotence and transactions: three brokers side by side, where flow.js plans each
token's path so no label covers another on the way). A headless Chromium (Debian's) presses
Step to the end, then Back to the start, and again, on pages daphne serves; the page times
each click to its first new token whose animation runs without a delay (the MutationObserver
in bench_click_latency.TIMED_TOKEN). Clicks whose step sent nothing are left out.

Rounds alternate the lessons (paired: each round measures every lesson under the same
load), gc between turns; medians of the rounds' p50 and p99 are printed with the load
average beside each figure.

    .venv/bin/python bench/stage_token_latency.py [--clicks 40] [--rounds 3]
"""
from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_click_latency import GOAL_P99_MS, measure_tokens, pct, served_browser  # noqa: E402

LESSONS = ("/lessons/replication/", "/lessons/committing-offsets/", "/lessons/idempotence-and-transactions/")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--clicks", type=int, default=40)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    got: dict[str, list[tuple[float, float, int, float]]] = {path: [] for path in LESSONS}
    with served_browser("kafkaviz-stage-bench-") as (url, browser):
        page = browser.new_page(viewport={"width": 1366, "height": 800})
        for r in range(args.rounds):
            order = LESSONS if r % 2 == 0 else tuple(reversed(LESSONS))
            for path in order:
                gc.collect()
                load = os.getloadavg()[0]
                ms = measure_tokens(page, url, path, args.clicks)
                got[path].append((statistics.median(ms), pct(ms, 99), len(ms), load))
    print(f"click -> first token moving, {args.rounds} rounds of {args.clicks} clicks at 1366x800 "
          f"(goal p99 <= {GOAL_P99_MS:.0f} ms)")
    for path, rounds in got.items():
        p50 = statistics.median(x[0] for x in rounds)
        p99 = statistics.median(x[1] for x in rounds)
        sent = sum(x[2] for x in rounds)
        loads = ", ".join(f"{x[3]:.1f}" for x in rounds)
        print(f"  {path:40} p50 {p50:6.1f} ms   p99 {p99:6.1f} ms (median of rounds)   {sent} clicks sent messages   "
              f"load {loads}   {'met' if p99 <= GOAL_P99_MS else 'NOT met'}")


if __name__ == "__main__":
    main()
