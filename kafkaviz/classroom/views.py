"""Room pages: the instructor's rooms and presenter view, joining, the student's page.

Everything that decides who may do what is here or in the room's socket
(``consumers.py``), on the server: the presenter view and room actions need the signed-in
instructor who owns the room; a student's page needs a membership this browser's signed
session holds. Join codes are rate-limited per client address against guessing.
"""
from __future__ import annotations

import json

import segno
from django.contrib.auth.decorators import login_required
from django.core.cache import cache
from django.db import transaction
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseForbidden
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone, translation
from django.utils.html import strip_tags
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST, require_safe

from kafkaviz.lessons.catalogue import LESSONS, get_lesson
from kafkaviz.lessons.content import DJANGO_LANG, LANGUAGES, load_content
from kafkaviz.lessons.ui import ui_strings
from kafkaviz.lessons.views import config_rows, live_context
from kafkaviz.live.consumers import client_address
from kafkaviz.live.runtime import get_runtime, new_sandbox_id
from kafkaviz.live.sessions import sandbox_id_from_session

from . import presets
from .models import MAX_DISPLAY_NAME, Member, Room, is_instructor, normalise_code
from .sessions import member_id_from_session, remember_member

JOIN_GUESSES_PER_MINUTE = 10     # wrong codes per client address per minute
MAX_MEMBERS = 300                # students per room
MAX_OPEN_ROOMS = 20              # open rooms per instructor


def _lang(request: HttpRequest, default: str = "en") -> str:
    lang = request.GET.get("lang") or request.POST.get("lang") or default
    return lang if lang in LANGUAGES else "en"


def _room_or_404(code: str) -> Room:
    room = Room.objects.filter(code=normalise_code(code)).select_related("instructor").first()
    if room is None:
        raise Http404("no such room")
    return room


def _owner(request: HttpRequest, room: Room) -> bool:
    return is_instructor(request.user) and request.user.pk == room.instructor_id


def _live_lessons() -> list:
    out = []
    for lesson in LESSONS:
        content = load_content(lesson.slug, "en")
        if content is not None and content.kind is not None:
            out.append(content)
    return out


@require_safe
@login_required
def rooms_home(request: HttpRequest) -> HttpResponse:
    if not is_instructor(request.user):
        return HttpResponseForbidden(_("Only instructors open rooms. Ask an administrator for an instructor account."))
    rooms = Room.objects.filter(instructor=request.user).order_by("-created")[:50]
    return render(request, "classroom/rooms.html", {"rooms": rooms, "lessons": _live_lessons()})


@require_POST
@login_required
def room_new(request: HttpRequest) -> HttpResponse:
    if not is_instructor(request.user):
        return HttpResponseForbidden(_("Only instructors open rooms."))
    slug = request.POST.get("lesson", "")
    lang = _lang(request)
    content = load_content(slug, lang) if get_lesson(slug) is not None else None
    if content is None or content.kind is None:
        return HttpResponse(_("That lesson has no live sandbox to open a room on."), status=400)
    if Room.objects.filter(instructor=request.user, closed__isnull=True).count() >= MAX_OPEN_ROOMS:
        return HttpResponse(_("You have %(n)d rooms open, the most one instructor may; close one first.")
                            % {"n": MAX_OPEN_ROOMS}, status=400)
    # "From any lesson step": the room starts where the instructor's own sandbox of this
    # lesson is (when it is live in this process), else at the lesson's start.
    mine = sandbox_id_from_session(request.session, slug)
    run = get_runtime().current_run(mine) if mine else None
    room = Room.objects.create(lesson=slug, lang=lang, sandbox_id=new_sandbox_id(), instructor=request.user, run=run)
    return redirect("classroom:present", code=room.code)


@require_POST
@login_required
def room_close(request: HttpRequest, code: str) -> HttpResponse:
    room = _room_or_404(code)
    if not _owner(request, room):
        return HttpResponseForbidden(_("Only the room's instructor can close it."))
    if room.closed is None:
        Room.objects.filter(pk=room.pk).update(closed=timezone.now())
        from asgiref.sync import async_to_sync
        from channels.layers import get_channel_layer

        from .consumers import room_group

        layer = get_channel_layer()
        if layer is not None:
            async_to_sync(layer.group_send)(room_group(room.code), {"type": "room.changed"})
    return redirect("classroom:rooms")


@require_safe
def room_export(request: HttpRequest, code: str) -> HttpResponse:
    room = _room_or_404(code)
    if not _owner(request, room):
        return HttpResponseForbidden(_("Only the room's instructor can export its run."))
    run = get_runtime().current_run(room.sandbox_id) or room.run
    if run is None:
        return HttpResponse(_("Nothing has happened in this room yet."), status=404)
    response = HttpResponse(json.dumps(run, indent=1), content_type="application/json")
    response["Content-Disposition"] = f'attachment; filename="kafkaviz-room-{room.code}.json"'
    return response


