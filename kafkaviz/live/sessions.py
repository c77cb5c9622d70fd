"""Which sandbox belongs to which browser: ids live in the (signed) session, one per
lesson, issued by the server. A client never names a sandbox id itself."""
from __future__ import annotations

from typing import Any

from .runtime import SANDBOX_ID_RE, new_sandbox_id

SESSION_KEY = "kafkaviz_sandboxes"


def ensure_sandbox_id(session: Any, lesson_slug: str) -> str:
    """The session's sandbox id for a lesson, issuing one on first visit (views only)."""
    ids = dict(session.get(SESSION_KEY) or {})
    sid = ids.get(lesson_slug)
    if not isinstance(sid, str) or not SANDBOX_ID_RE.match(sid):
        sid = new_sandbox_id()
        ids[lesson_slug] = sid
        session[SESSION_KEY] = ids
    return sid


def visitor_id(session: Any) -> str:
    """Who this browser is, for per-visitor limits (shares): its first sandbox id, which the
    signed session holds and only the server issues ("" before any lesson page). A new
    session is a new visitor: the per-address limits are what a cookie-dropping client meets."""
    ids = (session.get(SESSION_KEY) or {}) if session is not None else {}
    # The first one issued (the session keeps their order), so it stays as more are added.
    return next((v for v in ids.values() if isinstance(v, str) and SANDBOX_ID_RE.match(v)), "")


def sandbox_id_from_session(session: Any, lesson_slug: str) -> str | None:
    if session is None:
        return None
    sid = (session.get(SESSION_KEY) or {}).get(lesson_slug)
    return sid if isinstance(sid, str) and SANDBOX_ID_RE.match(sid) else None
