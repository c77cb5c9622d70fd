"""Memory of a run (a lesson-10 sandbox) and the time to step back through it.

    python bench/bench_memory.py [--quick]

A lesson-10 sandbox is a :class:`~engine.cluster.run.Run` that a learner steps through,
one command per step, with step back. The workload: the ``kip101-data-loss`` scenario,
then free play (produce acks=all, advance 1 s, now and then a crash and a restart of a
follower) until the run has the number of steps asked. Figures, from one process:

* **bytes per run after 100 steps** (``tracemalloc``: Python heap held by the Run — its
  cluster, checkpoints, block store, checker, event ring, command log — after a warm-up
  run has paid for imports and class creation, and a ``gc``); goal ≤ 2 MiB; and after
  1,000 steps, to show it does not grow with the run but for the command log itself;
* **step back to step 0 from step 1,000** (``Run.seek(0)``, wall clock, best of 5);
  goal ≤ 50 ms; and **one step back** from step 1,000 (``Run.seek(999)``), what the
  lesson's "Step back" button costs, and walking back 50 steps one click at a time;
* each for ``snapshot_every=1`` (what lesson 10 asks for) and the default (10);
* the **peer**, measured in the same run: the design this replaced — a full pickle of
  the cluster, its whole event history and every file after every step, thinned at 64
  (``FullSnapshotRun`` below) — and the ratio.

The data directory is on /dev/shm when there is one (its bytes are not Python heap).
"""
from __future__ import annotations

import gc
import pickle
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.cluster.cluster import Cluster  # noqa: E402
from engine.cluster.run import ReplicaReader, Run, make_config  # noqa: E402
from engine.cluster.scenarios import get_scenario  # noqa: E402

TMP = "/dev/shm" if Path("/dev/shm").is_dir() else None
MIB = 1024 * 1024
MEMORY_GOAL = 2 * MIB
BACK_GOAL_MS = 50.0
WALK = 50


class FullSnapshotRun(Run):
    """The peer: the snapshot design before issue 12 — after every ``snapshot_every`` steps
    a pickle of the whole cluster (event history included) plus every file, at most 64,
    every other older one dropped when there are more; events never dropped."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("keep_events", None)
        kwargs.setdefault("max_snapshots", 64)
        super().__init__(*args, **kwargs)

    def _take_snapshot(self) -> None:
        self._snapshots[self.position] = pickle.dumps(
            {"cluster": self.cluster.snapshot(), "checker": self.checker, "results": self.results[:]},
            protocol=pickle.HIGHEST_PROTOCOL)
        if len(self._snapshots) > self.max_snapshots:
            older = sorted(k for k in self._snapshots if 0 < k < self.position)
            for k in older[::2]:
                del self._snapshots[k]

    def _drop_snapshot(self, step: int) -> None:
        del self._snapshots[step]

    def _restore(self, step: int, disk_root: str, history=None) -> None:
        data = pickle.loads(self._snapshots[step])
        self.cluster = Cluster.restore(data["cluster"], disk_root)
        self.checker = data["checker"]
        self.checker.attach(self.cluster.events)
        self._reader = ReplicaReader(self.cluster.events)
        self.position = step


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


def make_run(root: str, cls: type = Run, **kwargs) -> Run:
    sc = get_scenario("kip101-data-loss")
    return cls(sc.seed, make_config(sc.config, truncation="epoch"), root, **kwargs)


def run_memory(steps: int, cls: type = Run, **kwargs) -> tuple[int, int, int, int]:
    """(bytes held by a Run after ``steps`` commands, events kept, events dropped, checkpoints)."""
    with tempfile.TemporaryDirectory(dir=TMP) as root:
        gc.collect()
        tracemalloc.start()
        base = tracemalloc.get_traced_memory()[0]
        run = make_run(f"{root}/r", cls, **kwargs)
        for c in workload(steps):
            run.apply(c)
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - base
        tracemalloc.stop()
        events = run.cluster.events
        kept = len(events.envelopes)
        out = held, kept, events.seq - kept, len(run.snapshot_steps())
        run.cluster.disk.close_all()
        return out


def seek_times(steps: int, rounds: int, cls: type = Run, **kwargs) -> tuple[float, float, float, float]:
    """(best ms of seek(0) from ``steps``, best ms of seek(steps - 1) from ``steps``, mean
    and worst ms of a step back when walking back ``WALK`` steps one at a time)."""
    with tempfile.TemporaryDirectory(dir=TMP) as root:
        run = make_run(f"{root}/r", cls, **kwargs)
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
        run.seek(steps)
        walk = []
        for k in range(steps - 1, steps - 1 - WALK, -1):
            t = time.perf_counter()
            run.seek(k)
            walk.append(time.perf_counter() - t)
        run.cluster.disk.close_all()
        return min(to_zero) * 1000, min(back_one) * 1000, sum(walk) / len(walk) * 1000, max(walk) * 1000


def main() -> None:
    quick = "--quick" in sys.argv
    long_steps = 200 if quick else 1000
    rounds = 2 if quick else 5
    run_memory(30)                       # warm-up: imports, classes, caches are not per run
    run_memory(30, FullSnapshotRun, snapshot_every=1)
    rows = [("lesson 10 (snapshot_every=1)", Run, {"snapshot_every": 1}),
            ("default (snapshot_every=10)", Run, {}),
            ("peer: full snapshot every step", FullSnapshotRun, {"snapshot_every": 1})]
    mem = {}
    for label, cls, kw in rows:
        held, kept, dropped, cps = run_memory(100, cls, **kw)
        mem[label] = held
        verdict = "met" if held <= MEMORY_GOAL else "NOT met"
        print(f"{label}: memory per run after 100 steps {held / MIB:.2f} MiB (goal <= 2 MiB: {verdict}); "
              f"events kept {kept}, dropped {dropped}; checkpoints {cps}")
    peer = mem[rows[2][0]]
    for label, _, _ in rows[:2]:
        print(f"  {label}: {peer / max(mem[label], 1):.1f}x less memory than the peer")
    for label, cls, kw in rows:
        held, kept, dropped, cps = run_memory(long_steps, cls, **kw)
        print(f"{label}: memory per run after {long_steps} steps {held / MIB:.2f} MiB; "
              f"events kept {kept}, dropped {dropped}; checkpoints {cps}")
    for label, cls, kw in rows:
        zero, one, walk_mean, walk_max = seek_times(long_steps, rounds, cls, **kw)
        verdict = "met" if zero <= BACK_GOAL_MS else "NOT met"
        print(f"{label}: step back to step 0 from step {long_steps} {zero:.1f} ms "
              f"(goal <= {BACK_GOAL_MS:.0f} ms: {verdict}); one step back {one:.1f} ms; "
              f"walking back {WALK} steps one at a time {walk_mean:.1f} ms a step (worst {walk_max:.1f} ms)")


if __name__ == "__main__":
    main()
