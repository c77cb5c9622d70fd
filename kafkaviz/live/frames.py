"""The frame builder: engine events in, browser frames out.

The engine emits events synchronously, possibly thousands per command. Browsers get
*frames*: JSON dicts carrying the sandbox's current state -- whole, or as a diff
against the last whole state sent -- plus the events since the previous frame. A diff
never depends on the frame before it, only on the last whole state, and a whole state
goes out every few frames, so a client that misses a frame (a slow client, a full
channel) is right again with the next one it can apply; the runtime never keeps a
growing backlog for anybody:

* **live mode** -- events are buffered and leave as one frame per flush (the runtime
  paces flushes, ``pacing.FramePacer``); at most ``max_events`` events ride in one
  frame, older ones are counted in ``skipped`` (the timeline says so).
* **step mode** -- for lessons that walk through every step: each event gets its
  own frame with the state as it was right after that event (at most ``max_events``
  such frames per flush; the rest are counted in ``skipped``).

Every frame and event is plain JSON data (ints, strings, lists, dicts); the runtime
serialises each frame once and every watcher, in any process, gets the same text.
"""
from __future__ import annotations

from collections import deque
from typing import Any, Callable

from engine.events import Envelope

__all__ = ["FrameBuilder", "describe", "event_dict", "state_diff", "apply_state_diff"]


def _seg(base: Any) -> str:
    return f"{base:020d}" if isinstance(base, int) else "?"


def _where(ev: dict[str, Any]) -> str:
    p = ev.get("partition")
    where = f"partition {p}" if p is not None else ev.get("topic", "")
    # Storage events of a replicated cluster name their broker (lesson 2's have none).
    return f"broker {ev['broker']}, {where}" if isinstance(ev.get("broker"), int) else where


def _time(ms: int) -> str:
    return f"{ms / 1000:.1f} s"


def describe(ev: dict[str, Any]) -> str:
    """One readable sentence for an event dict (the timeline; also the accessible
    alternative to the diagrams). Unknown kinds fall back to their fields."""
    k = ev.get("kind")
    w = _where(ev)
    if k == "batch_appended":
        offs = (f"offset {ev['first_offset']}" if ev["first_offset"] == ev["last_offset"]
                else f"offsets {ev['first_offset']}–{ev['last_offset']}")
        return (f"{w}: appended a batch of {ev['records']} record(s), {offs}, {ev['size_bytes']} bytes "
                f"at byte {ev['position']} of {_seg(ev['segment'])}.log")
    if k == "index_entry_written":
        if ev.get("index") == "time":
            return (f"{w}: time index entry {ev['entries']} in {_seg(ev['segment'])}.timeindex: "
                    f"timestamp {ev['timestamp']} → offset {ev['offset']}")
        return (f"{w}: offset index entry {ev['entries']} in {_seg(ev['segment'])}.index: "
                f"offset {ev['offset']} → byte {ev['position']}")
    if k == "segment_created":
        return f"{w}: created segment {_seg(ev['segment'])} ({', '.join(ev.get('files') or [])})"
    if k == "segment_rolled":
        detail = f" — {ev['detail']}" if ev.get("detail") else ""
        return (f"{w}: rolled a new segment {_seg(ev['new_segment'])}.log "
                f"(reason: {ev['reason']}){detail}")
    if k == "index_trimmed":
        return (f"{w}: trimmed {_seg(ev['segment'])} {ev['index']} index to {ev['entries']} entries "
                f"({ev['from_bytes']} → {ev['to_bytes']} bytes)")
    if k == "retention_check":
        return f"{w}: {_retention_text(ev)}"
    if k == "segment_deleted":
        return (f"{w}: segment {_seg(ev['segment'])} renamed to .deleted ({ev['reason']}); "
                f"files removed after {_time(ev['delete_after_ms'])}")
    if k == "file_deleted":
        return f"{w}: file {ev['file']} removed from disk"
    if k == "log_start_offset_changed":
        return f"{w}: log start offset {ev['old']} → {ev['new']} ({ev['reason']})"
    if k == "leader_epoch_assigned":
        return f"{w}: leader epoch {ev['epoch']} starts at offset {ev['start_offset']} (leader-epoch-checkpoint)"
    if k == "log_flushed":
        return f"{w}: flushed (fsync) up to offset {ev['up_to_offset']}"
    if k == "recovery_started":
        return f"{w}: opening the log, recovery from offset {ev['recovery_point']}"
    if k == "recovery_finished":
        return (f"{w}: log open — start offset {ev['log_start_offset']}, end offset {ev['log_end_offset']}, "
                f"{len(ev.get('segments') or [])} segment(s)")
    if k == "epoch_cache_truncated":
        side = "start" if ev.get("direction") == "start" else "end"
        return (f"{w}: leader-epoch cache truncated at the {side} (offset {ev['offset']}); "
                f"entries now {ev.get('entries')}")
    if k == "recovery_truncated":
        return (f"{w}: recovery cut {_seg(ev['segment'])}.log from {ev['from_bytes']} to {ev['to_bytes']} bytes "
                f"({ev['reason']})")
    if k == "index_rebuilt":
        return f"{w}: rebuilt the {ev['index']} index of {_seg(ev['segment'])} ({ev['entries']} entries; {ev['reason']})"
    if k == "leftover_removed":
        return f"{w}: removed leftover file {ev['file']} while opening the log"
    if k == "log_truncated":
        return f"{w}: log truncated from offset {ev['from_offset']} to {ev['to_offset']} ({ev['reason']})"
    if k == "log_closed":
        return f"{w}: log closed at end offset {ev['log_end_offset']}"
    cluster_text = _cluster_text(ev)
    if cluster_text is not None:
        return cluster_text
    fields = ", ".join(f"{key}={value}" for key, value in ev.items()
                       if key not in ("kind", "seq", "time_ms", "broker", "topic", "partition"))
    return f"{w}: {str(k).replace('_', ' ')} {fields}".rstrip()


