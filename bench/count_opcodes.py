"""Python bytecode instructions per RF 3 acks=all request, by part of the engine: a measure of the
request path's Python work that does not depend on the machine's load (the timing benchmarks
swing by ±20 % on a shared box; this count does not move). Not a benchmark: work done in C
(``pwrite``, ``marshal``, the hashes, ``struct``) is not counted, and tracing is slow.

    python bench/count_opcodes.py [--requests 200] [--top 30]

The workload is bench_cluster.py's: 3 brokers, RF 3, min ISR 2, acks=all batches of 10 x 100 B,
the clock +2 ms after each; counting starts after 50 warm-up requests.
"""
from __future__ import annotations

import collections
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from engine.cluster.cluster import Cluster  # noqa: E402
from engine.cluster.config import ClusterConfig  # noqa: E402
from engine.disk import Disk  # noqa: E402

TMP = "/dev/shm" if Path("/dev/shm").is_dir() else None
HW_ISR = {"maybe_increment_hw", "set_hw", "maybe_expand_isr", "effective_min_isr", "maximal_isr", "topic_config",
          "on_hw_increased", "_follower_in_maximal_isr"}


def part_of(code) -> str:
    f, name = code.co_filename, code.co_name
    if f.endswith(("engine/events.py", "cluster/events.py")):
        return "events"
    if f.endswith("engine/clock.py") or "/engine/timer/" in f:
        return "scheduler, timers, purgatory"
    if f.endswith("replica_fetcher.py"):
        return "follower fetching"
    if f.endswith("cluster/network.py"):
        return "network"
    if "/engine/log/" in f or "/engine/records/" in f or f.endswith(("engine/disk.py", "engine/page_cache.py")):
        return "storage"
    if f.endswith("cluster/partition.py") and name in HW_ISR:
        return "HW and ISR"
    if "/engine/cluster/" in f:
        return "cluster, broker, partition, client"
    return "other (message and record constructors)"


def count(requests: int) -> collections.Counter:
    counts: collections.Counter = collections.Counter()

    def tracer(frame, event, arg):
        frame.f_trace_opcodes = True
        if event == "opcode":
            counts[frame.f_code] += 1
        return tracer

    with tempfile.TemporaryDirectory(dir=TMP) as root:
        c = Cluster(Disk(root), ClusterConfig(brokers=3), seed=0)
        c.create_topic("t", 1, 3, {"min.insync.replicas": 2}, assignment=[[0, 1, 2]])
        c.advance(1000)
        values = [b"v" * 100] * 10
        for _ in range(50):
            c.produce("t", 0, values, acks=-1)
            c.advance(2)
        sys.settrace(tracer)
        try:
            for _ in range(requests):
                c.produce("t", 0, values, acks=-1)
                c.advance(2)
        finally:
            sys.settrace(None)
        c.disk.close_all()
    return counts


def main(argv: list[str]) -> int:
    requests = int(argv[argv.index("--requests") + 1]) if "--requests" in argv else 200
    top = int(argv[argv.index("--top") + 1]) if "--top" in argv else 30
    counts = count(requests)
    total = sum(counts.values())
    parts: collections.Counter = collections.Counter()
    for code, n in counts.items():
        parts[part_of(code)] += n
    print(f"{total / requests:,.0f} bytecode instructions per RF 3 acks=all request ({requests} requests)")
    for name, n in parts.most_common():
        print(f"  {name}: {n / requests:,.0f} ({100 * n / total:.1f} %)")
    print(f"top {top} functions (instructions per request):")
    for code, n in counts.most_common(top):
        where = code.co_filename.replace(str(ROOT) + "/", "")
        print(f"  {n / requests:8.1f}  {where}:{code.co_firstlineno} {code.co_name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
