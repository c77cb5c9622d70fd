"""The JSON access log (kafkaviz/accesslog.py): one line per request and per socket, with
status, bytes and time, never the query string."""
from __future__ import annotations

import json
import logging

import pytest
from channels.testing import HttpCommunicator, WebsocketCommunicator

from kafkaviz.accesslog import AccessLog
from kafkaviz.asgi import application
from kafkaviz.jsonlog import JsonFormatter

pytestmark = pytest.mark.asyncio


async def test_an_http_request_is_one_json_line_with_status_bytes_and_no_query(runtime, caplog):
    caplog.set_level(logging.INFO, logger="kafkaviz.access")
    comm = HttpCommunicator(AccessLog(application), "GET", "/healthz?secret=1", headers=[(b"host", b"127.0.0.1")])
    response = await comm.get_response(timeout=5)
    assert response["status"] == 200
    await comm.wait(timeout=5)      # the line is written when the application returns
    [record] = [r for r in caplog.records if r.name == "kafkaviz.access"]
    line = json.loads(JsonFormatter().format(record))
    assert line["event"] == "http" and line["method"] == "GET" and line["path"] == "/healthz"
    assert line["status"] == 200 and line["bytes"] == len(response["body"]) and line["ms"] >= 0
    assert "secret" not in json.dumps(line)


async def test_a_refused_socket_is_logged_as_rejected(runtime, caplog):
    caplog.set_level(logging.INFO, logger="kafkaviz.access")
    comm = WebsocketCommunicator(AccessLog(application), "/ws/lessons/segments/",
                                 headers=[(b"origin", b"http://evil.example")])
    connected, _ = await comm.connect()
    assert not connected
    await comm.disconnect()
    [record] = [r for r in caplog.records if r.name == "kafkaviz.access"]
    assert record.event == "websocket" and record.status == "rejected" and record.path == "/ws/lessons/segments/"
