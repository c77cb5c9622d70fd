"""Lesson pages. Function-based views; one page template for every lesson, with named
partials rendered alone when htmx asks for one (``HX-Request`` header)."""
from __future__ import annotations

import dataclasses
import re

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import translation
from django.utils.translation import gettext as _
from django.views.decorators.http import require_safe

from engine.cluster.config import ClusterConfig
from engine.config import LogConfig

from kafkaviz.live.models import SHARE_ID_RE

from .catalogue import LESSONS, Lesson, get_lesson
from .content import DJANGO_LANG, LANGUAGES, LessonContent, load_content
from .diagrams import diagram_assets
from .ui import ui_strings



def is_htmx(request: HttpRequest) -> bool:
    return request.headers.get("HX-Request") == "true"


def _lang(request: HttpRequest) -> str:
    lang = request.GET.get("lang", "en")
    return lang if lang in LANGUAGES else "en"


@require_safe
def home(request: HttpRequest) -> HttpResponse:
    lang = _lang(request)
    with translation.override(DJANGO_LANG[lang]):
        return render(request, "lessons/home.html", {"lessons": [lesson.shown(lang) for lesson in LESSONS],
                                                     "lang": lang, "languages": LANGUAGES})


def _defaults() -> dict[str, object]:
    """Kafka name → Kafka's default, for the storage and the cluster settings."""
    out: dict[str, object] = {}
    for obj in (ClusterConfig(), LogConfig()):
        for f in dataclasses.fields(obj):
            name = f.metadata.get("kafka")
            if name and name != "log":
                out.setdefault(name, getattr(obj, f.name))
    return out


def config_rows(config: dict[str, object]) -> list[dict[str, object]]:
    """(Kafka name, this sandbox's value, Kafka's default) for the settings table."""
    defaults = _defaults()
    return [{"name": name, "value": value, "default": defaults.get(name, "—")} for name, value in config.items()]


def clock_jumps(config: dict[str, object]) -> list[dict[str, object]]:
    """The clock jumps a storage lesson's time form offers, from its own settings (Kafka's
    default where it sets none): one retention check, past file.delete.delay.ms, and past
    retention.ms (plus the check that notices it), the last chosen first."""
    def ms(name: str) -> int:
        return int(config.get(name, _defaults().get(name, -1)))  # type: ignore[call-overload]

    check, delay, retention = ms("log.retention.check.interval.ms"), ms("file.delete.delay.ms"), ms("retention.ms")
    jumps = {"check": check, "file.delete.delay.ms": delay}
    if retention >= 0:
        jumps["retention.ms"] = retention + check
    out = [{"rule": rule, "ms": value, "seconds": f"{value / 1000:g}", "selected": rule == "retention.ms"}
           for rule, value in jumps.items() if value > 0]
    return sorted(out, key=lambda j: j["ms"])


def _commands(content: LessonContent) -> dict[str, dict[str, object]]:
    """The kind's command specs by type and field, so forms carry the limits the server
    enforces (one home: the spec)."""
    from kafkaviz.live.kinds import get_kind

    specs = get_kind(content.kind).command_specs(content.scenario)
    return {name: {"help": spec.help, **{f.name: f for f in spec.fields}} for name, spec in specs.items()}


def _broker_actions() -> list[tuple[str, str, str]]:
    return [("crash", _("Crash"), "c"), ("shutdown", _("Shut down"), "s"), ("restart", _("Restart"), "r"),
            ("isolate", _("Isolate"), "i"), ("pause_follower", _("Pause fetching"), "p"),
            ("resume_follower", _("Resume fetching"), "u")]


def _cluster_context(content: LessonContent, commands: dict[str, dict[str, object]]) -> dict[str, object]:
    """Broker ids of the lesson's scenarios and the broker buttons the kind accepts."""
    choices = content.scenario.get("choices") or ()
    if not choices:
        return {}
    from engine.cluster.scenarios import get_scenario

    brokers = max(int(get_scenario(name).config.get("brokers", 3)) for name in choices)
    # Dedicated KRaft controllers (lesson 17) are nodes 100, 101, ...: crashed and restarted as brokers are.
    controllers = max(int(get_scenario(name).config.get("controllers", 0)) for name in choices)
    return {"broker_ids": list(range(brokers)) + [100 + i for i in range(controllers)],
            "broker_actions": [(name, label, key, commands[name]["help"])
                               for name, label, key in _broker_actions() if name in commands]}


# The pictures the other diagrams of a lesson explain: whichever a lesson lists, these go on
# the stage (beside the controls and the step's sentence), the cluster first.
# The cluster's broker boxes hold their replica lanes themselves (LEO, HW, epoch, ISR), so the
# full lanes (acknowledged, lost and truncated records, the requests) follow below the stage.
_STAGE_PARTNERS = ("consumer-group", "txn-log")


def stage_diagrams(diagrams: tuple[str, ...] | list[str]) -> list[str]:
    """The diagrams on a lesson's stage: the cluster picture with the view of the partition
    or group it talks about, or else the lesson's first diagram."""
    if "cluster" in diagrams:
        return ["cluster"] + [d for d in diagrams if d in _STAGE_PARTNERS][:1]
    return list(diagrams[:1])


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
            from kafkaviz.live.sessions import ensure_sandbox_id

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
