"""The engine's command line: ``python -m engine <command> …``.

    produce             write real partition directories (DIR/T-0 … T-(N-1)) through the engine's Log
    dump                print .log / .index / .timeindex files the way kafka-dump-log.sh does
    storage-experiment  replay the segment/retention experiment of seed 000 §1.4
    run, scenario       cluster runs (registered by ``engine.cluster.cli.add_subcommands``)
    assign              Kafka's partition assignors on a group given as JSON (``engine.group.cli``)
    clean               one log-cleaner pass on a partition directory (``engine.log.cleaner_cli``)

Each subcommand is a handler ``handler(args) -> int`` set with ``set_defaults(func=…)``.
Bad arguments are argparse usage errors (exit 2); engine errors (``KafkaError``: bad topic
name, config out of range, corrupt file, a size past the limits below) and missing files print
``error: <message>`` in one line on stderr and exit 1; anything else is a bug, reported the same
way with exit 70, never as a traceback. Nothing is written outside ``--dir``, and a directory
or file a command cannot read is left byte for byte as it was: logs that would need recovery
are refused unless ``--recover`` asks for it (``Log(recover=False)``), and ``dump`` only reads.
"""
from __future__ import annotations

import argparse
import os
import random
import sys
from dataclasses import dataclass
from typing import Sequence

from .clock import DEFAULT_START_MS
from .config import LogConfig, validate_topic_name
from .errors import InvalidRequestError, KafkaError
from .partitioner import DefaultPartitioner, murmur2, partition_for_key

__all__ = ["main", "build_parser", "murmur2", "partition_for_key", "produce", "ProduceSummary",
           "PartitionSummary"]

_VALUE_ALPHABET = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"


# murmur2 and partition_for_key live in engine/partitioner.py (re-exported here).


# ---- produce ---------------------------------------------------------------------

@dataclass(frozen=True)
class PartitionSummary:
    """One partition after a produce run."""

    partition: int
    dir: str
    records: int
    log_start_offset: int
    log_end_offset: int
    segments: int
    bytes: int


@dataclass(frozen=True)
class ProduceSummary:
    """What ``produce`` wrote: per partition, and the virtual time it ended at."""

    topic: str
    partitions: tuple[PartitionSummary, ...]
    end_ms: int


def log_config_from_args(args: argparse.Namespace) -> LogConfig:
    """The LogConfig the flags ask for; ``LogConfig.replace`` range-checks every value,
    so ``--segment-bytes 5`` fails with the config's own message."""
    changes = {name: getattr(args, name) for name in
               ("segment_bytes", "index_interval_bytes", "retention_bytes", "retention_ms")
               if getattr(args, name, None) is not None}
    return LogConfig().replace(**changes)


