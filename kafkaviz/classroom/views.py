"""Room pages: open (instructors), join (anybody, rate-limited), the student's page
(the lesson page on the room's socket), the presenter view, close."""
from __future__ import annotations

import re
from typing import Any

import segno
from django.conf import settings
from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseForbidden
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import translation
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from kafkaviz.lessons.catalogue import get_lesson
from kafkaviz.lessons.content import DJANGO_LANG, LANGUAGES, load_content
from kafkaviz.lessons.diagrams import diagram_assets
from kafkaviz.live.views import live_context
from kafkaviz.live.kinds import get_kind
from kafkaviz.live.runtime import COMMON_COMMANDS

from .auth import is_instructor
from .forms import JoinForm, NewRoomForm
from .guard import address_tag, guessing_blocked, joins_from, record_failure
from .models import Member, Room, normalise_code
from .presets import presets_for
from .rooms import close_room, member_of, remember_member
from .ui import room_strings

ROOM_SOCKET = "/ws/rooms/{code}/?lang={lang}"


def _lang(request: HttpRequest) -> str:
    lang = request.GET.get("lang", "en")
    return lang if lang in LANGUAGES else "en"


def _instructor_only(request: HttpRequest) -> HttpResponse | None:
    if not request.user.is_authenticated:
        return redirect(f"{reverse('classroom:login')}?next={request.path}")
    if not is_instructor(request.user):
        return HttpResponseForbidden(_("Only instructors can open and present rooms."))
    return None


@require_http_methods(["GET", "POST"])
def new_room(request: HttpRequest) -> HttpResponse:
    """``/rooms/new?lesson=<slug>``: the form; POST opens the room (from the posted run,
    the instructor's sandbox as the lesson page exported it) and goes to the presenter view."""
    refused = _instructor_only(request)
    if refused is not None:
        return refused
    lang = _lang(request)
    choices = [(c.slug, c.title) for c in (load_content(slug, lang) for slug in _live_slugs()) if c is not None]
    if request.method == "POST":
        form = NewRoomForm(request.POST)
        if form.is_valid() and form.cleaned_data["lesson"] in _live_slugs():
            room = Room.objects.create(lesson=form.cleaned_data["lesson"], instructor=request.user,
                                       run=form.cleaned_data["run"] or "")
            return redirect(reverse("classroom:present", args=[room.code]) + (f"?lang={lang}" if lang != "en" else ""))
        messages.error(request, _("Choose a lesson that has a live sandbox."))
    with translation.override(DJANGO_LANG[lang]):
        return render(request, "classroom/new.html", {"choices": choices, "selected": request.GET.get("lesson", ""),
                                                      "lang": lang})


def _live_slugs() -> list[str]:
    from kafkaviz.lessons.catalogue import LESSONS

    slugs = [lesson.slug for lesson in LESSONS] + ["sandbox"]
    return [s for s in slugs if (c := load_content(s, "en")) is not None and c.kind is not None]


def _guarded_lookup(address: str, code: str) -> tuple[Room | None, str, int]:
    """The open room with this code, or why not (message, HTTP status). Every way of
    asking (the form, the link) goes through the guessing limit: a wrong well-formed
    code counts against the address, and a blocked address learns nothing."""
    if guessing_blocked(address):
        return None, _("Too many wrong room codes from your network. Wait a minute, then check the code on the "
                       "projector and try again."), 429
    room = Room.objects.filter(code=code).first()
    if room is None:
        record_failure(address)
        return None, _("No room has this code. Check it on the projector."), 404
    if not room.is_open:
        return None, _("This room has been closed by its instructor."), 410
    return room, "", 200


def _join_page(request: HttpRequest, form: JoinForm, lang: str, status: int, notice: str = "") -> HttpResponse:
    with translation.override(DJANGO_LANG[lang]):
        return render(request, "classroom/join.html", {"form": form, "lang": lang, "notice": notice}, status=status)


@require_http_methods(["GET", "POST"])
def join(request: HttpRequest) -> HttpResponse:
    """``/rooms/join``: the join form; POST joins under a display name."""
    lang = _lang(request)
    if request.method != "POST":
        return _join_page(request, JoinForm(), lang, 200)
    form = JoinForm(request.POST)
    if not form.is_valid():
        return _join_page(request, form, lang, 400)
    room, why, status = _guarded_lookup(request.META.get("REMOTE_ADDR", ""), form.cleaned_data["code"])
    if room is None:
        form.add_error("code" if status != 429 else None, why)
        return _join_page(request, form, lang, status)
    member = member_of(request.session, room)
    if member is not None and member.removed:
        form.add_error(None, _("The instructor removed you from this room."))
        return _join_page(request, form, lang, 403)
    if member is None:
        address = request.META.get("REMOTE_ADDR", "")
        per_address = settings.KAFKAVIZ_ROOMS.get("JOINS_PER_ADDRESS", 0)
        if per_address and joins_from(room.pk, address) >= per_address:
            form.add_error(None, _("%(count)d students have already joined this room from your network, the most "
                                   "one network may add. Ask your instructor.") % {"count": per_address})
            return _join_page(request, form, lang, 429)
        if Member.objects.filter(room=room, removed=False).count() >= settings.KAFKAVIZ_ROOMS["MAX_MEMBERS"]:
            form.add_error(None, _("This room is full: it has as many students as it admits. Ask your instructor."))
            return _join_page(request, form, lang, 429)
        member = Member.objects.create(room=room, name=form.cleaned_data["name"], address=address_tag(address))
    else:
        Member.objects.filter(pk=member.pk).update(name=form.cleaned_data["name"])
    remember_member(request.session, member)
    return redirect(reverse("classroom:room", args=[room.code]) + (f"?lang={lang}" if lang != "en" else ""))


