"""ProduceWaiter: the one place coordinators wait for their own appends' outcomes
(group offsets and metadata, transaction state, transactional offsets)."""
from __future__ import annotations

from types import SimpleNamespace

from engine.clock import Scheduler
from engine.cluster.produce_wait import ProduceWaiter


def _cluster():
    return SimpleNamespace(scheduler=Scheduler(), produce_results={})


def test_handlers_run_once_in_request_order_lane_by_lane_and_the_task_stops_when_nothing_waits():
    c = _cluster()
    seen = []
    w = ProduceWaiter(c, "writes", lanes=2, after=lambda: seen.append("after"))
    w.watch(7, lambda res, tag: seen.append((tag, res)), "group", lane=1)
    w.watch(9, lambda res, tag: seen.append((tag, res)), "commit-9")
    w.watch(3, lambda res, tag: seen.append((tag, res)), "commit-3")
    assert [t.name for t in c.scheduler.pending()] == ["writes"]
    c.produce_results.update({9: "r9", 7: "r7"})
    c.scheduler.advance(5)
    assert seen == [("commit-9", "r9"), ("group", "r7"), "after"]
    assert w.waiting() == [("commit-3",)] and bool(w)
    c.produce_results[3] = "r3"
    c.scheduler.advance(5)
    assert seen[-2:] == [("commit-3", "r3"), "after"]
    assert not w and w.task is None and c.scheduler.pending() == []


def test_an_id_added_by_an_earlier_lane_is_handled_in_the_same_round_if_its_result_is_there():
    c = _cluster()
    seen = []
    w = ProduceWaiter(c, "writes", lanes=2)
    c.produce_results.update({1: "a", 2: "b"})
    w.watch(1, lambda res: (seen.append(res), w.watch(2, lambda r: seen.append(r), lane=1)))
    c.scheduler.advance(5)
    assert seen == ["a", "b"] and w.task is None


def test_the_three_coordinators_wait_through_it():
    """One home: no coordinator keeps its own polling loop over produce_results."""
    import inspect
    from engine.cluster import consumer, transactions, txn_offsets
    for mod in (consumer, transactions, txn_offsets):
        assert "produce_results" not in inspect.getsource(mod), mod.__name__
        assert "ProduceWaiter(" in inspect.getsource(mod), mod.__name__
