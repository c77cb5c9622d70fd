"""One-broker storage worlds: what lessons 1–7 play with, as engine objects a
:class:`~engine.cluster.run.Run` drives like a cluster.

A world is built from a lesson's scenario (plain data: topic, partitions, config by
Kafka name, ...) on a :class:`~engine.disk.Disk`, with the run's event log and a
scheduler on its clock. It applies the storage commands of
:mod:`engine.storage_commands`: :meth:`StorageWorld.check` refuses what cannot be done
(before anything changes), :meth:`StorageWorld.apply` does it and returns a result:
plain data and ``say``, the sentence for whoever sent it as an English template and its
parameters (a web page translates the template). Because the world is pickled whole
into the run's checkpoints, seek, redo, fork, export and import come from the run; a
world keeps on itself everything its diagrams derive from commands (the last lookup, the
crashes, the cleaner's last pass), so a restored checkpoint shows what the learner saw.

Worlds are found by class, never by name: a lesson's sandbox kind names the class.
"""
from __future__ import annotations

import random
from typing import Any, Callable, ClassVar, Mapping

from .clock import Scheduler
from .config import LONG_MAX, LogConfig
from .disk import Disk
from .errors import InvalidRequestError
from .events import EventLog
from .log.cleaner import LogCleaner
from .log.log import Log
from .page_cache import StandaloneBroker
from .records import SimpleRecord
from .records.batch import BATCH_OVERHEAD
from .storage_commands import (Advance, Clean, Crash, Delete, DeleteRecords, Fetch, Flush, LookupOffset, LookupTime,
                               Poll, Produce, Put, Restart, Rewind, SelectSegment, SetFlush, SetIndexInterval,
                               SetRetention, StorageCommand, Writeback, parse_storage_command)
from .topic import Producer, SimpleConsumer, Topic

__all__ = ["StorageWorld", "SegmentsWorld", "RetentionWorld", "InsideSegmentWorld", "CompactionWorld",
           "PageCacheWorld", "TopicWorld", "max_value_size", "KEY_MAX", "refuse"]

KEY_MAX = 40
_RECORD_OVERHEAD = 16   # a one-record batch's record framing: length, attributes, deltas, key/value lengths, headers


def refuse(message: str, field: str | None = None) -> InvalidRequestError:
    """An InvalidRequestError naming the command field it is about (forms mark it)."""
    exc = InvalidRequestError(message)
    exc.field = field
    return exc


def max_value_size(scenario: Mapping[str, Any]) -> int:
    """The largest value one message may carry so that its batch fits in a segment."""
    config = LogConfig().replace(**dict(scenario.get("config") or {}))
    return max(1, min(config.segment_bytes, config.max_message_bytes) - BATCH_OVERHEAD - KEY_MAX - _RECORD_OVERHEAD)


def handles(*command_classes: type[StorageCommand]) -> Callable[[Callable], Callable]:
    """Mark a world's method as the runner of storage command classes."""

    def wrap(fn: Callable) -> Callable:
        fn._handles = command_classes
        return fn

    return wrap


