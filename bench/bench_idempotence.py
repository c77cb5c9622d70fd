"""Produce throughput with the idempotent producer on against off, same workload.

    python bench/bench_idempotence.py [--quick]

Three brokers, a topic with RF 3 and min.insync.replicas=2, acks=all batches of 10
100-byte records sent through a producer (``enable.idempotence`` true or false, no faults,
so neither retries); the clock moves 2 ms after each request and a run counts once every
batch is acknowledged. Paired, interleaved rounds whose order alternates (on-off, off-on, ...)
so drift in the machine's load falls on both sides; the figure is the median of the per-round
ratios, printed beside the load average. Goal (issue 11): idempotence costs at most 10 %,
i.e. on/off >= 0.90.
"""
from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.cluster.cluster import Cluster  # noqa: E402
from engine.cluster.config import ClusterConfig  # noqa: E402
from engine.disk import Disk  # noqa: E402

BATCH = 10
VALUES = [b"v" * 100] * BATCH
TMP = "/dev/shm" if Path("/dev/shm").is_dir() else None


def records_per_second(idempotent: bool, requests: int) -> float:
    with tempfile.TemporaryDirectory(dir=TMP) as root:
        c = Cluster(Disk(root), ClusterConfig(brokers=3), seed=0)
        c.create_topic("t", 1, 3, config={"min.insync.replicas": 2})
        c.advance(100)
        c.create_producer("p", idempotent=idempotent)
        start = time.perf_counter()
        rids = []
        for _ in range(requests):
            rids.append(c.produce("t", 0, VALUES, producer="p"))
            c.advance(2)
        while any(r not in c.produce_results for r in rids):
            c.advance(10)
        elapsed = time.perf_counter() - start
        assert all(c.produce_results[r].status == "ok" for r in rids)
        return requests * BATCH / elapsed


def main() -> None:
    quick = "--quick" in sys.argv
    rounds, requests = (3, 300) if quick else (15, 2000)
    on, off, ratios = [], [], []
    load_before = os.getloadavg()[0]
    for i in range(rounds):
        order = (True, False) if i % 2 == 0 else (False, True)
        got = {flag: records_per_second(flag, requests) for flag in order}
        on.append(got[True])
        off.append(got[False])
        ratios.append(got[True] / got[False])
    ratio = statistics.median(ratios)
    load_after = os.getloadavg()[0]
    print(f"RF 3 acks=all, {requests} batches of {BATCH} records, {rounds} paired rounds, "
          f"load average {load_before:.2f} -> {load_after:.2f}")
    for label, xs in (("idempotence on ", on), ("idempotence off", off)):
        print(f"  {label}: median {statistics.median(xs):9,.0f} records/s (min {min(xs):,.0f}, max {max(xs):,.0f})")
    print(f"  per-round on / off: {', '.join(f'{r:.2f}' for r in ratios)}")
    print(f"  on / off (median of rounds): {ratio:.2f}  (goal >= 0.90: {'met' if ratio >= 0.90 else 'NOT met'})")


if __name__ == "__main__":
    main()
