"""Storage benchmarks (plain script, prints figures).

1. Appending pre-encoded 16 KB batches through ``Log.append_as_follower`` as a percentage of
   raw sequential ``os.write`` of the same bytes, in the same run.
2. One offset lookup (``Log.read`` of one offset) in a 1M-record log against a linear scan of
   the ``.log`` from the start.

Each figure is printed twice: with the real :class:`EventLog` (SHA-256 chained digest of every
event) and with a sink that drops events, to separate the cost of the storage path from the
cost of the event stream.

    .venv/bin/python bench/bench_log.py [--mb 256] [--records 1000000]
"""
from __future__ import annotations

import argparse
import os
import random
import statistics
import struct
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine.clock import Scheduler, VirtualClock  # noqa: E402
from engine.config import LogConfig  # noqa: E402
from engine.disk import Disk  # noqa: E402
from engine.events import EventLog  # noqa: E402
from engine.log import Log  # noqa: E402
from engine.records import SimpleRecord, build_batch  # noqa: E402

_BASE = struct.Struct(">q")


class NullEventLog(EventLog):
    """Counts events and drops them (no digest, no envelopes)."""

    def emit(self, ev):
        self.seq += 1


def batches_like(template: bytes, first_offset: int, n: int, per_batch: int = 1) -> list[bytes]:
    """``n`` copies of ``template`` with consecutive base offsets (outside the CRC)."""
    out = []
    buf = bytearray(template)
    for i in range(n):
        _BASE.pack_into(buf, 0, first_offset + i * per_batch)
        out.append(bytes(buf))
    return out


def new_log(root: str, events_cls, **cfg) -> Log:
    clock = VirtualClock(0)
    return Log(Disk(root), "bench-0", "bench", 0, LogConfig(**cfg), Scheduler(clock), events_cls(clock),
               schedule_tasks=False)


def _time_appends(events_cls, calls: list[bytes], n: int) -> float:
    with tempfile.TemporaryDirectory(dir=".") as tmp:
        if events_cls is None:
            fd = os.open(os.path.join(tmp, "raw.log"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            t = time.perf_counter()
            for b in calls:
                os.write(fd, b)
            elapsed = time.perf_counter() - t
            os.close(fd)
        else:
            log = new_log(tmp, events_cls)
            t = time.perf_counter()
            for b in calls:
                log.append_as_follower(b)
            elapsed = time.perf_counter() - t
            assert log.log_end_offset == n
            log.disk.close_all()
    return elapsed


def bench_append(total_mb: int, repeat: int) -> None:
    value = random.Random(1).randbytes(16384 - 80)
    template = build_batch([SimpleRecord(value, timestamp=1)], base_offset=0)
    n = total_mb * 1024 * 1024 // len(template)
    batches = batches_like(template, 0, n)
    print(f"[append] {n} batches of {len(template)} bytes = {n * len(template) / 2**20:.0f} MB, best of {repeat}")
    fetches = [b"".join(batches[i:i + 64]) for i in range(0, n, 64)]   # ~1 MB follower fetches
    results = {}
    runs = (("raw os.write 16 KB", None, batches), ("raw os.write 1 MB", None, fetches),
            ("EventLog, 1 batch/call", EventLog, batches),
            ("null sink, 1 batch/call", NullEventLog, batches), ("EventLog, 1 MB/call", EventLog, fetches),
            ("null sink, 1 MB/call", NullEventLog, fetches))
    for label, events_cls, calls in runs:
        elapsed = min(_time_appends(events_cls, calls, n) for _ in range(repeat))
        results[label] = elapsed
        print(f"  {label:24s} {elapsed:7.3f} s  {n * len(template) / 2**20 / elapsed:8.1f} MB/s"
              f"  {elapsed / n * 1e6:7.1f} us/batch")
    for label, _, calls in runs[2:]:
        raw = "raw os.write 16 KB" if calls is batches else "raw os.write 1 MB"
        print(f"  {label:24s} {100 * results[raw] / results[label]:5.1f} % of {raw} (same bytes, same run; "
              f"goal >= 60 %)")


def linear_scan(data: bytes, target: int) -> int:
    """Position of the batch holding ``target``, walking batch lengths from byte 0."""
    pos, end = 0, len(data)
    unpack = struct.unpack_from
    while pos < end:
        base, length = unpack(">qi", data, pos)
        last = base + unpack(">i", data, pos + 23)[0]
        if last >= target:
            return pos
        pos += length + 12
    return -1


def bench_lookup(records: int) -> None:
    template = build_batch([SimpleRecord(b"12345678", key=b"k", timestamp=1)], base_offset=0)
    print(f"[lookup] building a log of {records} single-record batches ({records * len(template) / 2**20:.0f} MB)...")
    with tempfile.TemporaryDirectory(dir=".") as tmp:
        log = new_log(tmp, NullEventLog)
        t = time.perf_counter()
        chunk = 20000
        for first in range(0, records, chunk):
            log.append_as_follower(b"".join(batches_like(template, first, min(chunk, records - first))))
        print(f"  built in {time.perf_counter() - t:.1f} s: {len(log.segments)} segment(s), "
              f"{log.active_segment.offset_index.entries} offset-index entries")
        rng = random.Random(3)
        targets = [rng.randrange(records) for _ in range(20)]
        for s in log.segments:
            s.read_all  # noqa: B018 - warm nothing; the OS cache is warm from writing
        seg = log.active_segment
        # Baseline A: the same header scan the lookup uses, but from byte 0 (no index).
        t = time.perf_counter()
        for target in targets[:5]:
            assert seg.translate_offset(target, 0) is not None
        scan_headers = (time.perf_counter() - t) / 5
        # Baseline B: read the whole file and walk the length fields with struct (fastest Python).
        t = time.perf_counter()
        for target in targets[:5]:
            data = log.disk.read_all(seg.log_rel)
            assert linear_scan(data, target) >= 0
        scan_raw = (time.perf_counter() - t) / 5
        for label, events in (("trace=True, EventLog", EventLog(log.events.clock)), ("trace=False", None)):
            log.events = events or log.events
            times = []
            for target in targets:
                t = time.perf_counter()
                got = log.read(target, max_bytes=1, trace=events is not None)
                times.append(time.perf_counter() - t)
                assert got.batches[0].base_offset == target
            lookup = statistics.median(times)
            extra = f", {log.events.seq // len(targets)} events/lookup" if events is not None else ""
            print(f"  lookup ({label}{extra}): {lookup * 1e6:8.1f} us (median of {len(targets)})")
            print(f"    vs linear header scan from byte 0 ({scan_headers * 1e3:.1f} ms): {scan_headers / lookup:8.0f}x")
            print(f"    vs raw struct walk of the whole file ({scan_raw * 1e3:.1f} ms): {scan_raw / lookup:8.0f}x"
                  f"  (goal >= 1000x)")
        log.disk.close_all()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=int, default=256)
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    bench_append(args.mb, args.repeat)
    bench_lookup(args.records)


if __name__ == "__main__":
    main()
