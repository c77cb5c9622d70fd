"""Hostile and malformed input: nothing a client sends over the socket or HTTP gives a
server error, a 1011 close, a traceback flood or a dead sandbox. Includes a seeded
corpus of more than 1,000 malformed socket messages and 1,000 malformed HTTP requests."""
from __future__ import annotations

import json
import logging
import random

import pytest
from django.test import Client

from kafkaviz.asgi import application
from kafkaviz.live import consumers
from kafkaviz.live.consumers import nesting_depth

from .conftest import ORIGIN
from .framing import TrackedCommunicator

PATH = "/ws/lessons/segments/"


async def connect(headers, client=None):
    comm = TrackedCommunicator(application, PATH, headers=headers)
    if client is not None:
        comm.scope["client"] = client
    connected, code = await comm.connect()
    return comm, connected, code


async def produce_works(comm):
    await comm.send_json_to({"cmd": "produce", "count": "1"})
    while True:
        msg = await comm.receive_json_from(timeout=5)
        if msg["type"] in ("ack", "error"):
            return msg["type"] == "ack"


@pytest.mark.asyncio
async def test_deeply_nested_json_gets_a_clear_error_not_a_1011(runtime, ws_headers, caplog):
    comm, connected, _ = await connect(ws_headers)
    assert connected and (await comm.receive_json_from(timeout=5))["snapshot"]
    for text in ("[" * 2000 + "]" * 2000, '{"a":' * 600 + "1" + "}" * 600, "[" * 4000):
        await comm.send_to(text_data=text)
        error = await comm.receive_json_from(timeout=5)
        assert error["type"] == "error" and error["code"] == "invalid" and "nested too deeply" in error["message"]
    assert await produce_works(comm)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    await comm.disconnect()


def test_nesting_depth_skips_strings():
    assert nesting_depth('{"a": "[[[[{{{{", "b": [1, {"c": 2}]}') == 3
    assert nesting_depth('"\\"[["') == 0


@pytest.mark.asyncio
async def test_an_unexpected_exception_is_an_error_reply_and_one_log_line(runtime, ws_headers, monkeypatch, caplog):
    comm, _, _ = await connect(ws_headers)
    await comm.receive_json_from(timeout=5)

    async def broken(sandbox_id, message):
        raise RuntimeError("boom")

    monkeypatch.setattr(runtime, "command", broken)
    monkeypatch.setattr(consumers, "_last_traceback", {})
    for _ in range(5):
        await comm.send_json_to({"cmd": "produce", "count": "1"})
        error = await comm.receive_json_from(timeout=5)
        assert error["type"] == "error" and error["code"] == "internal"
    with_traceback = [r for r in caplog.records if r.exc_info]
    assert len(with_traceback) == 1                   # one traceback, then one-line records
    monkeypatch.undo()
    assert await produce_works(comm)
    await comm.disconnect()


@pytest.mark.asyncio
async def test_invalid_messages_are_rate_limited_then_the_socket_closed(runtime, runtime_settings, ws_headers,
                                                                       settings):
    settings.KAFKAVIZ_RUNTIME = {**settings.KAFKAVIZ_RUNTIME, "INVALID_BURST": 3, "INVALID_PER_SECOND": 0.01,
                                 "INVALID_CLOSE_AFTER": 20}
    comm, _, _ = await connect(ws_headers)
    await comm.receive_json_from(timeout=5)
    for _ in range(10):
        await comm.send_to(text_data="nope")
    replies = [await comm.receive_json_from(timeout=5) for _ in range(4)]
    assert [r["code"] for r in replies] == ["invalid"] * 3 + ["rate_limited"]
    assert await comm.receive_nothing(timeout=0.5)       # the other six: silence
    assert await produce_works(comm)                    # valid commands still go through
    for _ in range(20):
        await comm.send_to(text_data="nope")
    out = await comm.receive_output(timeout=5)
    while out["type"] != "websocket.close":
        out = await comm.receive_output(timeout=5)
    assert out["code"] == consumers.CLOSE_ABUSE
    assert runtime.sandboxes                            # the sandbox lives on


@pytest.mark.asyncio
async def test_connections_per_address_are_capped_with_a_message(runtime, runtime_settings, ws_headers, settings):
    runtime.settings["MAX_CONNECTIONS_PER_ADDRESS"] = 2
    comms = []
    for _ in range(2):
        comm, connected, _ = await connect(ws_headers, client=("10.1.2.3", 5000))
        assert connected
        comms.append(comm)
    comm, connected, _ = await connect(ws_headers, client=("10.1.2.3", 5001))
    assert connected                                   # accepted to say why, then closed
    msg = await comm.receive_json_from(timeout=5)
    assert msg["type"] == "error" and "Too many open lesson connections" in msg["message"]
    assert (await comm.receive_output(timeout=5))["code"] == consumers.CLOSE_RETRY   # try again later
    other, connected, _ = await connect(ws_headers, client=("10.9.9.9", 5000))
    assert connected
    await comms[0].disconnect()
    again, connected, _ = await connect(ws_headers, client=("10.1.2.3", 5002))
    assert connected and (await again.receive_json_from(timeout=5))["type"] == "frame"
    for c in (comms[1], other, again):
        await c.disconnect()
    assert runtime.connections == {}


@pytest.mark.asyncio
async def test_sync_sends_the_whole_state_again(runtime, ws_headers):
    comm, _, _ = await connect(ws_headers)
    await comm.receive_json_from(timeout=5)
    assert await produce_works(comm)
    await comm.send_json_to({"type": "sync"})
    while True:
        msg = await comm.receive_json_from(timeout=5)
        if msg.get("snapshot"):
            break
    assert msg["full"] and msg["state"]["partitions"][0]["log_end_offset"] == 1
    await comm.disconnect()


