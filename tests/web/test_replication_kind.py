"""The ``replication`` sandbox kind (``kafkaviz/live/replication.py``) without the
WebSocket: its commands are the engine's (specs generated from the engine's metadata,
refusals from the engine's own checks), refused commands leave the sandbox usable,
stepping and rewinding follow the engine's Run, and the verdict says what is true now."""
from __future__ import annotations

import dataclasses
import json

import pytest
from django.conf import settings as django_settings

from engine.cluster.commands import COMMANDS as ENGINE_COMMANDS
from engine.cluster.scenarios import get_scenario
from kafkaviz.lessons.content import load_content
from kafkaviz.live.kinds import run_spec
from kafkaviz.live.kinds import Limits
from kafkaviz.live.replication import WEB_CAPS, ReplicationSandbox, script_ends
from kafkaviz.live.runtime import Runtime, new_sandbox_id
from kafkaviz.live.validation import CommandError

from .framing import StateTracker

LESSON = load_content("leader-epoch")


def make_kind(tmp_path, events=None):
    return ReplicationSandbox(tmp_path / "box", seed=7, limits=Limits(100, 10**7), lesson=LESSON,
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
    await rt.attach(sid, "leader-epoch")
    return rt, sid, sent


def values(lane):
    return [r["value"] for r in lane.get("records", [])]


def run_to_end(kind):
    while kind.run.position < len(kind.run.log):
        kind.step()


def test_command_specs_are_generated_from_the_engine_vocabulary():
    specs = ReplicationSandbox.command_specs(LESSON.scenario)
    for name in LESSON.scenario["commands"]:
        assert name in specs, name
        engine_fields = {f.name for f in dataclasses.fields(ENGINE_COMMANDS[name])}
        assert {f.name for f in specs[name].fields} <= engine_fields
        assert {f.name for f in dataclasses.fields(ENGINE_COMMANDS[name])
                if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING} <= \
            {f.name for f in specs[name].fields}
        assert specs[name].help == ENGINE_COMMANDS[name].summary
    slow = {f.name: f for f in specs["slow_follower"].fields}
    assert slow["delay_ms"].min == 0 and slow["delay_ms"].max == WEB_CAPS["delay_ms"]
    produce = {f.name: f for f in specs["produce"].fields}
    assert produce["topic"].default == "t" and not produce["topic"].required


@pytest.mark.asyncio
async def test_crash_of_an_unknown_broker_is_refused_by_the_engine(tmp_path):
    rt, sid, _ = await attached(tmp_path)
    with pytest.raises(CommandError) as err:
        await rt.command(sid, {"cmd": "crash", "broker": "7"})
    assert err.value.code == "engine" and "unknown broker 7" in err.value.message
    reply = await rt.command(sid, {"cmd": "step"})   # the sandbox still works
    assert reply["type"] == "ack"
    rt.close_all()


@pytest.mark.asyncio
async def test_crash_of_a_dead_broker_is_refused_and_changes_nothing(tmp_path):
    rt, sid, _ = await attached(tmp_path)
    await rt.command(sid, {"cmd": "crash", "broker": "2"})
    engine = rt.sandboxes[sid].engine
    before = json.dumps(engine.state(), sort_keys=True)
    with pytest.raises(CommandError) as err:
        await rt.command(sid, {"cmd": "crash", "broker": "2"})
    assert err.value.code == "engine" and "already down" in err.value.message
    assert json.dumps(engine.state(), sort_keys=True) == before
    reply = await rt.command(sid, {"cmd": "restart", "broker": "2"})
    assert reply["type"] == "ack"
    rt.close_all()


@pytest.mark.asyncio
async def test_restart_of_a_running_broker_is_refused(tmp_path):
    rt, sid, _ = await attached(tmp_path)
    with pytest.raises(CommandError) as err:
        await rt.command(sid, {"cmd": "restart", "broker": "1"})
    assert "running" in err.value.message and err.value.command == "restart"
    assert (await rt.command(sid, {"cmd": "advance", "ms": "500"}))["type"] == "ack"
    rt.close_all()


@pytest.mark.asyncio
async def test_web_caps_bound_engine_fields_without_a_small_limit(tmp_path):
    rt, sid, _ = await attached(tmp_path)
    with pytest.raises(CommandError) as err:
        await rt.command(sid, {"cmd": "advance", "ms": str(7 * 24 * 3600 * 1000)})
    assert err.value.field == "ms" and "between 0 and 60000" in err.value.message
    rt.close_all()


@pytest.mark.asyncio
async def test_load_refuses_an_unknown_scenario_and_truncation(tmp_path):
    rt, sid, _ = await attached(tmp_path)
    for bad in ({"scenario": "no-such"}, {"truncation": "leo"}):
        with pytest.raises(CommandError) as err:
            await rt.command(sid, {"cmd": "load", **bad})
        assert err.value.field == next(iter(bad))
    rt.close_all()


def test_step_past_the_end_and_back_before_the_start_are_clear_errors(tmp_path):
    kind = make_kind(tmp_path)
    with pytest.raises(CommandError, match="start of the run"):
        kind.back()
    run_to_end(kind)
    with pytest.raises(CommandError, match="no next step"):
        kind.step()
    kind.close()


def test_every_step_sends_a_marker_so_a_frame_follows_even_without_engine_events(tmp_path):
    got = []
    kind = make_kind(tmp_path, got)
    kind.step()                       # create_topic
    kind.step()                       # advance
    got.clear()
    run_spec(kind, kind.commands["produce"], {"topic": "t", "acks": "all", "value": "x"})
    assert [e.event.kind for e in got] == ["run_moved"]     # nothing happens until the clock moves
    assert got[0].event.step == 3 and got[0].event.how == "command"
    kind.close()


def test_a_scenario_step_runs_on_through_commands_that_wait_for_the_clock(tmp_path):
    kind = make_kind(tmp_path)
    kind.step()
    kind.step()
    kind.step()                       # produce m1, then the advance that sends it
    st = kind.state()["run"]
    assert st["step"] == 3 and kind.run.position == 4
    assert st["steps"][2]["label"] == "produce m1 (acks=all); advance the clock 1000 ms"
    assert any(e["kind"] == "produce_received" for e in kind.step_events())
    kind.back()
    assert kind.run.position == 2 and kind.state()["run"]["step"] == 2
    kind.close()


def test_a_learners_produce_that_matches_the_script_is_a_step_of_its_own(tmp_path):
    kind = make_kind(tmp_path)
    kind.step()
    kind.step()
    run_spec(kind, kind.commands["produce"], {"topic": "t", "acks": "all", "value": "m1"})   # the script's next command
    run = kind.state()["run"]
    assert run["step"] == 3 and run["total"] == 3
    assert not run["steps"][2]["scripted"] and run["steps"][2]["say"] == ""   # not the lesson's produce-and-advance
    assert kind.state()["prediction"] is None
    kind.close()


def test_a_free_command_replaces_the_rest_of_the_scenario(tmp_path):
    kind = make_kind(tmp_path)
    kind.step()
    spec = kind.commands["crash"]
    run_spec(kind, spec, {"broker": 2})
    st = kind.state()
    run = st["run"]
    assert run["step"] == 2 and run["total"] == 2 and run["on_script"] is False
    assert run["steps"][1]["label"] == "crash broker 2" and not run["steps"][1]["scripted"]
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
    kind.seek(3)
    assert json.dumps(kind.state(), sort_keys=True) == states[3]
    kind.close()


def test_epoch_mode_keeps_the_acknowledged_m2_and_hw_mode_loses_it(tmp_path):
    kind = make_kind(tmp_path)
    finals = {}
    for mode in ("hw", "epoch"):
        kind.load("kip101-data-loss", mode)
        run_to_end(kind)
        st = kind.state()
        finals[mode] = ({lane["broker"]: values(lane) for lane in st["lanes"]}, st["verdict"]["lost"],
                        st["verdict"]["kind"])
    assert finals["hw"] == ({1: ["m1", "m3"], 2: ["m1", "m3"]}, ["m2"], "lost")
    assert finals["epoch"] == ({1: ["m1", "m2", "m3"], 2: ["m1", "m2", "m3"]}, [], "ok")
    kind.close()


def test_produce_before_the_topic_exists_is_refused_by_the_engine(tmp_path):
    from engine.errors import KafkaError

    kind = make_kind(tmp_path)
    with pytest.raises(KafkaError, match="unknown topic 't'"):
        run_spec(kind, kind.commands["produce"], {"topic": "t", "partition": 0, "acks": "all", "value": "y"})
    assert kind.state()["run"]["step"] == 0
    assert kind.state()["run"]["total"] == len(script_ends(get_scenario("kip101-data-loss").commands()))
    kind.step()
    run_spec(kind, kind.commands["produce"], {"topic": "t", "partition": 0, "acks": "all", "value": "y"})
    assert kind.state()["run"]["steps"][-1]["label"] == "produce y (acks=all)"
    kind.close()


def test_with_every_broker_down_the_verdict_says_there_is_no_leader(tmp_path):
    kind = make_kind(tmp_path)
    for _ in range(4):                # topic, leader, m1, m1 acknowledged
        kind.step()
    assert kind.state()["verdict"]["kind"] == "ok"
    for b in (0, 1, 2):
        run_spec(kind, kind.commands["crash"], {"broker": b})
    run_spec(kind, kind.commands["produce"], {"topic": "t", "partition": 0, "acks": "all", "value": "x"})
    run_spec(kind, kind.commands["advance"], {"ms": 1000})
    st = kind.state()
    assert st["verdict"]["kind"] == "no_leader"
    # The narration of the produce step says what the engine did, not "Sent".
    kind.back()
    said = " ".join(kind.state()["run"]["happened"])
    assert "Sent" not in said
    kind.close()


def test_step_narration_comes_from_the_step_events_not_ahead_of_them(tmp_path):
    """KIP-101 data loss, HW rule: B's truncation is narrated in the step where the engine
    truncates, and the step that restarts B says only what the restart did."""
    kind = make_kind(tmp_path)
    script = get_scenario("kip101-data-loss").commands()
    ends = script_ends(script)
    restart_cmd = next(i for i, c in enumerate(script) if c["cmd"] == "restart" and c["broker"] == 2) + 1
    restart_b = 1 + next(k for k, end in enumerate(ends) if end >= restart_cmd)
    truncated_at = None
    for n in range(1, len(ends) + 1):
        kind.step()
        happened = " ".join(kind.state()["run"]["happened"])
        events = kind.step_events()
        cut = [e for e in events if e["kind"] == "replica_truncated" and e["broker"] == 2]
        if n == restart_b:
            assert "started again" in happened and "truncated" not in happened
        if cut and truncated_at is None:
            truncated_at = n
            assert "broker 2 truncated t-0 from offset 2 to 1" in happened
            lane_b = next(lane for lane in kind.state()["lanes"] if lane["broker"] == 2)
            assert values(lane_b) == ["m1"]        # the diagram shows the cut in the same step
    assert truncated_at is not None and truncated_at > restart_b
    kind.close()


def test_a_rule_specific_note_shows_only_under_its_rule(tmp_path):
    kind = make_kind(tmp_path)
    for rule in ("hw", "epoch"):
        kind.load("kip101-divergence", rule)
        steps = kind.state()["run"]["steps"]
        say = steps[10]["say"]          # step 11: A restarts and follows B
        assert ("keeps what is below its own HW" in say) == (rule == "hw")
        assert ("asks B where epoch 0 ends" in say) == (rule == "epoch")
    kind.close()


@pytest.mark.asyncio
async def test_a_consumer_reads_only_below_the_high_watermark_and_the_state_shows_where_it_is(tmp_path):
    rt, sid, _ = await attached(tmp_path)
    kind = rt.sandboxes[sid].engine
    for _ in range(4):
        await rt.command(sid, {"cmd": "step"})
    assert kind.state()["consumer"] is None
    await rt.command(sid, {"cmd": "produce", "value": "x", "acks": "1"})
    part = kind.state()["partition"]
    hw, leader = part["high_watermark"], part["leader"]
    assert hw >= 1
    reply = await rt.command(sid, {"cmd": "consume", "offset": "0"})
    assert reply["type"] == "ack"
    consumer = kind.state()["consumer"]
    assert consumer["broker"] == leader and consumer["offset"] == 0
    assert consumer["next_offset"] == hw == consumer["high_watermark"] and consumer["records"] == hw
    before = kind.run.state_digest()
    with pytest.raises(CommandError) as refused:           # past the HW: the engine says no, nothing changes
        await rt.command(sid, {"cmd": "consume", "offset": str(hw + 1)})
    assert refused.value.code == "engine"
    assert kind.run.state_digest() == before
    rt.close_all()
