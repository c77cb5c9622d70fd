"""Log analytics, the pure part: find partition directories, and read one segment's files.

A Kafka log directory (``log.dirs``) holds one directory per partition, named
``<topic>-<partition>``, with segments named by their base offset (20 digits):
``00000000000000000000.log`` (record batches), ``.index`` (8-byte entries: relative offset
int32, position int32), ``.timeindex`` (12-byte entries: timestamp int64, relative offset
int32). kafkaviz's own data directories hold one such directory per broker, so partition
directories are looked for at any depth.

:func:`scan_log` decodes every batch of a ``.log`` with the engine's codec (CRC checked)
and never raises on bad bytes: a truncated or corrupt batch is reported with its file and
byte position and the walk goes on at the next batch when the bad one's length is sane
(else the rest of the file is counted as unreadable). A tail of zero bytes is a
preallocated file's padding, not damage. The Spark job (``kafkaviz/lab/spark_jobs.py``)
calls these functions inside its executors.
"""
from __future__ import annotations

import hashlib
import os
import re
import struct
from typing import Any, Iterable, Iterator

from ..errors import CorruptRecordError
from ..records.batch import LOG_OVERHEAD, decode_batch, read_header

__all__ = ["find_partition_dirs", "segment_files", "scan_file", "scan_rows", "scan_paths", "scan_log", "scan_offset_index", "scan_time_index",
           "NotALogDirError", "key_digest", "SEGMENT_SUFFIXES"]

_PARTITION_DIR = re.compile(r"^(?P<topic>[a-zA-Z0-9._-]{1,249})-(?P<partition>\d+)$")
_SEGMENT = re.compile(r"^(?P<base>\d{20})\.(?P<suffix>log|index|timeindex)$")
SEGMENT_SUFFIXES = ("log", "index", "timeindex")
_OFFSET_ENTRY = struct.Struct(">ii")
_TIME_ENTRY = struct.Struct(">qi")


class NotALogDirError(ValueError):
    """The directory holds no ``<topic>-<partition>`` directory with a ``.log`` segment."""


def find_partition_dirs(root: str) -> list[tuple[str, str, int]]:
    """Every partition directory under ``root`` (any depth) as (path, topic, partition),
    sorted. Raises NotALogDirError when ``root`` is missing or holds none."""
    if not os.path.isdir(root):
        raise NotALogDirError(f"{root} is not a directory")
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        m = _PARTITION_DIR.match(os.path.basename(dirpath))
        if m and any(_SEGMENT.match(f) and f.endswith(".log") for f in filenames):
            found.append((dirpath, m.group("topic"), int(m.group("partition"))))
    if not found:
        raise NotALogDirError(f"{root} is not a Kafka log directory: no <topic>-<partition> directory "
                              f"with a .log segment under it")
    return sorted(found)


def segment_files(partition_dir: str) -> list[tuple[str, int, str]]:
    """(path, base offset, suffix) of every segment file of a partition directory."""
    out = []
    for name in sorted(os.listdir(partition_dir)):
        m = _SEGMENT.match(name)
        if m:
            out.append((os.path.join(partition_dir, name), int(m.group("base")), m.group("suffix")))
    return out


def key_digest(key: bytes | None) -> str | None:
    """A short stable name of a record key (None for a null key)."""
    return None if key is None else hashlib.sha1(key).hexdigest()[:16]


def scan_log(data: bytes, file: str) -> dict[str, Any]:
    """Figures of one ``.log`` segment. ``keys``: (key digest, its last offset here) per
    distinct key, enough to find each key's latest record across segments (compaction); ``problems``: {file, position, kind, reason} per damaged place."""
    pos, end = 0, len(data)
    out: dict[str, Any] = {"batches": 0, "records": 0, "valid_bytes": 0, "file_bytes": end,
                           "first_offset": None, "last_offset": None, "first_timestamp": None,
                           "last_timestamp": None, "codecs": {}, "producer_ids": [], "control_batches": 0,
                           "transactional_batches": 0, "keys": [], "null_key_records": 0, "problems": [],
                           "unreadable_bytes": 0}
    producers: set = set()
    latest: dict = {}          # key -> its last offset in this segment
    keyed = 0
    while pos < end:
        try:
            batch = decode_batch(data, pos)
        except CorruptRecordError as exc:
            if not any(memoryview(data)[pos:]):
                break  # zero padding of a preallocated segment
            reason = getattr(exc, "reason", str(exc))
            kind = "truncated" if "truncated" in reason else "corrupt"
            out["problems"].append({"file": file, "position": pos, "kind": kind, "reason": reason})
            step = _skip(data, pos)
            if step is None:
                out["unreadable_bytes"] += end - pos
                break
            out["unreadable_bytes"] += step
            pos += step
            continue
        size = batch.batch_length + LOG_OVERHEAD
        out["batches"] += 1
        out["valid_bytes"] += size
        codec = batch.compression.name.lower()
        out["codecs"][codec] = out["codecs"].get(codec, 0) + 1
        if batch.producer_id >= 0:
            producers.add(batch.producer_id)
        if batch.is_transactional:
            out["transactional_batches"] += 1
        if out["first_offset"] is None:
            out["first_offset"] = batch.base_offset
        out["last_offset"] = batch.last_offset
        if batch.is_control:
            out["control_batches"] += 1
        else:
            for r in batch.records:
                out["records"] += 1
                if r.key is None:
                    out["null_key_records"] += 1
                else:
                    keyed += 1
                    latest[r.key] = r.offset
                ts = r.timestamp
                if out["first_timestamp"] is None or ts < out["first_timestamp"]:
                    out["first_timestamp"] = ts
                if out["last_timestamp"] is None or ts > out["last_timestamp"]:
                    out["last_timestamp"] = ts
        pos += size
    out["producer_ids"] = sorted(producers)
    out["keyed_records"] = keyed
    out["distinct_keys"] = len(latest)
    out["keys"] = [(key_digest(k), o) for k, o in latest.items()]
    return out