class StorageWorld:
    """Base of the storage worlds: the disk, the run's events, a scheduler on its clock,
    the scenario, and a table command class → method built from :func:`handles`."""

    _runners: ClassVar[dict[type, str]] = {}
    allocate: ClassVar[bool] = False      # preallocate index files (the disk quota counts them)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        runners = dict(cls._runners)
        for name, attr in vars(cls).items():
            for command_cls in getattr(attr, "_handles", ()):
                runners[command_cls] = name
        cls._runners = runners

    def __init__(self, disk_root: str, seed: int, events: EventLog, scenario: Mapping[str, Any], *,
                 os_fsync: bool = False) -> None:
        self.seed = seed
        self.scenario = dict(scenario)
        self.events = events
        self.clock = events.clock
        self.scheduler = Scheduler(self.clock)
        self.disk = Disk(disk_root, allocate=self.allocate, os_fsync=os_fsync)
        self.messages_sent = 0
        self.learner = False     # set by the sandbox: the commands now are the learner's own
        self.cut: Callable[[], None] | None = None   # a frame ends here (not part of a checkpoint)
        self.open()

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["cut"] = None
        return state

    def open(self) -> None:
        raise NotImplementedError

    # ---- the run's rules ------------------------------------------------------------
    parse = staticmethod(parse_storage_command)

    @classmethod
    def commands(cls) -> tuple[type[StorageCommand], ...]:
        return tuple(cls._runners)

    def check(self, cmd: StorageCommand) -> None:
        """Refuse (InvalidRequestError naming the field) a command this world cannot run
        now; nothing has changed when it raises."""
        if type(cmd) not in self._runners:
            raise refuse(f"{cmd.cmd}: not a command of this lesson")
        checker = getattr(self, f"check_{cmd.cmd}", None)
        if checker is not None:
            checker(cmd)

    def apply(self, cmd: StorageCommand) -> dict[str, Any]:
        return getattr(self, self._runners[type(cmd)])(cmd)

    def now_ms(self) -> int:
        return self.clock.now_ms()

    def state(self) -> dict[str, Any]:
        """What the world is, as plain data (for a run's state digest)."""
        return {"time_ms": self.clock.now_ms(), "messages_sent": self.messages_sent,
                "files": sorted((rel, img.size) for rel, img in self.disk.capture().items())}

    def close(self) -> None:
        self.disk.close_all()

    def _cut(self) -> None:
        if self.cut is not None:
            self.cut()


def _say(text: str, **params: Any) -> dict[str, Any]:
    """A result's sentence: an English template and its parameters (a parameter may be a
    ``[template, params]`` pair of its own), translated by whoever shows it."""
    return {"say": [text, params]}


class SegmentsWorld(StorageWorld):
    """The partitions of one topic on one broker, each a real :class:`Log`, RF 1.
    Scenario: ``topic``, ``partitions``, ``ms_per_message``, ``config`` (Kafka names)."""

    allocate = True

    def open(self) -> None:
        sc = self.scenario
        self.topic = sc.get("topic", "orders")
        self.ms_per_message = sc.get("ms_per_message", 100)
        self.config = LogConfig().replace(**dict(sc.get("config") or {}))
        self.logs = [Log(self.disk, f"{self.topic}-{p}", self.topic, p, self.config, self.scheduler, self.events,
                         hw_follows_leo=True) for p in range(sc.get("partitions", 1))]

    def close(self) -> None:
        for log in getattr(self, "logs", []):
            try:
                log.close()
            except Exception:  # noqa: BLE001 - a world being discarded
                pass
        super().close()

    def check_produce(self, cmd: Produce) -> None:
        partition = 0 if cmd.partition is None or cmd.partition < 0 else cmd.partition
        if partition >= len(self.logs):
            raise refuse(f"Partition {partition} does not exist: the topic has {len(self.logs)}.", "partition")

    @handles(Produce)
    def produce(self, cmd: Produce) -> dict[str, Any]:
        key = cmd.key or ""
        partition = 0 if cmd.partition is None or cmd.partition < 0 else cmd.partition
        log = self.logs[partition]
        first = last = None
        for _i in range(cmd.count):
            self.scheduler.advance(self.ms_per_message)
            value = f"message-{self.messages_sent:06d}|".ljust(cmd.value_size, ".")[:cmd.value_size].encode()
            info = log.append_as_leader([SimpleRecord(value=value, key=key.encode() if key else None)],
                                        leader_epoch=0)
            self.messages_sent += 1
            first = info.first_offset if first is None else first
            last = info.last_offset
        where = ["offset %(a)s", {"a": first}] if first == last else ["offsets %(a)s–%(b)s", {"a": first, "b": last}]
        return _say("Sent %(n)s message(s) to partition %(p)s: %(where)s.", n=cmd.count, p=partition, where=where)

    @handles(Advance)
    def advance(self, cmd: Advance) -> dict[str, Any]:
        # One due task at a time, a frame after each: a long jump shows every phase
        # (renamed to .deleted, then removed) rather than only the end.
        target = self.clock.now_ms() + cmd.ms
        ran = 0
        while True:
            due = self.scheduler.next_due_ms()
            if due is None or due > target:
                break
            ran += self.scheduler.advance(due - self.clock.now_ms())
            self._cut()
        ran += self.scheduler.advance(target - self.clock.now_ms())
        return _say("Clock moved %(s)s s to %(t).1f s; %(n)s scheduled task(s) ran.", s=f"{cmd.ms / 1000:g}",
                    t=self.clock.now_ms() / 1000, n=ran)