# ---- the corpus ------------------------------------------------------------------

VALID = [{"cmd": "produce", "partition": "0", "count": "1", "value_size": "10", "key": "k"},
         {"cmd": "advance", "ms": "1000"}, {"cmd": "mode", "step": "false"}, {"type": "sync"}]
ODD_VALUES = [None, True, False, 0, -1, 2**63, -2**63, 1e308, float("nan"), "", " ", "0x10", "1e3", "١٢", "\u0000",
              "\ud7ff", "../../etc/passwd", "<script>", "'; DROP TABLE x;--", [], {}, [1, [2, [3]]], {"a": {"b": {}}},
              "9" * 40, "\n", "💥" * 10]


def malformed_messages(n: int, seed: int = 1234) -> list[str | bytes]:
    """A seeded corpus: valid commands with fields broken, wrong shapes, broken JSON,
    deep nesting, control characters, binary frames, oversized text."""
    rng = random.Random(seed)
    out: list[str | bytes] = []
    while len(out) < n:
        r = rng.random()
        base = dict(rng.choice(VALID))
        if r < 0.35:
            key = rng.choice(list(base) + ["HEADERS", "colour", "", "__proto__", "type"])
            base[key] = rng.choice(ODD_VALUES)
            out.append(json.dumps(base, allow_nan=True))
        elif r < 0.5:
            out.append(json.dumps(rng.choice(ODD_VALUES), allow_nan=True))
        elif r < 0.65:
            text = json.dumps(base)
            cut = rng.randrange(len(text))
            out.append(text[:cut] + rng.choice(["", "\\", "\"", "{", "]", "\x00", "\ufffd"]) + text[cut + 1:])
        elif r < 0.75:
            depth = rng.choice([30, 200, 1000, 1900])
            out.append(rng.choice(["[", '{"a":']) * depth)
        elif r < 0.85:
            out.append(bytes(rng.randrange(256) for _ in range(rng.randrange(1, 64))))
        elif r < 0.9:
            out.append('{"cmd": "produce", "key": "' + "x" * rng.choice([4096, 5000, 20000]) + '"}')
        else:
            out.append("".join(chr(rng.randrange(1, 0x2FFF)) for _ in range(rng.randrange(1, 80))))
    return out


@pytest.mark.asyncio
async def test_a_thousand_malformed_socket_messages_give_no_server_error(runtime, ws_headers, settings, caplog):
    settings.KAFKAVIZ_RUNTIME = {**settings.KAFKAVIZ_RUNTIME, "INVALID_BURST": 10**6,
                                 "CONNECTION_COMMAND_BURST": 10**6}
    runtime.settings.update(COMMAND_BURST=10**6, MAX_MESSAGES=10**6)
    comm, _, _ = await connect(ws_headers)
    await comm.receive_json_from(timeout=5)
    corpus = malformed_messages(1100)
    codes = {}
    for message in corpus:
        if isinstance(message, bytes):
            await comm.send_to(bytes_data=message)
        else:
            await comm.send_to(text_data=message)
        while True:  # every message gets exactly one reply (frames may come in between)
            reply = await comm.receive_json_from(timeout=5)
            if reply["type"] != "frame" or reply.get("snapshot"):
                break
        assert reply["type"] in ("error", "ack", "frame")
        codes[reply.get("code", reply["type"])] = codes.get(reply.get("code", reply["type"]), 0) + 1
    assert "internal" not in codes, codes
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert await produce_works(comm)
    sid = next(iter(runtime.sandboxes))
    assert runtime.sandboxes[sid].engine.logs[0].log_end_offset > 0
    await comm.disconnect()


def malformed_requests(n: int, seed: int = 99) -> list[tuple[str, str, dict]]:
    rng = random.Random(seed)
    paths = ["/", "/healthz", "/lessons/segments/", "/lessons/leader-epoch/", "/lessons/", "/lessons/nope/",
             "/static/js/live.js", "/ws/lessons/segments/"]
    junk = ["%00", "%2e%2e/", "..", "\u2603", "?" + "a=" * 50, "%ff%fe", "//", "/.git/config", "#x", ";", "%"]
    out = []
    while len(out) < n:
        path = rng.choice(paths)
        if rng.random() < 0.6:
            cut = rng.randrange(len(path) + 1)
            path = path[:cut] + rng.choice(junk) + path[cut:]
        query = rng.choice(["", "lang=zh", "lang=" + "x" * 300, "lang[]=1", "lang=%ff", "lang=en&lang=zh"])
        method = rng.choice(["get", "get", "post", "put", "delete", "head", "options", "patch"])
        headers = rng.choice([{}, {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "explanation"},
                              {"HTTP_COOKIE": "sessionid=" + "A" * rng.randrange(1, 400)},
                              {"HTTP_HOST": "evil.example"}, {"HTTP_ACCEPT_LANGUAGE": "zz" * 100},
                              {"HTTP_HX_REQUEST": "\x00"}])
        out.append((method, path + ("?" + query if query else ""), headers))
    return out


@pytest.mark.django_db
def test_a_thousand_malformed_http_requests_give_no_server_error(runtime):
    client = Client(raise_request_exception=False)
    statuses = {}
    for method, url, headers in malformed_requests(1000):
        response = getattr(client, method)(url, **headers)
        statuses[response.status_code] = statuses.get(response.status_code, 0) + 1
        assert response.status_code < 500 or response.status_code == 503, (method, url, headers)
    assert 200 in statuses and 404 in statuses and 400 in statuses
