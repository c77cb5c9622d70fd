"""The storage lessons' sandbox kinds (lessons 1–7): each names its engine world
(``engine/storage_world.py``) and draws it. A kind here has no command handlers and no
run of its own: the commands are the engine's storage commands, run by the engine's
:class:`~engine.cluster.run.Run`; a kind's ``kind_state`` is a pure function of the run's
world, and ``narrow`` fits the forms to the world's shape.

* ``topic`` (lesson 1): a topic, the default partitioner, consumers A and B;
* ``segments`` (lesson 2): one topic's partitions as real logs;
* ``inside-segment`` (lessons 3, 4): lookups by offset and by time through the indexes;
* ``retention`` (lesson 5): retention checks, DeleteRecords, the size chart;
* ``compaction`` (lesson 6): the log cleaner on a compacted topic;
* ``page-cache`` (lesson 7): the page cache, flush, crash and recovery, zero copy.
"""
from __future__ import annotations

from typing import Any, ClassVar

from engine import narration
from engine.config import LONG_MAX
from engine.log.layout import segment_layout
from engine.log.log import Log
from engine.storage_world import (KEY_MAX, VALUE_MAX, CompactionWorld, InsideSegmentWorld, PageCacheWorld,
                                  RetentionWorld, SegmentsWorld, TopicWorld, max_value_size)

from .kinds import SandboxKind

__all__ = ["TopicSandbox", "SegmentsSandbox", "InsideSegmentSandbox", "RetentionSandbox", "CompactionSandbox",
           "PageCacheSandbox", "max_value_size"]

SHOWN_RECORDS = 60        # per partition / per consumer, newest kept in the frame
DEFAULT_INTERVALS = (64, 128, 256, 512, 1024, 4096)
MAX_SEGMENTS_SHOWN = 12
FLUSH_MESSAGES_CHOICES = (0, 1, 5, 10)     # 0 = Kafka's default (Long.MAX: never)
FLUSH_MS_CHOICES = (0, 1000, 5000)         # 0 = Kafka's default (never)


# ---- lesson 1 ----------------------------------------------------------------------------

class TopicSandbox(SandboxKind):
    name: ClassVar[str] = "topic"
    world = TopicWorld

    @classmethod
    def narrow(cls, scenario: dict) -> dict[str, dict[str, dict[str, Any] | None]]:
        return {"produce": {"partition": {"default": -1, "max": int(scenario.get("partitions", 3)) - 1},
                            "key": {"default": "user-1", "max_length": 24},
                            "key_mode": {"default": "none"}, "value_size": None}}   # values are order-N

    def kind_state(self) -> dict[str, Any]:
        return topic_view(self.run.world)


def _orders_differ(w: TopicWorld) -> bool:
    a, b = w.consumers["A"].received, w.consumers["B"].received
    if sorted(a) != sorted(b) or not a:
        return False
    parts = range(w.topic.partitions)
    per_partition_same = all([x for x in a if x[0] == p] == [x for x in b if x[0] == p] for p in parts)
    caught_up = all(c.positions[p] >= w.topic.logs[p].high_watermark for c in w.consumers.values() for p in parts)
    return caught_up and per_partition_same and [x[3] for x in a] != [x[3] for x in b]


def topic_view(w: TopicWorld) -> dict[str, Any]:
    counts: dict[str, set[int]] = {}
    n: dict[str, int] = {}
    parts = []
    for log in w.topic.logs:
        for r in log.records():
            if r.key is not None:
                k = r.key.decode("utf-8", "replace")
                counts.setdefault(k, set()).add(log.partition)
                n[k] = n.get(k, 0) + 1
        recs = log.records(max(log.log_start_offset, log.log_end_offset - SHOWN_RECORDS))
        parts.append({"partition": log.partition, "dir": log.name, "log_end_offset": log.log_end_offset,
                      "high_watermark": log.high_watermark,
                      "records": [[r.offset, r.key.decode("utf-8", "replace") if r.key is not None else None,
                                   (r.value or b"").decode("utf-8", "replace")] for r in recs]})
    consumers = [{"name": c.name, "assignment": c.assignment, "positions": {str(p): o for p, o in c.positions.items()},
                  "received": [list(x) for x in c.received[-SHOWN_RECORDS:]], "received_count": len(c.received)}
                 for c in w.consumers.values()]
    facts = {"max_same_key": max((n[k] for k in n if len(counts[k]) == 1), default=0),
             "orders_differ": _orders_differ(w)}
    pt = w.producer.partitioner
    return {"clock_ms": w.clock.now_ms(), "topic": w.topic.name, "messages_sent": w.messages_sent,
            "batch_size": w.producer.batch_size, "sticky_partition": pt.sticky, "sticky_bytes": pt.sticky_bytes,
            "partitions": parts, "consumers": consumers, "placements": w.placements,
            "orders_differ": facts["orders_differ"], "facts": facts}


