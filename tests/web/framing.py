"""The client side of the frame protocol for tests: frames carry a whole state or a diff
against the last whole state (docs/web.md, "Frame shape"); :class:`StateTracker` fills
in ``state`` on every frame, as static/js/live.js does in the browser."""
from __future__ import annotations

import json
from typing import Any

from channels.testing import WebsocketCommunicator

from kafkaviz.live.frames import apply_state_diff


class StateTracker:
    def __init__(self) -> None:
        self.base: dict[str, Any] | None = None
        self.base_seq: int | None = None
        self.seq = -1

    def __call__(self, msg: dict[str, Any]) -> dict[str, Any]:
        if msg.get("type") != "frame":
            return msg
        if not msg.get("snapshot") and msg["frame_seq"] <= self.seq:
            msg["stale"] = True         # the snapshot already covered it (live.js drops it too)
            return msg
        if msg.get("full", True):
            self.base, self.base_seq = msg["state"], msg["frame_seq"]
        else:
            assert msg["base"] == self.base_seq, f"diff against frame {msg['base']}, client holds {self.base_seq}"
            msg["state"] = apply_state_diff(self.base, msg["diff"])
        self.seq = msg["frame_seq"]
        return msg

    def message(self, message: dict[str, Any]) -> dict[str, Any]:
        """A group message as the runtime publishes it → the frame with its state."""
        return self(json.loads(message["text"]))


class TrackedCommunicator(WebsocketCommunicator):
    """A WebsocketCommunicator whose JSON frames always carry ``state``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.tracker = StateTracker()

    async def receive_json_from(self, timeout: float = 1) -> Any:
        return self.tracker(await super().receive_json_from(timeout))
