"""The data pipeline's Spark side: the durability-lab sweep and the log analytics job.

Both jobs take a SparkSession (``local[*]`` by default, any master through ``--master`` or
``SPARK_MASTER_URL``) and write their result into a temporary directory beside ``out``
(``.<name>.partial``), renamed to ``out`` only when everything is written: a reader never
sees half a result, and a failed job leaves nothing where the result is expected.

* :func:`sweep`: the grid's runs are an RDD of run indices; executors rebuild each spec and
  play it with ``engine.lab.runs.run_indices`` (the same code ``--no-spark`` calls), the rows
  become a DataFrame, repartitioned by cell and written as Parquet partitioned by the grid's
  axes, and the per-cell figures (``engine.lab.runs.CELL_FIGURES``) are a DataFrame
  aggregation of that Parquet.
* :func:`analyze`: executors map the segment files (``engine.lab.logscan.scan_paths``) and
  decode them with ``engine.lab.logscan.scan_file``; per-segment and per-partition figures (including distinct
  keys and what compaction would remove, from each key's latest segment) are
  DataFrame aggregations, written as Parquet.

Executors import only ``engine`` (shipped to them as a zip) and its codec libraries; on a
cluster, ``env_archive`` (``lab pack-env``, :mod:`kafkaviz.lab.pack_env`) ships the Python they
run too, so a worker needs Spark and Java only.
"""
from __future__ import annotations

import datetime as dt
import functools
import hashlib
import json
import os
import re
import shutil
import socket
import sys
import tempfile
import threading
import time
import uuid
import zipfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

from engine.lab.grid import AXES, Grid, cell_id
from engine.lab.logscan import NOT_VISIBLE, NotALogDirError, find_partition_dirs, scan_paths, segment_files
from engine.lab.runs import (CELL_FIGURES, FIGURE_DEFINITIONS, ROW_FIELDS, WORST_FIELDS, cell_axes, cell_figures, run_indices,
                             run_partition, worst_run_log)

__all__ = ["LabError", "check_java", "master_url", "spark_session", "sweep", "sweep_without_spark", "analyze",
           "partial_dir", "progress_path", "read_summary"]

ENGINE_DIR = Path(__file__).resolve().parents[2] / "engine"
SUMMARY = "summary.json"
PROGRESS = "progress.json"
WORST_COLUMNS = ("run", "seed", "lost", "lost_at_end", "diverged", "unavailable_ms", "duplicates",
                 "first_loss_step", "event_digest")


class LabError(Exception):
    """A lab job cannot run (bad input, no Java, an existing output): one line for the user."""


# ---- output directories ---------------------------------------------------------------------

def partial_dir(out: Path) -> Path:
    """Where a job writes before the final rename (the web page reads progress from here)."""
    out = Path(out)
    return out.parent / f".{out.name}.partial"


def progress_path(out: Path) -> Path:
    return partial_dir(out) / PROGRESS


def _begin(out: Path) -> Path:
    out = Path(out)
    if out.exists():
        raise LabError(f"{out} already exists; give --out a new directory (results are never overwritten)")
    if not out.parent.is_dir():
        raise LabError(f"the parent of --out ({out.parent}) is not a directory")
    tmp = partial_dir(out)
    shutil.rmtree(tmp, ignore_errors=True)   # a job that died before its rename
    tmp.mkdir()
    return tmp


def _finish(tmp: Path, out: Path, summary: dict) -> None:
    (tmp / PROGRESS).unlink(missing_ok=True)
    _write_json(tmp / SUMMARY, summary)
    os.rename(tmp, out)


def _write_json(path: Path, data: Any) -> None:
    part = path.with_name(path.name + ".tmp")
    part.write_text(json.dumps(data, indent=1, sort_keys=True))
    os.replace(part, path)


def read_summary(out: Path) -> dict:
    return json.loads((Path(out) / SUMMARY).read_text())