def _page(request: HttpRequest, room: Room, template: str, role: str, data: dict | None = None,
          more: dict | None = None) -> HttpResponse:
    content = load_content(room.lesson, room.lang)
    if content is None:
        raise Http404("the room's lesson is gone")
    with translation.override(DJANGO_LANG[room.lang]):
        context: dict[str, object] = {"lesson": content, "lang": room.lang, "languages": LANGUAGES,
                                      "available_langs": (room.lang,), "room": room, "role": role, **(more or {})}
        context.update(live_context(content, f"/ws/rooms/{room.code}/?lang={room.lang}"))
        context["config_rows"] = config_rows(content.scenario.get("config") or {})
        context["page_data"] = {**content.page_data(), "ui": ui_strings(),
                                "room": {"code": room.code, "role": role, **(data or {})}}
        if "presets" in context:
            context["presets"] = [{**p, "label": str(p["label"])} for p in context["presets"]]
        return render(request, template, context)


@require_safe
def room_present(request: HttpRequest, code: str) -> HttpResponse:
    room = _room_or_404(code)
    if not _owner(request, room):
        if not request.user.is_authenticated:
            return redirect(f"{reverse('login')}?next={request.path}")
        return HttpResponseForbidden(_("Only the room's instructor sees the presenter view."))
    if not room.is_open:
        return render(request, "classroom/closed.html", {"room": room, "lang": room.lang}, status=410)
    from kafkaviz.live.kinds import get_kind
    from kafkaviz.live.runtime import COMMON_COMMANDS

    join_url = request.build_absolute_uri(reverse("classroom:short", kwargs={"code": room.code}))
    with translation.override(DJANGO_LANG[room.lang]):
        title = _("Join code %(code)s") % {"code": room.shown_code}
        qr = segno.make(join_url, error="m").svg_inline(scale=5, dark="#111", light="#fff", title=title)
        content = load_content(room.lesson, room.lang)
        rows = presets.describe({**COMMON_COMMANDS, **get_kind(content.kind).command_specs(content.scenario)})
    return _page(request, room, "classroom/present.html", "instructor",
                 {"presets": [{"id": p["id"], "key": p["key"]} for p in rows if p["available"]]},
                 {"join_url": join_url, "qr_svg": qr, "presets": rows})


@require_safe
def room_page(request: HttpRequest, code: str) -> HttpResponse:
    room = _room_or_404(code)
    if _owner(request, room):
        return redirect("classroom:present", code=room.code)
    if not room.is_open:
        return render(request, "classroom/closed.html", {"room": room, "lang": room.lang}, status=410)
    member_id = member_id_from_session(request.session, room.code)
    member = Member.objects.filter(pk=member_id, room=room).first() if member_id else None
    if member is None:
        return redirect(f"{reverse('classroom:join')}?code={room.code}")
    return _page(request, room, "lessons/lesson.html", "student", {"name": member.name})


@require_safe
def short(request: HttpRequest, code: str) -> HttpResponse:
    return redirect(f"{reverse('classroom:join')}?code={normalise_code(code)}")


def _guesses_key(request: HttpRequest) -> str:
    return f"kafkaviz:join-guesses:{client_address(request.scope) if hasattr(request, 'scope') else request.META.get('REMOTE_ADDR', '')}"


def join(request: HttpRequest) -> HttpResponse:
    """GET: the form. POST: a code and a display name → a membership in this browser's
    session. Wrong codes count against the client address; past the limit every attempt
    is refused for the rest of the minute, right codes included."""
    lang = _lang(request)
    form = {"code": normalise_code(request.GET.get("code", "")), "name": ""}
    errors: dict[str, str] = {}
    status = 200
    if request.method == "POST":
        form = {"code": normalise_code(request.POST.get("code", "")), "name": request.POST.get("name", "")}
        key = _guesses_key(request)
        name = " ".join(strip_tags(form["name"]).split())
        if cache.get(key, 0) >= JOIN_GUESSES_PER_MINUTE:
            errors["code"] = _("Too many wrong codes from your network; wait a minute and try again.")
            status = 429
        elif not name:
            errors["name"] = _("Enter the name your class will see.")
        elif len(name) > MAX_DISPLAY_NAME:
            errors["name"] = _("A name may be at most %(n)d characters.") % {"n": MAX_DISPLAY_NAME}
        if not errors:
            room = Room.objects.filter(code=form["code"]).first() if form["code"] else None
            if room is None:
                cache.add(key, 0, timeout=60)
                try:
                    cache.incr(key)
                except ValueError:
                    cache.set(key, 1, timeout=60)
                errors["code"] = _("No room has that code. Check it on the projector.")
            elif not room.is_open:
                errors["code"] = _("That room is closed.")
            else:
                with transaction.atomic():
                    if Member.objects.filter(room=room).count() >= MAX_MEMBERS:
                        errors["code"] = _("That room is full.")
                    else:
                        member = Member.objects.create(room=room, name=name)
                if not errors:
                    remember_member(request.session, room.code, member.id)
                    return redirect("classroom:room", code=room.code)
        status = status if status != 200 else 400
    with translation.override(DJANGO_LANG[lang]):
        return render(request, "classroom/join.html", {"form": form, "errors": errors, "lang": lang,
                                                       "max_name": MAX_DISPLAY_NAME}, status=status)
