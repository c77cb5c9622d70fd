"""Rooms (kafkaviz/classroom): an instructor drives one sandbox a class watches.

Through the real ASGI stack (origin check, session + auth, RoomConsumer, runtime,
engine): only the instructor or a granted student changes the room; everybody else is
refused and the engine's state digest does not move; joins are validated and guessing
codes is rate-limited; a student forks the room into a private sandbox; the room's run
exports in the learner's format."""
from __future__ import annotations

import json
import os

import pytest
import pytest_asyncio
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.conf import settings as django_settings
from django.core.management import call_command
from django.db import connections
from django.test import Client

from kafkaviz.asgi import application
from kafkaviz.classroom.models import Member, Room
from kafkaviz.classroom.presets import PRESETS

from .conftest import ORIGIN
from .framing import TrackedCommunicator
from .test_consumers import replies_until

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]

PASSWORD = "a-long-test-password"


@pytest.fixture(autouse=True)
def fast_hashing(settings):
    """Password hashing is slow by design; these tests log in often."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest_asyncio.fixture(autouse=True)
async def close_thread_connections():
    """The consumer's database work runs in asgiref's shared worker thread. Forget the
    connection it opened there (SQLite's in-memory test database ignores close()), so
    later tests without a database find none in that thread."""
    yield

    def forget() -> None:
        for alias in list(connections):
            try:
                del connections[alias]
            except AttributeError:
                pass

    await sync_to_async(forget)()


# ---- set-up (sync: the Django test client and the ORM) --------------------------------------

def instructor_client(name: str = "teacher") -> Client:
    os.environ["ROOMS_TEST_PASSWORD"] = PASSWORD
    call_command("createinstructor", name, password_env="ROOMS_TEST_PASSWORD", stdout=open(os.devnull, "w"))
    client = Client()
    assert client.login(username=name, password=PASSWORD)
    return client


def open_room(client: Client, lesson: str = "sandbox", run: str = "") -> Room:
    response = client.post("/rooms/new", {"lesson": lesson, "run": run})
    assert response.status_code == 302, response.content[:300]
    code = response["Location"].split("/rooms/")[1].split("/")[0]
    return Room.objects.get(code=code)


def student_client(room: Room, name: str = "Ada") -> Client:
    client = Client()
    response = client.post("/rooms/join", {"code": room.code, "name": name})
    assert response.status_code == 302, response.content[:300]
    assert response["Location"] == f"/r/{room.code}/"
    return client


def headers(client: Client, origin: bytes = ORIGIN):
    cookie = client.cookies[django_settings.SESSION_COOKIE_NAME].value
    return [(b"origin", origin), (b"cookie", f"{django_settings.SESSION_COOKIE_NAME}={cookie}".encode())]


async def setup(lesson: str = "sandbox", run: str = ""):
    teacher = await sync_to_async(instructor_client)()
    room = await sync_to_async(open_room)(teacher, lesson, run)
    student = await sync_to_async(student_client)(room)
    return teacher, room, student


async def connect(client: Client, room: Room, lang: str = ""):
    query = f"?lang={lang}" if lang else ""
    comm = TrackedCommunicator(application, f"/ws/rooms/{room.code}/{query}", headers=headers(client))
    connected, code = await comm.connect()
    assert connected, code
    snapshot = await comm.receive_json_from(timeout=10)
    assert snapshot["type"] == "frame" and snapshot["snapshot"] is True
    return comm, snapshot


async def until(comm, predicate, timeout=10.0):
    return await replies_until(comm, predicate, timeout)


async def drain(comm, quiet=0.3):
    got = []
    while not await comm.receive_nothing(timeout=quiet):
        got.append(await comm.receive_json_from())
    return got


def is_type(kind, **fields):
    return lambda m: m.get("type") == kind and all(m.get(k) == v for k, v in fields.items())


def digest(runtime, room: Room) -> str:
    return runtime.sandboxes[room.sandbox_id].engine.run.state_digest()


# ---- authorisation ------------------------------------------------------------------------

async def test_a_students_command_is_refused_and_changes_nothing(runtime):
    teacher, room, student = await setup()
    t, _ = await connect(teacher, room)
    s, _ = await connect(student, room)
    before = digest(runtime, room)
    for command in ({"cmd": "crash", "broker": 0}, {"cmd": "step"}, {"cmd": "reset"},
                    {"cmd": "load", "scenario": "kip101-data-loss", "truncation": "hw"},
                    {"cmd": "import", "run": "{}"}, {"cmd": "mode", "step": True}, {"type": "bogus"}):
        await s.send_json_to(command)
        refused = (await until(s, is_type("error")))[-1]
        assert refused["code"] == "forbidden", (command, refused)
    assert digest(runtime, room) == before
    # Nothing was published to the class either: the instructor got no frame, only rosters.
    while not await t.receive_nothing(timeout=0.3):
        assert (await t.receive_json_from())["type"] == "roster"
    await s.disconnect()
    await t.disconnect()


async def test_read_only_messages_are_allowed_for_students(runtime):
    teacher, room, student = await setup()
    t, _ = await connect(teacher, room)
    s, _ = await connect(student, room)
    await s.send_json_to({"type": "sync"})
    assert (await until(s, is_type("frame")))[-1]["snapshot"] is True
    await s.send_json_to({"cmd": "export"})
    ack = (await until(s, is_type("ack", command="export")))[-1]
    assert ack["data"]["format"] == "kafkaviz-run" and ack["data"]["lesson"] == "sandbox"
    await s.disconnect()
    await t.disconnect()


async def test_a_foreign_origin_is_refused(runtime):
    teacher, room, student = await setup()
    for client in (teacher, student):
        comm = WebsocketCommunicator(application, f"/ws/rooms/{room.code}/",
                                     headers=headers(client, b"http://evil.example"))
        connected, _ = await comm.connect()
        assert not connected
    assert room.sandbox_id not in runtime.sandboxes


async def test_a_browser_that_did_not_join_cannot_watch(runtime):
    teacher, room, student = await setup()
    stranger = await sync_to_async(Client)()
    await sync_to_async(stranger.get)("/lessons/segments/")   # has a session, not a membership
    comm = WebsocketCommunicator(application, f"/ws/rooms/{room.code}/", headers=headers(stranger))
    connected, code = await comm.connect()
    assert not connected and code == 4403
    # An unknown code closes the same way: sockets tell nobody which codes exist.
    for path in ("/ws/rooms/NQSUCHCD/", "/ws/rooms/not-a-code/"):
        comm = WebsocketCommunicator(application, path, headers=headers(student))
        connected, code = await comm.connect()
        assert not connected and code == 4403


async def test_a_granted_student_acts_and_loses_control_at_once_when_revoked(runtime):
    teacher, room, student = await setup()
    t, _ = await connect(teacher, room)
    s, _ = await connect(student, room)
    member = await sync_to_async(Member.objects.get)(room=room)
    # A student cannot grant itself.
    await s.send_json_to({"type": "grant", "member": member.pk})
    assert (await until(s, is_type("error")))[-1]["code"] == "forbidden"
    await t.send_json_to({"type": "grant", "member": member.pk})
    await until(t, is_type("ack", command="grant"))
    assert (await until(s, is_type("control", granted=True)))[-1]["granted"] is True
    await s.send_json_to({"cmd": "crash", "broker": 2})
    ack = (await until(s, is_type("ack", command="crash")))[-1]
    assert "ack" == ack["type"]
    frame = (await until(t, lambda m: m.get("type") == "frame" and not m["state"]["brokers"][2]["alive"]))[-1]
    assert frame["state"]["brokers"][2]["alive"] is False
    await t.send_json_to({"type": "revoke", "member": member.pk})
    await until(t, is_type("ack", command="revoke"))
    await until(s, is_type("control", granted=False))
    before = digest(runtime, room)
    await s.send_json_to({"cmd": "restart", "broker": 2})
    assert (await until(s, is_type("error")))[-1]["code"] == "forbidden"
    assert digest(runtime, room) == before
    await s.disconnect()
    await t.disconnect()


async def test_grant_of_a_member_of_another_room_is_refused(runtime):
    teacher, room, student = await setup()
    other_room = await sync_to_async(open_room)(teacher)
    await sync_to_async(student_client)(other_room, "Bob")
    bob = await sync_to_async(Member.objects.get)(room=other_room)
    t, _ = await connect(teacher, room)
    await t.send_json_to({"type": "grant", "member": bob.pk})
    assert (await until(t, is_type("error")))[-1]["code"] == "not_found"
    assert not (await sync_to_async(Member.objects.get)(pk=bob.pk)).granted
    await t.send_json_to({"type": "grant", "member": "1; DROP"})
    assert (await until(t, is_type("error")))[-1]["code"] == "invalid"
    await t.disconnect()


async def test_the_roster_is_pushed_when_students_come_and_go(runtime):
    teacher, room, student = await setup()
    t, _ = await connect(teacher, room)
    s, _ = await connect(student, room)
    roster = (await until(t, lambda m: m.get("type") == "roster" and m["members"]
                          and m["members"][0]["connected"]))[-1]
    assert [m["name"] for m in roster["members"]] == ["Ada"]
    assert "token" not in roster["members"][0]
    # A student hears only about its own control, never the class list.
    assert not [m for m in await drain(s) if m.get("type") == "roster"]
    await s.disconnect()
    roster = (await until(t, lambda m: m.get("type") == "roster" and not m["members"][0]["connected"]))[-1]
    assert roster["members"][0]["granted"] is False
    await t.disconnect()


async def test_the_kill_the_leader_preset_crashes_the_leader(runtime):
    teacher, room, student = await setup()
    t, snapshot = await connect(teacher, room)
    s, _ = await connect(student, room)
    (preset,) = [p for p in PRESETS if p.id == "kill-leader"]
    state = snapshot["state"]
    while state["partition"] is None or state["partition"]["leader"] < 0:   # the scenario creates the topic
        await t.send_json_to({"cmd": "step"})
        await until(t, is_type("ack", command="step"))
        state = runtime.sandboxes[room.sandbox_id].engine.state()
    leader = state["partition"]["leader"]
    command = {k: (leader if v == "$leader" else v) for k, v in preset.do[0].items()}
    await t.send_json_to(command)
    await until(t, is_type("ack", command="crash"))
    frame = (await until(s, lambda m: m.get("type") == "frame" and not m["state"]["brokers"][leader]["alive"]))[-1]
    assert frame["state"]["brokers"][leader]["leader"] or frame["state"]["partition"]["leader"] != leader
    assert sum(not b["alive"] for b in frame["state"]["brokers"]) == 1   # the leader, nobody else
    await s.disconnect()
    await t.disconnect()


# ---- runs: start, fork, export ------------------------------------------------------------------

async def test_a_room_starts_from_the_instructors_run(runtime):
    from kafkaviz.live.runtime import new_sandbox_id

    own = new_sandbox_id()
    await runtime.attach(own, "leader-epoch")
    for _ in range(5):
        await runtime.command(own, {"cmd": "step"})
    exported = (await runtime.command(own, {"cmd": "export"}))["file"]
    teacher, room, student = await setup("leader-epoch", exported)
    t, snapshot = await connect(teacher, room)
    frame = (await until(t, lambda m: m.get("type") == "frame" and m["state"]["run"]["step"] == 5))[-1]
    assert frame["state"]["lanes"] == runtime.sandboxes[own].engine.state()["lanes"]
    assert digest(runtime, room) == runtime.sandboxes[own].engine.run.state_digest()
    await t.disconnect()


async def test_a_student_forks_the_room_into_a_private_sandbox_at_the_same_step(runtime):
    teacher, room, student = await setup("leader-epoch")
    t, _ = await connect(teacher, room)
    s, _ = await connect(student, room)
    for _ in range(4):
        await t.send_json_to({"cmd": "step"})
        await until(t, is_type("ack", command="step"))
    await s.send_json_to({"cmd": "share"})
    share_id = (await until(s, is_type("ack", command="share")))[-1]["share_id"]
    # What room.js does next: open the lesson page with ?run=<id> in the student's own sandbox.
    page = await sync_to_async(student.get)(f"/lessons/leader-epoch/?run={share_id}")
    assert page.status_code == 200 and share_id.encode() in page.content
    own = TrackedCommunicator(application, "/ws/lessons/leader-epoch/", headers=headers(student))
    assert (await own.connect())[0]
    await own.receive_json_from(timeout=10)
    await own.send_json_to({"cmd": "open_shared", "id": share_id})
    assert (await until(own, is_type("ack", command="open_shared")))[-1]["text"] == "Run loaded: step 4 of 13."   # 16 commands, 13 steps
    mine = [sb for sid, sb in runtime.sandboxes.items() if sid != room.sandbox_id]
    assert len(mine) == 1 and mine[0].engine.run.state_digest() == digest(runtime, room)
    # Private: the room did not move, and the fork's commands stay in the fork.
    before = digest(runtime, room)
    await own.send_json_to({"cmd": "step"})
    await until(own, is_type("ack", command="step"))
    assert digest(runtime, room) == before
    await own.disconnect()
    await s.disconnect()
    await t.disconnect()


async def test_the_rooms_export_is_the_learner_format(runtime):
    from kafkaviz.live.runtime import new_sandbox_id

    teacher, room, student = await setup("leader-epoch")
    t, _ = await connect(teacher, room)
    await t.send_json_to({"cmd": "step"})
    await until(t, is_type("ack", command="step"))
    await t.send_json_to({"cmd": "export"})
    room_export = (await until(t, is_type("ack", command="export")))[-1]
    learner = new_sandbox_id()
    await runtime.attach(learner, "leader-epoch")
    await runtime.command(learner, {"cmd": "step"})
    learner_export = await runtime.command(learner, {"cmd": "export"})
    assert set(room_export["data"]) == set(learner_export["data"])
    assert room_export["data"]["run"] == learner_export["data"]["run"]
    assert room_export["data"]["lesson"] == learner_export["data"]["lesson"] == "leader-epoch"
    # And a learner's sandbox opens it.
    reply = await runtime.command(learner, {"cmd": "import", "run": room_export["file"]})
    assert reply["text"].startswith("Run loaded: step 1")
    await t.disconnect()


async def test_a_reclaimed_room_comes_back_where_the_class_left_it(runtime):
    teacher, room, student = await setup("leader-epoch")
    t, _ = await connect(teacher, room)
    for _ in range(3):
        await t.send_json_to({"cmd": "step"})
        await until(t, is_type("ack", command="step"))
    before = digest(runtime, room)
    await t.disconnect()
    runtime.settings["IDLE_SECONDS"] = 0
    assert runtime.reap_idle() == [room.sandbox_id]          # nobody watched: reclaimed, files and all
    s, snapshot = await connect(student, room)
    frame = (await until(s, lambda m: m.get("type") == "frame" and m["state"]["run"]["step"] == 3))[-1]
    assert frame["state"]["run"]["step"] == 3 and digest(runtime, room) == before
    await s.disconnect()


async def test_room_sandboxes_are_not_reclaimed_while_watched(runtime):
    teacher, room, student = await setup()
    s, _ = await connect(student, room)
    runtime.settings["IDLE_SECONDS"] = 0
    assert runtime.reap_idle() == []
    await s.disconnect()
    assert runtime.reap_idle() == [room.sandbox_id]


# ---- close -----------------------------------------------------------------------------------

async def test_closing_tells_watchers_refuses_joins_and_reclaims_the_sandbox(runtime):
    teacher, room, student = await setup()
    t, _ = await connect(teacher, room)
    s, _ = await connect(student, room)
    assert room.sandbox_id in runtime.sandboxes
    data_dir = runtime.sandboxes[room.sandbox_id].data_dir
    response = await sync_to_async(teacher.post)(f"/rooms/{room.code}/close")
    assert response.status_code == 302
    closed = (await until(s, is_type("error", code="closed")))[-1]
    assert "closed" in closed["message"]
    assert room.sandbox_id not in runtime.sandboxes and not data_dir.exists()
    late = await sync_to_async(Client)()
    response = await sync_to_async(late.post)("/rooms/join", {"code": room.code, "name": "Late"})
    assert response.status_code == 410 and b"closed" in response.content
    comm = WebsocketCommunicator(application, f"/ws/rooms/{room.code}/", headers=headers(student))
    connected, _ = await comm.connect()
    assert connected
    assert (await comm.receive_json_from(timeout=5))["code"] == "closed"
    assert (await comm.receive_output(timeout=5))["code"] == 4410
    await s.disconnect()
    await t.disconnect()


async def test_malformed_messages_from_a_student_and_room_messages_with_odd_values_break_nothing(
        runtime, settings, caplog):
    import logging
    import random

    from .test_hostile_input import ODD_VALUES, malformed_messages

    settings.KAFKAVIZ_RUNTIME = {**settings.KAFKAVIZ_RUNTIME, "INVALID_BURST": 10**6,
                                 "CONNECTION_COMMAND_BURST": 10**6}
    teacher, room, student = await setup()
    t, _ = await connect(teacher, room)
    s, _ = await connect(student, room)
    before = digest(runtime, room)
    rng = random.Random(7)
    corpus = malformed_messages(300) + [json.dumps({"type": rng.choice(["grant", "revoke"]), "member": v},
                                                   allow_nan=True) for v in ODD_VALUES]
    for message in corpus:
        if isinstance(message, bytes):
            await s.send_to(bytes_data=message)
        else:
            await s.send_to(text_data=message)
        reply = (await until(s, lambda m: m.get("type") in ("error", "ack") or m.get("snapshot")))[-1]
        if reply.get("snapshot"):           # a well-formed sync: allowed to everybody
            continue
        assert reply["type"] == "error" and reply["code"] != "internal", (message, reply)
    assert digest(runtime, room) == before          # a watcher changed nothing
    for value in ODD_VALUES:                         # the instructor's odd grants are refused cleanly
        await t.send_to(text_data=json.dumps({"type": "grant", "member": value}, allow_nan=True))
        reply = (await until(t, lambda m: m.get("type") in ("error", "ack")))[-1]
        assert reply["type"] == "error" and reply["code"] in ("invalid", "not_found"), (value, reply)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    await t.send_json_to({"cmd": "crash", "broker": 1})       # the room is alive
    await until(t, is_type("ack", command="crash"))
    await s.disconnect()
    await t.disconnect()


# ---- a class behind one address ------------------------------------------------------------

async def test_a_class_behind_one_address_is_not_capped_per_address_but_per_student(runtime, runtime_settings):
    from kafkaviz.classroom.consumers import MAX_SOCKETS_PER_MEMBER

    runtime_settings["MAX_CONNECTIONS_PER_ADDRESS"] = 1       # a school's NAT: every student has one address
    teacher, room, ada = await setup()
    grace = await sync_to_async(student_client)(room, "Grace")
    sockets = [(await connect(c, room))[0] for c in (teacher, ada, grace)]
    for _ in range(MAX_SOCKETS_PER_MEMBER - 1):
        sockets.append((await connect(ada, room))[0])
    extra = WebsocketCommunicator(application, f"/ws/rooms/{room.code}/", headers=headers(ada))
    connected, _ = await extra.connect()
    assert connected
    refusal = await extra.receive_json_from(timeout=5)
    assert refusal["type"] == "error" and refusal["code"] == "quota" and "open" in refusal["message"]
    assert (await extra.receive_output(timeout=5))["type"] == "websocket.close"
    for comm in sockets:
        await comm.disconnect()


async def test_healthz_counts_the_rooms_this_process_runs(runtime):
    teacher, room, student = await setup()
    comm, _ = await connect(teacher, room)
    body = (await sync_to_async(Client().get)("/healthz")).json()
    assert body["rooms"] == 1 and body["sandboxes"] == 1
    await comm.disconnect()


# ---- language ----------------------------------------------------------------------------------

async def test_a_chinese_room_answers_its_socket_errors_in_chinese(runtime):
    teacher, room, student = await setup()
    t, _ = await connect(teacher, room, "zh")
    s, _ = await connect(student, room, "zh")
    await s.send_json_to({"cmd": "crash", "broker": 0})
    forbidden = (await until(s, is_type("error")))[-1]
    assert forbidden["code"] == "forbidden" and "只有讲师" in forbidden["message"]
    await s.send_json_to({"type": "grant", "member": 1})
    assert "只有讲师可以交出或收回控制权" in (await until(s, is_type("error")))[-1]["message"]
    await t.send_json_to({"type": "grant", "member": 987654})
    assert (await until(t, is_type("error")))[-1]["message"] == "这个房间里没有这名学生。"
    await t.send_json_to({"type": "grant", "member": "x"})
    assert "需要成员的 id" in (await until(t, is_type("error")))[-1]["message"]
    await s.send_to(text_data="{not json")
    assert (await until(s, is_type("error")))[-1]["message"] == "这条消息不是有效的 JSON。"
    member = await sync_to_async(lambda: Member.objects.get(room=room).pk)()
    await t.send_json_to({"type": "grant", "member": member})
    ack = (await until(t, is_type("ack", command="grant")))[-1]
    assert ack["text"] == "Ada 现在可以执行命令了。"
    await s.disconnect()
    await t.disconnect()


async def test_an_english_room_keeps_english_socket_errors(runtime):
    teacher, room, student = await setup()
    t, _ = await connect(teacher, room)
    s, _ = await connect(student, room, "en")
    await s.send_json_to({"cmd": "crash", "broker": 0})
    assert (await until(s, is_type("error")))[-1]["message"].startswith("Only the instructor, or a student")
    await t.send_json_to({"type": "grant", "member": 987654})
    assert (await until(t, is_type("error")))[-1]["message"] == "No such student in this room."
    await s.disconnect()
    await t.disconnect()