MAX_HISTORY = 600     # retention chart samples kept; older ones are thinned


class RetentionWorld(SegmentsWorld):
    """Segments plus DeleteRecords, retention settings and a sampled size history
    (``sample_ms`` of virtual time, and after every command) for the chart."""

    def open(self) -> None:
        super().open()
        self.history: list[list[int]] = []
        self._sample()
        self.scheduler.schedule_periodic(int(self.scenario.get("sample_ms", 500)), self._sample,
                                         name="retention-chart-sample")

    def _sample(self) -> None:
        log = self.logs[0]
        point = [self.clock.now_ms(), log.size_bytes, self.disk.usage_bytes(log.dir)]
        h = self.history
        if h and h[-1][0] == point[0]:
            h[-1] = point
        else:
            h.append(point)
        if len(h) > MAX_HISTORY:
            half = len(h) // 2
            self.history = h[:half:2] + h[half:]

    def apply(self, cmd: StorageCommand) -> dict[str, Any]:
        result = super().apply(cmd)
        self._sample()
        return result

    def check_delete_records(self, cmd: DeleteRecords) -> None:
        log = self.logs[0]
        if cmd.offset != -1 and cmd.offset < log.log_start_offset:
            raise refuse(f"The log already starts at offset {log.log_start_offset}; DeleteRecords only moves the "
                         "log start offset forward.", "offset")
        if cmd.offset > log.high_watermark:
            raise refuse(f"Offset {cmd.offset} is past the high watermark {log.high_watermark}: DeleteRecords cannot "
                         "delete records that do not exist yet.", "offset")

    @handles(DeleteRecords)
    def delete_records(self, cmd: DeleteRecords) -> dict[str, Any]:
        log = self.logs[0]
        before = log.log_start_offset
        new = log.delete_records(cmd.offset)
        return _say("Log start offset %(a)s → %(b)s. Records below %(b)s can no longer be read; the segments wholly "
                    "below it go at the next retention check.", a=before, b=new)

    @handles(SetRetention)
    def set_retention(self, cmd: SetRetention) -> dict[str, Any]:
        self.config = self.config.replace(retention_bytes=cmd.retention_bytes, retention_ms=cmd.retention_ms)
        for log in self.logs:
            log.update_config(self.config)
        return _say("retention.bytes=%(b)s, retention.ms=%(ms)s; the next retention check (every %(s)s s) applies "
                    "them.", b=cmd.retention_bytes, ms=cmd.retention_ms,
                    s=f"{self.config.log_retention_check_interval_ms / 1000:g}")


