"""The Lab pages: launch a sweep or an analysis (a background ``manage.py lab`` process),
watch its progress (htmx polls a partial once a second), read the results as heatmaps, open
the worst run of any cell, and list past results. Function-based views; the partial alone
when htmx asks for it."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

import functools

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import translation
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_safe, require_POST

from engine.lab.grid import AXES, PRESETS, GridError, default_runs, make_grid
from kafkaviz.lessons.content import DJANGO_LANG, LANGUAGES
from engine.lab.logscan import NotALogDirError, find_partition_dirs

from . import jobs
from .conf import lab_settings
from .figures import axis_values, build_panels, choose_view


# What each preset is about, in a student's words (the form's "Which settings").
PRESET_LABELS = {
    "acks": gettext_lazy("acks and min.insync.replicas (lesson 9)"),
    "truncation": gettext_lazy("high-watermark or leader-epoch truncation (lesson 10)"),
    "unclean": gettext_lazy("unclean leader election (lesson 11)"),
    "full": gettext_lazy("every combination (a big grid, better run from a shell)"),
}


def _lang(request: HttpRequest) -> str:
    lang = request.GET.get("lang", "en")
    return lang if lang in LANGUAGES else "en"


def in_language(view):
    """Render the view in the page's language (``?lang=zh``), as the lesson pages do."""
    @functools.wraps(view)
    def wrapped(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        lang = _lang(request)
        request.lab_lang = lang
        with translation.override(DJANGO_LANG[lang]):
            response = view(request, *args, **kwargs)
            if hasattr(response, "render") and not getattr(response, "is_rendered", True):
                response.render()
            return response
    return wrapped


def _is_htmx(request: HttpRequest) -> bool:
    return request.headers.get("HX-Request") == "true"


def _own_sandboxes(request: HttpRequest) -> list[tuple[str, str]]:
    """(lesson, data directory) of this browser's own sandboxes: ids come from its signed
    session, so a visitor is never shown another visitor's sandbox."""
    from django.conf import settings

    from kafkaviz.live.sessions import SESSION_KEY

    ids = (request.session.get(SESSION_KEY) or {}) if hasattr(request, "session") else {}
    out = []
    for lesson, sid in sorted(ids.items()):
        path = Path(settings.KAFKAVIZ_DATA_DIR) / str(sid)
        if jobs.valid_sandbox_dir(path):
            out.append((lesson, str(path)))
    return out


def _home_context(request: HttpRequest, **extra: object) -> dict:
    conf = lab_settings()
    sandboxes = _own_sandboxes(request)
    return {"preset_choices": [{"name": k, "label": PRESET_LABELS.get(k, k)} for k in PRESETS],
            "axes": list(AXES.values()), "jobs": jobs.list_jobs(), "launch": conf["LAUNCH"],
            "max_runs": conf["MAX_RUNS"], "sandboxes": sandboxes, "lang": getattr(request, "lab_lang", "en"),
            "form": {"preset": "acks", "runs": default_runs("acks"), "seed": 0, "axes": {}, "logdir": ""}, **extra}


@require_safe
@in_language
def home(request: HttpRequest) -> HttpResponse:
    context = _home_context(request)
    if request.GET.get("preset") in PRESETS:
        context["form"]["preset"] = request.GET["preset"]
        context["form"]["runs"] = default_runs(request.GET["preset"])
    return render(request, "lab/home.html", context)


@require_safe
def latest(request: HttpRequest, preset: str) -> HttpResponse:
    """The newest finished sweep of a preset (what lessons link to); while the first one is
    still being computed (``lab precompute`` at the server's first start), its progress;
    the form with that preset chosen when there is neither."""
    if preset not in PRESETS:
        raise Http404("no such preset")
    lang = "?lang=zh" if _lang(request) == "zh" else ""
    found = jobs.latest_of_preset(preset)
    if found is not None:
        return redirect(reverse("lab:sweep", args=[found.name]) + lang)
    return redirect(f"{reverse('lab:home')}?preset={preset}{lang.replace('?', '&')}#sweep-h")


def _refuse(request: HttpRequest, message: str, status: int, form: dict) -> HttpResponse:
    return render(request, "lab/home.html", _home_context(request, error=message, form=form), status=status)


@require_POST
@in_language
def launch_sweep(request: HttpRequest) -> HttpResponse:
    preset = request.POST.get("preset") or None
    axes = {a: request.POST.getlist(f"axis_{a}") for a in AXES if request.POST.getlist(f"axis_{a}")}
    form = {"preset": preset or "", "runs": request.POST.get("runs", ""), "seed": request.POST.get("seed", ""),
            "axes": axes, "logdir": ""}
    try:
        runs, seed = int(request.POST.get("runs", "20")), int(request.POST.get("seed", "0"))
    except ValueError:
        return _refuse(request, _("The number of runs and the first seed must be whole numbers."), 400, form)
    if runs < 1:
        return _refuse(request, _("How many runs: at least 1 for each combination of settings."), 400, form)
    if seed < 0:
        return _refuse(request, _("The first seed must be 0 or more."), 400, form)
    try:
        grid = make_grid(preset, axes, runs=runs, seed=seed)
    except GridError as exc:
        # Only a form sent by hand reaches this (the form offers known settings only).
        return _refuse(request, _("These settings are not ones the lab knows: %(detail)s") % {"detail": exc},
                       400, form)
    total = len(grid.cells) * grid.runs
    limit = lab_settings()["MAX_RUNS"]
    if total > limit:
        return _refuse(request, _("This experiment has %(total)s runs; one started here may have at most %(limit)s. "
                                  "Choose fewer runs or fewer settings.") % {"total": total, "limit": limit}, 400, form)
    args = (["--preset", preset] if preset else []) + [x for a, v in axes.items() for x in ("--axis", f"{a}={','.join(v)}")]
    args += ["--runs", str(runs), "--seed", str(seed), "--quiet"]
    if request.POST.get("no_spark"):
        args.append("--no-spark")
    try:
        name = jobs.launch("sweep", args, preset=preset)
    except jobs.JobError as exc:
        return _refuse(request, _job_error(exc), 409 if exc.busy else 403, form)
    return redirect(reverse("lab:sweep", args=[name]) + ("?lang=zh" if request.lab_lang == "zh" else ""))


def _job_error(exc: "jobs.JobError") -> str:
    """Why a job could not start, in the page's language."""
    if exc.busy:
        return _("Another lab job (%(name)s) is still running; wait for it to finish.") % {"name": exc.busy}
    return _("Starting lab jobs from this page is switched off on this server (KAFKAVIZ_LAB_LAUNCH); "
             "run `python manage.py lab` instead.")


def _allowed_logdir(path: str) -> Path:
    if not path:
        raise ValueError(_("Give the path of a log directory."))
    real = Path(os.path.realpath(path))
    roots = [Path(os.path.realpath(r)) for r in lab_settings()["LOG_ROOTS"]]
    if not any(real == r or r in real.parents for r in roots):
        raise ValueError(_("Only log directories under the roots this server allows may be analysed here "
                           "(KAFKAVIZ_LAB_LOG_ROOTS)."))
    find_partition_dirs(str(real))
    return real


@require_POST
@in_language
def launch_analytics(request: HttpRequest) -> HttpResponse:
    path = request.POST.get("logdir", "").strip()
    form = {"preset": "", "runs": 20, "seed": 0, "axes": {}, "logdir": path}
    if not path and request.POST.get("sandbox"):
        # One of this browser's own sandboxes, named by its lesson: the path never reaches the page.
        path = dict(_own_sandboxes(request)).get(request.POST["sandbox"], "")
        if not path:
            return _refuse(request, _("That sandbox is not one of yours, or it has no data yet."), 400, form)
    try:
        real = _allowed_logdir(path)
    except NotALogDirError:
        return _refuse(request, _("That is not a Kafka log directory: there is no <topic>-<partition> directory "
                                  "with a .log segment under it."), 400, form)
    except ValueError as exc:
        return _refuse(request, str(exc), 400, form)
    try:
        name = jobs.launch("analyze", [str(real)])
    except jobs.JobError as exc:
        return _refuse(request, _job_error(exc), 409 if exc.busy else 403, form)
    return redirect(reverse("lab:analytics", kwargs={"name": name}) + ("?lang=zh" if request.lab_lang == "zh" else ""))


def _job_or_404(name: str, kind: str) -> jobs.Job:
    job = jobs.get_job(name)
    if job is None or job.kind != kind:
        raise Http404("no such lab job")
    return job


@require_safe
@in_language
def sweep(request: HttpRequest, name: str) -> HttpResponse:
    job = _job_or_404(name, "sweep")
    context: dict = {"job": job, "lang": request.lab_lang}
    if job.state == "done":
        view = choose_view(job.summary, request.GET)
        context.update(view=view, panels=build_panels(name, job.summary, view),
                       choices={a: axis_values(job.summary, a) for a in view["varied"]},
                       summary=job.summary)
        if _is_htmx(request) and request.headers.get("HX-Target") == "results":
            return render(request, "lab/sweep.html#results", context)
    return render(request, "lab/sweep.html", context)


@require_safe
@in_language
def progress(request: HttpRequest, name: str) -> HttpResponse:
    job = jobs.get_job(name)
    if job is None:
        raise Http404("no such lab job")
    response = render(request, "lab/progress.html", {"job": job, "lang": request.lab_lang})
    if job.state != "running":
        response["HX-Refresh"] = "true"   # the page reloads into its result or its error
    return response


@require_safe
def worst(request: HttpRequest, name: str, cell: str) -> HttpResponse:
    job = _job_or_404(name, "sweep")
    if job.state != "done":
        raise Http404("this sweep has no results yet")
    found = next((c for c in job.summary["cells"] if c["cell"] == cell), None)
    if found is None:
        raise Http404("no such cell in this sweep")
    replay = replay_run(found["worst"]["command_log"])
    return render(request, "lab/worst.html", {"job": job, "cell": found, "replay": replay,
                                              "loss_step": found["worst"]["first_loss_step"]})


def replay_run(command_log: str) -> dict:
    """Replay a run's command log (as applied) and return each step with its result and the
    checker findings it raised, plus the final state. A run of a sweep is small (tens of
    commands), so this is cheap enough for a request."""
    from engine.cluster.run import Run, load_command_log, make_config
    from engine.narration import finding_text

    log = load_command_log(command_log)
    with tempfile.TemporaryDirectory(prefix="kafkaviz-replay-") as root:
        run = Run(log.seed or 0, make_config(log.config), root, snapshot_every=10**9)
        steps = []
        for i, cmd in enumerate(log.commands, 1):
            before = len(run.checker.findings)
            result = run.apply(cmd)
            steps.append({"n": i, "command": run.log[-1], "time_ms": result.get("time_ms"),
                          "result": _result_text(result),
                          "findings": [finding_text(f) for f in run.checker.findings[before:]]})
        before = len(run.checker.findings)
        run.finish()
        final = [finding_text(f) for f in run.checker.findings[before:]]
        summary = run.summary()
        digest = run.event_digest()
    return {"seed": log.seed, "config": log.config, "steps": steps, "final_findings": final, "summary": summary,
            "jsonl": command_log, "event_digest": digest}


def _result_text(result: dict) -> str:
    cmd = result.get("cmd")
    if cmd == "produce":
        values = [r["value"] for r in result.get("records", [])]
        return f"request {result['request_id']}: {', '.join(str(v) for v in values)}"
    if cmd == "consume":
        return "read " + (", ".join(f"{r['value']}@{r['offset']}" for r in result["records"]) or "nothing")
    return ""


@require_safe
def analytics(request: HttpRequest, name: str) -> HttpResponse:
    job = _job_or_404(name, "analytics")
    return render(request, "lab/analytics.html", {"job": job, "summary": job.summary})
