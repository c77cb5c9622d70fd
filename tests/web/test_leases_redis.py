"""Leases across processes (kafkaviz/live/leases.py, router.py) on a real Redis: a process
killed while its sockets watched another process's sandbox and held places in its address's
and a room member's quota. Nothing it held outlives it: the owner's watcher count drops once
the leases lapse (and the sandbox can be reclaimed), the address and the member open their
whole quota again. And a sandbox rebuilt after a takeover publishes a new generation."""
from __future__ import annotations

import asyncio

import pytest

from kafkaviz.live.runtime import group_name, new_sandbox_id

from .test_redis_layer import REDIS, redis_url  # noqa: F401 - the fixture
from .test_router import frames_until, process

pytestmark = [pytest.mark.asyncio,
              pytest.mark.skipif(REDIS is None, reason="redis-server is not installed (make test installs it)")]


async def test_a_killed_processs_watchers_and_places_lapse_and_the_quota_is_whole_again(tmp_path, redis_url):  # noqa: F811
    _, rt_a, a = process(tmp_path, "a", redis_url)
    _, rt_b, b = process(tmp_path, "b", redis_url)
    for rt in (rt_a, rt_b):
        rt.settings.update(LEASE_SECONDS=1, MAX_CONNECTIONS_PER_ADDRESS=3, IDLE_SECONDS=0)
    sid, address = new_sandbox_id(), "10.7.7.7"
    try:
        await b.attach(sid, "segments", holder="b-socket")           # B owns the sandbox
        await b.detach(sid, "b-socket")
        holders = [f"a-socket-{i}" for i in range(3)]
        for h in holders:                                              # A's three sockets on it
            assert await a.open_connection(address, h)
            await a.attach(sid, "segments", address=address, holder=h)
            assert await a.take_place("member:42", h, 4)
        assert rt_b.sandboxes[sid].watchers == 3
        assert not await b.open_connection(address, "b-1")             # the address is full
        for _ in range(3):                                             # A's heartbeat, while it lives
            await a.keep({sid: holders}, {address: holders}, {"member:42": holders})
            await asyncio.sleep(0.5)
        assert rt_b.health()["watchers"] == 3                          # renewed past the 1 s lease
        assert await b.count_places(["member:42", "member:43"]) == [3, 0]
        await a.stop()                                                 # kill -9: nothing more from A
        await asyncio.sleep(3.5)                                       # past both TTLs (1 s, 3 s)
        assert rt_b.health()["watchers"] == 0
        assert await b.count_places(["member:42"]) == [0]
        for i in range(3):
            assert await b.open_connection(address, f"b-{i}")
        assert not await b.open_connection(address, "b-3")
        assert await rt_b.reap() == [sid]                              # no ghost keeps it alive
    finally:
        if not a._stopped:
            await a.stop()
        await b.stop()
        rt_a.close_all()
        rt_b.close_all()


async def test_a_restored_sandbox_publishes_a_new_generation(tmp_path, redis_url):  # noqa: F811
    layer_a, rt_a, a = process(tmp_path, "a", redis_url)
    layer_b, rt_b, b = process(tmp_path, "b", redis_url)
    sid = new_sandbox_id()
    watcher = await layer_b.new_channel()
    await layer_b.group_add(group_name(sid), watcher)
    try:
        first = await a.attach(sid, "segments")
        await b.attach(sid, "segments", holder="student")
        for _ in range(3):
            await b.command(sid, {"cmd": "produce", "count": "1", "partition": "0"})
        old = await frames_until(layer_b, watcher, lambda f: f["frame_seq"] >= 3)
        assert old["gen"] == first["gen"]
        await a.stop()
        await b.command(sid, {"cmd": "produce", "count": "1", "partition": "0"})
        new = await frames_until(layer_b, watcher, lambda f: f["gen"] != old["gen"])
        # Numbered from 1 again, under a new generation, as a whole state: a page takes it.
        assert new["frame_seq"] < old["frame_seq"] and new["full"]
        snap = await b.snapshot(sid)
        assert snap["gen"] == new["gen"] and snap["state"]["partitions"][0]["log_end_offset"] == 4
    finally:
        await b.stop()
        rt_a.close_all()
        rt_b.close_all()


async def test_a_killed_owner_is_taken_over_without_waiting_for_an_answer(tmp_path, redis_url):  # noqa: F811
    """Each process keeps an alive key from a thread of its own; once a killed process's key
    has lapsed, the next request takes its sandbox over at once (no forward timeout, no
    waiting for its owner key to go stale), while a slow but living owner is still only
    "busy" (test_router.py)."""
    _, rt_a, a = process(tmp_path, "a", redis_url)
    _, rt_b, b = process(tmp_path, "b", redis_url)
    a.alive_ttl_s = b.alive_ttl_s = 1
    sid = new_sandbox_id()
    try:
        await a.attach(sid, "segments")
        await b.attach(sid, "segments", holder="student")
        await b.command(sid, {"cmd": "produce", "count": "2", "partition": "0"})
        await a.stop()                                       # killed: its alive key is no longer set
        await asyncio.sleep(1.5)
        loop = asyncio.get_running_loop()
        started = loop.time()
        reply = await b.command(sid, {"cmd": "produce", "count": "1", "partition": "0"})
        assert reply["type"] == "ack"
        assert loop.time() - started < b.forward_timeout_s       # taken over at once
        assert sid in rt_b.sandboxes
        state = (await b.snapshot(sid))["state"]
        assert state["partitions"][0]["log_end_offset"] == 3
    finally:
        await b.stop()
        rt_a.close_all()
        rt_b.close_all()
