"""Seeded fault schedules for a KRaft cluster: :func:`engine.cluster.scenarios.fault_schedule`'s
broker and network faults, plus faults of the controller quorum.

- **Combined mode** (even seeds): brokers 0, 1 and 2 are the voters, so every broker crash in
  the base schedule may take the active controller (two of them down = no quorum, metadata
  frozen); added here: isolating a voter (a partitioned controller must resign by check
  quorum), cutting links between voters, long waits for elections.
- **Dedicated mode** (odd seeds): controller nodes 100, 101 and 102 beside the brokers; added:
  crashes (with and without power loss) and clean shutdowns of controllers, a majority of
  them down at once, restarts, isolating a controller, cutting a controller from a broker or
  from another controller.

The tail heals everything, restarts every stopped process and waits long enough for an
election, registrations and the brokers catching up, so the final check sees a quiet cluster.
Run with :func:`run_kraft_schedule`, which also runs Raft's checks at the end
(``run.raft_violations``).
"""
from __future__ import annotations

import random
from typing import Any

from engine.errors import KafkaError

from .kraft_controller import DEDICATED_BASE_ID
from .scenarios import fault_schedule, schedule_config

__all__ = ["kraft_fault_schedule", "kraft_schedule_config", "run_kraft_schedule", "mode_of"]

SETTLE_MS = 8000


def mode_of(seed: int) -> str:
    return "combined" if seed % 2 == 0 else "dedicated"


def kraft_schedule_config(seed: int, *, truncation: str = "epoch", brokers: int = 3,
                          mode: str | None = None) -> dict[str, Any]:
    mode = mode or mode_of(seed)
    cfg = schedule_config(seed, truncation=truncation, brokers=brokers)
    cfg["kraft"] = True
    if mode == "dedicated":
        cfg["controllers"] = 3
    return cfg


