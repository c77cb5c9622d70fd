"""Room sockets tell nobody which codes exist (issue 19 item 11): a closed room's socket
answers "closed" only to its own instructor and students, anyone else gets the close an
unknown code gets; and socket guesses count against the address's guessing limit, as wrong
codes on the join form do."""
from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.conf import settings as django_settings
from django.test import Client

from kafkaviz.asgi import application
from kafkaviz.classroom.guard import guessing_blocked
from kafkaviz.classroom.models import CODE_ALPHABET, Room
from kafkaviz.classroom.rooms import close_room

from .test_rooms import close_thread_connections, fast_hashing, headers, setup  # noqa: F401 - fixtures

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]


async def socket(client: Client, code: str, address: str = "10.3.3.3"):
    comm = WebsocketCommunicator(application, f"/ws/rooms/{code}/", headers=headers(client))
    comm.scope["client"] = (address, 4000)
    connected, close = await comm.connect()
    first = await comm.receive_json_from(timeout=5) if connected else None
    return connected, close, first


async def test_a_closed_room_says_closed_only_to_its_own_people(runtime):
    teacher, room, student = await setup()
    stranger = Client()
    await sync_to_async(stranger.get)("/lessons/segments/")
    await sync_to_async(close_room)(await sync_to_async(Room.objects.get)(pk=room.pk))
    connected, _, first = await socket(student, room.code)
    assert connected and first["code"] == "closed"
    connected, _, first = await socket(teacher, room.code)
    assert connected and first["code"] == "closed"
    closed = await socket(stranger, room.code)
    unknown = await socket(stranger, "NQSUCHCD")
    assert closed == unknown == (False, 4403, None)


async def test_socket_guesses_count_against_the_address_like_the_join_form(runtime, settings):
    teacher, room, student = await setup()
    limit = django_settings.KAFKAVIZ_ROOMS["JOIN_FAILURES_PER_MINUTE"]
    guesser = Client()
    await sync_to_async(guesser.get)("/lessons/segments/")
    for i in range(limit):
        assert await socket(guesser, f"ABCDEFG{CODE_ALPHABET[i]}", "10.4.4.4") == (False, 4403, None)
    assert await sync_to_async(guessing_blocked)("10.4.4.4")
    assert not await sync_to_async(guessing_blocked)("10.3.3.3")
    # The join form refuses the address now, even with the right code.
    response = await sync_to_async(Client(REMOTE_ADDR="10.4.4.4").post)("/rooms/join",
                                                                        {"code": room.code, "name": "Mallory"})
    assert response.status_code == 429
    # The room's own students are not locked out by a guesser behind the same address.
    connected, _, first = await socket(student, room.code, "10.4.4.4")
    assert connected and first["type"] == "frame"
