"""Fault schedules that aim at the windows each durability setting is about.

Uniform random schedules (``engine/cluster/scenarios.py: fault_schedule``) rarely open the
narrow windows the lessons talk about: a leader that acknowledges and dies before its
follower's next fetch (KIP-101), two replicas losing power together, a leader left alone
in the ISR, a broker cut off from the controller. :func:`targeted_schedule` draws one of
those windows from the seed, with seeded timings around it (so some runs hit the window
and some miss it, as in life), and lets virtual time pass between faults: outages last
seconds, so the time a client cannot write is real.

:func:`steady_producer` spreads a client's writes over a schedule's quiet stretches (one
record every :data:`PRODUCE_EVERY_MS`), so every schedule keeps writing through its
faults and the unavailable time the client sees can be measured from its own requests.

Every schedule starts with ``create_topic`` (RF 3 on brokers 0-2, topic ``t``) and ends
with a settling tail (heal, restart and resume everything, produce, wait) so the final
check sees a quiet cluster. Broker disks fsync every append (``flush.messages=1``), so a
crash loses nothing from disk and a loss is replication's doing; the one exception is the
``alone`` window, where the leader left alone in the ISR stops flushing (Kafka's default is
to leave flushing to the OS) and then loses power.
"""
from __future__ import annotations

import random
from typing import Any

__all__ = ["WINDOWS", "targeted_schedule", "steady_producer", "window_of", "PRODUCE_EVERY_MS", "LONG_MAX"]

LONG_MAX = 2**63 - 1
PRODUCE_EVERY_MS = 500
TOPIC = "t"
BROKERS = (0, 1, 2)
CONTROLLER = 0             # FAULT_CONFIG's initial.controller

# The windows, each with what it is about (shown in docs and summary.json).
WINDOWS: dict[str, str] = {
    "kip101": "the leader acknowledges, a follower restarts before it learns the new high watermark, "
              "and the leader dies before that follower's next fetch (KIP-101)",
    "leader-dies": "the leader dies a few milliseconds after acknowledging, before its followers fetch again",
    "power-pair": "the third replica falls behind; the leader and the other follower lose power together "
                  "and come back one by one",
    "alone": "both followers stop fetching, the ISR shrinks to the leader alone, which then loses power "
             "with writes it has not flushed",
    "controller-cut": "the leader is cut off from the controller and the other brokers but not from the "
                      "client (a zombie leader)",
}


class _Schedule:
    """A command list under construction with the seed's rng and the client's record count."""

    def __init__(self, rng: random.Random, acks: Any) -> None:
        self.rng, self.acks, self.cmds, self.n = rng, acks, [], 0
        self.down: set = set()
        self.paused: set = set()

    def add(self, cmd: str, **fields: Any) -> None:
        self.cmds.append({"cmd": cmd, **fields})
        b = fields.get("broker")
        if cmd in ("crash", "shutdown"):
            self.down.add(b)
        elif cmd == "restart":
            self.down.discard(b)
        elif cmd == "pause_follower":
            self.paused.add(b)
        elif cmd == "resume_follower":
            self.paused.discard(b)

    def produce(self, k: int = 1) -> None:
        for _ in range(k):
            self.n += 1
            self.add("produce", topic=TOPIC, acks=self.acks, value=f"v{self.n}")

    def wait(self, ms: int) -> None:
        self.add("advance", ms=ms)

    def short(self) -> int:
        # Inside a window: from "same instant" to a couple of fetch round trips.
        return self.rng.choice((0, 1, 2, 3, 5, 10, 20, 50, 150))

    def long(self) -> int:
        # Between faults: long enough for failure detection, elections and ISR changes.
        return self.rng.choice((1000, 1500, 2000, 2500))


def targeted_schedule(seed: int, *, acks: Any = "all", min_isr: int = 2, unclean: bool = False,
                      window: str | None = None) -> list[dict]:
    """A seeded schedule built around one of :data:`WINDOWS` (drawn from the seed unless
    ``window`` is given). The same seed gives the same schedule under every setting; only
    ``acks`` and the topic config change."""
    rng = random.Random(f"targeted-{seed}")
    drawn = rng.choice(sorted(WINDOWS))
    name = window or drawn
    assignment = rng.sample(BROKERS, 3)
    leader, f1, f2 = assignment
    config: dict[str, Any] = {"min.insync.replicas": min_isr, "flush.messages": 1}
    if unclean:
        config["unclean.leader.election.enable"] = True
    s = _Schedule(rng, acks)
    s.add("create_topic", topic=TOPIC, partitions=1, replication_factor=3, assignment=[assignment], config=config)
    s.wait(300)
    for _ in range(rng.randint(1, 3)):       # a few records replicated everywhere first
        s.produce(rng.choice((1, 2)))
        s.wait(rng.choice((100, 300, 600)))
    _WINDOW_BUILDERS[name](s, leader, f1, f2)
    # Settling tail: everything back, a last write, quiet.
    s.add("heal_all")
    for b in sorted(s.down):
        s.add("restart", broker=b)
    for b in sorted(s.paused):
        s.add("resume_follower", broker=b)
    s.wait(2000)
    s.produce()
    s.wait(1000)
    return s.cmds


