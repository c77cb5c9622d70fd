"""The ``page-cache`` sandbox kind (lesson 7): flush, page cache and zero copy on one broker
with one partition (:class:`engine.page_cache.StandaloneBroker`). Produce, and the bytes sit
in the modelled page cache; flush (by hand, ``flush.messages``, ``flush.ms``) makes them
durable; the OS's writeback makes whole pages durable; a power loss drops the rest and the
restart's recovery cuts the log at the last whole batch. A fetch shows the byte range the
broker hands to ``sendfile``: file, position, length, straight from the page cache.

Scenario keys: ``topic``, ``page_size``, ``config`` (Kafka names). Everything the frame
shows is derived in the command handlers, so replaying the steps rebuilds it exactly.
"""
from __future__ import annotations

from typing import Any, ClassVar

from engine.config import LONG_MAX, LogConfig
from engine.disk import Disk
from engine.page_cache import StandaloneBroker
from engine.records import SimpleRecord

from engine.storage_commands import Advance, Crash, Fetch, Flush, Produce, Restart, SetFlush, Writeback

from .kinds import SandboxKind, handles
from .validation import CommandError

__all__ = ["PageCacheSandbox"]

FLUSH_MESSAGES_CHOICES = (0, 1, 5, 10)     # 0 = Kafka's default (Long.MAX: never)
FLUSH_MS_CHOICES = (0, 1000, 5000)         # 0 = Kafka's default (never)
MS_PER_MESSAGE = 100


