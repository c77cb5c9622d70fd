"""Replicated-cluster throughput beside a single log and beside librdkafka's mock cluster.

    python bench/bench_cluster.py [--quick]

Workload: a topic with one partition, RF 3 on 3 brokers, ``min.insync.replicas=2``; the client
sends ``REQUESTS`` acks=all batches of ``BATCH`` 100-byte records, the virtual clock moving on
2 ms after each; a round ends when every record is acknowledged (so it includes the followers'
fetches, the HW moves and the produce purgatory). Peers, in the same rounds:

* **single log** — the same batches appended to one engine ``Log`` (``append_as_leader``,
  ``hw_follows_leo``, clock +2 ms each): the storage engine's ceiling. Figure: RF 3 records/s
  as a percentage of it; goal >= 25 %.
* **librdkafka** — the same records through confluent-kafka's producer (acks=all, batches of
  ``BATCH``: ``batch.num.messages``) against librdkafka's mock cluster
  (``test.mock.num.brokers=3``, so the partition has 3 replicas), until every delivery report
  is in. Printed as a ratio (goal >= 0.5x); skipped with a message if confluent-kafka is missing.

* **storage floor** (a ceiling for the figure, not a peer) — per request, only the storage work
  no replicated acks=all request can avoid: the leader's append (records built and encoded), two
  follower fetches' reads of that batch and the two follower appends, with their own storage
  events; nothing of the cluster's (an earlier version re-emitted a steady request's ~19 cluster
  events here, which counted them as storage). Printed as single log ÷ floor.
* **100 partitions** — the same requests spread round-robin over a 100-partition topic (RF 3, all
  led by broker 0), as a ratio to the one-partition cluster (goal >= 0.85x): what the partitions
  that have no work cost.

Also, without a peer: records/s through a :class:`Run` (command parsing, checker after every
command), seeded fault schedules per second (RF 3, acks=all, min ISR 2, epoch truncation), and
the durability lab's runs per second in process (``run_partition``, what ``lab sweep
--no-spark`` runs) on a fixed grid (preset ``acks``, 10 runs per cell).

Garbage: every turn starts after ``gc.collect()``, so no turn pays for another's garbage; the
collector stays on during a turn (it is part of what a request costs) and the time it takes inside
the timed stretch is printed apart, per contender (``gc.callbacks``; a collection during a turn's
untimed setup or teardown is not counted, as its time is not in the turn's CPU either).

Method (``bench/paired.py``): contenders take turns within each round, order rotating; each
figure is the median over rounds of the per-round ratio, with min and max. Time is the
process's CPU time, which for librdkafka includes its own threads (the mock brokers too).
"""
from __future__ import annotations

import gc
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from paired import clock as cpu_clock, figure, print_figure  # noqa: E402

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
GOAL = 25.0

try:
    from confluent_kafka import Producer
except ImportError:  # pragma: no cover - reported in the output
    Producer = None


def rf3_seconds(requests: int, partitions: int = 1, sessions: bool = False) -> float:
    """Seconds for ``requests`` acks=all batches through a fresh 3-broker cluster (setup untimed),
    round-robin over ``partitions`` partitions all led by broker 0; ``sessions``: followers fetch
    in KIP-227 sessions (``replica.fetch.sessions``)."""
    with tempfile.TemporaryDirectory(dir=TMP) as root:
        cluster = Cluster(Disk(root), ClusterConfig(brokers=3, replica_fetch_sessions=sessions), seed=0)
        cluster.create_topic("t", partitions, 3, {"min.insync.replicas": 2}, assignment=[[0, 1, 2]] * partitions)
        cluster.advance(1000)
        values = [VALUE] * BATCH
        start = _begin()
        for i in range(requests):
            cluster.produce("t", i % partitions, values, acks=-1)
            cluster.advance(2)
        while len(cluster.produce_results) < requests:
            cluster.advance(10)
        elapsed = _end(start)
        assert all(r.status == "ok" for r in cluster.produce_results.values())
        return elapsed


def run_seconds(requests: int) -> float:
    """The same through a :class:`Run`: JSON commands, snapshots off, the checker after each command."""
    with tempfile.TemporaryDirectory(dir=TMP) as root:
        run = Run(0, ClusterConfig(brokers=3), root, snapshot_every=10**9)
        run.apply({"cmd": "create_topic", "topic": "t", "partitions": 1, "assignment": [[0, 1, 2]],
                   "config": {"min.insync.replicas": 2}})
        run.apply({"cmd": "advance", "ms": 1000})
        values = [VALUE.decode()] * BATCH
        start = _begin()
        for _ in range(requests):
            run.apply({"cmd": "produce", "topic": "t", "values": values})
            run.apply({"cmd": "advance", "ms": 2})
        while len(run.cluster.produce_results) < requests:
            run.cluster.advance(10)
        return _end(start)