@contextmanager
def _result_dir(out: Path) -> Iterator[Path]:
    tmp = _begin(out)
    try:
        yield tmp
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


# ---- the Spark session ------------------------------------------------------------------------

def check_java() -> str:
    """The java binary Spark will start, or LabError saying how to install it."""
    home = os.environ.get("JAVA_HOME")
    if home:
        java = Path(home) / "bin" / "java"
        if os.access(java, os.X_OK):
            return str(java)
        raise LabError(f"JAVA_HOME is {home} but {java} is missing: Spark needs Java 17 "
                       f"(Debian: apt-get install openjdk-17-jre-headless)")
    java = shutil.which("java")
    if java is None:
        raise LabError("Java is not installed: Spark needs Java 17 (Debian: apt-get install "
                       "openjdk-17-jre-headless, or run `make system-deps`), or use --no-spark")
    return java


def master_url(master: str | None = None) -> str:
    return master or os.environ.get("SPARK_MASTER_URL") or "local[*]"


CONNECT_TIMEOUT_S = 4.0


def check_master(master: str) -> None:
    """For a standalone master (``spark://host:port[,host:port]``), LabError unless one of its
    addresses accepts a connection within a few seconds: Spark itself would retry for a minute
    and then fail with a message that never says it could not connect."""
    if not master.startswith("spark://"):
        return
    reasons = []
    for hostport in master[len("spark://"):].split(","):
        host, _, port = hostport.strip().rpartition(":")
        try:
            with socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_TIMEOUT_S):
                return
        except (OSError, ValueError) as exc:
            reasons.append(f"{hostport}: {exc.strerror or exc}" if isinstance(exc, OSError) else
                           f"{hostport}: not host:port")
    raise LabError(f"could not connect to the Spark master {master} ({'; '.join(reasons)}): is it running, and "
                   f"is --master (or SPARK_MASTER_URL) right? Or use local[*] or --no-spark")


def _engine_zip() -> str:
    """A zip of the engine package for executors (cached per process)."""
    global _ZIP
    if _ZIP is None or not os.path.exists(_ZIP):
        fd, path = tempfile.mkstemp(prefix="kafkaviz-engine-", suffix=".zip")
        os.close(fd)
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
            # The code and its data (Kafka's metadata record definitions, engine/protocol/definitions).
            for f in sorted(ENGINE_DIR.rglob("*")):
                if f.suffix in (".py", ".json") and "__pycache__" not in f.parts:
                    zf.write(f, f.relative_to(ENGINE_DIR.parent).as_posix())
        _ZIP = path
    return _ZIP


_ZIP: str | None = None


def env_archive_conf(master: str, archive: str | None) -> dict:
    """Spark settings that ship the packed environment (``lab pack-env``) to a cluster's
    executors and run their Python from it; none for a local master, whose executors are
    this process's threads and run this Python."""
    from .pack_env import ARCHIVE_ALIAS, EXECUTOR_PYTHON

    archive = archive or os.environ.get("KAFKAVIZ_LAB_ENV_ARCHIVE") or None
    if not archive or master.startswith("local"):
        return {}
    path = Path(archive).resolve()
    if not path.is_file():
        raise LabError(f"the environment archive {archive} does not exist: make it with "
                       f"`python manage.py lab pack-env --out {archive}`")
    return {"spark.archives": f"{path.as_uri()}#{ARCHIVE_ALIAS}", "spark.pyspark.python": EXECUTOR_PYTHON,
            "spark.executorEnv.LD_LIBRARY_PATH": f"./{ARCHIVE_ALIAS}/lib",
            "spark.executorEnv.PYTHONNOUSERSITE": "1"}