def produce(root: str, topic: str, partitions: int, count: int, value_bytes: int, *,
            key_cardinality: int | None = None, config: LogConfig | None = None, seed: int = 0,
            batch_size: int = 1, start_ms: int = DEFAULT_START_MS, ms_per_record: int = 1,
            recover: bool = False) -> ProduceSummary:
    """Append ``count`` records to ``topic``'s partitions under ``root`` through real Logs.

    Record ``i`` has key ``key-{i % key_cardinality}`` (or no key when no cardinality is
    given), a value of ``value_bytes`` letters and digits drawn from ``random.Random(seed)``,
    and the virtual time as its CreateTime; the clock moves ``ms_per_record`` after each
    record (through the scheduler, so retention passes fall due as they would). Keyed
    records go to ``murmur2(key) % partitions``; keyless ones stick to one partition until
    the batch filling there is sent, then move to another one chosen by the seeded RNG —
    Kafka's default partitioner for both (``engine.partitioner.DefaultPartitioner``, KIP-480).
    Each partition collects records until it has ``batch_size`` of them and appends them as
    one batch; leftovers are appended at the end.
    The logs are closed cleanly, so index files are trimmed. Partition directories that are
    already there are appended to; one that would need recovery is refused (nothing written)
    unless ``recover`` asks for Kafka's recovery first, as a broker start does.
    """
    from .clock import Scheduler, VirtualClock
    from .disk import Disk
    from .events import EventLog
    from .log import Log
    from .log.recovery import check_before_opening
    from .records import SimpleRecord

    validate_topic_name(topic)
    config = config or LogConfig()
    rng = random.Random(seed)
    clock = VirtualClock(start_ms)
    scheduler = Scheduler(clock)
    events = EventLog(clock, keep=0)  # a long run would otherwise hold every event in memory
    disk = Disk(root)
    for p in range(partitions):  # every directory is checked before any is opened: a refusal writes nothing
        check_before_opening(disk, f"{topic}-{p}", config, recover=recover)
    logs = [Log(disk, f"{topic}-{p}", topic, p, config, scheduler, events, hw_follows_leo=True, recover=recover)
            for p in range(partitions)]
    pending: list[list] = [[] for _ in range(partitions)]
    # Batches here are counted in records, so the partitioner's byte count never fills
    # one: the sticky partition moves only when its batch is sent (on_new_batch).
    partitioner = DefaultPartitioner(partitions, rng, batch_size=1 << 62)
    try:
        for i in range(count):
            key = f"key-{i % key_cardinality}".encode() if key_cardinality else None
            value = "".join(rng.choices(_VALUE_ALPHABET, k=value_bytes)).encode()
            p = partitioner.partition(key, len(value) + len(key or b"")).partition
            pending[p].append(SimpleRecord(value=value, key=key, timestamp=scheduler.now_ms()))
            if len(pending[p]) >= batch_size:
                logs[p].append_as_leader(pending[p], leader_epoch=0)
                pending[p] = []
                if key is None:
                    partitioner.on_new_batch()
            scheduler.advance(ms_per_record)
        for p, records in enumerate(pending):
            if records:
                logs[p].append_as_leader(records, leader_epoch=0)
    finally:
        for log in logs:
            log.close()
    summaries = tuple(
        PartitionSummary(p, log.name, log.log_end_offset - log.log_start_offset, log.log_start_offset,
                         log.log_end_offset, len(log.segments), log.size_bytes)
        for p, log in enumerate(logs))
    return ProduceSummary(topic, summaries, scheduler.now_ms())


def _require_directory(path: str) -> None:
    if os.path.exists(path) and not os.path.isdir(path):
        raise InvalidRequestError(f"--dir {path} exists and is not a directory")


def _cmd_produce(args: argparse.Namespace) -> int:
    validate_topic_name(args.topic)
    if args.count * args.ms_per_record > MAX_VIRTUAL_MS:
        raise InvalidRequestError(f"--count {args.count} x --ms-per-record {args.ms_per_record} is "
                                  f"{args.count * args.ms_per_record} ms of virtual time; at most {MAX_VIRTUAL_MS} "
                                  "(a year of retention passes) is accepted")
    _require_directory(args.dir)
    config = log_config_from_args(args)
    summary = produce(args.dir, args.topic, args.partitions, args.count, args.value_bytes,
                      key_cardinality=args.key_cardinality, config=config, seed=args.seed,
                      batch_size=args.batch_size, ms_per_record=args.ms_per_record, recover=args.recover)
    print(f"produced {args.count} records to {args.topic} in {args.dir} "
          f"(seed {args.seed}, virtual time now {summary.end_ms} ms)")
    print(f"{'partition':<24} {'records':>10} {'start':>10} {'end':>10} {'segments':>9} {'bytes':>12}")
    for p in summary.partitions:
        print(f"{p.dir:<24} {p.records:>10} {p.log_start_offset:>10} {p.log_end_offset:>10} "
              f"{p.segments:>9} {p.bytes:>12}")
    return 0


# ---- dump ------------------------------------------------------------------------

