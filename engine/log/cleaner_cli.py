"""``python -m engine clean PARTITION_DIR``: one log-cleaner pass on a partition directory.

The directory (``<topic>-<partition>``, e.g. written by ``python -m engine produce
--key-cardinality N``) is opened as a log. A log that would need recovery (a torn or corrupt
batch, a broken index, leftovers of an interrupted clean) is refused with one line naming the
file and position, and left byte for byte as it was; so is a ``cleaner-offset-checkpoint`` that
does not parse. ``--recover`` runs Kafka's recovery first instead, as a broker start would
(cutting a torn tail, rebuilding indexes, finishing or abandoning an interrupted clean), and
starts the cleaner points over when their checkpoint does not parse. Then the cleaner checks
its dirty ratio against ``min.cleanable.dirty.ratio`` and, if it qualifies, cleans it; the
cleaner point goes to ``cleaner-offset-checkpoint`` in the parent directory (the data
directory). ``--now-ms`` is the cleaner's clock (default: the largest record timestamp in the
log), which decides tombstone delete horizons. Files the pass replaced are renamed ``.deleted``; they are removed ``file.delete.delay.ms`` of
virtual time later, which the command lets pass before it closes the log.
"""
from __future__ import annotations

import argparse
import json
import os
from typing import Any

from ..errors import CorruptCheckpointError, InvalidRequestError

__all__ = ["add_subcommands", "clean_partition_dir"]


def add_subcommands(subparsers: Any) -> None:
    p = subparsers.add_parser("clean", help="run one log-cleaner (compaction) pass on a partition directory",
                              description="Compact DIR/<topic>-<partition> once, as Kafka's log cleaner does, "
                                          "and print what it did.")
    p.add_argument("partition_dir", metavar="PARTITION_DIR", help="a <topic>-<partition> directory")
    p.add_argument("--min-cleanable-dirty-ratio", type=float, default=None,
                   help="min.cleanable.dirty.ratio (default 0.5); 0 cleans whenever anything is dirty")
    p.add_argument("--delete-retention-ms", type=int, default=None, help="delete.retention.ms (default 86400000)")
    p.add_argument("--segment-bytes", type=int, default=None,
                   help="segment.bytes, the cap on a group of cleaned segments (default 1073741824)")
    p.add_argument("--now-ms", type=int, default=None,
                   help="the cleaner's clock (default: the largest record timestamp in the log)")
    p.add_argument("--recover", action="store_true",
                   help="repair a damaged log first, as Kafka's recovery at broker start does (cuts a torn or "
                        "corrupt tail, rebuilds indexes); without it a damaged log is refused and left untouched")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.set_defaults(func=_cmd_clean)


def _split(partition_dir: str) -> tuple[str, str, str, int]:
    path = os.path.abspath(partition_dir)
    if not os.path.isdir(path):
        raise InvalidRequestError(f"{partition_dir}: not a directory")
    root, name = os.path.split(path)
    topic, sep, part = name.rpartition("-")
    if not sep or not topic or not part.isdigit():
        raise InvalidRequestError(f"{name!r} is not a partition directory name (<topic>-<partition>)")
    if not any(n.endswith(".log") for n in os.listdir(path)):
        raise InvalidRequestError(f"{partition_dir}: no segment (.log file) to clean")
    return root, name, topic, int(part)