def window_of(seed: int) -> str:
    """The window :func:`targeted_schedule` draws for ``seed``."""
    return random.Random(f"targeted-{seed}").choice(sorted(WINDOWS))


def _kip101(s: _Schedule, leader: int, f1: int, f2: int) -> None:
    rng = s.rng
    s.produce(rng.choice((1, 2)))
    s.wait(s.short())                  # followers fetch; the leader acknowledges; their HW is stale
    bounced = [f1] if rng.random() < 0.5 else [f1, f2]
    for f in bounced:                  # a follower restarts (and, under the HW rule, truncates)
        s.add("crash", broker=f)
        s.add("restart", broker=f)
    s.wait(rng.choice((0, 0, 1, 2, 5, 20)))
    s.add("crash", broker=leader)      # ... and the leader dies before its next fetch
    s.wait(s.long())
    s.produce()
    s.wait(s.long())
    s.add("restart", broker=leader)
    s.wait(s.long())


def _leader_dies(s: _Schedule, leader: int, f1: int, f2: int) -> None:
    rng = s.rng
    s.produce(rng.choice((1, 2, 3)))
    s.wait(s.short())
    s.add("crash" if rng.random() < 0.8 else "shutdown", broker=leader)
    s.wait(s.long())
    s.produce()
    s.wait(s.long())
    s.add("restart", broker=leader)
    s.wait(s.long())


def _power_pair(s: _Schedule, leader: int, f1: int, f2: int) -> None:
    rng = s.rng
    s.add("pause_follower", broker=f2)     # the third replica falls out of the ISR
    s.wait(s.long())
    s.produce(rng.choice((1, 2)))
    s.wait(s.short())
    s.add("crash", broker=leader)          # a power failure takes two brokers at once
    s.add("crash", broker=f1)
    s.wait(rng.choice((0, 10, 500, 2500, 2500, 4000)))
    first, second = (f1, leader) if rng.random() < 0.5 else (leader, f1)
    s.add("restart", broker=first)
    s.wait(s.long())
    s.produce()
    s.wait(s.long())
    s.add("restart", broker=second)
    s.add("resume_follower", broker=f2)
    s.wait(s.long())


def _alone(s: _Schedule, leader: int, f1: int, f2: int) -> None:
    rng = s.rng
    for f in (f1, f2):                     # the followers stop fetching
        s.add("pause_follower", broker=f)
    s.wait(s.long())                       # the ISR shrinks to the leader
    s.add("set_config", scope="broker", target=leader, changes={"flush.messages": LONG_MAX})
    s.produce(rng.choice((1, 2, 3)))
    s.wait(rng.choice((10, 100, 500)))
    s.add("crash", broker=leader)          # power lost: the unflushed writes are gone
    s.add("set_config", scope="broker", target=leader, changes={"flush.messages": 1})
    s.wait(s.long())
    s.produce()
    s.wait(s.long())
    s.add("restart", broker=leader)
    s.wait(s.long())
    for f in (f1, f2):
        s.add("resume_follower", broker=f)
    s.wait(s.long())


def _controller_cut(s: _Schedule, leader: int, f1: int, f2: int) -> None:
    rng = s.rng
    for other in BROKERS:
        if other != leader:
            s.add("cut_link", a=leader, b=other, both=True)
    for _ in range(rng.randint(2, 5)):     # the client still writes to the leader it knows
        s.produce()
        s.wait(rng.choice((100, 300, 600)))
    s.wait(s.long())
    s.add("heal_all")
    s.wait(s.long())


_WINDOW_BUILDERS = {"kip101": _kip101, "leader-dies": _leader_dies, "power-pair": _power_pair,
                    "alone": _alone, "controller-cut": _controller_cut}


def steady_producer(cmds: list[dict], acks: Any, every_ms: int = PRODUCE_EVERY_MS) -> list[dict]:
    """``cmds`` with every ``advance`` longer than ``every_ms`` cut into steps of at most
    ``every_ms`` with one record produced between them: a client that keeps writing while
    the faults play out. Records are named ``s1, s2, …`` (apart from the schedule's own)."""
    out: list[dict] = []
    n = 0
    for c in cmds:
        if c["cmd"] != "advance" or c["ms"] <= every_ms:
            out.append(c)
            continue
        left = c["ms"]
        while left > every_ms:
            out.append({"cmd": "advance", "ms": every_ms})
            n += 1
            out.append({"cmd": "produce", "topic": TOPIC, "acks": acks, "value": f"s{n}"})
            left -= every_ms
        if left:
            out.append({"cmd": "advance", "ms": left})
    return out
