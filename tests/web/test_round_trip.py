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
        published.append(json.loads(message["text"]))

    rt = runtime(tmp_path, publish=publish, now=Clock())
    sid = new_sandbox_id()
    await rt.attach(sid, "segments")
    sb = rt.sandboxes[sid]
    assert sb.engine._listener == sb.frames.add          # the frame builder hears the engine itself
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
