"""The friendly "busy" page: a lesson page that would need a new sandbox while this
process runs as many as it allows answers 503 with a page saying so (and
``Retry-After``), instead of a page whose socket would then be refused."""
from __future__ import annotations

from typing import Callable

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from kafkaviz.lessons.catalogue import get_lesson

from .runtime import get_runtime
from .sessions import sandbox_id_from_session

RETRY_AFTER_SECONDS = 60


class BusyMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        parts = request.path.strip("/").split("/")
        if request.method == "GET" and len(parts) == 2 and parts[0] == "lessons":
            lesson = get_lesson(parts[1])
            if lesson is not None and lesson.available and lesson.sandbox_kind is not None:
                runtime = get_runtime()
                sid = sandbox_id_from_session(getattr(request, "session", None), lesson.slug)
                if runtime.is_full() and (sid is None or sid not in runtime.sandboxes):
                    response = render(request, "busy.html", status=503)
                    response["Retry-After"] = str(RETRY_AFTER_SECONDS)
                    return response
        return self.get_response(request)
