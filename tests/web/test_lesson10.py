"""Lesson 10 ("Why leader epoch") end to end: the page, and the WebSocket driving a real
replicated cluster through the KIP-101 data-loss scenario under both truncation rules."""
from __future__ import annotations

import asyncio

import pytest
from django.conf import settings as django_settings
from django.test import Client

from engine.cluster.scenarios import get_scenario
from kafkaviz.live.replication import script_ends
from kafkaviz.asgi import application

from .conftest import ORIGIN
from .framing import TrackedCommunicator

PATH = "/ws/lessons/leader-epoch/"
SCENARIO = get_scenario("kip101-data-loss")
ENDS = script_ends(SCENARIO.commands())     # a lesson step ends after these commands
STEPS = len(ENDS)
# The step after which the controller has elected B (A down): advance past the session timeout.
_CRASH_A = max(i for i, s in enumerate(SCENARIO.steps) if s.command["cmd"] == "crash" and s.command["broker"] == 1)
ELECTION = 1 + next(k for k, end in enumerate(ENDS) if end >= _CRASH_A + 2)


@pytest.fixture
def lenient(runtime_settings):
    # A whole scenario is more commands than the default burst allows.
    runtime_settings.update(COMMAND_BURST=1000, COMMANDS_PER_SECOND=1000.0)
    return runtime_settings


@pytest.fixture
def headers():
    response = Client().get("/lessons/leader-epoch/")
    assert response.status_code == 200
    cookie = response.cookies[django_settings.SESSION_COOKIE_NAME].value
    return [(b"origin", ORIGIN), (b"cookie", f"{django_settings.SESSION_COOKIE_NAME}={cookie}".encode())]


def test_lesson_page_has_the_diagrams_controls_and_shortcuts(client):
    html = client.get("/lessons/leader-epoch/").content.decode()
    for needle in ('data-diagram="replica-lanes"', 'data-diagram="cluster"', 'data-diagram="epoch-cache"',
                   'data-diagram="step-timeline"', 'id="step-button"', 'id="back-button"', 'name="truncation"',
                   'value="kip101-divergence"', 'id="crash-button"', 'id="restart-button"', 'id="cut_link-button"',
                   'id="isolate-button"', 'id="pause_follower-button"', 'id="play-button"', 'id="scrubber"',
                   'id="speed"', 'id="keys-dialog"', "<kbd>→</kbd>", "js/replica-lanes.js", "js/stepper.js",
                   "OffsetsForLeaderEpoch", 'id="quiz-stale-hw"', 'data-task="see-loss"'):
        assert needle in html, needle
    # The page names sources by title, never by seed id.
    assert "seed 000" not in html.lower() and "Seeds:" not in html


def test_lesson_page_in_chinese_translates_the_controls(client):
    html = client.get("/lessons/leader-epoch/?lang=zh").content.decode()
    for needle in ("前进", "后退", "播放", "速度", "重置", "崩溃", "重启", "故障与操作", "集群", "为什么需要 leader epoch"):
        assert needle in html, needle
    assert 'ws-connect="/ws/lessons/leader-epoch/?lang=zh"' in html


def test_home_links_lesson_10_as_available(client):
    html = client.get("/").content.decode()
    assert 'href="/lessons/leader-epoch/"' in html


async def connect(headers):
    comm = TrackedCommunicator(application, PATH, headers=headers)
    connected, _ = await comm.connect()
    assert connected
    snapshot = await comm.receive_json_from(timeout=10)
    assert snapshot["type"] == "frame" and snapshot["kind"] == "replication"
    return comm, snapshot


async def command(comm, message, timeout=20.0):
    """Send a command; return (ack or error, the last frame it caused)."""
    await comm.send_json_to(message)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    reply, frame = None, None
    while reply is None or (reply["type"] == "ack" and frame is None):
        msg = await comm.receive_json_from(timeout=max(0.1, deadline - loop.time()))
        if msg["type"] == "frame":
            frame = msg
        else:
            reply = msg
    # Frames of one command may be split by the frame interval: drain what is queued.
    while not await comm.receive_nothing(timeout=0.15):
        msg = await comm.receive_json_from()
        if msg["type"] == "frame":
            frame = msg
    return reply, frame


