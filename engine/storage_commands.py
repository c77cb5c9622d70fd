"""The command vocabulary of a one-broker storage world: every action lessons 1–7 and
their sandboxes take on a log, a topic with its partitioner, or a standalone broker
with its page cache, as data.

Commands travel as the cluster's do (``engine/cluster/commands.py``): a JSON object
``{"cmd": "advance", "ms": 5000}`` that :func:`parse_storage_command` turns into a frozen
dataclass, refusing unknown commands, unknown fields, wrong types and out-of-range
numbers with an :class:`~engine.errors.InvalidRequestError` naming the field and value.
The fields' metadata (kind, bounds, choices, doc) is the one home of their limits: the
web forms derive theirs from it, narrowed only by the demo host's caps and the world's
shape (its number of partitions, its segment size).

The vocabulary is separate from the cluster's: ``produce`` or ``crash`` mean different
things to one broker's log and to a replicated cluster. Which world applies them is the
sandbox's business (``kafkaviz/live``); the names and fields are the engine's.
Durations are in milliseconds (``ms``), like every other duration in the engine.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Mapping

from .cluster.commands import MAX_ADVANCE_MS, MAX_PRODUCE_COUNT, MAX_VALUE_SIZE, Command, field_spec, parse_command

__all__ = ["StorageCommand", "STORAGE_COMMANDS", "parse_storage_command", "MAX_OFFSET",
           "Produce", "Advance", "LookupOffset", "LookupTime", "SetIndexInterval", "SelectSegment",
           "DeleteRecords", "SetRetention", "Put", "Delete", "Clean", "Flush", "Writeback", "Crash",
           "Restart", "SetFlush", "Fetch", "Poll", "Rewind"]

STORAGE_COMMANDS: dict[str, type[Command]] = {}
MAX_OFFSET = 10**12 - 1
KEY_MODES = ("none", "fixed", "cycle")


@dataclass(frozen=True)
class StorageCommand(Command):
    """Base of a storage world's commands (joins :data:`STORAGE_COMMANDS`)."""

    vocabulary: ClassVar[dict[str, type[Command]]] = STORAGE_COMMANDS


def parse_storage_command(data: Any) -> StorageCommand:
    """A command dict → a validated, frozen :class:`StorageCommand`."""
    return parse_command(data, STORAGE_COMMANDS)  # type: ignore[return-value]


# ---- records in ------------------------------------------------------------------------

@dataclass(frozen=True, kw_only=True)    # keyword-only: the partition comes first, as forms show it
class Produce(StorageCommand):
    cmd: ClassVar[str] = "produce"
    summary: ClassVar[str] = ("Send `count` records, each in its own batch (linger.ms=0); the topic's "
                              "producer batches by partition and lets the default partitioner place them.")
    partition: int | None = field_spec("int?", None, low=-1,
                                       doc="partition; null or -1: the partitioner chooses (one-partition "
                                           "logs: partition 0)")
    count: int = field_spec("int", low=1, high=MAX_PRODUCE_COUNT, doc="number of records")
    value_size: int = field_spec("int", 100, low=1, high=MAX_VALUE_SIZE,
                                 doc="bytes per generated value (the topic's producer writes order-N values)")
    key: str | None = field_spec("str?", None, doc="record key (printable ASCII); null or empty for none")
    key_mode: str | None = field_spec("str?", None, choices=KEY_MODES,
                                      doc='the topic\'s producer: "none", "fixed" (the key) or "cycle" '
                                          "(user-0, user-1, …); null: fixed when a key is given")

    def mode(self) -> str:
        if self.key_mode is not None:
            return self.key_mode
        return "fixed" if self.key else "none"


@dataclass(frozen=True)
class Put(StorageCommand):
    cmd: ClassVar[str] = "put"
    summary: ClassVar[str] = "Write key=value to a compacted topic (a record with a key, as compaction requires)."
    key: str = field_spec("str", doc="record key")
    value: str = field_spec("str", doc="record value")


@dataclass(frozen=True)
class Delete(StorageCommand):
    cmd: ClassVar[str] = "delete"
    summary: ClassVar[str] = "Delete a key of a compacted topic: write a tombstone (the key with a null value)."
    key: str = field_spec("str", doc="record key")


# ---- time ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Advance(StorageCommand):
    cmd: ClassVar[str] = "advance"
    summary: ClassVar[str] = ("Move the virtual clock forward by `ms`; due tasks (retention checks, file "
                              "deletes, the cleaner, flush.ms) run in order.")
    ms: int = field_spec("int", low=1, high=MAX_ADVANCE_MS, doc="milliseconds to advance")


# ---- reading the files -----------------------------------------------------------------

@dataclass(frozen=True)
class LookupOffset(StorageCommand):
    cmd: ClassVar[str] = "lookup_offset"
    summary: ClassVar[str] = "Find the batch holding an offset, as a fetch does: segment by name, .index, scan."
    offset: int = field_spec("int", low=0, high=MAX_OFFSET, doc="offset to find")