def _retention_text(ev: dict[str, Any]) -> str:
    verdict = "delete" if ev.get("deletable") else "keep"
    if ev.get("blocked_by"):
        why = {"high_watermark": "not all of it is below the high watermark",
               "empty_active": "it is the empty active segment"}.get(ev["blocked_by"], ev["blocked_by"])
        verdict = f"keep ({why})"
    seg = ev.get("segment")
    rule, threshold, value = ev.get("rule"), ev.get("threshold"), ev.get("value")
    if rule == "size":
        if seg is None:
            return f"retention by size: partition holds {value} bytes, under retention.bytes={threshold} → nothing to delete"
        return (f"retention by size: segment {_seg(seg)} ({threshold} bytes) against {value} bytes over "
                f"retention.bytes → {verdict}")
    if rule == "time":
        return (f"retention by time: segment {_seg(seg)}'s newest record is {_time(value)} old, "
                f"retention.ms is {_time(threshold)} → {verdict}")
    if rule == "log_start_offset":
        return (f"retention by log start offset: segment {_seg(seg)} ends before offset {value}, "
                f"log start offset is {threshold} → {verdict}")
    return f"retention ({rule}): segment {_seg(seg)}, value {value}, limit {threshold} → {verdict}"


def event_dict(env: Envelope) -> dict[str, Any]:
    """An envelope as the browser sees it: seq, time_ms, kind, the event's fields and text."""
    data = env.to_dict()
    data["text"] = describe(data)
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
        out: dict[str, Any] = {}
        sets: dict[str, Any] = {}
        subs: dict[str, Any] = {}
        for key, value in new.items():
            if key not in old:
                sets[key] = value
                continue
            before = old[key]
            if before == value and type(before) is type(value):
                continue
            if isinstance(before, (dict, list)) and type(before) is type(value):
                subs[key] = state_diff(before, value)
            else:
                sets[key] = value
        gone = [key for key in old if key not in new]
        if sets:
            out["s"] = sets
        if subs:
            out["p"] = subs
        if gone:
            out["d"] = gone
        return out
    if isinstance(old, list) and isinstance(new, list):
        out = {"n": len(new)}
        sets, subs = {}, {}
        for i, value in enumerate(new):
            if i >= len(old):
                sets[str(i)] = value
                continue
            before = old[i]
            if before == value and type(before) is type(value):
                continue
            if isinstance(before, (dict, list)) and type(before) is type(value):
                subs[str(i)] = state_diff(before, value)
            else:
                sets[str(i)] = value
        if sets:
            out["s"] = sets
        if subs:
            out["p"] = subs
        return out
    raise TypeError("state_diff compares two objects or two arrays")


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