class InsideSegmentWorld(SegmentsWorld):
    """One partition with small segments and a small index interval: lookups by offset
    and by timestamp, each one ``log_lookup`` event kept for the diagram."""

    def open(self) -> None:
        super().open()
        self.plog = self.logs[0]
        self.lookups: list[dict[str, Any]] = []
        self.selected: int | None = None

    def check_lookup_offset(self, cmd: LookupOffset) -> None:
        log = self.plog
        if not log.log_end_offset:
            raise refuse("The log is empty: produce some messages first.", "offset")
        if not log.log_start_offset <= cmd.offset < log.log_end_offset:
            raise refuse(f"Offset {cmd.offset} is not in the log: it holds offsets "
                         f"{log.log_start_offset}–{log.log_end_offset - 1}.", "offset")

    def check_lookup_time(self, cmd: LookupTime) -> None:
        if not self.plog.log_end_offset:
            raise refuse("The log is empty: produce some messages first.", "timestamp")

    def check_select_segment(self, cmd: SelectSegment) -> None:
        if cmd.segment not in [s.base_offset for s in self.plog.segments]:
            raise refuse(f"There is no segment {cmd.segment}.", "segment")

    @handles(LookupOffset)
    def lookup_offset(self, cmd: LookupOffset) -> dict[str, Any]:
        data = self.plog.read(cmd.offset, max_bytes=1)
        lk = self._take_lookup()
        return _say("Offset %(o)s is in the batch at position %(pos)s of %(file)s (%(p)s index probe(s), %(s)s "
                    "batch(es) scanned).", o=cmd.offset, pos=data.position, file=f"{data.segment:020d}.log",
                    p=len(lk["probes"]), s=len(lk["scan"]))

    @handles(LookupTime)
    def lookup_time(self, cmd: LookupTime) -> dict[str, Any]:
        found = self.plog.offset_for_timestamp(cmd.timestamp)
        self._take_lookup()
        if found is None:
            return _say("No record has a timestamp >= %(t)s: ListOffsets answers offset -1 (a consumer resetting by "
                        "time would go to the log end).", t=cmd.timestamp)
        return _say("The first record with timestamp >= %(t)s is offset %(o)s (timestamp %(ts)s).",
                    t=cmd.timestamp, o=found.offset, ts=found.timestamp)

    @handles(SetIndexInterval)
    def set_index_interval(self, cmd: SetIndexInterval) -> dict[str, Any]:
        self.config = self.config.replace(index_interval_bytes=cmd.bytes)
        self.plog.update_config(self.config)
        return _say("index.interval.bytes is now %(b)s: from the next append, an .index entry is written once more "
                    "than %(b)s bytes went in since the last one. Existing entries stay.", b=cmd.bytes)

    @handles(SelectSegment)
    def select_segment(self, cmd: SelectSegment) -> dict[str, Any]:
        self.selected = cmd.segment
        return _say("Showing segment %(s)s.", s=f"{cmd.segment:020d}")

    def _take_lookup(self) -> dict[str, Any]:
        env = self.events.envelopes[-1]
        if env.event.kind != "log_lookup":      # the engine emits exactly one per traced lookup
            raise InvalidRequestError("the lookup left no trace")
        lk = env.to_dict()
        self.lookups = (self.lookups + [lk])[-20:]
        self.selected = lk["segment"]
        return lk


VALUE_MAX = 40
MAX_RECORDS_SHOWN = 120


def _text(b: bytes | None) -> str | None:
    return None if b is None else b.decode("utf-8", "replace")[:VALUE_MAX]


