"""``/ws/rooms/<code>/``: a room's socket — the lesson socket, with who-may-act decided
on the server.

The sandbox is the room's (named by the room row, never by the client). Everyone in the
room gets its frames. Commands run only for the instructor and for members the
instructor granted control to; the check reads the database at every command, so a
revoke takes effect at the next message, in whichever process the student's socket
lives. Anything else gets ``{"type": "error", "code": "forbidden"}`` and nothing runs.

Room messages (``{"type": "room.<what>"}``) never reach the runtime's command validation:

* ``room.grant`` ``{"member": id, "control": bool}`` — instructor only.
* ``room.preset`` ``{"preset": id}`` — a fault preset (``presets.py``), resolved against
  the room's state now and sent as the engine's own commands; anyone who may act.
* ``room.fork`` — anyone in the room: the room's run, stored as a share, and the URL of
  the member's own lesson sandbox opening it.

After every command that ran, the room's run is saved on the row; a room whose sandbox
was reclaimed (nobody watched for a while) replays it on the next connect.
"""
from __future__ import annotations

import json
import logging
from typing import Any

from channels.db import database_sync_to_async
from django.db.models import F
from django.utils import timezone

from kafkaviz.live.consumers import CLOSE_NO_LESSON, LessonConsumer, log_problem
from kafkaviz.live.runtime import get_runtime
from kafkaviz.live.validation import CommandError

from . import presets
from .models import Member, Room, is_instructor
from .sessions import member_id_from_session

log = logging.getLogger("kafkaviz.classroom")

CLOSE_NOT_MEMBER = 4403
READ_ONLY = frozenset({"export"})            # commands anyone in a room may send
MAX_SOCKETS_PER_MEMBER = 4
MAX_RUN_BYTES = 1_000_000                    # a room's saved run (a lesson run has at most a few hundred steps)


def room_group(code: str) -> str:
    return f"room.{code}"