class FrameBuilder:
    """Buffers events of one sandbox and turns them into frames (see module doc).

    A frame carries either the whole state (``"full": true``, ``"state"``) or a diff
    against the last whole state it sent (``"base"``: that frame's ``frame_seq``,
    ``"diff"``). Whole states go out on a reset, after a watcher attached (so the
    newcomer has the base the next diffs refer to), and every ``full_every`` frames,
    so a client that missed one is repaired soon without asking.

    Not thread-safe by itself: the runtime calls it under the sandbox's lock."""

    def __init__(self, kind: str, max_events: int = 200, step_mode: bool = False, full_every: int = 20) -> None:
        self.kind = kind
        self.max_events = max_events
        self.step_mode = step_mode
        self.full_every = max(1, full_every)
        self.frame_seq = 0
        self.last_flush_s = float("-inf")
        self._pending: deque[dict[str, Any]] = deque(maxlen=max_events)
        # Step mode: one frame per event, bounded like the live buffer.
        self._steps: deque[dict[str, Any]] = deque(maxlen=max_events)
        self._skipped = 0
        self._reset = False
        self._base: dict[str, Any] | None = None
        self._base_seq = 0
        self._force_full = True

    # ---- input -----------------------------------------------------------
    def add(self, env: Envelope, state_fn: Callable[[], dict[str, Any]] | None = None) -> None:
        ev = event_dict(env)
        if self.step_mode and state_fn is not None:
            if len(self._steps) == self._steps.maxlen:
                self._skipped += 1
            self._steps.append({"events": [ev], "state": state_fn()})
            return
        if len(self._pending) == self._pending.maxlen:
            self._skipped += 1  # the deque drops the oldest; the state still covers it
        self._pending.append(ev)

    def mark_reset(self) -> None:
        """The sandbox started over: the next frame tells clients to clear what they show."""
        self._pending.clear()
        self._steps.clear()
        self._skipped = 0
        self._reset = True

    @property
    def has_pending(self) -> bool:
        return bool(self._pending or self._steps or self._reset or self._skipped)

    # ---- output ----------------------------------------------------------
    def take(self, state: dict[str, Any], now_s: float) -> list[dict[str, Any]]:
        """Frames for everything buffered since the last call (possibly none)."""
        frames = []
        steps = list(self._steps)
        self._steps.clear()
        for i, step in enumerate(steps):
            # Steps dropped from the bounded buffer are counted on the first one kept.
            frames.append(self._frame(step["events"], step["state"], self._skipped if i == 0 else 0, "step"))
        if steps:
            self._skipped = 0
        if self._pending or self._skipped or self._reset:
            frames.append(self._frame(list(self._pending), state, self._skipped, "live"))
        self._pending.clear()
        self._skipped = 0
        self.last_flush_s = now_s
        return frames

    def snapshot(self, state: dict[str, Any], history: list[Envelope]) -> dict[str, Any]:
        """A frame for one client that just attached: the whole state and recent history.
        The next frame to the group is whole too, so the newcomer can apply what follows."""
        self._force_full = True
        events = [event_dict(env) for env in history[-self.max_events:]]
        return {"type": "frame", "kind": self.kind, "frame_seq": self.frame_seq,
                "mode": "step" if self.step_mode else "live", "reset": False, "snapshot": True,
                "events": events, "skipped": 0, "full": True, "state": state}

    def _frame(self, events: list[dict[str, Any]], state: dict[str, Any], skipped: int, mode: str,
               ) -> dict[str, Any]:
        self.frame_seq += 1
        frame: dict[str, Any] = {
            "type": "frame",
            "kind": self.kind,
            "frame_seq": self.frame_seq,
            "mode": mode,
            "reset": self._reset,
            "snapshot": False,
            "events": events,
            "skipped": skipped,
        }
        if (self._reset or self._force_full or self._base is None
                or self.frame_seq - self._base_seq >= self.full_every):
            frame["full"] = True
            frame["state"] = state
            self._base, self._base_seq, self._force_full = state, self.frame_seq, False
        else:
            frame["full"] = False
            frame["base"] = self._base_seq
            frame["diff"] = state_diff(self._base, state) or {}
        self._reset = False
        return frame


# ---- replicated-cluster events (engine/cluster/events.py, checker.py; lesson 10) --------------

