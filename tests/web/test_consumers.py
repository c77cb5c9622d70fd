"""The lesson WebSocket end to end through the ASGI stack (origin check, session,
consumer, runtime, engine, frame builder, channel layer)."""
from __future__ import annotations

import asyncio
import re

import pytest
from channels.testing import WebsocketCommunicator
from django.conf import settings

from kafkaviz.asgi import application

from .conftest import ORIGIN
from .framing import TrackedCommunicator

PATH = "/ws/lessons/segments/"
pytestmark = pytest.mark.asyncio


async def connect(headers):
    comm = TrackedCommunicator(application, PATH, headers=headers)
    connected, _ = await comm.connect()
    assert connected
    snapshot = await comm.receive_json_from(timeout=5)
    assert snapshot["type"] == "frame" and snapshot["snapshot"] is True
    return comm, snapshot


async def replies_until(comm, predicate, timeout=5.0):
    """Collect messages until one satisfies ``predicate``; return them all."""
    got = []
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        remaining = deadline - loop.time()
        assert remaining > 0, f"timed out; got {[m.get('type') for m in got]}"
        msg = await comm.receive_json_from(timeout=remaining)
        got.append(msg)
        if predicate(msg):
            return got


def events_of(messages, kind):
    return [ev for m in messages if m["type"] == "frame" for ev in m["events"] if ev["kind"] == kind]


async def test_connect_with_allowed_origin_gets_a_snapshot_of_two_partitions(runtime, ws_headers):
    comm, snapshot = await connect(ws_headers)
    names = [f["name"] for f in snapshot["state"]["partitions"][0]["files"]]
    assert "00000000000000000000.log" in names
    assert [p["partition"] for p in snapshot["state"]["partitions"]] == [0, 1]
    await comm.disconnect()


async def test_bad_origin_is_refused(runtime, session_cookie):
    comm = WebsocketCommunicator(application, PATH, headers=[
        (b"origin", b"http://evil.example"), (b"cookie", f"sessionid={session_cookie}".encode())])
    connected, _ = await comm.connect()
    assert not connected
    assert runtime.sandboxes == {}


async def test_connection_without_a_session_sandbox_is_refused(runtime):
    comm = WebsocketCommunicator(application, PATH, headers=[(b"origin", ORIGIN)])
    connected, code = await comm.connect()
    assert not connected and code == 4403
    assert runtime.sandboxes == {}


async def test_forged_session_cookie_does_not_attach(runtime):
    forged = "eyJrYWZrYXZpel9zYW5kYm94ZXMiOnsic2VnbWVudHMiOiIwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMCJ9fQ:1:bad"
    comm = WebsocketCommunicator(application, PATH, headers=[(b"origin", ORIGIN), (b"cookie", f"sessionid={forged}".encode())])
    connected, _ = await comm.connect()
    assert not connected
    assert runtime.sandboxes == {}


async def test_produce_sends_ack_and_frame_with_batch_appended(runtime, ws_headers):
    comm, _ = await connect(ws_headers)
    await comm.send_json_to({"cmd": "produce", "partition": "0", "count": "2", "value_size": "50", "key": "k1",
                             "HEADERS": {"HX-Request": "true"}})
    got = await replies_until(comm, lambda m: m["type"] == "frame" and events_of([m], "batch_appended"))
    acks = [m for m in got if m["type"] == "ack"]
    assert acks and acks[0]["text"] == "Sent 2 message(s) to partition 0: offsets 0–1."
    appended = events_of(got, "batch_appended")
    assert appended[0]["partition"] == 0 and appended[0]["first_offset"] == 0
    assert "appended a batch of 1 record(s)" in appended[0]["text"]
    await comm.disconnect()


async def test_enough_produces_roll_a_segment_with_a_twenty_digit_name(runtime, ws_headers):
    comm, _ = await connect(ws_headers)
    for _ in range(2):
        await comm.send_json_to({"cmd": "produce", "partition": "1", "count": "4", "value_size": "100"})
    got = await replies_until(comm, lambda m: m["type"] == "frame" and events_of([m], "segment_rolled"))
    rolled = events_of(got, "segment_rolled")[0]
    assert rolled["partition"] == 1 and rolled["reason"] == "size"
    new_name = f"{rolled['new_segment']:020d}.log"
    assert re.fullmatch(r"\d{20}\.log", new_name) and rolled["new_segment"] > 0
    last_state = [m for m in got if m["type"] == "frame"][-1]["state"]
    assert new_name in [f["name"] for f in last_state["partitions"][1]["files"]]
    await comm.disconnect()


