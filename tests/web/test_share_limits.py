"""Shares are bounded (issue 19, item 6): identical runs are stored once (a second share of
the same run returns the same link), and new runs per visitor and per address are limited,
so a share flood cannot fill the database for 30 days."""
from __future__ import annotations

from datetime import timedelta

import pytest
from asgiref.sync import sync_to_async
from django.conf import settings as django_settings
from django.test import Client
from django.utils import timezone

from kafkaviz.asgi import application
from kafkaviz.live.models import SharedRun
from kafkaviz.live.shares import ShareLimitReached, run_digest, store_run

from .conftest import ORIGIN
from .framing import TrackedCommunicator
from .test_consumers import replies_until
from .test_rooms import close_thread_connections  # noqa: F401 - autouse: the consumer's DB thread forgets its connection

RUN = {"format": "kafkaviz-run", "version": 1, "lesson": "segments", "kind": "segments", "seed": 1,
       "run": {"steps": [], "step": 0}}


def run(n: int) -> dict:
    return {**RUN, "run": {"steps": [[{"cmd": "produce", "n": i}] for i in range(n)], "step": n}}


@pytest.mark.django_db
def test_the_limits_are_on_by_default():
    assert 0 < django_settings.KAFKAVIZ_SHARES_PER_VISITOR <= django_settings.KAFKAVIZ_SHARES_PER_ADDRESS


@pytest.mark.django_db
def test_an_identical_run_is_stored_once_and_gets_the_same_link():
    first = store_run("segments", run(2), "visitor-a", "10.0.0.1")
    again = store_run("segments", run(2), "visitor-b", "10.0.0.2")
    reordered = store_run("segments", dict(reversed(list(run(2).items()))), "visitor-a", "10.0.0.1")
    assert first.pk == again.pk == reordered.pk
    assert SharedRun.objects.count() == 1 and first.digest == run_digest(run(2))
    assert store_run("segments", run(3), "visitor-a", "10.0.0.1").pk != first.pk


@pytest.mark.django_db
def test_an_expired_identical_run_is_stored_again_under_a_new_link():
    first = store_run("segments", run(2))
    SharedRun.objects.filter(pk=first.pk).update(created=timezone.now() - timedelta(days=31))
    second = store_run("segments", run(2))
    assert second.pk != first.pk and list(SharedRun.objects.values_list("pk", flat=True)) == [second.pk]


@pytest.mark.django_db
def test_new_runs_are_limited_per_visitor_and_per_address(settings):
    settings.KAFKAVIZ_SHARES_PER_VISITOR, settings.KAFKAVIZ_SHARES_PER_ADDRESS = 3, 5
    for i in range(3):
        store_run("segments", run(i), "visitor-a", "10.0.0.1")
    with pytest.raises(ShareLimitReached) as err:
        store_run("segments", run(10), "visitor-a", "10.0.0.1")
    assert err.value.scope == "visitor"
    store_run("segments", run(1), "visitor-a", "10.0.0.1")          # already stored: free
    # A fresh session from the same address meets the address's limit.
    store_run("segments", run(11), "visitor-b", "10.0.0.1")
    store_run("segments", run(12), "visitor-b", "10.0.0.1")
    with pytest.raises(ShareLimitReached) as err:
        store_run("segments", run(13), "visitor-c", "10.0.0.1")
    assert err.value.scope == "address"
    store_run("segments", run(13), "visitor-d", "10.0.0.2")         # another network is not affected
    # A day later the window has moved on.
    SharedRun.objects.update(created=timezone.now() - timedelta(days=1, minutes=1))
    store_run("segments", run(14), "visitor-a", "10.0.0.1")
    # Neither the session nor the address is stored as it is.
    assert not SharedRun.objects.filter(visitor="visitor-a").exists()
    assert not SharedRun.objects.filter(address="10.0.0.1").exists()


async def lesson_socket(address: str, client: Client | None = None):
    client = client or Client()
    response = await sync_to_async(client.get)("/lessons/segments/")
    cookie = response.cookies[django_settings.SESSION_COOKIE_NAME].value
    comm = TrackedCommunicator(application, "/ws/lessons/segments/", headers=[
        (b"origin", ORIGIN), (b"cookie", f"{django_settings.SESSION_COOKIE_NAME}={cookie}".encode())])
    comm.scope["client"] = (address, 50000)
    connected, code = await comm.connect()
    assert connected, code
    await comm.receive_json_from(timeout=10)
    return comm


async def share(comm) -> dict:
    await comm.send_json_to({"cmd": "share"})
    return (await replies_until(comm, lambda m: m.get("command") == "share" and m["type"] in ("ack", "error"),
                                timeout=10))[-1]


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_a_share_flood_on_a_socket_stores_each_run_once_and_at_most_the_limit(runtime, settings):
    settings.KAFKAVIZ_SHARES_PER_VISITOR, settings.KAFKAVIZ_SHARES_PER_ADDRESS = 4, 6
    comm = await lesson_socket("10.1.0.1")
    links = {(await share(comm))["share_id"] for _ in range(20)}          # the same run, 20 times
    assert len(links) == 1 and await sync_to_async(SharedRun.objects.count)() == 1
    replies = []
    for _ in range(8):                                                     # new runs: step, then share
        await comm.send_json_to({"cmd": "produce", "count": 1})
        await replies_until(comm, lambda m: m.get("command") == "produce" and m["type"] in ("ack", "error"))
        replies.append(await share(comm))
    assert [r["type"] for r in replies] == ["ack"] * 3 + ["error"] * 5
    refused = replies[-1]
    assert refused["code"] == "quota" and "4 new runs today" in refused["message"]
    assert await sync_to_async(SharedRun.objects.count)() == 4
    # The links made still open.
    await comm.send_json_to({"cmd": "open_shared", "id": replies[0]["share_id"]})
    assert (await replies_until(comm, lambda m: m.get("command") == "open_shared"))[-1]["type"] == "ack"
    await comm.disconnect()
    # A fresh session from the same address gets only what the address has left.
    other = await lesson_socket("10.1.0.1")
    outcomes = [(await share(other))["type"]]
    await other.send_json_to({"cmd": "produce", "count": 2})
    await replies_until(other, lambda m: m.get("command") == "produce" and m["type"] in ("ack", "error"))
    outcomes.append((await share(other))["type"])
    await other.send_json_to({"cmd": "produce", "count": 3})
    await replies_until(other, lambda m: m.get("command") == "produce" and m["type"] in ("ack", "error"))
    outcomes.append((await share(other))["type"])
    assert outcomes == ["ack", "ack", "error"]
    assert await sync_to_async(SharedRun.objects.count)() == 6
    await other.disconnect()
