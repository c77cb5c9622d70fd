"""Replicated-cluster throughput beside a single log and beside librdkafka's mock cluster.

    python bench/bench_cluster.py [--quick]

Workload: a topic with one partition, RF 3 on 3 brokers, ``min.insync.replicas=2``; the client
sends ``REQUESTS`` acks=all batches of ``BATCH`` 100-byte records, the virtual clock moving on
2 ms after each; a round ends when every record is acknowledged (so it includes the followers'
fetches, the HW moves and the produce purgatory). Peers, in the same rounds:

* **single log** — the same batches appended to one engine ``Log`` (``append_as_leader``,
  ``hw_follows_leo``, clock +2 ms each): the storage engine's ceiling. Figure: RF 3 records/s
  as a percentage of it; goal >= 50 %.
* **librdkafka** — the same records through confluent-kafka's producer (acks=all, batches of
  ``BATCH``: ``batch.num.messages``) against librdkafka's mock cluster
  (``test.mock.num.brokers=3``, so the partition has 3 replicas), until every delivery report
  is in. Printed as a ratio (no goal); skipped with a message if confluent-kafka is missing.

* **storage floor** (a ceiling for the figure, not a peer) — per request, only what no replicated
  acks=all request can avoid: the leader's append (records built and encoded), two follower
  fetches' reads of that batch, the two follower appends, and the cluster events one steady
  request emits (recorded from a real run in the same process and emitted again as they are, so
  their construction is not even counted). Printed as the best RF 3 figure this event stream
  allows: single log ÷ floor.

Also, without a peer: records/s through a :class:`Run` (command parsing, checker after every
command) and seeded fault schedules per second (RF 3, acks=all, min ISR 2, epoch truncation).

Method (``bench/paired.py``): contenders take turns within each round, order rotating; each
figure is the median over rounds of the per-round ratio, with min and max. Time is the
process's CPU time, which for librdkafka includes its own threads (the mock brokers too).
"""
from __future__ import annotations

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
GOAL = 50.0

try:
    from confluent_kafka import Producer
except ImportError:  # pragma: no cover - reported in the output
    Producer = None


def rf3_seconds(requests: int) -> float:
    """Seconds for ``requests`` acks=all batches through a fresh 3-broker cluster (setup untimed)."""
    with tempfile.TemporaryDirectory(dir=TMP) as root:
        cluster = Cluster(Disk(root), ClusterConfig(brokers=3), seed=0)
        cluster.create_topic("t", 1, 3, {"min.insync.replicas": 2}, assignment=[[0, 1, 2]])
        cluster.advance(1000)
        values = [VALUE] * BATCH
        start = cpu_clock()
        for _ in range(requests):
            cluster.produce("t", 0, values, acks=-1)
            cluster.advance(2)
        while len(cluster.produce_results) < requests:
            cluster.advance(10)
        elapsed = cpu_clock() - start
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
        start = cpu_clock()
        for _ in range(requests):
            run.apply({"cmd": "produce", "topic": "t", "values": values})
            run.apply({"cmd": "advance", "ms": 2})
        while len(run.cluster.produce_results) < requests:
            run.cluster.advance(10)
        return cpu_clock() - start


def single_log_seconds(requests: int) -> float:
    with tempfile.TemporaryDirectory(dir=TMP) as root:
        virtual = VirtualClock()
        scheduler = Scheduler(virtual)
        log = Log(Disk(root), "t-0", "t", 0, LogConfig(), scheduler, EventLog(virtual), hw_follows_leo=True)
        values = [VALUE] * BATCH
        start = cpu_clock()
        for _ in range(requests):
            log.append_as_leader([SimpleRecord(v) for v in values], leader_epoch=0)
            scheduler.advance(2)
        elapsed = cpu_clock() - start
        log.close()
        return elapsed


def _steady_request_events(requests: int = 40) -> list:
    """The events a steady acks=all request emits besides its logs' own storage events (which
    the floor's three appends emit themselves), recorded from a real run: one list per request."""
    storage = {"batch_appended", "index_entry_written"}
    with tempfile.TemporaryDirectory(dir=TMP) as root:
        cluster = Cluster(Disk(root), ClusterConfig(brokers=3), seed=0)
        cluster.create_topic("t", 1, 3, {"min.insync.replicas": 2}, assignment=[[0, 1, 2]])
        cluster.advance(1000)
        for _ in range(10):                      # past the ISR and epoch start-up
            cluster.produce("t", 0, [VALUE] * BATCH, acks=-1)
            cluster.advance(2)
        cluster.advance(20)
        seq = cluster.events.seq
        for _ in range(requests):
            cluster.produce("t", 0, [VALUE] * BATCH, acks=-1)
            cluster.advance(2)
        cluster.advance(20)
        events = [e.event for e in cluster.events.since(seq) if e.event.kind not in storage]
    per = len(events) / requests
    return [events[round(i * per):round((i + 1) * per)] for i in range(requests)]


