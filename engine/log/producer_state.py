"""Producer state of one partition: the idempotent producer's sequence checks, open and
completed transactions, and the last stable offset (LSO).

What a partition leader keeps per producer id (Kafka's ``ProducerStateEntry``): the epoch,
the coordinator epoch of the last transaction marker, the timestamp of its last batch,
the first offset of its open transaction (if any) and the metadata of its **last five
batches** — Kafka's ``NUM_BATCHES_TO_RETAIN``, which is why an idempotent client caps
``max.in.flight.requests.per.connection`` at 5: a retried batch is recognised as a
duplicate only while it is among the last five.

Checks on a client batch, in Kafka's order (``UnifiedLog.analyzeAndValidateProducerState``
and ``ProducerAppendInfo``):

1. the same epoch and sequence range as one of the five cached batches → a duplicate:
   nothing is appended and the original offsets are answered;
2. an epoch below the current one → ``INVALID_PRODUCER_EPOCH`` (the producer is fenced);
3. a new epoch with a base sequence other than 0 → ``OUT_OF_ORDER_SEQUENCE_NUMBER``;
4. the same epoch with a base sequence other than last + 1 (wrapping at 2^31-1) →
   ``OUT_OF_ORDER_SEQUENCE_NUMBER``, unless the producer's state was lost (no epoch known);
5. a non-transactional batch while the producer has a transaction open →
   ``INVALID_TXN_STATE``.

Replicated appends (``origin="replication"``) skip the sequence checks, as a follower
copies what the leader validated.

``<offset>.snapshot`` files hold the last batch of every producer; their byte layout
(Kafka's ``ProducerSnapshot.json`` v1) is in docs/file-formats.md. On load only the last batch of each producer is known; the rest of the five-batch
window is rebuilt by replaying the log after the snapshot, exactly as Kafka does.
"""
from __future__ import annotations

import struct
from collections import deque
from dataclasses import dataclass
from typing import Iterable, NamedTuple

from crc32c import crc32c

from ..disk import Disk
from ..errors import (
    CorruptSnapshotError,
    InvalidProducerEpochError,
    InvalidTxnStateError,
    OutOfOrderSequenceError,
    TransactionCoordinatorFencedError,
)

__all__ = ["BatchMetadata", "ProducerStateEntry", "TxnMetadata", "CompletedTxn", "ProducerStateManager",
           "NUM_BATCHES_TO_RETAIN", "NO_PRODUCER_ID", "NO_PRODUCER_EPOCH", "NO_SEQUENCE", "snapshot_name",
           "encode_snapshot", "decode_snapshot"]

NUM_BATCHES_TO_RETAIN = 5
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
INT32_MAX = 2**31 - 1
SNAPSHOT_VERSION = 1
SNAPSHOT_SUFFIX = ".snapshot"

_HEAD = struct.Struct(">hIi")
_ENTRY = struct.Struct(">qhiqiqiq")
assert _ENTRY.size == 46


def snapshot_name(offset: int) -> str:
    return f"{offset:020d}{SNAPSHOT_SUFFIX}"


def _seq_add(seq: int, delta: int) -> int:
    """Sequences wrap from 2^31-1 back to 0."""
    return (seq + delta) % (INT32_MAX + 1)


def _in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == INT32_MAX)


class BatchMetadata(NamedTuple):
    """One of the last five batches of a producer."""

    last_seq: int
    last_offset: int
    offset_delta: int
    timestamp: int

    @property
    def first_seq(self) -> int:
        return _seq_add(self.last_seq, -self.offset_delta)

    @property
    def first_offset(self) -> int:
        return self.last_offset - self.offset_delta