def kraft_fault_schedule(seed: int, *, acks: int | str = "all", steps: int = 8, brokers: int = 3,
                         mode: str | None = None, **kwargs: Any) -> list[dict]:
    mode = mode or mode_of(seed)
    base = fault_schedule(seed, acks=acks, steps=steps, brokers=brokers, **kwargs)
    tail_at = max(i for i, c in enumerate(base) if c["cmd"] == "heal_all")
    body, tail = base[:tail_at], base[tail_at:]
    rng = random.Random(seed * 7919 + 17)
    voters = [DEDICATED_BASE_ID + i for i in range(3)] if mode == "dedicated" else list(range(min(3, brokers)))
    nodes = list(range(brokers))
    down: set = set()
    out: list = []
    # Between the topic's creation (the first two commands) and the tail.
    extra = {rng.randrange(2, max(3, len(body) + 1)) for _ in range(max(2, steps // 3))}
    for i, c in enumerate(body):
        if i in extra:
            out.extend(_controller_fault(rng, mode, voters, nodes, down))
        out.append(c)
    if len(body) in extra:
        out.extend(_controller_fault(rng, mode, voters, nodes, down))
    out.append(tail[0])                     # heal_all
    out.extend({"cmd": "restart", "broker": v} for v in sorted(down))
    out.extend(tail[1:-1])
    out.append({"cmd": "advance", "ms": SETTLE_MS})
    return out


def _controller_fault(rng: random.Random, mode: str, voters: list, nodes: list, down: set) -> list[dict]:
    wait = {"cmd": "advance", "ms": rng.choice([300, 1000, 2500, 4000])}
    kinds = ["isolate", "cut_voters", "cut_broker", "wait"]
    if mode == "dedicated":
        kinds += ["crash", "crash", "shutdown", "majority_down", "restart", "restart"]
    kind = rng.choice(kinds)
    up = [v for v in voters if v not in down]
    if kind == "isolate":
        v = rng.choice(voters)
        return [{"cmd": "isolate", "broker": v}, wait, {"cmd": "heal_all"}]
    if kind == "cut_voters":
        a, b = rng.sample(voters, 2)
        return [{"cmd": "cut_link", "a": a, "b": b, "both": rng.random() < 0.6}, wait]
    if kind == "cut_broker":
        v = rng.choice(voters)
        b = rng.choice([n for n in nodes if n != v])
        return [{"cmd": "cut_link", "a": v, "b": b, "both": rng.random() < 0.6}, wait]
    if kind == "wait":
        return [wait]
    if kind in ("crash", "shutdown") and up:
        v = rng.choice(up)
        down.add(v)
        return [{"cmd": kind, "broker": v}, wait]
    if kind == "majority_down" and len(up) >= 2:
        a, b = rng.sample(up, 2)
        down.update((a, b))
        return [{"cmd": "crash", "broker": a}, {"cmd": "crash", "broker": b}, wait]
    if kind == "restart" and down:
        v = rng.choice(sorted(down))
        down.discard(v)
        return [{"cmd": "restart", "broker": v}, wait]
    return [wait]


def run_kraft_schedule(seed: int, disk_root: str, *, truncation: str = "epoch", acks: int | str = "all",
                       brokers: int = 3, steps: int = 8, mode: str | None = None,
                       keep_events: int | None = 1000) -> Any:
    """Play :func:`kraft_fault_schedule` (refusals skipped, as :func:`run_schedule` does),
    run the final data check, then Raft's whole-log checks; ``run.raft_violations`` lists
    what the quorum's checker found."""
    from .run import Run, make_config

    config = kraft_schedule_config(seed, truncation=truncation, brokers=brokers, mode=mode)
    run = Run(seed, make_config(config), disk_root, snapshot_every=10**9, keep_events=keep_events)
    run.schedule_config = config
    run.refusals = []
    for i, c in enumerate(kraft_fault_schedule(seed, acks=acks, steps=steps, brokers=brokers, mode=mode)):
        try:
            run.apply(c)
        except KafkaError as exc:
            if getattr(exc, "rolled_back", False):
                raise
            run.refusals.append((i, c["cmd"], exc.name))
    run.finish()
    checker = run.cluster.controller.quorum.checker
    checker.check_logs()
    checker.check_applied()
    run.raft_violations = list(checker.violations)
    return run


def time_controller_failover(seed: int, root: str, mode: str = "dedicated", brokers: int = 3,
                             limit_ms: int = 60_000) -> dict[str, Any]:
    """Virtual time from the active controller's crash to a new active controller, at Kafka's
    default ``controller.quorum.*`` and broker timeouts (each link with a seeded 0-9 ms extra
    delay per direction, so followers do not time out in lockstep). Also: until every broker
    fetches from the new leader, and until a metadata change (a new topic) is applied by its
    replicas. A topic with traffic runs before the crash for a seed-chosen while."""
    from .cluster import Cluster
    from .config import ClusterConfig
    from engine.disk import Disk

    cfg = {"brokers": brokers, "kraft": True}
    if mode == "dedicated":
        cfg["controllers"] = 3
    c = Cluster(Disk(root, os_fsync=False), ClusterConfig.from_mapping(cfg), seed)
    rng = random.Random(f"controller-failover-{seed}")
    nodes = sorted(c.brokers) + sorted(c.controller_nodes())
    for a in nodes:
        for b in nodes:
            if a != b:
                c.network.set_delay(a, b, rng.randrange(10), both=False)
    c.create_topic("t", 1, min(3, brokers))
    end = c.now_ms() + rng.randrange(1000, 6000)
    while c.now_ms() < end:
        c.produce("t", 0, [b"x"], acks=-1)
        c.advance(rng.randrange(20, 300))
    c.advance(rng.randrange(0, 3000))
    old = c.controller.active
    old_epoch = c.controller.epoch
    c.crash(old, power_loss=False)          # no clean shutdown: no EndQuorumEpoch
    t0 = c.now_ms()
    while c.controller.active is None and c.now_ms() < t0 + limit_ms:
        c.advance(5)
    elected = c.now_ms() - t0
    new = c.controller.active
    live = [b for b in c.brokers if c.brokers[b].alive]
    while any(c.brokers[b].raft.leader_id != new for b in live) and c.now_ms() < t0 + limit_ms:
        c.advance(5)
    followed = c.now_ms() - t0
    c.create_topic("u", 1, 1, assignment=[[live[0]]])
    while ("u", 0) not in c.brokers[live[0]].partitions and c.now_ms() < t0 + limit_ms:
        c.advance(5)
    applied = c.now_ms() - t0
    return {"seed": seed, "mode": mode, "old": old, "new": new, "old_epoch": old_epoch,
            "new_epoch": c.controller.epoch, "elected_ms": elected, "brokers_follow_ms": followed,
            "new_topic_applied_ms": applied}
