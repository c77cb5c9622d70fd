"""Memory of a run (a lesson-10 sandbox) and the time to step back through it.

    python bench/bench_memory.py [--quick]

A lesson-10 sandbox is a :class:`~engine.cluster.run.Run` that a learner steps through,
one command per step, with step back. The workload: the ``kip101-data-loss`` scenario,
then free play (produce acks=all, advance, now and then a crash and a restart of a
follower) until the run has the number of steps asked. Figures, from one process:

* **bytes per run after 100 steps** (``tracemalloc``: Python heap held by the Run, its
  cluster, its snapshots, checker and event log, after a ``gc``), with the number of
  events the run keeps and how many it dropped; goal ≤ 2 MiB;
* **step back to step 0 from step 1,000** (``Run.seek(0)``, wall clock, best of 5);
  goal ≤ 50 ms; and **one step back** from step 1,000 (``Run.seek(999)``), what the
  lesson's "Step back" button costs;
* the **peer**, measured in the same run: the same workload with a full snapshot after
  every step (``snapshot_every=1``, what lesson 10 used before) — the ratio says what
  the incremental snapshots save.

The data directory is on /dev/shm when there is one (its bytes are not Python heap).
"""
from __future__ import annotations

import gc
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.cluster.run import Run, make_config  # noqa: E402
from engine.cluster.scenarios import get_scenario  # noqa: E402

TMP = "/dev/shm" if Path("/dev/shm").is_dir() else None
MIB = 1024 * 1024
MEMORY_GOAL = 2 * MIB
BACK_GOAL_MS = 50.0


def workload(steps: int) -> list[dict]:
    """The scenario's commands, then free play, ``steps`` commands in all."""
    cmds = [dict(c) for c in get_scenario("kip101-data-loss").commands()]
    i = 0
    while len(cmds) < steps:
        i += 1
        if i % 25 == 20:
            cmds.append({"cmd": "crash", "broker": 1})
        elif i % 25 == 23:
            cmds.append({"cmd": "restart", "broker": 1})
        elif i % 2:
            cmds.append({"cmd": "produce", "topic": "t", "acks": "all", "value": f"free-{i}"})
        else:
            cmds.append({"cmd": "advance", "ms": 1000})
    return cmds[:steps]


def make_run(root: str, **kwargs) -> Run:
    sc = get_scenario("kip101-data-loss")
    return Run(sc.seed, make_config(sc.config, truncation="epoch"), root, **kwargs)


def run_memory(steps: int, **kwargs) -> tuple[int, int, int]:
    """(bytes held by a Run after ``steps`` commands, events kept, events dropped)."""
    with tempfile.TemporaryDirectory(dir=TMP) as root:
        gc.collect()
        tracemalloc.start()
        base = tracemalloc.get_traced_memory()[0]
        run = make_run(f"{root}/r", **kwargs)
        for c in workload(steps):
            run.apply(c)
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - base
        tracemalloc.stop()
        events = run.cluster.events
        kept = len(events.envelopes)
        dropped = events.seq - kept
        run.cluster.disk.close_all()
        return held, kept, dropped


def seek_times(steps: int, rounds: int, **kwargs) -> tuple[float, float]:
    """(best ms of seek(0) from ``steps``, best ms of seek(steps - 1) from ``steps``)."""
    with tempfile.TemporaryDirectory(dir=TMP) as root:
        run = make_run(f"{root}/r", **kwargs)
        for c in workload(steps):
            run.apply(c)
        to_zero, back_one = [], []
        for _ in range(rounds):
            run.seek(steps)
            t = time.perf_counter()
            run.seek(0)
            to_zero.append(time.perf_counter() - t)
            run.seek(steps)
            t = time.perf_counter()
            run.seek(steps - 1)
            back_one.append(time.perf_counter() - t)
        run.cluster.disk.close_all()
        return min(to_zero) * 1000, min(back_one) * 1000


def main() -> None:
    quick = "--quick" in sys.argv
    long_steps = 200 if quick else 1000
    rounds = 2 if quick else 5
    mem, kept, dropped = run_memory(100)
    peer_mem, peer_kept, peer_dropped = run_memory(100, snapshot_every=1)
    print(f"memory per run after 100 steps: {mem / MIB:.2f} MiB (goal <= {MEMORY_GOAL / MIB:.0f} MiB: "
          f"{'met' if mem <= MEMORY_GOAL else 'NOT met'}); events kept {kept}, dropped {dropped}")
    print(f"  peer, a full snapshot every step: {peer_mem / MIB:.2f} MiB (events kept {peer_kept}, "
          f"dropped {peer_dropped}); ratio {peer_mem / max(mem, 1):.1f}x")
    zero, one = seek_times(long_steps, rounds)
    print(f"step back to step 0 from step {long_steps}: {zero:.1f} ms (goal <= {BACK_GOAL_MS:.0f} ms: "
          f"{'met' if zero <= BACK_GOAL_MS else 'NOT met'}); one step back: {one:.1f} ms")
    pzero, pone = seek_times(long_steps, rounds, snapshot_every=1)
    print(f"  peer, a full snapshot every step: to step 0 {pzero:.1f} ms, one step back {pone:.1f} ms")


if __name__ == "__main__":
    main()