def logs(state):
    return {lane["broker"]: [r["value"] for r in lane.get("records", [])] for lane in state["lanes"]}


async def run_to_end(comm, truncation):
    reply, frame = await command(comm, {"cmd": "load", "scenario": "kip101-data-loss", "truncation": truncation})
    assert reply["type"] == "ack" and frame["state"]["run"]["step"] == 0 and frame["state"]["truncation"] == truncation
    for n in range(1, STEPS + 1):
        reply, frame = await command(comm, {"cmd": "step"})
        assert reply["type"] == "ack", reply
        assert frame["state"]["run"]["step"] == n
    return frame


@pytest.mark.asyncio
async def test_hw_truncation_ends_with_lanes_missing_the_acknowledged_m2(lenient, runtime, headers):
    comm, _ = await connect(headers)
    frame = await run_to_end(comm, "hw")
    state = frame["state"]
    assert logs(state) == {1: ["m1", "m3"], 2: ["m1", "m3"]}
    assert state["verdict"]["lost"] == ["m2"] and state["verdict"]["kind"] == "lost"
    assert any(a["value"] == "m2" and a["lost"] for a in state["acknowledged"])
    await comm.disconnect()


@pytest.mark.asyncio
async def test_epoch_truncation_keeps_m2_on_both_lanes(lenient, runtime, headers):
    comm, _ = await connect(headers)
    frame = await run_to_end(comm, "epoch")
    state = frame["state"]
    assert logs(state) == {1: ["m1", "m2", "m3"], 2: ["m1", "m2", "m3"]}
    assert state["verdict"]["lost"] == [] and state["verdict"]["kind"] == "ok"
    assert [e[0] for e in state["lanes"][0]["epoch_cache"]] == [0, 1]
    await comm.disconnect()


@pytest.mark.asyncio
async def test_step_back_returns_exactly_the_previous_state(lenient, runtime, headers):
    comm, _ = await connect(headers)
    await command(comm, {"cmd": "load", "scenario": "kip101-data-loss", "truncation": "hw"})
    frame = None
    for _ in range(ELECTION - 1):
        _, frame = await command(comm, {"cmd": "step"})
    before = frame["state"]
    _, after_step = await command(comm, {"cmd": "step"})   # the election: B leads without m2
    assert after_step["state"] != before
    assert any(ev["kind"] == "leader_elected" and ev["chosen"] == 2 for ev in after_step["events"])
    reply, back = await command(comm, {"cmd": "back"})
    assert reply["type"] == "ack"
    # Everything but the try-its (a task once done stays done) is as it was.
    assert {k: v for k, v in back["state"].items() if k != "tasks"} == {k: v for k, v in before.items() if k != "tasks"}
    assert any(ev["kind"] == "run_moved" and ev["how"] == "back" for ev in back["events"])
    # Stepping forward again replays the same command with the same result.
    _, again = await command(comm, {"cmd": "step"})
    assert {k: v for k, v in again["state"].items() if k != "tasks"} == \
        {k: v for k, v in after_step["state"].items() if k != "tasks"}
    await comm.disconnect()


@pytest.mark.asyncio
async def test_a_refused_command_gets_an_error_and_the_connection_stays(lenient, runtime, headers):
    comm, _ = await connect(headers)
    reply, _ = await command(comm, {"cmd": "restart", "broker": "0"})
    assert reply["type"] == "error" and reply["code"] == "engine" and "running" in reply["message"]
    reply, frame = await command(comm, {"cmd": "step"})
    assert reply["type"] == "ack" and frame["state"]["run"]["step"] == 1
    await comm.disconnect()


def test_explanation_partial_in_chinese_for_htmx(client):
    response = client.get("/lessons/leader-epoch/?lang=zh", HTTP_HX_REQUEST="true", HTTP_HX_TARGET="explanation")
    html = response.content.decode()
    assert response.status_code == 200
    assert html.lstrip().startswith('<section id="explanation"') and "OffsetsForLeaderEpoch" in html
    assert "为什么需要 leader epoch" in html and "高水位" in html
