"""``python -m engine storage-experiment``: the storage experiment of seed 000 §1.4, replayed
on the real engine.

The blog creates a topic ``test`` with 2 partitions and ``segment.bytes=1000``,
``retention.bytes=2000``, ``retention.ms=60000``, sends messages one at a time while
watching ``ls -l`` of both partition directories (segments roll when a ``.log`` reaches
its 1000-byte limit), then waits: after ``log.retention.check.interval.ms`` (5 min) the
retention task has removed the old segments.

Here the same happens on a virtual clock, and every line printed comes from the engine:
the listings are the real files in ``DIR/test-0`` and ``DIR/test-1`` (name and size), the
commentary is the storage events (``segment_rolled``, ``retention_check``,
``segment_deleted``, ``file_deleted``, ``log_start_offset_changed``).

Choices, since the blog does not state them:

* Messages are keyless, 70-byte values, one record per batch (one ``send`` per batch,
  as with ``linger.ms=0``): 140 bytes on disk each (61-byte batch header + 79-byte
  record), so seven fill a segment (7 × 140 = 980 ≤ 1000) and the eighth rolls — the blog's "the 8th message went into
  the second log".
* Keyless messages alternate between the partitions (round-robin by message number).
  Kafka's Java producer would use its sticky partitioner, which with one message per
  batch also spreads them; round-robin makes both partitions grow evenly and is easy
  to follow.
* One message per second of virtual time, starting at 2023-11-14 22:13:20 UTC.
* 48 messages by default: 24 per partition = 3360 bytes, enough for size retention
  (excess over 2000 bytes ≥ one segment) to remove a segment on its own.

After the sends the clock moves on task by task: the retention pass (every
``log.retention.check.interval.ms`` = 300 000 ms) finds the segments past ``retention.bytes``
and older than ``retention.ms``, renames their files to ``*.deleted`` (printed at that
moment) and ``file.delete.delay.ms`` (60 000 ms) later the files are gone.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from dataclasses import dataclass, field
from typing import Any

from .errors import InvalidRequestError
from .narration import describe

__all__ = ["ExperimentStep", "ExperimentResult", "run_storage_experiment", "format_text", "main",
           "EXPERIMENT_CONFIG", "TOPIC", "VALUE_BYTES", "DEFAULT_MESSAGES"]

TOPIC = "test"
PARTITIONS = 2
VALUE_BYTES = 70
DEFAULT_MESSAGES = 48
SEND_INTERVAL_MS = 1000
EXPERIMENT_CONFIG = {"segment.bytes": 1000, "retention.bytes": 2000, "retention.ms": 60000}
_REPORTED = ("segment_rolled", "retention_check", "segment_deleted", "file_deleted", "log_start_offset_changed")


@dataclass(frozen=True)
class ExperimentStep:
    """One moment of the experiment: what was done, what the engine reported, and the
    partition directories afterwards (``listing[dir] = [(file name, size), …]``, only the
    directories whose listing changed unless ``full``)."""

    time_ms: int
    phase: str          # "start" | "send" | "retention" | "file_delete" | "end"
    title: str
    events: tuple[dict, ...]
    listing: dict[str, list[tuple[str, int]]]
    full: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"time_ms": self.time_ms, "phase": self.phase, "title": self.title, "events": list(self.events),
                "listing": {d: [{"name": n, "size": s} for n, s in files] for d, files in self.listing.items()}}


@dataclass
class ExperimentResult:
    """The whole run: the data directory, the config used and the steps in order."""

    dir: str
    config: dict[str, Any]
    start_ms: int
    steps: list[ExperimentStep] = field(default_factory=list)
    log_end_offsets: dict[str, int] = field(default_factory=dict)
    log_start_offsets: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"dir": self.dir, "topic": TOPIC, "partitions": PARTITIONS, "config": self.config,
                "start_ms": self.start_ms, "log_start_offsets": self.log_start_offsets,
                "log_end_offsets": self.log_end_offsets, "steps": [s.to_dict() for s in self.steps]}


def run_storage_experiment(root: str, messages: int = DEFAULT_MESSAGES) -> ExperimentResult:
    """Run the experiment in ``root`` (a data directory; ``root/test-0`` and ``root/test-1``
    are created) and return every step. Deterministic: same ``messages`` ⇒ same steps."""
    from .clock import DEFAULT_START_MS, Scheduler, VirtualClock
    from .config import LogConfig
    from .disk import Disk
    from .events import EventLog
    from .log import Log
    from .records import SimpleRecord

    config = LogConfig().replace(**EXPERIMENT_CONFIG)
    disk = Disk(root)
    dirs = [f"{TOPIC}-{p}" for p in range(PARTITIONS)]
    used = [d for d in dirs if disk.listdir(d)]
    if used:
        # Old segments would be recovered and appended to: the listings would not be the experiment's.
        raise InvalidRequestError(f"{disk.root} already holds {', '.join(used)}; "
                                  "run the storage experiment in an empty directory")
    clock = VirtualClock(DEFAULT_START_MS)
    scheduler = Scheduler(clock)
    events = EventLog(clock)
    logs = [Log(disk, d, TOPIC, p, config, scheduler, events, hw_follows_leo=True) for p, d in enumerate(dirs)]
    result = ExperimentResult(str(disk.root), {k: getattr(config, k.replace(".", "_")) for k in (
        *EXPERIMENT_CONFIG, "log.retention.check.interval.ms", "file.delete.delay.ms")}, DEFAULT_START_MS)
    seen = [0]          # sequence number of the last event reported (the ring is bounded: not an index)
    previous: dict[str, list[tuple[str, int]]] = {}

    def listing() -> dict[str, list[tuple[str, int]]]:
        return {d: [(name, disk.size(f"{d}/{name}")) for name in disk.listdir(d)] for d in dirs}

    def record(phase: str, title: str, full: bool = False) -> ExperimentStep:
        new = [env.to_dict() for env in events.since(seen[0]) if env.event.kind in _REPORTED]
        seen[0] = events.seq
        now = listing()
        shown = now if full else {d: files for d, files in now.items() if files != previous.get(d)}
        previous.update(now)
        step = ExperimentStep(scheduler.now_ms(), phase, title, tuple(new), shown, full)
        result.steps.append(step)
        return step

    record("start", "topic created: 2 partitions, no messages yet", full=True)
    for i in range(messages):
        p = i % PARTITIONS
        value = f"message {i + 1:>4} ".encode().ljust(VALUE_BYTES, b".")
        info = logs[p].append_as_leader([SimpleRecord(value=value, timestamp=scheduler.now_ms())], leader_epoch=0)
        record("send", f"message #{i + 1} -> {dirs[p]} offset {info.first_offset} "
                       f"({info.size_bytes} bytes at position {info.position} of segment {info.segment})")
        scheduler.advance(SEND_INTERVAL_MS)
    record("sent", f"{messages} messages sent; now wait", full=True)
    _wait_for_retention(scheduler, events, config, record, disk, dirs)
    for log in logs:
        result.log_start_offsets[log.name] = log.log_start_offset
        result.log_end_offsets[log.name] = log.log_end_offset
        log.close()
    record("end", "logs closed", full=True)
    return result


def _wait_for_retention(scheduler, events, config, record, disk, dirs) -> None:
    """Run the scheduler task by task until a retention pass has seen every message past
    ``retention.ms`` and the ``.deleted`` files it made are gone. A listing is taken
    right after each task that renamed or removed files, so the ``.deleted`` stage shows."""
    last_send = scheduler.now_ms()
    horizon = last_send + config.retention_ms + config.log_retention_check_interval_ms + 1
    while True:
        due = scheduler.next_due_ms()
        pending_deleted = any(n.endswith(".deleted") for d in dirs for n in disk.listdir(d))
        if due is None or (due > horizon and not pending_deleted):
            break
        before = events.seq
        scheduler.step()
        while scheduler.next_due_ms() == scheduler.now_ms():
            scheduler.step()  # both partitions' tasks due at this millisecond make one step
        kinds = {env.event.kind for env in events.since(before)}
        if "segment_deleted" in kinds:
            record("retention", f"retention pass (every log.retention.check.interval.ms = "
                                f"{config.log_retention_check_interval_ms} ms): segments renamed to .deleted",
                   full=True)
        elif "file_deleted" in kinds:
            record("file_delete", f"file.delete.delay.ms ({config.file_delete_delay_ms} ms) later: "
                                  ".deleted files removed", full=True)


# ---- output ----------------------------------------------------------------------

def _describe(ev: dict) -> str | None:
    """The narration's sentence for the events this report lists (engine/narration.py)."""
    if ev["kind"] not in _REPORTED:
        return None
    if ev["kind"] == "retention_check" and not ev["deletable"] and not ev.get("blocked_by"):
        return None  # the walk stops at the first segment a rule keeps; only what it deleted or blocked is news
    return describe(ev)


