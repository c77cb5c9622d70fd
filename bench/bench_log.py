"""Storage benchmarks: the partition log's two hot paths against what bounds them.

    python bench/bench_log.py [--quick] [--records 1000000]

1. **append** — ``Log.append_as_follower`` of pre-encoded 16 KB batches (CRC check, roll
   check, index rule, events into the real :class:`EventLog` with its digest) against raw
   sequential ``os.write`` of the same bytes to a plain file, as a percentage (goal >= 60 %).
   Also shown, without a goal: the same with events dropped, and 1 MB follower fetches.
2. **lookup** — ``Log.read`` of one offset (its batch: ``max_bytes=1``) in a log of
   1,000,000 single-record batches with default settings (``index.interval.bytes`` 4096),
   traced (the default: one ``log_lookup`` event with every probe and scanned batch) and
   untraced; goal <= 30 us. An absolute figure with no peer, so it is timed in this process's
   CPU time (``time.process_time``): other processes on a shared machine do not inflate it.
   For scale, a struct walk of the whole ``.log`` from byte 0.
3. **small append** — ``Log.append_as_follower`` of single-record 73 B batches (what a
   ``linger.ms=0`` client sends), one call per batch, against ``os.write`` of each batch
   (goal >= 40 %): the fixed per-append work. Also, without a goal, ``append_as_leader`` of
   one ``SimpleRecord`` (encoding included) against the same writes.
4. **memory** (``--rss N``, not in ``make bench``) — RSS growth of ``N`` single-record appends
   on a bare ``Log`` with default settings (the default ``EventLog``), extrapolated to 10M.

Method: each round gives ours and the peer the same work in alternating slices (as
``bench/paired.py`` does); a figure is the median over rounds, with min and max. Appends are
timed in CPU time (``time.process_time``, user + system): on a shared machine, wall time
also counts other processes' turns and the kernel's dirty-page throttling of writers, which
fall on either side at random.
"""
from __future__ import annotations

import gc
import os
import random
import statistics
import struct
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from paired import clock, figure, print_figure  # noqa: E402

from engine.clock import Scheduler, VirtualClock  # noqa: E402
from engine.config import LogConfig  # noqa: E402
from engine.disk import Disk  # noqa: E402
from engine.events import EventLog  # noqa: E402
from engine.log import Log  # noqa: E402
from engine.records import SimpleRecord, build_batch  # noqa: E402

_BASE = struct.Struct(">q")
APPEND_GOAL = 60.0
LOOKUP_GOAL_US = 30.0


class NullEventLog(EventLog):
    """Counts events and drops them (no envelopes, no digest)."""

    def emit(self, ev):
        self.seq += 1

    def emit_fields(self, cls, *values):
        self.seq += 1

    def emit_rows(self, events):
        self.seq += len(events)

    def emit_row(self, cls, values):
        self.seq += 1


def batches_like(template: bytes, first_offset: int, n: int) -> list[bytes]:
    """``n`` copies of ``template`` with consecutive base offsets (outside the CRC)."""
    out = []
    buf = bytearray(template)
    for i in range(n):
        _BASE.pack_into(buf, 0, first_offset + i)
        out.append(bytes(buf))
    return out


def new_log(root: str, events_cls=EventLog) -> Log:
    clock = VirtualClock(0)
    return Log(Disk(root), "bench-0", "bench", 0, LogConfig(), Scheduler(clock), events_cls(clock),
               schedule_tasks=False)


class Target:
    """Something that takes the benchmark's byte strings in order and is reset outside the timing."""

    def __init__(self, root: str, kind: str) -> None:
        self.root, self.kind, self.n = root, kind, 0
        os.makedirs(root, exist_ok=True)
        self.reset()

    def reset(self) -> None:
        if self.kind == "raw":
            if getattr(self, "fd", None) is not None:
                os.close(self.fd)
            path = os.path.join(self.root, "raw.log")
            if os.path.exists(path):
                os.unlink(path)
            self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        else:
            if getattr(self, "log", None) is not None:
                self.log.close()
                self.log.disk.close_all()
                self.log.disk.rmtree("bench-0")
            self.log = new_log(self.root, NullEventLog if self.kind == "null" else EventLog)

    def run(self, calls: list[bytes]) -> float:
        if self.kind == "raw":
            write, fd = os.write, self.fd
            t = clock()
            for b in calls:
                write(fd, b)
            return clock() - t
        append = self.log.append_as_follower
        t = clock()
        for b in calls:
            append(b)
        return clock() - t

    def close(self) -> None:
        if self.kind == "raw":
            os.close(self.fd)
        else:
            self.log.close()
            self.log.disk.close_all()


