"""Lesson 10's sandbox kind (``kafkaviz/live/replication.py``) without the WebSocket:
its commands are validated, refused commands leave the sandbox usable, stepping and
rewinding follow the engine's Run."""
from __future__ import annotations

import json

import pytest
from django.conf import settings as django_settings

from engine.cluster.scenarios import get_scenario
from kafkaviz.live.kinds import Limits
from kafkaviz.live.replication import ReplicationSandbox
from kafkaviz.live.runtime import Runtime, new_sandbox_id
from kafkaviz.live.validation import CommandError

from .framing import StateTracker

def make_kind(tmp_path, events=None):
    return ReplicationSandbox(tmp_path / "box", seed=7, limits=Limits(100, 10**7),
                              listener=None if events is None else events.append)


def make_runtime(tmp_path):
    sent = []
    tracker = StateTracker()

    async def publish(group, message):
        sent.append(tracker.message(message))

    settings = {**django_settings.KAFKAVIZ_RUNTIME, "FRAME_INTERVAL_MS": 0, "REAP_EVERY_SECONDS": 0,
                "COMMAND_BURST": 1000, "COMMANDS_PER_SECOND": 1000.0}
    return Runtime(tmp_path / "data", settings=settings, publish=publish), sent


async def attached(tmp_path):
    rt, sent = make_runtime(tmp_path)
    sid = new_sandbox_id()
    await rt.attach(sid, "replication")
    return rt, sid, sent


def values(lane):
    return [r["value"] for r in lane.get("records", [])]


@pytest.mark.asyncio
async def test_crash_of_an_unknown_broker_is_refused_naming_the_field(tmp_path):
    rt, sid, _ = await attached(tmp_path)
    with pytest.raises(CommandError) as err:
        await rt.command(sid, {"type": "crash", "broker": "7"})
    assert err.value.field == "broker" and "between 0 and 2" in err.value.message
    reply = await rt.command(sid, {"type": "step"})   # the sandbox still works
    assert reply["type"] == "ack"
    rt.close_all()


@pytest.mark.asyncio
async def test_crash_of_a_dead_broker_is_refused_and_changes_nothing(tmp_path):
    rt, sid, _ = await attached(tmp_path)
    await rt.command(sid, {"type": "crash", "broker": "2"})
    engine = rt.sandboxes[sid].engine
    before = json.dumps(engine.state(), sort_keys=True)
    with pytest.raises(CommandError) as err:
        await rt.command(sid, {"type": "crash", "broker": "2"})
    assert err.value.code == "invalid" and "already down" in err.value.message and err.value.field == "broker"
    assert json.dumps(engine.state(), sort_keys=True) == before
    reply = await rt.command(sid, {"type": "restart", "broker": "2"})
    assert reply["type"] == "ack"
    rt.close_all()


@pytest.mark.asyncio
async def test_restart_of_a_running_broker_is_refused(tmp_path):
    rt, sid, _ = await attached(tmp_path)
    with pytest.raises(CommandError) as err:
        await rt.command(sid, {"type": "restart", "broker": "1"})
    assert "running" in err.value.message and err.value.command == "restart"
    assert (await rt.command(sid, {"type": "advance", "ms": "500"}))["type"] == "ack"
    rt.close_all()


@pytest.mark.asyncio
async def test_load_refuses_an_unknown_scenario_and_truncation(tmp_path):
    rt, sid, _ = await attached(tmp_path)
    for bad in ({"scenario": "no-such"}, {"truncation": "leo"}):
        with pytest.raises(CommandError) as err:
            await rt.command(sid, {"type": "load", **bad})
        assert err.value.field == next(iter(bad))
    rt.close_all()


@pytest.mark.asyncio
async def test_step_past_the_end_and_back_before_the_start_are_clear_errors(tmp_path):
    kind = make_kind(tmp_path)
    with pytest.raises(CommandError, match="start of the run"):
        kind.back()
    while kind.run.position < len(kind.run.log):
        kind.step()
    with pytest.raises(CommandError, match="no next step"):
        kind.step()
    kind.close()


def test_every_command_sends_a_marker_so_a_frame_follows_even_without_engine_events(tmp_path):
    got = []
    kind = make_kind(tmp_path, got)
    kind.step()                       # create_topic
    kind.step()                       # advance
    got.clear()
    kind.step()                       # produce: nothing happens until the clock moves
    assert [e.event.kind for e in got] == ["run_moved"]
    assert got[0].event.step == 3 and got[0].event.how == "step"
    kind.close()


def test_a_free_command_replaces_the_rest_of_the_scenario(tmp_path):
    kind = make_kind(tmp_path)
    kind.step()
    kind.crash(2)
    st = kind.state()
    assert st["step"] == 2 and st["steps_total"] == 2 and st["on_script"] is False
    assert st["steps"][1]["label"] == "crash broker 2" and not st["steps"][1]["scripted"]
    assert [b["alive"] for b in st["brokers"]] == [True, True, False]
    kind.close()


def test_back_to_the_first_steps_gives_the_same_state_as_before(tmp_path):
    kind = make_kind(tmp_path)
    states = [json.dumps(kind.state(), sort_keys=True)]
    for _ in range(3):
        kind.step()
        states.append(json.dumps(kind.state(), sort_keys=True))
    for k in (2, 1, 0):
        kind.back()
        assert json.dumps(kind.state(), sort_keys=True) == states[k]
    kind.close()


def test_epoch_mode_keeps_the_acknowledged_m2_and_hw_mode_loses_it(tmp_path):
    kind = make_kind(tmp_path)
    finals = {}
    for mode in ("hw", "epoch"):
        kind.load("kip101-data-loss", mode)
        while kind.run.position < len(kind.run.log):
            kind.step()
        st = kind.state()
        finals[mode] = ({lane["broker"]: values(lane) for lane in st["lanes"]}, st["lost"])
    assert finals["hw"] == ({1: ["m1", "m3"], 2: ["m1", "m3"]}, ["m2"])
    assert finals["epoch"] == ({1: ["m1", "m2", "m3"], 2: ["m1", "m2", "m3"]}, [])
    kind.close()


def test_produce_before_the_topic_exists_is_a_clear_error(tmp_path):
    kind = make_kind(tmp_path)
    with pytest.raises(CommandError, match="does not exist yet"):
        kind.produce("y")
    assert kind.state()["step"] == 0 and kind.state()["steps_total"] == len(get_scenario("kip101-data-loss").steps)
    kind.step()
    kind.produce("y")
    assert kind.state()["steps"][-1]["label"] == "produce y (acks=all)"
    kind.close()
