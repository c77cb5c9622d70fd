"""Replicated-cluster throughput, next to a single log, from the same process.

    python bench/bench_cluster.py [--quick]

Figures (each the best of a few rounds; wall-clock, so a busy machine lowers all alike):

* fault schedules/s — the durability test's seeded schedules (RF 3, acks=all,
  min.insync.replicas=2, epoch truncation), each on a fresh 3-broker cluster in a fresh
  data directory, with the checker watching every command;
* replicated records/s — 3 brokers, a topic with RF 3 and min.insync.replicas=2, the client
  sending acks=all batches of ``BATCH`` 100-byte records while the clock moves on 2 ms
  after each request; counted once every record is acknowledged (so it includes the
  followers' fetches, HW moves and the produce purgatory), with the cluster used directly
  and through a :class:`Run` (command parsing, checker views after every command);
* single-log records/s — the same batches appended to one engine ``Log`` with
  ``hw_follows_leo`` (no replication, no network), the storage engine's ceiling.
"""
from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.clock import Scheduler, VirtualClock  # noqa: E402
from engine.cluster.cluster import Cluster  # noqa: E402
from engine.cluster.config import ClusterConfig  # noqa: E402
from engine.cluster.run import Run  # noqa: E402
from engine.cluster.scenarios import run_schedule  # noqa: E402
from engine.config import LogConfig  # noqa: E402
from engine.disk import Disk  # noqa: E402
from engine.events import EventLog  # noqa: E402
from engine.log import Log  # noqa: E402
from engine.records import SimpleRecord  # noqa: E402

BATCH = 10
VALUE = b"v" * 100
TMP = "/dev/shm" if Path("/dev/shm").is_dir() else None


def fault_schedules_per_second(n: int) -> tuple[float, int]:
    bad = 0
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(dir=TMP) as root:
        for seed in range(n):
            run = run_schedule(seed, f"{root}/{seed}", truncation="epoch")
            bad += bool(run.checker.findings)
    return n / (time.perf_counter() - start), bad


def replicated_records_per_second(requests: int, via_run: bool) -> float:
    with tempfile.TemporaryDirectory(dir=TMP) as root:
        if via_run:
            run = Run(0, ClusterConfig(brokers=3), root, snapshot_every=10**9)
            cluster = run.cluster
            apply = run.apply
        else:
            cluster = Cluster(Disk(root), ClusterConfig(brokers=3), seed=0)
            from engine.cluster.commands import apply_command
            apply = lambda c: apply_command(cluster, c)  # noqa: E731
        apply({"cmd": "create_topic", "topic": "t", "partitions": 1, "assignment": [[0, 1, 2]],
               "config": {"min.insync.replicas": 2}})
        apply({"cmd": "advance", "ms": 1000})
        values = [VALUE.decode()] * BATCH
        start = time.perf_counter()
        if via_run:
            for _ in range(requests):
                run.apply({"cmd": "produce", "topic": "t", "values": values})
                run.apply({"cmd": "advance", "ms": 2})
        else:
            for _ in range(requests):
                cluster.produce("t", 0, [VALUE] * BATCH, acks=-1)
                cluster.advance(2)
        while len(cluster.produce_results) < requests:
            cluster.advance(10)
        elapsed = time.perf_counter() - start
        assert all(r.status == "ok" for r in cluster.produce_results.values())
        return requests * BATCH / elapsed


def single_log_records_per_second(batches: int) -> float:
    with tempfile.TemporaryDirectory(dir=TMP) as root:
        clock = VirtualClock()
        scheduler = Scheduler(clock)
        events = EventLog(clock)
        log = Log(Disk(root), "t-0", "t", 0, LogConfig(), scheduler, events, hw_follows_leo=True)
        records = [SimpleRecord(VALUE) for _ in range(BATCH)]
        start = time.perf_counter()
        for _ in range(batches):
            log.append_as_leader(records, leader_epoch=0)
            scheduler.advance(2)
        elapsed = time.perf_counter() - start
        log.close()
        return batches * BATCH / elapsed


def best(fn, rounds: int, *args):
    return max(fn(*args) for _ in range(rounds))


def main(argv: list[str]) -> int:
    quick = "--quick" in argv
    rounds = 1 if quick else 3
    schedules = 20 if quick else 100
    requests = 50 if quick else 300
    fs = max((fault_schedules_per_second(schedules) for _ in range(rounds)), key=lambda x: x[0])
    repl = best(replicated_records_per_second, rounds, requests, False)
    repl_run = best(replicated_records_per_second, rounds, requests, True)
    single = best(single_log_records_per_second, rounds, requests)
    print(f"fault schedules (RF 3, acks=all, min ISR 2, epoch; {schedules} per round): "
          f"{fs[0]:8.1f} schedules/s  ({fs[1]} with findings)")
    print(f"replicated, 3 brokers, acks=all, batches of {BATCH} x 100 B (Cluster):  {repl:10.0f} records/s")
    print(f"replicated, 3 brokers, acks=all, batches of {BATCH} x 100 B (Run+checker): {repl_run:8.0f} records/s")
    print(f"single Log (hw_follows_leo), same batches:                        {single:10.0f} records/s")
    print(f"replication cost: {single / repl:.1f}x slower than one log")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