STEADY_EVENTS: list = []


def floor_seconds(requests: int) -> float:
    """The storage floor (see the module docstring): three logs on one EventLog, the leader's
    batch read twice and appended to both followers, a steady request's other events emitted."""
    if not STEADY_EVENTS:
        STEADY_EVENTS.extend(_steady_request_events())
    with tempfile.TemporaryDirectory(dir=TMP) as root:
        virtual = VirtualClock()
        scheduler = Scheduler(virtual)
        events = EventLog(virtual)
        logs = [Log(Disk(f"{root}/{b}"), "t-0", "t", 0, LogConfig(), scheduler, events, hw_follows_leo=(b == 0))
                for b in range(3)]
        leader, followers = logs[0], logs[1:]
        values = [VALUE] * BATCH
        steady = STEADY_EVENTS
        emit = events.emit
        start = cpu_clock()
        for i in range(requests):
            info = leader.append_as_leader([SimpleRecord(v) for v in values], leader_epoch=0)
            for f in followers:
                f.append_as_follower(leader.read(info.first_offset, 1 << 20, trace=False).records)
            for ev in steady[i % len(steady)]:
                emit(ev)
            scheduler.advance(2)
        elapsed = cpu_clock() - start
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
        start = cpu_clock()
        for _ in range(requests):
            for _ in range(BATCH):
                produce("t", VALUE, partition=0, on_delivery=report)
            poll(0)
        self.producer.flush(60)
        elapsed = cpu_clock() - start
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
    contenders = {"rf3": rf3_seconds, "single": single_log_seconds, "floor": floor_seconds, "run": run_seconds}
    if peer is not None:
        contenders["librdkafka"] = peer.seconds
    names = list(contenders)
    times: dict[str, list[float]] = {n: [] for n in names}
    turn = 0
    for _ in range(rounds):
        spent = dict.fromkeys(names, 0.0)
        for _ in range(slices):           # turns alternate within a round, the order rotating
            k = turn % len(names)
            turn += 1
            for n in names[k:] + names[:k]:
                spent[n] += contenders[n](requests)
        for n in names:
            times[n].append(spent[n] / slices)
    records = requests * BATCH
    for n in names:
        print(f"  {n}: {statistics.median([records / t for t in times[n]]):,.0f} records/s (median)")
    figures = [print_figure(figure("RF 3 acks=all produce, % of a single log", [100 * s / t for s, t in
                                                                                 zip(times["single"], times["rf3"])],
                                   "%", f">= {GOAL:.0f} %", at_least=GOAL))]
    print(f"  a steady request emits {statistics.mean(len(e) for e in STEADY_EVENTS) + 6:.1f} events "
          f"(its three appends' storage events included)")
    print_figure(figure("storage floor: the best RF 3 figure this event stream allows (single ÷ floor)",
                        [100 * s / f for s, f in zip(times["single"], times["floor"])], "%", "(a ceiling, no goal)"))
    print_figure(figure("RF 3 ÷ its storage floor (the simulation around the storage work)",
                        [100 * f / t for f, t in zip(times["floor"], times["rf3"])], "%", "(no goal)"))
    if peer is not None:
        print_figure(figure(f"RF 3 acks=all produce, ours / librdkafka mock cluster (replicas {peer.replicas})",
                            [p / t for p, t in zip(times["librdkafka"], times["rf3"])], "x", "(no goal)"))
    print_figure(figure("through a Run with the checker, % of the bare cluster",
                        [100 * c / t for c, t in zip(times["rf3"], times["run"])], "%", "(no goal)"))
    schedules = 20 if quick else 60
    rate, bad = fault_schedules_per_second(schedules)
    print(f"  fault schedules (RF 3, acks=all, min ISR 2, epoch truncation): {rate:.1f} schedules/s over {schedules}, "
          f"{bad} with findings")
    return figures


if __name__ == "__main__":
    main(sys.argv[1:])
