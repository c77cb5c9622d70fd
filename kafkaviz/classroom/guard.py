"""Join codes are short, so guessing is limited per client address: at most
``JOIN_FAILURES_PER_MINUTE`` wrong codes in the last minute, then every attempt from
that address is refused (right code or not) until the minute has passed. Failures are
rows in the database, so all server processes count together.

One address cannot fill a room either: at most ``JOINS_PER_ADDRESS`` members of a room
joined from one address (counted on the members' rows, removed ones included, so removing
a flood does not hand its places back to it)."""
from __future__ import annotations

import hashlib
import hmac
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from .models import JoinFailure

__all__ = ["guessing_blocked", "record_failure", "JOIN_WINDOW", "address_tag", "joins_from"]

JOIN_WINDOW = timedelta(minutes=1)


def _limit() -> int:
    return int(settings.KAFKAVIZ_ROOMS["JOIN_FAILURES_PER_MINUTE"])


def guessing_blocked(address: str) -> bool:
    since = timezone.now() - JOIN_WINDOW
    return JoinFailure.objects.filter(address=address, at__gte=since).count() >= _limit()


def record_failure(address: str) -> None:
    now = timezone.now()
    JoinFailure.objects.create(address=address)
    # Old rows are only history; keep the table small.
    JoinFailure.objects.filter(at__lt=now - 60 * JOIN_WINDOW).delete()


def address_tag(address: str) -> str:
    """A client address as kept on a member's row: a keyed hash, not the address itself."""
    if not address:
        return ""
    return hmac.new(settings.SECRET_KEY.encode(), f"room-address:{address}".encode(), hashlib.sha256).hexdigest()[:16]


def joins_from(room_id: int, address: str) -> int:
    """How many members of the room joined from this address (removed ones too)."""
    from .models import Member

    return Member.objects.filter(room_id=room_id, address=address_tag(address)).count()
