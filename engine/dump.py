"""``python -m engine dump``: print segment files the way Kafka's ``kafka-dump-log.sh`` does.

It reads any file the user names (ours, or one copied from a real broker) and never
writes, so it does not go through :class:`engine.disk.Disk` (whose job is to confine
the engine's *writes* to its data directory).

Dispatch is by suffix, as in Kafka's ``DumpLogSegments`` (reference §3.7):

* ``.log`` — ``Log starting offset: <base>`` then one line per batch (position, max
  timestamp, size, codec, CRC as an unsigned decimal, whether the CRC holds). With
  ``deep_iteration`` each record follows on a ``| offset: …`` line; ``print_data_log``
  adds ``key: …`` / ``payload: …`` decoded as UTF-8. Bytes after the last whole batch
  are reported as ``Found N invalid bytes at the end of <file name>``.
* ``.index`` — 8-byte entries ``int32 relativeOffset, int32 position`` (big-endian),
  printed as ``offset: <base + relative> position: <position>``.
* ``.timeindex`` — 12-byte entries ``int64 timestamp, int32 relativeOffset``, printed as
  ``timestamp: <ts> offset: <base + relative>``.
* ``.txnindex`` — 34-byte aborted-transaction entries; ``.snapshot`` — producer state.
* ``.checkpoint`` — a KRaft metadata snapshot (``<end offset>-<epoch>.checkpoint``):
  ``Snapshot end offset: <offset>, epoch: <epoch>``, then its batches as a ``.log``'s.
* anything else — ``Ignoring unknown file <path>`` on stderr.

In deep iteration a control record prints its type; SnapshotHeader, SnapshotFooter, KRaftVersion
and KRaftVoters records print their message as Kafka's JSON converters write it. With
``cluster_metadata`` (``--cluster-metadata-decoder``) each data record's payload is the metadata
record as ``{"type":…,"version":…,"data":{…}}`` and no key is printed (DumpLogSegments'
ClusterMetadataLogMessageParser); a value that does not decode prints Kafka's
``Error at <offset>, skipping. <why>`` there and makes the exit status 1.

Index files of an active segment are preallocated and zero-filled, so, like Kafka,
the walk stops at the first entry after entry 0 whose relative offset is 0 (a valid
index is strictly increasing, so only a zero slot can have relative offset 0 there).
The base offset comes from the file name (the text before the first ``.``).

Index entries are checked against the ``.log`` beside them, and the problems are
reported on stderr after all files, in Kafka's words ("Mismatches in :…",
"Found timestamp mismatch in :…", "Non-consecutive offsets in …").
"""
from __future__ import annotations

import json
import os
import re
import struct
from dataclasses import dataclass, field
from typing import Iterable, TextIO

from .errors import InvalidRequestError

__all__ = ["DumpProblems", "dump_files", "dump_file", "expand_paths", "base_offset_of", "SUFFIXES",
           "CODEC_NAMES", "read_offset_index", "read_time_index"]

SUFFIXES = (".log", ".index", ".timeindex", ".txnindex", ".snapshot", ".checkpoint")
CODEC_NAMES = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
_CONTROL_TYPES = {0: "ABORT", 1: "COMMIT", 2: "LEADER_CHANGE", 3: "SNAPSHOT_HEADER", 4: "SNAPSHOT_FOOTER",
                  5: "KRAFT_VERSION", 6: "KRAFT_VOTERS"}
