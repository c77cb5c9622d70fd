"""Rooms: one live sandbox an instructor drives and a class watches.

A room names a runtime sandbox (``sandbox_id``, issued by the server like every other
sandbox id) of one lesson. Everything a process needs to serve the room lives here, in
the database, not in a process's memory: who may act (the instructor, and the members
granted control), who is connected, and the room's run — the same JSON a learner's
export gives — saved after every command, so a sandbox reclaimed while nobody watched
(or lost with its process) is replayed to the same step on the next connect.
"""
from __future__ import annotations

import secrets

from django.conf import settings
from django.db import models

__all__ = ["Room", "Member", "new_join_code", "JOIN_CODE_ALPHABET", "JOIN_CODE_LENGTH", "is_instructor",
           "INSTRUCTORS_GROUP", "MAX_DISPLAY_NAME", "normalise_code"]

# No 0/O, 1/I/L, 5/S, 2/Z: a code read off a projector is typed right. 26 symbols ** 8 ≈ 2**37.6:
# with guesses rate-limited per address (views.JOIN_GUESSES_PER_MINUTE) nobody walks that space.
JOIN_CODE_ALPHABET = "346789ABCDEFGHJKMNPQRTUVWXY"
JOIN_CODE_LENGTH = 8
MAX_DISPLAY_NAME = 40
INSTRUCTORS_GROUP = "instructors"


def new_join_code() -> str:
    return "".join(secrets.choice(JOIN_CODE_ALPHABET) for _ in range(JOIN_CODE_LENGTH))


def normalise_code(text: str) -> str:
    """What a student typed → a code: upper case, spaces and dashes dropped."""
    return "".join(ch for ch in str(text).upper() if ch not in " -\t")[:32]


def is_instructor(user) -> bool:
    return bool(user is not None and user.is_authenticated and user.is_active
                and (user.is_superuser or user.groups.filter(name=INSTRUCTORS_GROUP).exists()))


class Room(models.Model):
    code = models.CharField(max_length=JOIN_CODE_LENGTH, unique=True, default=new_join_code, editable=False)
    lesson = models.CharField(max_length=64)
    lang = models.CharField(max_length=8, default="en")
    sandbox_id = models.CharField(max_length=32, unique=True)
    instructor = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="rooms")
    run = models.JSONField(null=True, blank=True)        # the room's run (export format), after each command
    created = models.DateTimeField(auto_now_add=True)
    closed = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.code} ({self.lesson})"

    @property
    def is_open(self) -> bool:
        return self.closed is None

    @property
    def shown_code(self) -> str:
        """The code as shown and read aloud: two groups of four."""
        return f"{self.code[:4]}-{self.code[4:]}"


class Member(models.Model):
    """A student in a room, known by a display name; no account."""

    room = models.ForeignKey(Room, on_delete=models.CASCADE, related_name="members")
    name = models.CharField(max_length=MAX_DISPLAY_NAME)
    can_control = models.BooleanField(default=False)
    connections = models.IntegerField(default=0)          # open sockets, in any process
    joined = models.DateTimeField(auto_now_add=True)
    last_seen = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["joined", "id"]

    def __str__(self) -> str:
        return f"{self.name} in {self.room.code}"
