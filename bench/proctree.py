"""CPU time of this process and every process below it, by kind (from /proc; Linux only).

A Spark job's CPU is spread over the driver (this Python), its JVM and the JVM's Python
workers; on a shared machine their wall time moves with the load, their CPU time does not.
A snapshot holds each process's own user + system time; :func:`cpu_delta` sums, per process,
what it spent between two snapshots (a process that started in between counts whole). Time of
children already reaped (``cutime``) is left out on purpose: when a session stops, the JVM reaps
its Python daemon and so inherits every worker's lifetime CPU, which belongs to earlier turns.
A process that both starts and ends between two snapshots is missed; Spark's reused Python
workers live as long as their session."""
import os

__all__ = ["cpu_by_kind", "cpu_delta", "snapshot"]

_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _stat(pid: int) -> tuple[int, float] | None:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            text = fh.read()
    except OSError:
        return None
    rest = text[text.rindex(")") + 2:].split()
    ppid = int(rest[1])
    utime, stime = int(rest[11]), int(rest[12])
    return ppid, (utime + stime) / _TICK


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


def snapshot() -> dict[int, tuple[str, float]]:
    """pid -> (kind, CPU seconds so far) for this process ("driver") and its descendants
    ("jvm", "python workers", "other")."""
    me = os.getpid()
    parent: dict[int, int] = {}
    cpu: dict[int, float] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            st = _stat(int(name))
            if st is not None:
                parent[int(name)], cpu[int(name)] = st
    out = {me: ("driver", cpu.get(me, 0.0))}
    for pid in cpu:
        p, seen = pid, 0
        while p not in (me, 0, 1) and seen < 64:
            p, seen = parent.get(p, 0), seen + 1
        if p == me and pid != me:
            out[pid] = (_kind(pid), cpu[pid])
    return out


def cpu_by_kind() -> dict[int, tuple[str, float]]:
    """A snapshot to give :func:`cpu_delta` later."""
    return snapshot()


def cpu_delta(before: dict[int, tuple[str, float]], after: dict[int, tuple[str, float]]) -> dict[str, float]:
    """CPU seconds spent between two snapshots, by kind, counted per process (one that started
    in between counts whole)."""
    out = {"driver": 0.0, "jvm": 0.0, "python workers": 0.0, "other": 0.0}
    for pid, (kind, cpu) in after.items():
        prev = before.get(pid)
        out[kind] += cpu - (prev[1] if prev is not None else 0.0)
    return out