def clean_partition_dir(partition_dir: str, *, min_cleanable_dirty_ratio: float | None = None,
                        delete_retention_ms: int | None = None, segment_bytes: int | None = None,
                        now_ms: int | None = None, recover: bool = False) -> dict:
    """One cleaner pass on ``partition_dir``. Without ``recover`` a log that needs recovery
    raises (CorruptRecordError, CorruptIndexError, KafkaStorageError) before a byte changes."""
    from ..clock import Scheduler, VirtualClock
    from ..config import LogConfig
    from ..disk import Disk
    from ..events import EventLog
    from .checkpoint import CheckpointFile
    from .cleaner import CLEANER_CHECKPOINT, LogCleaner
    from .log import Log
    from .recovery import check_before_opening

    root, name, topic, partition = _split(partition_dir)
    changes: dict[str, Any] = {"cleanup_policy": "compact"}
    for key, value in (("min_cleanable_dirty_ratio", min_cleanable_dirty_ratio),
                       ("delete_retention_ms", delete_retention_ms), ("segment_bytes", segment_bytes)):
        if value is not None:
            changes[key] = value
    config = LogConfig().replace(**changes)
    disk = Disk(root)
    check_before_opening(disk, name, config, recover=recover)  # a refusal here has written nothing
    if not recover:  # Kafka starts the cleaner points over when their checkpoint does not parse: only when asked
        try:
            CheckpointFile(disk, CLEANER_CHECKPOINT, (str, int, int)).read()
        except CorruptCheckpointError as exc:
            raise CorruptCheckpointError(f"{os.path.join(os.path.dirname(partition_dir), str(exc))}; nothing was "
                                         "changed (--recover starts the cleaner points over, as Kafka does)") from None
    clock = VirtualClock(0)
    scheduler = Scheduler(clock)
    events = EventLog(clock)
    log = Log(disk, name, topic, partition, config, scheduler, events, hw_follows_leo=True, schedule_tasks=False,
              recover=recover)
    try:
        if now_ms is None:
            now_ms = max((s.max_timestamp_so_far for s in log.segments), default=0)
            now_ms = max(now_ms, 0)
        clock.advance_to(max(now_ms, clock.now_ms()))
        cleaner = LogCleaner(disk)
        ltc = cleaner.to_clean(log, now_ms)
        result = cleaner.run_once([log], now_ms)
        checks = events.of_kind("cleaner_check")
        out: dict[str, Any] = {"directory": name, "now_ms": now_ms, "cleaned": result is not None,
                               "first_dirty_offset": ltc.first_dirty_offset,
                               "first_uncleanable_offset": ltc.first_uncleanable_offset,
                               "clean_bytes": ltc.clean_bytes, "dirty_bytes": ltc.cleanable_bytes,
                               "dirty_ratio": round(ltc.ratio, 6), "min_cleanable_dirty_ratio":
                               config.min_cleanable_dirty_ratio,
                               "reason": checks[-1].reason if checks else "nothing cleanable"}
        if result is not None:
            out.update(result.to_dict())
            scheduler.advance(config.file_delete_delay_ms)  # let the scheduled .deleted removals run
            out["files_removed"] = [e.file for e in events.of_kind("file_deleted")]
        return out
    finally:
        log.close()
        disk.close_all()


def _cmd_clean(args: argparse.Namespace) -> int:
    out = clean_partition_dir(args.partition_dir, min_cleanable_dirty_ratio=args.min_cleanable_dirty_ratio,
                              delete_retention_ms=args.delete_retention_ms, segment_bytes=args.segment_bytes,
                              now_ms=args.now_ms, recover=args.recover)
    if args.json:
        print(json.dumps(out))
        return 0
    print(f"{out['directory']}: dirty ratio {out['dirty_ratio']:.3f} "
          f"({out['dirty_bytes']} dirty / {out['clean_bytes'] + out['dirty_bytes']} bytes, "
          f"offsets [{out['first_dirty_offset']}, {out['first_uncleanable_offset']})) vs "
          f"min.cleanable.dirty.ratio {out['min_cleanable_dirty_ratio']}: {out['reason']}")
    if not out["cleaned"]:
        print("not cleaned")
        return 0
    print(f"offset map: {out['map_entries']} keys; cleaner point {out['first_dirty_offset']} -> {out['end_offset']}")
    for group in out["groups"]:
        print(f"rewrote segments {', '.join(map(str, group))} into {group[0]:020d}.log")
    print(f"records {out['records_before']} -> {out['records_after']} (superseded {out['superseded']}, "
          f"tombstones kept {out['tombstones_kept']}, removed {out['tombstones_removed']}, keyless removed "
          f"{out['keyless_removed']})")
    if out["aborted_removed"] or out["markers_kept"] or out["markers_removed"]:
        print(f"transactions: {out['aborted_removed']} aborted record(s) removed; markers kept "
              f"{out['markers_kept']}, removed {out['markers_removed']}")
    print(f"bytes {out['bytes_before']} -> {out['bytes_after']}; segments {out['segments_before']} -> "
          f"{out['segments_after']}")
    return 0
