"""The WebSocket consumer: a thin adapter between a browser and the runtime.

It checks who is asking (origin is checked by the ASGI stack; the sandbox id comes
from the signed session, never from the client), refuses oversized or non-JSON
messages, forwards commands to the runtime, and relays the sandbox group's frames.
A bad message gets an error reply to its sender only; the connection stays open.
"""
from __future__ import annotations

import json
import logging
from urllib.parse import parse_qs
from typing import Any

from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.conf import settings

from kafkaviz.lessons.catalogue import get_lesson
from kafkaviz.lessons.content import LANGUAGES

from .runtime import get_runtime, group_name
from .sessions import sandbox_id_from_session
from .validation import CommandError

log = logging.getLogger("kafkaviz.consumers")

CLOSE_NO_SANDBOX = 4403
CLOSE_NO_LESSON = 4404
CLOSE_FULL = 4429


class LessonConsumer(AsyncJsonWebsocketConsumer):
    """``/ws/lessons/<slug>/``: the live sandbox of one lesson for this session."""

    sandbox_id: str | None = None
    group: str | None = None

    async def connect(self) -> None:
        slug = self.scope["url_route"]["kwargs"]["slug"]
        lesson = get_lesson(slug)
        if lesson is None or lesson.sandbox_kind is None:
            await self.close(code=CLOSE_NO_LESSON)
            return
        sandbox_id = sandbox_id_from_session(self.scope.get("session"), slug)
        if sandbox_id is None:
            # No page visit issued an id to this browser: nothing to attach to.
            await self.close(code=CLOSE_NO_SANDBOX)
            return
        query = parse_qs((self.scope.get("query_string") or b"").decode("latin-1"))
        lang = (query.get("lang") or ["en"])[0]
        try:
            snapshot = await get_runtime().attach(sandbox_id, slug, lang if lang in LANGUAGES else "en")
        except CommandError as exc:
            await self.accept()
            await self.send_json(exc.to_message())
            await self.close(code=CLOSE_FULL)
            return
        self.sandbox_id = sandbox_id
        self.group = group_name(sandbox_id)
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()
        await self.send_json(snapshot)

    async def disconnect(self, code: int) -> None:
        if self.group is not None:
            await self.channel_layer.group_discard(self.group, self.channel_name)
            await get_runtime().detach(self.sandbox_id)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None, **kwargs: Any) -> None:
        limit = settings.KAFKAVIZ_RUNTIME["MAX_MESSAGE_BYTES"]
        if text_data is None:
            await self.send_error(CommandError("invalid", "Send commands as JSON text, not binary."))
            return
        if len(text_data) > limit:
            await self.send_error(CommandError("too_large", f"A command may be at most {limit} bytes; "
                                               f"this one is {len(text_data)}."))
            return
        try:
            content = json.loads(text_data)
        except ValueError:
            await self.send_error(CommandError("invalid", "That message is not valid JSON."))
            return
        await self.receive_json(content)

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        try:
            reply = await get_runtime().command(self.sandbox_id, content)
        except CommandError as exc:
            await self.send_error(exc)
        except Exception:  # noqa: BLE001 - one bad command must not take the connection down
            log.exception("command failed in sandbox %s", self.sandbox_id)
            await self.send_error(CommandError("internal", "Something went wrong on the server while running "
                                               "that command; it has been logged. Reset the sandbox if it looks wrong."))
        else:
            await self.send_json(reply)

    async def send_error(self, exc: CommandError) -> None:
        await self.send_json(exc.to_message())

    async def sandbox_frame(self, message: dict[str, Any]) -> None:
        """Group message ``{"type": "sandbox.frame", "frame": {...}}`` → this browser."""
        await self.send_json(message["frame"])
