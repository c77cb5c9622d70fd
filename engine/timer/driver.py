"""Drives a :class:`SystemTimer` from the engine's scheduler.

Kafka's expiration reaper polls the timer's delay queue on a thread; the engine has no
threads, so one scheduler task is kept armed at the timer's next bucket expiration. When
it fires it advances the timer to the scheduler's time (running whatever is due) and
re-arms for the next non-empty bucket. Time therefore jumps from bucket to bucket, as
in Kafka, and a run replays exactly.
"""
from __future__ import annotations

from typing import Any

from .timing_wheel import SystemTimer

__all__ = ["TimerDriver"]


class TimerDriver:
    def __init__(self, timer: SystemTimer, scheduler: Any, name: str = "timer") -> None:
        self.timer = timer
        self.scheduler = scheduler
        self.name = name
        self._task_name = f"{name} tick"
        self.task: Any = None

    def arm(self) -> None:
        """Call after adding to the timer: make sure a tick is due at its next expiration."""
        due = self.timer.next_expiration_ms()
        if due is None:
            return
        task = self.task
        if task is not None and not task.cancelled and task.due_ms <= due:
            return
        self.scheduler.cancel(task)
        self.task = self.scheduler.schedule_at(due, self.tick, name=self._task_name)

    def tick(self) -> None:
        self.task = None
        self.timer.advance_to(self.scheduler.now_ms())
        self.arm()

    def stop(self) -> None:
        self.scheduler.cancel(self.task)
        self.task = None
