"""``python manage.py lab sweep|analyze``: the data pipeline from the command line.

Every failure the user can cause (unknown axis or value, empty grid, existing --out, a
directory that is not a Kafka log directory, no Java) is one line on stderr and exit
status 1, and leaves nothing at --out.
"""
from __future__ import annotations

import datetime as dt
import secrets
import sys
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from engine.lab.grid import AXES, PRESETS, GridError, make_grid, parse_axis_option
from kafkaviz.lab.conf import lab_settings

# The presets lessons link to (/lab/latest/<preset>/), in the order their results are computed.
LESSON_PRESETS = ("truncation", "acks", "unclean")


def _default_out(kind: str) -> Path:
    root = Path(lab_settings()["DIR"])
    root.mkdir(parents=True, exist_ok=True)
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%d-%H%M%S")
    return root / f"{kind}-{stamp}-{secrets.token_hex(2)}"     # the name the Lab page lists


class ProgressBar:
    """Spark's status tracker (or the plain loop) drawn on stderr: a bar on a terminal,
    a line per tenth otherwise."""

    def __init__(self, stream: Any = None, width: int = 30) -> None:
        self.stream = stream or sys.stderr
        self.width = width
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self._last_tenth = -1

    def __call__(self, p: dict) -> None:
        total, done = p.get("runs_total", 0), p.get("runs_done", 0)
        frac = done / total if total else 0.0
        filled = int(frac * self.width)
        tasks = f" · tasks {p['tasks_done']}/{p['tasks_total']} ({p['tasks_active']} running)" if "tasks_total" in p else ""
        line = (f"[{'#' * filled}{'.' * (self.width - filled)}] {done}/{total} runs{tasks}"
                f" · {p.get('elapsed_s', 0):.1f} s")
        if self.tty:
            self.stream.write("\r" + line)
            if total and done >= total:
                self.stream.write("\n")
            self.stream.flush()
        elif int(frac * 10) > self._last_tenth:
            self._last_tenth = int(frac * 10)
            self.stream.write(line + "\n")
            self.stream.flush()


