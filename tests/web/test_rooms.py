"""Classroom rooms end to end through the ASGI stack: an instructor opens a room, students
join by code and watch; only the instructor and students granted control may act (checked
on the server at every message), presets resolve against the live cluster, a student forks
the room into a private sandbox, and a room whose sandbox was reclaimed comes back at the
step the class saw."""
from __future__ import annotations

import asyncio
import json
import os

import pytest
from asgiref.sync import SyncToAsync, sync_to_async
from channels.testing import WebsocketCommunicator
from django.conf import settings as django_settings
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.core.management import CommandError, call_command
from django.db import connections
from django.test import Client

from kafkaviz.asgi import application
from kafkaviz.classroom.models import JOIN_CODE_ALPHABET, Member, Room, new_join_code
from kafkaviz.live.models import SharedRun

from .conftest import ORIGIN
from .framing import TrackedCommunicator

LESSON = "leader-epoch"
pytestmark = [pytest.mark.django_db(transaction=True)]


def _drop_thread_connections():
    for conn in connections.all(initialized_only=True):
        if conn.connection is not None:
            conn.connection.close()     # the test database is in memory: Django's close() keeps it
            conn.connection = None


@pytest.fixture(autouse=True)
def _fresh_cache_and_no_leftover_connection():
    cache.clear()
    yield
    cache.clear()
    # Room consumers read the database from asgiref's shared sync thread, whose connection
    # outlives the test; a later test without database access would trip over it when
    # Channels tidies connections before each consumer message.
    SyncToAsync.single_thread_executor.submit(_drop_thread_connections).result()


def make_instructor(name="teacher"):
    os.environ["KV_TEST_PW"] = "a-long-classroom-password"
    call_command("createinstructor", name, "--password-env", "KV_TEST_PW")
    client = Client()
    client.force_login(get_user_model().objects.get(username=name))
    return client


def cookie_of(client):
    return client.cookies[django_settings.SESSION_COOKIE_NAME].value


def headers(client, origin=ORIGIN):
    return [(b"origin", origin), (b"cookie", f"{django_settings.SESSION_COOKIE_NAME}={cookie_of(client)}".encode())]


def open_room(client, lesson=LESSON):
    response = client.post("/rooms/new/", {"lesson": lesson})
    assert response.status_code == 302 and "/present/" in response["Location"]
    return Room.objects.get(code=response["Location"].split("/")[2])


def join(code, name="Ada"):
    client = Client()
    response = client.post("/rooms/join/", {"code": code, "name": name})
    assert response.status_code == 302, response.content[:300]
    return client


async def connect(client, code):
    comm = TrackedCommunicator(application, f"/ws/rooms/{code}/", headers=headers(client))
    connected, _ = await comm.connect()
    assert connected
    first = await comm.receive_json_from(timeout=5)
    room_msg = first if first["type"] == "room" else None
    snapshot = first if first["type"] == "frame" else await comm.receive_json_from(timeout=5)
    while room_msg is None or snapshot.get("type") != "frame":
        msg = await comm.receive_json_from(timeout=5)
        if msg["type"] == "room":
            room_msg = msg
        elif msg["type"] == "frame" and msg.get("snapshot"):
            snapshot = msg
    return comm, snapshot, room_msg


async def until(comm, predicate, timeout=5.0):
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    seen = []
    while True:
        remaining = deadline - loop.time()
        assert remaining > 0, f"timed out; saw {[m.get('type') for m in seen]}"
        msg = await comm.receive_json_from(timeout=remaining)
        seen.append(msg)
        if predicate(msg):
            return msg


def run_of(runtime, room):
    return runtime.current_run(room.sandbox_id)


async def setup_room():
    teacher = await sync_to_async(make_instructor)()
    room = await sync_to_async(open_room)(teacher)
    student = await sync_to_async(join)(room.code)
    return teacher, room, student


@pytest.mark.asyncio
async def test_a_student_watches_and_an_instructor_command_from_a_student_is_refused(runtime):
    teacher, room, student = await setup_room()
    t, t_snap, t_room = await connect(teacher, room.code)
    s, s_snap, s_room = await connect(student, room.code)
    assert t_room["role"] == "instructor" and s_room == {**s_room, "role": "student", "can_control": False}
    assert s_snap["state"]["partition"] == t_snap["state"]["partition"]       # the same live sandbox
    roster = await until(t, lambda m: m["type"] == "room" and any(x["connected"] for x in m["roster"]))
    assert [(m["name"], m["connected"]) for m in roster["roster"]] == [("Ada", True)]

    before = run_of(runtime, room)
    digest = runtime.sandboxes[room.sandbox_id].engine.run.state_digest()
    for command in ({"type": "crash", "broker": 1}, {"type": "step"}, {"type": "reset"},
                    {"type": "room.preset", "preset": "kill-leader"}, {"type": "room.grant", "member": 1,
                                                                        "control": True}):
        await s.send_json_to(command)
        reply = await until(s, lambda m: m["type"] in ("error", "ack"))
        assert reply["type"] == "error" and reply["code"] == "forbidden", (command, reply)
    assert run_of(runtime, room) == before
    assert runtime.sandboxes[room.sandbox_id].engine.run.state_digest() == digest
    await s.disconnect()
    await t.disconnect()


