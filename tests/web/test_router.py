"""Commands across processes (kafkaviz/live/router.py): two runtimes, each with its own
Redis channel layer and router, play two ASGI processes on one real Redis. A request in
the process that does not own the sandbox is forwarded to the owner; when the owner stops
answering, the next request takes the sandbox over and rebuilds it from the saved run."""
from __future__ import annotations

import asyncio
import contextlib
import json

import pytest
from channels_redis.core import RedisChannelLayer
from django.conf import settings as django_settings

from kafkaviz.live.router import OWNER_KEY, RedisRouter
from kafkaviz.live.runtime import Runtime, group_name, new_sandbox_id
from kafkaviz.live.validation import CommandError

from .test_redis_layer import REDIS, redis_url  # noqa: F401 - the fixture

pytestmark = [pytest.mark.asyncio,
              pytest.mark.skipif(REDIS is None, reason="redis-server is not installed (make test installs it)")]


def process(tmp_path, name, url):
    layer = RedisChannelLayer(hosts=[url])
    settings = {**django_settings.KAFKAVIZ_RUNTIME, "FRAME_INTERVAL_MS": 0, "REAP_EVERY_SECONDS": 0,
                "COMMAND_BURST": 1000, "COMMANDS_PER_SECOND": 1000.0}
    runtime = Runtime(tmp_path / name, settings=settings, publish=layer.group_send)
    router = RedisRouter(layer, url, runtime, forward_timeout_s=2.0, owner_ttl_s=3, refresh_every_s=0.3)
    return layer, runtime, router


async def frames_until(layer, channel, predicate, timeout=5.0):
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        msg = await asyncio.wait_for(layer.receive(channel), max(0.01, deadline - loop.time()))
        frame = json.loads(msg["text"])
        if predicate(frame):
            return frame


async def test_a_command_in_another_process_runs_on_the_owner(tmp_path, redis_url):  # noqa: F811
    layer_a, rt_a, a = process(tmp_path, "a", redis_url)
    layer_b, rt_b, b = process(tmp_path, "b", redis_url)
    sid = new_sandbox_id()
    try:
        snap_a = await a.attach(sid, "segments")
        snap_b = await b.attach(sid, "segments")            # forwarded: A owns it
        assert sid in rt_a.sandboxes and sid not in rt_b.sandboxes
        assert snap_b["state"]["partitions"] == snap_a["state"]["partitions"]
        assert rt_a.sandboxes[sid].watchers == 2            # B's watcher is counted where the engine is

        reply = await b.command(sid, {"cmd": "produce", "count": "4", "partition": "0"})
        assert reply["type"] == "ack" and reply["command"] == "produce"
        state = (await b.snapshot(sid))["state"]
        assert state == (await a.snapshot(sid))["state"]
        assert state["partitions"][0]["log_end_offset"] == 4
        with pytest.raises(CommandError) as refused:         # the owner's refusal comes back as it was
            await b.command(sid, {"cmd": "produce", "count": "100000", "partition": "0"})
        assert refused.value.code == "invalid" and refused.value.field == "count"
        await b.detach(sid)
        assert rt_a.sandboxes[sid].watchers == 1
    finally:
        await a.stop()
        await b.stop()
        rt_a.close_all()
        rt_b.close_all()