def spark_session(master: str | None = None, app: str = "kafkaviz-lab", conf: dict | None = None,
                  env_archive: str | None = None) -> Any:
    """A SparkSession for the lab (created, or the active one): executors run this
    Python (or, on a cluster, the packed one of ``env_archive``), the UI is off,
    partition columns stay strings, and the engine is shipped."""
    check_java()
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise LabError("pyspark is not installed: pip install -r requirements.txt (or use --no-spark)") from None
    check_master(master_url(master))
    shipped = env_archive_conf(master_url(master), env_archive)
    if shipped:
        os.environ["PYSPARK_PYTHON"] = shipped["spark.pyspark.python"]
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    # Loopback unless the workers are elsewhere: then they need an address to reach the driver.
    host = os.environ.get("SPARK_DRIVER_HOST", "127.0.0.1")
    bind = os.environ.get("SPARK_DRIVER_BIND_ADDRESS", "127.0.0.1" if host == "127.0.0.1" else "0.0.0.0")
    builder = (SparkSession.builder.master(master_url(master)).appName(app)
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.pyspark.python", os.environ["PYSPARK_PYTHON"])
               .config("spark.sql.shuffle.partitions", "4")
               .config("spark.sql.sources.partitionColumnTypeInference.enabled", "false")
               .config("spark.driver.bindAddress", bind).config("spark.driver.host", host))
    builder = builder.config("spark.python.worker.reuse", "true").config("spark.pyspark.driver.python", sys.executable)
    for k, v in {**shipped, **(conf or {})}.items():
        builder = builder.config(k, v)
    try:
        spark = builder.getOrCreate()
    except Exception as exc:  # noqa: BLE001 - the JVM's many ways to fail become one line
        raise LabError(f"Spark did not start (master {master_url(master)}): {_first_line(exc)}") from None
    sc = spark.sparkContext
    sc.setLogLevel("ERROR")
    if not getattr(sc, "_kafkaviz_engine", False):
        sc.addPyFile(_engine_zip())
        sc._kafkaviz_engine = True
    return spark


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:300] if text else type(exc).__name__


@contextmanager
def _session(spark: Any, master: str | None, env_archive: str | None = None) -> Iterator[Any]:
    if spark is not None:
        yield spark
        return
    own = spark_session(master, env_archive=env_archive)
    try:
        yield own
    finally:
        own.stop()


# ---- progress from Spark's status tracker ------------------------------------------------------

class _Tracker:
    """Polls ``statusTracker()`` for one job group and reports tasks done / total, once a second
    (the page asks once a second too): each poll is a few py4j calls, 3-5 ms of the JVM's CPU
    (load ~21), which twice a second was a tenth of the JVM's share of a sweep."""

    def __init__(self, sc: Any, group: str, total_runs: int, callback: Callable[[dict], None] | None,
                 every_s: float = 1.0) -> None:
        self.sc, self.group, self.total_runs, self.callback, self.every_s = sc, group, total_runs, callback, every_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="lab-progress", daemon=True)

    def snapshot(self) -> dict:
        tracker = self.sc.statusTracker()
        jobs = tracker.getJobIdsForGroup(self.group)
        total = done = active = failed = stages = 0
        first = None          # the stage that plays the runs: the group's first (lowest id)
        for j in jobs:
            info = tracker.getJobInfo(j)
            if info is None:
                continue
            for s in info.stageIds:
                st = tracker.getStageInfo(s)
                if st is None:
                    continue
                stages += 1
                total += st.numTasks
                done += st.numCompletedTasks
                active += st.numActiveTasks
                failed += st.numFailedTasks
                if first is None or s < first.stageId:
                    first = st
        runs_done = self.total_runs * first.numCompletedTasks // first.numTasks if first and first.numTasks else 0
        # Never step back (a stage list can briefly shrink between two polls).
        self._runs_done = runs_done = max(runs_done, getattr(self, "_runs_done", 0))
        writing = bool(first) and first.numCompletedTasks == first.numTasks and done < total
        return {"jobs": len(jobs), "stages": stages, "tasks_total": total, "tasks_done": done,
                "tasks_active": active, "tasks_failed": failed, "runs_total": self.total_runs,
                "runs_done": runs_done, "phase": "writing" if writing else "runs"}

    def _loop(self) -> None:
        while not self._stop.wait(self.every_s):
            if self.callback is not None:
                self.callback(self.snapshot())

    def __enter__(self) -> "_Tracker":
        self.sc.setJobGroup(self.group, "kafkaviz lab")
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join()


