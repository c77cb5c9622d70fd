"""Storing a shared run, bounded.

* **Identical runs are stored once.** A run's digest is the SHA-256 of its canonical JSON
  (sorted keys, no spaces); sharing a run whose digest is stored returns that row's link.
  A link still lasts ``KAFKAVIZ_SHARE_DAYS`` from its first share: sharing the same run
  after that stores it again under a new link.
* **Shares per visitor and per address are limited.** A new row counts against the visitor
  (a session's own id, or a room member) and the client address that stored it:
  ``KAFKAVIZ_SHARES_PER_VISITOR`` and ``KAFKAVIZ_SHARES_PER_ADDRESS`` new runs in the last
  ``SHARE_WINDOW`` (a day). Sharing a run already stored costs nothing. Both are kept as
  keyed hashes (HMAC with the secret key), never as the raw session or address.

Rows are in the database, so every server process counts the same.
"""
from __future__ import annotations

import hashlib
import hmac
import json
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from .models import MAX_RUN_BYTES, SharedRun
from .validation import CommandError

__all__ = ["run_digest", "store_run", "share_run", "ShareLimitReached", "SHARE_WINDOW", "share_limits"]

SHARE_WINDOW = timedelta(days=1)


class ShareLimitReached(Exception):
    """This visitor or address has stored as many new runs as the window allows."""

    def __init__(self, scope: str, limit: int) -> None:
        super().__init__(f"{limit} new shared runs per day from this {scope}")
        self.scope, self.limit = scope, limit


def run_digest(data: Any) -> str:
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def _tag(kind: str, value: str) -> str:
    if not value:
        return ""
    mac = hmac.new(settings.SECRET_KEY.encode(), f"share-{kind}:{value}".encode(), hashlib.sha256)
    return mac.hexdigest()[:16]


def share_limits() -> tuple[int, int]:
    """(new runs per visitor, per address) in ``SHARE_WINDOW``; 0 turns one off."""
    return int(settings.KAFKAVIZ_SHARES_PER_VISITOR), int(settings.KAFKAVIZ_SHARES_PER_ADDRESS)


def _check_limits(visitor: str, address: str) -> None:
    since = timezone.now() - SHARE_WINDOW
    per_visitor, per_address = share_limits()
    recent = SharedRun.objects.filter(created__gte=since)
    if visitor and per_visitor and recent.filter(visitor=visitor).count() >= per_visitor:
        raise ShareLimitReached("visitor", per_visitor)
    if address and per_address and recent.filter(address=address).count() >= per_address:
        raise ShareLimitReached("address", per_address)


def store_run(lesson: str, data: Any, visitor: str = "", address: str = "") -> SharedRun:
    """The stored row for this run: the existing one if the same run is stored and not
    expired, else a new one (limits checked only then). Raises :class:`ShareLimitReached`."""
    digest = run_digest(data)
    existing = SharedRun.objects.filter(digest=digest).first()
    if existing is not None:
        if not existing.expired:
            return existing
        existing.delete()
    visitor, address = _tag("visitor", visitor), _tag("address", address)
    _check_limits(visitor, address)
    try:
        with transaction.atomic():
            return SharedRun.objects.create(lesson=lesson, payload=data, digest=digest, visitor=visitor,
                                            address=address)
    except IntegrityError:
        # The same run, stored at this moment by another request: one row, one link.
        return SharedRun.objects.get(digest=digest)


def share_run(data: dict[str, Any], visitor: str = "", address: str = "") -> SharedRun:
    """``{"cmd": "share"}``: store an exported run (``data``, the export format) for its
    lesson, or refuse with a :class:`CommandError` the sender reads: too long, or the
    visitor's or address's limit reached (links made before still work)."""
    if len(json.dumps(data)) > MAX_RUN_BYTES:
        raise CommandError("quota", _("This run is too long to share; step back or reset first."), command="share")
    try:
        return store_run(str(data.get("lesson", "")), data, visitor, address)
    except ShareLimitReached as exc:
        raise CommandError("quota", _("You have shared %(limit)d new runs today, the most one visitor or network "
                                      "may; links you made still work. Export the run as a file instead.")
                           % {"limit": exc.limit}, command="share") from None
