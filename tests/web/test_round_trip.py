"""Issue 18's cost goal for the web wing: a click's round trip crosses as few hands as it
can (docs/web.md, "The round trip of one click"). Each test fails if a layer that only
passes things along comes back."""
from __future__ import annotations

import asyncio
import inspect
import json
from pathlib import Path

import pytest
from django.conf import settings as django_settings

from kafkaviz.live import router as router_module
from kafkaviz.live.router import RedisRouter, get_router
from kafkaviz.live.runtime import Runtime, new_sandbox_id, set_runtime

REPO = Path(__file__).resolve().parents[2]

# What a socket asks of wherever its sandbox runs: one API, the runtime's and the Redis router's.
SOCKET_API = ("attach", "command", "snapshot", "detach", "discard", "reclaim_idle", "open_connection",
              "close_connection", "keep", "take_place", "drop_place", "count_places")


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def positional(fn) -> list[str]:
    return [p.name for p in inspect.signature(fn).parameters.values() if p.kind != p.KEYWORD_ONLY]


def runtime(tmp_path, publish=None, now=None) -> Runtime:
    return Runtime(tmp_path / "data", settings={**django_settings.KAFKAVIZ_RUNTIME, "REAP_EVERY_SECONDS": 0,
                                                 "LEASE_SECONDS": 20}, publish=publish, now=now or Clock())


def test_without_redis_the_socket_talks_to_the_runtime_itself(tmp_path, monkeypatch):
    monkeypatch.delenv("REDIS_URL", raising=False)
    monkeypatch.setattr(router_module, "_router", None)
    rt = runtime(tmp_path)
    previous = set_runtime(rt)
    try:
        assert get_router() is rt
    finally:
        set_runtime(previous)
    for name in SOCKET_API:
        for cls in (Runtime, RedisRouter):
            assert inspect.iscoroutinefunction(getattr(cls, name)), (cls.__name__, name)
        assert positional(getattr(Runtime, name)) == positional(getattr(RedisRouter, name)), name
    assert not hasattr(router_module, "LocalRouter")


@pytest.mark.asyncio
async def test_a_step_is_run_framed_and_published_in_one_worker_call(tmp_path, monkeypatch):
    published: list[dict] = []

    async def publish(group, message):
        assert message["type"] == "websocket.send"     # the ASGI event each consumer hands on as it is
        published.append(json.loads(message["text"]))

    rt = runtime(tmp_path, publish=publish, now=Clock())
    sid = new_sandbox_id()
    await rt.attach(sid, "segments")
    sb = rt.sandboxes[sid]
    # The frame builder hears the run's event log itself, not through the kind.
    assert sb.frames.add in sb.engine.events._listeners and sb.engine._emit in sb.engine.events._listeners
    calls = []
    run = rt._run

    def counted(*args, **kwargs):
        calls.append(args[1].type)
        return run(*args, **kwargs)

    monkeypatch.setattr(rt, "_run", counted)
    reply = await rt.command(sid, {"cmd": "step"})
    assert reply["type"] == "ack" and calls == ["step"]
    assert published and published[-1]["state"]["run"]["step"] == 1   # left before the reply came back
    rt.close_all()


@pytest.mark.asyncio
async def test_the_runtimes_capped_places_are_leases_the_heartbeat_renews(tmp_path):
    clock = Clock()
    rt = runtime(tmp_path, now=clock)
    assert await rt.take_place("member:1", "a", 2) and await rt.take_place("member:1", "b", 2)
    assert not await rt.take_place("member:1", "c", 2)
    assert await rt.take_place("member:1", "a", 2)                   # a holder keeps its place
    clock.t += 15
    await rt.keep({}, {}, {"member:1": ["a"]})                        # only a's socket is alive
    clock.t += 10
    assert await rt.count_places(["member:1", "member:2"]) == [1, 0]  # b's lease lapsed
    await rt.drop_place("member:1", "a")
    assert await rt.count_places(["member:1"]) == [0] and rt.places == {}
    assert await asyncio.wait_for(rt.reclaim_idle([new_sandbox_id()]), 5) == 0


def test_the_browser_dispatches_a_frame_once_to_every_diagram_the_step_controls_included():
    live = (REPO / "static/js/live.js").read_text()
    assert "onAnyFrame" not in live and "KV.stepper.update" not in live
    assert 'KV.register("stepper"' in (REPO / "static/js/stepper.js").read_text()
    for page in ("templates/lessons/lesson.html", "templates/classroom/present.html"):
        assert 'data-diagram="stepper"' in (REPO / page).read_text(), page


def test_no_layer_that_only_passes_a_command_or_a_frame_along_comes_back():
    from channels.consumer import AsyncConsumer

    from kafkaviz.classroom.consumers import RoomConsumer
    from kafkaviz.live.consumers import LessonConsumer
    from kafkaviz.live.frames import FrameBuilder
    from kafkaviz.live.kinds import SandboxKind
    from kafkaviz.live.replication import ReplicationSandbox

    # One receive parses, authorises and runs a message (a room answers its own in authorise).
    assert "receive_json" not in vars(LessonConsumer) and "receive_json" not in vars(RoomConsumer)
    # A frame is the ASGI event the consumer hands to its server: no method of ours re-wraps it.
    assert LessonConsumer.websocket_send is AsyncConsumer.send and not hasattr(LessonConsumer, "sandbox_frame")
    # The runtime calls the command's handler (no kind's execute in between) and publishes itself.
    assert not hasattr(SandboxKind, "execute") and "execute" not in vars(ReplicationSandbox)
    assert not hasattr(Runtime, "_publish") and not hasattr(Runtime, "_take")
    # The frame builder builds its frames in one call.
    assert not hasattr(FrameBuilder, "take") and not hasattr(FrameBuilder, "_frame")


def test_the_browser_hands_a_frame_from_the_socket_to_the_diagrams_in_three_calls():
    live = (REPO / "static/js/live.js").read_text()
    assert 'addEventListener("htmx:wsBeforeMessage", dispatch)' in live      # the listener is the dispatch
    assert 'KV.on("frame", onFrame)' in live and "function draw(" in live
    on_frame = live[live.index("function onFrame("):]
    on_frame = on_frame[:on_frame.index("\n  }\n")]
    assert "mod.update(node, frame)" in on_frame and "draw(" not in on_frame.replace("drawBelow", "")
    # Nothing of ours rewrites a form's message on its way to the socket.
    assert "htmx:wsConfigSend" not in live
