"""The metadata log's snapshots: ``<end offset>-<epoch>.checkpoint`` files beside the segments.

A snapshot's id is the offset after the last record it covers (20 digits in the name) and that
record's epoch (10 digits), as Kafka's ``Snapshots.filenameFromSnapshotId`` names it. The file is
v2 record batches, offsets from 0, every batch carrying the snapshot's epoch
(``RecordsSnapshotWriter``):

- a control batch holding a SnapshotHeaderRecord (version 0, the append time of the last record
  the snapshot covers) and, under kraft.version 1 (KIP-853), a KRaftVersionRecord and the
  VotersRecord in force (``RecordsSnapshotWriter.Builder``);
- data batches holding the state machine's records;
- a control batch holding a SnapshotFooterRecord (version 0).

A snapshot is written to ``<id>.checkpoint.part``, fsync'd, and renamed (frozen) to
``<id>.checkpoint``; a ``.part`` left by a crash is deleted when the node starts, as Kafka does.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from engine.errors import CorruptRecordError
from engine.records import SimpleRecord, encode_batch, iter_batches

from .records import SnapshotFooterRecord, SnapshotHeaderRecord, control_batch, decode_control

__all__ = ["SnapshotId", "BOOTSTRAP_SNAPSHOT_ID", "snapshot_name", "parse_snapshot_name", "encode_snapshot", "decode_snapshot",
           "SnapshotContents", "PART_SUFFIX", "SUFFIX"]

SUFFIX = ".checkpoint"
PART_SUFFIX = ".checkpoint.part"
_NAME = re.compile(r"^(\d{20})-(\d{10})\.checkpoint$")


@dataclass(frozen=True, order=True)
class SnapshotId:
    """Kafka's OffsetAndEpoch: ``end_offset`` is the first offset *not* in the snapshot."""
    end_offset: int
    epoch: int

    @property
    def name(self) -> str:
        return snapshot_name(self)


BOOTSTRAP_SNAPSHOT_ID = SnapshotId(0, 0)
"""Snapshots.BOOTSTRAP_SNAPSHOT_ID: ``kafka-storage format --standalone`` / ``--initial-controllers``
writes it on each initial voter, holding only the KRaftVersionRecord and the VotersRecord."""


def snapshot_name(sid: SnapshotId) -> str:
    return f"{sid.end_offset:020d}-{sid.epoch:010d}{SUFFIX}"


def parse_snapshot_name(name: str) -> SnapshotId | None:
    m = _NAME.match(name)
    return SnapshotId(int(m.group(1)), int(m.group(2))) if m else None


@dataclass(frozen=True)
class SnapshotContents:
    header: object
    values: list          # the data records' values, in order
    footer: object
    control: tuple = ()   # the other control messages (KRaftVersionRecord, VotersRecord), in order


def encode_snapshot(sid: SnapshotId, values: list, last_contained_ms: int, now_ms: int,
                    max_batch_records: int = 1000, header_extras: tuple = ()) -> bytes:
    """The bytes of a snapshot file holding ``values`` (the state machine's records);
    ``header_extras`` are control messages written in the header's batch after it
    (KRaftVersionRecord, VotersRecord)."""
    header = SnapshotHeaderRecord(version=0, last_contained_log_timestamp=last_contained_ms)
    out = bytearray(control_batch([header, *header_extras], base_offset=0, epoch=sid.epoch, now_ms=now_ms))
    offset = 1 + len(header_extras)
    for i in range(0, len(values), max_batch_records):
        chunk = [SimpleRecord(bytes(v), timestamp=now_ms) for v in values[i:i + max_batch_records]]
        out += encode_batch(chunk, base_offset=offset, partition_leader_epoch=sid.epoch, now_ms=now_ms)[0]
        offset += len(chunk)
    out += control_batch(SnapshotFooterRecord(version=0), base_offset=offset, epoch=sid.epoch, now_ms=now_ms)
    return bytes(out)


def decode_snapshot(data: bytes, what: str = "snapshot") -> SnapshotContents:
    """A snapshot file's header, data values and footer (CorruptRecordError if it is not whole:
    the header first, the footer last, nothing after it)."""
    header = footer = None
    values: list = []
    control: list = []
    try:
        for _, batch in iter_batches(data):
            if footer is not None:
                raise CorruptRecordError(f"{what}: a batch after the SnapshotFooter")
            records = list(batch)
            if batch.is_control:
                for r in records:
                    msg = decode_control(r.key, r.value)
                    if isinstance(msg, SnapshotHeaderRecord):
                        if header is not None or values:
                            raise CorruptRecordError(f"{what}: a SnapshotHeader that is not the first record")
                        header = msg
                    elif isinstance(msg, SnapshotFooterRecord):
                        footer = msg
                    elif header is None:
                        raise CorruptRecordError(f"{what}: does not start with a SnapshotHeader")
                    else:
                        control.append(msg)
            else:
                if header is None:
                    raise CorruptRecordError(f"{what}: does not start with a SnapshotHeader")
                values.extend(r.value for r in records)
    except CorruptRecordError:
        raise
    except ValueError as exc:
        raise CorruptRecordError(f"{what}: {exc}") from None
    if header is None:
        raise CorruptRecordError(f"{what}: no SnapshotHeader")
    if footer is None:
        raise CorruptRecordError(f"{what}: no SnapshotFooter (not frozen whole)")
    return SnapshotContents(header, values, footer, tuple(control))