def format_text(result: ExperimentResult) -> str:
    lines = [f"storage experiment in {result.dir}",
             "topic test, 2 partitions, " + ", ".join(f"{k}={v}" for k, v in result.config.items()), ""]
    for step in result.steps:
        seconds = (step.time_ms - result.start_ms) / 1000
        lines.append(f"[t={seconds:+.0f}s] {step.title}")
        removed: dict[str, list[str]] = {}
        for ev in step.events:
            if ev["kind"] == "file_deleted":  # one line per partition, not per file
                removed.setdefault(f"{ev['topic']}-{ev['partition']}", []).append(ev["file"])
                continue
            text = _describe(ev)
            if text:
                lines.append(f"  * {text}")
        for d, files in removed.items():
            segments = sorted({int(f.split(".")[0]) for f in files})
            lines.append(f"  * {d}: removed {len(files)} .deleted files (segments {', '.join(map(str, segments))})")
        for d, files in step.listing.items():
            lines.append(f"  $ ls -l {d}" + ("" if files else "   (empty)"))
            lines += [f"    {size:>10}  {name}" for name, size in files]
        if step.phase != "send":
            lines.append("")
    lines.append("what retention removed:")
    for d in result.log_end_offsets:
        gone = [f"{ev['segment']} ({ev['reason'].split(':')[-1]})" for step in result.steps for ev in step.events
                if ev["kind"] == "segment_deleted" and f"{ev['topic']}-{ev['partition']}" == d]
        rolled = [ev for step in result.steps for ev in step.events if ev["kind"] == "segment_rolled"
                  and ev["reason"] == "retention" and f"{ev['topic']}-{ev['partition']}" == d]
        lines.append(f"  {d}: deleted segments {', '.join(gone) or 'none'}; "
                     f"log start offset {result.log_start_offsets[d]}, log end offset {result.log_end_offsets[d]}")
        for ev in rolled:
            lines.append(f"    every segment had expired, so the log first rolled the active segment "
                         f"{ev['old_segment']} to a new empty one, {ev['new_segment']:020d}, which stays: a partition "
                         "always keeps its active segment and its log end offset")
    return "\n".join(lines) + "\n"


def main(args: argparse.Namespace) -> int:
    root = args.dir or tempfile.mkdtemp(prefix="kafkaviz-storage-experiment-")
    result = run_storage_experiment(root, messages=args.messages or DEFAULT_MESSAGES)
    if args.json:
        json.dump(result.to_dict(), sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(format_text(result))
    return 0
