"""Fixtures for the web tests: a fresh runtime per test on a temp data dir, an
in-memory channel layer, and a browser session that has visited lesson 2."""
from __future__ import annotations

import pytest
from channels.layers import channel_layers
from django.conf import settings as django_settings
from django.test import Client

from kafkaviz.live.runtime import Runtime, set_runtime

ORIGIN = b"http://127.0.0.1:8000"


@pytest.fixture
def runtime_settings():
    """Per-test copy of KAFKAVIZ_RUNTIME; tests tighten quotas on it before use."""
    return {**django_settings.KAFKAVIZ_RUNTIME, "FRAME_INTERVAL_MS": 20, "REAP_EVERY_SECONDS": 0}


@pytest.fixture
def runtime(tmp_path, settings, runtime_settings):
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    channel_layers.backends.clear()
    layer = channel_layers["default"]
    rt = Runtime(tmp_path / "data", settings=runtime_settings, publish=layer.group_send)
    previous = set_runtime(rt)
    yield rt
    rt.close_all()
    set_runtime(previous)
    channel_layers.backends.clear()


@pytest.fixture
def session_cookie():
    """The signed session cookie of a browser that opened lesson 2 (it holds the sandbox id)."""
    client = Client()
    response = client.get("/lessons/segments/")
    assert response.status_code == 200
    return response.cookies[django_settings.SESSION_COOKIE_NAME].value


@pytest.fixture
def ws_headers(session_cookie):
    return [(b"origin", ORIGIN), (b"cookie", f"{django_settings.SESSION_COOKIE_NAME}={session_cookie}".encode())]
