"""Timing-wheel events: every step the timer takes, for the lesson's diagram.

``timer`` names the timer (a broker has one per purgatory); ``level`` 0 is the finest
wheel; ``slot`` is a bucket's index in its wheel; times are virtual milliseconds.
"""
from __future__ import annotations

from ..events import Event, event

__all__ = ["TimerTaskAdded", "BucketQueued", "OverflowWheelCreated", "BucketExpired", "TimerTaskCascaded",
           "TimerTaskExpired", "TimerTaskCancelled"]


@event("timer_task_added")
class TimerTaskAdded(Event):
    timer: str
    task: int
    name: str
    expiration_ms: int
    level: int
    slot: int
    bucket_expiration_ms: int


@event("timer_bucket_queued")
class BucketQueued(Event):
    """A bucket took a new expiration and entered the delay queue."""
    timer: str
    level: int
    slot: int
    expiration_ms: int


@event("timer_overflow_wheel_created")
class OverflowWheelCreated(Event):
    timer: str
    level: int
    tick_ms: int
    interval_ms: int
    current_time_ms: int


@event("timer_bucket_expired")
class BucketExpired(Event):
    """The delay queue handed out a due bucket; its ``tasks`` are re-added or run."""
    timer: str
    level: int
    slot: int
    expiration_ms: int
    tasks: int


@event("timer_task_cascaded")
class TimerTaskCascaded(Event):
    """A task from an expired coarse bucket fell into a finer wheel."""
    timer: str
    task: int
    name: str
    expiration_ms: int
    from_level: int
    to_level: int
    slot: int


@event("timer_task_expired")
class TimerTaskExpired(Event):
    """The task's time came: its callback runs now."""
    timer: str
    task: int
    name: str
    expiration_ms: int


@event("timer_task_cancelled")
class TimerTaskCancelled(Event):
    timer: str
    task: int
    name: str
    expiration_ms: int
