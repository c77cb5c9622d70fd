"""The course's storage lessons over the real WebSocket (origin check, session, consumer,
runtime, kind, frame builder): guided steps arrive as frames whose state carries what the
diagrams draw, and bad input gets a message while the connection and sandbox stay up."""
from __future__ import annotations

import pytest
from .framing import TrackedCommunicator
from django.conf import settings as django_settings
from django.test import Client

from kafkaviz.asgi import application

from .conftest import ORIGIN
from .test_consumers import replies_until

pytestmark = pytest.mark.asyncio


async def open_lesson(slug):
    client = Client()
    assert client.get(f"/lessons/{slug}/").status_code == 200
    cookie = client.cookies[django_settings.SESSION_COOKIE_NAME].value
    comm = TrackedCommunicator(application, f"/ws/lessons/{slug}/", headers=[
        (b"origin", ORIGIN), (b"cookie", f"{django_settings.SESSION_COOKIE_NAME}={cookie}".encode())])
    connected, _ = await comm.connect()
    assert connected
    snapshot = await comm.receive_json_from(timeout=5)
    assert snapshot["type"] == "frame" and snapshot["snapshot"]
    return comm, snapshot


def last_state(messages):
    return [m for m in messages if m["type"] == "frame"][-1]["state"]


async def test_offset_index_steps_carry_the_lookup_and_bad_input_keeps_the_connection(runtime):
    comm, snapshot = await open_lesson("offset-index")
    assert snapshot["state"]["run"]["total"] == 6 and snapshot["state"]["layout"]["batches"] == []
    for n in (1, 2, 3):
        await comm.send_json_to({"cmd": "step"})
        msgs = await replies_until(comm, lambda m: m["type"] == "ack")
    msgs += await replies_until(comm, lambda m: m["type"] == "frame" and m["state"]["run"]["step"] == 3)
    st = last_state(msgs)
    assert st["lookup"]["segment"] == 14 and st["lookup"]["offset"] == 19
    assert [s["kind"] for s in st["lookup_steps"]][0] == "segment" and st["lookup_steps"][-1]["kind"] == "answer"
    assert any(ev["kind"] == "log_lookup" for m in msgs if m["type"] == "frame" for ev in m["events"])
    for bad, field in (({"cmd": "lookup_offset", "offset": "abc"}, "offset"),
                       ({"cmd": "lookup_offset", "offset": "999"}, "offset"),
                       ({"cmd": "set_index_interval", "bytes": "100"}, "bytes"),
                       ({"cmd": "lookup_offset", "offset": "1", "extra": "x"}, "extra")):
        await comm.send_json_to(bad)
        err = (await replies_until(comm, lambda m: m["type"] in ("error", "ack")))[-1]
        assert err["type"] == "error" and err["field"] == field, err
    await comm.send_json_to({"cmd": "lookup_offset", "offset": "5"})
    msgs = await replies_until(comm, lambda m: m["type"] == "ack")
    assert "Offset 5 is in the batch" in msgs[-1]["text"]
    await comm.disconnect()


async def test_flush_lesson_power_loss_and_recovery_over_the_socket(runtime):
    comm, snapshot = await open_lesson("flush-and-page-cache")
    assert snapshot["state"]["alive"]
    await comm.send_json_to({"cmd": "produce", "count": "12", "value_size": "300"})
    await replies_until(comm, lambda m: m["type"] == "ack")
    await comm.send_json_to({"cmd": "writeback"})
    await replies_until(comm, lambda m: m["type"] == "ack")
    await comm.send_json_to({"cmd": "crash", "power_loss": "true"})
    await replies_until(comm, lambda m: m["type"] == "ack")
    await comm.send_json_to({"cmd": "produce", "count": "1", "value_size": "10"})
    err = (await replies_until(comm, lambda m: m["type"] in ("error", "ack")))[-1]
    assert err["type"] == "error" and "down" in err["message"]
    await comm.send_json_to({"cmd": "restart"})
    msgs = await replies_until(comm, lambda m: m["type"] == "ack")
    assert "acknowledged record(s) are gone" in msgs[-1]["text"]
    msgs = await replies_until(comm, lambda m: m["type"] == "frame" and m["state"]["alive"])
    cut = last_state(msgs)["crashes"][-1]["recovery_cut"]
    assert cut["from"] == 4096 and cut["to"] < 4096
    await comm.disconnect()
