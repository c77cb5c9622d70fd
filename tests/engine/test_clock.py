import pickle

import pytest

from engine.clock import Scheduler, VirtualClock


def test_clock_refuses_to_go_backwards():
    clock = VirtualClock(100)
    with pytest.raises(ValueError, match="backwards"):
        clock.advance_to(99)
    with pytest.raises(ValueError):
        clock.advance(-1)


def test_tasks_run_in_time_then_priority_then_insertion_order():
    s = Scheduler()
    seen = []
    s.schedule(10, seen.append, "b-late")
    s.schedule(5, seen.append, "a")
    s.schedule(10, seen.append, "b-urgent", priority=-1)
    s.schedule(10, seen.append, "c-late")
    s.advance(10)
    assert seen == ["a", "b-urgent", "b-late", "c-late"]


def test_advance_leaves_clock_exactly_there_and_runs_only_due_tasks():
    s = Scheduler()
    seen = []
    s.schedule(30, seen.append, 30)
    s.advance(29)
    assert seen == [] and s.now_ms() == 29
    s.advance(1)
    assert seen == [30] and s.now_ms() == 30


def test_task_sees_clock_at_its_due_time():
    s = Scheduler()
    seen = []
    s.schedule(7, lambda: seen.append(s.now_ms()))
    s.advance(100)
    assert seen == [7]


def test_periodic_task_repeats_until_cancelled():
    s = Scheduler()
    seen = []
    task = s.schedule_periodic(10, seen.append, "tick")
    s.advance(35)
    assert len(seen) == 3
    s.cancel(task)
    s.advance(100)
    assert len(seen) == 3


def test_periodic_task_that_raises_keeps_its_schedule():
    s = Scheduler()
    calls = []

    def boom():
        calls.append(s.now_ms())
        raise RuntimeError("x")

    s.schedule_periodic(10, boom)
    for _ in range(2):
        with pytest.raises(RuntimeError):
            s.advance(10)
    assert calls == [10, 20]


def test_cancelled_task_never_runs():
    s = Scheduler()
    seen = []
    t = s.schedule(5, seen.append, 1)
    s.cancel(t)
    assert s.next_due_ms() is None
    s.advance(10)
    assert seen == []


def test_scheduler_with_picklable_tasks_pickles():
    s = Scheduler()
    s.schedule(5, print, "x")
    clone = pickle.loads(pickle.dumps(s))
    assert [t.due_ms for t in clone.pending()] == [5]


def test_a_reserved_timer_rearmed_where_a_cancelled_one_sits_runs_once_in_its_place():
    # A lazily re-armed timer pushed again at the (due, seq) of one it cancelled used to make
    # the heap compare two tasks and raise TypeError (lesson 15's client request timeouts).
    s = Scheduler()
    ran = []
    seq = s.reserve()
    first = s.schedule_reserved(10, seq, ran.append, "first")
    s.schedule(10, ran.append, "later")
    s.cancel(first)
    s.schedule_reserved(10, seq, ran.append, "again")
    s.advance(10)
    assert ran == ["again", "later"]


def test_run_soon_runs_after_the_running_task_before_tasks_due_at_the_same_instant():
    s = Scheduler()
    seen = []

    def first():
        seen.append("first")
        assert s.run_soon(seen.append, "soon-1")
        assert s.run_soon(lambda: (seen.append("soon-2"), s.run_soon(seen.append, "soon-3")))
        seen.append("first-end")

    assert not s.run_soon(seen.append, "outside")   # no task running: nothing queued
    for run in (lambda: s.advance(10), lambda: [s.step() for _ in range(2)]):
        seen.clear()
        s.schedule(5, first)
        s.schedule(5, seen.append, "second")     # due at the same instant, queued before the soon work
        run()
        assert seen == ["first", "first-end", "soon-1", "soon-2", "soon-3", "second"]
        assert s.pending() == [] and s._soon == []


def test_run_soon_work_of_a_task_that_raises_becomes_tasks_due_now():
    s = Scheduler()
    seen = []

    def boom():
        s.run_soon(seen.append, "kept-1")
        s.run_soon(seen.append, "kept-2")
        raise RuntimeError("boom")

    s.schedule(3, boom)
    with pytest.raises(RuntimeError):
        s.advance(5)
    assert seen == [] and [t.due_ms for t in s.pending()] == [3, 3] and not s._running
    s.advance(0)
    assert seen == ["kept-1", "kept-2"]
