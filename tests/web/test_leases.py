"""Slots never leak (kafkaviz/live/leases.py): a socket whose consumer daphne cancelled
before ``disconnect()`` ran (a client that flooded it, then closed) gives back its place in
the address's socket quota, its watch on the sandbox and a room member's presence. One
process, the in-memory channel layer; the cross-process case is in test_leases_redis.py."""
from __future__ import annotations

import asyncio
import time

import pytest
from asgiref.sync import sync_to_async
from django.test import Client

from kafkaviz.asgi import application
from kafkaviz.classroom.consumers import MAX_SOCKETS_PER_MEMBER, member_place
from kafkaviz.live.leases import live_sockets
from kafkaviz.live.router import get_router

from .framing import TrackedCommunicator
from .test_rooms import close_thread_connections, fast_hashing, headers, setup  # noqa: F401 - fixtures

LEASE = 0.4          # seconds; the heartbeat runs every LEASE / 4
ADDRESS = ("10.20.30.40", 5000)


@pytest.fixture
def short_leases(runtime, settings):
    settings.KAFKAVIZ_RUNTIME = {**settings.KAFKAVIZ_RUNTIME, "LEASE_SECONDS": LEASE}
    runtime.settings["LEASE_SECONDS"] = LEASE
    return runtime


async def healthz() -> dict:
    return (await sync_to_async(Client().get)("/healthz")).json()


async def flood_then_die(path: str, hdrs, client=ADDRESS, messages: int = 200) -> TrackedCommunicator:
    """Connect, flood the socket with commands, then end the consumer the way daphne does
    when a closed client's consumer is still busy after ``application_close_timeout``: it
    cancels it; ``disconnect()`` never runs."""
    comm = TrackedCommunicator(application, path, headers=hdrs)
    comm.scope["client"] = client
    connected, _ = await comm.connect()
    assert connected
    for i in range(messages):
        await comm.send_json_to({"cmd": "produce", "count": "1", "partition": str(i % 2)})
    await asyncio.sleep(0)
    comm.future.cancel()
    try:
        await comm.future
    except (asyncio.CancelledError, Exception):  # noqa: BLE001 - the consumer was killed
        pass
    return comm