@pytest.mark.parametrize("message, code, needle", [
    ({"cmd": "fly"}, "unknown_type", "Unknown command type 'fly'"),
    ({"no": "cmd"}, "unknown_type", "needs a \"cmd\""),
    ({"cmd": "produce", "count": "lots"}, "invalid", "Number of messages must be a whole number"),
    ({"cmd": "produce", "count": "0"}, "invalid", "between 1 and 50"),
    ({"cmd": "produce", "partition": "7"}, "invalid", "Partition must be between 0 and 1"),
    ({"cmd": "produce", "count": "1", "key": "ключ"}, "invalid", "printable ASCII"),
    ({"cmd": "produce", "colour": "red"}, "invalid", "Unknown field(s) for produce: 'colour'"),
    ({"cmd": "advance", "ms": ""}, "invalid", "Jump (ms) is required"),
])
async def test_invalid_message_gets_an_error_and_the_connection_still_works(runtime, ws_headers, message, code,
                                                                               needle):
    comm, _ = await connect(ws_headers)
    await comm.send_json_to(message)
    error = await comm.receive_json_from(timeout=5)
    assert error["type"] == "error" and error["code"] == code and needle in error["message"]
    await comm.send_json_to({"cmd": "produce", "count": "1"})
    got = await replies_until(comm, lambda m: m["type"] == "ack")
    assert got[-1]["command"] == "produce"
    await comm.disconnect()


async def test_non_json_and_oversized_messages_get_errors(runtime, ws_headers):
    comm, _ = await connect(ws_headers)
    await comm.send_to(text_data="{not json")
    assert (await comm.receive_json_from(timeout=5))["message"] == "That message is not valid JSON."
    oversize = settings.KAFKAVIZ_RUNTIME["MAX_MESSAGE_BYTES"] + 1
    await comm.send_to(text_data='{"cmd": "produce", "key": "' + "x" * oversize + '"}')
    error = await comm.receive_json_from(timeout=5)
    assert error["code"] == "too_large"
    await comm.disconnect()


async def test_value_size_limit_follows_segment_bytes(runtime, ws_headers):
    # segment.bytes=1000 here: a 2,000-byte value could never fit, so the form's limit
    # (from the same spec) refuses it before the engine would with RecordTooLargeError.
    comm, _ = await connect(ws_headers)
    await comm.send_json_to({"cmd": "produce", "count": "1", "value_size": "2000"})
    got = await replies_until(comm, lambda m: m["type"] in ("error", "ack"))
    assert got[-1]["type"] == "error" and got[-1]["code"] == "invalid" and got[-1]["field"] == "value_size"
    assert "between 1 and 883" in got[-1]["message"]
    await comm.send_json_to({"cmd": "produce", "count": "1", "value_size": "883", "key": "k" * 40})
    got = await replies_until(comm, lambda m: m["type"] in ("error", "ack"))
    assert got[-1]["type"] == "ack"
    await comm.disconnect()


async def test_empty_count_is_refused_not_sent_as_one(runtime, ws_headers):
    comm, _ = await connect(ws_headers)
    await comm.send_json_to({"cmd": "produce", "count": "", "value_size": "100"})
    error = await comm.receive_json_from(timeout=5)
    assert error["type"] == "error" and error["field"] == "count" and "required" in error["message"]
    assert runtime.sandboxes and next(iter(runtime.sandboxes.values())).engine.messages_sent == 0
    await comm.disconnect()


async def test_message_quota_gives_a_clear_error(runtime, runtime_settings, ws_headers):
    runtime_settings["MAX_MESSAGES"] = 3
    comm, _ = await connect(ws_headers)
    await comm.send_json_to({"cmd": "produce", "count": "4"})
    error = (await replies_until(comm, lambda m: m["type"] == "error"))[-1]
    assert error["code"] == "quota" and "at most 3 messages" in error["message"] and error["field"] == "count"
    await comm.disconnect()


