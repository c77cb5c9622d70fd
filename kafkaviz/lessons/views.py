"""Lesson pages. Function-based views; a page template with named partials, and the
partial alone when htmx asks for it (``HX-Request`` header)."""
from __future__ import annotations

import dataclasses

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from engine.config import LogConfig

from .catalogue import LESSONS, Lesson, get_lesson

LANGUAGES = {"en": "English", "zh": "简体中文"}


def is_htmx(request: HttpRequest) -> bool:
    return request.headers.get("HX-Request") == "true"


@require_GET
def home(request: HttpRequest) -> HttpResponse:
    return render(request, "lessons/home.html", {"lessons": LESSONS})


def _config_rows(lesson_config: dict[str, int]) -> list[dict[str, object]]:
    """(Kafka name, lesson value, Kafka default) for the config panel."""
    defaults = LogConfig()
    by_kafka = {f.metadata.get("kafka"): f.name for f in dataclasses.fields(LogConfig)}
    return [{"name": name, "value": value, "default": getattr(defaults, by_kafka[name])}
            for name, value in lesson_config.items()]


def _segments_context(request: HttpRequest) -> dict[str, object]:
    from kafkaviz.live.segments import LESSON_CONFIG, MS_PER_MESSAGE, PARTITIONS, TOPIC

    return {"config_rows": _config_rows(LESSON_CONFIG), "topic": TOPIC,
            "partitions": list(range(PARTITIONS)), "ms_per_message": MS_PER_MESSAGE,
            "segment_bytes": LESSON_CONFIG["segment.bytes"], "index_bytes": LESSON_CONFIG["segment.index.bytes"]}


# Extra context per lesson slug (the page template decides what to show).
LESSON_CONTEXT = {"segments": _segments_context}


@require_GET
def lesson(request: HttpRequest, slug: str) -> HttpResponse:
    found: Lesson | None = get_lesson(slug)
    if found is None:
        raise Http404(f"no lesson {slug!r}")
    if not found.available:
        return render(request, "lessons/not_yet.html", {"lesson": found}, status=404)
    lang = request.GET.get("lang", "en")
    if lang not in LANGUAGES:
        lang = "en"
    context: dict[str, object] = {"lesson": found, "lang": lang, "languages": LANGUAGES}
    if is_htmx(request) and request.headers.get("HX-Target") == "explanation":
        return render(request, f"{found.template}#explanation", context)
    if found.sandbox_kind is not None:
        from kafkaviz.live.sessions import ensure_sandbox_id

        ensure_sandbox_id(request.session, slug)
        context["ws_path"] = f"/ws/lessons/{slug}/"
    context.update(LESSON_CONTEXT.get(slug, lambda r: {})(request))
    return render(request, found.template, context)
