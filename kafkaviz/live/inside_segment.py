"""Lessons 3 and 4's sandbox: inside one segment. One partition, small segments and a small
``index.interval.bytes``, so a few messages give a ``.log`` of several batches and a sparse
``.index`` / ``.timeindex`` pointing into it. Look up an offset (pick the segment by file
name, binary-search the ``.index``, scan the ``.log``) or a timestamp (the four steps: the
first segment whose largest timestamp is >= the target, binary-search the ``.timeindex``,
the ``.index``, scan); each lookup is one ``log_lookup`` event the diagram replays.
"""
from __future__ import annotations

from typing import Any

from engine.log.layout import segment_layout

from .kinds import register
from .single_log import SingleLogSandbox, advance_spec, produce_spec
from .validation import CommandError, CommandSpec, Field

__all__ = ["InsideSegmentSandbox", "INTERVAL_CHOICES"]

INTERVAL_CHOICES = (64, 128, 256, 512, 1024, 4096)
MAX_SEGMENTS_SHOWN = 12


@register
class InsideSegmentSandbox(SingleLogSandbox):
    name = "inside-segment"
    TOPIC = "clicks"
    LESSON_CONFIG = {
        "segment.bytes": 2400,
        "index.interval.bytes": 256,
        "segment.index.bytes": 1024,
        "retention.ms": -1,
        "log.retention.check.interval.ms": 300000,
    }
    commands = {
        "produce": produce_spec(600),
        "advance": advance_spec(),
        "lookup_offset": CommandSpec("lookup_offset", (
            Field("offset", "int", "Offset", required=True, min=0, max=10**12 - 1),
        ), handler="lookup_offset", help="Find the batch holding an offset, as a fetch does."),
        "lookup_time": CommandSpec("lookup_time", (
            Field("timestamp", "int", "Timestamp (ms)", required=True, min=0, max=10**12 - 1),
        ), handler="lookup_time", help="Find the first offset with a timestamp >= the target (ListOffsets)."),
        "set_index_interval": CommandSpec("set_index_interval", (
            Field("bytes", "int", "index.interval.bytes", required=True, choices=INTERVAL_CHOICES),
        ), handler="set_index_interval", help="Change how many bytes go between .index entries (new entries only)."),
        "select_segment": CommandSpec("select_segment", (
            Field("segment", "int", "Segment base offset", required=True, min=0, max=10**12 - 1),
        ), handler="select_segment", help="Show another segment in the diagram."),
    }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.last_lookup: dict[str, Any] | None = None
        self.lookups: list[dict[str, Any]] = []
        self.selected: int | None = None
        self.interval_changes = 0
        super().__init__(*args, **kwargs)

    def on_event(self, env) -> None:
        if env.event.kind == "log_lookup":
            d = env.event.to_dict()
            d["seq"] = env.seq
            self.last_lookup = d
            self.lookups = (self.lookups + [d])[-20:]
            self.selected = d["segment"]

    # ---- commands ----------------------------------------------------------
    def lookup_offset(self, offset: int) -> str:
        log = self.log
        if not log.log_start_offset <= offset < log.log_end_offset:
            raise CommandError("invalid", f"Offset {offset} is not in the log: it holds offsets "
                               f"{log.log_start_offset}–{log.log_end_offset - 1}" if log.log_end_offset
                               else "The log is empty: produce some messages first.", "offset", "lookup_offset")
        data = log.read(offset, max_bytes=1)
        lk = self.last_lookup or {}
        return (f"Offset {offset} is in the batch at position {data.position} of segment "
                f"{data.segment:020d}.log ({len(lk.get('probes', []))} index probe(s), "
                f"{len(lk.get('scan', []))} batch(es) scanned).")

    def lookup_time(self, timestamp: int) -> str:
        if not self.log.log_end_offset:
            raise CommandError("invalid", "The log is empty: produce some messages first.", "timestamp", "lookup_time")
        found = self.log.offset_for_timestamp(timestamp)
        if found is None:
            return (f"No record has a timestamp >= {timestamp}: ListOffsets answers offset -1 "
                    "(a consumer resetting by time would go to the log end).")
        return f"The first record with timestamp >= {timestamp} is offset {found.offset} (timestamp {found.timestamp})."

    def set_index_interval(self, bytes: int) -> str:  # noqa: A002 - the form field's name
        self.set_config(**{"index.interval.bytes": bytes})
        self.interval_changes += 1
        return (f"index.interval.bytes is now {bytes}: from the next append, an .index entry is written once more "
                f"than {bytes} bytes went in since the last one. Existing entries stay.")

    def select_segment(self, segment: int) -> str:
        if segment not in [s.base_offset for s in self.log.segments]:
            raise CommandError("invalid", f"There is no segment {segment}.", "segment", "select_segment")
        self.selected = segment
        return f"Showing segment {segment:020d}."

    # ---- state -------------------------------------------------------------
    def tasks(self) -> list[dict[str, Any]]:
        segs = self.log.segments
        active = self.log.active_segment.base_offset
        offset_lookups = [lk for lk in self.lookups if lk["mode"] == "offset" and lk["segment"] is not None]
        time_lookups = [lk for lk in self.lookups if lk["mode"] == "timestamp"]
        entries = {seg.base_offset: [k for k in seg.offset_index.keys] for seg in segs}

        def between(lk: dict) -> bool:
            tps = lk["time_probes"]
            return lk["offset"] >= 0 and bool(tps) and all(p[3] != lk["target"] for p in tps)

        return [
            {"id": "scan-past-entry", "lesson": 3,
             "text": "Look up an offset that has no .index entry of its own, so the scan walks more than one batch.",
             "done": any(len(lk["scan"]) > 1 and lk["target"] not in entries.get(lk["segment"], ()) for lk in offset_lookups)},
            {"id": "older-segment", "lesson": 3,
             "text": "Look up an offset in an older segment, not the active one.",
             "done": any(lk["segment"] != active for lk in offset_lookups)},
            {"id": "dense-index", "lesson": 3,
             "text": "Make one .index hold 8 entries or more (a smaller index.interval.bytes helps).",
             "done": any(len(v) >= 8 for v in entries.values()),
             "progress": f"most entries in one .index: {max((len(v) for v in entries.values()), default=0)}"},
            {"id": "time-between", "lesson": 4,
             "text": "Look up a timestamp that falls between two .timeindex entries.",
             "done": any(between(lk) for lk in time_lookups)},
            {"id": "time-past-end", "lesson": 4,
             "text": "Look up a timestamp later than every record: the answer is -1.",
             "done": any(lk["offset"] == -1 and lk["segment"] is None for lk in time_lookups)},
        ]

    def state(self) -> dict[str, Any]:
        segs = self.log.segments
        shown = segs[-MAX_SEGMENTS_SHOWN:]
        selected = self.selected if self.selected in [s.base_offset for s in segs] else segs[-1].base_offset
        seg_rows = [{"base": s.base_offset, "size": s.size, "entries": s.offset_index.entries,
                     "time_entries": s.time_index.entries, "largest_timestamp": s.max_timestamp_so_far,
                     "active": s is segs[-1]} for s in shown]
        layout = segment_layout(next(s for s in segs if s.base_offset == selected))
        return {**self.base_state(), "segment_rows": seg_rows, "selected": selected, "layout": layout,
                "index_interval_bytes": self.config.index_interval_bytes,
                "segment_bytes": self.config.segment_bytes,
                "lookup": self.last_lookup, "tasks": self.tasks()}
