"""``/ws/rooms/<code>/``: a room's socket. The same consumer as a learner's lesson
(limits, hostile input, frames), watching the room's sandbox instead of the session's,
with two differences: who may run commands is decided here, on the server, for every
command (the instructor, or a student the instructor granted control to and has not
revoked: read from the database each time, so a revoke counts at once in every
process), and room messages ride groups of their own: ``room.<code>`` (every watcher:
the room closing), ``room.<code>.staff`` (the instructor's sockets: the roster when
somebody joins, leaves or is granted control) and ``room.<code>.member.<id>`` (one
student's sockets: control given or taken back). Students never get the whole roster,
so a class of n joining costs n roster messages, not n².

Everybody may ``sync``, ``export`` the room's run and ``share`` it (how a student forks
the room into a private sandbox: the share id opens in their own lesson sandbox). A
student's requests spend a budget of their own (``Runtime.command(..., budget=)``), never the
room sandbox's, which stays the instructor's: a watcher's flood cannot refuse the
instructor's commands.

**Removing a member.** The instructor sends ``{"type": "remove", "member": <id>}``: the
member leaves the roster, its answers are dropped (every watcher gets the new ``spread``
of each question it had answered), its sockets get ``removed`` and are
closed, and its session cannot join the room again (its row stays, marked removed, so
its address's joins still count it). A browser with a fresh session can join again under
a new name, in plain sight on the roster.

**Predict, then watch.** A student answers the lesson's "what will happen?" with
``{"type": "predict", "question": <prediction.upcoming.id>, "choice": <index>}``; the
answer is kept in the database (one per student and question) and every watcher gets the
class's spread, ``{"type": "spread", "question", "counts": [students per choice]}`` --
also on connecting, for every question the room has answers to. Which choice happened
is the engine's, in the frames; nothing here decides it.
"""
from __future__ import annotations

import asyncio
import logging
from typing import Any

from channels.auth import get_user
from channels.db import database_sync_to_async
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from kafkaviz.live.consumers import ANSWERED, CLOSE_NO_SANDBOX, LessonConsumer, client_address, log_problem
from kafkaviz.live.leases import lease_seconds
from kafkaviz.live.router import get_router
from kafkaviz.live.validation import CommandError, command_name

from kafkaviz.lessons.content import load_content

from .auth import is_instructor
from .guard import guessing_blocked, record_failure
from .models import Answer, Member, Room, normalise_code
from .rooms import MEMBERS_SESSION_KEY, roster

log = logging.getLogger("kafkaviz.classroom")

CLOSE_ROOM_CLOSED = 4410

# What any watcher of a room may send: nothing here changes the room's sandbox.
READ_ONLY = frozenset({"export", "share"})
ROOM_MESSAGES = frozenset({"grant", "revoke", "remove", "predict"})


def _room_message(content: Any) -> str | None:
    """A room's own socket message (``{"type": "predict" | "grant" | "revoke" | "remove"}``),
    else None: anything else is a command (``cmd``), the runtime's to run or refuse."""
    kind = content.get("type") if isinstance(content, dict) else None
    return kind if isinstance(kind, str) and kind in ROOM_MESSAGES else None


MAX_SOCKETS_PER_MEMBER = 4


def member_place(member_id: int) -> str:
    """The key of a member's sockets among the router's places: leases, in any process,
    renewed while each socket lives (kafkaviz/live/leases.py), never a counter that a
    skipped disconnect would leave high."""
    return f"member:{member_id}"