async def test_when_the_owner_dies_the_next_command_restores_the_sandbox_elsewhere(tmp_path, redis_url):  # noqa: F811
    layer_a, rt_a, a = process(tmp_path, "a", redis_url)
    layer_b, rt_b, b = process(tmp_path, "b", redis_url)
    sid = new_sandbox_id()
    try:
        await a.attach(sid, "segments")
        await b.attach(sid, "segments")
        for _ in range(3):
            await b.command(sid, {"cmd": "produce", "count": "3", "partition": "1"})
        before = rt_a.current_run(sid)
        await a.stop()                                       # process A dies: no answers, no refreshes

        reply = await b.command(sid, {"cmd": "produce", "count": "2", "partition": "1"})
        assert reply["type"] == "ack"
        assert sid in rt_b.sandboxes
        after = rt_b.current_run(sid)["data"]["run"]
        assert after["log"][:-1] == before["data"]["run"]["log"]      # nothing the class saw is lost
        assert after["log"][-1]["do"] == [{"cmd": "produce", "partition": 1, "count": 2}]   # defaults left out
        state = (await b.snapshot(sid))["state"]
        p1 = next(p for p in state["partitions"] if p["partition"] == 1)
        assert p1["log_end_offset"] == 11
        assert (await b.redis.get(OWNER_KEY.format(sid))).decode() == b.channel
        assert rt_b.sandboxes[sid].watchers == 1               # B's own watcher, attached again
    finally:
        await b.stop()
        rt_a.close_all()
        rt_b.close_all()


async def test_an_owner_releases_what_it_reclaimed_and_keeps_what_lives(tmp_path, redis_url):  # noqa: F811
    _, rt_a, a = process(tmp_path, "a", redis_url)
    sid, gone = new_sandbox_id(), new_sandbox_id()
    try:
        await a.attach(sid, "segments")
        await a.attach(gone, "segments")
        await a.detach(gone)
        rt_a.settings["IDLE_SECONDS"] = 0
        rt_a.reap_idle()
        a.owned = {sid: when - 60 for sid, when in a.owned.items()}     # claimed long ago (no grace left)
        await a.refresh()
        assert await a.redis.get(OWNER_KEY.format(gone)) is None
        assert (await a.redis.get(OWNER_KEY.format(sid))).decode() == a.channel
        assert await a.redis.ttl(OWNER_KEY.format(sid)) > 1
    finally:
        await a.stop()
        rt_a.close_all()


async def test_a_slow_owner_that_still_refreshes_is_not_taken_over(tmp_path, redis_url):  # noqa: F811
    _, rt_a, a = process(tmp_path, "a", redis_url)
    _, rt_b, b = process(tmp_path, "b", redis_url)
    sid = new_sandbox_id()
    try:
        await a.attach(sid, "segments")
        b.forward_timeout_s = 0.5
        serve = a._local

        async def slow(op, s, args):
            await asyncio.sleep(1.0)
            return await serve(op, s, args)
        a._local = slow
        with pytest.raises(CommandError) as busy:
            await b.command(sid, {"cmd": "produce", "count": "1", "partition": "0"})
        assert busy.value.code == "busy"
        assert sid not in rt_b.sandboxes                      # never two engines for one sandbox
        assert (await b.redis.get(OWNER_KEY.format(sid))).decode() == a.channel
    finally:
        await a.stop()
        await b.stop()
        rt_a.close_all()
        rt_b.close_all()


# ---- per-address quotas across processes ------------------------------------------------------

@contextlib.asynccontextmanager
async def two_processes(tmp_path, url, **limits):
    """Routers A and B on one Redis, each runtime with ``limits`` over the test settings;
    stopped and closed afterwards (a router a test already stopped is left as it is)."""
    (_, rt_a, a), (_, rt_b, b) = process(tmp_path, "a", url), process(tmp_path, "b", url)
    for rt in (rt_a, rt_b):
        rt.settings.update(limits)
    try:
        yield (rt_a, a), (rt_b, b)
    finally:
        for router in (a, b):
            if not router._stopped:
                await router.stop()
        rt_a.close_all()
        rt_b.close_all()

async def test_the_socket_quota_of_an_address_counts_every_processs_sockets(tmp_path, redis_url):  # noqa: F811
    """Two processes, cap 3: the address's fourth socket is refused in whichever process it
    lands, another address is not affected, and a closed socket frees its place for all."""
    async with two_processes(tmp_path, redis_url, MAX_CONNECTIONS_PER_ADDRESS=3) as ((_, a), (_, b)):
        assert await a.open_connection("10.0.0.1") and await b.open_connection("10.0.0.1")
        assert await a.open_connection("10.0.0.1")
        assert not await b.open_connection("10.0.0.1")       # B alone holds one: the cap is global
        assert not await a.open_connection("10.0.0.1")
        assert await b.open_connection("10.0.0.2")
        await a.close_connection("10.0.0.1")
        assert await b.open_connection("10.0.0.1")
        assert not await a.open_connection("10.0.0.1")


