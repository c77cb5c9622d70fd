"""Issue 17 item 6: a learner is never refused a lesson for reading quickly. One browser
session walks lessons 1 to 15 in one tab, quicker than the idle reclaim (90 s), from one
address whose sandbox quota is 8: when it asks for a new sandbox at the quota, its
sandboxes that no socket watches are reclaimed first, so all 15 get one. A sandbox the
session still watches (another tab) is never reclaimed for it."""
from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from django.conf import settings as django_settings
from django.test import Client

from kafkaviz.asgi import application
from kafkaviz.lessons.catalogue import LESSONS

from .conftest import ORIGIN
from .framing import TrackedCommunicator

ADDRESS = ("10.55.0.1", 4000)


async def open_lesson(client: Client, slug: str):
    response = await sync_to_async(client.get)(f"/lessons/{slug}/")
    assert response.status_code == 200
    cookie = client.cookies[django_settings.SESSION_COOKIE_NAME].value
    comm = TrackedCommunicator(application, f"/ws/lessons/{slug}/", headers=[
        (b"origin", ORIGIN), (b"cookie", f"{django_settings.SESSION_COOKIE_NAME}={cookie}".encode())])
    comm.scope["client"] = ADDRESS
    connected, _ = await comm.connect()
    assert connected
    return comm, await comm.receive_json_from(timeout=30)


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_one_session_opens_lessons_1_to_15_in_order_and_each_gets_a_sandbox(runtime):
    runtime.settings["MAX_SANDBOXES_PER_ADDRESS"] = 8
    client = Client()
    slugs = [lesson.slug for lesson in LESSONS if lesson.sandbox_kind]
    assert len(slugs) >= 15
    for slug in slugs[:15]:
        comm, first = await open_lesson(client, slug)
        assert first["type"] == "frame" and first["snapshot"], (slug, first)
        assert len(runtime.sandboxes) <= 8
        await comm.disconnect()                     # on to the next lesson, in the same tab


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_a_sandbox_the_session_still_watches_is_not_reclaimed_for_it(runtime):
    runtime.settings["MAX_SANDBOXES_PER_ADDRESS"] = 2
    client = Client()
    slugs = [lesson.slug for lesson in LESSONS if lesson.sandbox_kind]
    one, _ = await open_lesson(client, slugs[0])       # a tab kept open
    two, _ = await open_lesson(client, slugs[1])       # both tabs open: the quota is full
    three, refused = await open_lesson(client, slugs[2])
    assert refused["type"] == "error" and refused["code"] == "quota"
    assert len(runtime.sandboxes) == 2
    await two.disconnect()                              # one tab left: its sandbox may go
    four, first = await open_lesson(client, slugs[3])
    assert first["type"] == "frame"
    await one.send_json_to({"type": "sync"})            # the open tab's sandbox lives on
    assert (await one.receive_json_from(timeout=10))["snapshot"]
    for comm in (one, three, four):
        await comm.disconnect()
