"""The access log as JSON lines (``kafkaviz.jsonlog``), from an ASGI middleware.

daphne's own access log is NCSA-style text on stdout; ``make serve-prod`` turns it off
(``-v 0``) and sets ``KAFKAVIZ_ACCESS_LOG=1``, so every request is one JSON object on the
``kafkaviz.access`` logger: ``event`` ("http" or "websocket"), ``method``, ``path`` (no
query string: share ids and languages are not worth logging), ``status`` (HTTP status, or
the WebSocket close code / "accepted" / "rejected"), ``bytes`` sent, ``ms`` taken and the
``client`` address. Query strings and cookies are never logged.
"""
from __future__ import annotations

import logging
import time
from typing import Any, Awaitable, Callable

log = logging.getLogger("kafkaviz.access")

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


class AccessLog:
    def __init__(self, app: Callable[[Scope, Receive, Send], Awaitable[None]]) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        started = time.monotonic()
        seen: dict[str, Any] = {"status": None, "bytes": 0}

        async def logging_send(message: dict[str, Any]) -> None:
            kind = message.get("type")
            if kind == "http.response.start":
                seen["status"] = message.get("status")
            elif kind == "http.response.body":
                seen["bytes"] += len(message.get("body") or b"")
            elif kind == "websocket.accept":
                seen["status"] = "accepted"
            elif kind == "websocket.send":
                seen["bytes"] += len(message.get("text") or message.get("bytes") or "")
            elif kind == "websocket.close":
                if seen["status"] is None:
                    seen["status"] = "rejected"
                seen["close"] = message.get("code", 1000)
            await send(message)

        try:
            await self.app(scope, receive, logging_send)
        finally:
            client = scope.get("client")
            extra = {"event": scope["type"], "method": scope.get("method", "GET"), "path": scope.get("path", "")[:200],
                     "status": seen["status"], "bytes": seen["bytes"],
                     "ms": round((time.monotonic() - started) * 1000, 1), "client": client[0] if client else ""}
            if "close" in seen:
                extra["close"] = seen["close"]
            log.info("%s %s %s", extra["method"] if scope["type"] == "http" else "WS", extra["path"], extra["status"],
                     extra=extra)
