"""The ``inside-segment`` sandbox kind (lessons 3 and 4): one partition of the ``segments``
kind, small segments and a small ``index.interval.bytes``, so a few messages give a ``.log``
of several batches and a sparse ``.index`` / ``.timeindex`` pointing into it. A learner looks
up an offset (pick the segment by file name, binary-search the ``.index``, scan the ``.log``)
or a timestamp (the four steps); each lookup is one ``log_lookup`` event the diagram replays.

Scenario keys: those of ``segments`` (``topic``, ``ms_per_message``, ``config``, ...) and
``interval_choices`` (the ``index.interval.bytes`` values the page offers).

Everything the frame shows is derived in the command handlers from the engine (the
lookup's own event, the segment files), so replaying the steps rebuilds it exactly.
"""
from __future__ import annotations

from typing import Any, ClassVar

from engine import narration
from engine.log.layout import segment_layout

from engine.storage_commands import LookupOffset, LookupTime, SelectSegment, SetIndexInterval

from .kinds import handles
from .segments import SegmentsSandbox
from .validation import CommandError

__all__ = ["InsideSegmentSandbox", "DEFAULT_INTERVALS"]

DEFAULT_INTERVALS = (64, 128, 256, 512, 1024, 4096)
MAX_SEGMENTS_SHOWN = 12


class InsideSegmentSandbox(SegmentsSandbox):
    """One partition; lookups by offset and by timestamp, each replayed step by step."""

    name: ClassVar[str] = "inside-segment"

    def open(self) -> None:
        super().open()
        self.plog = self.logs[0]
        self.lookups: list[dict[str, Any]] = []
        self.selected: int | None = None

    @classmethod
    def narrow(cls, scenario: dict) -> dict[str, dict[str, dict[str, Any] | None]]:
        out = super().narrow(scenario)
        out["set_index_interval"] = {"bytes": {"choices": tuple(scenario.get("interval_choices")
                                                                or DEFAULT_INTERVALS)}}
        return out

    # ---- commands ----------------------------------------------------------
    @handles(LookupOffset)
    def lookup_offset(self, cmd: LookupOffset) -> str:
        offset = cmd.offset
        log = self.plog
        if not log.log_end_offset:
            raise CommandError("invalid", "The log is empty: produce some messages first.", "offset", "lookup_offset")
        if not log.log_start_offset <= offset < log.log_end_offset:
            raise CommandError("invalid", f"Offset {offset} is not in the log: it holds offsets "
                               f"{log.log_start_offset}–{log.log_end_offset - 1}.", "offset", "lookup_offset")
        data = log.read(offset, max_bytes=1)
        lk = self._take_lookup()
        return (f"Offset {offset} is in the batch at position {data.position} of {data.segment:020d}.log "
                f"({len(lk['probes'])} index probe(s), {len(lk['scan'])} batch(es) scanned).")

    @handles(LookupTime)
    def lookup_time(self, cmd: LookupTime) -> str:
        timestamp = cmd.timestamp
        if not self.plog.log_end_offset:
            raise CommandError("invalid", "The log is empty: produce some messages first.", "timestamp", "lookup_time")
        found = self.plog.offset_for_timestamp(timestamp)
        self._take_lookup()
        if found is None:
            return (f"No record has a timestamp >= {timestamp}: ListOffsets answers offset -1 "
                    "(a consumer resetting by time would go to the log end).")
        return f"The first record with timestamp >= {timestamp} is offset {found.offset} (timestamp {found.timestamp})."

    @handles(SetIndexInterval)
    def set_index_interval(self, cmd: SetIndexInterval) -> str:
        bytes = cmd.bytes  # noqa: A001 - the command's field name
        self.config = self.config.replace(index_interval_bytes=bytes)
        self.plog.update_config(self.config)
        return (f"index.interval.bytes is now {bytes}: from the next append, an .index entry is written once more "
                f"than {bytes} bytes went in since the last one. Existing entries stay.")

    @handles(SelectSegment)
    def select_segment(self, cmd: SelectSegment) -> str:
        segment = cmd.segment
        if segment not in [s.base_offset for s in self.plog.segments]:
            raise CommandError("invalid", f"There is no segment {segment}.", "segment", "select_segment")
        self.selected = segment
        return f"Showing segment {segment:020d}."

    def _take_lookup(self) -> dict[str, Any]:
        env = self.events.envelopes[-1]
        if env.event.kind != "log_lookup":      # the engine emits exactly one per traced lookup
            raise CommandError("internal", "The lookup left no trace.", None, "lookup")
        lk = env.to_dict()
        self.lookups = (self.lookups + [lk])[-20:]
        self.selected = lk["segment"]
        return lk

    # ---- state -------------------------------------------------------------
    def facts(self) -> dict[str, Any]:
        segs = self.plog.segments
        active = segs[-1].base_offset
        entries = {s.base_offset: set(s.offset_index.keys) for s in segs}
        by_offset = [lk for lk in self.lookups if lk["mode"] == "offset" and lk["segment"] is not None]
        by_time = [lk for lk in self.lookups if lk["mode"] == "timestamp"]
        return {
            "scan_past_entry": any(len(lk["scan"]) > 1 and lk["target"] not in entries.get(lk["segment"], ())
                                   for lk in by_offset),
            "older_segment_lookup": any(lk["segment"] != active for lk in by_offset),
            "most_index_entries": max((len(v) for v in entries.values()), default=0),
            "time_between": any(lk["offset"] >= 0 and lk["time_probes"]
                                and all(p[3] != lk["target"] for p in lk["time_probes"]) for lk in by_time),
            "time_past_end": any(lk["offset"] == -1 and lk["segment"] is None for lk in by_time),
            "time_older_segment": any(lk["offset"] >= 0 and lk["segment"] != active for lk in by_time),
        }

    def kind_state(self) -> dict[str, Any]:
        st = super().kind_state()
        segs = self.plog.segments
        bases = [s.base_offset for s in segs]
        selected = self.selected if self.selected in bases else bases[-1]
        st.update({
            "segment_rows": [{"base": s.base_offset, "size": s.size, "entries": s.offset_index.entries,
                              "time_entries": s.time_index.entries, "largest_timestamp": s.max_timestamp_so_far,
                              "active": s is segs[-1]} for s in segs[-MAX_SEGMENTS_SHOWN:]],
            "selected": selected,
            "layout": segment_layout(segs[bases.index(selected)]),
            "index_interval_bytes": self.config.index_interval_bytes,
            "lookup": self.lookups[-1] if self.lookups else None,
            "lookup_steps": narration.lookup_steps(self.lookups[-1], self.lang) if self.lookups else [],
            "facts": self.facts(),
        })
        return st
