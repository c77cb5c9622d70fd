"""``python manage.py purge_shares``: delete share links older than KAFKAVIZ_SHARE_DAYS.

Opening an expired link already refuses and deletes it; this removes the ones nobody
opens again (run it daily, e.g. from cron)."""
from __future__ import annotations

from django.conf import settings
from django.core.management.base import BaseCommand

from kafkaviz.live.models import SharedRun


class Command(BaseCommand):
    help = "Delete shared runs older than KAFKAVIZ_SHARE_DAYS days."

    def handle(self, *args, **options) -> None:
        n = SharedRun.purge_expired()
        self.stdout.write(f"Deleted {n} shared run(s) older than {settings.KAFKAVIZ_SHARE_DAYS} days.")