class RoomConsumer(LessonConsumer):
    # A class shares one address behind its school's NAT: room sockets are capped per member
    # (MAX_SOCKETS_PER_MEMBER) instead of per address; members come only through the join form.
    counts_against_address = False
    room_id: int | None = None
    room_code: str | None = None
    room_group: str | None = None
    member_id: int | None = None
    instructor: bool = False
    first_seq: int | None = None
    room_closed_seen: bool = False
    lesson_slug: str = ""
    member_key: str | None = None      # this socket's place among its member's sockets
    room_released: bool = False
    roster_shown: list[dict[str, Any]] | None = None     # the last roster this (instructor's) socket sent
    roster_refresh: asyncio.Task | None = None

    # ---- hooks of LessonConsumer -----------------------------------------------------
    async def resolve_sandbox(self) -> tuple[str, str] | None:
        code = normalise_code(self.scope["url_route"]["kwargs"].get("code", ""))
        user = await get_user(self.scope) if code and self.scope.get("session") is not None else None
        found = await database_sync_to_async(self._identify)(code, user) if code else None
        if found is None or (found[1] is None and not found[2]):
            # No such room, or neither its instructor nor a student who joined it from this
            # browser: the same close either way, open or closed, so a socket is no way to
            # learn which codes exist; and a well-formed code counts against the address's
            # guessing limit, as a wrong code on the join form does (kafkaviz/classroom/guard.py).
            if code:
                await database_sync_to_async(self._guessed)()
            await self.close(code=CLOSE_NO_SANDBOX)
            return None
        room, member_id, instructor = found
        self.lesson_slug = room.lesson
        if not room.is_open:
            # Only its own instructor and students hear that it closed.
            await self.accept()
            await self.send_json(CommandError("closed", self.tr(_("This room has been closed by its instructor.")))
                                 .to_message())
            await self.close(code=CLOSE_ROOM_CLOSED)
            return None
        if member_id is not None:
            if not await get_router().take_place(member_place(member_id), self.holder, MAX_SOCKETS_PER_MEMBER):
                await self._refuse(CommandError("quota", self.tr(_(
                    "You have this room open %(count)d times already; close another tab."),
                    count=MAX_SOCKETS_PER_MEMBER)))
                return None
            self.member_key = member_place(member_id)
        self.room_id, self.room_code, self.room_group = room.pk, room.code, room.group()
        self.member_id, self.instructor = member_id, instructor
        return room.sandbox_id, room.lesson

    def budget(self) -> str:
        return "" if self.instructor else f"member:{self.member_id}"

    def visitor(self) -> str:
        return f"room-member:{self.member_id}" if self.member_id is not None else super().visitor()

    async def authorise(self, content: Any) -> Any:
        # A room's own messages first (answered here), then who may run a command.
        name = _room_message(content)
        if name is not None:
            await (self._predict(content) if name == "predict" else
                   self._remove(content) if name == "remove" else self._grant(content))
            return ANSWERED
        ctype = command_name(content)
        if ctype in READ_ONLY or self.instructor:
            return None
        if self.member_id is not None and await database_sync_to_async(self._granted)():
            return None
        return CommandError("forbidden", self.tr(_(
            "Only the instructor, or a student the instructor has given control to, can change the room's cluster. "
            "You are watching.")), command=ctype)

    # ---- the connection --------------------------------------------------------------
    def _groups(self) -> list[str]:
        own = f"{self.room_group}.staff" if self.instructor else f"{self.room_group}.member.{self.member_id}"
        return [self.room_group, own]

    async def connect(self) -> None:
        await super().connect()
        if self.sandbox_id is None:
            return
        for group in self._groups():
            await self.channel_layer.group_add(group, self.channel_name)
        await database_sync_to_async(self._seen)()
        await self._seed()
        if self.instructor:
            await self.send_json({"type": "roster", "members": await self._roster()})
            self.roster_refresh = asyncio.ensure_future(self._refresh_roster_forever())
        else:
            await self.send_json({"type": "control", "granted": await database_sync_to_async(self._granted)()})
        for question, counts in (await database_sync_to_async(self._spreads)()).items():
            await self.send_json({"type": "spread", "question": question, "counts": counts})
        await self.broadcast_roster()

    def place_keys(self) -> list[str]:
        return [self.member_key] if self.member_key else []

    async def release(self) -> None:
        """Leave the room (from ``disconnect``, or from the heartbeat when the socket died
        without one: kafkaviz/live/leases.py). Runs once."""
        if self.room_released or self.released:
            return
        self.room_released = True
        if self.roster_refresh is not None and self.roster_refresh is not asyncio.current_task():
            self.roster_refresh.cancel()
        try:
            if self.member_key is not None:
                key, self.member_key = self.member_key, None
                await get_router().drop_place(key, self.holder)
            if self.room_group is not None and self.sandbox_id is not None:
                for group in self._groups():
                    await self.channel_layer.group_discard(group, self.channel_name)
                await self._save()
                await database_sync_to_async(self._seen)()
                await self.broadcast_roster()
        except Exception as exc:  # noqa: BLE001 - leaving must never fail the disconnect
            log_problem("room presence failed", exc, sandbox=self.sandbox_id)
        finally:
            self.room_group = None
            await super().release()

    async def _predict(self, content: dict[str, Any]) -> None:
        if self.member_id is None:
            await self.send_error(CommandError("forbidden", "The class predicts; the instructor sees the spread of "
                                               "their answers.", command="predict"))
            return
        question, choice = content.get("question"), content.get("choice")
        lesson = load_content(self.lesson_slug)
        prediction = lesson.prediction_for(question) if lesson is not None else None
        if prediction is None or len(content) != 3 or isinstance(choice, bool) or not isinstance(choice, int) \
                or not 0 <= choice < len(prediction.choices):
            await self.refuse(CommandError("invalid", '"predict" takes a question of this lesson and the index of '
                                           'one of its choices: {"type": "predict", "question": "<id>", '
                                           '"choice": 0}.', "choice", "predict"))
            return
        counts = await database_sync_to_async(self._answer)(question, choice, len(prediction.choices))
        if counts is None:
            await self.send_error(CommandError("closed", "This room has been closed by its instructor.",
                                               command="predict"))
            return
        await self.channel_layer.group_send(self.room_group, {"type": "room.spread", "question": question,
                                                              "counts": counts})
        await self.send_json({"type": "ack", "command": "predict", "text": "Your prediction is in."})

    async def _grant(self, content: dict[str, Any]) -> None:
        ctype = content["type"]
        if not self.instructor:
            await self.send_error(CommandError("forbidden", self.tr(_("Only the instructor can give or take control.")),
                                               command=ctype))
            return
        member = content.get("member")
        if isinstance(member, bool) or not isinstance(member, int) or len(content) != 2:
            await self.refuse(CommandError("invalid", self.tr(_(
                '"%(type)s" takes the member\'s id: {"type": "%(type)s", "member": 12}.'), type=ctype),
                "member", ctype))
            return
        name = await database_sync_to_async(self._set_granted)(member, ctype == "grant")
        if name is None:
            await self.send_error(CommandError("not_found", self.tr(_("No such student in this room.")), "member",
                                               ctype))
            return
        await self.channel_layer.group_send(f"{self.room_group}.member.{member}",
                                            {"type": "room.control", "granted": ctype == "grant"})
        await self.broadcast_roster()
        text = self.tr(_("%(name)s may now run commands.") if ctype == "grant" else _("%(name)s is watching again."),
                       name=name)
        await self.send_json({"type": "ack", "command": ctype, "text": text})

    async def _remove(self, content: dict[str, Any]) -> None:
        if not self.instructor:
            await self.send_error(CommandError("forbidden", self.tr(_("Only the instructor can remove a student.")),
                                               command="remove"))
            return
        member = content.get("member")
        if isinstance(member, bool) or not isinstance(member, int) or len(content) != 2:
            await self.refuse(CommandError("invalid", self.tr(_(
                '"%(type)s" takes the member\'s id: {"type": "%(type)s", "member": 12}.'), type="remove"),
                "member", "remove"))
            return
        removed = await database_sync_to_async(self._set_removed)(member)
        if removed is None:
            await self.send_error(CommandError("not_found", self.tr(_("No such student in this room.")), "member",
                                               "remove"))
            return
        name, spreads = removed
        await self.channel_layer.group_send(f"{self.room_group}.member.{member}", {"type": "room.removed"})
        # Their answers are gone: the class's spread no longer counts them.
        for question, counts in spreads.items():
            await self.channel_layer.group_send(self.room_group, {"type": "room.spread", "question": question,
                                                                  "counts": counts})
        await self.broadcast_roster()
        await self.send_json({"type": "ack", "command": "remove",
                              "text": self.tr(_("%(name)s was removed from the room."), name=name)})

    async def send_json(self, content: Any, close: bool = False) -> None:
        if self.first_seq is None and isinstance(content, dict) and content.get("snapshot"):
            self.first_seq = content.get("frame_seq")      # 0: nothing has happened in this sandbox yet
        if isinstance(content, dict) and content.get("type") == "roster":
            self.roster_shown = content["members"]
        await super().send_json(content, close)

    async def _seed(self) -> None:
        """A room sandbox nothing has happened in yet (the first watcher, or the room was
        reclaimed while nobody watched) starts from the room's saved run. Two watchers
        arriving at once both import the same run: the same state either way."""
        if self.first_seq != 0:
            return
        run = await database_sync_to_async(self._saved_run)()
        if not run:
            return
        try:
            await get_router().command(self.sandbox_id, {"cmd": "import", "run": run})
        except Exception as exc:  # noqa: BLE001 - the room still opens, at the lesson's start
            log_problem("room start run failed", exc, sandbox=self.sandbox_id)
            if isinstance(exc, CommandError):
                await self.send_error(CommandError(exc.code, self.tr(_(
                    "The room started from the lesson's beginning: its saved run could not be replayed "
                    "(%(why)s)."), why=str(exc))))

    async def _save(self) -> None:
        """Someone with control leaves: keep the room's run, so a reclaimed room sandbox
        comes back where the class left it."""
        if self.room_closed_seen or not (
                self.instructor or (self.member_id is not None and await database_sync_to_async(self._granted)())):
            return
        try:
            # The server's own keeping, not the member's request: never refused for a spent budget.
            reply = await get_router().command(self.sandbox_id, {"cmd": "export"})
        except CommandError as exc:
            if exc.code == "not_found":     # already reclaimed (the room was closed): nothing to keep
                return
            raise
        await database_sync_to_async(Room.objects.filter(pk=self.room_id, closed__isnull=True).update)(
            run=reply["file"])

    async def _roster(self) -> list[dict[str, Any]]:
        """The roster, with who is connected from the members' live socket leases."""
        members = await database_sync_to_async(roster)(self.room_id)
        counts = await get_router().count_places([member_place(m["id"]) for m in members])
        for member, count in zip(members, counts):
            member["connected"] = count > 0
        return members

    async def _refresh_roster_forever(self) -> None:
        """A member whose sockets died with their process (``kill -9``) leaves no
        ``disconnect()`` and so no roster broadcast: its leases just lapse. So an
        instructor's socket looks again every ``LEASE_SECONDS / 4`` and sends the roster
        when it changed: "connected" is right within the lease time, with nothing to send
        while nothing changes."""
        while True:
            await asyncio.sleep(max(0.05, lease_seconds() / 4))
            try:
                members = await self._roster()
                if members != self.roster_shown:
                    await self.send_json({"type": "roster", "members": members})
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - the next look tries again; the socket may be gone
                log_problem("roster refresh failed", exc, sandbox=self.sandbox_id)

    async def broadcast_roster(self) -> None:
        members = await self._roster()
        await self.channel_layer.group_send(f"{self.room_group}.staff", {"type": "room.roster", "members": members})

    # ---- group messages --------------------------------------------------------------
    async def room_roster(self, message: dict[str, Any]) -> None:
        await self.send_json({"type": "roster", "members": message["members"]})

    async def room_spread(self, message: dict[str, Any]) -> None:
        await self.send_json({"type": "spread", "question": message["question"], "counts": message["counts"]})

    async def room_control(self, message: dict[str, Any]) -> None:
        await self.send_json({"type": "control", "granted": bool(message["granted"])})

    async def room_removed(self, message: dict[str, Any]) -> None:
        self.room_closed_seen = True          # nothing of this socket's to keep
        await self.send_json(CommandError("removed", self.tr(_("The instructor removed you from this room.")))
                             .to_message())
        await self.close(code=CLOSE_NO_SANDBOX)

    async def room_closed(self, message: dict[str, Any]) -> None:
        self.room_closed_seen = True
        await self.send_json(CommandError("closed", self.tr(_("The instructor closed this room. Thank you for "
                                                              "watching!"))).to_message())
        await self.close(code=CLOSE_ROOM_CLOSED)

    # ---- database (worker threads) ---------------------------------------------------
    def _identify(self, code: str, user: Any) -> tuple[Room, int | None, bool] | None:
        room = Room.objects.filter(code=code).first()
        if room is None:
            return None
        instructor = bool(user is not None and getattr(user, "pk", None) == room.instructor_id
                          and is_instructor(user))
        token = ((self.scope.get("session") or {}).get(MEMBERS_SESSION_KEY) or {}).get(room.code)
        member_id = None
        if isinstance(token, str):
            member_id = Member.objects.filter(room=room, token=token, removed=False).values_list("pk",
                                                                                                 flat=True).first()
        return room, member_id, instructor

    def _guessed(self) -> None:
        address = client_address(self.scope)
        if not guessing_blocked(address):       # a blocked address's tries are not stored (bounded rows)
            record_failure(address)

    def _granted(self) -> bool:
        return Member.objects.filter(pk=self.member_id, room_id=self.room_id, granted=True, removed=False,
                                     room__closed__isnull=True).exists()

    def _set_granted(self, member: int, granted: bool) -> str | None:
        row = Member.objects.filter(pk=member, room_id=self.room_id, removed=False).first()
        if row is None:
            return None
        Member.objects.filter(pk=row.pk).update(granted=granted)
        return row.name

    def _set_removed(self, member: int) -> tuple[str, dict[str, list[int]]] | None:
        """Mark the member removed and drop its answers: its name, and the new spread of
        every question it had answered (all zeros when it was the only one)."""
        row = Member.objects.filter(pk=member, room_id=self.room_id, removed=False).first()
        if row is None:
            return None
        Member.objects.filter(pk=row.pk).update(removed=True, granted=False)
        answered = set(Answer.objects.filter(member_id=row.pk).values_list("question", flat=True))
        Answer.objects.filter(member_id=row.pk).delete()
        lesson = load_content(self.lesson_slug)
        spreads: dict[str, list[int]] = {}
        for question in sorted(answered):
            prediction = lesson.prediction_for(question) if lesson is not None else None
            if prediction is not None:
                spreads[question] = self._counts(question, len(prediction.choices))
        return row.name, spreads

    def _seen(self) -> None:
        """When the member was last seen. Who is connected is not kept in the database: it
        is the member's live socket leases (``member_place``), which no skipped disconnect
        leaves behind."""
        if self.member_id is not None:
            Member.objects.filter(pk=self.member_id).update(last_seen=timezone.now())

    def _answer(self, question: str, choice: int, n_choices: int) -> list[int] | None:
        """Keep a student's pick (replacing an earlier one) and return the class's counts."""
        if not Room.objects.filter(pk=self.room_id, closed__isnull=True).exists():
            return None
        Answer.objects.update_or_create(member_id=self.member_id, question=question,
                                        defaults={"room_id": self.room_id, "choice": choice})
        return self._counts(question, n_choices)

    def _counts(self, question: str, n_choices: int) -> list[int]:
        """The class's answers to one question: students per choice."""
        counts = [0] * n_choices
        for picked in Answer.objects.filter(room_id=self.room_id, question=question).values_list("choice", flat=True):
            if picked < n_choices:
                counts[picked] += 1
        return counts

    def _spreads(self) -> dict[str, list[int]]:
        """Every question this room has answers to, with its counts (for a newcomer's page)."""
        lesson = load_content(self.lesson_slug)
        out: dict[str, list[int]] = {}
        for question, picked in Answer.objects.filter(room_id=self.room_id).values_list("question", "choice"):
            prediction = lesson.prediction_for(question) if lesson is not None else None
            if prediction is not None and picked < len(prediction.choices):
                out.setdefault(question, [0] * len(prediction.choices))[picked] += 1
        return out

    def _saved_run(self) -> str:
        return Room.objects.filter(pk=self.room_id).values_list("run", flat=True).first() or ""