_HEADER_UP_TO_MAGIC = 17      # baseOffset, batchLength, partitionLeaderEpoch, magic
_MIN_RECORD_OVERHEAD = 14     # Kafka's smallest legal batchLength (legacy v0 record overhead)
_INT_MAX = 2**31 - 1
_OFFSET_ENTRY = struct.Struct(">ii")
_TIME_ENTRY = struct.Struct(">qi")
_TXN_ENTRY = struct.Struct(">hqqqq")
_SEGMENT_FILE = re.compile(r"^([0-9]+\.(log|index|timeindex|txnindex|snapshot)|[0-9]{20}-[0-9]{10}\.checkpoint)$")
_SNAPSHOT_FILE = re.compile(r"^([0-9]{20})-([0-9]{10})\.checkpoint$")
BOOTSTRAP_SNAPSHOT = "bootstrap.checkpoint"
_CONTROL_JSON_NAMES = {3: "SnapshotHeader", 4: "SnapshotFooter", 5: "KRaftVersion", 6: "KRaftVoters"}


def _json(value) -> str:
    """Jackson's ``JsonNode.toString``: no spaces, non-ASCII as is."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


@dataclass
class DumpProblems:
    """What the index checks found, reported on stderr after every file is dumped
    (the order and wording of Kafka's tool)."""

    index_mismatches: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    time_mismatches: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    time_out_of_order: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    offsets_not_found: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    non_consecutive: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    #: Bytes that do not parse, each "what, where" in one line (the command exits 1 if any).
    unreadable: list[str] = field(default_factory=list)

    def write(self, err: TextIO) -> None:
        for name, pairs in self.index_mismatches.items():
            err.write(f"Mismatches in :{name}\n")
            for index_offset, log_offset in pairs:
                err.write(f"  Index offset: {index_offset}, log offset: {log_offset}\n")
        for name, pairs in self.time_mismatches.items():
            err.write(f"Found timestamp mismatch in :{name}\n")
            for index_ts, log_ts in pairs:
                err.write(f"  Index timestamp: {index_ts}, log timestamp: {log_ts}\n")
        for name, pairs in self.time_out_of_order.items():
            err.write(f"Found out of order timestamp in :{name}\n")
            for index_ts, prev_ts in pairs:
                err.write(f"  Index timestamp: {index_ts}, Previously indexed timestamp: {prev_ts}\n")
        for pairs in self.offsets_not_found.values():
            err.write("The following indexed offsets are not found in the log.\n")
            for indexed, found in pairs:
                err.write(f"Indexed offset: {indexed}, found log offset: {found}\n")
        for name, pairs in self.non_consecutive.items():
            err.write(f"Non-consecutive offsets in {name}\n")
            for first, second in pairs:
                err.write(f"  {first} is followed by {second}\n")

    def first(self) -> str:
        """One line for the command's final error: the first problem found, and the count."""
        lines = list(self.unreadable)
        for what, found in (("index entries that do not match the log", self.index_mismatches),
                            ("time-index timestamps that do not match the log", self.time_mismatches),
                            ("time-index timestamps out of order", self.time_out_of_order),
                            ("indexed offsets not found in the log", self.offsets_not_found),
                            ("non-consecutive offsets", self.non_consecutive)):
            lines += [f"{name}: {what}" for name in found]
        more = f" (and {len(lines) - 1} more problem(s) above)" if len(lines) > 1 else ""
        return lines[0] + more if lines else ""

    @property
    def any(self) -> bool:
        return any((self.unreadable, self.index_mismatches, self.time_mismatches, self.time_out_of_order,
                    self.offsets_not_found, self.non_consecutive))


# ---- helpers -----------------------------------------------------------------

def base_offset_of(path: str) -> int:
    """The segment's base offset: the file name up to its first ``.``."""
    stem = os.path.basename(path).split(".")[0]
    if not stem.isdigit():
        raise InvalidRequestError(
            f"cannot read a base offset from the file name {os.path.basename(path)!r}: "
            "segment files are named by a 20-digit offset, e.g. 00000000000000000000.log")
    return int(stem)


def _read(path: str) -> bytes:
    with open(path, "rb") as fh:
        return fh.read()


def _sibling(path: str, suffix: str) -> str:
    directory = os.path.dirname(os.path.abspath(path))
    return os.path.join(directory, os.path.basename(path).split(".")[0] + suffix)


def _bool(value: bool) -> str:
    return "true" if value else "false"


def _optional_long(value: int | None) -> str:
    return "OptionalLong.empty" if value is None else f"OptionalLong[{value}]"


def _increment_sequence(sequence: int, increment: int) -> int:
    # Sequences wrap from INT32_MAX back to 0 (Kafka's DefaultRecordBatch.incrementSequence).
    if sequence > _INT_MAX - increment:
        return increment - (_INT_MAX - sequence) - 1
    return sequence + increment


def _timestamp_type_name(header) -> str:
    return "LogAppendTime" if int(header.timestamp_type) == 1 else "CreateTime"


def read_offset_index(data: bytes, base: int) -> list[tuple[int, int]]:
    """``(absolute offset, position)`` entries, stopping at the first zero slot after entry 0."""
    entries = []
    for i in range(len(data) // _OFFSET_ENTRY.size):
        relative, position = _OFFSET_ENTRY.unpack_from(data, i * _OFFSET_ENTRY.size)
        if relative == 0 and i > 0:
            break
        entries.append((base + relative, position))
    return entries


def read_time_index(data: bytes, base: int) -> list[tuple[int, int]]:
    """``(timestamp, absolute offset)`` entries, stopping at the first zero slot after entry 0."""
    entries = []
    for i in range(len(data) // _TIME_ENTRY.size):
        timestamp, relative = _TIME_ENTRY.unpack_from(data, i * _TIME_ENTRY.size)
        if relative == 0 and i > 0:
            break
        entries.append((timestamp, base + relative))
    return entries


@dataclass(frozen=True)
class _Walk:
    """The whole batches of a ``.log`` buffer from ``start``: their positions and headers,
    where the walk stopped, and why it stopped early (None at a clean end)."""

    batches: list
    end: int
    problem: str | None


def _walk_batches(buf: bytes, start: int = 0, until_offset: int | None = None) -> _Walk:
    """Walk from ``start``; with ``until_offset``, stop after the first batch whose last
    offset reaches it (index checks need one batch, not the rest of the file)."""
    from .records import read_header  # imported late: the dump of indexes needs no codec

    out = []
    pos = start
    if pos < 0:  # an index entry's position, read from a damaged index
        return _Walk(out, pos, f"position {pos} is before the start of the log")
    while len(buf) - pos > _HEADER_UP_TO_MAGIC:  # Kafka's reader needs more than the 17 bytes up to magic
        if until_offset is not None and out and out[-1][1].last_offset >= until_offset:
            break
        batch_length = struct.unpack_from(">i", buf, pos + 8)[0]
        if batch_length < _MIN_RECORD_OVERHEAD:
            return _Walk(out, pos, f"Found record size {batch_length} smaller than minimum record overhead "
                                   f"({_MIN_RECORD_OVERHEAD}) at position {pos}")
        if pos + batch_length + 12 > len(buf):
            break  # a torn tail: Kafka's reader simply stops here
        magic = buf[pos + 16]
        if magic != 2:
            return _Walk(out, pos, f"Unsupported record batch magic {magic} at position {pos} "
                                   "(only message format v2 is supported)")
        try:
            header = read_header(buf, pos)
        except Exception as exc:  # CorruptRecordError from the codec; report, do not crash
            return _Walk(out, pos, str(exc))
        out.append((pos, header))
        pos += header.size_in_bytes
    return _Walk(out, pos, None)


# ---- .log --------------------------------------------------------------------

def _batch_line(header, position: int, valid: bool) -> str:
    if header.base_sequence == -1:
        last_sequence = -1
    else:
        last_sequence = _increment_sequence(header.base_sequence, header.last_offset_delta)
    horizon = header.base_timestamp if header.has_delete_horizon else None
    return (f"baseOffset: {header.base_offset} lastOffset: {header.last_offset} count: {header.records_count} "
            f"baseSequence: {header.base_sequence} lastSequence: {last_sequence} "
            f"producerId: {header.producer_id} producerEpoch: {header.producer_epoch} "
            f"partitionLeaderEpoch: {header.partition_leader_epoch} "
            f"isTransactional: {_bool(header.is_transactional)} isControl: {_bool(header.is_control)} "
            f"deleteHorizonMs: {_optional_long(horizon)} position: {position} "
            f"{_timestamp_type_name(header)}: {header.max_timestamp} size: {header.size_in_bytes} "
            f"magic: {header.magic} compresscodec: {CODEC_NAMES.get(int(header.compression), 'unknown')} "
            f"crc: {header.crc & 0xFFFFFFFF} isvalid: {_bool(valid)}")


def _control_text(record, bad: list | None = None) -> str:
    key = record.key or b""
    if len(key) < 4:
        return " controlType: UNKNOWN(-1)"
    type_id = struct.unpack_from(">h", key, 2)[0]
    name = _CONTROL_TYPES.get(type_id, "UNKNOWN")
    if type_id in (0, 1) and record.value is not None and len(record.value) >= 6:
        coordinator_epoch = struct.unpack_from(">i", record.value, 2)[0]
        return f" endTxnMarker: {name} coordinatorEpoch: {coordinator_epoch}"
    if type_id in _CONTROL_JSON_NAMES:
        from .kraft.records import CONTROL_VERSION, decode_control
        from .errors import CorruptRecordError
        try:
            msg = decode_control(record.key, record.value)
        except CorruptRecordError as exc:
            if bad is not None:
                bad.append(f"the {name} control record at offset {record.offset} does not decode ({exc})")
            return f" controlType: {name}({type_id})"
        return f" {_CONTROL_JSON_NAMES[type_id]} {_json(msg.to_json(CONTROL_VERSION))}"
    return f" controlType: {name}({type_id})"


def _metadata_payload(record, bad: list | None) -> str:
    from .kraft import metadata
    try:
        return _json(metadata.to_json(metadata.decode(record.value or b"")))
    except metadata.MetadataParseError as exc:
        if bad is not None:
            bad.append(f"the metadata record at offset {record.offset} does not decode ({exc})")
        return f"Error at {record.offset}, skipping. {exc}"


def _record_line(header, record, print_data: bool, skip_metadata: bool = False, cluster_metadata: bool = False,
                 bad: list | None = None) -> str:
    size = lambda b: -1 if b is None else len(b)  # noqa: E731 - Kafka prints -1 for null
    # Kafka's prefix is "| " before whichever of metadata or key comes first, " " after that;
    # "payload:" always gets a single leading space (so metadata skipped and no key gives " payload: …").
    line, prefix = "", "| "
    if not skip_metadata:
        sequence = -1 if header.base_sequence == -1 else _increment_sequence(header.base_sequence, record.offset_delta)
        line += (f"{prefix}offset: {record.offset} {_timestamp_type_name(header)}: {record.timestamp} "
                 f"keySize: {size(record.key)} valueSize: {size(record.value)} "
                 f"sequence: {sequence} headerKeys: [{','.join(h.key for h in record.headers)}]")
        prefix = " "
        if header.is_control:
            line += _control_text(record, bad)
    if print_data and not header.is_control and cluster_metadata:
        line += f" payload: {_metadata_payload(record, bad)}"      # metadata records have no key
    elif print_data and not header.is_control:
        if record.key is not None:
            line += f"{prefix}key: {record.key.decode('utf-8', errors='replace')}"
        if record.value is not None:
            line += f" payload: {record.value.decode('utf-8', errors='replace')}"
    return line


def _dump_log(path: str, out: TextIO, err: TextIO, problems: DumpProblems,
              deep_iteration: bool, print_data: bool, skip_metadata: bool = False,
              cluster_metadata: bool = False) -> None:
    from .records import decode_batch, verify_crc

    name = os.path.basename(path)
    if name.endswith(".checkpoint"):
        m = _SNAPSHOT_FILE.match(name)
        if name == BOOTSTRAP_SNAPSHOT:
            out.write("KRaft bootstrap snapshot\n")
        elif m is None:
            problems.unreadable.append(f"{path}: not a snapshot name (<20-digit end offset>-<10-digit epoch>.checkpoint)")
            return
        else:
            out.write(f"Snapshot end offset: {int(m.group(1))}, epoch: {int(m.group(2))}\n")
    else:
        out.write(f"Log starting offset: {base_offset_of(path)}\n")
    buf = _read(path)
    bad: list = []
    walk = _walk_batches(buf)
    last_offset = -1
    for position, header in walk.batches:
        valid = verify_crc(buf, position, header)
        if not valid:
            problems.unreadable.append(f"{path}: CRC mismatch in the batch at position {position}")
        out.write(_batch_line(header, position, valid) + "\n")
        if not deep_iteration:
            continue
        try:
            batch = decode_batch(buf, position, verify_crc=False)
        except Exception as exc:  # a batch whose record section does not decode
            err.write(f"Cannot read the records of the batch at position {position} of {path}: {exc}\n")
            problems.unreadable.append(f"{path}: the records of the batch at position {position} do not decode")
            continue
        for record in batch.records:
            if last_offset != -1 and record.offset != last_offset + 1:
                problems.non_consecutive.setdefault(os.path.abspath(path), []).append((last_offset, record.offset))
            last_offset = record.offset
            out.write(_record_line(header, record, print_data, skip_metadata, cluster_metadata, bad) + "\n")
        problems.unreadable.extend(f"{path}: {b}" for b in bad)
        bad.clear()
    if walk.problem:
        err.write(f"{walk.problem} in {path}\n")
    trailing = len(buf) - walk.end
    if trailing > 0:
        out.write(f"Found {trailing} invalid bytes at the end of {os.path.basename(path)}\n")
        problems.unreadable.append(f"{path}: {trailing} invalid bytes from position {walk.end}"
                                   + (f" ({walk.problem})" if walk.problem else ""))
    elif walk.problem:
        problems.unreadable.append(f"{path}: {walk.problem}")


# ---- .index / .timeindex -----------------------------------------------------

def _batch_at(log: bytes, position: int):
    """The header of the batch starting at ``position`` of the log, or None."""
    walk = _walk_batches(log, position, until_offset=-1)
    return walk.batches[0][1] if walk.batches else None


def _check_whole_entries(path: str, data: bytes, size: int, problems: DumpProblems) -> None:
    if len(data) % size:
        problems.unreadable.append(f"{path}: {len(data) % size} bytes from position {len(data) - len(data) % size} "
                                   f"do not make a whole {size}-byte entry")


def _dump_index(path: str, out: TextIO, problems: DumpProblems, verify_only: bool = False) -> None:
    base = base_offset_of(path)
    data = _read(path)
    _check_whole_entries(path, data, _OFFSET_ENTRY.size, problems)
    if len(data) // _OFFSET_ENTRY.size == 0:
        out.write(f"{path} is empty.\n")
        return
    log_path = _sibling(path, ".log")
    log = _read(log_path) if os.path.isfile(log_path) else None
    for offset, position in read_offset_index(data, base):
        if log is not None:
            header = _batch_at(log, position) if 0 <= position < len(log) else None
            found = header.last_offset if header is not None else -1
            if found != offset:
                problems.index_mismatches.setdefault(os.path.abspath(path), []).append((offset, found))
        if not verify_only:
            out.write(f"offset: {offset} position: {position}\n")


def _dump_time_index(path: str, out: TextIO, problems: DumpProblems, verify_only: bool = False) -> None:
    base = base_offset_of(path)
    data = _read(path)
    _check_whole_entries(path, data, _TIME_ENTRY.size, problems)
    entries = read_time_index(data, base)
    log_path, index_path = _sibling(path, ".log"), _sibling(path, ".index")
    log = _read(log_path) if os.path.isfile(log_path) else None
    offset_entries = read_offset_index(_read(index_path), base) if os.path.isfile(index_path) else []
    name = os.path.abspath(path)
    previous = -1  # Kafka's RecordBatch.NO_TIMESTAMP
    for timestamp, offset in entries:
        if log is not None:
            _check_time_entry(log, offset_entries, timestamp, offset, previous, name, problems)
        if not verify_only:
            out.write(f"timestamp: {timestamp} offset: {offset}\n")
        previous = timestamp


def _check_time_entry(log: bytes, offset_entries: list[tuple[int, int]], timestamp: int, offset: int,
                      previous: int, name: str, problems: DumpProblems) -> None:
    from .records import decode_batch

    start = 0
    for entry_offset, position in offset_entries:
        if entry_offset > offset:
            break
        start = position
    match = next(((pos, h) for pos, h in _walk_batches(log, start, until_offset=offset).batches
                  if h.last_offset >= offset), None)
    if match is None:
        problems.offsets_not_found.setdefault(name, []).append((offset, -1))
        return
    position, header = match
    if header.last_offset != offset:
        problems.offsets_not_found.setdefault(name, []).append((offset, header.last_offset))
        return
    try:
        records = decode_batch(log, position, verify_crc=False).records
        max_ts = max((r.timestamp for r in records), default=-1)
    except Exception:
        max_ts = header.max_timestamp
    if max_ts != timestamp:
        problems.time_mismatches.setdefault(name, []).append((timestamp, max_ts))
    if previous >= timestamp:
        problems.time_out_of_order.setdefault(name, []).append((timestamp, previous))


# ---- .txnindex / .snapshot ---------------------------------------------------

def _dump_txn_index(path: str, out: TextIO, err: TextIO, problems: DumpProblems) -> None:
    data = _read(path)
    whole = len(data) - len(data) % _TXN_ENTRY.size
    for pos in range(0, whole, _TXN_ENTRY.size):
        version, producer_id, first, last, lso = _TXN_ENTRY.unpack_from(data, pos)
        out.write(f"version: {version} producerId: {producer_id} firstOffset: {first} "
                  f"lastOffset: {last} lastStableOffset: {lso}\n")
    if whole != len(data):
        err.write(f"{path}: {len(data) - whole} bytes at the end do not make a whole aborted-transaction entry\n")
        problems.unreadable.append(f"{path}: {len(data) - whole} bytes from position {whole} do not make a whole "
                                   "aborted-transaction entry")


_SNAPSHOT_HEAD = struct.Struct(">hIi")
_SNAPSHOT_ENTRY = struct.Struct(">qhiqiqiq")


def _dump_producer_snapshot(path: str, out: TextIO, err: TextIO, problems: DumpProblems) -> None:
    import crc32c

    data = _read(path)
    if len(data) < _SNAPSHOT_HEAD.size:
        err.write(f"Snapshot file {path} is too short to hold a header ({len(data)} bytes)\n")
        problems.unreadable.append(f"{path}: too short to hold a snapshot header ({len(data)} bytes)")
        return
    version, crc, count = _SNAPSHOT_HEAD.unpack_from(data, 0)
    if version != 1 or crc32c.crc32c(data[6:]) != crc or len(data) != _SNAPSHOT_HEAD.size + count * _SNAPSHOT_ENTRY.size:
        err.write(f"Snapshot file {path} is corrupt (version {version}, stored crc {crc}, {count} entries, "
                  f"{len(data)} bytes)\n")
        problems.unreadable.append(f"{path}: a corrupt producer snapshot (version {version}, stored crc {crc})")
        return
    for i in range(count):
        (producer_id, epoch, last_seq, last_offset, offset_delta, timestamp, coordinator_epoch,
         txn_first) = _SNAPSHOT_ENTRY.unpack_from(data, _SNAPSHOT_HEAD.size + i * _SNAPSHOT_ENTRY.size)
        first_seq = last_seq - offset_delta if last_seq - offset_delta >= 0 else _INT_MAX + (last_seq - offset_delta) + 1
        out.write(f"producerId: {producer_id} producerEpoch: {epoch} coordinatorEpoch: {coordinator_epoch} "
                  f"currentTxnFirstOffset: {_optional_long(None if txn_first < 0 else txn_first)} "
                  f"lastTimestamp: {timestamp} firstSequence: {first_seq} lastSequence: {last_seq} "
                  f"lastOffset: {last_offset} offsetDelta: {offset_delta} timestamp: {timestamp}\n")


# ---- entry points ------------------------------------------------------------

def expand_paths(paths: Iterable[str]) -> list[str]:
    """Files as named; a directory stands for its segment files in name order.
    Missing paths are an error naming them all, before anything is printed."""
    missing = [p for p in paths if not os.path.exists(p)]
    if missing:
        raise FileNotFoundError(f"no such file: {', '.join(missing)}")
    out: list[str] = []
    for p in paths:
        if os.path.isdir(p):
            found = [os.path.join(p, n) for n in sorted(os.listdir(p))
                     if _SEGMENT_FILE.match(n) and os.path.isfile(os.path.join(p, n))]
            if not found:
                raise InvalidRequestError(f"{p} holds no segment files (.log, .index, .timeindex, .txnindex or "
                                          ".snapshot named by a 20-digit offset) and no snapshots "
                                          "(<offset>-<epoch>.checkpoint)")
            out += found
        else:
            out.append(p)
    return out


def dump_file(path: str, out: TextIO, err: TextIO, problems: DumpProblems, *,
              deep_iteration: bool = False, print_data_log: bool = False, skip_record_metadata: bool = False,
              verify_index_only: bool = False, cluster_metadata: bool = False) -> None:
    out.write(f"Dumping {path}\n")
    name = os.path.basename(path)
    suffix = name[name.rfind("."):] if "." in name else ""
    print_data_log = print_data_log or cluster_metadata
    if suffix in (".log", ".checkpoint"):
        _dump_log(path, out, err, problems, deep_iteration or print_data_log, print_data_log, skip_record_metadata,
                  cluster_metadata)
    elif suffix == ".index":
        _dump_index(path, out, problems, verify_index_only)
    elif suffix == ".timeindex":
        _dump_time_index(path, out, problems, verify_index_only)
    elif suffix == ".txnindex":
        _dump_txn_index(path, out, err, problems)
    elif suffix == ".snapshot":
        _dump_producer_snapshot(path, out, err, problems)
    else:
        err.write(f"Ignoring unknown file {path}\n")


def dump_files(paths: Iterable[str], out: TextIO, err: TextIO, *,
               deep_iteration: bool = False, print_data_log: bool = False, skip_record_metadata: bool = False,
               verify_index_only: bool = False, cluster_metadata: bool = False) -> DumpProblems:
    """Dump every file in order, then report the index problems found (on ``err``).
    The flags are kafka-dump-log.sh's: ``--deep-iteration``, ``--print-data-log`` (implies
    deep iteration), ``--skip-record-metadata`` (record lines keep only key/payload) and
    ``--verify-index-only`` (check the indexes, print no entries), ``--cluster-metadata-decoder``
    (payloads as KRaft metadata records; implies ``--print-data-log``)."""
    problems = DumpProblems()
    for path in expand_paths(list(paths)):
        dump_file(path, out, err, problems, deep_iteration=deep_iteration, print_data_log=print_data_log,
                  skip_record_metadata=skip_record_metadata, verify_index_only=verify_index_only,
                  cluster_metadata=cluster_metadata)
    problems.write(err)
    return problems