@dataclass
class ProducerStateEntry:
    producer_id: int
    producer_epoch: int = NO_PRODUCER_EPOCH
    coordinator_epoch: int = -1
    last_timestamp: int = -1
    current_txn_first_offset: int | None = None
    batches: deque | None = None

    def __post_init__(self) -> None:
        if self.batches is None:
            self.batches = deque(maxlen=NUM_BATCHES_TO_RETAIN)

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else NO_SEQUENCE

    @property
    def last_offset(self) -> int:
        return self.batches[-1].last_offset if self.batches else -1

    def find_duplicate(self, epoch: int, first_seq: int, last_seq: int) -> BatchMetadata | None:
        if epoch != self.producer_epoch:
            return None
        for b in self.batches:
            # last_seq first: a plain field, while first_seq is computed (the common new batch
            # matches no cached last_seq, so the property is never evaluated on the hot path)
            if b.last_seq == last_seq and b.first_seq == first_seq:
                return b
        return None

    def to_dict(self) -> dict:
        return {"producer_id": self.producer_id, "epoch": self.producer_epoch,
                "coordinator_epoch": self.coordinator_epoch, "last_timestamp": self.last_timestamp,
                "txn_first_offset": self.current_txn_first_offset,
                "batches": [[b.first_seq, b.last_seq, b.first_offset, b.last_offset] for b in self.batches]}


@dataclass(frozen=True)
class TxnMetadata:
    """An open transaction on this partition, or a completed one whose marker is not yet
    below the high watermark (``last_offset`` set)."""

    producer_id: int
    first_offset: int
    last_offset: int | None = None


@dataclass(frozen=True)
class CompletedTxn:
    """What a COMMIT or ABORT marker closed; an aborted one goes into the ``.txnindex``."""

    producer_id: int
    first_offset: int
    last_offset: int
    is_aborted: bool


def encode_snapshot(entries: Iterable[ProducerStateEntry]) -> bytes:
    body = bytearray()
    count = 0
    for e in entries:
        if not e.batches:
            continue
        last = e.batches[-1]
        txn = -1 if e.current_txn_first_offset is None else e.current_txn_first_offset
        body += _ENTRY.pack(e.producer_id, e.producer_epoch, last.last_seq, last.last_offset, last.offset_delta,
                            last.timestamp, e.coordinator_epoch, txn)
        count += 1
    tail = struct.pack(">i", count) + bytes(body)
    return struct.pack(">hI", SNAPSHOT_VERSION, crc32c(tail)) + tail


def decode_snapshot(data: bytes, name: str = "snapshot") -> list[ProducerStateEntry]:
    if len(data) < _HEAD.size:
        raise CorruptSnapshotError(f"{name}: {len(data)} bytes, shorter than the {_HEAD.size}-byte header")
    version, crc, count = _HEAD.unpack_from(data, 0)
    if version != SNAPSHOT_VERSION:
        raise CorruptSnapshotError(f"{name}: snapshot version {version}, expected {SNAPSHOT_VERSION}")
    if crc32c(data[6:]) != crc:
        raise CorruptSnapshotError(f"{name}: CRC {crc32c(data[6:])} does not match the stored {crc}")
    if count < 0 or len(data) != _HEAD.size + count * _ENTRY.size:
        raise CorruptSnapshotError(f"{name}: {count} entries do not fill {len(data)} bytes")
    out = []
    for i in range(count):
        pid, epoch, last_seq, last_offset, delta, ts, coord, txn = _ENTRY.unpack_from(data, _HEAD.size + i * _ENTRY.size)
        entry = ProducerStateEntry(pid, epoch, coord, ts, None if txn < 0 else txn)
        entry.batches.append(BatchMetadata(last_seq, last_offset, delta, ts))
        out.append(entry)
    return out


