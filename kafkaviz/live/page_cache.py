"""Lesson 7's sandbox: flush, page cache and zero copy on one broker with one partition
(:class:`engine.page_cache.StandaloneBroker`). Produce, and the bytes sit in the modelled
page cache; flush (by hand, ``flush.messages``, ``flush.ms``) makes them durable; the
kernel's writeback makes whole pages durable; a power loss drops the rest and the restart's
recovery cuts the log at the last whole batch. A fetch shows the byte range the broker
would hand to ``sendfile``: file, position, length, straight from the page cache.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from engine.config import LONG_MAX, LogConfig
from engine.disk import Disk
from engine.events import Envelope
from engine.page_cache import StandaloneBroker
from engine.records import SimpleRecord

from .kinds import Limits, SandboxKind, register
from .single_log import config_kwargs
from .validation import CommandError, CommandSpec, Field

__all__ = ["PageCacheSandbox", "LESSON_CONFIG"]

TOPIC = "payments"
LESSON_CONFIG: dict[str, Any] = {
    "segment.bytes": 16384,
    "segment.index.bytes": 1024,
    "index.interval.bytes": 4096,
    "retention.ms": -1,
    "flush.messages": LONG_MAX,
    "flush.ms": LONG_MAX,
}
FLUSH_MESSAGES_CHOICES = (0, 1, 5, 10)     # 0 = Kafka's default (Long.MAX: never)
FLUSH_MS_CHOICES = (0, 1000, 5000)         # 0 = Kafka's default (never)


@register
class PageCacheSandbox(SandboxKind):
    name = "page-cache"
    commands = {
        "produce": CommandSpec("produce", (
            Field("count", "int", "Number of messages", default=3, min=1, max=40),
            Field("value_size", "int", "Value size (bytes)", default=300, min=1, max=2000),
        ), handler="produce", help="Append messages (acks=1: acknowledged once in the leader's page cache)."),
        "advance": CommandSpec("advance", (
            Field("seconds", "int", "Jump", default=5, required=True, min=1, max=3600),
        ), handler="advance", help="Move the virtual clock; flush.ms and the checkpoint task run when due."),
        "flush": CommandSpec("flush", (), handler="flush", help="fsync the log now (what flush.messages/flush.ms do)."),
        "writeback": CommandSpec("writeback", (), handler="writeback",
                                 help="The kernel writes whole dirty 4 KiB pages back on its own."),
        "crash": CommandSpec("crash", (
            Field("power_loss", "bool", "Power loss (the OS goes down too)", default=True),
        ), handler="crash", help="Kill the broker; with power loss the page cache is lost."),
        "restart": CommandSpec("restart", (), handler="restart", help="Start the broker: recovery runs."),
        "set_flush": CommandSpec("set_flush", (
            Field("flush_messages", "int", "flush.messages", required=True, choices=FLUSH_MESSAGES_CHOICES),
            Field("flush_ms", "int", "flush.ms", required=True, choices=FLUSH_MS_CHOICES),
        ), handler="set_flush", help="fsync every N messages / every T ms (0: never, Kafka's default)."),
        "fetch": CommandSpec("fetch", (
            Field("offset", "int", "Offset", required=True, min=0, max=10**12),
        ), handler="fetch", help="A consumer fetch: the byte range the broker sends with sendfile."),
    }

    def __init__(self, data_dir: Path, *, seed: int, limits: Limits,
                 listener: Callable[[Envelope], None] | None = None) -> None:
        super().__init__(data_dir, seed=seed, limits=limits, listener=listener)
        self.config = LogConfig().replace(**config_kwargs(LESSON_CONFIG))
        self.disk = Disk(data_dir)
        self.messages_sent = 0
        self.acked = 0                 # records acknowledged (acks=1) since the log began
        self.crashes: list[dict[str, Any]] = []
        self.last_fetch: dict[str, Any] | None = None
        self.torn = 0
        self.events.subscribe(self.on_event)
        self.broker = StandaloneBroker(self.disk, TOPIC, self.config, self.scheduler, self.events)

    def on_event(self, env: Envelope) -> None:
        ev = env.event
        if ev.kind == "recovery_truncated" and ev.from_bytes > ev.to_bytes:
            self.torn += 1
            if self.crashes and self.crashes[-1]["leo_after"] is None:
                self.crashes[-1]["recovery_cut"] = {"segment": ev.segment, "from": ev.from_bytes, "to": ev.to_bytes,
                                                    "reason": ev.reason}

    # ---- commands ----------------------------------------------------------
    def produce(self, count: int, value_size: int) -> str:
        log = self._log("produce")
        if self.messages_sent + count > self.limits.max_messages:
            raise CommandError("quota", f"This sandbox takes at most {self.limits.max_messages} messages; press Reset.",
                               "count", "produce")
        if value_size + 80 > self.config.segment_bytes:
            raise CommandError("invalid", f"A value must fit one segment (segment.bytes={self.config.segment_bytes}).",
                               "value_size", "produce")
        first = None
        for _ in range(count):
            self.scheduler.advance(100)
            log = self._log("produce")
            n = self.messages_sent
            info = log.append_as_leader([SimpleRecord(value=f"pay-{n:04d}|".ljust(value_size, ".").encode())],
                                        leader_epoch=0)
            first = info.first_offset if first is None else first
            self.messages_sent += 1
            self.acked = log.log_end_offset
        last = self.broker.log.log_end_offset - 1
        return f"Appended and acknowledged offsets {first}–{last} (acks=1: in the page cache, not yet on disk)."

    def advance(self, seconds: int) -> str:
        ran = self.scheduler.advance(seconds * 1000)
        return f"Clock moved {seconds} s; {ran} scheduled task(s) ran."

    def flush(self) -> str:
        self._log("flush")
        self.broker.flush()
        return f"fsync done: everything below offset {self.broker.log.recovery_point} is on disk."

    def writeback(self) -> str:
        self._log("writeback")
        moved = self.broker.writeback()
        if not moved:
            return "No whole dirty page to write back."
        return "The kernel wrote back " + ", ".join(f"{m['file']} up to byte {m['to']}" for m in moved) + "."

    def crash(self, power_loss: bool) -> str:
        self._log("crash")
        leo = self.broker.log.log_end_offset
        lost_files = self.broker.crash(power_loss)
        self.crashes.append({"time_ms": self.clock.now_ms(), "power_loss": power_loss, "leo_before": leo,
                             "acked_before": self.acked, "lost_files": lost_files, "leo_after": None})
        return ("Power lost: " if power_loss else "Process killed (page cache kept): ") + \
            (", ".join(f"{f['file']} {f['size_before']} → {f['size_after']} B" for f in lost_files) or "no bytes lost") + \
            ". Restart the broker to run recovery."

    def restart(self) -> str:
        if self.broker.alive:
            raise CommandError("invalid", "The broker is running.", None, "restart")
        log = self.broker.restart()
        if self.crashes and self.crashes[-1]["leo_after"] is None:
            c = self.crashes[-1]
            c["leo_after"] = log.log_end_offset
            c["lost_records"] = max(0, c["acked_before"] - log.log_end_offset)
        self.acked = log.log_end_offset
        lost = self.crashes[-1].get("lost_records", 0) if self.crashes else 0
        return (f"Recovered: the log ends at offset {log.log_end_offset}"
                + (f"; {lost} acknowledged record(s) are gone." if lost else "; nothing acknowledged was lost."))

    def set_flush(self, flush_messages: int, flush_ms: int) -> str:
        self.config = self.config.replace(**config_kwargs({
            "flush.messages": flush_messages or LONG_MAX, "flush.ms": flush_ms or LONG_MAX}))
        self.broker.config = self.config
        if self.broker.log is not None:
            self.broker.log.update_config(self.config)
        return (f"flush.messages={flush_messages or 'never'}, flush.ms={flush_ms or 'never'}.")

    def fetch(self, offset: int) -> str:
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
    def tasks(self) -> list[dict[str, Any]]:
        done = [c for c in self.crashes if c["leo_after"] is not None]
        return [
            {"id": "lose-unflushed", "text": "Lose acknowledged messages: produce, then cut the power before a flush.",
             "done": any(c["power_loss"] and c.get("lost_records", 0) > 0 for c in done)},
            {"id": "process-kill", "text": "Kill only the process (no power loss): nothing is lost, the page cache "
                                           "still holds every byte.",
             "done": any(not c["power_loss"] and c["acked_before"] > 0 and c.get("lost_records", 0) == 0 for c in done)},
            {"id": "torn-batch", "text": "Tear a batch: let the kernel write pages back, cut the power, and watch "
                                         "recovery cut the log at the last whole batch.",
             "done": self.torn > 0},
        ]

    def state(self) -> dict[str, Any]:
        b = self.broker
        log = b.log
        return {
            "clock_ms": self.clock.now_ms(), "topic": TOPIC, "alive": b.alive, "incarnation": b.incarnation,
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
            "tasks": self.tasks(),
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