class CompactionWorld(SegmentsWorld):
    """One compacted partition and its log cleaner (every ``cleaner_backoff_ms``, and on
    ``clean``); keeps the segments before the last pass and the offset map it built."""

    def open(self) -> None:
        super().open()
        self.cleaner = LogCleaner(self.disk)
        self.cleaner.schedule(self.scheduler, self.logs, int(self.scenario.get("cleaner_backoff_ms", 15000)))
        self.before: list[dict[str, Any]] | None = None
        self.offset_map: list[list[Any]] = []
        self.last_pass: dict[str, Any] | None = None
        self.own = {"superseded": 0, "tombstones_removed": 0}   # by passes after the learner's own commands

    def _write(self, key: str, value: bytes | None) -> Any:
        self.scheduler.advance(self.ms_per_message)
        info = self.logs[0].append_as_leader([SimpleRecord(value=value, key=key.encode())], leader_epoch=0)
        self.messages_sent += 1
        return info

    @handles(Put)
    def put(self, cmd: Put) -> dict[str, Any]:
        info = self._write(cmd.key, cmd.value.encode())
        return _say("Wrote %(k)s=%(v)s at offset %(o)s.", k=cmd.key, v=cmd.value, o=info.first_offset)

    @handles(Delete)
    def delete(self, cmd: Delete) -> dict[str, Any]:
        info = self._write(cmd.key, None)
        return _say("Wrote a tombstone for %(k)s at offset %(o)s.", k=cmd.key, o=info.first_offset)

    @handles(Clean)
    def clean(self, cmd: Clean) -> dict[str, Any]:
        before = self.segments()
        seq = self.events.seq
        result = self.cleaner.run_once(self.logs, self.clock.now_ms())
        if result is None:
            check = next((e.event for e in reversed(self.events.envelopes)
                          if e.seq > seq and e.event.kind == "cleaner_check"), None)
            if check is None:
                return _say("Nothing to clean: there are no dirty bytes below the active segment.")
            return _say("Not cleaned: dirty ratio %(r)s is not above min.cleanable.dirty.ratio %(m)s.",
                        r=f"{check.ratio:.2f}", m=check.min_cleanable_ratio)
        self._remember(before, seq)
        return _say("Cleaned offsets %(a)s–%(b)s: %(n)s → %(m)s records; the cleaner point is now %(c)s.",
                    a=result.first_dirty_offset, b=result.end_offset, n=result.records_before,
                    m=result.records_after, c=self.cleaner.first_dirty_offset(self.logs[0]))

    @handles(Advance)
    def advance(self, cmd: Advance) -> dict[str, Any]:
        before = self.segments()
        seq = self.events.seq
        result = super().advance(cmd)
        self._remember(before, seq)
        return result

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
        if self.learner:
            for e in new:
                if e.event.kind == "segments_cleaned":
                    self.own["superseded"] += e.event.superseded
                    self.own["tombstones_removed"] += e.event.tombstones_removed
        f = finished[-1]
        self.last_pass = {"first_dirty_offset": f.first_dirty_offset, "end_offset": f.end_offset,
                          "bytes_before": f.bytes_before, "bytes_after": f.bytes_after, "time_ms": self.clock.now_ms()}

    def segments(self) -> list[dict[str, Any]]:
        """Every segment with its records (offset, key, value or None for a tombstone)."""
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


MS_PER_MESSAGE = 100


