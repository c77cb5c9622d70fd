"""Login rate limit (django-axes): wrong passwords are counted per username and per
client address, each on its own; at ``AXES_FAILURE_LIMIT`` either is locked for
``AXES_COOLOFF_TIME``, and while locked even the right password is refused with the page
below (HTTP 429). Covers every login form that goes through ``authenticate(request=...)``:
``/accounts/login/`` and ``/admin/login/``. Attempts are rows in the database, so every
server process counts the same (SQLite or PostgreSQL)."""
from __future__ import annotations

from typing import Any

from axes.backends import AxesStandaloneBackend
from axes.helpers import get_cool_off
from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import translation

from kafkaviz.lessons.content import DJANGO_LANG, LANGUAGES

__all__ = ["LoginGuardBackend", "locked_out"]


class LoginGuardBackend(AxesStandaloneBackend):
    """Axes' check, for logins that come with an HTTP request. A call without one is code
    on the server (``manage.py shell``, the test client's ``login``), not a login form: there
    is no client to count, so it is left to the next backend instead of failing as Axes does."""

    def authenticate(self, request: HttpRequest | None, username: str | None = None, password: str | None = None,
                     **kwargs: Any) -> None:
        if request is None:
            return None
        return super().authenticate(request, username, password, **kwargs)


def locked_out(request: HttpRequest, original_response: Any = None, credentials: Any = None) -> HttpResponse:
    """The lock-out page, in the page's language (``?lang=``), with how long it lasts."""
    lang = request.GET.get("lang", "en")
    lang = lang if lang in LANGUAGES else "en"
    cool_off = get_cool_off(request)
    minutes = max(1, round(cool_off.total_seconds() / 60)) if cool_off else 0
    with translation.override(DJANGO_LANG[lang]):
        return render(request, "classroom/locked_out.html",
                      {"lang": lang, "minutes": minutes, "failure_limit": settings.AXES_FAILURE_LIMIT},
                      status=settings.AXES_HTTP_RESPONSE_CODE)