# ---- lesson 2 and the kinds built on its world -------------------------------------------

class SegmentsSandbox(SandboxKind):
    name: ClassVar[str] = "segments"
    world = SegmentsWorld

    @classmethod
    def narrow(cls, scenario: dict) -> dict[str, dict[str, dict[str, Any] | None]]:
        return {"produce": {"partition": {"default": 0, "min": 0, "max": scenario.get("partitions", 1) - 1},
                            "value_size": {"max": max_value_size(scenario)},
                            "key": {"default": "", "max_length": KEY_MAX}, "key_mode": None}}

    def kind_state(self) -> dict[str, Any]:
        return segments_view(self.run.world, self.limits)


def segments_view(w: SegmentsWorld, limits: Any) -> dict[str, Any]:
    return {
        "clock_ms": w.clock.now_ms(), "topic": w.topic, "messages_sent": w.messages_sent,
        "disk_bytes": w.disk.usage_bytes(),
        "limits": {"max_messages": limits.max_messages, "max_disk_bytes": limits.max_disk_bytes},
        "next_task_ms": w.scheduler.next_due_ms(), "segment_bytes": w.config.segment_bytes,
        "index_bytes": w.config.segment_index_bytes, "partitions": [_partition(log) for log in w.logs],
    }


def _partition(log: Log) -> dict[str, Any]:
    return {"partition": log.partition, "dir": log.name, "log_start_offset": log.log_start_offset,
            "log_end_offset": log.log_end_offset, "high_watermark": log.high_watermark, "size_bytes": log.size_bytes,
            "active_segment": log.active_segment.base_offset, "segments": [seg.base_offset for seg in log.segments],
            "files": [{"name": f.name, "size": f.size, "kind": f.kind, "segment": f.segment, "deleted": f.deleted}
                      for f in log.files()]}


class InsideSegmentSandbox(SegmentsSandbox):
    name: ClassVar[str] = "inside-segment"
    world = InsideSegmentWorld

    @classmethod
    def narrow(cls, scenario: dict) -> dict[str, dict[str, dict[str, Any] | None]]:
        out = super().narrow(scenario)
        out["set_index_interval"] = {"bytes": {"choices": tuple(scenario.get("interval_choices")
                                                                or DEFAULT_INTERVALS)}}
        return out

    def kind_state(self) -> dict[str, Any]:
        return {**super().kind_state(), **inside_segment_view(self.run.world, self.lang)}


def inside_segment_view(w: InsideSegmentWorld, lang: str) -> dict[str, Any]:
    segs = w.plog.segments
    bases = [s.base_offset for s in segs]
    selected = w.selected if w.selected in bases else bases[-1]
    active = segs[-1].base_offset
    entries = {s.base_offset: set(s.offset_index.keys) for s in segs}
    by_offset = [lk for lk in w.lookups if lk["mode"] == "offset" and lk["segment"] is not None]
    by_time = [lk for lk in w.lookups if lk["mode"] == "timestamp"]
    facts = {
        "scan_past_entry": any(len(lk["scan"]) > 1 and lk["target"] not in entries.get(lk["segment"], ())
                               for lk in by_offset),
        "older_segment_lookup": any(lk["segment"] != active for lk in by_offset),
        "most_index_entries": max((len(v) for v in entries.values()), default=0),
        "time_between": any(lk["offset"] >= 0 and lk["time_probes"]
                            and all(p[3] != lk["target"] for p in lk["time_probes"]) for lk in by_time),
        "time_past_end": any(lk["offset"] == -1 and lk["segment"] is None for lk in by_time),
        "time_older_segment": any(lk["offset"] >= 0 and lk["segment"] != active for lk in by_time),
    }
    return {
        "segment_rows": [{"base": s.base_offset, "size": s.size, "entries": s.offset_index.entries,
                          "time_entries": s.time_index.entries, "largest_timestamp": s.max_timestamp_so_far,
                          "active": s is segs[-1]} for s in segs[-MAX_SEGMENTS_SHOWN:]],
        "selected": selected, "layout": segment_layout(segs[bases.index(selected)]),
        "index_interval_bytes": w.config.index_interval_bytes,
        "lookup": w.lookups[-1] if w.lookups else None,
        "lookup_steps": narration.lookup_steps(w.lookups[-1], lang) if w.lookups else [],
        "facts": facts,
    }