class PageCacheWorld(StorageWorld):
    """One broker, one partition (:class:`StandaloneBroker`): the page cache, flush,
    writeback, crash with or without power loss, recovery, and a zero-copy fetch.
    Scenario: ``topic``, ``page_size``, ``config``."""

    def open(self) -> None:
        sc = self.scenario
        self.config = LogConfig().replace(**dict(sc.get("config") or {}))
        self.acked = 0
        self.crashes: list[dict[str, Any]] = []
        self.last_fetch: dict[str, Any] | None = None
        self.broker = StandaloneBroker(self.disk, sc.get("topic", "payments"), self.config, self.scheduler,
                                       self.events, page_size=int(sc.get("page_size", 4096)))

    def close(self) -> None:
        try:
            self.broker.close()
        except Exception:  # noqa: BLE001 - a world being discarded
            pass
        super().close()

    def check(self, cmd: StorageCommand) -> None:
        super().check(cmd)
        if not isinstance(cmd, (Advance, Restart, SetFlush, Crash)) and not self.broker.alive:
            raise refuse("The broker is down: press Restart first.")
        if isinstance(cmd, Crash) and not self.broker.alive:
            raise refuse("The broker is down: press Restart first.")

    def check_produce(self, cmd: Produce) -> None:
        if cmd.value_size + 80 > self.config.segment_bytes:
            raise refuse(f"A value must fit one segment (segment.bytes={self.config.segment_bytes}).", "value_size")

    def check_restart(self, cmd: Restart) -> None:
        if self.broker.alive:
            raise refuse("The broker is running.")

    def check_fetch(self, cmd: Fetch) -> None:
        end = self.broker.log.log_end_offset
        if cmd.offset >= end:
            raise refuse(f"Offset {cmd.offset} is past the log end ({end}).", "offset")

    @handles(Produce)
    def produce(self, cmd: Produce) -> dict[str, Any]:
        first = None
        for _ in range(cmd.count):
            self.scheduler.advance(MS_PER_MESSAGE)
            log = self.broker.log
            n = self.messages_sent
            info = log.append_as_leader([SimpleRecord(value=f"pay-{n:04d}|".ljust(cmd.value_size, ".").encode())],
                                        leader_epoch=0)
            first = info.first_offset if first is None else first
            self.messages_sent += 1
            self.acked = log.log_end_offset
        return _say("Appended and acknowledged offsets %(a)s–%(b)s (acks=1: in the page cache, not yet on disk).",
                    a=first, b=self.broker.log.log_end_offset - 1)

    @handles(Advance)
    def advance(self, cmd: Advance) -> dict[str, Any]:
        ran = self.scheduler.advance(cmd.ms)
        return _say("Clock moved %(s)s s; %(n)s scheduled task(s) ran.", s=f"{cmd.ms / 1000:g}", n=ran)

    @handles(Flush)
    def flush(self, cmd: Flush) -> dict[str, Any]:
        self.broker.flush()
        return _say("fsync done: everything below offset %(o)s is on disk.", o=self.broker.log.recovery_point)

    @handles(Writeback)
    def writeback(self, cmd: Writeback) -> dict[str, Any]:
        moved = self.broker.writeback()
        if not moved:
            return _say("No whole dirty page to write back.")
        return _say("The kernel wrote back %(what)s.", what=", ".join(f"{m['file']} up to byte {m['to']}"
                                                                      for m in moved))

    @handles(Crash)
    def crash(self, cmd: Crash) -> dict[str, Any]:
        leo = self.broker.log.log_end_offset
        lost_files = self.broker.crash(cmd.power_loss)
        self.crashes.append({"time_ms": self.clock.now_ms(), "power_loss": cmd.power_loss, "leo_before": leo,
                             "acked_before": self.acked, "lost_files": lost_files, "leo_after": None})
        lost = ", ".join(f"{f['file']} {f['size_before']} → {f['size_after']} B" for f in lost_files) or "no bytes lost"
        if cmd.power_loss:
            return _say("Power lost: %(lost)s. Restart the broker to run recovery.", lost=lost)
        return _say("Process killed (page cache kept): %(lost)s. Restart the broker to run recovery.", lost=lost)

    @handles(Restart)
    def restart(self, cmd: Restart) -> dict[str, Any]:
        seq = self.events.seq
        log = self.broker.restart()
        if self.crashes and self.crashes[-1]["leo_after"] is None:
            c = self.crashes[-1]
            cut = [e.event for e in self.events.since(seq)
                   if e.event.kind == "recovery_truncated" and e.event.from_bytes > e.event.to_bytes]
            if cut:
                c["recovery_cut"] = {"segment": cut[-1].segment, "from": cut[-1].from_bytes, "to": cut[-1].to_bytes,
                                     "reason": cut[-1].reason}
            c["leo_after"] = log.log_end_offset
            c["lost_records"] = max(0, c["acked_before"] - log.log_end_offset)
        self.acked = log.log_end_offset
        lost = self.crashes[-1].get("lost_records", 0) if self.crashes else 0
        if lost:
            return _say("Recovered: the log ends at offset %(o)s; %(n)s acknowledged record(s) are gone.",
                        o=log.log_end_offset, n=lost)
        return _say("Recovered: the log ends at offset %(o)s; nothing acknowledged was lost.", o=log.log_end_offset)

    @handles(SetFlush)
    def set_flush(self, cmd: SetFlush) -> dict[str, Any]:
        self.config = self.config.replace(flush_interval_messages=cmd.flush_messages or LONG_MAX,
                                          flush_interval_ms=cmd.flush_ms or LONG_MAX)
        self.broker.config = self.config
        if self.broker.log is not None:
            self.broker.log.update_config(self.config)
        return _say("flush.messages=%(m)s, flush.ms=%(ms)s.", m=cmd.flush_messages or "never",
                    ms=cmd.flush_ms or "never")

    @handles(Fetch)
    def fetch(self, cmd: Fetch) -> dict[str, Any]:
        data = self.broker.log.read(cmd.offset, max_bytes=4096)
        name = f"{data.segment:020d}.log"
        self.last_fetch = {"offset": cmd.offset, "file": name, "position": data.position, "length": len(data.records),
                           "batches": len(data.batches),
                           "first_offset": data.batches[0].base_offset if data.batches else None}
        return _say("sendfile(%(f)s, position %(p)s, %(n)s bytes): %(b)s batch(es) go from the page cache to the "
                    "socket as they are on disk; the broker never copies or decodes them.", f=name,
                    p=data.position, n=len(data.records), b=len(data.batches))