def bench_append(rounds: int, slices: int, per_slice_mb: int) -> list:
    value = random.Random(1).randbytes(16384 - 80)
    template = build_batch([SimpleRecord(value, timestamp=1)], base_offset=0)
    per_slice = per_slice_mb * 2**20 // len(template)
    # Every slice appends the next offsets; the log restarts (outside the timing) every 64 MB.
    restart_every = max(64 * 2**20 // (per_slice * len(template)), 1)
    print(f"[append] batches of {len(template)} B, {per_slice} per slice ({per_slice_mb} MB), {slices} slices "
          f"per round, {rounds} rounds")
    figures = []
    with tempfile.TemporaryDirectory() as tmp:
        targets = {k: Target(os.path.join(tmp, k), k) for k in ("raw", "ours", "null")}
        for per_call, label in ((1, "1 batch/call"), (64, "1 MB/call")):
            pct = {"ours": [], "null": []}
            per_batch = {k: [] for k in targets}      # CPU us per 16 KB batch, per round
            offset = {k: 0 for k in targets}
            for t in targets.values():
                t.reset()
                t.n = 0
            for r in range(rounds):
                spent = dict.fromkeys(targets, 0.0)
                for s in range(slices):
                    order = list(targets)[s % 3:] + list(targets)[:s % 3]
                    for k in order:
                        t = targets[k]
                        if t.n and t.n % restart_every == 0:
                            t.reset()
                            offset[k] = 0
                        batches = batches_like(template, offset[k], per_slice)
                        offset[k] += per_slice
                        calls = batches if per_call == 1 else [b"".join(batches[i:i + per_call])
                                                               for i in range(0, per_slice, per_call)]
                        spent[k] += t.run(calls)
                        t.n += 1
                for k in targets:
                    per_batch[k].append(spent[k] / (slices * per_slice) * 1e6)
                pct["ours"].append(100 * spent["raw"] / spent["ours"])
                pct["null"].append(100 * spent["raw"] / spent["null"])
            if per_call == 1:
                figures.append(print_figure(figure("append_as_follower 16 KB, EventLog, % of os.write", pct["ours"],
                                                   "%", f">= {APPEND_GOAL:.0f} %", at_least=APPEND_GOAL)))
                print_figure(figure("append_as_follower 16 KB, events dropped, % of os.write", pct["null"], "%",
                                    "(no goal)"))
                print("  per batch (CPU, median of rounds): os.write {raw:.1f} us, ours {ours:.1f} us, events dropped "
                      "{null:.1f} us".format(**{k: statistics.median(v) for k, v in per_batch.items()}))
            else:
                print_figure(figure("append_as_follower 1 MB fetches, EventLog, % of os.write", pct["ours"], "%",
                                    "(no goal)"))
        for t in targets.values():
            t.close()
    return figures


SMALL_GOAL = 40.0


def bench_small_append(rounds: int, slices: int, per_slice: int) -> list:
    template = build_batch([SimpleRecord(b"v" * 5, timestamp=1)], base_offset=0)
    print(f"[small append] single-record batches of {len(template)} B, {per_slice} per slice, {slices} slices per "
          f"round, {rounds} rounds, gc.collect() before each slice")
    restart_every = max(200_000 // per_slice, 1)
    with tempfile.TemporaryDirectory() as tmp:
        targets = {k: Target(os.path.join(tmp, k), k) for k in ("raw", "ours", "leader")}
        offset = dict.fromkeys(targets, 0)
        pct, lead, per_batch = [], [], {k: [] for k in targets}
        records = [SimpleRecord(b"v" * 5) for _ in range(per_slice)]
        for r in range(rounds):
            spent = dict.fromkeys(targets, 0.0)
            for s in range(slices):
                order = list(targets)[s % 3:] + list(targets)[:s % 3]
                for k in order:
                    t = targets[k]
                    if t.n and t.n % restart_every == 0:
                        t.reset()
                        offset[k] = 0
                    gc.collect()
                    if k == "leader":
                        append = t.log.append_as_leader
                        c = clock()
                        for rec in records:
                            append([rec], 0)
                        spent[k] += clock() - c
                    else:
                        spent[k] += t.run(batches_like(template, offset[k], per_slice))
                    offset[k] += per_slice
                    t.n += 1
            for k in targets:
                per_batch[k].append(spent[k] / (slices * per_slice) * 1e6)
            pct.append(100 * spent["raw"] / spent["ours"])
            lead.append(100 * spent["raw"] / spent["leader"])
        for t in targets.values():
            t.close()
    figures = [print_figure(figure(f"append_as_follower {len(template)} B single-record batch, % of os.write", pct,
                                   "%", f">= {SMALL_GOAL:.0f} %", at_least=SMALL_GOAL))]
    print_figure(figure("append_as_leader of one SimpleRecord (encoding included), % of os.write", lead, "%",
                        "(no goal)"))
    print("  per batch (CPU, median of rounds): os.write {raw:.2f} us, follower append {ours:.2f} us, leader append "
          "{leader:.2f} us".format(**{k: statistics.median(v) for k, v in per_batch.items()}))
    return figures


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def rss_growth(n: int) -> None:
    """RSS growth of ``n`` single-record leader appends on a bare Log (default LogConfig,
    default EventLog), and that growth extrapolated to 10M records from the slope of the
    last quarter (after the default event ring has filled)."""
    with tempfile.TemporaryDirectory(dir="/dev/shm" if os.path.isdir("/dev/shm") else None) as tmp:
        clock_ = VirtualClock(0)
        log = Log(Disk(tmp), "bench-0", "bench", 0, LogConfig(), Scheduler(clock_), EventLog(clock_),
                  hw_follows_leo=True)
        rec = [SimpleRecord(b"v" * 5)]
        gc.collect()
        before = _rss()
        marks = []
        for i in range(1, n + 1):
            log.append_as_leader(rec, 0)
            if i % (n // 4) == 0:
                gc.collect()
                marks.append((i, _rss() - before))
        for i, grown in marks:
            print(f"  {i:,} appends: RSS +{grown / 2**20:.1f} MB ({grown / i:.1f} B per record)")
        (i0, g0), (i1, g1) = marks[-2], marks[-1]    # past the event ring's fill-up
        slope = (g1 - g0) / (i1 - i0)
        print(f"[memory] 10M single-record appends, extrapolated from {n:,}: RSS growth ~{(g1 + slope * (10_000_000 - i1)) / 2**20:,.0f} MB "
              f"(goal <= 200 MB; the segment files live on /dev/shm, outside RSS); events kept {len(log.events.envelopes):,}")
        log.close()


def linear_scan(data: bytes, target: int) -> int:
    """Position of the batch holding ``target``, walking batch lengths from byte 0."""
    pos, end = 0, len(data)
    unpack = struct.unpack_from
    while pos < end:
        base, length = unpack(">qi", data, pos)
        if base + unpack(">i", data, pos + 23)[0] >= target:
            return pos
        pos += length + 12
    return -1


def bench_lookup(records: int, rounds: int, per_round: int) -> list:
    template = build_batch([SimpleRecord(b"12345678", key=b"k", timestamp=1)], base_offset=0)
    print(f"[lookup] a log of {records:,} single-record batches ({records * len(template) / 2**20:.0f} MB), "
          f"default LogConfig")
    figures = []
    with tempfile.TemporaryDirectory() as tmp:
        log = new_log(tmp)
        t = time.perf_counter()
        for first in range(0, records, 20000):
            log.append_as_follower(b"".join(batches_like(template, first, min(20000, records - first))))
        log.events = EventLog(log.events.clock)       # measure the lookups' events only
        seg = log.active_segment
        print(f"  built in {time.perf_counter() - t:.1f} s: {len(log.segments)} segment(s), "
              f"{seg.offset_index.entries:,} offset-index entries")
        rng = random.Random(3)
        traced, untraced = [], []
        for r in range(rounds):
            targets = [rng.randrange(records) for _ in range(per_round)]
            for label, trace, out in (("traced", True, traced), ("untraced", False, untraced))[::1 if r % 2 else -1]:
                t = clock()
                for target in targets:
                    log.read(target, max_bytes=1, trace=trace)
                out.append((clock() - t) / per_round * 1e6)
            got = log.read(targets[0], max_bytes=1)
            assert got.batches[0].base_offset == targets[0]
        events = log.events.seq / (rounds * per_round + rounds)
        figures.append(print_figure(figure(f"Log.read of one offset, traced ({events:.0f} event/lookup)", traced,
                                           "us", f"<= {LOOKUP_GOAL_US:.0f} us", at_most=LOOKUP_GOAL_US)))
        figures.append(print_figure(figure("Log.read of one offset, trace=False", untraced, "us",
                                           f"<= {LOOKUP_GOAL_US:.0f} us", at_most=LOOKUP_GOAL_US)))
        t = time.perf_counter()
        data = log.disk.read_all(seg.log_rel)
        assert linear_scan(data, records - 1) >= 0
        walk = (time.perf_counter() - t) * 1e6
        print(f"  for scale: a struct walk of the whole .log to its last batch takes {walk / 1000:.0f} ms = "
              f"{walk / statistics.median(traced):,.0f}x the traced lookup")
        log.disk.close_all()
    return figures


def main(argv: list[str]) -> list:
    quick = "--quick" in argv
    records = int(argv[argv.index("--records") + 1]) if "--records" in argv else (200_000 if quick else 1_000_000)
    if "--rss" in argv:
        rss_growth(int(argv[argv.index("--rss") + 1]))
        return []
    figures = []
    if "--small-only" not in argv:
        figures += bench_append(rounds=5 if quick else 9, slices=4 if quick else 8, per_slice_mb=1 if quick else 2)
    figures += bench_small_append(rounds=5 if quick else 9, slices=4, per_slice=5000 if quick else 20000)
    if "--small-only" in argv:
        return figures
    figures += bench_lookup(records, rounds=5 if quick else 9, per_round=200 if quick else 500)
    return figures


if __name__ == "__main__":
    main(sys.argv[1:])