@require_safe
def room_page(request: HttpRequest, code: str) -> HttpResponse:
    """``/r/<code>``: a student in the room sees the lesson page on the room's socket;
    anybody else gets the join form with the code filled in."""
    lang = _lang(request)
    normal = normalise_code(code)
    room = Room.objects.filter(code=normal).first() if normal else None
    if room is not None and room.instructor_id == request.user.pk and is_instructor(request.user):
        return redirect(reverse("classroom:present", args=[room.code]))
    member = member_of(request.session, room) if room is not None and room.is_open else None
    if member is not None and member.removed:
        return _join_page(request, JoinForm(initial={"code": normal or ""}), lang, 403,
                          notice=_("The instructor removed you from this room."))
    if member is None:
        form = JoinForm(initial={"code": normal or ""})
        if normal is None:
            return _join_page(request, form, lang, 404)
        room, why, status = _guarded_lookup(request.META.get("REMOTE_ADDR", ""), normal)
        if status == 410:
            return _closed(request, lang)
        return _join_page(request, form, lang, status, notice=why)
    fork = reverse("lesson", args=[room.lesson]) + (f"?lang={lang}&run=" if lang != "en" else "?run=")
    with translation.override(DJANGO_LANG[lang]):
        context = _room_context(room, lang, "student", member=member.pk, name=member.name, fork_url=fork)[1]
        return render(request, "lessons/lesson.html", context)


def _room_context(room: Room, lang: str, role: str, **room_data: Any) -> tuple[Any, dict[str, Any]]:
    """The lesson's content and the page context of a room page (the lesson's own, on the
    room's socket), with the facts room.js reads."""
    content = load_content(room.lesson, lang)
    if content is None or content.kind is None:
        raise Http404("lesson gone")
    context = live_context(content, lang, ROOM_SOCKET.format(code=room.code, lang=lang))
    context["room"] = room
    context["room_data"] = {"code": room.code, "role": role, "lesson": room.lesson, "ui": room_strings(),
                            **room_data}
    return content, context


@require_safe
def present(request: HttpRequest, code: str) -> HttpResponse:
    """``/rooms/<code>/present``: the instructor's projector page."""
    room = _own_room(request, code)
    if isinstance(room, HttpResponse):
        return room
    lang = _lang(request)
    if not room.is_open:
        return _closed(request, lang)
    join_url = request.build_absolute_uri(reverse("classroom:join_code", args=[room.code]))
    with translation.override(DJANGO_LANG[lang]):
        content, context = _room_context(room, lang, "instructor")
        specs = {**COMMON_COMMANDS, **get_kind(content.kind).command_specs(content.scenario)}
        context["room_data"]["presets"] = presets = presets_for(specs)
        diagrams = list(content.diagrams) + ([] if "timeline" in content.diagrams else ["timeline"])
        context.update(join_url=join_url, qr_svg=_qr_svg(join_url), presets=presets, diagrams=diagrams,
                       diagram_assets=diagram_assets(diagrams))
        return render(request, "classroom/present.html", context)


@require_POST
def close(request: HttpRequest, code: str) -> HttpResponse:
    room = _own_room(request, code)
    if isinstance(room, HttpResponse):
        return room
    close_room(room)
    messages.success(request, _("Room %(code)s is closed.") % {"code": room.code})
    return redirect(reverse("lesson", args=[room.lesson]) if get_lesson(room.lesson) else reverse("home"))


def _own_room(request: HttpRequest, code: str) -> Room | HttpResponse:
    """The room, if the request comes from its instructor; otherwise the refusal."""
    refused = _instructor_only(request)
    if refused is not None:
        return refused
    room = _room_or_404(code)
    if room.instructor_id != request.user.pk:
        return HttpResponseForbidden(_("This is another instructor's room."))
    return room


def _room_or_404(code: str) -> Room:
    normal = normalise_code(code)
    if normal is None:
        raise Http404("no room")
    return get_object_or_404(Room, code=normal)


def _closed(request: HttpRequest, lang: str) -> HttpResponse:
    with translation.override(DJANGO_LANG[lang]):
        return render(request, "classroom/closed.html", {"lang": lang}, status=410)


def _qr_svg(url: str) -> str:
    """The join URL as an inline SVG QR code (drawn here; no image service, no CDN)."""
    svg = segno.make(url, error="m").svg_inline(scale=6, border=2, dark="#111", light="#fff", omitsize=True)
    # An accessible name for the image; the URL itself is printed beside it.
    label = _("QR code of the join link")
    return re.sub(r"^<svg ", f'<svg role="img" aria-label="{label}" ', svg, count=1)
