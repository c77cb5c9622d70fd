"""Kafka's hierarchical timing wheel, on the engine's virtual clock.

Kafka keeps every delayed request (a produce waiting for the ISR, a fetch waiting for
bytes) in a :class:`SystemTimer` built on a :class:`TimingWheel`: ``wheel_size``
buckets of ``tick_ms`` each, so one wheel spans ``interval = tick_ms * wheel_size``.
A task due further out goes to an *overflow wheel* whose tick is the parent's whole
interval (1 ms, 20 ms, 400 ms, 8 s, ... with Kafka's broker defaults ``tick_ms=1``,
``wheel_size=20``); overflow wheels are created only when first needed.

Each bucket (:class:`TimerTaskList`) has an expiration: the start of the time slot it
holds, rounded down to its wheel's tick. When a bucket's expiration changes, the bucket
is put into one shared delay queue ordered by expiration. The driver never ticks
through empty slots: it takes the earliest bucket from the queue, advances every
wheel's clock to that bucket's expiration and re-adds each of its tasks, which then
either run (already due) or fall into a finer wheel. A task due at 30 ms added at 0 ms
thus sits in level 1's bucket [20, 40) until 20 ms, then in level 0's bucket 30, and
runs at 30 ms.

Facts from Kafka's ``TimingWheel.java``, ``TimerTaskList.java`` and ``SystemTimer.java``
(server-common, ``org.apache.kafka.server.util.timer``); the code is ours.

Everything is deterministic: tasks are kept in insertion order, the delay queue breaks
expiration ties by a counter, and time only moves when :meth:`SystemTimer.advance_to`
is called with the virtual clock's time.
"""
from __future__ import annotations

import heapq
from typing import Any, Callable

from ..events import EventLog
from .events import (
    BucketExpired,
    BucketQueued,
    OverflowWheelCreated,
    TimerTaskAdded,
    TimerTaskCancelled,
    TimerTaskCascaded,
    TimerTaskExpired,
)

__all__ = ["TimerTask", "TimerTaskList", "TimingWheel", "SystemTimer"]


class TimerTask:
    """A callback due at ``expiration_ms`` (absolute virtual time).

    ``bucket`` is the list currently holding the task (None once it ran, was cancelled
    or is between buckets); cancelling removes it from that list at once, as Kafka's
    ``TimerTask.cancel`` does.
    """

    __slots__ = ("id", "expiration_ms", "fn", "args", "name", "cancelled", "done", "bucket", "level")

    def __init__(self, task_id: int, expiration_ms: int, fn: Callable[..., Any], args: tuple, name: str) -> None:
        self.id = task_id
        self.expiration_ms = expiration_ms
        self.fn = fn
        self.args = args
        self.name = name
        self.cancelled = False
        self.done = False
        self.bucket: TimerTaskList | None = None
        self.level = -1

    def __repr__(self) -> str:
        return f"TimerTask({self.id}, {self.name!r}, due={self.expiration_ms})"


class TimerTaskList:
    """One bucket: the tasks of one time slot of one wheel, in insertion order."""

    __slots__ = ("level", "slot", "expiration_ms", "tasks")

    def __init__(self, level: int, slot: int) -> None:
        self.level = level
        self.slot = slot
        self.expiration_ms = -1  # -1: not in the delay queue
        self.tasks: dict[int, TimerTask] = {}

    def add(self, task: TimerTask) -> None:
        task.bucket = self
        self.tasks[task.id] = task

    def remove(self, task: TimerTask) -> None:
        if self.tasks.pop(task.id, None) is not None:
            task.bucket = None

    def set_expiration(self, expiration_ms: int) -> bool:
        """True when the expiration changed, i.e. the bucket must be (re)queued."""
        changed = self.expiration_ms != expiration_ms
        self.expiration_ms = expiration_ms
        return changed

    def flush(self) -> list[TimerTask]:
        """Take every task out and mark the bucket free (expiration -1)."""
        tasks = list(self.tasks.values())
        for task in tasks:
            task.bucket = None
        self.tasks.clear()
        self.expiration_ms = -1
        return tasks


