"""The WebSocket consumer: a thin adapter between a browser and the runtime.

It checks who is asking (origin is checked by the ASGI stack; the sandbox id comes
from the signed session, never from the client), refuses oversized, non-JSON or too
deeply nested messages, forwards commands to the runtime, and relays the sandbox
group's frames (JSON text, serialised once by the runtime, in the ASGI event that sends it).

Whatever a client sends, it gets at most an error reply to itself: the connection
stays open (never a 1011 close), the sandbox stays up, and the log gets one line per
problem, not a traceback per message. Limits per connection: commands per second
(beside the sandbox's own bucket), and invalid messages per second; a client that
keeps sending invalid messages past that gets one notice, then silence, then is
disconnected. Sockets per client address are capped too.

What a socket takes (its place in the address's quota, its watch on the sandbox) it holds
as leases that this process renews while the socket lives and gives back in ``release()``:
from ``disconnect()``, or from the heartbeat when daphne cancelled the consumer before
``disconnect()`` could run (kafkaviz/live/leases.py).
"""
from __future__ import annotations

import json
import logging
import time
from urllib.parse import parse_qs
from typing import Any

from channels.db import database_sync_to_async
from channels.consumer import AsyncConsumer
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.conf import settings
from django.utils import translation
from django.utils.translation import gettext_lazy as _

from kafkaviz.lessons.catalogue import get_lesson
from kafkaviz.lessons.content import DJANGO_LANG, LANGUAGES

from .leases import live_sockets
from .router import get_router
from .runtime import COMMON_COMMANDS, SANDBOX_ID_RE, TokenBucket, group_name
from .sessions import SESSION_KEY, sandbox_id_from_session, visitor_id
from .shares import share_run
from .validation import CommandError, command_name, validate_command

log = logging.getLogger("kafkaviz.consumers")

CLOSE_NO_SANDBOX = 4403
CLOSE_NO_LESSON = 4404
CLOSE_FULL = 4429          # refused for good (the sandbox is gone, the server failed to open it)
CLOSE_RETRY = 1013         # busy, or a limit of this address/connection/member reached: try again later
CLOSE_ABUSE = 4408         # kept sending invalid messages after being told

ANSWERED = object()        # parse(): the message was answered (refused, rate-limited, a sync) and goes no further
MAX_NESTING = 20           # commands are flat objects; anything deeper is refused before parsing