async def test_a_dead_processs_places_expire_and_a_live_ones_are_kept(tmp_path, redis_url):  # noqa: F811
    async with two_processes(tmp_path, redis_url, MAX_CONNECTIONS_PER_ADDRESS=2) as ((_, a), (_, b)):
        await a.start()
        await b.start()
        assert await a.open_connection("10.0.0.9") and await b.open_connection("10.0.0.9")
        await a.stop()                                        # A dies holding a place: no more refreshes
        assert not await b.open_connection("10.0.0.9")
        await asyncio.sleep(4.5)                             # past the TTL (3 s); B refreshed its own
        assert await b.open_connection("10.0.0.9")           # A's place expired, B's is still held
        assert not await b.open_connection("10.0.0.9")


async def test_the_sandbox_quota_of_an_address_counts_sandboxes_in_every_process(tmp_path, redis_url):  # noqa: F811
    """Cap 2: sandboxes created from one address in two processes fill the quota together;
    the third is refused with the quota error and nothing is created; watching an existing
    sandbox never counts; a reclaimed sandbox frees its place."""
    one, two, three = new_sandbox_id(), new_sandbox_id(), new_sandbox_id()
    async with two_processes(tmp_path, redis_url, MAX_SANDBOXES_PER_ADDRESS=2) as ((rt_a, a), (rt_b, b)):
        await a.attach(one, "segments", address="10.1.1.1")
        await b.attach(two, "segments", address="10.1.1.1")
        assert one in rt_a.sandboxes and two in rt_b.sandboxes
        with pytest.raises(CommandError) as refused:
            await a.attach(three, "segments", address="10.1.1.1")
        assert refused.value.code == "quota"
        assert three not in rt_a.sandboxes and three not in rt_b.sandboxes
        await b.attach(one, "segments", address="10.1.1.1")   # a second tab on an existing sandbox
        await a.attach(new_sandbox_id(), "segments", address="10.1.1.2")
        # A reclaims "one": its place goes with it.
        await a.detach(one)
        await b.detach(one)
        rt_a.settings["IDLE_SECONDS"] = 0
        rt_a.reap_idle()
        a.owned = {sid: when - 60 for sid, when in a.owned.items()}
        await a.refresh()
        await a.attach(three, "segments", address="10.1.1.1")
        assert three in rt_a.sandboxes


async def test_a_members_budget_travels_with_a_forwarded_request(tmp_path, redis_url):  # noqa: F811
    """A room member's requests in another process spend that member's budget on the owner,
    never the sandbox's (the instructor's), and a read-only export is not saved again."""
    layer_a, rt_a, a = process(tmp_path, "a", redis_url)
    layer_b, rt_b, b = process(tmp_path, "b", redis_url)
    rt_a.settings.update(MEMBER_COMMAND_BURST=3, MEMBER_COMMANDS_PER_SECOND=0.01)
    sid = new_sandbox_id()
    try:
        await a.attach(sid, "segments")
        await b.attach(sid, "segments")
        tokens = rt_a.sandboxes[sid].bucket.tokens
        for _ in range(2):
            assert (await b.command(sid, {"cmd": "export"}, "member:7"))["command"] == "export"
        await b.snapshot(sid, "member:7")
        with pytest.raises(CommandError) as refused:
            await b.snapshot(sid, "member:7")
        assert refused.value.code == "rate_limited"
        assert rt_a.sandboxes[sid].bucket.tokens == tokens
        assert (await b.command(sid, {"cmd": "produce", "count": "1", "partition": "0"}))["type"] == "ack"
    finally:
        await a.stop()
        await b.stop()
        rt_a.close_all()
        rt_b.close_all()
