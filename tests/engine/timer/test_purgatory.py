"""Delayed operations: complete once, by condition or by timeout."""
from __future__ import annotations

from engine.timer import DelayedOperation, DelayedOperationPurgatory, SystemTimer


class WaitForHW(DelayedOperation):
    """A DelayedProduce in miniature: done when the partition's HW reaches ``required``."""

    def __init__(self, partition, required, timeout_ms, results):
        super().__init__(timeout_ms, name=f"produce@{required}")
        self.partition, self.required, self.results = partition, required, results

    def try_complete(self):
        if self.partition["hw"] >= self.required:
            return self.force_complete()
        return False

    def on_expiration(self):
        self.results.append(("expired", self.required))

    def on_complete(self):
        self.results.append(("timed_out" if self.expired else "none", self.required))


def test_an_operation_whose_condition_holds_completes_without_waiting():
    timer = SystemTimer(0)
    purgatory = DelayedOperationPurgatory("produce", timer)
    results = []
    op = WaitForHW({"hw": 5}, 3, 1_000, results)
    assert purgatory.try_complete_else_watch(op, ["t-0"]) is True
    assert results == [("none", 3)] and timer.size() == 0 and purgatory.watched() == 0


def test_check_and_complete_finishes_it_when_the_hw_moves_and_cancels_its_timeout():
    timer = SystemTimer(0)
    purgatory = DelayedOperationPurgatory("produce", timer)
    part, results = {"hw": 0}, []
    op = WaitForHW(part, 3, 1_000, results)
    assert purgatory.try_complete_else_watch(op, ["t-0"]) is False
    assert purgatory.watched("t-0") == 1 and timer.size() == 1
    part["hw"] = 2
    assert purgatory.check_and_complete("t-0") == 0
    part["hw"] = 3
    assert purgatory.check_and_complete("t-0") == 1
    assert results == [("none", 3)] and timer.size() == 0 and purgatory.watched() == 0
    timer.advance_to(5_000)
    assert results == [("none", 3)]          # completed exactly once


def test_the_timeout_expires_an_operation_that_never_completes():
    timer = SystemTimer(0)
    purgatory = DelayedOperationPurgatory("produce", timer)
    results = []
    purgatory.try_complete_else_watch(WaitForHW({"hw": 0}, 3, 1_000, results), ["t-0", "t-1"])
    timer.advance_to(999)
    assert results == []
    timer.advance_to(1_000)
    assert results == [("expired", 3), ("timed_out", 3)]
    assert purgatory.check_and_complete("t-1") == 0 and purgatory.watched() == 0


def test_purge_drops_completed_operations_from_watcher_lists():
    timer = SystemTimer(0)
    purgatory = DelayedOperationPurgatory("fetch", timer, purge_interval=3)
    part, results = {"hw": 0}, []
    for i in range(3):
        purgatory.try_complete_else_watch(WaitForHW(part, 1, 100, results), ["a", "b"])
    timer.advance_to(100)                     # all three expire; watcher lists still hold them
    assert purgatory.watched() == 0 and sum(len(v) for v in purgatory.watchers.values()) == 6
    assert purgatory.purge() == 6 and purgatory.watchers == {}
