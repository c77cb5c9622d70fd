"""Room operations shared by the views and the consumer: membership in the session,
the roster, closing."""
from __future__ import annotations

from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.utils import timezone

from kafkaviz.live.router import get_router

from .models import Member, Room

__all__ = ["MEMBERS_SESSION_KEY", "member_of", "remember_member", "roster", "close_room"]

MEMBERS_SESSION_KEY = "kafkaviz_rooms"
MAX_ROOMS_PER_SESSION = 20


def member_of(session: Any, room: Room) -> Member | None:
    token = (session.get(MEMBERS_SESSION_KEY) or {}).get(room.code)
    if not isinstance(token, str):
        return None
    return Member.objects.filter(room=room, token=token).first()


def remember_member(session: Any, member: Member) -> None:
    rooms = dict(session.get(MEMBERS_SESSION_KEY) or {})
    rooms.pop(member.room.code, None)
    rooms[member.room.code] = member.token
    while len(rooms) > MAX_ROOMS_PER_SESSION:     # the signed cookie stays small
        rooms.pop(next(iter(rooms)))
    session[MEMBERS_SESSION_KEY] = rooms


def roster(room_id: int) -> list[dict[str, Any]]:
    """Who is in the room, as every watcher gets it (no tokens). ``connected`` is filled in
    by the room's consumer from the members' live socket leases (``RoomConsumer._roster``);
    the database does not know it."""
    return [{"id": m.pk, "name": m.name, "granted": m.granted, "connected": False}
            for m in Member.objects.filter(room_id=room_id, removed=False).only("pk", "name", "granted")]


def close_room(room: Room) -> None:
    """Close: refuse joins from now on, tell every watcher (in any process, through the
    room's group), and reclaim the room's sandbox and its files wherever it runs."""
    Room.objects.filter(pk=room.pk, closed__isnull=True).update(closed=timezone.now())
    Member.objects.filter(room=room).update(granted=False)
    layer = get_channel_layer()
    if layer is not None:
        async_to_sync(layer.group_send)(room.group(), {"type": "room.closed"})
    # Through the router: the sandbox may live in another process (docs/web.md, "Several processes").
    async_to_sync(get_router().discard)(room.sandbox_id)
