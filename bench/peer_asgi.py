"""The ASGI app ``bench_frames.py`` starts daphne with: kafkaviz's own application plus
one extra WebSocket route, the *peer*: a bare Channels group send.

``/ws/bench-peer/`` joins a group of its own. The client first sends ``{"frame": ...}``
(a real frame it received from the lesson socket); every later message is a "click":
the consumer ``group_send``s that frame (with the click's number) and relays what the
group delivers, exactly as the lesson consumer relays frames. So the peer does the
socket, the channel layer and the JSON work of a frame, and none of the engine's.
Only ever loaded by the benchmark; the app's routing does not know it.
"""
from __future__ import annotations

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kafkaviz.settings")

from kafkaviz.asgi import application as kafkaviz_app  # noqa: E402  (sets Django up)

from channels.generic.websocket import AsyncJsonWebsocketConsumer  # noqa: E402


class PeerConsumer(AsyncJsonWebsocketConsumer):
    frame: dict | None = None

    async def connect(self) -> None:
        self.group = f"peer.{self.channel_name.replace('!', '.')}"[:90]
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()

    async def disconnect(self, code: int) -> None:
        await self.channel_layer.group_discard(self.group, self.channel_name)

    async def receive_json(self, content, **kwargs) -> None:
        if "frame" in content:
            self.frame = content["frame"]
            return
        frame = dict(self.frame or {}, click=content.get("click"))
        await self.channel_layer.group_send(self.group, {"type": "sandbox.frame", "frame": frame})

    async def sandbox_frame(self, message) -> None:
        await self.send_json(message["frame"])


_peer = PeerConsumer.as_asgi()


async def application(scope, receive, send):
    if scope["type"] == "websocket" and scope["path"] == "/ws/bench-peer/":
        return await _peer(scope, receive, send)
    return await kafkaviz_app(scope, receive, send)
