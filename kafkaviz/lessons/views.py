"""The course's home page, and what a lesson page shows of its lesson's facts (settings
table, clock jumps, the stage's diagrams). The lesson page itself is the live app's
(``kafkaviz/live/views.py``): it adds the sandbox; this app never imports that one."""
from __future__ import annotations

import dataclasses

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import translation
from django.views.decorators.http import require_safe

from engine.cluster.config import ClusterConfig
from engine.config import LogConfig

from .catalogue import LESSONS
from .content import DJANGO_LANG, LANGUAGES


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
