"""The frame builder: engine events in, browser frames out.

The engine emits events synchronously, possibly thousands per command. Browsers get
*frames*: JSON dicts carrying the sandbox's current state -- whole, or as a diff
against the last whole state sent -- plus the events since the previous frame. A diff
never depends on the frame before it, only on the last whole state, and a whole state
goes out every few frames, so a client that misses a frame (a slow client, a full
channel) is right again with the next one it can apply; the runtime never keeps a
growing backlog for anybody:

* **live mode** -- events are buffered and leave as one frame per flush; at most
  ``max_events`` events ride in one frame, older ones are counted in ``skipped`` (the
  timeline says so). The builder paces them (:meth:`FrameBuilder.delay`): the first
  frame after a quiet spell (nothing sent for ``interval_s``) leaves at once, so a click
  never waits for a timer; frames of a burst leave at most one per ``interval_s``
  (whatever happens in between leaves as one frame when the runtime's timer fires).
* **step mode** -- for lessons that walk through every step: each event gets its
  own frame with the state as it was right after that event (at most ``max_events``
  such frames per flush; the rest are counted in ``skipped``).

Every frame and event is plain JSON data (ints, strings, lists, dicts); the runtime
serialises each frame once and every watcher, in any process, gets the same text.
"""
from __future__ import annotations

import json
import secrets
from collections import deque
from typing import Any, Callable

from engine.events import Envelope
from engine.narration import describe  # re-exported: the timeline's words are the narration's

__all__ = ["FrameBuilder", "describe", "event_dict", "state_diff", "apply_state_diff", "frame_text"]


def frame_text(frame: dict[str, Any]) -> str:
    """A frame as the JSON text every watcher receives (compact; serialised once)."""
    return json.dumps(frame, separators=(",", ":"), ensure_ascii=False)


def event_dict(env: Envelope, lang: str = "en") -> dict[str, Any]:
    """An envelope as the browser sees it: seq, time_ms, kind, the event's fields and text."""
    data = env.to_dict()
    data["text"] = describe(data, lang)
    return data


def state_diff(old: Any, new: Any) -> dict[str, Any] | None:
    """What turns ``old`` into ``new`` (plain JSON data), or None if they are equal.

    Objects: ``{"s": {key: value set or replaced}, "p": {key: nested diff}, "d": [keys
    removed]}``; arrays: ``{"n": new length, "s": {"index": value}, "p": {"index": nested
    diff}}``; empty parts are left out. A nested diff is used where both sides are
    objects (or both arrays); anything else is replaced whole. docs/web.md shows it.
    (Equality is Python's below the top level of a value: a nested ``1`` turning into
    ``true`` is not seen; states keep one type per field.)"""
    if old == new:
        return None
    if isinstance(old, dict) and isinstance(new, dict):
        pairs = [(key, key in old, old.get(key), value) for key, value in new.items()]
        out: dict[str, Any] = {}
    elif isinstance(old, list) and isinstance(new, list):
        pairs = [(str(i), i < len(old), old[i] if i < len(old) else None, value) for i, value in enumerate(new)]
        out = {"n": len(new)}
    else:
        raise TypeError("state_diff compares two objects or two arrays")
    sets: dict[str, Any] = {}
    subs: dict[str, Any] = {}
    for key, had, before, value in pairs:
        if had and before == value and type(before) is type(value):
            continue
        if had and isinstance(before, (dict, list)) and type(before) is type(value):
            subs[key] = state_diff(before, value)
        else:
            sets[key] = value
    if sets:
        out["s"] = sets
    if subs:
        out["p"] = subs
    if isinstance(old, dict):
        gone = [key for key in old if key not in new]
        if gone:
            out["d"] = gone
    return out


def apply_state_diff(value: Any, diff: dict[str, Any] | None) -> Any:
    """``new`` from ``old`` and ``state_diff(old, new)`` (a new value; ``old`` is untouched).
    static/js/live.js does the same in the browser."""
    if diff is None:
        return value
    if isinstance(value, dict):
        out = {key: item for key, item in value.items() if key not in diff.get("d", ())}
        out.update(diff.get("s", {}))
        for key, sub in diff.get("p", {}).items():
            out[key] = apply_state_diff(out[key], sub)
        return out
    n = diff["n"]
    items = list(value[:n]) + [None] * (n - len(value))
    for key, item in diff.get("s", {}).items():
        items[int(key)] = item
    for key, sub in diff.get("p", {}).items():
        items[int(key)] = apply_state_diff(items[int(key)], sub)
    return items


