from engine.clock import VirtualClock
from engine.disk import Disk
from engine.events import EventLog
from engine.log.leader_epoch import EpochEntry, LeaderEpochFileCache

import pytest


@pytest.fixture
def disk(tmp_path):
    d = Disk(tmp_path)
    d.mkdir("t-0")
    return d


def cache_with(disk, *pairs, events=None):
    c = LeaderEpochFileCache(disk, "t-0/leader-epoch-checkpoint", events=events, ident=(1, "t", 0))
    for e, o in pairs:
        c.assign(e, o)
    return c


def test_assign_appends_and_writes_checkpoint(disk):
    c = cache_with(disk, (0, 0), (3, 1500))
    assert c.entries == [EpochEntry(0, 0), EpochEntry(3, 1500)]
    assert disk.read_all("t-0/leader-epoch-checkpoint") == b"0\n2\n0 0\n3 1500\n"


def test_reassigning_latest_epoch_is_a_no_op(disk):
    c = cache_with(disk, (1, 10))
    assert c.assign(1, 20) is False
    assert c.entries == [EpochEntry(1, 10)]


def test_assign_removes_conflicting_entries(disk):
    c = cache_with(disk, (1, 0), (2, 10), (4, 20))
    c.assign(3, 15)
    assert c.entries == [EpochEntry(1, 0), EpochEntry(2, 10), EpochEntry(3, 15)]


def test_reload_from_checkpoint(disk):
    cache_with(disk, (0, 0), (2, 7))
    assert LeaderEpochFileCache(disk, "t-0/leader-epoch-checkpoint").entries == [EpochEntry(0, 0), EpochEntry(2, 7)]


def test_end_offset_for_latest_epoch_is_leo(disk):
    assert cache_with(disk, (0, 0), (2, 7)).end_offset_for(2, 42) == (2, 42)


def test_end_offset_for_older_epoch_is_next_start(disk):
    assert cache_with(disk, (0, 0), (2, 7), (5, 9)).end_offset_for(2, 42) == (2, 9)


def test_end_offset_for_unknown_middle_epoch_uses_floor(disk):
    assert cache_with(disk, (0, 0), (2, 7), (5, 9)).end_offset_for(3, 42) == (2, 9)


def test_end_offset_for_epoch_below_all(disk):
    assert cache_with(disk, (2, 7), (5, 9)).end_offset_for(1, 42) == (1, 7)


def test_end_offset_for_epoch_above_all_is_undefined(disk):
    assert cache_with(disk, (2, 7)).end_offset_for(9, 42) == (-1, -1)


def test_truncate_from_end_drops_entries_at_or_after(disk):
    c = cache_with(disk, (0, 0), (2, 7), (5, 9))
    c.truncate_from_end(9)
    assert c.entries == [EpochEntry(0, 0), EpochEntry(2, 7)]
    assert LeaderEpochFileCache(disk, "t-0/leader-epoch-checkpoint").entries == c.entries


def test_truncate_from_start_moves_first_entry(disk):
    c = cache_with(disk, (0, 0), (2, 7), (5, 9))
    c.truncate_from_start(8)
    assert c.entries == [EpochEntry(2, 8), EpochEntry(5, 9)]


def test_changes_are_emitted(disk):
    events = EventLog(VirtualClock())
    c = cache_with(disk, (0, 0), (2, 7), events=events)
    c.truncate_from_end(7)
    assert [e.to_dict()["kind"] for e in events.envelopes] == [
        "leader_epoch_assigned", "leader_epoch_assigned", "epoch_cache_truncated"]
    assert events.envelopes[-1].event.entries == [[0, 0]]
    assert events.envelopes[0].event.broker == 1
