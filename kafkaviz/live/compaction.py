"""The ``compaction`` sandbox kind (lesson 6): the ``segments`` kind on a compacted topic
(``cleanup.policy=compact``), with keyed writes, tombstones and the engine's log cleaner
(``engine/log/cleaner.py``).

The cleaner runs as Kafka's cleaner thread does, every ``cleaner_backoff_ms`` of virtual time
(scenario key; Kafka's ``log.cleaner.backoff.ms`` is 15 s), and on demand (``clean``): it
checks the dirty ratio against ``min.cleanable.dirty.ratio``, builds the offset map, rewrites
segments through ``.cleaned`` and ``.swap`` files and moves the cleaner point. In step mode
each of those events is its own frame, so the partition directory shows the temporary files.

The state adds what the compaction diagram draws: every record of every segment (offset, key,
value or tombstone), the cleaner point and the dirty ratio now, and — kept by the command that
ran the pass, so stepping back rebuilds it — the segments as they were before the last pass
and the offset map it built.
"""
from __future__ import annotations

from typing import Any, ClassVar

from engine.log.cleaner import LogCleaner
from engine.records import SimpleRecord

from engine.storage_commands import Advance, Clean, Delete, Put

from .kinds import handles
from .segments import KEY_MAX, SegmentsSandbox
from .validation import CommandError

__all__ = ["CompactionSandbox"]

VALUE_MAX = 40
MAX_RECORDS_SHOWN = 120


def _text(b: bytes | None) -> str | None:
    return None if b is None else b.decode("utf-8", "replace")[:VALUE_MAX]