class LessonConsumer(AsyncJsonWebsocketConsumer):
    """``/ws/lessons/<slug>/``: the live sandbox of one lesson for this session."""

    sandbox_id: str | None = None
    group: str | None = None
    address: str | None = None
    lang: str = "en"
    holder: str = ""           # this socket's id in the leases it holds (its channel name)
    released: bool = False

    def tr(self, text: Any, **params: Any) -> str:
        """``text`` (a ``gettext_lazy`` string) in this socket's language (``?lang=``, as
        its page), with ``params`` filled in: what this socket says itself is in the
        page's language, as the runtime's replies are."""
        with translation.override(DJANGO_LANG.get(self.lang, "en")):
            out = str(text)
        return out % params if params else out

    def _limit(self, name: str, default: Any) -> Any:
        return settings.KAFKAVIZ_RUNTIME.get(name, default)

    async def connect(self) -> None:
        # Everything this socket takes from here on is a lease the process renews while the
        # socket lives, and gives back even if disconnect() never runs (kafkaviz/live/leases.py).
        self.holder = self.channel_name or f"socket-{id(self):x}"
        live_sockets().add(self)
        now = time.monotonic()
        self.commands = TokenBucket(self._limit("CONNECTION_COMMANDS_PER_SECOND", 10.0),
                                    self._limit("CONNECTION_COMMAND_BURST", 20), now)
        self.invalid = TokenBucket(self._limit("INVALID_PER_SECOND", 2.0), self._limit("INVALID_BURST", 10), now)
        self.dropped = 0
        query = parse_qs((self.scope.get("query_string") or b"").decode("latin-1"))
        lang = (query.get("lang") or ["en"])[0]
        self.lang = lang = lang if lang in LANGUAGES else "en"
        resolved = await self.resolve_sandbox()
        if resolved is None:
            return
        sandbox_id, slug = resolved
        address = client_address(self.scope)
        if self.counts_against_address:
            if not await get_router().open_connection(address, self.holder):
                await self._refuse(CommandError("quota", self.tr(_(
                    "Too many open lesson connections from your address; close some tabs and reload."))))
                return
            self.address = address
        # Join the group before taking the snapshot: frames published from now on queue
        # for this consumer and reach the browser after the snapshot (the browser drops
        # any whose frame_seq the snapshot already covers).
        group = group_name(sandbox_id)
        await self.channel_layer.group_add(group, self.channel_name)
        try:
            try:
                snapshot = await get_router().attach(sandbox_id, slug, lang, address,
                                                     getattr(self, "room_code", None) or "", holder=self.holder)
            except CommandError as exc:
                # A learner reading quickly (lesson after lesson in one tab) must not be refused
                # for the sandboxes of pages they left: those of this session that no socket
                # watches are reclaimed first, then the sandbox is asked for once more.
                if exc.code not in ("quota", "busy") or not await self.reclaim_session_sandboxes(sandbox_id):
                    raise
                snapshot = await get_router().attach(sandbox_id, slug, lang, address,
                                                     getattr(self, "room_code", None) or "", holder=self.holder)
        except Exception as exc:  # noqa: BLE001 - a refusal is a message to the browser, never a 1011
            await self.channel_layer.group_discard(group, self.channel_name)
            if not isinstance(exc, CommandError):
                log_problem("attach failed", exc, sandbox=sandbox_id)
                exc = CommandError("internal", self.tr(_("The server could not open your sandbox; it has been "
                                                         "logged. Reload the page to try again.")))
            await self._refuse(exc)
            return
        self.sandbox_id, self.group = sandbox_id, group
        await self.accept()
        await self.send_json(snapshot)

    # Hook: sockets count against MAX_CONNECTIONS_PER_ADDRESS. Rooms turn it off: a class
    # shares one address behind its school's NAT, and room sockets are capped per member.
    counts_against_address = True

    async def resolve_sandbox(self) -> tuple[str, str] | None:
        """Hook: which sandbox this socket watches, as (sandbox id, lesson slug), from
        the URL and the signed session, never from the client. ``None`` once the socket
        has been closed (or refused) with the reason. Rooms override it."""
        slug = self.scope["url_route"]["kwargs"]["slug"]
        lesson = get_lesson(slug)
        if lesson is None or lesson.sandbox_kind is None:
            await self.close(code=CLOSE_NO_LESSON)
            return None
        sandbox_id = sandbox_id_from_session(self.scope.get("session"), slug)
        if sandbox_id is None:
            # No page visit issued an id to this browser: nothing to attach to.
            await self.close(code=CLOSE_NO_SANDBOX)
            return None
        return sandbox_id, slug

    async def authorise(self, content: Any) -> Any:
        """Hook: may this socket run ``content``? ``None`` if so, else the refusal sent
        back (nothing runs), or ``ANSWERED`` when the hook answered the message itself (a
        room's own messages). A learner owns their sandbox; rooms override it."""
        return None

    async def _refuse(self, exc: CommandError) -> None:
        """Tell the browser why (its page shows the message, ``"refused": true``), then
        close. A refusal that time can lift (a quota whose places free up, a full process)
        closes with 1013, "try again later", on which the page's socket reconnects by itself
        with a growing delay: a student whose tabs died with a killed process gets back in
        once their places lapse, without a reload. Anything else closes with 4429."""
        await self.accept()
        await self.send_json({**exc.to_message(), "refused": True})
        await self.close(code=CLOSE_RETRY if exc.code in ("quota", "busy") else CLOSE_FULL)

    async def disconnect(self, code: int) -> None:
        await self.release()

    async def reclaim_session_sandboxes(self, keep: str) -> int:
        """Reclaim this session's other sandboxes that no socket watches; how many went."""
        ids = (self.scope.get("session") or {}).get(SESSION_KEY) or {}
        others = [sid for sid in ids.values() if isinstance(sid, str) and SANDBOX_ID_RE.match(sid) and sid != keep]
        if not others:
            return 0
        done = await get_router().reclaim_idle(others[:50])
        if done:
            log.info("reclaimed a session's unwatched sandboxes", extra={"event": "session_reclaimed",
                                                                           "sandbox": keep[:8], "count": done})
        return done

    def held(self) -> tuple[str | None, str | None, list[str]]:
        """What this socket holds, for the heartbeat to renew: (the sandbox it watches, the
        address whose socket quota it counts in, its other places)."""
        return (self.sandbox_id if self.group is not None else None), self.address, self.place_keys()

    def place_keys(self) -> list[str]:
        """Hook: other capped places this socket holds (a room member's)."""
        return []

    async def release(self) -> None:
        """Give back what this socket holds: from ``disconnect``, or from the heartbeat when
        daphne cancelled the consumer before ``disconnect`` could run. Runs once."""
        if self.released:
            return
        self.released = True
        live_sockets().remove(self)
        if self.address is not None:
            address, self.address = self.address, None
            await get_router().close_connection(address, self.holder)
        if self.group is not None:
            group, self.group = self.group, None
            await self.channel_layer.group_discard(group, self.channel_name)
            await get_router().detach(self.sandbox_id, self.holder)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None, **kwargs: Any) -> None:
        """One message: parsed (size, nesting, JSON, rate, ``sync``), authorised (a room's
        own messages answered there), then a share or a command for the sandbox's runtime."""
        if self.sandbox_id is None:
            return
        try:
            content = await self.parse(text_data)
            if content is ANSWERED:
                return
            refusal = await self.authorise(content)
            if refusal is ANSWERED:
                return
            if refusal is not None:
                await self.send_error(refusal)
            elif command_name(content) == "share":
                await self.share(content)
            else:
                await self.send_json(await get_router().command(self.sandbox_id, content, self.budget()))
        except CommandError as exc:
            await (self.refuse(exc) if exc.code in ("invalid", "unknown_type") else self.send_error(exc))
        except Exception as exc:  # noqa: BLE001 - nothing a client sends may close the socket with 1011
            log_problem("receive failed", exc, sandbox=self.sandbox_id)
            try:
                await self.send_error(CommandError("internal", self.tr(_(
                    "Something went wrong on the server with that message; it has been logged. Reset the sandbox "
                    "if it looks wrong."))))
            except Exception:  # noqa: BLE001 - the client left mid-reply: one logged problem, not a second traceback
                log.info("client gone before an error reply", extra={"event": "client_gone",
                                                                     "sandbox": (self.sandbox_id or "")[:8]})

    async def parse(self, text_data: str | None) -> Any:
        """The message as JSON, or ``ANSWERED`` once it has been answered here: refused
        (binary, too large, too deep, not JSON), over the connection's rate, or a ``sync``."""
        limit = settings.KAFKAVIZ_RUNTIME["MAX_MESSAGE_BYTES"]
        if text_data is None:
            await self.refuse(CommandError("invalid", self.tr(_("Send commands as JSON text, not binary."))))
            return ANSWERED
        if len(text_data) > limit:
            await self.refuse(CommandError("too_large", self.tr(_(
                "A command may be at most %(limit)d bytes; this one is %(size)d."), limit=limit, size=len(text_data))))
            return ANSWERED
        if nesting_depth(text_data) > MAX_NESTING:
            await self.refuse(CommandError("invalid", self.tr(_(
                "A command is a flat JSON object; this message is nested too deeply."))))
            return ANSWERED
        try:
            content = json.loads(text_data)
        except (ValueError, RecursionError):
            await self.refuse(CommandError("invalid", self.tr(_("That message is not valid JSON."))))
            return ANSWERED
        if not self.commands.take(time.monotonic()):
            await self.send_error(CommandError("rate_limited", self.tr(_(
                "Too many commands from this page; wait a moment and try again."))))
            return ANSWERED
        if isinstance(content, dict) and content.get("type") == "sync" and len(content) == 1:
            # The browser lost track of the state (it missed the whole state a diff refers to).
            try:
                await self.send_json(await get_router().snapshot(self.sandbox_id, self.budget()))
            except CommandError as exc:             # reclaimed, spent, or its owner is being taken over: say so
                await self.send_error(exc)
            return ANSWERED
        return content

    def budget(self) -> str:
        """Hook: whose budget this socket's commands spend ("": the sandbox's own). A learner
        owns their sandbox; in a room each member has one (``Runtime.command``)."""
        return ""

    def visitor(self) -> str:
        """Hook: who this socket is, for the limit on shares (the session's own id)."""
        return visitor_id(self.scope.get("session"))

    async def share(self, content: dict[str, Any]) -> None:
        """``{"cmd": "share"}``: the run comes from the sandbox's owner as an export; it is
        stored here, counted against this socket's visitor and address (shares.share_run)."""
        validate_command({"share": COMMON_COMMANDS["share"]}, content)
        try:
            reply = await get_router().command(self.sandbox_id, {"cmd": "export"}, self.budget())
            with translation.override(DJANGO_LANG.get(self.lang, "en")):
                shared = await database_sync_to_async(share_run)(reply["data"], self.visitor(),
                                                                 client_address(self.scope))
        except CommandError as exc:
            exc.command = "share"
            raise
        await self.send_json({"type": "ack", "command": "share", "text": self.tr(_("Share link created.")),
                              "share_id": shared.pk})

    async def refuse(self, exc: CommandError) -> None:
        """An invalid message: tell the sender, unless it keeps sending them (rate-limited:
        one notice, then silence, then the connection is closed)."""
        if self.invalid.take(time.monotonic()):
            self.dropped = 0
            await self.send_error(exc)
            return
        self.dropped += 1
        if self.dropped == 1:
            await self.send_error(CommandError("rate_limited", self.tr(_(
                "Too many invalid messages; further ones are ignored."))))
        elif self.dropped >= self._limit("INVALID_CLOSE_AFTER", 200):
            log.warning("closing a connection that kept sending invalid messages",
                        extra={"event": "connection_closed_abuse", "sandbox": (self.sandbox_id or "")[:8]})
            await self.close(code=CLOSE_ABUSE)

    async def send_error(self, exc: CommandError) -> None:
        await self.send_json(exc.to_message())

    # Group message ``{"type": "websocket.send", "text": "<frame JSON>"}`` (runtime.py): the
    # ASGI event itself, handed to the server as it is (no consumer code re-wraps a frame).
    websocket_send = AsyncConsumer.send


def client_address(scope: dict[str, Any]) -> str:
    """The client's address as the ASGI server saw it (behind a proxy, configure the
    server to pass the real one, e.g. daphne's ``--proxy-headers``)."""
    client = scope.get("client")
    return str(client[0]) if client else ""


def nesting_depth(text: str) -> int:
    """How deeply ``[``/``{`` nest in a JSON text (strings skipped); cheap, no recursion."""
    depth = deepest = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    return deepest


_last_traceback: dict[str, float] = {}


def log_problem(what: str, exc: BaseException, **fields: Any) -> None:
    """Log an unexpected exception: with a traceback at most once a minute per exception
    type, one line otherwise (no traceback floods from one client's bad input)."""
    key = type(exc).__name__
    now = time.monotonic()
    extra = {"event": "error", "error": key, **{k: (v or "")[:8] if isinstance(v, str) or v is None else v
                                                for k, v in fields.items()}}
    if now - _last_traceback.get(key, float("-inf")) >= 60:
        _last_traceback[key] = now
        log.error("%s: %s: %s", what, key, exc, exc_info=exc, extra=extra)
    else:
        log.error("%s: %s: %s", what, key, exc, extra=extra)
