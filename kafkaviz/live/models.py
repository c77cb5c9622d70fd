"""Shared runs: what a share link reproduces, stored server-side under a short id.

A run is the lesson (its content file holds the scenario: config and seed), plus the
command log of every step and the step the learner was at; replaying it on a fresh
sandbox gives exactly the state they saw (the engine is deterministic). The payload is
the same JSON an export downloads and an import uploads.
"""
from __future__ import annotations

import secrets
from datetime import timedelta

from django.conf import settings
from django.db import models
from django.utils import timezone

__all__ = ["SharedRun", "new_share_id", "SHARE_ID_RE", "MAX_RUN_BYTES", "share_cutoff"]

SHARE_ID_RE = r"[A-Za-z0-9_-]{8}"
MAX_RUN_BYTES = settings.KAFKAVIZ_RUNTIME["MAX_RUN_BYTES"]


def new_share_id() -> str:
    """48 random bits, URL-safe: short enough to read out in class, not guessable in practice."""
    return secrets.token_urlsafe(6)


def share_cutoff():
    """Runs shared before this moment have expired (settings.KAFKAVIZ_SHARE_DAYS)."""
    return timezone.now() - timedelta(days=settings.KAFKAVIZ_SHARE_DAYS)


class SharedRun(models.Model):
    """One stored run. ``digest`` (SHA-256 of the run's canonical JSON) makes identical runs
    one row: sharing the same run again returns the same link (``kafkaviz/live/shares.py``).
    ``visitor`` and ``address`` are keyed hashes (never the raw values) of who stored it,
    so shares per visitor and per address can be limited; empty for runs stored before."""
    id = models.CharField(primary_key=True, max_length=8, default=new_share_id, editable=False)
    lesson = models.CharField(max_length=64)
    payload = models.JSONField()
    created = models.DateTimeField(auto_now_add=True)
    digest = models.CharField(max_length=64, unique=True, null=True, blank=True, editable=False)
    visitor = models.CharField(max_length=16, blank=True, default="", editable=False)
    address = models.CharField(max_length=16, blank=True, default="", editable=False)

    class Meta:
        indexes = [models.Index(fields=["created"]), models.Index(fields=["visitor", "created"]),
                   models.Index(fields=["address", "created"])]

    @property
    def expired(self) -> bool:
        return self.created < share_cutoff()

    @classmethod
    def purge_expired(cls) -> int:
        """Delete every expired run; returns how many."""
        return cls.objects.filter(created__lt=share_cutoff()).delete()[0]

    def __str__(self) -> str:
        return f"{self.id} ({self.lesson})"
