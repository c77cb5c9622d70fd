"""Benchmark the data pipeline, printing ratios against peers measured in the same run.

Durability lab: runs per second of one grid with Spark local[1], local[2] and --no-spark (plain
Python, one process). Spark start-up (session + first Python workers) is reported apart; the
goal is local[2] >= 1.7x local[1] on a grid big enough to amortise the per-job overhead.

Log analytics: MB/s of the analytics job (Spark local[2], warm session) over a directory of
engine-written partitions, against plain reading of the same bytes (open + read) and against
decoding them in this process with the same scanner.

    python bench/bench_lab.py [--runs 100] [--mb 40]

The machine's load average is printed beside the figures: on a shared box they move with it.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kafkaviz.settings")


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def spark_run(master: str, grid, out: Path) -> dict:
    from engine.lab.grid import make_grid
    from engine.lab.runs import run_partition
    from kafkaviz.lab.spark_jobs import spark_session, sweep

    t0 = time.perf_counter()
    spark = spark_session(master, app=f"bench-{master}")
    t1 = time.perf_counter()
    sc = spark.sparkContext
    # Warm-up: start the Python workers (importing the engine in each), then a small sweep
    # through the same path (Parquet write, aggregation) so the JVM's JIT is warm for both masters.
    specs = [(s.cell, s.run, s.seed) for s in grid.specs()[: 2 * sc.defaultParallelism]]
    sc.parallelize(specs, sc.defaultParallelism).mapPartitions(run_partition).count()
    t2 = time.perf_counter()
    sweep(make_grid("acks", runs=2, seed=10_000), out.with_name(out.name + "-warm"), spark=spark)
    summary = sweep(grid, out, spark=spark)
    spark.stop()
    return {"session_s": t1 - t0, "warm_s": t2 - t1, "runs_s": summary["timing"]["runs_s"],
            "runs_per_s": summary["grid"]["total_runs"] / summary["timing"]["runs_s"],
            "aggregate_s": summary["timing"]["aggregate_s"]}


def make_logdir(root: Path, mb: int) -> int:
    from engine.clock import Scheduler, VirtualClock
    from engine.config import LogConfig
    from engine.disk import Disk
    from engine.events import EventLog
    from engine.log import Log
    from engine.records import CompressionType, SimpleRecord

    codecs = [CompressionType.NONE, CompressionType.LZ4, CompressionType.GZIP, CompressionType.ZSTD]
    per_partition = mb * 1_000_000 // 4
    for p in range(4):
        clock = VirtualClock(1_700_000_000_000)
        log = Log(Disk(root), f"events-{p}", "events", p, LogConfig(segment_bytes=8 * 1024 * 1024),
                  Scheduler(clock), EventLog(clock), hw_follows_leo=True, schedule_tasks=False)
        i = 0
        while log.size_bytes < per_partition:
            recs = [SimpleRecord(os.urandom(60) + b"x" * 200, key=b"user-%d" % ((i * 7 + j) % 5000),
                                 timestamp=1_700_000_000_000 + i) for j in range(50)]
            log.append_as_leader(recs, 0, compression=codecs[p])
            i += 1
        log.flush()
        log.close()
    return sum(f.stat().st_size for f in root.rglob("*") if f.is_file())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=100, help="runs per cell of the acks preset (6 cells)")
    ap.add_argument("--mb", type=int, default=40, help="megabytes of log for the analytics part")
    ap.add_argument("--only", choices=("lab", "analytics"), default=None, help="run one part only")
    args = ap.parse_args()

    import django
    django.setup()
    from engine.lab.grid import make_grid

    grid = make_grid("acks", runs=args.runs, seed=0)
    total = len(grid.cells) * grid.runs
    base = "/dev/shm" if os.path.isdir("/dev/shm") else None
    tmp = Path(tempfile.mkdtemp(prefix="bench-lab-", dir=base))
    try:
        if args.only != "analytics":
            bench_sweeps(grid, total, tmp)
        if args.only != "lab":
            bench_analytics(args.mb, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def bench_sweeps(grid, total: int, tmp: Path) -> None:
    from kafkaviz.lab.spark_jobs import sweep_without_spark

    print(f"durability lab: preset acks, {len(grid.cells)} cells x {grid.runs} runs = {total} runs; "
          f"load average before: {load()}")
    plain = sweep_without_spark(grid, tmp / "plain")["timing"]
    one = spark_run("local[1]", grid, tmp / "l1")
    two = spark_run("local[2]", grid, tmp / "l2")
    print(f"  --no-spark : {total / plain['runs_s']:8.1f} runs/s  ({plain['runs_s']:.1f} s)")
    for name, r in (("local[1]", one), ("local[2]", two)):
        print(f"  {name:<10} : {r['runs_per_s']:8.1f} runs/s  ({r['runs_s']:.1f} s for the grid; start-up "
              f"{r['session_s']:.1f} s session + {r['warm_s']:.1f} s first Python workers, then a warm-up sweep; "
              f"aggregation {r['aggregate_s']:.1f} s)")
    print(f"  local[2] / local[1] = {two['runs_per_s'] / one['runs_per_s']:.2f}x   (goal >= 1.7x)")
    print(f"  local[2] / --no-spark = {two['runs_per_s'] / (total / plain['runs_s']):.2f}x")
    print(f"  load average after: {load()}")


def bench_analytics(mb_wanted: int, tmp: Path) -> None:
    from engine.lab.logscan import find_partition_dirs, scan_file, segment_files
    from kafkaviz.lab.spark_jobs import analyze, spark_session

    logs = tmp / "logs"
    size = make_logdir(logs, mb_wanted)
    files = [f for d, _, _ in find_partition_dirs(str(logs)) for f, _, _ in segment_files(d)]
    os.system("sync")
    t = time.perf_counter()
    n = 0
    for f in files:
        with open(f, "rb") as fh:
            n += len(fh.read())
    read_s = time.perf_counter() - t
    t = time.perf_counter()
    for f in files:
        with open(f, "rb") as fh:
            scan_file(f, fh.read())
    decode_s = time.perf_counter() - t
    spark = spark_session("local[2]", app="bench-analytics")
    small = tmp / "small"
    make_logdir(small, 1)
    small_size = sum(f.stat().st_size for f in small.rglob("*") if f.is_file())
    analyze(small, tmp / "warm", spark=spark)          # warm the session and the workers
    t = time.perf_counter()
    analyze(small, tmp / "small-an", spark=spark)      # the job's fixed cost, on ~1 MB
    small_s = time.perf_counter() - t
    t = time.perf_counter()
    summary = analyze(logs, tmp / "an", spark=spark)
    job_s = time.perf_counter() - t
    spark.stop()
    mb = size / 1e6
    marginal = (size - small_size) / 1e6 / max(job_s - small_s, 1e-9)
    print(f"log analytics: {mb:.1f} MB in {len(files)} files, {summary['totals']['records']} records; "
          f"load average: {load()}")
    print(f"  plain read (open+read)       : {mb / read_s:8.1f} MB/s")
    print(f"  decode in this process       : {mb / decode_s:8.1f} MB/s")
    print(f"  Spark local[2] analytics job : {mb / job_s:8.1f} MB/s  ({job_s:.1f} s, outputs included)")
    print(f"  of which fixed per job (the same job on {small_size / 1e6:.1f} MB): {small_s:.1f} s; "
          f"marginal {marginal:.1f} MB/s")
    print(f"  analytics / plain read = {read_s / job_s:.3f}x;  analytics / in-process decode = "
          f"{decode_s / job_s:.2f}x;  marginal / in-process decode = {marginal / (mb / decode_s):.2f}x")


if __name__ == "__main__":
    main()
