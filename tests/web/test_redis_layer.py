"""Frames are plain data that cross a Redis channel layer: a runtime publishing with
one RedisChannelLayer reaches a watcher on another layer instance (as a consumer in
another ASGI process would be). Needs the ``redis-server`` binary (``make test``
installs it)."""
from __future__ import annotations

import asyncio
import json
import shutil
import socket
import subprocess
import time

import pytest
from channels_redis.core import RedisChannelLayer
from django.conf import settings as django_settings

from kafkaviz.live.runtime import Runtime, group_name, new_sandbox_id

REDIS = shutil.which("redis-server")
pytestmark = pytest.mark.skipif(REDIS is None, reason="redis-server is not installed (make test installs it)")


@pytest.fixture
def redis_url(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([REDIS, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                             "--dir", str(tmp_path)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "redis-server did not start"
                time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.mark.asyncio
async def test_frames_reach_a_watcher_on_another_redis_layer(tmp_path, redis_url):
    owner_layer = RedisChannelLayer(hosts=[redis_url])
    watcher_layer = RedisChannelLayer(hosts=[redis_url])
    sid = new_sandbox_id()
    watcher = await watcher_layer.new_channel()
    await watcher_layer.group_add(group_name(sid), watcher)
    rt = Runtime(tmp_path / "data", settings={**django_settings.KAFKAVIZ_RUNTIME, "FRAME_INTERVAL_MS": 0, "REAP_EVERY_SECONDS": 0},
                 publish=owner_layer.group_send)
    try:
        await rt.attach(sid, "segments")
        await rt.command(sid, {"cmd": "produce", "count": "6", "partition": "0"})
        message = await watcher_layer.receive(watcher)
        assert message["type"] == "websocket.send"      # the ASGI event, handed on as it is
        frame = json.loads(message["text"])
        kinds = [e["kind"] for e in frame["events"]]
        assert "batch_appended" in kinds and "segment_rolled" in kinds
        assert frame["full"] and frame["state"]["partitions"][0]["log_end_offset"] == 6
    finally:
        rt.close_all()
        await owner_layer.flush()
        await owner_layer.close_pools()
        await watcher_layer.close_pools()


@pytest.mark.slow
@pytest.mark.asyncio
async def test_an_idle_socket_outlives_the_layers_blocking_read(redis_url):
    """A watcher with nothing to receive for longer than channels-redis's 5 s blocking read
    keeps waiting (redis-py 8 raised "Timeout reading" here and killed every idle socket)."""
    layer = RedisChannelLayer(hosts=[redis_url])
    channel = await layer.new_channel()
    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(layer.receive(channel), 7)
    await layer.send(channel, {"type": "still.here"})
    assert (await layer.receive(channel))["type"] == "still.here"
