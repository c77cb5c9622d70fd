"""Predict, then watch in a room: students send their picks for the lesson's question,
the database keeps one per student and question, and every watcher gets the class's
spread (the projector as it comes in; a page connecting later gets it at once). The
instructor does not vote; malformed picks are refused and change nothing."""
from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async

from kafkaviz.classroom.models import Answer

from .test_rooms import (close_thread_connections, connect, drain, fast_hashing, is_type, open_room,  # noqa: F401
                         student_client, until)
from .test_rooms import instructor_client

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]

LESSON = "idempotence-and-transactions"      # its step 2, "plain-retry", asks before it runs
QUESTION = "plain-retry"


async def room_of_two():
    teacher = await sync_to_async(instructor_client)()
    room = await sync_to_async(open_room)(teacher, LESSON)
    ada = await sync_to_async(student_client)(room, "Ada")
    bob = await sync_to_async(student_client)(room, "Bob")
    return teacher, room, ada, bob


async def spread(comm, counts):
    """Read until the spread with these counts arrives (earlier ones may be queued first)."""
    got = await until(comm, is_type("spread", question=QUESTION, counts=counts))
    return got[-1]["counts"]


async def test_the_class_spread_reaches_every_watcher_and_a_repick_replaces(runtime):
    teacher, room, ada, bob = await room_of_two()
    t_comm, _ = await connect(teacher, room)
    a_comm, _ = await connect(ada, room)
    b_comm, _ = await connect(bob, room)
    await drain(t_comm)
    await drain(a_comm)
    # The question is the frame state's: step 1 of the lesson's run, then the room asks about step 2.
    await t_comm.send_json_to({"cmd": "step"})
    frames = await until(t_comm, lambda m: m.get("type") == "frame" and (m["state"].get("prediction") or {}).get("upcoming"))
    assert frames[-1]["state"]["prediction"]["upcoming"]["id"] == QUESTION

    await a_comm.send_json_to({"type": "predict", "question": QUESTION, "choice": 0})
    assert (await until(a_comm, is_type("ack", command="predict")))[-1]["text"]
    await spread(t_comm, [1, 0, 0])
    await b_comm.send_json_to({"type": "predict", "question": QUESTION, "choice": 1})
    await spread(t_comm, [1, 1, 0])
    await spread(a_comm, [1, 1, 0])          # students get it too (the page shows it after the step)
    await a_comm.send_json_to({"type": "predict", "question": QUESTION, "choice": 1})
    await spread(t_comm, [0, 2, 0])
    assert await sync_to_async(Answer.objects.filter(room=room).count)() == 2

    # A projector that reconnects gets the spread at once.
    await t_comm.disconnect()
    t2, _ = await connect(teacher, room)
    await spread(t2, [0, 2, 0])
    for comm in (t2, a_comm, b_comm):
        await comm.disconnect()


@pytest.mark.parametrize("message", [
    {"type": "predict", "question": "no-such-question", "choice": 0},
    {"type": "predict", "question": QUESTION, "choice": 3},
    {"type": "predict", "question": QUESTION, "choice": True},
    {"type": "predict", "question": QUESTION, "choice": 0, "extra": 1},
    {"type": "predict", "question": ["x"], "choice": 0},
])
async def test_malformed_picks_are_refused_and_change_nothing(runtime, message):
    teacher, room, ada, _bob = await room_of_two()
    a_comm, _ = await connect(ada, room)
    await drain(a_comm)
    await a_comm.send_json_to(message)
    err = (await until(a_comm, is_type("error")))[-1]
    assert err["code"] == "invalid" and err["command"] == "predict"
    assert await sync_to_async(Answer.objects.count)() == 0
    await a_comm.disconnect()


async def test_the_instructor_does_not_vote(runtime):
    teacher, room, _ada, _bob = await room_of_two()
    t_comm, _ = await connect(teacher, room)
    await drain(t_comm)
    await t_comm.send_json_to({"type": "predict", "question": QUESTION, "choice": 0})
    err = (await until(t_comm, is_type("error")))[-1]
    assert err["code"] == "forbidden"
    assert await sync_to_async(Answer.objects.count)() == 0
    await t_comm.disconnect()


async def test_removing_a_student_sends_every_watcher_the_spread_without_their_answer(runtime):
    teacher, room, ada, bob = await room_of_two()
    t_comm, _ = await connect(teacher, room)
    a_comm, _ = await connect(ada, room)
    b_comm, _ = await connect(bob, room)
    await t_comm.send_json_to({"cmd": "step"})
    await until(t_comm, lambda m: m.get("type") == "frame" and (m["state"].get("prediction") or {}).get("upcoming"))
    await a_comm.send_json_to({"type": "predict", "question": QUESTION, "choice": 0})
    await spread(t_comm, [1, 0, 0])
    await b_comm.send_json_to({"type": "predict", "question": QUESTION, "choice": 2})
    await spread(t_comm, [1, 0, 1])
    await spread(b_comm, [1, 0, 1])

    ada_id = await sync_to_async(lambda: room.members.get(name="Ada").pk)()
    await t_comm.send_json_to({"type": "remove", "member": ada_id})
    await spread(t_comm, [0, 0, 1])          # the projector drops Ada's pick at once
    await spread(b_comm, [0, 0, 1])          # and so does every other watcher's page
    assert await sync_to_async(Answer.objects.filter(room=room).count)() == 1
    for comm in (t_comm, a_comm, b_comm):
        await comm.disconnect()