class RetentionSandbox(SegmentsSandbox):
    name: ClassVar[str] = "retention"
    world = RetentionWorld

    def kind_state(self) -> dict[str, Any]:
        w = self.run.world
        log, now = w.logs[0], w.clock.now_ms()
        segs = log.segments
        return {**super().kind_state(),
                "segment_rows": [{"base": s.base_offset, "end": segs[i + 1].base_offset if i + 1 < len(segs)
                                  else log.log_end_offset, "size": s.size, "active": i == len(segs) - 1,
                                  "largest_timestamp": s.largest_timestamp, "age_ms": now - s.largest_timestamp}
                                 for i, s in enumerate(segs)],
                "retention_bytes": w.config.retention_bytes, "retention_ms": w.config.retention_ms,
                "history": w.history}


class CompactionSandbox(SegmentsSandbox):
    name: ClassVar[str] = "compaction"
    world = CompactionWorld

    @classmethod
    def narrow(cls, scenario: dict) -> dict[str, dict[str, dict[str, Any] | None]]:
        key = {"max_length": KEY_MAX, "pattern": r"[!-~]+", "pattern_help": "must be printable ASCII without spaces"}
        return {**super().narrow(scenario), "put": {"key": key, "value": {"max_length": VALUE_MAX}},
                "delete": {"key": key}}

    def kind_state(self) -> dict[str, Any]:
        return {**super().kind_state(), "compaction": compaction_view(self.run.world)}


def _pass_running(w: CompactionWorld) -> list[list[Any]] | None:
    """While a pass is under way (a step-mode frame mid-pass): the offset map so far, from
    the engine's offset_map_filled events since the cleaner chose this log; else None."""
    keys: dict[str, int] = {}
    for env in reversed(w.events.envelopes):
        ev = env.event
        if ev.kind == "cleaner_pass_finished":
            return None
        if ev.kind == "offset_map_filled":
            for key, offset in reversed(ev.keys):      # newest first: the latest offset wins
                keys.setdefault(key, offset)
        if ev.kind == "cleaner_check" and ev.chosen:
            return sorted(([k, o] for k, o in keys.items()), key=lambda kv: kv[1])
    return None


def compaction_view(w: CompactionWorld) -> dict[str, Any]:
    running = _pass_running(w)
    log = w.logs[0]
    ltc = w.cleaner.to_clean(log, w.clock.now_ms())
    return {
        "cleaner_point": ltc.first_dirty_offset, "first_uncleanable_offset": ltc.first_uncleanable_offset,
        "clean_bytes": ltc.clean_bytes, "dirty_bytes": ltc.cleanable_bytes, "ratio": round(ltc.ratio, 4),
        "min_cleanable_dirty_ratio": log.config.min_cleanable_dirty_ratio,
        "delete_retention_ms": log.config.delete_retention_ms, "segments": w.segments(), "before": w.before,
        "offset_map": w.offset_map if running is None else running, "pass_running": running is not None,
        "last_pass": w.last_pass, "own": dict(w.own),
    }


# ---- lesson 7 ----------------------------------------------------------------------------

class PageCacheSandbox(SandboxKind):
    name: ClassVar[str] = "page-cache"
    world = PageCacheWorld

    @classmethod
    def narrow(cls, scenario: dict) -> dict[str, dict[str, dict[str, Any] | None]]:
        return {"produce": {"partition": None, "key": None, "key_mode": None},   # one partition, no keys
                "set_flush": {"flush_messages": {"choices": FLUSH_MESSAGES_CHOICES},
                              "flush_ms": {"choices": FLUSH_MS_CHOICES}}}

    def kind_state(self) -> dict[str, Any]:
        return page_cache_view(self.run.world)


def page_cache_view(w: PageCacheWorld) -> dict[str, Any]:
    b, config = w.broker, w.config
    log = b.log
    done = [c for c in w.crashes if c["leo_after"] is not None]
    facts = {"lost_acked": max((c.get("lost_records", 0) for c in done if c["power_loss"]), default=0),
             "kill_kept_all": any(not c["power_loss"] and c["acked_before"] > 0 and c.get("lost_records", 0) == 0
                                  for c in done)}
    batches = [] if log is None else [[pos, base, last, size] for i, (pos, base, last, _ts, size)
                                      in zip(range(100), log.active_segment.walk(0))]
    return {
        "clock_ms": w.clock.now_ms(), "topic": b.topic, "alive": b.alive, "incarnation": b.incarnation,
        "page_size": b.page_size,
        "flush_messages": None if config.flush_interval_messages == LONG_MAX else config.flush_interval_messages,
        "flush_ms": None if config.flush_interval_ms == LONG_MAX else config.flush_interval_ms,
        "log": None if log is None else {"log_end_offset": log.log_end_offset, "recovery_point": log.recovery_point,
                                         "high_watermark": log.high_watermark, "dir": log.name, "batches": batches},
        "acked": w.acked, "files": b.page_cache(), "crashes": w.crashes[-5:], "fetch": w.last_fetch, "facts": facts,
    }