def _cmd_dump(args: argparse.Namespace) -> int:
    from .dump import dump_files

    files = list(args.files) + [f for f in (args.files_option or "").split(",") if f]
    problems = dump_files(files, sys.stdout, sys.stderr, deep_iteration=args.deep_iteration,
                          print_data_log=args.print_data_log, skip_record_metadata=args.skip_record_metadata,
                          verify_index_only=args.verify_index_only, cluster_metadata=args.cluster_metadata_decoder)
    if problems.any:  # everything readable was printed; the exit status says something was not
        sys.stdout.flush()
        print(f"error: {problems.first()}", file=sys.stderr)
        return 1
    return 0


# ---- storage experiment ----------------------------------------------------------

def _cmd_storage_experiment(args: argparse.Namespace) -> int:
    from .storage_experiment import main as experiment_main

    if args.dir:
        _require_directory(args.dir)
    return experiment_main(args)


# ---- parser ----------------------------------------------------------------------

def _int_at_least(low: int, high: int | None = None):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be at least {low}, got {value}")
        if high is not None and value > high:
            raise argparse.ArgumentTypeError(f"must be at most {high}, got {value}")
        return value
    parse.__name__ = f"integer >= {low}" if high is None else f"integer in [{low}, {high}]"
    return parse


# The command line's limits: a long run is the user's choice, but not hours or all memory.
MAX_PARTITIONS = 1000            # as a run's create_topic
MAX_RECORDS = 10_000_000
MAX_VALUE_BYTES = 1 << 20        # about Kafka's default max.message.bytes (1048588)
MAX_MESSAGES = 100_000
MAX_MS_PER_RECORD = 604_800_000   # a week, as a run's `advance`
MAX_VIRTUAL_MS = 366 * 86_400_000  # a produce run's whole virtual time: a year of retention passes


def _any_int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None


