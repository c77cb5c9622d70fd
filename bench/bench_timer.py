"""The timing wheel against ``heapq``: 100,000 timers scheduled and expired.

    python bench/bench_timer.py [--quick]

Two workloads, each run by both peers in paired, interleaved rounds (wheel, heap, wheel,
heap, ...); medians with min and max:

* expire-all: 100,000 timers with delays drawn from one seeded RNG (1 ms – 160 s, so the
  wheel uses four levels), then time advanced in 1 ms..2 s hops until every timer fired;
* purgatory: the same timers, 90 % cancelled before they expire (most delayed produces
  complete when the HW moves, long before ``request.timeout.ms``), the rest expired.

The peer is the structure a Python program would use: a ``heapq`` of (due, id) entries
with lazy cancellation, built with the same callbacks. Goal: none set by the issue; this
is the figure lesson 15 quotes. Kafka's wheel wins on O(1) insert and cancel in Java; in
CPython ``heapq`` is C code, so the ratio says what the model costs us, not Kafka.
"""
from __future__ import annotations

import heapq
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.timer import SystemTimer  # noqa: E402

N = 100_000


def _workload(seed: int):
    rng = random.Random(seed)
    delays = [rng.choice((rng.randint(1, 20), rng.randint(1, 400), rng.randint(1, 8_000), rng.randint(1, 160_000)))
              for _ in range(N)]
    hops = []
    t = 0
    while t < 170_000:
        step = rng.randint(1, 2_000)
        t += step
        hops.append(t)
    cancel = rng.sample(range(N), N * 9 // 10)
    return delays, hops, cancel


def wheel(delays, hops, cancel) -> int:
    fired = [0]

    def fire():
        fired[0] += 1
    timer = SystemTimer(0)
    tasks = [timer.add(d, fire) for d in delays]
    for i in cancel:
        timer.cancel(tasks[i])
    for t in hops:
        timer.advance_to(t)
    return fired[0]


def heap(delays, hops, cancel) -> int:
    fired = [0]

    def fire():
        fired[0] += 1
    h, cancelled = [], set()
    for i, d in enumerate(delays):
        heapq.heappush(h, (d, i, fire))
    for i in cancel:
        cancelled.add(i)
    for t in hops:
        while h and h[0][0] <= t:
            _, i, fn = heapq.heappop(h)
            if i not in cancelled:
                fn()
    return fired[0]


def paired(rounds: int, args) -> tuple[list[float], list[float], int, int]:
    ours, peer = [], []
    for _ in range(rounds):
        start = time.perf_counter()
        a = wheel(*args)
        ours.append(time.perf_counter() - start)
        start = time.perf_counter()
        b = heap(*args)
        peer.append(time.perf_counter() - start)
    return ours, peer, a, b


def _fmt(xs: list[float]) -> str:
    return f"median {statistics.median(xs) * 1000:7.1f} ms (min {min(xs) * 1000:.1f}, max {max(xs) * 1000:.1f})"


def main() -> None:
    rounds = 3 if "--quick" in sys.argv else 7
    delays, hops, cancel = _workload(15)
    for label, cancel_list in (("expire-all", []), ("purgatory (90% cancelled)", cancel)):
        ours, peer, a, b = paired(rounds, (delays, hops, cancel_list))
        assert a == b, f"the peers disagree: wheel fired {a}, heap fired {b}"
        ratio = statistics.median(peer) / statistics.median(ours)
        print(f"{label}: {N:,} timers, {a:,} fired, {rounds} paired rounds")
        print(f"  timing wheel  {_fmt(ours)}")
        print(f"  heapq         {_fmt(peer)}")
        print(f"  wheel speed vs heapq: {ratio:.2f}x  (goal: none set; informational)")


if __name__ == "__main__":
    main()
