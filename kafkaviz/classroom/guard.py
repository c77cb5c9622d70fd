"""Join codes are short, so guessing is limited per client address: at most
``JOIN_FAILURES_PER_MINUTE`` wrong codes in the last minute, then every attempt from
that address is refused (right code or not) until the minute has passed. Failures are
rows in the database, so all server processes count together."""
from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from .models import JoinFailure

__all__ = ["guessing_blocked", "record_failure", "JOIN_WINDOW"]

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