@pytest.mark.asyncio
async def test_a_granted_student_acts_and_loses_it_when_revoked(runtime):
    teacher, room, student = await setup_room()
    t, _, _ = await connect(teacher, room.code)
    s, _, _ = await connect(student, room.code)
    member = await sync_to_async(Member.objects.get)(room=room)

    await t.send_json_to({"type": "room.grant", "member": member.id, "control": True})
    await until(t, lambda m: m["type"] == "ack" and m["command"] == "room.grant")
    granted = await until(s, lambda m: m["type"] == "room" and m["can_control"])
    assert granted["role"] == "student"
    await s.send_json_to({"type": "step"})
    assert (await until(s, lambda m: m["type"] in ("ack", "error")))["type"] == "ack"
    assert runtime.sandboxes[room.sandbox_id].engine.state()["run"]["step"] == 1

    await t.send_json_to({"type": "room.grant", "member": member.id, "control": False})
    revoked = await until(s, lambda m: m["type"] == "room" and not m["can_control"])
    assert revoked["role"] == "student"
    await s.send_json_to({"type": "step"})
    reply = await until(s, lambda m: m["type"] in ("ack", "error"))
    assert reply["code"] == "forbidden"
    assert runtime.sandboxes[room.sandbox_id].engine.state()["run"]["step"] == 1
    await s.disconnect()
    await t.disconnect()


@pytest.mark.asyncio
async def test_a_foreign_origin_and_a_browser_that_never_joined_are_refused(runtime):
    teacher, room, student = await setup_room()
    comm = WebsocketCommunicator(application, f"/ws/rooms/{room.code}/", headers=headers(student, b"http://evil.example"))
    connected, _ = await comm.connect()
    assert not connected
    stranger = Client()
    await sync_to_async(stranger.get)("/lessons/segments/")       # a session, but not a member
    comm = WebsocketCommunicator(application, f"/ws/rooms/{room.code}/", headers=headers(stranger))
    connected, code = await comm.connect()
    assert not connected and code == 4403
    assert runtime.sandboxes == {}


@pytest.mark.asyncio
async def test_the_kill_leader_preset_crashes_whichever_broker_leads_now(runtime):
    teacher, room, student = await setup_room()
    t, snap, _ = await connect(teacher, room.code)
    for _ in range(3):
        await t.send_json_to({"type": "step"})
        await until(t, lambda m: m["type"] == "ack")
    leader = runtime.sandboxes[room.sandbox_id].engine.state()["partition"]["leader"]
    await t.send_json_to({"type": "room.preset", "preset": "kill-leader"})
    ack = await until(t, lambda m: m["type"] in ("ack", "error"))
    assert ack["type"] == "ack", ack
    brokers = {b["id"]: b for b in runtime.sandboxes[room.sandbox_id].engine.state()["brokers"]}
    assert brokers[leader]["alive"] is False
    # The room's saved run holds the crash: a reclaimed room comes back with it.
    saved = (await sync_to_async(Room.objects.get)(pk=room.pk)).run
    assert saved["run"]["log"][-1] == {"cmd": "crash", "broker": leader}
    await t.send_json_to({"type": "room.preset", "preset": "no-such-thing"})
    assert (await until(t, lambda m: m["type"] == "error"))["code"] == "invalid"
    await t.disconnect()


@pytest.mark.asyncio
async def test_a_room_reclaimed_while_nobody_watched_comes_back_at_the_same_step(runtime, runtime_settings):
    teacher, room, student = await setup_room()
    t, _, _ = await connect(teacher, room.code)
    for _ in range(4):
        await t.send_json_to({"type": "step"})
        await until(t, lambda m: m["type"] == "ack")
    state = runtime.sandboxes[room.sandbox_id].engine.state()
    await t.disconnect()
    runtime_settings["IDLE_SECONDS"] = 0
    assert runtime.reap_idle() == [room.sandbox_id]
    s, snap, _ = await connect(student, room.code)
    assert snap["state"]["run"]["step"] == 4
    assert snap["state"]["partition"] == state["partition"] and snap["state"]["lanes"] == state["lanes"]
    await s.disconnect()


@pytest.mark.asyncio
async def test_a_student_forks_the_room_into_a_private_sandbox_at_the_same_step(runtime):
    teacher, room, student = await setup_room()
    t, _, _ = await connect(teacher, room.code)
    for _ in range(2):
        await t.send_json_to({"type": "step"})
        await until(t, lambda m: m["type"] == "ack")
    s, _, _ = await connect(student, room.code)
    await s.send_json_to({"type": "room.fork"})
    ack = await until(s, lambda m: m["type"] in ("ack", "error"))
    assert ack["type"] == "ack" and ack["url"].startswith(f"/lessons/{LESSON}/?run=")
    share_id = ack["url"].rsplit("=", 1)[1]
    shared = await sync_to_async(SharedRun.objects.get)(pk=share_id)
    assert shared.payload == run_of(runtime, room)
    page = await sync_to_async(student.get)(ack["url"])
    assert page.status_code == 200 and f'"shared_run": "{share_id}"' in page.content.decode()
    await s.disconnect()
    await t.disconnect()


