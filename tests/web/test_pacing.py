import pytest

from engine.clock import Scheduler
from kafkaviz.live.pacing import RealTimePacer


class FakeWall:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_virtual_time_follows_wall_time_times_speed_and_runs_due_tasks():
    wall, s, seen = FakeWall(), Scheduler(), []
    s.schedule(1500, seen.append, "due at 1.5 s")
    pacer = RealTimePacer(s, speed=2.0, wall=wall)
    wall.now += 0.5
    pacer.tick()
    assert s.now_ms() == 1000 and seen == []
    wall.now += 0.5
    pacer.tick()
    assert s.now_ms() == 2000 and seen == ["due at 1.5 s"]


def test_speed_change_keeps_time_already_passed():
    wall, s = FakeWall(), Scheduler()
    pacer = RealTimePacer(s, wall=wall)
    wall.now += 1
    pacer.set_speed(10)
    assert s.now_ms() == 1000
    wall.now += 1
    pacer.tick()
    assert s.now_ms() == 11000


def test_after_a_jump_ahead_time_goes_on_from_the_jump():
    wall, s = FakeWall(), Scheduler()
    pacer = RealTimePacer(s, wall=wall)
    s.advance(60_000)
    wall.now += 1
    pacer.tick()
    assert s.now_ms() == 60_000
    wall.now += 1
    pacer.tick()
    assert s.now_ms() == 61_000


@pytest.mark.parametrize("speed", [0, -1, 1001, "fast", True])
def test_bad_speeds_are_refused(speed):
    with pytest.raises(ValueError, match="speed"):
        RealTimePacer(Scheduler(), speed=speed, wall=FakeWall())
