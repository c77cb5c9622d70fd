"""Time for the engine: a virtual clock and a deterministic scheduler on it.

Nothing in the engine reads the wall clock: everything asks a :class:`VirtualClock`,
which only moves when the scheduler (driven by a test, a lesson step, or the web
side's real-time pacer in ``kafkaviz/live/pacing.py``) moves it. Ties between tasks due at the same
millisecond are broken by (priority, insertion counter), so a run replays exactly.
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import Any, Callable

__all__ = ["VirtualClock", "Scheduler", "ScheduledTask", "DEFAULT_START_MS"]

# Where command-line runs start their virtual clock (2023-11-14T22:13:20Z): record
# timestamps then look like the ones a real producer writes, as in kafka-dump-log output.
DEFAULT_START_MS = 1_700_000_000_000
_INF = float("inf")


class VirtualClock:
    """Milliseconds since the start of a run. It never goes backwards."""

    def __init__(self, start_ms: int = 0) -> None:
        if start_ms < 0:
            raise ValueError(f"clock start must be >= 0, got {start_ms}")
        self._now_ms = int(start_ms)

    def now_ms(self) -> int:
        return self._now_ms

    def advance_to(self, time_ms: int) -> None:
        if time_ms < self._now_ms:
            raise ValueError(f"clock cannot go backwards: now {self._now_ms} ms, asked {time_ms} ms")
        self._now_ms = int(time_ms)

    def advance(self, delta_ms: int) -> None:
        if delta_ms < 0:
            raise ValueError(f"clock cannot go backwards: delta {delta_ms} ms")
        self._now_ms += int(delta_ms)


class ScheduledTask:
    """One entry of the scheduler's heap. ``fn`` must be picklable (a module-level
    function or a bound method), so a snapshot of the engine can hold pending tasks.
    A ``__slots__`` class rather than a dataclass: the replicated cluster makes several per
    request, and construction is most of a push."""

    __slots__ = ("due_ms", "priority", "seq", "fn", "args", "name", "period_ms", "cancelled")

    def __init__(self, due_ms: int, priority: int, seq: int, fn: Callable[..., Any], args: tuple, name: str,
                 period_ms: int | None = None, cancelled: bool = False) -> None:
        self.due_ms = due_ms
        self.priority = priority
        self.seq = seq
        self.fn = fn
        self.args = args
        self.name = name
        self.period_ms = period_ms
        self.cancelled = cancelled

    def sort_key(self) -> tuple[int, int, int]:
        return (self.due_ms, self.priority, self.seq)

    def __repr__(self) -> str:
        return f"ScheduledTask({self.name!r}, due={self.due_ms}, seq={self.seq})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ScheduledTask):
            return NotImplemented
        return all(getattr(self, k) == getattr(other, k) for k in self.__slots__)

    __hash__ = None  # type: ignore[assignment]  # mutable, like the dataclass it replaced

    def __lt__(self, other: "ScheduledTask") -> bool:
        # Two heap entries share a key only when a lazily re-armed timer (``schedule_reserved``)
        # is pushed again at the place of one that was cancelled: the cancelled one goes first
        # and is dropped, so the live one runs exactly where the reservation put it.
        return self.cancelled and not other.cancelled


@dataclass
class Scheduler:
    """A heap of ``(due time, priority, counter)`` tasks on a :class:`VirtualClock`.

    ``step()`` runs the next due task (moving the clock to its due time);
    ``advance(ms)`` runs everything due within the next ``ms`` and leaves the clock
    exactly ``ms`` later. Periodic tasks re-arm themselves before they run, so a task
    that raises does not stop its own schedule.
    """

    clock: VirtualClock = field(default_factory=VirtualClock)
    _heap: list = field(default_factory=list)
    _seq: int = 0
    # (fn, args) to run as soon as the task now running returns, before any other task
    # (:meth:`run_soon`); _running: a task of step/run_until is running.
    _soon: list = field(default_factory=list)
    _running: bool = False
    # _pushed: the counter of the newest task given a new counter (pushed, or a periodic task
    # re-armed); _reserved_due: the earliest due time reserved (:meth:`reserve`) since then. A
    # task pushed at that counter can take in more work due at its instant exactly when nothing
    # since could run between (see Network.send).
    _pushed: int = 0
    _reserved_due: float = float("inf")

    def now_ms(self) -> int:
        return self.clock.now_ms()

    def schedule(self, delay_ms: int, fn: Callable[..., Any], *args: Any,
                 priority: int = 0, name: str = "") -> ScheduledTask:
        if delay_ms < 0:
            raise ValueError(f"delay must be >= 0, got {delay_ms}")
        return self._push(self.now_ms() + int(delay_ms), priority, fn, args, name, None)

    def schedule_at(self, due_ms: int, fn: Callable[..., Any], *args: Any,
                    priority: int = 0, name: str = "") -> ScheduledTask:
        return self._push(max(int(due_ms), self.now_ms()), priority, fn, args, name, None)

    def schedule_periodic(self, period_ms: int, fn: Callable[..., Any], *args: Any,
                          initial_delay_ms: int | None = None, priority: int = 0,
                          name: str = "") -> ScheduledTask:
        if period_ms <= 0:
            raise ValueError(f"period must be > 0, got {period_ms}")
        delay = period_ms if initial_delay_ms is None else initial_delay_ms
        return self._push(self.now_ms() + int(delay), priority, fn, args, name, int(period_ms))

    def reserve(self, due_ms: int | None = None) -> int:
        """Take the next tie-breaking counter without scheduling anything: a task pushed later
        with :meth:`schedule_reserved` and this counter runs exactly where a task scheduled
        now would have (a timer re-armed lazily keeps its place among ties). ``due_ms``: the
        only time such a task will be due (None: any time)."""
        self._seq += 1
        due = -1 if due_ms is None else due_ms
        if due < self._reserved_due:
            self._reserved_due = due
        return self._seq

    def schedule_reserved(self, due_ms: int, seq: int, fn: Callable[..., Any], *args: Any,
                          name: str = "") -> ScheduledTask:
        task = ScheduledTask(due_ms, 0, seq, fn, args, name or getattr(fn, "__name__", "task"), None)
        heapq.heappush(self._heap, ((due_ms, 0, seq), task))
        return task

    def run_soon(self, fn: Callable[..., Any], *args: Any) -> bool:
        """Run ``fn(*args)`` as soon as the task now running returns: at the same virtual
        time, before the next task (even one due at the same instant), in the order asked,
        without a heap entry. False, with nothing queued, when no task is running (the caller
        schedules instead). If the running task raises, what it queued becomes ordinary tasks
        due now, in order."""
        if not self._running:
            return False
        self._soon.append((fn, args))
        return True

    def _run_soon(self) -> None:
        soon = self._soon
        i = 0
        try:
            while i < len(soon):          # what runs here may queue more; all of it runs now
                fn, args = soon[i]
                i += 1
                fn(*args)
        finally:
            del soon[:i]

    def _requeue_soon(self) -> None:
        """A task raised: what it (or what ran after it) queued and did not run yet becomes
        tasks due now, in order (nothing is lost)."""
        soon = list(self._soon)
        self._soon.clear()
        now = self.clock.now_ms()
        for fn, args in soon:
            self._push(now, 0, fn, args, "soon", None)

    def cancel(self, task: ScheduledTask | None) -> None:
        if task is not None:
            task.cancelled = True

    def _push(self, due_ms, priority, fn, args, name, period_ms) -> ScheduledTask:
        self._seq = self._pushed = seq = self._seq + 1
        self._reserved_due = _INF
        task = ScheduledTask(due_ms, priority, seq, fn, args, name or getattr(fn, "__name__", "task"), period_ms)
        heapq.heappush(self._heap, ((due_ms, priority, seq), task))
        return task

    def next_due_ms(self) -> int | None:
        self._drop_cancelled()
        return self._heap[0][1].due_ms if self._heap else None

    def pending(self) -> list[ScheduledTask]:
        return sorted((t for _, t in self._heap if not t.cancelled), key=ScheduledTask.sort_key)

    def _drop_cancelled(self) -> None:
        while self._heap and self._heap[0][1].cancelled:
            heapq.heappop(self._heap)

    def step(self) -> ScheduledTask | None:
        """Run the next task, moving the clock to its due time. None when idle."""
        self._drop_cancelled()
        if not self._heap:
            return None
        _, task = heapq.heappop(self._heap)
        self.clock.advance_to(task.due_ms)
        if task.period_ms is not None:
            # Re-arm the same object before running it: cancel() keeps working and a
            # task that raises keeps its schedule.
            self._seq = self._pushed = self._seq + 1
            self._reserved_due = _INF
            task.due_ms += task.period_ms
            task.seq = self._seq
            heapq.heappush(self._heap, (task.sort_key(), task))
        was, self._running = self._running, True
        try:
            task.fn(*task.args)
            if self._soon:
                self._run_soon()
        except BaseException:
            self._requeue_soon()
            raise
        finally:
            self._running = was
        return task

    def run_until(self, time_ms: int) -> int:
        """Run every task due at or before ``time_ms``; leave the clock there. Returns tasks run.
        (:meth:`step` in a loop, without its per-task calls: this is every request's path.)"""
        ran = 0
        heap, clock, soon = self._heap, self.clock, self._soon
        pop, push = heapq.heappop, heapq.heappush
        was, self._running = self._running, True
        try:
            while heap:
                task = heap[0][1]
                if task.cancelled:
                    pop(heap)
                    continue
                if task.due_ms > time_ms:
                    break
                pop(heap)
                if task.due_ms != clock._now_ms:       # (tasks due at the current instant: no move)
                    clock.advance_to(task.due_ms)
                if task.period_ms is not None:
                    # Re-arm the same object before running it (see step).
                    self._seq = self._pushed = self._seq + 1
                    self._reserved_due = _INF
                    task.due_ms += task.period_ms
                    task.seq = self._seq
                    push(heap, ((task.due_ms, task.priority, task.seq), task))
                task.fn(*task.args)
                if soon:
                    self._run_soon()
                ran += 1
        except BaseException:
            self._requeue_soon()
            raise
        finally:
            self._running = was
        clock.advance_to(max(time_ms, clock.now_ms()))
        return ran

    def advance(self, delta_ms: int) -> int:
        if delta_ms < 0:
            raise ValueError(f"cannot advance by a negative amount: {delta_ms} ms")
        return self.run_until(self.now_ms() + int(delta_ms))