class TimingWheel:
    """One level of the hierarchy. ``queue`` is the delay queue shared by all levels."""

    def __init__(self, tick_ms: int, wheel_size: int, start_ms: int, queue: "_DelayQueue",
                 level: int = 0, timer: "SystemTimer | None" = None) -> None:
        self.tick_ms = tick_ms
        self.wheel_size = wheel_size
        self.interval_ms = tick_ms * wheel_size
        self.level = level
        # Buckets are made the first time a task lands in their slot (a broker makes two timers
        # and their overflow wheels each time it starts; most slots are never used).
        self.buckets: list = [None] * wheel_size
        # Rounded down to a multiple of tick_ms, as Kafka does.
        self.current_time_ms = start_ms - start_ms % tick_ms
        self.queue = queue
        self.overflow: TimingWheel | None = None
        self._timer = timer

    def add(self, task: TimerTask) -> bool:
        """Put ``task`` in its bucket. False when it is cancelled or already due (the
        caller runs it). A task beyond this wheel's interval goes to the overflow wheel (made on
        first need), and so on up (a loop over the levels rather than a call per level)."""
        expiration = task.expiration_ms
        wheel = self
        while True:
            if task.cancelled:
                return False
            current = wheel.current_time_ms
            if expiration < current + wheel.tick_ms:
                return False
            if expiration < current + wheel.interval_ms:
                tick = wheel.tick_ms
                virtual_id = expiration // tick
                slot = virtual_id % wheel.wheel_size
                bucket = wheel.buckets[slot]
                if bucket is None:
                    bucket = wheel.buckets[slot] = TimerTaskList(wheel.level, slot)
                task.bucket = bucket
                bucket.tasks[task.id] = task
                task.level = wheel.level
                if bucket.expiration_ms != virtual_id * tick:
                    # The bucket held an earlier slot (or none): queue it for its new time.
                    bucket.expiration_ms = virtual_id * tick
                    wheel.queue.offer(bucket)
                    if wheel._timer is not None:
                        wheel._timer._emit_queued(bucket)
                return True
            if wheel.overflow is None:
                wheel.overflow = TimingWheel(wheel.interval_ms, wheel.wheel_size, wheel.current_time_ms, wheel.queue,
                                             wheel.level + 1, wheel._timer)
                if wheel._timer is not None:
                    wheel._timer._emit_overflow(wheel.overflow)
            wheel = wheel.overflow

    def advance_clock(self, time_ms: int) -> None:
        if time_ms >= self.current_time_ms + self.tick_ms:
            self.current_time_ms = time_ms - time_ms % self.tick_ms
            if self.overflow is not None:
                self.overflow.advance_clock(self.current_time_ms)

    def levels(self) -> list["TimingWheel"]:
        out, wheel = [], self
        while wheel is not None:
            out.append(wheel)
            wheel = wheel.overflow
        return out


class _DelayQueue:
    """Buckets ordered by expiration (ties by the order they were queued).

    A bucket can be queued again under a new expiration while an old entry is still in
    the heap; entries whose recorded expiration no longer matches the bucket's are stale
    and skipped, as Java's DelayQueue would have removed them."""

    def __init__(self) -> None:
        self._heap: list[tuple[int, int, TimerTaskList]] = []
        self._seq = 0

    def offer(self, bucket: TimerTaskList) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (bucket.expiration_ms, self._seq, bucket))

    def _drop_stale(self) -> None:
        heap = self._heap
        while heap and heap[0][0] != heap[0][2].expiration_ms:
            heapq.heappop(heap)

    def peek_expiration(self) -> int | None:
        self._drop_stale()
        return self._heap[0][0] if self._heap else None

    def poll(self, now_ms: int) -> TimerTaskList | None:
        self._drop_stale()
        if self._heap and self._heap[0][0] <= now_ms:
            return heapq.heappop(self._heap)[2]
        return None

    def __len__(self) -> int:
        self._drop_stale()
        return sum(1 for exp, _, b in self._heap if exp == b.expiration_ms)


