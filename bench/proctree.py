"""CPU time of this process and every process below it, by kind (from /proc; Linux only).

A Spark job's CPU is spread over the driver (this Python), its JVM and the JVM's Python
workers; on a shared machine their wall time moves with the load, their CPU time does not.
A snapshot holds each process's own user + system time; :func:`cpu_delta` sums, per process,
what it spent between two snapshots (a process that started in between counts whole). A Python
worker that exits in between is counted through its daemon, which reaps it (the daemon's
``cutime`` grows by the worker's lifetime CPU; what the worker had spent before the first
snapshot is taken off). Other reaped children are left out on purpose: when a session stops,
the JVM reaps its Python daemon and would inherit every worker's lifetime CPU from earlier turns."""
import os

__all__ = ["cpu_by_kind", "cpu_delta", "snapshot"]

_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _stat(pid: int) -> tuple[int, float, float] | None:
    """(parent pid, own CPU seconds, reaped children's CPU seconds)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            text = fh.read()
    except OSError:
        return None
    rest = text[text.rindex(")") + 2:].split()
    utime, stime, cutime, cstime = (int(x) for x in rest[11:15])
    return int(rest[1]), (utime + stime) / _TICK, (cutime + cstime) / _TICK


def _kind(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            cmd = fh.read().replace(b"\0", b" ")
    except OSError:
        return "other"
    if b"java" in cmd.split(b" ")[0]:
        return "jvm"
    if b"pyspark" in cmd or b"worker" in cmd:
        return "python workers"
    return "other"


def snapshot() -> dict[int, tuple[str, float, float, int]]:
    """pid -> (kind, own CPU seconds, reaped children's CPU seconds, parent pid) for this process
    ("driver") and its descendants ("jvm", "python workers", "other")."""
    me = os.getpid()
    stats: dict[int, tuple[int, float, float]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            st = _stat(int(name))
            if st is not None:
                stats[int(name)] = st
    out = {me: ("driver", stats[me][1], stats[me][2], stats[me][0])}
    for pid, (ppid, own, reaped) in stats.items():
        p, seen = pid, 0
        while p not in (me, 0, 1) and seen < 64:
            p, seen = stats[p][0] if p in stats else 0, seen + 1
        if p == me and pid != me:
            out[pid] = (_kind(pid), own, reaped, ppid)
    return out


def cpu_by_kind() -> dict:
    """A snapshot to give :func:`cpu_delta` later."""
    return snapshot()


def cpu_delta(before: dict, after: dict) -> dict[str, float]:
    """CPU seconds spent between two snapshots, by kind."""
    out = {"driver": 0.0, "jvm": 0.0, "python workers": 0.0, "other": 0.0}
    for pid, (kind, own, reaped, _) in after.items():
        prev = before.get(pid)
        out[kind] += own - (prev[1] if prev is not None else 0.0)
        if kind == "python workers":       # a daemon (or worker) reaping workers that exited
            out[kind] += reaped - (prev[2] if prev is not None else 0.0)
    for pid, (kind, own, _, ppid) in before.items():
        if pid not in after and ppid in after and after[ppid][0] == "python workers":
            out["python workers"] -= own     # counted whole in its daemon's cutime
    return out
