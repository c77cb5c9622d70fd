"""Log cleaner and assignor benchmarks (plain script, prints figures with their goals).

1. **Cleaner throughput**: one cleaning pass (offset map, grouped rewrite through
   ``.cleaned``/``.swap``, fsync) over a compacted log of ``--mb`` MB of 50-record batches
   with ``--keys`` distinct keys, in MB of segments cleaned per second, against the peer:
   reading every segment file and writing the same bytes to a new file with an fsync.
   Paired rounds on fresh copies of the same directory, the order alternating; the figure is
   the median of the per-round ratios, with min and max. Wall time: both sides wait for
   fsync, which CPU time would not count.
2. **Assignment time** for 1,000 members × 10,000 partitions (10 topics) per strategy, ours
   against kafka-python 3.0.12's assignors on the same group: a fresh group, and (sticky)
   the rebalance after one member leaves. Paired rounds (kafka-python's sticky takes tens of
   seconds here, so it runs ``--slow-rounds`` times); medians.

    .venv/bin/python bench/bench_groups.py [--mb 32] [--keys 2000] [--rounds 5] [--slow-rounds 1]
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from paired import figure, print_figure  # noqa: E402

from engine.clock import Scheduler, VirtualClock  # noqa: E402
from engine.config import LogConfig  # noqa: E402
from engine.disk import Disk  # noqa: E402
from engine.events import EventLog  # noqa: E402
from engine.group.assignors import Subscription, assign  # noqa: E402
from engine.log import Log  # noqa: E402
from engine.log.cleaner import LogCleaner  # noqa: E402
from engine.records import SimpleRecord  # noqa: E402

CLEANER_GOAL = 0.20     # cleaner MB/s at least this fraction of a plain read + rewrite
ASSIGN_GOAL = 1.0       # at least as fast as kafka-python's assignor


class NullEventLog(EventLog):
    def emit(self, ev):
        self.seq += 1

    def emit_fields(self, cls, *values):
        self.seq += 1

    def emit_rows(self, events):
        self.seq += len(events)

    def emit_row(self, cls, values):
        self.seq += 1


def _open(root: str, cfg: LogConfig) -> Log:
    clock = VirtualClock(1_700_000_000_000)
    return Log(Disk(root), "c-0", "c", 0, cfg, Scheduler(clock), NullEventLog(clock), hw_follows_leo=True,
               schedule_tasks=False)


def build_log(root: str, mb: int, keys: int) -> tuple[LogConfig, int]:
    cfg = LogConfig(cleanup_policy="compact", segment_bytes=8 * 1024 * 1024)
    log = _open(root, cfg)
    target = mb * 1024 * 1024
    i = 0
    while log.size_bytes < target:
        recs = [SimpleRecord(b"v" * 100 + str(i + j).encode(), key=b"key-%d" % ((i + j) * 7919 % keys),
                             timestamp=1_700_000_000_000 + i) for j in range(50)]
        log.append_as_leader(recs, 0)
        i += 50
    log.roll()
    log.close()
    return cfg, i


def clean_once(root: str, cfg: LogConfig) -> tuple[float, int]:
    log = _open(root, cfg)
    cleanable = sum(s.size for s in log.segments[:-1])
    t = time.perf_counter()
    LogCleaner(log.disk, "").clean(log, log.scheduler.now_ms())
    elapsed = time.perf_counter() - t
    log.close()
    return elapsed, cleanable


def rewrite_once(root: str) -> tuple[float, int]:
    d = Path(root) / "c-0"
    files = sorted(p for p in d.iterdir() if p.name.endswith(".log") and p.stat().st_size)
    total = 0
    t = time.perf_counter()
    for p in files:
        data = p.read_bytes()
        out = p.with_name(p.name + ".copy")
        fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
        total += len(data)
    elapsed = time.perf_counter() - t
    return elapsed, total


def bench_cleaner(mb: int, keys: int, rounds: int) -> list:
    with tempfile.TemporaryDirectory() as tmp:
        master = os.path.join(tmp, "master")
        cfg, records = build_log(master, mb, keys)
        ours, peer, ratio = [], [], []
        print(f"cleaner: {mb} MB, {records} records, {keys} keys, {rounds} paired rounds (order alternating)")
        for r in range(rounds):
            a, b = os.path.join(tmp, f"a{r}"), os.path.join(tmp, f"b{r}")
            shutil.copytree(master, a)
            shutil.copytree(master, b)
            turns = [("ours", lambda: clean_once(a, cfg)), ("peer", lambda: rewrite_once(b))]
            got = {}
            for name, fn in turns[::1 if r % 2 == 0 else -1]:
                t, n = fn()
                got[name] = n / t / 1e6
            ours.append(got["ours"])
            peer.append(got["peer"])
            ratio.append(got["ours"] / got["peer"])
            shutil.rmtree(a)
            shutil.rmtree(b)
        print_figure(figure("cleaning pass, MB of segments cleaned per s", ours, "MB/s", "(no goal)"))
        print_figure(figure("read + rewrite + fsync of the same files", peer, "MB/s", "(no goal)"))
        return [print_figure(figure("cleaner throughput / read + rewrite", ratio, "x", f">= {CLEANER_GOAL}x",
                                    at_least=CLEANER_GOAL))]


def _time(fn, rounds: int) -> float:
    out = []
    for _ in range(rounds):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return statistics.median(out)


def bench_assignors(rounds: int, slow_rounds: int) -> None:
    from kafka.coordinator.assignors.range import RangePartitionAssignor
    from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
    from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "engine" / "group"))
    from test_assignors import KafkaPythonCluster, kafka_python_members  # the tests' kafka-python adapter
    topics = tuple(f"topic-{i}" for i in range(10))
    parts = {t: 1000 for t in topics}
    subs = {f"consumer-{i:04d}": Subscription(topics) for i in range(1000)}
    cluster = KafkaPythonCluster(parts)
    members = kafka_python_members(subs)
    fresh = assign("sticky", subs, parts)
    after = {m: Subscription(topics, tuple(fresh[m]), 1) for m in subs if m != "consumer-0500"}
    after_members = kafka_python_members(after)
    cases = [
        ("range", lambda: assign("range", subs, parts), lambda: RangePartitionAssignor.assign(cluster, members),
         rounds),
        ("roundrobin", lambda: assign("roundrobin", subs, parts),
         lambda: RoundRobinPartitionAssignor.assign(cluster, members), rounds),
        ("sticky (fresh group)", lambda: assign("sticky", subs, parts),
         lambda: StickyPartitionAssignor().assign(cluster, members), slow_rounds),
        ("sticky (one member left)", lambda: assign("sticky", after, parts),
         lambda: StickyPartitionAssignor().assign(cluster, after_members), slow_rounds),
        ("cooperative-sticky (one left)", lambda: assign("cooperative-sticky", after, parts), None, rounds),
    ]
    print("assignment: 1000 members x 10000 partitions (10 topics x 1000), medians")
    for name, ours, theirs, n in cases:
        o = []
        t = []
        for _ in range(n):  # paired: ours then theirs in each round
            o.append(_time(ours, 1))
            if theirs is not None:
                t.append(_time(theirs, 1))
        mo = statistics.median(o)
        if theirs is None:
            print(f"  {name:32s} ours {mo * 1000:9.1f} ms   (kafka-python has no separate cooperative run)")
            continue
        mt = statistics.median(t)
        ratio = mt / mo
        print(f"  {name:32s} ours {mo * 1000:9.1f} ms   kafka-python {mt * 1000:10.1f} ms   "
              f"{ratio:8.1f}x faster  goal >= {ASSIGN_GOAL}x: {'met' if ratio >= ASSIGN_GOAL else 'NOT met'}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=int, default=32)
    ap.add_argument("--keys", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--slow-rounds", type=int, default=1)
    ap.add_argument("--skip-cleaner", action="store_true")
    ap.add_argument("--skip-assignors", action="store_true")
    args = ap.parse_args()
    if not args.skip_cleaner:
        bench_cleaner(args.mb, args.keys, args.rounds)
    if not args.skip_assignors:
        bench_assignors(args.rounds, args.slow_rounds)


if __name__ == "__main__":
    main()