async def until_health(predicate, timeout: float = 10.0) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        body = await healthz()
        if predicate(body):
            return body
        assert time.monotonic() < deadline, body
        await asyncio.sleep(0.1)


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_twenty_flood_then_close_rounds_leave_no_ghosts_and_the_quota_is_whole_again(
        short_leases, ws_headers):
    runtime = short_leases
    cap = runtime.settings["MAX_CONNECTIONS_PER_ADDRESS"] = 4
    for _ in range(20):
        await flood_then_die("/ws/lessons/segments/", ws_headers)
    started = time.monotonic()
    body = await until_health(lambda b: b["connections"] == 0 and b["watchers"] == 0, timeout=60)
    assert time.monotonic() - started < 60
    assert body["members"] == 0
    assert runtime.connections == {}
    # The address opens its whole quota again, and one more is refused.
    comms = []
    for i in range(cap):
        comm = TrackedCommunicator(application, "/ws/lessons/segments/", headers=ws_headers)
        comm.scope["client"] = (ADDRESS[0], 6000 + i)
        assert (await comm.connect())[0]
        assert (await comm.receive_json_from(timeout=5))["type"] == "frame"
        comms.append(comm)
    extra = TrackedCommunicator(application, "/ws/lessons/segments/", headers=ws_headers)
    extra.scope["client"] = (ADDRESS[0], 7000)
    assert (await extra.connect())[0]
    assert (await extra.receive_json_from(timeout=5))["code"] == "quota"
    body = await healthz()
    assert body["connections"] == cap + 1 or body["connections"] == cap     # the refused one may be closing
    assert body["watchers"] == cap
    for comm in comms + [extra]:
        await comm.disconnect()
    await until_health(lambda b: b["connections"] == 0 and b["watchers"] == 0)


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_a_live_socket_keeps_its_leases_past_their_ttl(short_leases, ws_headers):
    comm = TrackedCommunicator(application, "/ws/lessons/segments/", headers=ws_headers)
    comm.scope["client"] = ADDRESS
    assert (await comm.connect())[0]
    await comm.receive_json_from(timeout=5)
    await asyncio.sleep(LEASE * 5)                       # many lease lifetimes: renewed, not lapsed
    body = await healthz()
    assert body["connections"] == 1 and body["watchers"] == 1
    assert short_leases.connections and next(iter(short_leases.sandboxes.values())).watchers == 1
    await comm.disconnect()
    body = await healthz()
    assert body["connections"] == 0 and body["watchers"] == 0


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_a_watched_sandbox_is_reclaimed_once_its_killed_watchers_leases_lapse(short_leases, ws_headers):
    runtime = short_leases
    runtime.settings["IDLE_SECONDS"] = 0
    await flood_then_die("/ws/lessons/segments/", ws_headers, messages=20)
    await until_health(lambda b: b["watchers"] == 0)
    assert await runtime.reap()
    assert runtime.sandboxes == {}


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_a_student_whose_tabs_were_killed_is_never_locked_out_of_the_room(short_leases):
    """Issue 19 item 3: Member.connections was +1 on connect, -1 in disconnect(); four
    killed tabs locked the student out ("You have this room open 4 times already")."""
    teacher, room, student = await setup()
    for _ in range(MAX_SOCKETS_PER_MEMBER):
        await flood_then_die(f"/ws/rooms/{room.code}/", headers(student), messages=30)
    await until_health(lambda b: b["members"] == 0 and b["connections"] == 0)
    comm = TrackedCommunicator(application, f"/ws/rooms/{room.code}/", headers=headers(student))
    assert (await comm.connect())[0]
    first = await comm.receive_json_from(timeout=10)
    assert first["type"] == "frame", first                # not "quota"
    body = await healthz()
    assert body["members"] == 1
    # The instructor's roster shows the student connected (from the live lease) ...
    t = TrackedCommunicator(application, f"/ws/rooms/{room.code}/", headers=headers(teacher))
    assert (await t.connect())[0]
    roster = None
    while roster is None:
        msg = await t.receive_json_from(timeout=10)
        roster = msg if msg["type"] == "roster" else None
    assert [m["connected"] for m in roster["members"]] == [True]
    # ... and not connected once the student's socket is killed too.
    comm.future.cancel()
    while True:                  # (the roster of the instructor's own arrival may come first)
        msg = await t.receive_json_from(timeout=10)
        if msg["type"] == "roster" and [m["connected"] for m in msg["members"]] == [False]:
            break
    await t.disconnect()


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_the_roster_drops_a_student_whose_process_died_within_the_lease_time(short_leases):
    """A student's socket in a process killed with ``kill -9``: no disconnect(), no roster
    broadcast, only a lease nobody renews. The instructor's roster must say "offline"
    once it lapses, though nobody joins or leaves to trigger a broadcast."""
    teacher, room, _student = await setup()
    ada = await sync_to_async(lambda: room.members.get().pk)()
    # The dead process's socket: a place taken and never renewed (no live socket holds it here).
    assert await get_router().take_place(member_place(ada), "socket-of-a-killed-process", MAX_SOCKETS_PER_MEMBER)
    t = TrackedCommunicator(application, f"/ws/rooms/{room.code}/", headers=headers(teacher))
    assert (await t.connect())[0]
    started, seen = time.monotonic(), []
    while not seen or seen[-1] != [False]:
        msg = await t.receive_json_from(timeout=LEASE * 4)
        if msg["type"] == "roster":
            seen.append([m["connected"] for m in msg["members"]])
    assert seen[0] == [True]                              # shown connected while the lease runs
    assert time.monotonic() - started < LEASE * 3         # and offline within about the lease time
    assert await t.receive_nothing(timeout=LEASE)         # nothing more while nothing changes
    await t.disconnect()


def test_the_registry_counts_only_live_sockets():
    assert set(live_sockets().counts()) == {"connections", "members"}


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_a_fifth_tab_is_refused_with_try_again_later_and_gets_in_when_one_closes(short_leases):
    """The refusal says so ("refused") and closes with 1013, on which the page's socket
    reconnects by itself: once a place is free, the next try gets in."""
    from kafkaviz.live.consumers import CLOSE_RETRY

    teacher, room, student = await setup()
    tabs = []
    for _ in range(MAX_SOCKETS_PER_MEMBER):
        comm = TrackedCommunicator(application, f"/ws/rooms/{room.code}/", headers=headers(student))
        assert (await comm.connect())[0]
        assert (await comm.receive_json_from(timeout=10))["type"] == "frame"
        tabs.append(comm)
    fifth = TrackedCommunicator(application, f"/ws/rooms/{room.code}/", headers=headers(student))
    assert (await fifth.connect())[0]
    refusal = await fifth.receive_json_from(timeout=10)
    assert refusal["code"] == "quota" and refusal["refused"] is True
    assert (await fifth.receive_output(timeout=5))["code"] == CLOSE_RETRY
    await tabs.pop().disconnect()
    again = TrackedCommunicator(application, f"/ws/rooms/{room.code}/", headers=headers(student))
    assert (await again.connect())[0]
    assert (await again.receive_json_from(timeout=10))["type"] == "frame"
    for comm in tabs + [again]:
        await comm.disconnect()
