"""Rooms: one instructor drives one sandbox that a class watches.

A :class:`Room` has a short join code (read out in class, typed on a phone), the
lesson whose sandbox it runs, and the sandbox id (server-generated, like a learner's).
A :class:`Member` is a student who joined under a display name; the browser holds a
random token for it in its signed session (no account). Whether a member may run
commands (``granted``) and when it was last seen (``last_seen``) live in the database
(who is connected is not: it is a lease per socket, kafkaviz/live/leases.py), so every
server process sees the same answer: a revoke is seen by the next command whichever
process the student's socket is in.
"""
from __future__ import annotations

import re
import secrets

from django.conf import settings
from django.db import models

from kafkaviz.live.runtime import new_sandbox_id

__all__ = ["Room", "Member", "Answer", "JoinFailure", "CODE_ALPHABET", "CODE_LENGTH", "normalise_code",
           "new_join_code", "new_member_token", "INSTRUCTORS_GROUP"]

# No 0/O, 1/I/L: a code read off a projector is typed right the first time.
CODE_ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"
CODE_LENGTH = 8            # 31**8 ≈ 8.5e11 codes; with 10 wrong tries a minute per address, unguessable
CODE_RE = re.compile(rf"^[{CODE_ALPHABET}]{{{CODE_LENGTH}}}$")
INSTRUCTORS_GROUP = "instructors"


def new_join_code() -> str:
    return "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))


def new_member_token() -> str:
    return secrets.token_hex(16)


def normalise_code(text: str) -> str | None:
    """What a person typed → a code, or None. Case, spaces and dashes are forgiven."""
    code = re.sub(r"[\s-]", "", str(text or "")).upper()
    return code if CODE_RE.match(code) else None


class Room(models.Model):
    code = models.CharField(max_length=CODE_LENGTH, unique=True, default=new_join_code, editable=False)
    lesson = models.CharField(max_length=64)
    sandbox_id = models.CharField(max_length=32, unique=True, default=new_sandbox_id, editable=False)
    instructor = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="rooms")
    # The room's run in the export format (docs/web.md "Runs"): the instructor's sandbox
    # when they opened the room, then saved again whenever someone with control leaves.
    # A fresh room sandbox (first watcher, or after being reclaimed while nobody watched)
    # starts from it, so the class never loses more than what happened since.
    run = models.TextField(blank=True, default="")
    created = models.DateTimeField(auto_now_add=True)
    closed = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["created"])]

    def __str__(self) -> str:
        return f"{self.code} ({self.lesson})"

    @property
    def is_open(self) -> bool:
        return self.closed is None

    def group(self) -> str:
        """The channel-layer group of the room's own messages (roster, closed)."""
        return f"room.{self.code}"


class Member(models.Model):
    room = models.ForeignKey(Room, on_delete=models.CASCADE, related_name="members")
    name = models.CharField(max_length=40)
    token = models.CharField(max_length=32, unique=True, default=new_member_token, editable=False)
    granted = models.BooleanField(default=False)
    # A keyed hash of the client address it joined from (never the address itself): joins
    # per address and room are limited (``KAFKAVIZ_ROOM_JOINS_PER_ADDRESS``).
    address = models.CharField(max_length=16, blank=True, default="", editable=False)
    # Removed by the instructor: out of the roster, sockets closed, its session cannot join
    # this room again; still counted in its address's joins.
    removed = models.BooleanField(default=False)
    joined = models.DateTimeField(auto_now_add=True)
    last_seen = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["joined", "id"]

    def __str__(self) -> str:
        return f"{self.name} in {self.room_id}"


class Answer(models.Model):
    """A student's pick for one of the lesson's "what will happen?" questions, so the room
    can show the class's spread (in the database: every process counts the same). One row
    per member and question: picking again replaces it. ``question`` is the id the frame
    state gives (``prediction.upcoming.id``)."""
    room = models.ForeignKey(Room, on_delete=models.CASCADE, related_name="answers")
    member = models.ForeignKey(Member, on_delete=models.CASCADE, related_name="answers")
    question = models.CharField(max_length=120)
    choice = models.PositiveSmallIntegerField()
    at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["member", "question"], name="one_answer_per_question")]
        indexes = [models.Index(fields=["room", "question"])]


class JoinFailure(models.Model):
    """One wrong join code from an address: the guessing limit counts these (in the
    database, so every process counts the same)."""
    address = models.CharField(max_length=64, db_index=True)
    at = models.DateTimeField(auto_now_add=True, db_index=True)
