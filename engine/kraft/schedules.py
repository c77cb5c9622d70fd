"""Seeded random fault schedules over a :class:`Quorum` (the VOPR habit).

A schedule is plain data (a list of actions, each after a pause) drawn from its seed alone;
the quorum's own randomness (election timeouts, drops) comes from the same seed. Targets
such as "the leader" are resolved when the action runs, so one seed always replays the same
run. After the faults the schedule heals every link, restarts every stopped node and lets
the quorum settle: then there must be a leader, a last append must commit on every node,
and the checker's safety rules must hold throughout.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field

from .config import QuorumConfig
from .quorum import Quorum

__all__ = ["fault_schedule", "run_schedule", "schedule_config", "ScheduleResult", "OPS"]

# op -> weight
OPS = {"append": 20, "crash": 8, "crash_leader": 8, "restart": 14, "shutdown_leader": 5, "cut": 6,
       "cut_one_way": 6, "isolate_leader": 6, "partition": 4, "heal": 6, "heal_all": 5, "delay": 4, "drop": 4}
BACKGROUND_APPEND_MS = 150   # besides the schedule's bursts, the leader (if any) appends a record this often
PAUSES_MS = (10, 50, 200, 500, 1000, 1500, 2500, 4000)
SETTLE_MS = 40_000


def schedule_config(seed: int) -> QuorumConfig:
    """The quorum settings of schedule ``seed``: Kafka's defaults one seed in three; otherwise
    snapshots every few hundred bytes to a few KiB of committed batches, retention 0 (the log
    start moves to the newer snapshot as soon as there are two) with the cleaner every 0–5 s, and
    small fetch sizes, so snapshots are made, the log start moves and lagging replicas catch
    up with FetchSnapshot in several chunks, under the same faults."""
    if seed % 3 == 0:
        return QuorumConfig()
    rng = random.Random(f"kraft-schedule-config-{seed}")
    return QuorumConfig(max_bytes_between_snapshots=rng.choice((300, 1000, 4000)), retention_max_bytes=0,
                        log_cleaner_interval_ms=rng.choice((0, 1000, 5000)),
                        fetch_max_bytes=rng.choice((200, 1000, 8 * 1024 * 1024)))


def fault_schedule(seed: int, voters: int, steps: int, observers: tuple = ()) -> list[dict]:
    """The actions of schedule ``seed`` over voters 1..``voters`` (and ``observers``)."""
    rng = random.Random(f"kraft-schedule-{seed}")
    ids = list(range(1, voters + 1)) + list(observers)
    ops, weights = zip(*OPS.items())
    out = []
    for _ in range(steps):
        op = rng.choices(ops, weights)[0]
        a = {"after_ms": rng.choice(PAUSES_MS), "op": op}
        if op == "append":
            a["records"] = rng.randint(1, 3)
        elif op == "crash":
            a["node"] = rng.choice(ids)
            a["power_loss"] = rng.random() < 0.5
        elif op == "crash_leader":
            a["power_loss"] = rng.random() < 0.5
        elif op == "restart":
            a["pick"] = rng.random()
        elif op in ("cut", "cut_one_way", "heal", "delay", "drop"):
            a["a"], a["b"] = rng.sample(ids, 2)
            if op == "delay":
                a["delay_ms"] = rng.choice((5, 50, 300, 1500, 3000))
            if op == "drop":
                a["p"] = rng.choice((0.1, 0.3, 0.6))
        elif op == "isolate_leader":
            a["both"] = rng.random() < 0.7
        elif op == "partition":
            shuffled = rng.sample(ids, len(ids))
            k = rng.randint(1, len(ids) - 1)
            a["side"] = sorted(shuffled[:k])
        out.append(a)
    return out


@dataclass
class ScheduleResult:
    seed: int
    voters: int
    actions: list
    violations: list
    stalled: str | None
    appended: int = 0
    committed: int = 0
    elections: int = 0
    virtual_ms: int = 0
    digest: str = ""
    applied: list = field(default_factory=list)
    snapshots: int = 0            # snapshots frozen and checked against the committed log
    snapshots_loaded: int = 0     # replicas that caught up through FetchSnapshot

    @property
    def ok(self) -> bool:
        return not self.violations and self.stalled is None

    def replay_hint(self) -> str:
        return (f"seed {self.seed} ({self.voters} voters): violations {self.violations[:3]} stalled={self.stalled}\n"
                f"replay: engine.kraft.schedules.run_schedule({self.seed}, ROOT, voters={self.voters}, "
                f"steps={len(self.actions)})\nactions as run: {self.applied}")


def _apply(q: Quorum, a: dict, counter: list) -> str:
    op = a["op"]
    leader = q.leader()
    if op == "append":
        counter[0] += 1
        got = q.append([f"r{counter[0]}.{i}".encode() for i in range(a["records"])])
        return f"append on {got[0]}" if got else "append: no leader"
    if op == "crash":
        q.crash(a["node"], a["power_loss"])
        return f"crash {a['node']} power_loss={a['power_loss']}"
    if op == "crash_leader":
        if leader is None:
            return "crash_leader: none"
        q.crash(leader.id, a["power_loss"])
        return f"crash leader {leader.id} power_loss={a['power_loss']}"
    if op == "restart":
        dead = [i for i in sorted(q.nodes) if not q.nodes[i].alive]
        if not dead:
            return "restart: none down"
        nid = dead[int(a["pick"] * len(dead))]
        q.restart(nid)
        return f"restart {nid}"
    if op == "shutdown_leader":
        if leader is None:
            return "shutdown_leader: none"
        q.shutdown(leader.id)
        return f"shutdown leader {leader.id}"
    if op == "cut":
        q.cut(a["a"], a["b"], True)
    elif op == "cut_one_way":
        q.cut(a["a"], a["b"], False)
    elif op == "heal":
        q.heal(a["a"], a["b"], True)
    elif op == "heal_all":
        q.heal_all()
    elif op == "delay":
        q.network.set_delay(a["a"], a["b"], a["delay_ms"], True)
    elif op == "drop":
        q.network.set_drop_probability(a["a"], a["b"], a["p"], True)
    elif op == "partition":
        side = set(a["side"])
        for x in sorted(side):
            for y in sorted(q.nodes):
                if y not in side:
                    q.cut(x, y, True)
        return f"partition {sorted(side)} | {sorted(set(q.nodes) - side)}"
    elif op == "isolate_leader":
        if leader is None:
            return "isolate_leader: none"
        q.isolate(leader.id, a["both"])
        return f"isolate leader {leader.id} both={a['both']}"
    return f"{op} {a.get('a')}-{a.get('b')}"


def run_schedule(seed: int, root: str, *, voters: int | None = None, steps: int | None = None,
                 config: QuorumConfig | None = None, observers: int | None = None,
                 settle: bool = True) -> ScheduleResult:
    """Run schedule ``seed`` (3 or 5 voters, 12–30 actions, an observer one seed in three and
    :func:`schedule_config`, from the seed unless given)."""
    voters = voters or (3 if seed % 2 == 0 else 5)
    steps = steps or 12 + seed % 19
    observers = (1 if seed % 3 == 0 else 0) if observers is None else observers
    obs = tuple(range(100, 100 + observers))
    actions = fault_schedule(seed, voters, steps, obs)
    config = schedule_config(seed) if config is None else config
    q = Quorum(root, voters=range(1, voters + 1), observers=obs, seed=seed, config=config, keep_events=5000)
    q.start()
    q.run(2500)
    counter = [0]
    applied = []
    background = q.scheduler.schedule_periodic(BACKGROUND_APPEND_MS, _background_append, q, counter,
                                               name="background append")
    for a in actions:
        q.run(a["after_ms"])
        applied.append((q.now_ms(), _apply(q, a, counter)))
    q.scheduler.cancel(background)
    stalled = None
    if settle:
        q.run(100)   # a graceful shutdown in progress finishes first
        q.network.heal_all()
        for nid in sorted(q.nodes):
            q.restart(nid)
        stalled = _settle(q)
    q.checker.check_logs()
    return ScheduleResult(seed, voters, actions, list(q.checker.violations), stalled, counter[0],
                          len(q.checker.committed), q.checker.elections, q.now_ms(), q.events.digest(), applied,
                          q.checker.snapshots_checked, q.checker.snapshots_loaded)


def _background_append(q: Quorum, counter: list) -> None:
    if q.leader() is not None:
        counter[0] += 1
        q.append([f"b{counter[0]}".encode()])


def _settle(q: Quorum) -> str | None:
    """Liveness after healing: a leader that has committed in its epoch, then one more
    append committed on every voter. An append that went to a deposed leader (not yet
    resigned by check quorum) is simply lost with its epoch, so it is retried."""
    deadline = q.now_ms() + SETTLE_MS

    def settled_leader():
        leader = q.leader()
        top = max(q.nodes[v].epoch for v in q.voters if q.nodes[v].alive)
        if leader is not None and leader.epoch == top and leader.high_watermark > leader.epoch_start_offset:
            return leader
        return None

    while q.now_ms() < deadline:
        if not q.run_until(lambda: settled_leader() is not None, deadline - q.now_ms(), step_ms=50):
            break
        leader = settled_leader()
        epoch = leader.epoch
        _, _, last = q.append([b"final"])

        def done() -> bool:
            # Every voter and every observer (a broker, next session) has it below its HW.
            return (all(n.alive and n.high_watermark > last for n in q.nodes.values())
                    or not leader.alive or leader.state != "leader" or leader.epoch != epoch)
        q.run_until(done, max(0, deadline - q.now_ms()), step_ms=50)
        if leader.alive and leader.state == "leader" and leader.epoch == epoch and done():
            return None
    return f"not settled {SETTLE_MS} ms after healing: {q.describe()}"