def _progress_writer(tmp: Path, callback: Callable[[dict], None] | None) -> Callable[[dict], None]:
    started = time.monotonic()

    def report(p: dict) -> None:
        p = dict(p, elapsed_s=round(time.monotonic() - started, 1))
        try:
            _write_json(tmp / PROGRESS, p)
        except OSError:
            pass  # progress is advisory; the result is what counts
        if callback is not None:
            callback(p)
    return report


# ---- the durability lab --------------------------------------------------------------------------

def _row_schema() -> Any:
    from pyspark.sql.types import BooleanType, IntegerType, LongType, StringType, StructField, StructType

    types = {"string": StringType(), "long": LongType(), "int": IntegerType(), "boolean": BooleanType()}
    return StructType([StructField(n, types[t], True) for n, t in ROW_FIELDS])


def _triples(grid: Grid) -> list[tuple]:
    return [(spec.cell, spec.run, spec.seed) for spec in grid.specs()]


RUNS_PER_TASK = 40      # ~0.6 s of engine work: at 12 runs a task the JVM's CPU per run was 2.5x
                        # (5.1 against 2.0 ms, load 11-12); 40 still moves the bar in steps of
                        # 1/50 on 2,000 runs
MAX_TASKS = 400


def _slices(n: int, parallelism: int) -> int:
    return max(1, min(n, max(2 * parallelism, min(MAX_TASKS, n // RUNS_PER_TASK))))


def _files(n_cells: int, parallelism: int) -> int:
    # One Parquet file per cell (a cell's rows go to one write task), at most a few per core.
    return max(1, min(n_cells, 4 * parallelism))


def engine_version() -> str:
    """A digest of the engine's source: two summaries with the same one ran the same engine."""
    global _ENGINE_VERSION
    if _ENGINE_VERSION is None:
        h = hashlib.sha256()
        for f in sorted(ENGINE_DIR.rglob("*.py")):
            h.update(f.relative_to(ENGINE_DIR).as_posix().encode() + b"\0" + f.read_bytes() + b"\0")
        _ENGINE_VERSION = "sha256:" + h.hexdigest()[:16]
    return _ENGINE_VERSION


_ENGINE_VERSION: str | None = None


def figure_definitions() -> dict:
    return {"cell": {k: dict(v) for k, v in FIGURE_DEFINITIONS.items()},
            "time": "virtual milliseconds of the engine's clock, not wall time",
            "axes": {a.name: a.doc for a in AXES.values()}}


def _summary(grid: Grid, cells: list[dict], engine: str, timing: dict, extra: dict | None = None) -> dict:
    by_id = {c["cell"]: c for c in cells}
    ordered = [by_id[cell_id(c)] for c in grid.cells if cell_id(c) in by_id]
    return {"kind": "sweep", "version": 2, "engine": engine, "engine_version": engine_version(),
            "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "grid": grid.to_dict(), "axes": grid.axes, "all_axes": list(AXES),
            "figures": [name for name, _, _ in CELL_FIGURES], "definitions": figure_definitions(),
            "row_schema": [{"name": n, "type": t} for n, t in ROW_FIELDS],
            "cells": ordered, "timing": timing, **(extra or {})}


def _attach_worst_logs(cells: list[dict]) -> None:
    """Each cell's worst run with its command log, rebuilt by replaying it (and checked)."""
    import tempfile as _tf

    base = "/dev/shm" if os.path.isdir("/dev/shm") else None
    with _tf.TemporaryDirectory(prefix="kafkaviz-lab-worst-", dir=base) as scratch:
        for c in cells:
            w = c["worst"]
            w["command_log"] = worst_run_log(c["cell"], w["run"], w["seed"], w["event_digest"], scratch)


def sweep(grid: Grid, out: Path, *, spark: Any = None, master: str | None = None,
          progress: Callable[[dict], None] | None = None, env_archive: str | None = None) -> dict:
    """Run ``grid`` on Spark; write ``out/runs`` (Parquet, partitioned by the grid's axes)
    and ``out/summary.json``. Returns the summary.

    Only run indices travel to executors (``engine.lab.runs.run_indices`` rebuilds each spec
    there); tasks hold :data:`RUNS_PER_TASK` runs or more; rows are repartitioned by cell
    before the write, so each cell is one file whatever the number of runs."""
    out = Path(out)
    with _result_dir(out) as tmp:
        t0 = time.monotonic()
        with _session(spark, master, env_archive) as s:
            t_started = time.monotonic()
            sc = s.sparkContext
            total = len(grid.cells) * grid.runs
            report = _progress_writer(tmp, progress)
            group = f"kafkaviz-lab-{uuid.uuid4().hex[:12]}"
            play = functools.partial(run_indices, grid.cells, grid.runs, grid.seed)
            rdd = sc.parallelize(range(total), _slices(total, sc.defaultParallelism)).mapPartitions(play)
            df = s.createDataFrame(rdd, _row_schema(), verifySchema=False)
            df = df.repartition(_files(len(grid.cells), sc.defaultParallelism), "cell")
            writer = df.write.partitionBy(*grid.axes) if grid.axes else df.write
            with _Tracker(sc, group, total, report) as tracker:
                writer.parquet(str(tmp / "runs"))
                report(tracker.snapshot())
            t_runs = time.monotonic()
            cells = _aggregate(s.read.schema(_row_schema()).parquet(str(tmp / "runs")))
            _attach_worst_logs(cells)
            timing = {"startup_s": round(t_started - t0, 3), "runs_s": round(t_runs - t_started, 3),
                      "aggregate_s": round(time.monotonic() - t_runs, 3),
                      "runs_per_s": round(total / max(t_runs - t_started, 1e-9), 2)}
            extra = {"master": sc.master, "spark_version": s.version, "default_parallelism": sc.defaultParallelism,
                     "executor_python": _executor_python(sc)}
        summary = _summary(grid, cells, "spark", timing, extra)
        _finish(tmp, out, summary)
    return summary


def _executor_python(sc: Any) -> dict:
    """Which Python an executor ran (the packed environment's, on a cluster given one). Collected,
    not ``first()``: a Python worker whose output is not read to the end cannot be reused, so
    ``first()`` cost every sweep a new worker and a new import of the engine."""
    path, version = sc.parallelize([0], 1).map(
        lambda _: (__import__("sys").executable, __import__("sys").version.split()[0])).collect()[0]
    return {"executable": path, "version": version}


def _aggregate(runs: Any) -> list[dict]:
    """Per-cell figures with DataFrames: CELL_FIGURES, and the worst run as the minimum of
    a struct whose leading fields are the negated WORST_FIELDS (then the seed)."""
    from pyspark.sql import functions as F

    aggs = []
    for name, how, col in CELL_FIGURES:
        c = F.col(col)
        expr = {"count": lambda: F.count(c), "sum": lambda: F.sum(c), "max": lambda: F.max(c),
                "mean": lambda: F.avg(c),
                "runs_positive": lambda: F.sum(F.when(c > 0, 1).otherwise(0))}[how]()
        aggs.append(expr.alias(name))
    key = [(-F.col(f)).alias(f"k_{f}") for f in WORST_FIELDS] + [F.col("seed").alias("k_seed")]
    aggs.append(F.min(F.struct(*key, *[F.col(c) for c in WORST_COLUMNS])).alias("worst"))
    means = {name for name, how, _ in CELL_FIGURES if how == "mean"}
    cells = []
    for r in runs.groupBy("cell").agg(*aggs).collect():
        d = r.asDict(recursive=True)
        worst = {k: d["worst"][k] for k in WORST_COLUMNS}
        cell = {"cell": d["cell"], "axes": cell_axes(d["cell"])}
        for name, _, _ in CELL_FIGURES:
            cell[name] = round(d[name], 3) if name in means else int(d[name])
        cell["worst"] = worst
        cells.append(cell)
    return cells


def sweep_without_spark(grid: Grid, out: Path, *, progress: Callable[[dict], None] | None = None) -> dict:
    """The same grid in this process with the same per-run code: ``out/runs.jsonl`` (one row
    per run, grid order) and ``out/summary.json`` with the same figures."""
    out = Path(out)
    with _result_dir(out) as tmp:
        t0 = time.monotonic()
        report = _progress_writer(tmp, progress)
        triples = _triples(grid)
        names = [n for n, _ in ROW_FIELDS]
        rows = []
        every = max(1, len(triples) // 100)
        with open(tmp / "runs.jsonl", "w") as fh:
            for i, t in enumerate(run_partition(triples)):
                row = dict(zip(names, t))
                rows.append(row)
                fh.write(json.dumps(row, sort_keys=True) + "\n")
                if (i + 1) % every == 0 or i + 1 == len(triples):
                    report({"runs_total": len(triples), "runs_done": i + 1})
        t_runs = time.monotonic()
        by_cell: dict[str, list] = {}
        for row in rows:
            by_cell.setdefault(row["cell"], []).append(row)
        cells = [{"cell": cid, "axes": cell_axes(cid), **cell_figures(rs)} for cid, rs in by_cell.items()]
        _attach_worst_logs(cells)
        timing = {"startup_s": 0.0, "runs_s": round(t_runs - t0, 3), "aggregate_s": round(time.monotonic() - t_runs, 3),
                  "runs_per_s": round(len(triples) / max(t_runs - t0, 1e-9), 2)}
        summary = _summary(grid, cells, "python", timing)
        _finish(tmp, out, summary)
    return summary


# ---- log analytics ------------------------------------------------------------------------------

def _scan_schema() -> Any:
    from pyspark.sql.types import (ArrayType, DoubleType, LongType, MapType, StringType, StructField,
                                   StructType)

    L, S = LongType(), StringType()
    problem = StructType([StructField("file", S), StructField("position", L), StructField("kind", S),
                          StructField("reason", S)])
    key = StructType([StructField("key", S), StructField("offset", L)])
    return StructType([
        StructField("partition_dir", S), StructField("topic", S), StructField("partition", L),
        StructField("base_offset", L), StructField("suffix", S), StructField("file", S),
        StructField("batches", L), StructField("records", L), StructField("valid_bytes", L),
        StructField("file_bytes", L), StructField("first_offset", L), StructField("last_offset", L),
        StructField("first_timestamp", L), StructField("last_timestamp", L),
        StructField("codecs", MapType(S, L)), StructField("producer_ids", ArrayType(L)),
        StructField("control_batches", L), StructField("transactional_batches", L),
        StructField("keys", ArrayType(key)), StructField("problems", ArrayType(problem)),
        StructField("unreadable_bytes", L), StructField("null_key_records", L), StructField("keyed_records", L),
        StructField("distinct_keys", L), StructField("index_entries", L),
        StructField("index_spacing_bytes", DoubleType()), StructField("timeindex_entries", L),
    ])


SUMMARY_ROWS = 5000


def analyze(logdir: Path, out: Path, *, spark: Any = None, master: str | None = None) -> dict:
    """Figures of every partition and segment under ``logdir``; ``out/segments``,
    ``out/partitions``, ``out/problems`` (Parquet) and ``out/summary.json``."""
    logdir = Path(logdir).resolve()
    try:
        partitions = find_partition_dirs(str(logdir))
    except NotALogDirError as exc:
        raise LabError(str(exc)) from None
    files = [f for pdir, _, _ in partitions for f, _, _ in segment_files(pdir)]
    total_bytes = sum(os.path.getsize(f) for f in files)
    with _result_dir(out) as tmp:
        t0 = time.monotonic()
        with _session(spark, master) as s:
            t_started = time.monotonic()
            sc = s.sparkContext
            schema = _scan_schema()
            # Paths, not bytes, travel to executors; each maps its files (scan_paths), so no file is
            # read whole into memory, on the executor or in the JVM. Executors must see the same paths.
            names = [f.name for f in schema.fields]
            paths = sc.parallelize(sorted(files, key=os.path.getsize, reverse=True),
                                   max(1, min(len(files), 4 * sc.defaultParallelism)))
            scanned = s.createDataFrame(paths.mapPartitions(functools.partial(scan_paths, names=names)),
                                        schema).cache()
            segments, parts, problems = (f.cache() for f in _analytics_frames(scanned))
            try:
                segments.write.parquet(str(tmp / "segments"))
            except Exception as exc:  # noqa: BLE001 - Spark wraps the executor's error in a py4j trace
                found = re.search(re.escape(NOT_VISIBLE) + r"[^\n]*", str(exc))
                if found:
                    raise LabError(found.group(0).rstrip()) from None
                raise
            parts.write.parquet(str(tmp / "partitions"))
            problems.write.parquet(str(tmp / "problems"))
            # The page shows at most SUMMARY_ROWS segments and damaged places; the Parquet has them all.
            seg_rows = [r.asDict(recursive=True) for r in
                        segments.orderBy("partition_dir", "base_offset").limit(SUMMARY_ROWS).toLocalIterator()]
            part_rows = [r.asDict(recursive=True) for r in parts.orderBy("partition_dir").toLocalIterator()]
            prob_rows = [r.asDict(recursive=True) for r in
                         problems.orderBy("file", "position").limit(SUMMARY_ROWS).toLocalIterator()]
            for f in (scanned, segments, parts, problems):
                f.unpersist()
            elapsed = time.monotonic() - t_started
            extra = {"master": sc.master, "spark_version": s.version}
        summary = _analytics_summary(logdir, part_rows, seg_rows, prob_rows, total_bytes,
                                     {"startup_s": round(t_started - t0, 3), "scan_s": round(elapsed, 3),
                                      "mb_per_s": round(total_bytes / 1e6 / max(elapsed, 1e-9), 2)}, extra)
        _finish(tmp, out, summary)
    return summary


def _analytics_frames(scanned: Any) -> tuple:
    """(segments, partitions, problems) DataFrames from the scanned files. A segment is its
    three files folded into one row; compaction counts come from each key's latest record in
    the partition (a keyed record is removable when its key has a later one)."""
    from pyspark.sql import functions as F

    seg_key = ["partition_dir", "topic", "partition", "base_offset"]
    is_log, is_index = F.col("suffix") == "log", F.col("suffix") == "index"

    def first(c: str, when: Any = None) -> Any:
        col = F.col(c) if when is None else F.when(when, F.col(c))
        return F.first(col, ignorenulls=True).alias(c)

    log_fields = ["file", "batches", "records", "valid_bytes", "file_bytes", "first_offset", "last_offset",
                  "first_timestamp", "last_timestamp", "codecs", "control_batches", "transactional_batches",
                  "unreadable_bytes", "null_key_records", "keyed_records", "distinct_keys"]
    folded = scanned.groupBy(*seg_key).agg(
        *[first(c, is_log) for c in log_fields],
        F.first(F.when(is_log, F.array_sort("producer_ids")), ignorenulls=True).alias("producer_ids"),
        F.first(F.when(is_log, F.size("problems")), ignorenulls=True).alias("problem_count"),
        first("index_entries"), first("index_spacing_bytes"), first("timeindex_entries"),
        F.first(F.when(is_index, F.col("file_bytes")), ignorenulls=True).alias("index_bytes"))
    keys = (scanned.where(is_log).select("partition_dir", "base_offset", F.explode("keys").alias("k"))
            .select("partition_dir", "base_offset", F.col("k.key").alias("key"), F.col("k.offset").alias("offset")))
    latest = keys.groupBy("partition_dir", "key").agg(F.max(F.struct("offset", "base_offset")).alias("m"))
    latest_here = (latest.groupBy("partition_dir", F.col("m.base_offset").alias("base_offset"))
                   .agg(F.count("*").alias("latest_here")))
    segments = (folded.where(F.col("file").isNotNull())
                .join(latest_here, ["partition_dir", "base_offset"], "left")
                .fillna(0, ["latest_here", "index_entries", "timeindex_entries"])
                .withColumn("compaction_removable", F.col("keyed_records") - F.col("latest_here"))
                .drop("latest_here"))
    part_keys = latest.groupBy("partition_dir").agg(F.count("*").alias("distinct_keys"))
    merge = F.aggregate(F.collect_list("codecs"), F.create_map().cast("map<string,bigint>"),
                        lambda acc, m: F.map_zip_with(acc, m, lambda _, a, b: F.coalesce(a, F.lit(0))
                                                      + F.coalesce(b, F.lit(0))))
    spacing_weight = F.greatest(F.col("index_entries") - 1, F.lit(0))
    parts = (segments.groupBy("partition_dir", "topic", "partition").agg(
        F.count("*").alias("segments"), F.sum("batches").alias("batches"), F.sum("records").alias("records"),
        F.sum("valid_bytes").alias("valid_bytes"), F.sum("file_bytes").alias("log_bytes"),
        F.min("first_offset").alias("first_offset"), F.max("last_offset").alias("last_offset"),
        F.min("first_timestamp").alias("first_timestamp"), F.max("last_timestamp").alias("last_timestamp"),
        F.sum("control_batches").alias("control_batches"),
        F.sum("transactional_batches").alias("transactional_batches"),
        F.array_sort(F.array_distinct(F.flatten(F.collect_list("producer_ids")))).alias("producer_ids"),
        F.sum("index_entries").alias("index_entries"), F.sum("timeindex_entries").alias("timeindex_entries"),
        (F.sum(F.col("index_spacing_bytes") * spacing_weight) / F.sum(spacing_weight)).alias("index_spacing_bytes"),
        F.sum("null_key_records").alias("null_key_records"), F.sum("compaction_removable").alias("compaction_removable"),
        F.sum("problem_count").alias("problem_count"), F.sum("unreadable_bytes").alias("unreadable_bytes"),
        merge.alias("codecs"))
        .join(part_keys, "partition_dir", "left").fillna(0, ["distinct_keys"]))
    problems = (scanned.select(F.explode("problems").alias("p"))
                .select("p.file", "p.position", "p.kind", "p.reason"))
    return segments, parts, problems


def _analytics_summary(logdir: Path, parts: list, segs: list, probs: list, total_bytes: int, timing: dict,
                       extra: dict) -> dict:
    def rel(p: str) -> str:
        try:
            return str(Path(p).relative_to(logdir))
        except ValueError:
            return p

    by_dir: dict[str, list] = {}
    for s in segs:
        s["partition_dir"] = rel(s["partition_dir"])
        s["file"] = rel(s["file"])
        by_dir.setdefault(s["partition_dir"], []).append(s)
    for p in parts:
        p["partition_dir"] = rel(p["partition_dir"])
        if p["index_spacing_bytes"] is not None:
            p["index_spacing_bytes"] = round(p["index_spacing_bytes"], 1)
        p["segments_detail"] = by_dir.get(p["partition_dir"], [])
    for pr in probs:
        pr["file"] = rel(pr["file"])
    totals = {k: sum(p[k] or 0 for p in parts) for k in ("segments", "batches", "records", "valid_bytes",
                                                         "compaction_removable", "problem_count")}
    return {"kind": "analytics", "version": 1, "logdir": str(logdir), "bytes": total_bytes,
            "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "partitions": parts, "problems": probs, "totals": totals, "timing": timing, **extra}