def single_log_seconds(requests: int) -> float:
    with tempfile.TemporaryDirectory(dir=TMP) as root:
        virtual = VirtualClock()
        scheduler = Scheduler(virtual)
        log = Log(Disk(root), "t-0", "t", 0, LogConfig(), scheduler, EventLog(virtual), hw_follows_leo=True)
        values = [VALUE] * BATCH
        start = _begin()
        for _ in range(requests):
            log.append_as_leader([SimpleRecord(v) for v in values], leader_epoch=0)
            scheduler.advance(2)
        elapsed = _end(start)
        log.close()
        return elapsed


def rf3_100_seconds(requests: int) -> float:
    return rf3_seconds(requests, partitions=100)


def rf3_sessions_seconds(requests: int) -> float:
    return rf3_seconds(requests, sessions=True)


def rf3_100_sessions_seconds(requests: int) -> float:
    return rf3_seconds(requests, partitions=100, sessions=True)


def floor_seconds(requests: int) -> float:
    """The storage floor (see the module docstring): three logs on one EventLog, the leader's
    batch read twice and appended to both followers; no cluster events."""
    with tempfile.TemporaryDirectory(dir=TMP) as root:
        virtual = VirtualClock()
        scheduler = Scheduler(virtual)
        events = EventLog(virtual)
        logs = [Log(Disk(f"{root}/{b}"), "t-0", "t", 0, LogConfig(), scheduler, events, hw_follows_leo=(b == 0))
                for b in range(3)]
        leader, followers = logs[0], logs[1:]
        values = [VALUE] * BATCH
        start = _begin()
        for i in range(requests):
            info = leader.append_as_leader([SimpleRecord(v) for v in values], leader_epoch=0)
            for f in followers:
                f.append_as_follower(leader.read(info.first_offset, 1 << 20, trace=False).records)
            scheduler.advance(2)
        elapsed = _end(start)
        for log in logs:
            log.close()
        return elapsed


class Librdkafka:
    """confluent-kafka's producer on librdkafka's in-process mock cluster of 3 brokers."""

    def __init__(self) -> None:
        self.producer = Producer({"test.mock.num.brokers": 3, "acks": "all", "linger.ms": 5,
                                  "batch.num.messages": BATCH, "log_level": 3,
                                  "queue.buffering.max.messages": 10_000_000})
        self.delivered = 0
        self.producer.produce("t", VALUE, partition=0, on_delivery=self._report)   # metadata, topic
        self.producer.flush(30)
        meta = self.producer.list_topics("t", timeout=10).topics["t"].partitions[0]
        self.replicas = list(meta.replicas)

    def _report(self, err, msg) -> None:
        if err is not None:
            raise RuntimeError(f"librdkafka delivery failed: {err}")
        self.delivered += 1

    def seconds(self, requests: int) -> float:
        produce, poll, report = self.producer.produce, self.producer.poll, self._report
        self.delivered = 0
        start = _begin()
        for _ in range(requests):
            for _ in range(BATCH):
                produce("t", VALUE, partition=0, on_delivery=report)
            poll(0)
        self.producer.flush(60)
        elapsed = _end(start)
        assert self.delivered == requests * BATCH, (self.delivered, requests * BATCH)
        return elapsed


def fault_schedules_per_second(n: int) -> tuple[float, int]:
    bad = 0
    start = cpu_clock()
    with tempfile.TemporaryDirectory(dir=TMP) as root:
        for seed in range(n):
            run = run_schedule(seed, f"{root}/{seed}", truncation="epoch")
            bad += bool(run.checker.findings)
    return n / (cpu_clock() - start), bad


def lab_specs(runs: int = 10) -> list[tuple]:
    from engine.lab.grid import make_grid
    grid = make_grid("acks", runs=runs, seed=0)
    return [(tuple(cell), i, grid.seed + i) for cell in grid.cells for i in range(grid.runs)]


def lab_runs_per_second(rounds: int) -> tuple[list[float], str]:
    """Runs per second of the lab's in-process path (what ``lab sweep --no-spark`` calls) on a
    fixed grid, and a digest of every row's event digest (the same grid must give the same rows)."""
    import hashlib
    from engine.lab.runs import ROW_FIELDS, run_partition
    specs = lab_specs()
    at = [name for name, _ in ROW_FIELDS].index("event_digest")
    rates, digests = [], set()
    for _ in range(rounds):
        gc.collect()
        start = cpu_clock()
        rows = list(run_partition(specs))
        rates.append(len(specs) / (cpu_clock() - start))
        digests.add(hashlib.sha256("".join(r[at] for r in rows).encode()).hexdigest()[:16])
    assert len(digests) == 1, digests
    return rates, digests.pop()


