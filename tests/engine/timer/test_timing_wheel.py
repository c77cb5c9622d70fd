"""The timing wheel against a plain heap, plus the worked example of Kafka's design."""
from __future__ import annotations

import heapq

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.clock import VirtualClock
from engine.events import EventLog
from engine.timer import SystemTimer


def test_worked_example_task_due_at_30_cascades_from_level_1_to_level_0():
    log = EventLog(VirtualClock())
    timer = SystemTimer(0, tick_ms=1, wheel_size=20, events=log)
    fired = []
    timer.add(30, fired.append, "t30")
    added = log.of_kind("timer_task_added")[0]
    assert (added.level, added.slot, added.bucket_expiration_ms) == (1, 1, 20)
    assert log.of_kind("timer_overflow_wheel_created")[0].tick_ms == 20

    assert timer.next_expiration_ms() == 20
    timer.advance_to(29)
    assert fired == []
    cascaded = log.of_kind("timer_task_cascaded")[0]
    assert (cascaded.from_level, cascaded.to_level, cascaded.slot) == (1, 0, 10)
    timer.advance_to(30)
    assert fired == ["t30"]


def test_buckets_are_visited_only_when_non_empty():
    log = EventLog(VirtualClock())
    timer = SystemTimer(0, tick_ms=1, wheel_size=20, events=log)
    timer.add(5, lambda: None)
    timer.add(7_000, lambda: None)
    timer.advance_to(10_000)
    # 5 ms: one level-0 bucket. 7,000 ms: level 2 (tick 400) -> level 1 (tick 20) -> level 0.
    expired = [(e.level, e.expiration_ms) for e in log.of_kind("timer_bucket_expired")]
    # 7,000 sits in level 2's bucket [6800, 7200), then level 1's bucket 7000, then runs:
    # three buckets visited in 10,000 ms, not 10,000 ticks.
    assert expired == [(0, 5), (2, 6800), (1, 7000)]


def test_a_task_due_now_runs_at_once_and_cancel_stops_a_pending_one():
    timer = SystemTimer(100)
    fired = []
    timer.add(0, fired.append, "now")
    assert fired == ["now"]
    task = timer.add(50, fired.append, "later")
    assert timer.size() == 1
    assert timer.cancel(task) is True
    assert timer.cancel(task) is False
    timer.advance_to(1_000)
    assert fired == ["now"] and timer.size() == 0


def test_time_cannot_go_backwards_and_bad_parameters_are_refused():
    timer = SystemTimer(10)
    with pytest.raises(ValueError):
        timer.advance_to(5)
    with pytest.raises(ValueError):
        timer.add(-1, lambda: None)
    with pytest.raises(ValueError):
        SystemTimer(tick_ms=0)
    with pytest.raises(ValueError):
        SystemTimer(wheel_size=1)


def test_a_clock_makes_expirations_count_from_its_time():
    clock = VirtualClock(0)
    timer = SystemTimer(0, clock=clock)
    fired = []
    clock.advance(1_000)            # the wheels have not moved yet
    timer.add(10, fired.append, "x")
    timer.advance_to(1_009)
    assert fired == []
    timer.advance_to(1_010)
    assert fired == ["x"]


def _reference(ops):
    """A heap: (due, id) fired in order when time passes them."""
    heap, fired, now, cancelled = [], [], 0, set()
    for op in ops:
        if op[0] == "add":
            _, task_id, delay = op
            heapq.heappush(heap, (now + delay, task_id))
        elif op[0] == "cancel":
            cancelled.add(op[1])
        else:
            now = op[1]
        while heap and heap[0][0] <= now:
            due, task_id = heapq.heappop(heap)
            if task_id not in cancelled:
                fired.append((due, task_id))
    return fired


delays = st.one_of(st.integers(0, 25), st.integers(0, 500), st.integers(0, 200_000))


@st.composite
def schedules(draw):
    ops, now, next_id, live = [], 0, 0, []
    for _ in range(draw(st.integers(1, 60))):
        choice = draw(st.integers(0, 9))
        if choice < 6:
            next_id += 1
            ops.append(("add", next_id, draw(delays)))
            live.append(next_id)
        elif choice < 7 and live:
            ops.append(("cancel", draw(st.sampled_from(live))))
        else:
            now += draw(st.one_of(st.integers(0, 30), st.integers(0, 5_000), st.integers(0, 300_000)))
            ops.append(("advance", now))
    ops.append(("advance", now + 10_000_000))
    return ops


@settings(max_examples=300, deadline=None)
@given(schedules(), st.sampled_from([2, 3, 8, 20]))
def test_every_task_fires_at_its_due_time_like_a_heap_none_early_none_lost(ops, wheel_size):
    timer = SystemTimer(0, tick_ms=1, wheel_size=wheel_size)
    fired, tasks = [], {}
    for op in ops:
        if op[0] == "add":
            _, task_id, delay = op
            tasks[task_id] = timer.add(delay, lambda i=task_id: fired.append((timer.now_ms, i)))
        elif op[0] == "cancel":
            timer.cancel(tasks[op[1]])
        else:
            timer.advance_to(op[1])
    expected = _reference(ops)
    # Same task at the same virtual time; within one millisecond Kafka promises no order.
    assert sorted(fired) == sorted(expected)
    assert timer.size() == 0


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(1, 100_000), min_size=1, max_size=40), st.sampled_from([2, 5, 20]))
def test_next_expiration_never_passes_the_earliest_pending_task(due_times, wheel_size):
    timer = SystemTimer(0, wheel_size=wheel_size)
    for d in due_times:
        timer.add(d, lambda: None)
    while timer.size():
        nxt = timer.next_expiration_ms()
        assert nxt is not None and nxt <= min(t for t in due_times if t > timer.now_ms)
        timer.advance_to(nxt)
        due_times = [t for t in due_times if t > timer.now_ms]


def test_state_shows_levels_buckets_and_the_hand():
    timer = SystemTimer(0, wheel_size=20)
    timer.add(3, lambda: None, name="produce-1")
    timer.add(450, lambda: None, name="fetch-1")
    state = timer.state()
    assert [lv["tick_ms"] for lv in state["levels"]] == [1, 20, 400]
    assert state["levels"][0]["buckets"] == [{"slot": 3, "expiration_ms": 3, "tasks": [[1, "produce-1", 3]]}]
    assert state["levels"][2]["buckets"][0]["slot"] == 1 and state["pending"] == 2
    timer.advance_to(3)
    assert timer.state()["levels"][0]["hand"] == 3


def test_the_event_stream_replays_byte_for_byte():
    def run():
        log = EventLog(VirtualClock())
        timer = SystemTimer(0, events=log)
        for i, d in enumerate([5, 30, 700, 9_000, 30, 0, 160_001]):
            timer.add(d, lambda: None, name=f"t{i}")
        for t in (10, 100, 5_000, 200_000):
            timer.advance_to(t)
        return log.digest()
    assert run() == run()