SHOWN_PLACEMENTS = 40


class TopicWorld(StorageWorld):
    """A topic on one broker, a producer with Kafka's default partitioner and two simple
    consumers, A (partitions in order) and B (reversed). Scenario: ``topic``,
    ``partitions``, ``batch_size``, ``key_cycle``, ``ms_per_message``."""

    def open(self) -> None:
        sc = self.scenario
        self.topic = Topic(self.disk, sc.get("topic", "orders"), int(sc.get("partitions", 3)), LogConfig(),
                           self.scheduler, self.events)
        self.producer = Producer(self.topic, random.Random(self.seed), batch_size=int(sc.get("batch_size", 100)))
        order = list(range(self.topic.partitions))
        self.consumers = {"A": SimpleConsumer("A", self.topic, order),
                          "B": SimpleConsumer("B", self.topic, order[::-1])}
        self.placements: list[dict[str, Any]] = []

    def close(self) -> None:
        try:
            self.topic.close()
        except Exception:  # noqa: BLE001 - a world being discarded
            pass
        super().close()

    def check_produce(self, cmd: Produce) -> None:
        if cmd.mode() == "fixed" and not cmd.key:
            raise refuse("Type a key, or choose “no key”.", "key")
        if cmd.partition is not None and cmd.partition >= self.topic.partitions:
            raise refuse(f"Partition {cmd.partition} does not exist: the topic has {self.topic.partitions}.",
                         "partition")

    @handles(Produce)
    def produce(self, cmd: Produce) -> dict[str, Any]:
        key_mode, key = cmd.mode(), cmd.key or ""
        partition = -1 if cmd.partition is None else cmd.partition
        cycle = int(self.scenario.get("key_cycle", 4))
        ms = int(self.scenario.get("ms_per_message", 10))
        seq = self.events.seq
        placed: dict[int, int] = {}
        for _ in range(cmd.count):
            self.scheduler.advance(ms)
            n = self.messages_sent
            k = None if key_mode == "none" else key if key_mode == "fixed" else f"user-{n % cycle}"
            p = self.producer.send(f"order-{n:03d}".encode(), key=k.encode() if k is not None else None,
                                   partition=None if partition < 0 else partition)
            placed[p] = placed.get(p, 0) + 1
            self.messages_sent += 1
        self.producer.flush()
        new = [{"seq": e.seq, **e.event.to_dict()} for e in self.events.since(seq)
               if e.event.kind == "record_partitioned"]
        self.placements = (self.placements + new)[-SHOWN_PLACEMENTS:]
        return _say("Sent %(n)s message(s): %(where)s.", n=cmd.count,
                    where=", ".join(f"{n} to partition {p}" for p, n in sorted(placed.items())))

    @handles(Poll)
    def poll(self, cmd: Poll) -> dict[str, Any]:
        got = self.consumers[cmd.consumer].poll(cmd.max_records)
        if not got:
            return _say("Consumer %(c)s: nothing new (it has read up to the high watermark of every partition).",
                        c=cmd.consumer)
        return _say("Consumer %(c)s got %(what)s.", c=cmd.consumer,
                    what=", ".join(f"{v} (p{p}@{o})" for p, o, _, v in got))

    @handles(Rewind)
    def rewind(self, cmd: Rewind) -> dict[str, Any]:
        c = self.consumers[cmd.consumer]
        for p in c.assignment:
            c.seek(p, self.topic.logs[p].log_start_offset)
        c.received = []
        return _say("Consumer %(c)s will read every partition again from its start.", c=cmd.consumer)
