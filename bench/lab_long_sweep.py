"""A long durability-lab sweep of one cell, in chunks, with real partial counts.

Issue 20's figure: 100,000 runs of epoch + acks=all + min ISR 2 (every axis at its default:
rf 3, no unclean election, the ``mixed`` schedule: targeted windows and uniform random
schedules) on Spark ``local[2]``, and the number of acknowledged records lost (the goal is 0).

One Spark session plays the runs as consecutive sweeps of ``--chunk`` runs each: chunk *k*
is ``lab sweep --runs CHUNK --seed START + k * CHUNK``, so together they are exactly the runs
of one sweep of ``--runs`` runs from seed ``START`` (run *i* has seed ``START + i``). Each
chunk is a complete result directory under ``--out`` (Parquet rows and ``summary.json``), and
after each one the totals so far are printed and written to ``--out/progress.json``: stopped
at any moment, the counts of the chunks done are final. Start-up is timed apart.

    python bench/lab_long_sweep.py --runs 100000 --chunk 5000 --out /tmp/lab-100k [--master local[2]]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kafkaviz.settings")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=100_000)
    ap.add_argument("--chunk", type=int, default=5_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--out", required=True, help="a new directory (one result directory per chunk inside)")
    args = ap.parse_args()

    import django
    django.setup()
    from engine.lab.grid import make_grid
    from kafkaviz.lab.spark_jobs import spark_session, sweep

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=False)
    t0 = time.monotonic()
    spark = spark_session(args.master, app="kafkaviz-lab-long-sweep")
    startup = time.monotonic() - t0
    totals = {"runs": 0, "acked": 0, "lost": 0, "lost_at_end": 0, "runs_with_loss": 0, "runs_diverged": 0,
              "sent": 0, "missing_at_end": 0, "duplicates": 0}
    by_window: dict[str, dict] = {}
    runs_s = 0.0
    print(f"{args.runs} runs of the default cell (epoch, acks=all, min ISR 2, rf 3, mixed schedules) on "
          f"{args.master}, chunks of {args.chunk}; start-up {startup:.1f} s; load {_load()}", flush=True)
    try:
        k = 0
        while totals["runs"] < args.runs:
            n = min(args.chunk, args.runs - totals["runs"])
            grid = make_grid(None, runs=n, seed=args.seed + totals["runs"])
            t = time.monotonic()
            summary = sweep(grid, out / f"chunk-{k:03d}", spark=spark)
            wall = time.monotonic() - t
            (cell,) = summary["cells"]
            for f in totals:
                totals[f] += cell[f]
            runs_s += summary["timing"]["runs_s"]
            for w, c in _by_window(spark, out / f"chunk-{k:03d}" / "runs").items():
                acc = by_window.setdefault(w, {"runs": 0, "acked": 0, "lost": 0})
                for f in acc:
                    acc[f] += c[f]
            elapsed = time.monotonic() - t0
            report = {"runs_done": totals["runs"], "runs_total": args.runs, "totals": totals, "by_window": by_window,
                      "startup_s": round(startup, 1), "elapsed_s": round(elapsed, 1),
                      "runs_phase_s": round(runs_s, 1), "runs_per_s": round(totals["runs"] / runs_s, 2),
                      "load": os.getloadavg(), "engine_version": summary["engine_version"]}
            _write(out / "progress.json", report)
            print(f"chunk {k}: {n} runs in {wall:.0f} s ({n / summary['timing']['runs_s']:.1f} runs/s); so far "
                  f"{totals['runs']} runs, {totals['acked']} acknowledged, {totals['lost']} lost "
                  f"({totals['runs_with_loss']} runs), {elapsed:.0f} s elapsed; load {_load()}", flush=True)
            k += 1
    finally:
        spark.stop()
    print(json.dumps(report, indent=1), flush=True)


def _by_window(spark, runs_dir: Path) -> dict[str, dict]:
    from pyspark.sql import functions as F
    from kafkaviz.lab.spark_jobs import _row_schema

    rows = (spark.read.schema(_row_schema()).parquet(str(runs_dir)).groupBy("window")
            .agg(F.count("run").alias("runs"), F.sum("acked").alias("acked"), F.sum("lost").alias("lost")).collect())
    return {r["window"]: {"runs": int(r["runs"]), "acked": int(r["acked"]), "lost": int(r["lost"])} for r in rows}


def _write(path: Path, data: dict) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1))
    os.replace(tmp, path)


def _load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


if __name__ == "__main__":
    main()
