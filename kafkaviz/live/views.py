"""HTTP views of the live side: the one lesson page (its sandbox's forms carry the kind's
command specs), and ``/healthz`` for load balancers and operators. The lessons app knows
nothing of sandboxes: this app imports it, never the other way round."""
from __future__ import annotations

import dataclasses
import re

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.utils import translation
from django.utils.translation import gettext as _
from django.views.decorators.http import require_safe

from engine.cluster.commands import faults, node_fields

from kafkaviz.lessons.catalogue import Lesson, get_lesson
from kafkaviz.lessons.content import DJANGO_LANG, LANGUAGES, LessonContent, load_content
from kafkaviz.lessons.diagrams import diagram_assets
from kafkaviz.lessons.ui import ui_strings
from kafkaviz.lessons.views import _lang, clock_jumps, config_rows, is_htmx, stage_diagrams

from .kinds import get_kind
from .leases import live_sockets
from .models import SHARE_ID_RE
from .runtime import get_runtime
from .sessions import ensure_sandbox_id


@require_safe
def healthz(request: HttpRequest) -> JsonResponse:
    """This process: live sandboxes (and the most allowed), watchers, open sockets
    (``connections``; ``members``: those of room members), rooms, and bytes on disk under the data directory. ``status`` is "busy"
    when no new sandbox can be opened here (still HTTP 200: the process is healthy)."""
    runtime = get_runtime()
    # Sockets are counted from the live ones (kafkaviz/live/leases.py): a socket whose close
    # never ran is not counted, whichever router took its places.
    return JsonResponse({"status": "busy" if runtime.is_full() else "ok", **runtime.health(),
                         **live_sockets().counts()})


def _commands(content: LessonContent) -> dict[str, dict[str, object]]:
    """The kind's command specs by type and field, so forms carry the limits the server
    enforces (one home: the spec)."""
    specs = get_kind(content.kind).command_specs(content.scenario)
    return {name: {"help": spec.help, **{f.name: f for f in spec.fields}} for name, spec in specs.items()}


def fault_panel(cls: type) -> str:
    """Where a fault kind's button sits, from its command's fields: "broker" (its one target
    is a broker: the broker buttons), "link" (its targets are the two ends of a link: the link
    buttons), else "own" (it needs more than its target, a delay say: a form of its own)."""
    required = {f.name for f in dataclasses.fields(cls)
                if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING}
    nodes = set(node_fields(cls))
    if required - nodes:
        return "own"
    return {frozenset({"broker"}): "broker", frozenset({"a", "b"}): "link"}.get(frozenset(nodes), "own")


def _cluster_context(content: LessonContent, commands: dict[str, dict[str, object]]) -> dict[str, object]:
    """Broker ids of the lesson's scenarios and the fault buttons of the commands the lesson
    offers, each from its engine declaration (``Command.fault``: label in both languages, key, danger)."""
    choices = content.scenario.get("choices") or ()
    if not choices:
        return {}
    from engine.cluster.scenarios import get_scenario

    brokers = max(int(get_scenario(name).config.get("brokers", 3)) for name in choices)
    # Dedicated KRaft controllers (lesson 17) are nodes 100, 101, ...: crashed and restarted as brokers are.
    controllers = max(int(get_scenario(name).config.get("controllers", 0)) for name in choices)
    offered = {name: {"cmd": name, "label": cls.fault.label.in_(translation.get_language() or "en"), "key": cls.fault.key, "danger": cls.fault.danger,
                      "needs": cls.fault.needs,
                      "help": commands[name]["help"], "panel": fault_panel(cls)}
               for name, cls in faults().items() if name in commands}
    return {"broker_ids": list(range(brokers)) + [100 + i for i in range(controllers)], "faults": offered,
            "broker_faults": [f for f in offered.values() if f["panel"] == "broker"],
            "link_faults": [f for f in offered.values() if f["panel"] == "link"]}


def live_context(content: LessonContent, lang: str, ws_path: str) -> dict[str, object]:
    """What the page of a lesson with a sandbox needs, whichever socket drives it (the
    learner's own, or a room's: ``kafkaviz/classroom``)."""
    context: dict[str, object] = {"lesson": content, "lang": lang, "languages": LANGUAGES,
                                  "available_langs": content.languages, "ws_path": ws_path,
                                  "stage_diagrams": stage_diagrams(content.diagrams),
                                  "diagram_assets": diagram_assets(content.diagrams)}
    context["commands"] = commands = _commands(content)
    context.update(_cluster_context(content, commands))
    context["config_rows"] = config_rows(content.scenario.get("config") or {})
    context["clock_jumps"] = clock_jumps(content.scenario.get("config") or {})
    context["page_data"] = {**content.page_data(), "ui": ui_strings(),
                            "max_run_bytes": settings.KAFKAVIZ_RUNTIME["MAX_RUN_BYTES"]}
    return context


@require_safe
def lesson(request: HttpRequest, slug: str) -> HttpResponse:
    found: Lesson | None = get_lesson(slug)
    if found is None:
        raise Http404(f"no lesson {slug!r}")
    lang = _lang(request)
    content = load_content(slug, lang)
    with translation.override(DJANGO_LANG[lang]):
        if content is None:
            return render(request, "lessons/not_yet.html", {"lesson": found, "lang": lang}, status=404)
        context: dict[str, object] = {"lesson": content, "lang": lang, "languages": LANGUAGES,
                                      "available_langs": content.languages}
        if is_htmx(request) and request.headers.get("HX-Target") == "explanation":
            return render(request, "lessons/lesson.html#explanation", context)
        if content.kind is not None:
            from kafkaviz.classroom.auth import is_instructor
            ensure_sandbox_id(request.session, slug)
            context = live_context(content, lang, f"/ws/lessons/{slug}/?lang={lang}")
            if is_instructor(request.user):
                from kafkaviz.classroom.ui import room_strings

                context["can_open_room"] = True
                context["room_data"] = {"role": "opener", "ui": room_strings()}
        else:
            context["stage_diagrams"] = stage_diagrams(content.diagrams)
            context["diagram_assets"] = diagram_assets(content.diagrams)
            context["config_rows"] = config_rows(content.scenario.get("config") or {})
            context["page_data"] = {**content.page_data(), "ui": ui_strings()}
        shared = request.GET.get("run", "")
        if content.kind is not None and re.fullmatch(SHARE_ID_RE, shared):
            context["page_data"]["shared_run"] = shared   # the page asks its sandbox to open it
        return render(request, "lessons/lesson.html", context)