def _b(n: Any) -> str:
    return "the client" if n == -1 else f"broker {n}"


def _tp(ev: dict[str, Any]) -> str:
    return f"{ev.get('topic')}-{ev.get('partition')}"


def _cluster_text(ev: dict[str, Any]) -> str | None:
    """Sentences for the cluster's events; None for kinds this does not know."""
    k = ev.get("kind")
    fn = _CLUSTER_TEXT.get(k)
    if fn is None:
        return None
    try:
        return fn(ev)
    except (KeyError, TypeError, ValueError):
        return None  # a field renamed in the engine: fall back to the generic text


def _truncated(ev: dict[str, Any]) -> str:
    why = {"hw": "to its high watermark (the pre-0.11 rule)",
           "epoch": "to the point where its log diverges from the leader's (leader epoch)",
           "out_of_range": "because the leader's log ends before its fetch offset",
           "log_start": "because the leader's log starts after its fetch offset"}.get(ev["reason"], ev["reason"])
    cut = ev["from_offset"] - ev["to_offset"]
    detail = f" — {ev['detail']}" if ev.get("detail") else ""
    return (f"broker {ev['broker']} truncated {_tp(ev)} from offset {ev['from_offset']} to {ev['to_offset']} "
            f"({cut} record(s) cut) {why}{detail}")


