"""The frame builder: engine events in, browser frames out.

The engine emits events synchronously, possibly thousands per command. Browsers get
*frames*: JSON dicts carrying the sandbox's whole current state plus the events since
the previous frame. Because each frame holds the whole state, a client that misses a
frame (a slow client, a full channel) is fully up to date with the next one, and the
runtime never keeps a growing backlog for anybody:

* **live mode** -- events are buffered and leave as one frame at most every
  ``interval_ms`` (the runtime schedules the flush); at most ``max_events`` events
  ride in one frame, older ones are counted in ``skipped`` (the timeline says so).
* **step mode** -- for lessons that walk through every step: each event gets its
  own frame with the state as it was right after that event.

Every frame and event is plain JSON data (ints, strings, lists, dicts), so it can
cross a Redis channel layer to consumers in other processes.
"""
from __future__ import annotations

from collections import deque
from typing import Any, Callable

from engine.events import Envelope
from engine.narration import describe  # re-exported: the timeline's words are the narration's

__all__ = ["FrameBuilder", "describe", "event_dict"]


def event_dict(env: Envelope, lang: str = "en") -> dict[str, Any]:
    """An envelope as the browser sees it: seq, time_ms, kind, the event's fields and text."""
    data = env.to_dict()
    data["text"] = describe(data, lang)
    return data


class FrameBuilder:
    """Buffers events of one sandbox and turns them into frames (see module doc).

    Not thread-safe by itself: the runtime calls it under the sandbox's lock."""

    def __init__(self, kind: str, max_events: int = 200, step_mode: bool = False, lang: str = "en") -> None:
        self.kind = kind
        self.lang = lang
        self.max_events = max_events
        self.step_mode = step_mode
        self.frame_seq = 0
        self.last_flush_s = float("-inf")
        self._pending: deque[dict[str, Any]] = deque(maxlen=max_events)
        self._steps: list[dict[str, Any]] = []    # step mode: frames, one per event
        self._skipped = 0
        self._reset = False

    # ---- input -----------------------------------------------------------
    def add(self, env: Envelope, state_fn: Callable[[], dict[str, Any]] | None = None) -> None:
        ev = event_dict(env, self.lang)
        if self.step_mode and state_fn is not None:
            self._steps.append({"events": [ev], "state": state_fn()})
            return
        if len(self._pending) == self._pending.maxlen:
            self._skipped += 1  # the deque drops the oldest; the state still covers it
        self._pending.append(ev)

    def cut(self, state: dict[str, Any]) -> None:
        """End a frame here: the events so far leave together with ``state``. A long
        clock jump cuts after each retention pass, so every phase (``.deleted``, then
        gone) reaches the diagram instead of folding into one frame."""
        if self._pending:
            self._steps.append({"events": list(self._pending), "state": state})
            self._pending.clear()

    def mark_reset(self) -> None:
        """The sandbox started over: the next frame tells clients to clear what they show."""
        self._pending.clear()
        self._steps.clear()
        self._skipped = 0
        self._reset = True

    @property
    def has_pending(self) -> bool:
        return bool(self._pending or self._steps or self._reset)

    # ---- output ----------------------------------------------------------
    def take(self, state: dict[str, Any], now_s: float) -> list[dict[str, Any]]:
        """Frames for everything buffered since the last call (possibly none)."""
        frames = [self._frame(step["events"], step["state"], 0, "step") for step in self._steps]
        self._steps.clear()
        if self._pending or self._skipped or self._reset:
            frames.append(self._frame(list(self._pending), state, self._skipped, "live"))
        self._pending.clear()
        self._skipped = 0
        self.last_flush_s = now_s
        return frames

    def snapshot(self, state: dict[str, Any], history: list[Envelope]) -> dict[str, Any]:
        """A frame for one client that just attached: the state and recent history."""
        events = [event_dict(env, self.lang) for env in history[-self.max_events:]]
        return {"type": "frame", "kind": self.kind, "frame_seq": self.frame_seq,
                "mode": "step" if self.step_mode else "live", "reset": False, "snapshot": True,
                "events": events, "skipped": 0, "state": state}

    def _frame(self, events: list[dict[str, Any]], state: dict[str, Any], skipped: int, mode: str,
               ) -> dict[str, Any]:
        self.frame_seq += 1
        frame = {
            "type": "frame",
            "kind": self.kind,
            "frame_seq": self.frame_seq,
            "mode": mode,
            "reset": self._reset,
            "snapshot": False,
            "events": events,
            "skipped": skipped,
            "state": state,
        }
        self._reset = False
        return frame