class ProducerStateManager:
    """The producer table of one partition, its transactions and its ``.snapshot`` files.

    ``dir_rel`` is the partition directory on ``disk``. ``map_end_offset`` is the offset up
    to which the table reflects the log (exclusive); the log calls :meth:`update` for every
    batch it appends, in offset order."""

    def __init__(self, disk: Disk, dir_rel: str, *, producer_id_expiration_ms: int = 86_400_000) -> None:
        self.disk = disk
        self.dir = dir_rel
        self.producer_id_expiration_ms = producer_id_expiration_ms
        self.producers: dict[int, ProducerStateEntry] = {}
        self.ongoing: dict[int, TxnMetadata] = {}        # first offset -> open transaction
        self.unreplicated: dict[int, TxnMetadata] = {}   # first offset -> completed, marker >= HW
        self.map_end_offset = 0

    # ---- validation and update (append path) ---------------------------------
    def check_duplicate(self, producer_id: int, epoch: int, first_seq: int, last_seq: int) -> BatchMetadata | None:
        """A client batch already appended (step 1): its original metadata, else None."""
        entry = self.producers.get(producer_id)
        return entry.find_duplicate(epoch, first_seq, last_seq) if entry else None

    def validate(self, producer_id: int, epoch: int, first_seq: int, is_transactional: bool,
                 origin: str = "client") -> None:
        """Steps 2–5 for a data batch; raises a Kafka-named error and changes nothing."""
        entry = self.producers.get(producer_id)
        current_epoch = entry.producer_epoch if entry else NO_PRODUCER_EPOCH
        if entry is not None and epoch < current_epoch:
            raise InvalidProducerEpochError(
                f"producer {producer_id}: epoch {epoch} is older than the current epoch {current_epoch}")
        if origin != "client":
            return
        if entry is None or epoch != current_epoch:
            if first_seq != 0 and current_epoch != NO_PRODUCER_EPOCH:
                raise OutOfOrderSequenceError(
                    f"producer {producer_id}: a new epoch {epoch} must start at sequence 0, got {first_seq}")
        elif entry.batches and not _in_sequence(entry.last_seq, first_seq):
            raise OutOfOrderSequenceError(
                f"producer {producer_id} epoch {epoch}: expected sequence {_seq_add(entry.last_seq, 1)}, "
                f"got {first_seq} (a batch was lost or reordered)")
        if entry is not None and entry.current_txn_first_offset is not None and not is_transactional:
            raise InvalidTxnStateError(
                f"producer {producer_id} has a transaction open since offset {entry.current_txn_first_offset}: "
                f"a non-transactional write is not allowed")

    def update(self, producer_id: int, epoch: int, first_seq: int, last_seq: int, first_offset: int,
               last_offset: int, max_timestamp: int, is_transactional: bool) -> None:
        """Record an appended data batch (after :meth:`validate`)."""
        entry = self.producers.get(producer_id)
        if entry is None:
            entry = self.producers[producer_id] = ProducerStateEntry(producer_id)
        if epoch != entry.producer_epoch:
            entry.producer_epoch = epoch
            entry.batches.clear()
        if first_seq != NO_SEQUENCE:
            entry.batches.append(BatchMetadata(last_seq, last_offset, last_offset - first_offset, max_timestamp))
        entry.last_timestamp = max_timestamp
        if is_transactional and entry.current_txn_first_offset is None:
            entry.current_txn_first_offset = first_offset
            self.ongoing[first_offset] = TxnMetadata(producer_id, first_offset)
        self.map_end_offset = last_offset + 1

    def complete_txn(self, producer_id: int, epoch: int, coordinator_epoch: int, is_commit: bool,
                     marker_offset: int, timestamp: int, origin: str = "coordinator") -> CompletedTxn:
        """Apply a COMMIT/ABORT marker written at ``marker_offset``."""
        entry = self.producers.get(producer_id)
        if entry is None:
            entry = self.producers[producer_id] = ProducerStateEntry(producer_id)
        if entry.producer_epoch != NO_PRODUCER_EPOCH and epoch < entry.producer_epoch:
            raise InvalidProducerEpochError(
                f"marker for producer {producer_id}: epoch {epoch} is older than {entry.producer_epoch}")
        if origin != "replication" and coordinator_epoch < entry.coordinator_epoch:
            raise TransactionCoordinatorFencedError(
                f"marker for producer {producer_id}: coordinator epoch {coordinator_epoch} is older than "
                f"{entry.coordinator_epoch}")
        first = entry.current_txn_first_offset if entry.current_txn_first_offset is not None else marker_offset
        done = CompletedTxn(producer_id, first, marker_offset, not is_commit)
        if epoch != entry.producer_epoch:
            entry.producer_epoch = epoch
            entry.batches.clear()
        entry.coordinator_epoch = coordinator_epoch
        entry.last_timestamp = timestamp
        entry.current_txn_first_offset = None
        self.ongoing.pop(first, None)
        self.unreplicated[first] = TxnMetadata(producer_id, first, marker_offset)
        self.map_end_offset = marker_offset + 1
        return done

    # ---- the last stable offset ----------------------------------------------
    def first_unstable_offset(self) -> int | None:
        firsts = list(self.ongoing) + list(self.unreplicated)
        return min(firsts) if firsts else None

    def on_high_watermark_updated(self, hw: int) -> None:
        """Completed transactions whose marker is below the HW no longer hold the LSO back."""
        for first in [f for f, t in self.unreplicated.items() if t.last_offset is not None and t.last_offset < hw]:
            del self.unreplicated[first]

    def last_stable_offset(self, hw: int) -> int:
        first = self.first_unstable_offset()
        return hw if first is None else min(first, hw)

    def lso_for_completed(self, done: CompletedTxn) -> int:
        """The LSO recorded in the ``.txnindex`` entry of an aborted transaction: the first
        offset of the oldest other open transaction, else the marker offset + 1."""
        others = [f for f, t in self.ongoing.items() if t.producer_id != done.producer_id]
        return min(others) if others else done.last_offset + 1

    # ---- expiry ----------------------------------------------------------------
    def remove_expired_producers(self, now_ms: int) -> list[int]:
        gone = [pid for pid, e in self.producers.items()
                if e.current_txn_first_offset is None and now_ms - e.last_timestamp >= self.producer_id_expiration_ms]
        for pid in gone:
            del self.producers[pid]
        return gone

    # ---- snapshots --------------------------------------------------------------
    def snapshot_offsets(self) -> list[int]:
        if not self.disk.exists(self.dir):
            return []
        out = []
        for name in self.disk.listdir(self.dir):
            stem, _, suffix = name.partition(".")
            if "." + suffix == SNAPSHOT_SUFFIX and stem.isdigit() and len(stem) == 20:
                out.append(int(stem))
        return sorted(out)

    def take_snapshot(self) -> str:
        """Write ``<map_end_offset>.snapshot`` (atomically) and return its name."""
        name = snapshot_name(self.map_end_offset)
        self.disk.write_atomic(f"{self.dir}/{name}", encode_snapshot(self.producers.values()))
        return name

    def truncate_and_reload(self, log_start_offset: int, log_end_offset: int) -> int | None:
        """Delete snapshots outside ``[log_start_offset, log_end_offset]``, then load the
        latest remaining valid one (corrupt ones are deleted, as Kafka does). Returns the
        offset the state now covers (the caller replays the log from there), or None when
        no snapshot was loaded (state empty from ``log_start_offset``)."""
        for off in self.snapshot_offsets():
            if off < log_start_offset or off > log_end_offset:
                self.disk.delete(f"{self.dir}/{snapshot_name(off)}")
        self.producers.clear()
        self.ongoing.clear()
        self.unreplicated.clear()
        for off in reversed(self.snapshot_offsets()):
            rel = f"{self.dir}/{snapshot_name(off)}"
            try:
                entries = decode_snapshot(self.disk.read_all(rel), snapshot_name(off))
            except CorruptSnapshotError:
                self.disk.delete(rel)
                continue
            for e in entries:
                self.producers[e.producer_id] = e
                if e.current_txn_first_offset is not None:
                    self.ongoing[e.current_txn_first_offset] = TxnMetadata(e.producer_id, e.current_txn_first_offset)
            self.map_end_offset = off
            return off
        self.map_end_offset = log_start_offset
        return None

    def delete_snapshots_before(self, offset: int) -> None:
        for off in self.snapshot_offsets():
            if off < offset:
                self.disk.delete(f"{self.dir}/{snapshot_name(off)}")

    def state(self) -> dict:
        return {"producers": [e.to_dict() for _, e in sorted(self.producers.items())],
                "ongoing": sorted([t.producer_id, t.first_offset] for t in self.ongoing.values()),
                "unreplicated": sorted([t.producer_id, t.first_offset, t.last_offset]
                                       for t in self.unreplicated.values()),
                "first_unstable_offset": self.first_unstable_offset()}
