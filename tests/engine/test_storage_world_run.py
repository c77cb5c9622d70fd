"""A storage world under the engine's Run (issue 18, item 2): the run alone owns the command
log, seek, redo, fork, checkpoints and the JSON log a run is exported and imported as, for
a one-broker world as for a cluster. Each test fails if that breaks for storage worlds."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.cluster.run import Run
from engine.errors import InvalidRequestError
from engine.storage_world import (CompactionWorld, InsideSegmentWorld, PageCacheWorld, RetentionWorld, SegmentsWorld,
                                  StorageWorld, TopicWorld)

SCENARIO = {"topic": "orders", "partitions": 2, "ms_per_message": 100,
            "config": {"segment.bytes": 1000, "retention.bytes": 2000, "retention.ms": 60000}}
COMMANDS = [{"cmd": "produce", "partition": 0, "count": 5, "value_size": 100},
            {"cmd": "produce", "partition": 1, "count": 3, "value_size": 50},
            {"cmd": "advance", "ms": 70000},
            {"cmd": "produce", "partition": 0, "count": 8, "value_size": 120},
            {"cmd": "advance", "ms": 400000}]


def new_run(tmp_path, name="a", world=SegmentsWorld, scenario=SCENARIO, **kw):
    return Run(7, None, str(tmp_path / name), world=world, scenario=scenario, snapshot_every=kw.pop("every", 1),
               max_snapshots=kw.pop("max_snapshots", 8), keep_events=None, os_fsync=False)


def digests_per_step(run, commands):
    out = [run.state_digest()]
    for c in commands:
        run.apply(c)
        out.append(run.state_digest())
    return out


def test_seek_back_and_redo_give_every_steps_exact_state(tmp_path):
    run = new_run(tmp_path)
    states = digests_per_step(run, COMMANDS)
    for k in (3, 0, 4, 1):
        run.seek(k)
        assert run.state_digest() == states[k]
    while run.position < len(COMMANDS):
        run.redo()
    assert run.state_digest() == states[-1]


def test_a_storage_run_back_restores_a_checkpoint_not_a_replay_from_the_start(tmp_path):
    run = new_run(tmp_path, every=1, max_snapshots=50)
    digests_per_step(run, COMMANDS)
    assert run.snapshot_steps() == list(range(len(COMMANDS) + 1))
    applied = []
    original = run.rules.apply
    run.rules.apply = lambda world, cmd: applied.append(cmd) or original(world, cmd)
    run.seek(3)
    assert applied == []           # checkpoint 3 restored whole: no command replayed


def test_fork_shares_the_past_and_not_the_future(tmp_path):
    run = new_run(tmp_path)
    states = digests_per_step(run, COMMANDS)
    other = run.fork(str(tmp_path / "fork"), 2)
    assert other.state_digest() == states[2] and other.world_cls is SegmentsWorld
    other.apply({"cmd": "produce", "partition": 1, "count": 1, "value_size": 10})
    assert run.state_digest() == states[-1]
    assert other.log[:2] == run.log[:2] and len(other.log) == 3


def test_the_exported_command_log_imports_to_the_same_state(tmp_path):
    run = new_run(tmp_path)
    states = digests_per_step(run, COMMANDS)
    again = new_run(tmp_path, "b")
    again.queue(run.log)                       # the JSON log is the whole run
    while again.position < len(run.log):
        again.redo()
    assert again.state_digest() == states[-1]
    assert again.events.digest() == run.events.digest()


def test_a_refused_storage_command_changes_nothing_and_names_its_field(tmp_path):
    run = new_run(tmp_path, world=RetentionWorld, scenario={**SCENARIO, "partitions": 1})
    run.apply(COMMANDS[0])
    before = run.state_digest()
    with pytest.raises(InvalidRequestError) as e:
        run.apply({"cmd": "delete_records", "offset": 99})
    assert e.value.field == "offset" and run.state_digest() == before and len(run.log) == 1
    with pytest.raises(InvalidRequestError):
        run.apply({"cmd": "produce", "partition": 5, "count": 1})
    with pytest.raises(InvalidRequestError):
        run.apply({"cmd": "put", "key": "k", "value": "v"})        # not a command of this world
    assert run.state_digest() == before


@pytest.mark.parametrize("world, scenario, commands", [
    (TopicWorld, {"partitions": 3}, [{"cmd": "produce", "count": 7, "key_mode": "cycle"},
                                     {"cmd": "poll", "consumer": "A", "max_records": 3},
                                     {"cmd": "rewind", "consumer": "A"}]),
    (InsideSegmentWorld, SCENARIO, [{"cmd": "produce", "partition": 0, "count": 12, "value_size": 50},
                                    {"cmd": "lookup_offset", "offset": 7}, {"cmd": "lookup_time", "timestamp": 450}]),
    (CompactionWorld, {"config": {"cleanup.policy": "compact", "segment.bytes": 400,
                                  "min.cleanable.dirty.ratio": 0.01}},
     [{"cmd": "put", "key": "a", "value": "1"}] * 9 + [{"cmd": "delete", "key": "a"}, {"cmd": "clean"},
                                                        {"cmd": "advance", "ms": 20000}]),
    (PageCacheWorld, {"config": {"segment.bytes": 100000}},
     [{"cmd": "produce", "count": 3, "value_size": 300}, {"cmd": "flush"}, {"cmd": "crash", "power_loss": True},
      {"cmd": "restart"}, {"cmd": "fetch", "offset": 0}]),
])
def test_every_storage_world_checkpoints_and_seeks(tmp_path, world, scenario, commands):
    run = new_run(tmp_path, world=world, scenario=scenario)
    states = digests_per_step(run, commands)
    for k in range(len(commands), -1, -1):
        run.seek(k)
        assert run.state_digest() == states[k], k


def test_every_storage_command_has_one_runner_found_by_its_class():
    for world in (SegmentsWorld, RetentionWorld, InsideSegmentWorld, CompactionWorld, PageCacheWorld, TopicWorld):
        for cls in world.commands():
            assert callable(getattr(world, world._runners[cls]))
    assert not StorageWorld.commands()


@settings(max_examples=15, deadline=None)
@given(st.lists(st.sampled_from(COMMANDS), min_size=1, max_size=6), st.data())
def test_any_seek_reaches_the_state_of_that_step(tmp_path_factory, commands, data):
    tmp = tmp_path_factory.mktemp("prop")
    run = new_run(tmp, every=2, max_snapshots=3)
    states = digests_per_step(run, commands)
    for _ in range(3):
        k = data.draw(st.integers(0, len(commands)))
        run.seek(k)
        assert run.state_digest() == states[k]


def test_a_seek_rewrites_only_the_files_that_changed(tmp_path):
    run = new_run(tmp_path, scenario={**SCENARIO, "config": {"segment.bytes": 400}})
    states = digests_per_step(run, COMMANDS[:2] + [COMMANDS[3]])
    root = tmp_path / "a"
    first = root / "orders-0" / "00000000000000000000.log"      # rolled at step 1: never written again
    active = max((root / "orders-0").glob("*.log"))
    before = (first.stat().st_ino, first.stat().st_mtime_ns)
    run.seek(2)
    assert (first.stat().st_ino, first.stat().st_mtime_ns) == before
    assert not active.exists() or active == first          # step 3's newer segments are gone
    assert run.state_digest() == states[2]
    run.redo()
    assert run.state_digest() == states[3]