def _plain_copy(value: Any) -> Any:
    """A deep copy of plain JSON data (dicts, lists, scalars), faster than copy.deepcopy."""
    if isinstance(value, dict):
        return {k: _plain_copy(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain_copy(v) for v in value]
    return value


class FrameBuilder:
    """Buffers events of one sandbox and turns them into frames (see module doc).

    A frame carries either the whole state (``"full": true``, ``"state"``) or a diff
    against the last whole state it sent (``"base"``: that frame's ``frame_seq``,
    ``"diff"``). Whole states go out on a reset, after a watcher attached (so the
    newcomer has the base the next diffs refer to), and every ``full_every`` frames,
    so a client that missed one is repaired soon without asking.

    Not thread-safe by itself: the runtime calls it under the sandbox's lock."""

    def __init__(self, kind: str, max_events: int = 200, step_mode: bool = False, full_every: int = 20,
                 lang: str = "en", gen: str | None = None, interval_s: float = 0.0) -> None:
        self.kind = kind
        # The generation: which build of this sandbox numbers these frames. A sandbox rebuilt
        # elsewhere (its owner process died, docs/web.md "Failover") counts frame_seq from 1
        # again under a new generation; a page that sees a new one takes its whole state
        # instead of dropping frames numbered below the last it saw.
        self.gen = gen or secrets.token_hex(4)
        self.lang = lang
        self.max_events = max_events
        self.step_mode = step_mode
        self.full_every = max(1, full_every)
        self.frame_seq = 0
        self.interval_s = max(0.0, interval_s)
        self.last_sent = float("-inf")
        # The sandbox's state now; in step mode each event is framed with it (the runtime
        # sets it once the engine is built: events of building it carry no state).
        self.state_fn: Callable[[], dict[str, Any]] | None = None
        # Envelopes, made into the browser's dicts (with their sentence) only when a frame takes
        # them: a burst that overflows the bounded buffer never narrates what it drops.
        self._pending: deque[Envelope] = deque(maxlen=max_events)
        # Step mode: one frame per event, bounded like the live buffer.
        self._steps: deque[dict[str, Any]] = deque(maxlen=max_events)
        self._skipped = 0
        self._reset = False
        self._base: dict[str, Any] | None = None
        self._base_seq = 0
        self._force_full = True
        self._touched = False

    # ---- input -----------------------------------------------------------
    def add(self, env: Envelope, state_fn: Callable[[], dict[str, Any]] | None = None) -> None:
        """The engine's listener: one event (``state_fn``: the state right after it, in
        step mode; the builder's own ``state_fn`` when none is given)."""
        state_fn = state_fn or self.state_fn
        if self.step_mode and state_fn is not None:
            if len(self._steps) == self._steps.maxlen:
                self._skipped += 1
            self._steps.append({"events": [env], "state": state_fn()})
            return
        if len(self._pending) == self._pending.maxlen:
            self._skipped += 1  # the deque drops the oldest; the state still covers it
        self._pending.append(env)

    def cut(self, state: dict[str, Any]) -> None:
        """End a frame here: the events so far leave together with ``state``. A long
        clock jump cuts after each retention pass, so every phase (``.deleted``, then
        gone) reaches the diagram instead of folding into one frame."""
        if self._pending:
            self._steps.append({"events": list(self._pending), "state": state})
            self._pending.clear()

    def touch(self) -> None:
        """The state changed without an engine event (a view choice such as the partition a
        diagram shows): the next flush sends a frame all the same."""
        self._touched = True

    def forget_pending(self) -> None:
        """What is buffered is already history every watcher gets in its snapshot (a new
        sandbox's opening, before anybody watches it): drop it, so step 1's frame carries
        step 1's events only -- as it does when Back then Step redoes it."""
        self._pending.clear()
        self._steps.clear()
        self._skipped = 0

    def mark_reset(self) -> None:
        """The sandbox started over: the next frame tells clients to clear what they show."""
        self._pending.clear()
        self._steps.clear()
        self._skipped = 0
        self._reset = True

    @property
    def has_pending(self) -> bool:
        return bool(self._pending or self._steps or self._reset or self._skipped or self._touched)

    # ---- output ----------------------------------------------------------
    def delay(self, now_s: float) -> float:
        """Seconds to wait before the next frame may leave (0: now)."""
        return max(0.0, self.last_sent + self.interval_s - now_s)

    def texts(self, state: dict[str, Any] | Callable[[], dict[str, Any]], now_s: float,
              *, as_text: bool = True) -> list[Any]:
        """The frames of everything buffered since the last call, as the JSON texts every
        watcher gets (``as_text=False``: the frame dicts). None when nothing is pending:
        then ``state`` (a dict, or a function giving it) is not even built."""
        if not self.has_pending:
            return []
        self.last_sent = now_s
        parts = [(step["events"], step["state"], "step") for step in self._steps]
        if self._pending or self._reset or ((self._skipped or self._touched) and not parts):
            parts.append((list(self._pending), state() if callable(state) else state, "live"))
        self._steps.clear()
        self._pending.clear()
        self._touched = False
        frames = []
        for envelopes, st, mode in parts:
            self.frame_seq += 1
            frame: dict[str, Any] = {
                "type": "frame", "kind": self.kind, "gen": self.gen, "frame_seq": self.frame_seq, "mode": mode,
                "reset": self._reset, "snapshot": False, "events": [event_dict(env, self.lang) for env in envelopes],
                # Events dropped from a bounded buffer are counted on the first frame.
                "skipped": self._skipped,
            }
            self._skipped = 0
            if (self._reset or self._force_full or self._base is None
                    or self.frame_seq - self._base_seq >= self.full_every):
                frame["full"] = True
                frame["state"] = st
                # The base is kept as a private copy: a kind's state may share mutable parts with
                # the kind (a dict it keeps updating), and a diff against a base that changed in
                # place would miss exactly those changes. Once per whole state, not per frame.
                self._base, self._base_seq, self._force_full = _plain_copy(st), self.frame_seq, False
            else:
                frame["full"] = False
                frame["base"] = self._base_seq
                frame["diff"] = state_diff(self._base, st) or {}
            self._reset = False
            frames.append(frame_text(frame) if as_text else frame)
        return frames

    def snapshot(self, state: dict[str, Any], history: list[Envelope]) -> dict[str, Any]:
        """A frame for one client that just attached: the whole state and recent history.
        The next frame to the group is whole too, so the newcomer can apply what follows."""
        self._force_full = True
        events = [event_dict(env, self.lang) for env in history[-self.max_events:]]
        return {"type": "frame", "kind": self.kind, "gen": self.gen, "frame_seq": self.frame_seq,
                "mode": "step" if self.step_mode else "live", "reset": False, "snapshot": True,
                "events": events, "skipped": 0, "full": True, "state": state}
