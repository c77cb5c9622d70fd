"""Lab jobs started from the web: each is a ``manage.py lab`` subprocess, never work in a request.

A job has a name (``sweep-…`` or ``analytics-…``) and lives in the lab directory:

* ``<name>/``: the finished result (``summary.json``, Parquet), appearing at once by rename;
* ``.<name>.partial/``: the job writing (its ``progress.json`` is what the page polls);
* ``.<name>.job.json``: what was launched (arguments, pid, start time);
* ``.<name>.log``: the subprocess's output; its last line is the error of a failed job.

At most one job runs at a time (a Spark job already uses every core it is given).
"""
from __future__ import annotations

import datetime as dt
import fcntl
import json
import os
import re
import secrets
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings

from .conf import lab_settings

NAME = re.compile(r"^(sweep|analytics)-[0-9]{8}-[0-9]{6}-[0-9a-f]{4}$")
_CHILDREN: dict[int, subprocess.Popen] = {}   # reaped on every status look


class JobError(Exception):
    """A job that may not start (busy, not allowed); the message is for the visitor (the
    page words it in its own language from ``busy``: the running job's name, or None when
    launching from the page is switched off)."""

    def __init__(self, message: str, busy: str | None = None) -> None:
        super().__init__(message)
        self.busy = busy


@dataclass(frozen=True)
class Job:
    name: str
    kind: str
    state: str                 # done | running | failed
    meta: dict
    progress: dict | None
    error: str | None
    summary: dict | None

    @property
    def created(self) -> str:
        return (self.summary or {}).get("created") or self.meta.get("started", "")


def lab_dir() -> Path:
    root = Path(lab_settings()["DIR"])
    root.mkdir(parents=True, exist_ok=True)
    return root


def valid_name(name: str) -> bool:
    return bool(NAME.match(name))


def valid_sandbox_dir(path: Path) -> bool:
    """A sandbox data directory that exists and is not a link out of the data root."""
    return path.is_dir() and not path.is_symlink()


def _alive(pid: int | None) -> bool:
    if not pid:
        return False
    child = _CHILDREN.get(pid)
    if child is not None:
        if child.poll() is None:
            return True
        del _CHILDREN[pid]
        return False
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    try:   # a zombie of ours (server restarted meanwhile) is not running
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(") ", 1)[1][:1] != "Z"
    except OSError:
        return True


def _read_json(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _last_line(path: Path) -> str:
    try:
        lines = [ln.strip() for ln in path.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return "the job stopped without saying why"
    errors = [ln for ln in lines if ln.startswith("CommandError:")]
    line = errors[-1] if errors else (lines[-1] if lines else "the job stopped without saying why")
    return line.removeprefix("CommandError: ")[:400]


def get_job(name: str) -> Job | None:
    if not valid_name(name):
        return None
    root = lab_dir()
    kind = name.split("-", 1)[0]
    meta = _read_json(root / f".{name}.job.json") or {}
    summary = _read_json(root / name / "summary.json")
    if summary is not None:
        return Job(name, kind, "done", meta, None, None, summary)
    if not meta and not (root / f".{name}.partial").exists():
        return None
    progress = _read_json(root / f".{name}.partial" / "progress.json")
    if _alive(meta.get("pid")):
        return Job(name, kind, "running", meta, progress, None, None)
    return Job(name, kind, "failed", meta, progress, _last_line(root / f".{name}.log"), None)


def list_jobs() -> list[Job]:
    root = lab_dir()
    names = set()
    for p in root.iterdir():
        n = p.name
        if n.startswith(".") and n.endswith(".job.json"):
            n = n[1:-len(".job.json")]
        if valid_name(n):
            names.add(n)
    jobs = [j for j in (get_job(n) for n in names) if j is not None]
    return sorted(jobs, key=lambda j: j.name.split("-", 1)[1], reverse=True)


def running() -> list[Job]:
    return [j for j in list_jobs() if j.state == "running"]


def latest_of_preset(preset: str) -> Job | None:
    """The newest finished sweep of ``preset``, else a sweep of it still running."""
    found = list_jobs()
    for job in found:
        if job.kind == "sweep" and job.state == "done" and job.summary["grid"].get("preset") == preset:
            return job
    for job in found:
        if job.kind == "sweep" and job.state == "running" and job.meta.get("preset") == preset:
            return job
    return None


def launch(kind: str, args: list[str], preset: str | None = None) -> str:
    """Start ``manage.py lab <kind> ARGS --out <lab dir>/<name>`` in the background."""
    conf = lab_settings()
    if not conf["LAUNCH"]:
        raise JobError("Starting lab jobs from this page is switched off on this server "
                       "(KAFKAVIZ_LAB_LAUNCH); run `python manage.py lab` instead.", busy=None)
    root = lab_dir()
    with open(root / ".launch.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)     # two clicks at once start one job
        busy = running()
        if busy:
            raise JobError(f"Another lab job ({busy[0].name}) is still running; wait for it to finish.",
                           busy=busy[0].name)
        return _spawn(root, kind, args, conf, preset)


def _spawn(root: Path, kind: str, args: list[str], conf: dict, preset: str | None = None) -> str:
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%d-%H%M%S")
    name = f"{'sweep' if kind == 'sweep' else 'analytics'}-{stamp}-{secrets.token_hex(2)}"
    cmd = [sys.executable, str(Path(settings.BASE_DIR) / "manage.py"), "lab", kind, *args,
           "--out", str(root / name)]
    if kind == "sweep" and conf["MASTER"]:
        cmd += ["--master", conf["MASTER"]]
    with open(root / f".{name}.log", "wb") as log:
        proc = subprocess.Popen(cmd, cwd=settings.BASE_DIR, stdin=subprocess.DEVNULL, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)
    _CHILDREN[proc.pid] = proc
    meta: dict[str, Any] = {"kind": kind, "args": args, "pid": proc.pid, "preset": preset,
                            "started": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")}
    (root / f".{name}.job.json").write_text(json.dumps(meta))
    return name


def spawn_and_wait(kind: str, args: list[str], preset: str | None = None) -> Job | None:
    """Start a job as :func:`launch` does (the server's own, so whatever ``LAUNCH`` says, and
    after any running job) and wait for it to end; the job as it ended."""
    import time

    root = lab_dir()
    while running():
        time.sleep(2)
    with open(root / ".launch.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        name = _spawn(root, kind, args, lab_settings(), preset)
    _CHILDREN[_read_json(root / f".{name}.job.json")["pid"]].wait()
    return get_job(name)
