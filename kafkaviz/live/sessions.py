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


def sandbox_id_from_session(session: Any, lesson_slug: str) -> str | None:
    if session is None:
        return None
    sid = (session.get(SESSION_KEY) or {}).get(lesson_slug)
    return sid if isinstance(sid, str) and SANDBOX_ID_RE.match(sid) else None
