"""Wall-clock pacing, kept out of the engine: when frames leave a sandbox
(:class:`FramePacer`), and free play in real time (:class:`RealTimePacer`).

Free play in real time: the adapter between the wall clock and an engine's virtual
clock. The engine never reads the wall clock; a sandbox in free play calls
:meth:`RealTimePacer.tick` (from a timer or before each command) and the pacer runs the
engine's scheduler up to ``virtual start + elapsed wall time x speed``."""
from __future__ import annotations

import time
from typing import Callable

from engine.clock import Scheduler

__all__ = ["FramePacer", "RealTimePacer"]

MAX_SPEED = 1000.0


class FramePacer:
    """When the next frame of a sandbox may leave.

    The first frame after a quiet spell (nothing sent for ``interval_s``) leaves at
    once, so a click never waits for a timer. Frames of a burst leave at most one per
    ``interval_s``: whatever happens in between is buffered and leaves as one frame
    when the interval is up (the runtime sets the timer), so a browser gets at most
    ``1 / interval_s`` frames per second however fast commands or events come."""

    def __init__(self, interval_s: float) -> None:
        self.interval_s = max(0.0, interval_s)
        self.last_sent = float("-inf")

    def delay(self, now: float) -> float:
        """Seconds to wait before the next frame may leave (0: now)."""
        return max(0.0, self.last_sent + self.interval_s - now)

    def sent(self, now: float) -> None:
        self.last_sent = now


class RealTimePacer:
    def __init__(self, scheduler: Scheduler, speed: float = 1.0,
                 wall: Callable[[], float] = time.monotonic) -> None:
        self.scheduler = scheduler
        self._wall = wall
        self.speed = _checked(speed)
        self._wall_start = wall()
        self._virtual_start = scheduler.now_ms()

    def tick(self) -> int:
        """Bring virtual time up to wall time; returns how many engine tasks ran."""
        now_wall = self._wall()
        target = self._virtual_start + int((now_wall - self._wall_start) * 1000.0 * self.speed)
        if target < self.scheduler.now_ms():
            # Someone jumped the clock ahead (a lesson's "jump clock"): follow from there
            # instead of standing still until the wall clock catches up.
            self._virtual_start, self._wall_start = self.scheduler.now_ms(), now_wall
            return 0
        return self.scheduler.run_until(target)

    def set_speed(self, speed: float) -> None:
        """Change speed from now on (virtual time already passed stays passed)."""
        self.tick()
        self.speed = _checked(speed)
        self._virtual_start = self.scheduler.now_ms()
        self._wall_start = self._wall()


def _checked(speed: float) -> float:
    if isinstance(speed, bool) or not isinstance(speed, (int, float)) or not 0 < speed <= MAX_SPEED:
        raise ValueError(f"speed must be a number in (0, {MAX_SPEED:g}], got {speed!r}")
    return float(speed)