def _skip(data: bytes, pos: int) -> int | None:
    """Bytes to jump past a damaged batch, when its header still gives a length that ends
    inside the file; None when nothing after ``pos`` can be trusted."""
    try:
        header = read_header(data, pos)
    except CorruptRecordError:
        return None
    size = header.batch_length + LOG_OVERHEAD
    return size if pos + size <= len(data) else None


def _index_entries(data: bytes, entry: struct.Struct, rel_at: int) -> list[tuple]:
    """Entries of an index file, stopping at the preallocated zeros of an active index
    (an all-zero entry after the first one)."""
    out = []
    n = len(data) // entry.size
    for i in range(n):
        e = entry.unpack_from(data, i * entry.size)
        if i > 0 and not any(e):
            break
        if i == 0 and not any(e) and len(data) > entry.size and not any(data[entry.size:]):
            # a lone zero entry followed by zeros is an empty preallocated index
            break
        out.append(e)
    return out


def scan_offset_index(data: bytes) -> dict[str, Any]:
    """Entries of an ``.index`` and their mean spacing in bytes of ``.log``."""
    entries = _index_entries(data, _OFFSET_ENTRY, 0)
    gaps = [b[1] - a[1] for a, b in zip(entries, entries[1:])]
    return {"index_entries": len(entries),
            "index_spacing_bytes": round(sum(gaps) / len(gaps), 1) if gaps else None}


def scan_time_index(data: bytes) -> dict[str, Any]:
    return {"timeindex_entries": len(_index_entries(data, _TIME_ENTRY, 1))}


def scan_file(path: str, data: bytes) -> dict[str, Any]:
    """One segment file (``.log``, ``.index`` or ``.timeindex``) → a flat dict: where it is
    (``partition_dir`` = its directory, topic, partition, base offset, suffix) and its figures.
    ``path`` may be a ``file:`` URI (as Spark's binaryFiles gives it)."""
    if path.startswith("file://"):
        path = path[len("file://"):]
    elif path.startswith("file:"):
        path = path[len("file:"):]
    pdir, name = os.path.split(path)
    m, p = _SEGMENT.match(name), _PARTITION_DIR.match(os.path.basename(pdir))
    if m is None or p is None:
        raise NotALogDirError(f"{path} is not a segment file of a partition directory")
    row: dict[str, Any] = {"partition_dir": pdir, "topic": p.group("topic"), "partition": int(p.group("partition")),
                           "base_offset": int(m.group("base")), "suffix": m.group("suffix"), "file": path}
    if row["suffix"] == "log":
        row.update(scan_log(data, path))
    elif row["suffix"] == "index":
        row.update(scan_offset_index(data))
    else:
        row.update(scan_time_index(data))
    return row


NOT_VISIBLE = "an executor cannot see"


def scan_paths(paths: Iterable[str], names: list[str]) -> Iterator[tuple]:
    """Like :func:`scan_rows`, but each executor opens the files itself and maps them: a file
    is paged in by the operating system as the walk reaches it, never copied whole into
    memory (a Kafka segment is 1 GiB by default)."""
    import mmap

    for path in paths:
        try:
            fh = open(path, "rb")
        except FileNotFoundError:
            import socket

            raise FileNotFoundError(f"{NOT_VISIBLE} {path} on {socket.gethostname()}: on a cluster every worker must "
                                    f"see the log directory at the same path (a shared filesystem), or run the "
                                    f"analysis with --master local[*] on the machine that holds the logs") from None
        with fh:
            size = os.fstat(fh.fileno()).st_size
            if size == 0:
                row = scan_file(path, b"")
            else:
                with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as data:
                    row = scan_file(path, data)
        row.setdefault("file_bytes", size)
        yield tuple(row.get(n) for n in names)


def scan_rows(pairs: Iterable[tuple], names: list[str]) -> Iterator[tuple]:
    """Spark's mapPartitions over ``binaryFiles`` pairs (path, bytes): one tuple per file with
    the fields ``names`` (missing ones None; ``file_bytes`` always the file's size)."""
    for path, data in pairs:
        row = scan_file(path, bytes(data))
        row.setdefault("file_bytes", len(data))
        yield tuple(row.get(n) for n in names)