class GcTimer:
    """CPU seconds the collector spends inside timed stretches (between :func:`_begin` and
    :func:`_end`), read by whoever is timing a turn. A collection during a turn's untimed setup
    or teardown (building 300 replicas for the 100-partition cluster, deleting its files) is
    not counted: its time is not in the turn's CPU either."""

    def __init__(self) -> None:
        self.spent = 0.0
        self.active = False
        self._start = 0.0
        gc.callbacks.append(self._cb)

    def _cb(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._start = cpu_clock()
        elif self.active:
            self.spent += cpu_clock() - self._start


GC_TIMER = GcTimer()


def _begin() -> float:
    """Start a timed stretch: CPU seconds now; garbage collections count from here."""
    GC_TIMER.active = True
    return cpu_clock()


def _end(start: float) -> float:
    """CPU seconds since ``start``; garbage collections stop counting."""
    elapsed = cpu_clock() - start
    GC_TIMER.active = False
    return elapsed


def main(argv: list[str]) -> list:
    quick = "--quick" in argv
    rounds, slices = (5, 2) if quick else (9, 4)
    requests = 100 if quick else 200
    peer = None
    if Producer is None:
        print("[cluster] confluent-kafka is not importable: the librdkafka mock-cluster peer is skipped "
              "(pip install -r requirements-dev.txt)")
    else:
        peer = Librdkafka()
    print(f"[cluster] RF 3, acks=all, min ISR 2: {requests} requests of {BATCH} x {len(VALUE)} B per turn, "
          f"{slices} turns per round, {rounds} paired rounds")
    contenders = {"rf3": rf3_seconds, "single": single_log_seconds, "floor": floor_seconds, "run": run_seconds,
                  "rf3x100": rf3_100_seconds, "rf3s": rf3_sessions_seconds, "rf3x100s": rf3_100_sessions_seconds}
    if peer is not None:
        contenders["librdkafka"] = peer.seconds
    names = list(contenders)
    times: dict[str, list[float]] = {n: [] for n in names}
    gc_spent = dict.fromkeys(names, 0.0)
    total_spent = dict.fromkeys(names, 0.0)
    gc_timer = GC_TIMER
    turn = 0
    for _ in range(rounds):
        spent = dict.fromkeys(names, 0.0)
        for _ in range(slices):           # turns alternate within a round, the order rotating
            k = turn % len(names)
            turn += 1
            for n in names[k:] + names[:k]:
                gc.collect()
                gc_timer.spent = 0.0
                spent[n] += contenders[n](requests)
                gc_spent[n] += gc_timer.spent
        for n in names:
            times[n].append(spent[n] / slices)
            total_spent[n] += spent[n]
    records = requests * BATCH
    for n in names:
        print(f"  {n}: {statistics.median([records / t for t in times[n]]):,.0f} records/s (median), "
              f"GC {100 * gc_spent[n] / total_spent[n]:.1f} % of its CPU")
    figures = [print_figure(figure("RF 3 acks=all produce, % of a single log", [100 * s / t for s, t in
                                                                                 zip(times["single"], times["rf3"])],
                                   "%", f">= {GOAL:.0f} %", at_least=GOAL))]
    print_figure(figure("storage floor: three appends and two reads, no cluster events (single ÷ floor)",
                        [100 * s / f for s, f in zip(times["single"], times["floor"])], "%", "(a ceiling, no goal)"))
    print_figure(figure("RF 3 ÷ its storage floor (the simulation around the storage work)",
                        [100 * f / t for f, t in zip(times["floor"], times["rf3"])], "%", "(no goal)"))
    if peer is not None:
        figures.append(print_figure(figure(f"RF 3 acks=all produce, ours / librdkafka mock cluster (replicas {peer.replicas})",
                            [p / t for p, t in zip(times["librdkafka"], times["rf3"])], "x", ">= 0.5x", at_least=0.5)))
    figures.append(print_figure(figure("100 partitions ÷ 1 partition, RF 3 acks=all produce throughput",
                                       [o / h for o, h in zip(times["rf3"], times["rf3x100"])], "x", ">= 0.85x",
                                       at_least=0.85)))
    print_figure(figure("with follower fetch sessions (replica.fetch.sessions): RF 3 acks=all, % of a single log",
                        [100 * s / t for s, t in zip(times["single"], times["rf3s"])], "%", f">= {GOAL:.0f} %"))
    figures.append(print_figure(figure("with follower fetch sessions: 100 partitions ÷ 1 partition",
                                       [o / h for o, h in zip(times["rf3s"], times["rf3x100s"])], "x", ">= 0.85x",
                                       at_least=0.85)))
    print_figure(figure("through a Run with the checker, % of the bare cluster",
                        [100 * c / t for c, t in zip(times["rf3"], times["run"])], "%", "(no goal)"))
    schedules = 20 if quick else 60
    rate, bad = fault_schedules_per_second(schedules)
    print(f"  fault schedules (RF 3, acks=all, min ISR 2, epoch truncation): {rate:.1f} schedules/s over {schedules}, "
          f"{bad} with findings")
    rates, rows = lab_runs_per_second(3 if quick else 5)
    print_figure(figure(f"lab runs/s in process (run_partition, preset acks, {len(lab_specs())} runs; rows {rows})",
                        rates, "runs/s", "(no goal; 2x the code before issue 23)"))
    import os
    print(f"  load average {os.getloadavg()[0]:.2f}")
    return figures


if __name__ == "__main__":
    main(sys.argv[1:])