_CLUSTER_TEXT: dict[str, Callable[[dict[str, Any]], str]] = {
    "broker_started": lambda e: (f"broker {e['broker']} started" + (" again" if e["restart"] else "")
                                 + (" after a clean shutdown" if e["clean_shutdown"] else "")),
    "broker_crashed": lambda e: (f"broker {e['broker']} crashed" + (" (power loss: un-fsynced bytes lost"
                                 f" in {len(e.get('lost_files') or [])} file(s))" if e["power_loss"] else "")),
    "broker_shutdown": lambda e: f"broker {e['broker']} shut down cleanly",
    "logs_loaded": lambda e: f"broker {e['broker']} opened its logs: " + "; ".join(
        f"{x['topic']}-{x['partition']} LEO {x['leo']}, HW {x['high_watermark']}" for x in e["logs"]),
    "broker_registered": lambda e: (f"controller {e['controller']} registered broker {e['broker']} "
                                    f"(broker epoch {e['broker_epoch']})"),
    "broker_fenced": lambda e: f"controller {e['controller']} fenced broker {e['broker']} ({e['reason'].replace('_', ' ')})",
    "controller_changed": lambda e: (f"broker {e['new']} is the active controller (controller epoch "
                                     f"{e['controller_epoch']}, {e['reason'].replace('_', ' ')})"),
    "topic_created": lambda e: (f"topic {e['topic']} created: " + "; ".join(
        f"partition {p} on brokers {', '.join(map(str, r))}" for p, r in sorted(e["assignment"].items()))),
    "leader_elected": lambda e: (f"controller elected broker {e['chosen']} leader of {_tp(e)} at leader epoch "
                                 f"{e['leader_epoch']} ({e['rule']}); ISR {e['isr']}"),
    "partition_offline": lambda e: f"{_tp(e)} is offline: no replica may lead ({e['reason']})",
    "isr_shrunk": lambda e: f"ISR of {_tp(e)} shrank to {e['isr']} (removed {e['removed']}: {e['reason']})",
    "isr_expanded": lambda e: f"ISR of {_tp(e)} grew to {e['isr']} (added {e['added']})",
    "alter_partition_sent": lambda e: f"broker {e['broker']} asked the controller to set the ISR of {_tp(e)} to {e['proposed_isr']}",
    "alter_partition_rejected": lambda e: f"controller refused broker {e['broker']}'s ISR change ({e['reason']})",
    "became_leader": lambda e: (f"broker {e['broker']} leads {_tp(e)} at epoch {e['leader_epoch']} "
                                f"(LEO {e['leo']}, HW {e['high_watermark']}); epoch cache gets ({e['leader_epoch']}, {e['leo']})"),
    "became_follower": lambda e: (f"broker {e['broker']} follows broker {e['leader']} for {_tp(e)} at epoch "
                                  f"{e['leader_epoch']} (LEO {e['leo']}, HW {e['high_watermark']}); "
                                  + ("it truncates to its high watermark first" if e["truncation"] == "hw"
                                     else "it asks the leader where its epoch ends first")),
    "fetch_sent": lambda e: f"broker {e['broker']} → broker {e['leader']}: Fetch {_tp(e)} from offset {e['fetch_offset']}",
    "fetch_parked": lambda e: (f"broker {e['broker']} parked broker {e['follower']}'s fetch at offset "
                               f"{e['fetch_offset']} (nothing new; waits up to {e['max_wait_ms']} ms)"),
    "fetch_answered": lambda e: (f"broker {e['broker']} → broker {e['follower']}: "
                                 + (f"error {e['error']}" if e["error"] else
                                    (f"records {e['first_offset']}–{e['last_offset']}" if e["records"] else "no records"))
                                 + f", HW {e['high_watermark']}, leader LEO {e['leader_leo']}"),
    "fetch_received": lambda e: (f"broker {e['broker']} took the fetch response: {e['records']} record(s), "
                                 f"leader HW {e['leader_high_watermark']}" + (f", error {e['error']}" if e["error"] else "")),
    "remote_leo_updated": lambda e: f"broker {e['broker']} notes broker {e['follower']}'s LEO {e['old']} → {e['new']}",
    "leo_changed": lambda e: f"broker {e['broker']} ({e['role']}) LEO {e['old']} → {e['new']} ({e['reason']})",
    "high_watermark_changed": lambda e: f"broker {e['broker']} ({e['role']}) HW {e['old']} → {e['new']} ({e['reason'].replace('_', ' ')})",
    "epoch_request_sent": lambda e: (f"broker {e['broker']} → broker {e['leader']}: OffsetsForLeaderEpoch — "
                                     f"where does epoch {e['epoch']} end?"),
    "epoch_request_answered": lambda e: (f"broker {e['broker']} → broker {e['follower']}: epoch "
                                         f"{e['requested_epoch']} ends at offset {e['end_offset']}"
                                         + (f" (answered for epoch {e['epoch']})" if e["epoch"] != e["requested_epoch"] else "")),
    "replica_truncated": _truncated,
    "produce_received": lambda e: f"broker {e['broker']} got produce request {e['request_id']} ({e['records']} record(s), acks={e['acks']})",
    "produce_appended": lambda e: (f"broker {e['broker']} appended request {e['request_id']} at offset(s) "
                                   f"{e['base_offset']}–{e['last_offset']}, epoch {e['leader_epoch']}"),
    "produce_waiting": lambda e: f"request {e['request_id']} waits until the HW passes offset {e['required_offset'] - 1}",
    "produce_acked": lambda e: (f"the client was told request {e['request_id']} succeeded"
                                + (f" (offset {e['base_offset']})" if e["base_offset"] is not None else "")),
    "produce_failed": lambda e: f"request {e['request_id']} failed: {e['error']}",
    "consumer_read": lambda e: (f"a consumer read {e['records']} record(s) of {_tp(e)} from offset {e['offset']} "
                                f"(HW {e['high_watermark']})"),
    "checkpoint_written": lambda e: f"broker {e['broker']} wrote {e['file']}",
    "link_changed": lambda e: f"link {_b(e['a'])} {'↔' if e['both'] else '→'} {_b(e['b'])}: {e['state']}",
    "message_dropped": lambda e: f"{e['api']} from {_b(e['src'])} to {_b(e['dst'])} dropped ({e['reason'].replace('_', ' ')})",
    "config_changed": lambda e: f"config of {e['scope']} {e['target']} changed: " + ", ".join(
        f"{key}={value}" for key, value in e["changes"].items()),
    "check_acked_record_lost": lambda e: (f"CHECKER: acknowledged record {e.get('value') or e['digest']} at offset "
                                          f"{e['offset']} is not in the leader's log — lost"),
    "check_replicas_diverged": lambda e: (f"CHECKER: brokers {', '.join(map(str, e['brokers']))} hold different "
                                          f"records at offset {e['offset']} — diverged"),
    "check_hw_regressed": lambda e: f"CHECKER: broker {e['broker']}'s HW went back {e['old']} → {e['new']}",
    "check_uncommitted_read": lambda e: f"CHECKER: a consumer read an uncommitted record at offset {e['offset']}",
    "run_moved": lambda e: (f"rewound to step {e['step']} (snapshot restored: the engine is as it was after that step)"
                            if e["how"] == "back" else f"the run is at step {e['step']}"),
}