def test_the_room_export_is_the_learners_run_format_and_only_for_its_instructor(runtime):
    teacher = make_instructor()
    room = open_room(teacher)
    room.run = {"format": "kafkaviz-run", "version": 1, "lesson": LESSON, "kind": "replication", "seed": 1,
                "run": {"log": [], "step": 0}}
    room.save()
    got = teacher.get(f"/rooms/{room.code}/export.json")
    assert got.status_code == 200 and json.loads(got.content)["format"] == "kafkaviz-run"
    student = join(room.code)
    assert student.get(f"/rooms/{room.code}/export.json").status_code == 403
    other = make_instructor("someone-else")
    assert other.get(f"/rooms/{room.code}/export.json").status_code == 403
    assert other.get(f"/rooms/{room.code}/present/").status_code == 403
    assert Client().get(f"/rooms/{room.code}/present/").status_code == 302       # to the sign-in page
    present = teacher.get(f"/rooms/{room.code}/present/")
    body = present.content.decode()
    assert present.status_code == 200 and room.shown_code in body and "<svg" in body
    assert 'aria-keyshortcuts="Shift+K"' in body


def test_only_instructors_open_rooms(runtime):
    client = Client()
    assert client.post("/rooms/new/", {"lesson": LESSON}).status_code == 302       # sign in first
    user = get_user_model().objects.create_user("visitor", password="x" * 12)
    client.force_login(user)
    assert client.post("/rooms/new/", {"lesson": LESSON}).status_code == 403
    teacher = make_instructor()
    assert teacher.post("/rooms/new/", {"lesson": "no-such-lesson"}).status_code == 400
    assert teacher.post("/rooms/new/", {"lesson": "segments"}).status_code == 302
    assert Room.objects.count() == 1


def test_wrong_codes_are_rate_limited_per_address_right_codes_included(runtime):
    teacher = make_instructor()
    room = open_room(teacher)
    guesser = Client()
    wrong = next(c for c in (new_join_code() for _ in range(100)) if c != room.code)
    for _ in range(10):
        response = guesser.post("/rooms/join/", {"code": wrong, "name": "Eve"})
        assert response.status_code == 400 and "No room has that code" in response.content.decode()
    response = guesser.post("/rooms/join/", {"code": room.code, "name": "Eve"})
    assert response.status_code == 429 and "Too many wrong codes" in response.content.decode()
    assert not Member.objects.exists()


@pytest.mark.parametrize("name, message", [
    ("", "Enter the name"), ("   ", "Enter the name"), ("x" * 41, "at most 40"),
    ("<script></script>", "Enter the name"),
])
def test_join_refuses_bad_names_and_adds_nobody(runtime, name, message):
    room = open_room(make_instructor())
    response = Client().post("/rooms/join/", {"code": room.code, "name": name})
    assert response.status_code == 400 and message in response.content.decode()
    assert not Member.objects.exists()


def test_codes_are_typed_forgivingly_and_names_are_stripped_of_markup(runtime):
    room = open_room(make_instructor())
    typed = f" {room.code[:4].lower()}-{room.code[4:]} "
    client = Client()
    assert client.post("/rooms/join/", {"code": typed, "name": "<b>Grace</b>  Hopper"}).status_code == 302
    assert Member.objects.get().name == "Grace Hopper"
    assert set(room.code) <= set(JOIN_CODE_ALPHABET) and len(room.code) == 8
    page = client.get(f"/rooms/{room.code}/")
    assert page.status_code == 200 and f"/ws/rooms/{room.code}/" in page.content.decode()


@pytest.mark.asyncio
async def test_a_closed_room_refuses_joins_and_sockets_and_tells_watchers(runtime):
    teacher, room, student = await setup_room()
    s, _, _ = await connect(student, room.code)
    response = await sync_to_async(teacher.post)(f"/rooms/{room.code}/close/")
    assert response.status_code == 302
    closed = await until(s, lambda m: m["type"] == "room")
    assert closed["closed"] is True
    late = await sync_to_async(Client().post)("/rooms/join/", {"code": room.code, "name": "Late"})
    assert late.status_code == 400 and "closed" in late.content.decode()
    comm = WebsocketCommunicator(application, f"/ws/rooms/{room.code}/", headers=headers(student))
    connected, _ = await comm.connect()
    assert not connected


def test_createinstructor_checks_its_input():
    os.environ["KV_SHORT_PW"] = "short"
    with pytest.raises(CommandError, match="password"):
        call_command("createinstructor", "t2", "--password-env", "KV_SHORT_PW")
    with pytest.raises(CommandError, match="not set"):
        call_command("createinstructor", "t2", "--password-env", "KV_NO_SUCH_VARIABLE")
    assert not get_user_model().objects.filter(username="t2").exists()
    make_instructor("t3")
    assert get_user_model().objects.get(username="t3").groups.filter(name="instructors").exists()
