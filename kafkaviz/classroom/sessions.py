"""Which rooms this browser joined: member ids in the (signed) session, per join code."""
from __future__ import annotations

from typing import Any

SESSION_KEY = "kafkaviz_rooms"
MAX_ROOMS_PER_SESSION = 20     # the cookie stays small


def remember_member(session: Any, code: str, member_id: int) -> None:
    rooms = dict(session.get(SESSION_KEY) or {})
    rooms.pop(code, None)
    rooms[code] = member_id
    while len(rooms) > MAX_ROOMS_PER_SESSION:
        rooms.pop(next(iter(rooms)))
    session[SESSION_KEY] = rooms


def member_id_from_session(session: Any, code: str) -> int | None:
    if session is None:
        return None
    mid = (session.get(SESSION_KEY) or {}).get(code)
    return mid if isinstance(mid, int) and not isinstance(mid, bool) else None