async def test_command_rate_quota_gives_a_clear_error(runtime, runtime_settings, ws_headers):
    runtime_settings["COMMAND_BURST"] = 2
    runtime_settings["COMMANDS_PER_SECOND"] = 0.01
    comm, _ = await connect(ws_headers)
    for _ in range(3):
        await comm.send_json_to({"cmd": "advance", "ms": "1000"})
    got = await replies_until(comm, lambda m: m["type"] == "error")
    assert got[-1]["code"] == "rate_limited" and "at most 0.01 per second" in got[-1]["message"]
    await comm.disconnect()


async def test_two_watchers_of_one_session_both_get_frames(runtime, ws_headers):
    first, _ = await connect(ws_headers)
    second, _ = await connect(ws_headers)
    await first.send_json_to({"cmd": "produce", "count": "1"})
    seen = await replies_until(second, lambda m: m["type"] == "frame" and events_of([m], "batch_appended"))
    assert events_of(seen, "batch_appended")[0]["first_offset"] == 0
    assert not [m for m in seen if m["type"] == "ack"]  # the ack goes to the sender only
    await first.disconnect()
    await second.disconnect()


async def test_reset_starts_the_sandbox_over(runtime, ws_headers):
    comm, _ = await connect(ws_headers)
    await comm.send_json_to({"cmd": "produce", "count": "3"})
    await replies_until(comm, lambda m: m["type"] == "ack")
    await comm.send_json_to({"cmd": "reset"})
    got = await replies_until(comm, lambda m: m["type"] == "frame" and m["reset"])
    assert got[-1]["state"]["partitions"][0]["log_end_offset"] == 0
    await comm.disconnect()


async def test_missing_origin_is_refused(runtime, session_cookie):
    comm = WebsocketCommunicator(application, PATH, headers=[(b"cookie", f"sessionid={session_cookie}".encode())])
    connected, _ = await comm.connect()
    assert not connected


async def test_reconnecting_gets_the_state_and_history_so_far(runtime, ws_headers):
    comm, _ = await connect(ws_headers)
    await comm.send_json_to({"cmd": "produce", "count": "3"})
    await replies_until(comm, lambda m: m["type"] == "ack")
    await comm.disconnect()
    again, snapshot = await connect(ws_headers)
    assert snapshot["state"]["partitions"][0]["log_end_offset"] == 3
    assert [e["first_offset"] for e in snapshot["events"] if e["kind"] == "batch_appended"] == [0, 1, 2]
    await again.disconnect()


@pytest.mark.parametrize("origin,host,ok", [
    (b"http://127.0.0.1:8000", b"127.0.0.1:8000", True),
    (b"http://localhost:8000", b"localhost:8000", True),
    (b"http://localhost:9999", b"localhost:8000", False),         # another port on an allowed host
    (b"http://localhost", b"localhost:8000", False),
    (b"http://127.0.0.1:8000", b"localhost:8000", False),         # another host than the one connected to
    (b"http://localhost", b"localhost", True),                    # default ports
    (b"http://localhost:80", b"localhost", True),
    (b"http://evil.example:8000", b"evil.example:8000", False),   # not an allowed host
    (b"null", b"localhost:8000", False),
    (b"ftp://localhost:8000", b"localhost:8000", False),
])
async def test_the_origin_check_compares_scheme_host_and_port(runtime, session_cookie, origin, host, ok):
    comm = WebsocketCommunicator(application, PATH, headers=[
        (b"origin", origin), (b"host", host), (b"cookie", f"sessionid={session_cookie}".encode())])
    connected, _ = await comm.connect()
    assert connected is ok
    await comm.disconnect()


async def test_a_trusted_origin_is_accepted_whatever_the_host(runtime, session_cookie, settings):
    settings.CSRF_TRUSTED_ORIGINS = ["https://demo.example.org"]
    comm = WebsocketCommunicator(application, PATH, headers=[
        (b"origin", b"https://demo.example.org"), (b"host", b"127.0.0.1:8000"),
        (b"cookie", f"sessionid={session_cookie}".encode())])
    assert (await comm.connect())[0]
    await comm.disconnect()
