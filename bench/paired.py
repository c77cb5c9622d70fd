"""Paired, interleaved timing rounds: the one measuring method every ``bench/`` script uses.

A round times each contender once, one after another, in an order that rotates from round
to round; a figure is the median over rounds (with min and max) of the per-round ratio, so a
noisy neighbour on a shared machine slows both sides of one comparison alike and a single
slow round cannot move the result.

    rounds = paired({"ours": f, "peer": g}, rounds=9, min_seconds=0.2, work=100)
    line("encode", rounds, "ours", "peer", goal=">= 2x", higher_is_better=True)
"""
from __future__ import annotations

import statistics
import time
from typing import Callable

__all__ = ["paired", "rate", "Figure", "figure", "print_figure", "timed"]


def timed(fn: Callable[[], object], min_seconds: float) -> float:
    """Seconds per call of ``fn``, calling it until ``min_seconds`` have passed."""
    calls, elapsed = _run(fn, min_seconds)
    return elapsed / calls


def _run(fn: Callable[[], object], min_seconds: float) -> tuple[int, float]:
    calls = 0
    start = time.perf_counter()
    while True:
        fn()
        calls += 1
        elapsed = time.perf_counter() - start
        if elapsed >= min_seconds:
            return calls, elapsed


def paired(fns: dict[str, Callable[[], object]], rounds: int, min_seconds: float,
           slices: int = 10) -> dict[str, list[float]]:
    """Seconds per call of each function in each round. A round gives each function
    ``min_seconds`` in ``slices`` turns that alternate between the functions (the order
    rotating every turn), so load from other processes falls on both sides of a ratio alike."""
    names = list(fns)
    out: dict[str, list[float]] = {n: [] for n in names}
    turn = 0
    for _ in range(rounds):
        calls = dict.fromkeys(names, 0)
        spent = dict.fromkeys(names, 0.0)
        for _ in range(slices):
            k = turn % len(names)
            turn += 1
            for n in names[k:] + names[:k]:
                c, e = _run(fns[n], min_seconds / slices)
                calls[n] += c
                spent[n] += e
        for n in names:
            out[n].append(spent[n] / calls[n])
    return out


def rate(seconds: list[float], work: float) -> list[float]:
    """Per-round rates (``work`` units per call) from per-round seconds per call."""
    return [work / s for s in seconds]


class Figure:
    """One benchmark figure: per-round values, their median/min/max, the goal and whether it is met."""

    def __init__(self, name: str, values: list[float], unit: str, goal: str, met: bool | None) -> None:
        self.name, self.values, self.unit, self.goal, self.met = name, values, unit, goal, met
        self.median = statistics.median(values)
        self.low, self.high = min(values), max(values)

    def text(self) -> str:
        fmt = _fmt(self.unit)
        verdict = "" if self.met is None else ("  MET" if self.met else "  NOT MET")
        return (f"{self.name}: {fmt(self.median)} (min {fmt(self.low)}, max {fmt(self.high)}, "
                f"{len(self.values)} rounds)  goal {self.goal}{verdict}")


def _fmt(unit: str) -> Callable[[float], str]:
    if unit == "x":
        return lambda v: f"{v:.2f}x"
    if unit == "%":
        return lambda v: f"{v:.1f} %"
    if unit == "us":
        return lambda v: f"{v:.1f} us"
    return lambda v: f"{v:,.0f} {unit}"


def figure(name: str, values: list[float], unit: str, goal: str, at_least: float | None = None,
           at_most: float | None = None) -> Figure:
    """A figure whose median is checked against ``at_least`` / ``at_most`` (None: no goal)."""
    med = statistics.median(values)
    met = None
    if at_least is not None:
        met = med >= at_least
    if at_most is not None:
        met = med <= at_most if met is None else (met and med <= at_most)
    return Figure(name, values, unit, goal, met)


def print_figure(fig: Figure) -> Figure:
    print("  " + fig.text(), flush=True)
    return fig