class _Parser(argparse.ArgumentParser):
    """argparse with its usage errors in one line (``prog: error: …; usage: prog --help``), exit 2;
    sub-parsers are made of the same class."""

    def error(self, message: str):  # type: ignore[override]
        message = " ".join(message.split())
        self.exit(2, f"{self.prog}: error: {message}; usage: {self.prog} --help\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="python -m engine", description="kafkaviz storage engine: write, dump and experiment with Kafka logs.")
    sub = parser.add_subparsers(dest="command", metavar="command", required=True)

    p = sub.add_parser("produce", help="write records into real partition directories DIR/T-0 … T-(N-1)",
                       description="Append records through the engine's Log into DIR/<topic>-<partition>. "
                                   "Keyed records are placed by murmur2(key) %% partitions (Kafka's default "
                                   "partitioner); without --key-cardinality records have no key and stick to one partition "
                                   "per batch (the sticky partitioner, KIP-480).")
    p.add_argument("--dir", required=True, help="data directory (created if missing)")
    p.add_argument("--topic", required=True)
    p.add_argument("--partitions", type=_int_at_least(1, MAX_PARTITIONS), default=1)
    p.add_argument("--count", type=_int_at_least(0, MAX_RECORDS), required=True, help="number of records")
    p.add_argument("--value-bytes", type=_int_at_least(0, MAX_VALUE_BYTES), default=100,
                   help="size of each value (default 100)")
    p.add_argument("--key-cardinality", type=_int_at_least(1, MAX_RECORDS), default=None,
                   help="keys are key-{i %% N}; omit for keyless records")
    p.add_argument("--segment-bytes", type=_any_int, default=None, help="segment.bytes")
    p.add_argument("--index-interval-bytes", type=_any_int, default=None, help="index.interval.bytes")
    p.add_argument("--retention-bytes", type=_any_int, default=None, help="retention.bytes (-1 = unlimited)")
    p.add_argument("--retention-ms", type=_any_int, default=None, help="retention.ms (-1 = unlimited)")
    p.add_argument("--seed", type=_any_int, default=0, help="seed of the value generator (default 0)")
    p.add_argument("--batch-size", type=_int_at_least(1, MAX_RECORDS), default=1, help="records per batch (default 1)")
    p.add_argument("--ms-per-record", type=_int_at_least(0, MAX_MS_PER_RECORD), default=1,
                   help="virtual milliseconds between records (default 1); retention passes run every "
                        "log.retention.check.interval.ms (300000) of virtual time")
    p.add_argument("--recover", action="store_true",
                   help="repair damaged partition directories already in --dir first, as Kafka's recovery at "
                        "broker start does; without it a damaged one is refused and left untouched")
    p.set_defaults(func=_cmd_produce)

    d = sub.add_parser("dump", help="print segment files like kafka-dump-log.sh",
                       description="Print .log, .index, .timeindex (also .txnindex, .snapshot, and KRaft "
                                   ".checkpoint snapshots) files in the format of Kafka's kafka-dump-log.sh. "
                                   "A directory stands for its segment files.")
    d.add_argument("files", nargs="*", metavar="FILE")
    d.add_argument("--files", dest="files_option", default=None, metavar="FILE,FILE",
                   help="comma-separated files, as kafka-dump-log.sh takes them")
    d.add_argument("--deep-iteration", action="store_true", help="print every record, not just batches")
    d.add_argument("--print-data-log", action="store_true", help="print keys and values (implies --deep-iteration)")
    d.add_argument("--skip-record-metadata", action="store_true",
                   help="with --print-data-log, print only key and payload on record lines")
    d.add_argument("--verify-index-only", action="store_true",
                   help="check index entries against the log and print only the problems")
    d.add_argument("--cluster-metadata-decoder", action="store_true",
                   help="decode payloads as KRaft metadata records (__cluster_metadata segments and "
                        "<offset>-<epoch>.checkpoint snapshots); implies --print-data-log")
    d.set_defaults(func=_cmd_dump, dump_parser=d)

    e = sub.add_parser("storage-experiment", help="replay the segment/retention experiment of seed 000 §1.4",
                       description="A 2-partition topic with segment.bytes=1000, retention.bytes=2000, "
                                   "retention.ms=60000; messages sent one by one; then time moves on so the "
                                   "retention pass runs and .deleted files are removed.")
    e.add_argument("--dir", default=None, help="data directory (default: a fresh temporary directory)")
    e.add_argument("--json", action="store_true", help="print the steps as JSON instead of text")
    e.add_argument("--messages", type=_int_at_least(1, MAX_MESSAGES), default=None,
                   help="messages to send (default 48)")
    e.set_defaults(func=_cmd_storage_experiment)

    _add_cluster_subcommands(sub)
    _add_group_subcommands(sub)
    from .log import cleaner_cli  # `clean` belongs to the log package

    cleaner_cli.add_subcommands(sub)
    return parser


def _add_cluster_subcommands(sub) -> None:
    from .cluster import cli as cluster_cli  # `run` and `scenario` belong to the cluster package

    cluster_cli.add_subcommands(sub)


def _add_group_subcommands(sub) -> None:
    from .group import cli as group_cli  # `assign` belongs to the group package

    group_cli.add_subcommands(sub)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)  # usage errors exit 2 here
    if args.command == "dump" and not args.files and not args.files_option:
        args.dump_parser.error("name at least one FILE (or --files FILE,FILE)")
    try:
        return int(args.func(args) or 0)
    except KafkaError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # `… | head` closed the pipe: not an error worth a traceback
        return 0
    except OSError as exc:  # missing file, a --dir that is a file, no permission, disk full
        message = f"{exc.strerror}: {exc.filename}" if exc.strerror and exc.filename else str(exc)
        print(f"error: {message}", file=sys.stderr)
        return 1
    except MemoryError:
        print("error: out of memory; try smaller sizes", file=sys.stderr)
        return 1
    except Exception as exc:  # a bug: still one line, never a traceback (the fuzz tests look for this one)
        print(f"error: internal error {type(exc).__name__}: {exc} (please report it with the command line)",
              file=sys.stderr)
        return 70