class PageCacheSandbox(SandboxKind):
    """One broker, one partition; faults that show where the bytes are."""

    name: ClassVar[str] = "page-cache"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.open()

    def open(self) -> None:
        sc = self.scenario
        self.config = LogConfig().replace(**(sc.get("config") or {}))
        self.disk = Disk(self.data_dir, os_fsync=False)   # a throwaway sandbox: fsync modelled, not asked of the OS
        self.messages_sent = 0
        self.acked = 0
        self.crashes: list[dict[str, Any]] = []
        self.last_fetch: dict[str, Any] | None = None
        self.broker = StandaloneBroker(self.disk, sc.get("topic", "payments"), self.config, self.scheduler,
                                       self.events, page_size=int(sc.get("page_size", 4096)))

    @classmethod
    def narrow(cls, scenario: dict) -> dict[str, dict[str, dict[str, Any] | None]]:
        return {"produce": {"partition": None, "key": None, "key_mode": None},   # one partition, no keys
                "set_flush": {"flush_messages": {"choices": FLUSH_MESSAGES_CHOICES},
                              "flush_ms": {"choices": FLUSH_MS_CHOICES}}}

    # ---- commands ----------------------------------------------------------
    @handles(Produce)
    def produce(self, cmd: Produce) -> str:
        count, value_size = cmd.count, cmd.value_size
        log = self._log("produce")
        if self.messages_sent + count > self.limits.max_messages:
            raise CommandError("quota", f"This sandbox takes at most {self.limits.max_messages} messages; press Reset.",
                               "count", "produce")
        if value_size + 80 > self.config.segment_bytes:
            raise CommandError("invalid", f"A value must fit one segment (segment.bytes={self.config.segment_bytes}).",
                               "value_size", "produce")
        first = None
        for _ in range(count):
            self.scheduler.advance(MS_PER_MESSAGE)
            log = self._log("produce")
            n = self.messages_sent
            info = log.append_as_leader([SimpleRecord(value=f"pay-{n:04d}|".ljust(value_size, ".").encode())],
                                        leader_epoch=0)
            first = info.first_offset if first is None else first
            self.messages_sent += 1
            self.acked = log.log_end_offset
        last = self.broker.log.log_end_offset - 1
        return f"Appended and acknowledged offsets {first}–{last} (acks=1: in the page cache, not yet on disk)."

    @handles(Advance)
    def advance(self, cmd: Advance) -> str:
        ran = self.scheduler.advance(cmd.ms)
        return f"Clock moved {cmd.ms / 1000:g} s; {ran} scheduled task(s) ran."

    @handles(Flush)
    def flush(self, cmd: Flush) -> str:
        self._log("flush")
        self.broker.flush()
        return f"fsync done: everything below offset {self.broker.log.recovery_point} is on disk."

    @handles(Writeback)
    def writeback(self, cmd: Writeback) -> str:
        self._log("writeback")
        moved = self.broker.writeback()
        if not moved:
            return "No whole dirty page to write back."
        return "The kernel wrote back " + ", ".join(f"{m['file']} up to byte {m['to']}" for m in moved) + "."

    @handles(Crash)
    def crash(self, cmd: Crash) -> str:
        power_loss = cmd.power_loss
        self._log("crash")
        leo = self.broker.log.log_end_offset
        lost_files = self.broker.crash(power_loss)
        self.crashes.append({"time_ms": self.clock.now_ms(), "power_loss": power_loss, "leo_before": leo,
                             "acked_before": self.acked, "lost_files": lost_files, "leo_after": None})
        return ("Power lost: " if power_loss else "Process killed (page cache kept): ") + \
            (", ".join(f"{f['file']} {f['size_before']} → {f['size_after']} B" for f in lost_files) or "no bytes lost") + \
            ". Restart the broker to run recovery."

    @handles(Restart)
    def restart(self, cmd: Restart) -> str:
        if self.broker.alive:
            raise CommandError("invalid", "The broker is running.", None, "restart")
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
        return (f"Recovered: the log ends at offset {log.log_end_offset}"
                + (f"; {lost} acknowledged record(s) are gone." if lost else "; nothing acknowledged was lost."))

    @handles(SetFlush)
    def set_flush(self, cmd: SetFlush) -> str:
        flush_messages, flush_ms = cmd.flush_messages, cmd.flush_ms
        self.config = self.config.replace(flush_interval_messages=flush_messages or LONG_MAX,
                                          flush_interval_ms=flush_ms or LONG_MAX)
        self.broker.config = self.config
        if self.broker.log is not None:
            self.broker.log.update_config(self.config)
        return (f"flush.messages={flush_messages or 'never'}, flush.ms={flush_ms or 'never'}.")

    @handles(Fetch)
    def fetch(self, cmd: Fetch) -> str:
        offset = cmd.offset
        log = self._log("fetch")
        if offset >= log.log_end_offset:
            raise CommandError("invalid", f"Offset {offset} is past the log end ({log.log_end_offset}).", "offset", "fetch")
        data = log.read(offset, max_bytes=4096)
        name = f"{data.segment:020d}.log"
        self.last_fetch = {"offset": offset, "file": name, "position": data.position, "length": len(data.records),
                           "batches": len(data.batches), "first_offset": data.batches[0].base_offset if data.batches else None}
        return (f"sendfile({name}, position {data.position}, {len(data.records)} bytes): {len(data.batches)} batch(es) "
                "go from the page cache to the socket as they are on disk; the broker never copies or decodes them.")

    def _log(self, command: str):
        if not self.broker.alive or self.broker.log is None:
            raise CommandError("invalid", "The broker is down: press Restart first.", None, command)
        return self.broker.log

    # ---- state -------------------------------------------------------------
    def facts(self) -> dict[str, Any]:
        done = [c for c in self.crashes if c["leo_after"] is not None]
        return {
            "lost_acked": max((c.get("lost_records", 0) for c in done if c["power_loss"]), default=0),
            "kill_kept_all": any(not c["power_loss"] and c["acked_before"] > 0 and c.get("lost_records", 0) == 0
                                 for c in done),
        }

    def kind_state(self) -> dict[str, Any]:
        b = self.broker
        log = b.log
        return {
            "clock_ms": self.clock.now_ms(), "topic": self.broker.topic, "alive": b.alive, "incarnation": b.incarnation,
            "page_size": b.page_size,
            "flush_messages": None if self.config.flush_interval_messages == LONG_MAX else self.config.flush_interval_messages,
            "flush_ms": None if self.config.flush_interval_ms == LONG_MAX else self.config.flush_interval_ms,
            "log": None if log is None else {"log_end_offset": log.log_end_offset, "recovery_point": log.recovery_point,
                                             "high_watermark": log.high_watermark, "dir": log.name,
                                             "batches": _batches(log)},
            "acked": self.acked,
            "files": b.page_cache(),
            "crashes": self.crashes[-5:],
            "fetch": self.last_fetch,
            "facts": self.facts(),
        }

    def close(self) -> None:
        try:
            self.broker.close()
        except Exception:  # noqa: BLE001 - closing a sandbox being discarded must not fail the reset
            pass
        self.disk.close_all()


def _batches(log) -> list[list[int]]:
    """[position, first, last, size] of the active segment's batches (at most 100)."""
    out = []
    for i, (pos, base, last, _ts, size) in enumerate(log.active_segment.walk(0)):
        if i >= 100:
            break
        out.append([pos, base, last, size])
    return out