class SystemTimer:
    """The timer a broker's purgatories share: ``add`` a callback with a delay, and
    ``advance_to(now)`` runs everything due by ``now`` by expiring buckets in order.

    ``events`` (optional) receives an event for each step the wheel takes, for the
    timing-wheel lesson; pass None where nobody watches (the per-step cost is then a
    None check). ``name`` tells several timers apart in those events.
    """

    def __init__(self, start_ms: int = 0, *, tick_ms: int = 1, wheel_size: int = 20,
                 events: EventLog | None = None, name: str = "timer", clock: Any = None) -> None:
        if tick_ms < 1:
            raise ValueError(f"tick_ms must be >= 1, got {tick_ms}")
        if wheel_size < 2:
            raise ValueError(f"wheel_size must be >= 2, got {wheel_size}")
        self.name = name
        self.events = events
        # With a clock, a task's expiration counts from the clock's time even when the
        # wheels have not been advanced to it yet (Kafka's reaper also lags real time).
        self.clock = clock
        self.queue = _DelayQueue()
        self.wheel = TimingWheel(tick_ms, wheel_size, start_ms, self.queue, 0, self)
        self.now_ms = start_ms
        self._next_id = 0
        self._size = 0

    # ---- the interface purgatories use ------------------------------------
    def add(self, delay_ms: int, fn: Callable[..., Any], *args: Any, name: str = "") -> TimerTask:
        """Schedule ``fn(*args)`` at ``now + delay_ms``; a task already due runs at once."""
        if delay_ms < 0:
            raise ValueError(f"delay must be >= 0, got {delay_ms}")
        now = self.clock.now_ms() if self.clock is not None else self.now_ms
        self._next_id += 1
        task = TimerTask(self._next_id, now + int(delay_ms), fn, tuple(args),
                         name or getattr(fn, "__name__", "task"))
        self._size += 1
        if task.expiration_ms > now and self.wheel.add(task):
            if self.events is not None:
                self._emit_added(task)
        else:
            self._run(task)
        return task

    def cancel(self, task: TimerTask | None) -> bool:
        """Remove a pending task; False if it already ran or was cancelled."""
        if task is None or task.cancelled or task.done:
            return False
        task.cancelled = True
        if task.bucket is not None:
            task.bucket.remove(task)
        self._size -= 1
        if self.events is not None:
            self.events.emit(TimerTaskCancelled(self.name, task.id, task.name, task.expiration_ms))
        return True

    def size(self) -> int:
        """Tasks added and neither run nor cancelled."""
        return self._size

    def next_expiration_ms(self) -> int | None:
        """When the earliest non-empty bucket expires: the next time anything can run."""
        return self.queue.peek_expiration()

    def advance_to(self, now_ms: int) -> int:
        """Expire every bucket due by ``now_ms`` in order and run what is due. Returns
        the number of tasks run."""
        if now_ms < self.now_ms:
            raise ValueError(f"timer cannot go backwards: at {self.now_ms} ms, asked {now_ms} ms")
        ran = 0
        while True:
            bucket = self.queue.poll(now_ms)
            if bucket is None:
                break
            expiration = bucket.expiration_ms
            self.now_ms = max(self.now_ms, expiration)
            self.wheel.advance_clock(expiration)
            tasks = bucket.flush()
            if self.events is not None:
                self.events.emit(BucketExpired(self.name, bucket.level, bucket.slot, expiration, len(tasks)))
            for task in tasks:
                if task.cancelled:
                    continue
                from_level = task.level
                if self.wheel.add(task):
                    if self.events is not None:
                        self.events.emit(TimerTaskCascaded(self.name, task.id, task.name, task.expiration_ms,
                                                           from_level, task.level, task.bucket.slot))
                else:
                    self._run(task)
                    ran += 1
        self.now_ms = now_ms
        return ran

    # ---- what the lesson's diagram draws -----------------------------------
    def state(self) -> dict[str, Any]:
        levels = []
        for wheel in self.wheel.levels():
            buckets = []
            for b in wheel.buckets:
                if b is not None and b.tasks:
                    buckets.append({"slot": b.slot, "expiration_ms": b.expiration_ms,
                                    "tasks": [[t.id, t.name, t.expiration_ms] for t in b.tasks.values()]})
            levels.append({"level": wheel.level, "tick_ms": wheel.tick_ms, "wheel_size": wheel.wheel_size,
                           "interval_ms": wheel.interval_ms, "current_time_ms": wheel.current_time_ms,
                           "hand": (wheel.current_time_ms // wheel.tick_ms) % wheel.wheel_size,
                           "buckets": buckets})
        return {"name": self.name, "now_ms": self.now_ms, "pending": self._size,
                "next_expiration_ms": self.next_expiration_ms(), "levels": levels}

    # ---- internals ---------------------------------------------------------
    def _run(self, task: TimerTask) -> None:
        task.done = True
        self._size -= 1
        if self.events is not None:
            self.events.emit(TimerTaskExpired(self.name, task.id, task.name, task.expiration_ms))
        task.fn(*task.args)

    def _emit_added(self, task: TimerTask) -> None:
        if self.events is not None:
            bucket = task.bucket
            self.events.emit(TimerTaskAdded(self.name, task.id, task.name, task.expiration_ms, task.level,
                                            bucket.slot, bucket.expiration_ms))

    def _emit_queued(self, bucket: TimerTaskList) -> None:
        if self.events is not None:
            self.events.emit(BucketQueued(self.name, bucket.level, bucket.slot, bucket.expiration_ms))

    def _emit_overflow(self, wheel: TimingWheel) -> None:
        if self.events is not None:
            self.events.emit(OverflowWheelCreated(self.name, wheel.level, wheel.tick_ms, wheel.interval_ms,
                                                  wheel.current_time_ms))
