"""Fair rooms (issue 19, items 4 and 5): a watcher's flood of ``export``, ``share`` or
``sync`` spends that member's own budget and never refuses the instructor's commands; one
address cannot fill a room; the instructor removes a member (server-authorised); a watching
student's page hides the controls only the driver may use."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.conf import settings as django_settings
from django.test import Client

from kafkaviz.asgi import application
from kafkaviz.classroom.models import Answer, Member

from .test_rooms import (close_thread_connections, connect, fast_hashing, headers, instructor_client,  # noqa: F401
                         is_type, open_room, setup, student_client, until)

pytestmark = [pytest.mark.django_db(transaction=True)]

FLOOD_SOCKETS = 4            # MAX_SOCKETS_PER_MEMBER: a member's whole share of sockets
FLOOD_PER_SOCKET = 40        # the per-connection burst: every message passes the socket's own limit


async def flood_sockets(student: Client, room, n: int = FLOOD_SOCKETS):
    socks = []
    for _ in range(n):
        comm = WebsocketCommunicator(application, f"/ws/rooms/{room.code}/", headers=headers(student))
        connected, code = await comm.connect()
        assert connected, code
        assert (await comm.receive_json_from(timeout=10))["snapshot"] is True
        socks.append(comm)
    return socks


async def collect(comm, quiet: float = 0.5) -> list[dict]:
    got = []
    while not await comm.receive_nothing(timeout=quiet):
        got.append(await comm.receive_json_from())
    return got


@pytest.mark.parametrize("flood", ["export", "share", "sync"])
@pytest.mark.asyncio
async def test_the_instructors_commands_are_all_accepted_during_a_watchers_flood(runtime, flood):
    teacher, room, student = await setup("leader-epoch")
    t, _ = await connect(teacher, room)
    socks = await flood_sockets(student, room)
    for comm in socks:
        for _ in range(FLOOD_PER_SOCKET):
            await comm.send_json_to({"type": flood} if flood == "sync" else {"cmd": flood})
    accepted = refused = 0
    for _ in range(10):
        await t.send_json_to({"cmd": "step"})
        reply = (await until(t, lambda m: m.get("type") in ("ack", "error") and m.get("command") == "step"))[-1]
        if reply["type"] == "ack":
            accepted += 1
        else:
            refused += 1
    assert (accepted, refused) == (10, 0)
    assert runtime.sandboxes[room.sandbox_id].engine.state()["run"]["step"] == 10
    # It was a flood: the student's own budget ran out and told them so.
    replies = [m for comm in socks for m in await collect(comm)]
    limited = [m for m in replies if m.get("type") == "error" and m.get("code") == "rate_limited"]
    assert limited and ("Too many requests from you" in limited[0]["message"]
                        or "still working on your earlier requests" in limited[0]["message"])
    for comm in socks:
        await comm.disconnect()
    await t.disconnect()


@pytest.mark.asyncio
async def test_a_members_budget_is_its_own_not_the_sandboxs(runtime):
    from kafkaviz.live.runtime import new_sandbox_id
    from kafkaviz.live.validation import CommandError

    sid = new_sandbox_id()
    await runtime.attach(sid, "leader-epoch")
    sb = runtime.sandboxes[sid]
    tokens = sb.bucket.tokens
    burst = runtime.settings["MEMBER_COMMAND_BURST"]
    for _ in range(burst):
        await runtime.command(sid, {"cmd": "export"}, budget="member:1")
    with pytest.raises(CommandError) as err:
        await runtime.command(sid, {"cmd": "export"}, budget="member:1")
    assert err.value.code == "rate_limited"
    with pytest.raises(CommandError):
        await runtime.snapshot(sid, budget="member:1")
    # Another member, and the sandbox's own budget, are untouched.
    await runtime.command(sid, {"cmd": "export"}, budget="member:2")
    assert sb.bucket.tokens == tokens
    assert (await runtime.command(sid, {"cmd": "step"}))["type"] == "ack"


# ---- one address cannot fill a room --------------------------------------------------------

def join(room, name: str, address: str) -> int:
    client = Client(REMOTE_ADDR=address)
    return client.post("/rooms/join", {"code": room.code, "name": name}).status_code


def test_300_joins_from_one_address_leave_room_for_a_student_elsewhere(settings):
    teacher = instructor_client()
    room = open_room(teacher)
    per_address = django_settings.KAFKAVIZ_ROOMS["JOINS_PER_ADDRESS"]
    assert 0 < per_address < django_settings.KAFKAVIZ_ROOMS["MAX_MEMBERS"]
    statuses = [join(room, f"bot {i}", "203.0.113.7") for i in range(300)]
    assert statuses.count(302) == per_address and statuses.count(429) == 300 - per_address
    assert Member.objects.filter(room=room).count() == per_address
    client = Client(REMOTE_ADDR="198.51.100.20")
    response = client.post("/rooms/join", {"code": room.code, "name": "Ada"})
    assert response.status_code == 302 and response["Location"] == f"/r/{room.code}/"
    refused = Client(REMOTE_ADDR="203.0.113.7").post("/rooms/join", {"code": room.code, "name": "one more"})
    assert "from your network" in refused.content.decode()


# ---- the instructor removes a member --------------------------------------------------------

@pytest.mark.asyncio
async def test_the_instructor_removes_a_member_whose_sockets_close_and_who_cannot_rejoin(runtime):
    teacher, room, student = await setup("leader-epoch")
    t, _ = await connect(teacher, room)
    s, _ = await connect(student, room)
    member = await sync_to_async(Member.objects.get)(room=room)
    await sync_to_async(Answer.objects.create)(room=room, member=member, question="q", choice=0)
    await t.send_json_to({"type": "remove", "member": member.pk})
    ack = (await until(t, is_type("ack", command="remove")))[-1]
    assert ack["text"] == "Ada was removed from the room."
    roster = (await until(t, lambda m: m.get("type") == "roster" and not m["members"]))[-1]
    assert roster["members"] == []
    told = (await until(s, is_type("error", code="removed")))[-1]
    assert told["message"] == "The instructor removed you from this room."
    assert (await s.receive_output(timeout=5))["type"] == "websocket.close"
    row = await sync_to_async(Member.objects.get)(pk=member.pk)
    assert row.removed and not row.granted
    assert not await sync_to_async(Answer.objects.filter(member=member).exists)()
    # The same session can neither open the room's socket nor join again.
    comm = WebsocketCommunicator(application, f"/ws/rooms/{room.code}/", headers=headers(student))
    connected, code = await comm.connect()
    assert not connected and code == 4403
    again = await sync_to_async(student.post)("/rooms/join", {"code": room.code, "name": "Ada"})
    assert again.status_code == 403 and "removed you from this room" in again.content.decode()
    page = await sync_to_async(student.get)(f"/r/{room.code}/")
    assert page.status_code == 403 and "removed you from this room" in page.content.decode()
    await t.disconnect()


@pytest.mark.asyncio
async def test_only_the_instructor_removes_and_only_members_of_their_room(runtime):
    teacher, room, student = await setup("leader-epoch")
    await sync_to_async(student_client)(room, "Bob")
    other = await sync_to_async(open_room)(teacher)
    await sync_to_async(student_client)(other, "Eve")
    eve = await sync_to_async(Member.objects.get)(room=other)
    ada, bob = await sync_to_async(list)(Member.objects.filter(room=room).order_by("pk"))
    s, _ = await connect(student, room)
    await s.send_json_to({"type": "remove", "member": bob.pk})
    assert (await until(s, is_type("error", command="remove")))[-1]["code"] == "forbidden"
    t, _ = await connect(teacher, room)
    await t.send_json_to({"type": "remove", "member": eve.pk})
    assert (await until(t, is_type("error", command="remove")))[-1]["code"] == "not_found"
    await t.send_json_to({"type": "remove", "member": "1; DROP"})
    assert (await until(t, is_type("error", command="remove")))[-1]["code"] == "invalid"
    assert not await sync_to_async(Member.objects.filter(removed=True).exists)()
    await s.disconnect()
    await t.disconnect()


# ---- a watcher's page -----------------------------------------------------------------------

def test_a_watching_students_page_hides_the_drivers_controls():
    teacher = instructor_client()
    room = open_room(teacher, "leader-epoch")
    student = student_client(room)
    page = student.get(f"/r/{room.code}/").content.decode()
    assert re.search(r'id="room-banner"[^>]*data-control="watching"', page)
    for control in ("back-form", "step-form", "reset-form", "play-button"):
        assert f'id="{control}"' in page
    css = (Path(django_settings.BASE_DIR) / "static" / "css" / "room.css").read_text()
    rule = re.search(r'body:has\(#room-banner\[data-control="watching"\]\) :is\(([^)]*)\)\s*\{\s*display: none;', css)
    assert rule and {"#back-form", "#step-form", "#reset-form"} <= {x.strip() for x in rule.group(1).split(",")}
