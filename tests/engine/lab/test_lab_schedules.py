"""Targeted fault schedules: valid, deterministic, and each aimed at its window."""
import pytest

from engine.cluster.commands import parse_command
from engine.lab.schedules import WINDOWS, steady_producer, targeted_schedule, window_of


@pytest.mark.parametrize("window", sorted(WINDOWS))
def test_every_window_builds_valid_commands_that_end_with_every_broker_up(window):
    for seed in range(20):
        cmds = targeted_schedule(seed, acks=1, min_isr=2, window=window)
        for c in cmds:
            parse_command(c)
        down = set()
        for c in cmds:
            if c["cmd"] in ("crash", "shutdown"):
                down.add(c["broker"])
            elif c["cmd"] == "restart":
                assert c["broker"] in down, (seed, c)      # never restarts a live broker
                down.discard(c["broker"])
        assert not down and cmds[-1]["cmd"] == "advance"


def test_a_seed_gives_the_same_schedule_under_every_setting_but_acks_and_topic_config():
    a = targeted_schedule(7, acks="all", min_isr=2)
    b = targeted_schedule(7, acks=1, min_isr=1, unclean=True)
    assert len(a) == len(b)
    for x, y in zip(a, b):
        if x["cmd"] == "produce":
            assert (x["acks"], y["acks"]) == ("all", 1) and x["value"] == y["value"]
        elif x["cmd"] != "create_topic":
            assert x == y
    assert targeted_schedule(7) == targeted_schedule(7)


def test_seeds_spread_over_every_window():
    assert {window_of(s) for s in range(60)} == set(WINDOWS)


def test_time_passes_between_faults():
    for seed in range(20):
        cmds = targeted_schedule(seed)
        assert sum(c["ms"] for c in cmds if c["cmd"] == "advance") >= 6000


def test_steady_producer_writes_through_long_waits_only():
    cmds = [{"cmd": "advance", "ms": 1200}, {"cmd": "advance", "ms": 30}]
    out = steady_producer(cmds, "all", every_ms=500)
    assert [c["cmd"] for c in out] == ["advance", "produce", "advance", "produce", "advance", "advance"]
    assert sum(c["ms"] for c in out if c["cmd"] == "advance") == 1230
    assert [c["value"] for c in out if c["cmd"] == "produce"] == ["s1", "s2"]