class RoomConsumer(LessonConsumer):
    counts_against_address = False   # a class shares one address behind NAT; sockets are capped per member

    room: Room | None = None
    member_id: int | None = None
    instructor: bool = False
    fresh: bool = False

    # ---- who is this ------------------------------------------------------------------
    async def resolve_sandbox(self) -> tuple[str, str] | None:
        code = str(self.scope["url_route"]["kwargs"].get("code", ""))
        room = await database_sync_to_async(Room.objects.filter(code=code).select_related("instructor").first)()
        if room is None or not room.is_open:
            await self.close(code=CLOSE_NO_LESSON)
            return None
        user = self.scope.get("user")
        self.instructor = await database_sync_to_async(
            lambda: is_instructor(user) and user.pk == room.instructor_id)()
        if not self.instructor:
            self.member_id = member_id_from_session(self.scope.get("session"), code)
            if self.member_id is None or not await self._claim_socket():
                await self.close(code=CLOSE_NOT_MEMBER)
                return None
        self.room = room
        self.fresh = not get_runtime().has(room.sandbox_id)
        return room.sandbox_id, room.lesson

    @database_sync_to_async
    def _claim_socket(self) -> bool:
        claimed = Member.objects.filter(pk=self.member_id, room__code=self.scope["url_route"]["kwargs"]["code"],
                                        connections__lt=MAX_SOCKETS_PER_MEMBER).update(
            connections=F("connections") + 1, last_seen=timezone.now())
        return claimed == 1

    async def attached(self, snapshot: dict[str, Any]) -> dict[str, Any]:
        runtime = get_runtime()
        runtime.mark_room(self.room.sandbox_id, self.room.code)
        await self.channel_layer.group_add(room_group(self.room.code), self.channel_name)
        run = await database_sync_to_async(lambda: Room.objects.values_list("run", flat=True).get(pk=self.room.pk))()
        if self.fresh and run:
            # The room's sandbox was reclaimed (or never opened here): replay where the class was.
            try:
                await runtime.restore_run(self.room.sandbox_id, run)
                snapshot = await runtime.snapshot(self.room.sandbox_id)
            except CommandError as exc:
                log_problem("room restore failed", exc, sandbox=self.room.sandbox_id)
        await self._announce()
        await self.send_json(await self._room_message())
        return snapshot

    async def disconnect(self, code: int) -> None:
        await super().disconnect(code)
        if self.room is None:
            return
        await self.channel_layer.group_discard(room_group(self.room.code), self.channel_name)
        if self.member_id is not None:
            await database_sync_to_async(Member.objects.filter(pk=self.member_id, connections__gt=0).update)(
                connections=F("connections") - 1, last_seen=timezone.now())
            await self._announce()
        self.room = None

    # ---- authority ----------------------------------------------------------------------
    @database_sync_to_async
    def _may_act(self) -> bool:
        if self.instructor:
            return Room.objects.filter(pk=self.room.pk, closed__isnull=True).exists()
        return Member.objects.filter(pk=self.member_id, can_control=True, room__closed__isnull=True).exists()

    async def authorise(self, content: Any) -> CommandError | None:
        kind = content.get("type") if isinstance(content, dict) else None
        if kind in READ_ONLY or await self._may_act():
            return None
        return CommandError("forbidden", "Only the instructor, or someone they hand control to, can change "
                            "this room's cluster. You are watching.", command=str(kind)[:40] if kind else None)

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        kind = content.get("type") if isinstance(content, dict) else None
        if isinstance(kind, str) and kind.startswith("room."):
            try:
                await self._room_command(kind, content)
            except CommandError as exc:
                await self.send_error(exc)
            return
        await super().receive_json(content, **kwargs)

    async def command_done(self, content: Any, reply: dict[str, Any]) -> None:
        if isinstance(content, dict) and content.get("type") not in READ_ONLY:
            await self._save_run()

    async def _save_run(self) -> None:
        try:
            run = await get_runtime().export_run(self.room.sandbox_id)
        except CommandError:
            return
        if len(json.dumps(run)) > MAX_RUN_BYTES:
            log.warning("room run too long to save", extra={"event": "room_run_too_long", "room": self.room.code})
            return
        await database_sync_to_async(Room.objects.filter(pk=self.room.pk).update)(run=run)

    # ---- room messages ------------------------------------------------------------------
    async def _room_command(self, kind: str, content: dict[str, Any]) -> None:
        if kind == "room.grant":
            if not self.instructor:
                raise CommandError("forbidden", "Only the instructor hands out control.", command=kind)
            member, control = content.get("member"), content.get("control")
            if not isinstance(member, int) or isinstance(member, bool) or not isinstance(control, bool):
                raise CommandError("invalid", "room.grant needs \"member\" (a number) and \"control\" (true or "
                                   "false).", command=kind)
            changed = await database_sync_to_async(
                Member.objects.filter(pk=member, room_id=self.room.pk).update)(can_control=control)
            if not changed:
                raise CommandError("not_found", "No such student in this room.", command=kind)
            await self._announce()
            await self.send_json({"type": "ack", "command": kind, "text": "Control given." if control
                                  else "Control taken back."})
        elif kind == "room.preset":
            refusal = await self.authorise(content)
            if refusal is not None:
                raise refusal
            runtime = get_runtime()
            state, specs = await runtime.peek(self.room.sandbox_id)
            try:
                commands = presets.resolve(content.get("preset"), state, specs)
            except KeyError:
                raise CommandError("invalid", "There is no such preset.", command=kind) from None
            except presets.Unavailable as exc:
                raise CommandError("unavailable", str(exc), command=kind) from None
            texts = []
            for command in commands:
                reply = await runtime.command(self.room.sandbox_id, command)
                texts.append(str(reply.get("text", "")))
            await self._save_run()
            await self.send_json({"type": "ack", "command": kind, "text": " ".join(t for t in texts if t)})
        elif kind == "room.fork":
            await self._fork()
        else:
            raise CommandError("unknown_type", "Unknown room message.", command=kind[:40])

    async def _fork(self) -> None:
        from kafkaviz.live.models import MAX_RUN_BYTES as SHARE_BYTES, SharedRun

        run = await get_runtime().export_run(self.room.sandbox_id)
        if len(json.dumps(run)) > SHARE_BYTES:
            raise CommandError("quota", "The room's run is too long to copy; ask the instructor to step back.",
                               command="room.fork")
        shared = await database_sync_to_async(SharedRun.objects.create)(lesson=self.room.lesson, payload=run)
        lang = "?lang=zh&" if self.room.lang == "zh" else "?"
        await self.send_json({"type": "ack", "command": "room.fork", "text": "Your own copy is ready.",
                              "url": f"/lessons/{self.room.lesson}/{lang}run={shared.id}"})

    # ---- who is here, who may act -----------------------------------------------------
    async def _announce(self) -> None:
        await self.channel_layer.group_send(room_group(self.room.code), {"type": "room.changed"})

    async def room_changed(self, message: dict[str, Any]) -> None:
        """Group message: membership, control or the room's state changed; tell this browser
        what it is now (the database is the truth, whichever process changed it)."""
        if self.room is None:
            return
        try:
            msg = await self._room_message()
        except Room.DoesNotExist:
            msg = {"type": "room", "closed": True}
        await self.send_json(msg)
        if msg.get("closed"):
            await self.close(code=CLOSE_NO_LESSON)

    @database_sync_to_async
    def _room_message(self) -> dict[str, Any]:
        room = Room.objects.get(pk=self.room.pk)
        msg: dict[str, Any] = {"type": "room", "code": room.code, "closed": not room.is_open}
        if self.instructor:
            msg.update(role="instructor", can_control=True, roster=[
                {"id": m.id, "name": m.name, "connected": m.connections > 0, "can_control": m.can_control}
                for m in room.members.all()])
        else:
            me = Member.objects.filter(pk=self.member_id).first()
            msg.update(role="student", can_control=bool(me and me.can_control), name=me.name if me else "")
        return msg