class CompactionSandbox(SegmentsSandbox):
    """One compacted partition and its cleaner."""

    name: ClassVar[str] = "compaction"

    def open(self) -> None:
        super().open()
        self.cleaner = LogCleaner(self.disk)
        self.cleaner.schedule(self.scheduler, self.logs, int(self.scenario.get("cleaner_backoff_ms", 15000)))
        self.before: list[dict[str, Any]] | None = None
        self.offset_map: list[list[Any]] = []
        self.last_pass: dict[str, Any] | None = None
        self.own = {"superseded": 0, "tombstones_removed": 0}   # by passes after the learner's own commands

    # ---- commands ----------------------------------------------------------------
    def _write(self, key: str, value: bytes | None) -> Any:
        if self.messages_sent + 1 > self.limits.max_messages:
            raise CommandError("quota", f"This sandbox takes at most {self.limits.max_messages} messages; press Reset "
                               "to start over.", "key", "put")
        self.scheduler.advance(self.ms_per_message)
        info = self.logs[0].append_as_leader([SimpleRecord(value=value, key=key.encode())], leader_epoch=0)
        self.messages_sent += 1
        return info

    @classmethod
    def narrow(cls, scenario: dict) -> dict[str, dict[str, dict[str, Any] | None]]:
        key = {"max_length": KEY_MAX, "pattern": r"[!-~]+", "pattern_help": "must be printable ASCII without spaces"}
        return {**super().narrow(scenario), "put": {"key": key, "value": {"max_length": VALUE_MAX}},
                "delete": {"key": key}}

    @handles(Put)
    def put(self, cmd: Put) -> str:
        key, value = cmd.key, cmd.value
        info = self._write(key, value.encode())
        return f"Wrote {key}={value} at offset {info.first_offset}."

    @handles(Delete)
    def delete(self, cmd: Delete) -> str:
        key = cmd.key
        info = self._write(key, None)
        return f"Wrote a tombstone for {key} at offset {info.first_offset}."

    @handles(Clean)
    def clean(self, cmd: Clean) -> str:
        log = self.logs[0]
        before = self._segments()
        seq = self.events.seq
        result = self.cleaner.run_once(self.logs, self.clock.now_ms())
        if result is None:
            check = next((e.event for e in reversed(self.events.envelopes)
                          if e.seq > seq and e.event.kind == "cleaner_check"), None)
            if check is None:
                return "Nothing to clean: there are no dirty bytes below the active segment."
            return (f"Not cleaned: dirty ratio {check.ratio:.2f} is not above min.cleanable.dirty.ratio "
                    f"{check.min_cleanable_ratio}.")
        self._remember(before, seq)
        return (f"Cleaned offsets {result.first_dirty_offset}–{result.end_offset}: "
                f"{result.records_before} → {result.records_after} records; the cleaner point is now "
                f"{self.cleaner.first_dirty_offset(log)}.")

    @handles(Advance)
    def advance(self, cmd: Advance) -> str:
        before = self._segments()
        seq = self.events.seq
        text = super().advance(cmd)
        self._remember(before, seq)
        return text

    def _remember(self, before: list[dict[str, Any]], seq: int) -> None:
        """If a cleaning pass ran since event ``seq``: keep the segments as they were and the
        offset map the pass built (from the engine's offset_map_filled events)."""
        new = [e for e in self.events.envelopes if e.seq > seq]
        finished = [e.event for e in new if e.event.kind == "cleaner_pass_finished"]
        if not finished:
            return
        self.before = before
        entries: dict[str, int] = {}
        for e in new:
            if e.event.kind == "offset_map_filled":
                for key, offset in e.event.keys:
                    entries[key] = offset
        self.offset_map = sorted(([k, o] for k, o in entries.items()), key=lambda kv: kv[1])
        if self.tracker.own:
            for e in new:
                if e.event.kind == "segments_cleaned":
                    self.own["superseded"] += e.event.superseded
                    self.own["tombstones_removed"] += e.event.tombstones_removed
        f = finished[-1]
        self.last_pass = {"first_dirty_offset": f.first_dirty_offset, "end_offset": f.end_offset,
                          "bytes_before": f.bytes_before, "bytes_after": f.bytes_after, "time_ms": self.clock.now_ms()}

    # ---- state ---------------------------------------------------------------------
    def _segments(self) -> list[dict[str, Any]]:
        log = self.logs[0]
        segs = log.segments
        out, shown = [], 0
        for i, seg in enumerate(segs):
            end = segs[i + 1].base_offset if i + 1 < len(segs) else log.log_end_offset
            records = []
            for batch in seg.batches() if seg.size else []:
                for r in batch.records:
                    if shown < MAX_RECORDS_SHOWN:
                        records.append([r.offset, _text(r.key), _text(r.value)])
                        shown += 1
            out.append({"base": seg.base_offset, "end": end, "size": seg.size, "active": i == len(segs) - 1,
                        "records": records})
        return out

    def _pass_running(self) -> list[list[Any]] | None:
        """While a pass is under way (a step-mode frame mid-pass): the offset map so far, from
        the engine's offset_map_filled events since the cleaner chose this log; else None."""
        keys: dict[str, int] = {}
        for env in reversed(self.events.envelopes):
            ev = env.event
            if ev.kind == "cleaner_pass_finished":
                return None
            if ev.kind == "offset_map_filled":
                for key, offset in reversed(ev.keys):      # newest first: the latest offset wins
                    keys.setdefault(key, offset)
            if ev.kind == "cleaner_check" and ev.chosen:
                return sorted(([k, o] for k, o in keys.items()), key=lambda kv: kv[1])
        return None

    def kind_state(self) -> dict[str, Any]:
        st = super().kind_state()
        running = self._pass_running()
        log = self.logs[0]
        now = self.clock.now_ms()
        ltc = self.cleaner.to_clean(log, now)
        st["compaction"] = {
            "cleaner_point": ltc.first_dirty_offset,
            "first_uncleanable_offset": ltc.first_uncleanable_offset,
            "clean_bytes": ltc.clean_bytes, "dirty_bytes": ltc.cleanable_bytes, "ratio": round(ltc.ratio, 4),
            "min_cleanable_dirty_ratio": log.config.min_cleanable_dirty_ratio,
            "delete_retention_ms": log.config.delete_retention_ms,
            "segments": self._segments(),
            "before": self.before,
            "offset_map": self.offset_map if running is None else running,
            "pass_running": running is not None,
            "last_pass": self.last_pass,
            "own": dict(self.own),
        }
        return st