class Command(BaseCommand):
    help = "The durability lab (sweep) and log analytics (analyze), on Spark."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", metavar="{sweep,analyze,pack-env}", parser_class=CommandParser)
        sub.required = True
        sw = sub.add_parser("sweep", help="run a grid of seeded engine runs",
                            description="Run a grid of seeded engine runs (presets or --axis) and write "
                                        "Parquet partitioned by the grid's axes plus summary.json.")
        sw.add_argument("--preset", choices=sorted(PRESETS), default=None)
        sw.add_argument("--axis", action="append", default=[], metavar="NAME=V1,V2",
                        help=f"vary an axis (repeatable); axes: {', '.join(AXES)}")
        sw.add_argument("--runs", type=int, default=None,
                        help="runs per cell (seeds SEED .. SEED+RUNS-1); default: the preset's (acks, truncation, "
                             "unclean: 100), otherwise 20")
        sw.add_argument("--seed", type=int, default=0, help="first seed")
        sw.add_argument("--master", default=None, help="Spark master URL (default: SPARK_MASTER_URL or local[*])")
        sw.add_argument("--out", default=None, help="new directory for the results")
        sw.add_argument("--no-spark", action="store_true", help="run in this process without Spark")
        sw.add_argument("--quiet", action="store_true", help="no progress bar")
        sw.add_argument("--env-archive", default=None, metavar="FILE",
                        help="on a cluster, ship this packed Python (lab pack-env) to the executors "
                             "(default: KAFKAVIZ_LAB_ENV_ARCHIVE)")
        pc = sub.add_parser("precompute", help="compute the sweeps lessons link to, when missing or stale",
                            description="For each preset a lesson links to (/lab/latest/<preset>/), run it at its "
                                        "defaults unless a finished sweep of it from this engine is already in the "
                                        "lab directory; one job after another, listed on /lab/ as they run.")
        pc.add_argument("--no-spark", action="store_true", help="run the sweeps without Spark")
        pk = sub.add_parser("pack-env", help="pack a self-contained Python for Spark executors",
                            description="Write a tar.gz holding this Python, its standard library, the engine "
                                        "and its codecs, for --env-archive (spark.archives).")
        pk.add_argument("--out", required=True, help="the archive to write (a new file)")
        an = sub.add_parser("analyze", help="figures of a directory of Kafka partition directories",
                            description="Decode every batch of every segment under LOGDIR and write "
                                        "per-partition and per-segment figures (Parquet + summary.json).")
        an.add_argument("logdir")
        an.add_argument("--out", default=None, help="new directory for the results")
        an.add_argument("--master", default=None, help="Spark master URL (default: SPARK_MASTER_URL or local[*])")

    def handle(self, *args: Any, **opts: Any) -> None:
        from kafkaviz.lab.spark_jobs import LabError

        try:
            if opts["action"] == "sweep":
                self.sweep(opts)
            elif opts["action"] == "precompute":
                self.precompute(opts)
            elif opts["action"] == "pack-env":
                self.pack_env(opts)
            else:
                self.analyze(opts)
        except (LabError, GridError) as exc:
            raise CommandError(str(exc)) from None

    def sweep(self, opts: dict) -> None:
        from kafkaviz.lab import spark_jobs as sj

        axes = dict(parse_axis_option(a) for a in opts["axis"])
        grid = make_grid(opts["preset"], axes, runs=opts["runs"], seed=opts["seed"])
        out = Path(opts["out"]) if opts["out"] else _default_out("sweep")
        bar = None if opts["quiet"] else ProgressBar(self.stderr._out)
        if opts["no_spark"]:
            summary = sj.sweep_without_spark(grid, out, progress=bar)
        else:
            sj.check_java()
            summary = sj.sweep(grid, out, master=opts["master"], progress=bar, env_archive=opts["env_archive"])
        self._print_sweep(summary, out)

    def _print_sweep(self, summary: dict, out: Path) -> None:
        g = summary["grid"]
        t = summary["timing"]
        self.stdout.write(f"{g['total_runs']} runs in {g['cells']} cells ({summary['engine']}); "
                          f"{t['runs_per_s']} runs/s; results in {out}")
        axes = summary["axes"]
        for c in summary["cells"]:
            label = " ".join(f"{a}={c['axes'][a]}" for a in axes) or "(defaults)"
            self.stdout.write(f"  {label}: lost {c['lost']} of {c['acked']} acknowledged; runs with loss "
                              f"{c['runs_with_loss']}/{c['runs']}; diverged {c['runs_diverged']}; "
                              f"unavailable {c['unavailable_ms_mean']} ms/run; duplicates {c['duplicates']}; "
                              f"worst seed {c['worst']['seed']}")

    def precompute(self, opts: dict) -> None:
        from engine.lab.grid import default_runs
        from kafkaviz.lab import jobs, spark_jobs as sj

        version = sj.engine_version()
        no_spark = opts["no_spark"]
        if not no_spark:
            try:
                sj.check_java()
            except sj.LabError as exc:
                self.stderr.write(f"{exc}; computing without Spark")
                no_spark = True
        for preset in LESSON_PRESETS:
            have = [j for j in jobs.list_jobs() if j.kind == "sweep" and j.state == "done"
                    and j.summary["grid"].get("preset") == preset and j.summary.get("engine_version") == version
                    and j.summary["grid"]["runs"] >= default_runs(preset)]
            if have:
                self.stdout.write(f"{preset}: {have[0].name} is up to date")
                continue
            args = ["--preset", preset, "--quiet"] + (["--no-spark"] if no_spark else [])
            job = jobs.spawn_and_wait("sweep", args, preset=preset)
            self.stdout.write(f"{preset}: {job.name} {job.state}" + (f" ({job.error})" if job.error else ""))

    def pack_env(self, opts: dict) -> None:
        from kafkaviz.lab.pack_env import pack_environment

        try:
            made = pack_environment(Path(opts["out"]))
        except FileExistsError as exc:
            raise CommandError(f"{exc}; give --out a new file") from None
        self.stdout.write(f"{made['path']}: Python {made['python']}, the engine and {', '.join(made['distributions'])}; "
                          f"{made['files']} files, {made['bytes'] / 1e6:.1f} MB")

    def analyze(self, opts: dict) -> None:
        from kafkaviz.lab import spark_jobs as sj
        from engine.lab.logscan import NotALogDirError, find_partition_dirs

        try:
            find_partition_dirs(opts["logdir"])   # refuse before Spark starts
        except NotALogDirError as exc:
            raise CommandError(str(exc)) from None
        out = Path(opts["out"]) if opts["out"] else _default_out("analytics")
        sj.check_java()
        summary = sj.analyze(Path(opts["logdir"]), out, master=opts["master"])
        tot = summary["totals"]
        self.stdout.write(f"{len(summary['partitions'])} partitions, {tot['segments']} segments, {tot['batches']} "
                          f"batches, {tot['records']} records; {tot['problem_count']} damaged places; "
                          f"{summary['timing']['mb_per_s']} MB/s; results in {out}")
        for pr in summary["problems"]:
            self.stdout.write(f"  {pr['kind']} batch in {pr['file']} at byte {pr['position']}: {pr['reason']}")