@dataclass(frozen=True)
class LookupTime(StorageCommand):
    cmd: ClassVar[str] = "lookup_time"
    summary: ClassVar[str] = "Find the first offset with a timestamp >= the target (ListOffsets), via .timeindex."
    timestamp: int = field_spec("int", low=0, high=MAX_OFFSET, doc="target timestamp (ms)")


@dataclass(frozen=True)
class SetIndexInterval(StorageCommand):
    cmd: ClassVar[str] = "set_index_interval"
    summary: ClassVar[str] = "Set index.interval.bytes: bytes between .index entries (new entries only)."
    bytes: int = field_spec("int", low=1, high=MAX_VALUE_SIZE, doc="index.interval.bytes")


@dataclass(frozen=True)
class SelectSegment(StorageCommand):
    cmd: ClassVar[str] = "select_segment"
    summary: ClassVar[str] = "Show another segment's files (a view; the log does not change)."
    segment: int = field_spec("int", low=0, high=MAX_OFFSET, doc="segment base offset")


@dataclass(frozen=True)
class Fetch(StorageCommand):
    cmd: ClassVar[str] = "fetch"
    summary: ClassVar[str] = "A consumer fetch from an offset: the byte range the broker hands to sendfile."
    offset: int = field_spec("int", low=0, high=MAX_OFFSET, doc="fetch offset")


@dataclass(frozen=True)
class Poll(StorageCommand):
    cmd: ClassVar[str] = "poll"
    summary: ClassVar[str] = "One poll of a simple consumer: fetch from its partitions in its order."
    consumer: str = field_spec("str", choices=("A", "B"), doc="consumer name")
    max_records: int = field_spec("int", 3, low=1, high=MAX_PRODUCE_COUNT, doc="max.poll.records")


@dataclass(frozen=True)
class Rewind(StorageCommand):
    cmd: ClassVar[str] = "rewind"
    summary: ClassVar[str] = "Seek a simple consumer back to the start of every partition."
    consumer: str = field_spec("str", choices=("A", "B"), doc="consumer name")


# ---- retention and compaction ------------------------------------------------------------

@dataclass(frozen=True)
class DeleteRecords(StorageCommand):
    cmd: ClassVar[str] = "delete_records"
    summary: ClassVar[str] = ("DeleteRecords: move the log start offset up; whole segments below it go at the "
                              "next retention check.")
    offset: int = field_spec("int", low=-1, high=MAX_OFFSET, doc="delete records before this offset; -1: the HW")


@dataclass(frozen=True)
class SetRetention(StorageCommand):
    cmd: ClassVar[str] = "set_retention"
    summary: ClassVar[str] = "Set retention.bytes and retention.ms; the next retention check applies them."
    retention_bytes: int = field_spec("int", low=-1, doc="retention.bytes; -1: no limit")
    retention_ms: int = field_spec("int", low=-1, doc="retention.ms; -1: no limit")


@dataclass(frozen=True)
class Clean(StorageCommand):
    cmd: ClassVar[str] = "clean"
    summary: ClassVar[str] = ("Run the log cleaner once now: it cleans only if the dirty ratio is above "
                              "min.cleanable.dirty.ratio.")


# ---- durability: the page cache, flush, crash ---------------------------------------------

@dataclass(frozen=True)
class Flush(StorageCommand):
    cmd: ClassVar[str] = "flush"
    summary: ClassVar[str] = "fsync the log now (what flush.messages / flush.ms do)."


@dataclass(frozen=True)
class SetFlush(StorageCommand):
    cmd: ClassVar[str] = "set_flush"
    summary: ClassVar[str] = "Set flush.messages and flush.ms (0: never, Kafka's default)."
    flush_messages: int = field_spec("int", low=0, doc="flush.messages; 0: never")
    flush_ms: int = field_spec("int", low=0, high=MAX_ADVANCE_MS, doc="flush.ms; 0: never")


@dataclass(frozen=True)
class Writeback(StorageCommand):
    cmd: ClassVar[str] = "writeback"
    summary: ClassVar[str] = "The OS writes whole dirty pages back on its own."


@dataclass(frozen=True)
class Crash(StorageCommand):
    cmd: ClassVar[str] = "crash"
    summary: ClassVar[str] = "Kill the broker; with power loss the page cache is lost too."
    power_loss: bool = field_spec("bool", True, doc="the OS goes down too (the page cache is lost)")


@dataclass(frozen=True)
class Restart(StorageCommand):
    cmd: ClassVar[str] = "restart"
    summary: ClassVar[str] = "Start the broker: log recovery runs from the recovery point."


def storage_command_dict(cmd: StorageCommand) -> dict[str, Any]:
    """The JSON form of a storage command (fields left at None are left out)."""
    return {k: v for k, v in cmd.to_dict().items() if v is not None}

