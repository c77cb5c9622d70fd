"""Named replication scenarios (command logs with narration and expected outcomes), and
the seeded random fault schedules the durability tests and the benchmark run.

A :class:`Scenario` is a cluster config, a seed and a list of :class:`Step` s — one
command each, with a sentence of narration for the lesson UI — plus what must come out
under each follower truncation rule (``"hw"``: before Kafka 0.11; ``"epoch"``: KIP-101 +
KIP-279). :func:`run_scenario` plays it on a real cluster and adds a ``verdict`` to the
run summary comparing the outcome with the expectation.

Brokers in the two-replica scenarios: the topic lives on brokers 1 ("A", the first
leader) and 2 ("B"); broker 0 hosts the controller and never fails, so elections follow
the reference tables (§5.7) without a controller failover in the way.
"""
from __future__ import annotations

import random
from typing import Any

from ..errors import InvalidRequestError, KafkaError
from .commands import record_digest
from .group_scenarios import GROUP_SCENARIOS
from .quorum_scenarios import QUORUM_SCENARIOS
from .scenario import Expected, Scenario, Step, step

__all__ = ["Step", "Expected", "Scenario", "SCENARIOS", "get_scenario", "run_scenario", "judge",
           "fault_schedule", "run_schedule", "FAULT_CONFIG", "LONG_MAX"]

LONG_MAX = 2**63 - 1

_s = step   # the steps below read as a script


# Short timers so scenarios stay small; the relations Kafka relies on still hold.
_TWO_REPLICA_CONFIG = {"brokers": 3, "replica.high.watermark.checkpoint.interval.ms": 100,
                       "broker.session.timeout.ms": 3000, "broker.heartbeat.interval.ms": 500}
_TOPIC_ON_A_B = dict(topic="t", partitions=1, assignment=[[1, 2]],
                     config={"min.insync.replicas": 1, "flush.messages": 1})


KIP101_DATA_LOSS = Scenario(
    name="kip101-data-loss",
    title="KIP-101 scenario 1: truncating to the high watermark loses an acknowledged write",
    summary="A follower restarts and cuts its log back to its (stale) high watermark; the leader dies "
            "before the follower can fetch again; the follower becomes leader without the acknowledged m2.",
    config=_TWO_REPLICA_CONFIG,
    steps=(
        _s("Topic t has one partition on brokers 1 (A, preferred leader) and 2 (B). Every append is fsync'd "
           "(flush.messages=1), so crashes lose nothing from disk: whatever goes wrong is replication's doing. "
           "unclean.leader.election.enable=true, Kafka 0.10's default: a 0.10 follower may only truncate below "
           "its own log end when it is on.",
           "create_topic", **{**_TOPIC_ON_A_B,
                              "config": {**_TOPIC_ON_A_B["config"], "unclean.leader.election.enable": True}}),
        _s("A becomes leader at epoch 0; B starts its fetch loop.", "advance", ms=1000),
        _s("The producer sends m1 with acks=all.", "produce", topic="t", acks="all", value="m1"),
        _s("B fetches m1; its next fetch tells A that B's LEO is 1, so A's HW becomes 1 and m1 is acknowledged. "
           "A later fetch response carries HW 1 to B.", "advance", ms=1000),
        _s("The producer sends m2 with acks=all.", "produce", topic="t", acks="all", value="m2"),
        _s("B fetches m2, then fetches from offset 2: A sees B's LEO = 2, moves its HW to 2 and acknowledges m2. "
           "B's own HW is still 1 — the response carrying HW 2 is parked at A for up to 500 ms.",
           "advance", ms=10),
        _s("B crashes before it learns HW 2. Its replication-offset-checkpoint says 1.", "crash", broker=2),
        _s("A alone writes its HW 2 into its replication-offset-checkpoint (every 100 ms here).",
           "advance", ms=150),
        _s("B restarts. Under the HW rule it will truncate to its high watermark as soon as it follows A: "
           "m2 is cut from its log. Under the epoch rule it keeps m2 and asks A where epoch 0 ends.",
           "restart", broker=2),
        _s("A crashes before B fetches anything (both happen at the same virtual instant).", "crash", broker=1),
        _s("After broker.session.timeout.ms the controller fences A. B is still in the ISR, so it is elected "
           "leader at epoch 1 — with whatever its log holds.", "advance", ms=5000),
        _s("A restarts and follows B. HW rule: A truncates to its own HW 2 (nothing to cut) and fetches from "
           "offset 2 — above B's LEO 1, so the fetch is out of range and A truncates to B's LEO: m2 is gone "
           "everywhere. Epoch rule: B answers that epoch 0 ends at 2, A keeps m2.",
           "restart", broker=1),
        _s("A catches up and rejoins the ISR.", "advance", ms=2000),
        _s("The producer sends m3.", "produce", topic="t", acks="all", value="m3"),
        _s("m3 is replicated and acknowledged. Compare the logs: under the HW rule m3 took offset 1, where the "
           "acknowledged m2 used to be.", "advance", ms=1000),
        _s("A consumer reads the partition.", "consume", topic="t", offset=0),
    ),
    expected={
        "hw": Expected(lost=("m2",), diverged=False, logs={1: ("m1", "m3"), 2: ("m1", "m3")},
                       events=("replica_truncated",),
                       note="HW-based truncation loses the acknowledged m2 on both replicas."),
        "epoch": Expected(lost=(), diverged=False, logs={1: ("m1", "m2", "m3"), 2: ("m1", "m2", "m3")},
                          events=("epoch_request_answered",),
                          note="With leader epochs B keeps m2; nothing acknowledged is lost."),
    },
)


def _refused_truncation_steps() -> tuple:
    """kip101-data-loss with unclean leader election off (Kafka's default since 0.11)."""
    steps = list(KIP101_DATA_LOSS.steps)
    steps[0] = _s("Topic t has one partition on brokers 1 (A, preferred leader) and 2 (B); every append is "
                  "fsync'd. unclean.leader.election.enable=false, the default since Kafka 0.11 — and the "
                  "setting under which a 0.10 follower refuses to truncate below its own log end.",
                  "create_topic", **_TOPIC_ON_A_B)
    a_restarts = next(i for i, st in enumerate(steps) if st.command == {"cmd": "restart", "broker": 1})
    steps[a_restarts] = _s(
        "A restarts and follows B. HW rule: A truncates to its own HW 2 (nothing to cut) and fetches from "
        "offset 2 — above B's LEO 1. Cutting back to B's LEO would drop m2, which unclean election off "
        "forbids: 0.10's fetcher stopped with 'Exiting because log truncation is not allowed' (it exited the "
        "broker; here only A's fetcher for t-0 stops, replica_fetch_failed). Epoch rule: B answers that "
        "epoch 0 ends at 2, A keeps m2 and fetches on.", "restart", broker=1)
    steps[a_restarts + 1] = _s("HW rule: A stays behind, out of the ISR. Epoch rule: A catches up.",
                               "advance", ms=2000)
    return tuple(steps)


HW_TRUNCATION_REFUSED = Scenario(
    name="hw-truncation-refused",
    title="Before 0.11, with unclean election off, a follower ahead of its leader stops instead of truncating",
    summary="KIP-101 scenario 1 with unclean.leader.election.enable=false: the returning old leader is ahead "
            "of the new leader, and the pre-0.11 fetcher treats the truncation as fatal for the partition.",
    config=_TWO_REPLICA_CONFIG,
    steps=_refused_truncation_steps(),
    expected={
        "hw": Expected(lost=("m2",), diverged=False, logs={1: ("m1", "m2"), 2: ("m1", "m3")}, leader=2,
                       isr=(2,), events=("replica_fetch_failed",),
                       note="B lost m2 (HW truncation); A still holds it but its fetcher for t-0 has stopped, so "
                            "A never gets m3 and never rejoins the ISR until the next leader change."),
        "epoch": Expected(lost=(), diverged=False, logs={1: ("m1", "m2", "m3"), 2: ("m1", "m2", "m3")},
                          note="With leader epochs nothing diverges and nothing needs refusing."),
    },
)


KIP101_DIVERGENCE = Scenario(
    name="kip101-divergence",
    title="KIP-101 scenario 2: two replicas end with different records at the same offset",
    summary="Both replicas lose power; B had not fsync'd m2. B comes back first, leads, and writes m3 at "
            "offset 1; A returns holding m2 at offset 1.",
    config=_TWO_REPLICA_CONFIG,
    steps=(
        _s("Topic t on brokers 1 (A, leader) and 2 (B); every append is fsync'd for now.",
           "create_topic", **_TOPIC_ON_A_B),
        _s("A leads at epoch 0.", "advance", ms=1000),
        _s("The producer sends m1 (acks=all).", "produce", topic="t", acks="all", value="m1"),
        _s("m1 is on both replicas, on disk.", "advance", ms=1000),
        _s("B stops fsyncing: from now on its appends sit in the page cache only (Kafka's default).",
           "set_config", scope="broker", target=2, changes={"flush.messages": LONG_MAX}),
        _s("The producer sends m2 (acks=all).", "produce", topic="t", acks="all", value="m2"),
        _s("m2 reaches B and is acknowledged; both replicas learn HW 2 and checkpoint it.", "advance", ms=1000),
        _s("Power loss: A crashes…", "crash", broker=1),
        _s("…and B crashes at the same instant. B's un-fsynced m2 is gone; its log is [m1].", "crash", broker=2),
        _s("B restarts first.", "restart", broker=2),
        _s("The controller fences A and elects B (the only live ISR member) at epoch 1; B's epoch cache gets "
           "(1, 1).", "advance", ms=5000),
        _s("The producer sends m3; B is alone in the ISR and min.insync.replicas is 1, so it is accepted.",
           "produce", topic="t", acks="all", value="m3"),
        _s("m3 lands at offset 1 with epoch 1.", "advance", ms=100),
        _s("A restarts and follows B. HW rule: A keeps everything below its HW 2 — m2 at offset 1 — and fetches "
           "from offset 2: the replicas now differ at offset 1, forever. Epoch rule: B says epoch 0 ends at 1, "
           "A truncates m2 and fetches m3.", "restart", broker=1),
        _s("A catches up and rejoins the ISR.", "advance", ms=3000),
    ),
    expected={
        "hw": Expected(lost=("m2",), diverged=True, logs={1: ("m1", "m2"), 2: ("m1", "m3")},
                       note="HW truncation leaves A=[m1,m2] and B=[m1,m3]: silent divergence."),
        "epoch": Expected(lost=("m2",), diverged=False, logs={1: ("m1", "m3"), 2: ("m1", "m3")},
                          note="Epochs keep the replicas identical; m2 is still lost (no replica kept it on "
                               "disk), which is why Kafka relies on replication, not fsync."),
    },
)


UNCLEAN_ELECTION_LOSS = Scenario(
    name="unclean-election-loss",
    title="Unclean leader election gives up acknowledged writes for availability",
    summary="B is cut off and falls out of the ISR; A acknowledges m2 and m3 alone; A dies; with "
            "unclean.leader.election.enable=true the out-of-sync B becomes leader without them.",
    config={**_TWO_REPLICA_CONFIG, "replica.lag.time.max.ms": 5000},
    steps=(
        _s("Topic t on brokers 1 (A) and 2 (B), min.insync.replicas=1, unclean leader election enabled.",
           "create_topic", topic="t", partitions=1, assignment=[[1, 2]],
           config={"min.insync.replicas": 1, "flush.messages": 1, "unclean.leader.election.enable": True}),
        _s("A leads at epoch 0.", "advance", ms=1000),
        _s("The producer sends m1.", "produce", topic="t", acks="all", value="m1"),
        _s("m1 is on both replicas.", "advance", ms=1000),
        _s("The network link between A and B is cut: B's fetches no longer reach A (B still talks to the "
           "controller, so it stays registered).", "cut_link", a=1, b=2),
        _s("The producer sends m2 with acks=all. B is still in the ISR, so A waits for it.",
           "produce", topic="t", acks="all", value="m2"),
        _s("B has not caught up for replica.lag.time.max.ms (5 s here): A shrinks the ISR to {A}; the HW moves "
           "and m2 is acknowledged by A alone (min.insync.replicas=1).", "advance", ms=8000),
        _s("The producer sends m3; the ISR is {A}, so A acknowledges it at once.",
           "produce", topic="t", acks="all", value="m3"),
        _s("Acknowledged.", "advance", ms=100),
        _s("A crashes.", "crash", broker=1),
        _s("No live replica is in the ISR. Unclean election is allowed, so the controller picks B, which never "
           "saw m2 and m3, at epoch 1.", "advance", ms=5000),
        _s("The link between A and B is repaired.", "heal_link", a=1, b=2),
        _s("The producer sends m4; B writes it at offset 1.", "produce", topic="t", acks="all", value="m4"),
        _s("Acknowledged by B alone.", "advance", ms=100),
        _s("A restarts as a follower of B. HW rule: A cuts back to B's LEO and keeps its own m2 at offset 1. "
           "Epoch rule: B says epoch 0 ended at 1, A truncates to 1 and copies m4.", "restart", broker=1),
        _s("A catches up.", "advance", ms=3000),
    ),
    expected={
        "hw": Expected(lost=("m2", "m3"), diverged=True, logs={1: ("m1", "m2"), 2: ("m1", "m4")},
                       events=("leader_elected",),
                       note="The unclean election loses m2 and m3; HW truncation also leaves the replicas diverged."),
        "epoch": Expected(lost=("m2", "m3"), diverged=False, logs={1: ("m1", "m4"), 2: ("m1", "m4")},
                          events=("leader_elected",),
                          note="The unclean election loses m2 and m3 whatever the truncation rule."),
    },
)


ISR_SHRINK_ACKS_ALL = Scenario(
    name="isr-shrink-acks-all",
    title="acks=all with min.insync.replicas=2 refuses writes when the ISR shrinks",
    summary="RF 3, min.insync.replicas 2: one follower dies and writes go on; the second dies and acks=all "
            "writes are refused with NOT_ENOUGH_REPLICAS (acks=1 still works); the followers return.",
    config={"brokers": 5, "broker.session.timeout.ms": 3000, "broker.heartbeat.interval.ms": 500},
    steps=(
        _s("Topic t on brokers 0, 1, 2 (leader 0), min.insync.replicas=2. Brokers 3 and 4 hold no replica of t; "
           "with them 3 of the 5 brokers stay up, so the controller quorum survives two crashes.",
           "create_topic", topic="t", partitions=1, assignment=[[0, 1, 2]], config={"min.insync.replicas": 2}),
        _s("Broker 0 leads; 1 and 2 follow.", "advance", ms=1000),
        _s("m1 with acks=all.", "produce", topic="t", acks="all", value="m1"),
        _s("Acknowledged once all three replicas have it.", "advance", ms=1000),
        _s("Broker 2 crashes.", "crash", broker=2),
        _s("The controller fences broker 2 and drops it from the ISR: {0, 1}.", "advance", ms=5000),
        _s("m2 with acks=all: the ISR has 2 members, enough.", "produce", topic="t", acks="all", value="m2"),
        _s("Acknowledged.", "advance", ms=1000),
        _s("Broker 1 crashes too.", "crash", broker=1),
        _s("The ISR is {0}.", "advance", ms=5000),
        _s("m3 with acks=all: refused before anything is written — NOT_ENOUGH_REPLICAS.",
           "produce", topic="t", acks="all", value="m3"),
        _s("The error reaches the producer.", "advance", ms=100),
        _s("m4 with acks=1: the leader alone is enough, but m4 lives on one replica only.",
           "produce", topic="t", acks=1, value="m4"),
        _s("Acknowledged.", "advance", ms=100),
        _s("Broker 1 restarts…", "restart", broker=1),
        _s("…and broker 2.", "restart", broker=2),
        _s("They catch up and rejoin the ISR.", "advance", ms=5000),
        _s("m5 with acks=all is accepted again.", "produce", topic="t", acks="all", value="m5"),
        _s("Acknowledged.", "advance", ms=1000),
    ),
    expected={m: Expected(lost=(), diverged=False, produce_errors=("NOT_ENOUGH_REPLICAS",), isr=(0, 1, 2),
                          leader=0, logs={b: ("m1", "m2", "m4", "m5") for b in (0, 1, 2)},
                          note="Durability is bought with availability: writes stop instead of being under-replicated.")
              for m in ("hw", "epoch")},
)


FOLLOWER_SLOW_OUT_OF_ISR = Scenario(
    name="follower-slow-out-of-isr",
    title="A slow follower drops out of the ISR and comes back",
    summary="Broker 2 fetches only every 40 s; after replica.lag.time.max.ms (30 s) the leader removes it from "
            "the ISR; once it is fast again it catches up and is added back.",
    config={"brokers": 3},
    steps=(
        _s("Topic t on brokers 0, 1, 2 (leader 0), min.insync.replicas=2.",
           "create_topic", topic="t", partitions=1, assignment=[[0, 1, 2]], config={"min.insync.replicas": 2}),
        _s("All three replicas in sync.", "advance", ms=1000),
        _s("Broker 2 becomes slow: it waits 60 s before each fetch.", "slow_follower", broker=2, delay_ms=60000),
        _s("m1 with acks=all.", "produce", topic="t", acks="all", value="m1"),
        _s("Brokers 0 and 1 copy m1 at once; broker 2 got m1 from its waiting fetch but will not ask again for "
           "60 s, so the leader does not know it has it and the HW waits for it while it is in the ISR. After "
           "more than replica.lag.time.max.ms (30 s) without catching up, the leader's ISR check (every 15 s) "
           "removes it; the HW moves and m1 is acknowledged.", "advance", ms=50000),
        _s("m2 with acks=all: the ISR {0, 1} is enough.", "produce", topic="t", acks="all", value="m2"),
        _s("Acknowledged without waiting for broker 2.", "advance", ms=1000),
        _s("Broker 2 is fast again (its next fetch is already scheduled).", "slow_follower", broker=2, delay_ms=0),
        _s("Its pending fetch fires at about 61 s; it copies m2, reaches the HW and is added back to the ISR.",
           "advance", ms=15000),
    ),
    expected={m: Expected(lost=(), diverged=False, isr=(0, 1, 2), leader=0,
                          logs={b: ("m1", "m2") for b in (0, 1, 2)}, events=("isr_shrunk", "isr_expanded"),
                          note="ISR membership follows replica.lag.time.max.ms, not a record count.")
              for m in ("hw", "epoch")},
)


CONTROLLER_FAILOVER = Scenario(
    name="controller-failover",
    title="The controller's broker dies: a new controller takes over and re-elects leaders",
    summary="Broker 0 hosts the controller and leads partition 0. It crashes; after the session timeout broker 1 "
            "becomes controller and moves leadership; broker 0 returns and preferred leaders are restored.",
    config={"brokers": 3, "broker.session.timeout.ms": 3000, "broker.heartbeat.interval.ms": 500},
    steps=(
        _s("Topic t with 3 partitions, each on all brokers; preferred leaders 0, 1, 2.",
           "create_topic", topic="t", partitions=3, assignment=[[0, 1, 2], [1, 2, 0], [2, 0, 1]],
           config={"min.insync.replicas": 2}),
        _s("Leaders elected.", "advance", ms=1000),
        _s("m1 to partition 0.", "produce", topic="t", partition=0, acks="all", value="m1"),
        _s("Acknowledged.", "advance", ms=1000),
        _s("Broker 0 — controller and leader of partition 0 — crashes.", "crash", broker=0),
        _s("After broker.session.timeout.ms broker 1 takes over as controller (controller epoch 2), fences broker "
           "0 and elects broker 1 leader of partition 0.", "advance", ms=8000),
        _s("m2 to partition 0, now led by broker 1.", "produce", topic="t", partition=0, acks="all", value="m2"),
        _s("Acknowledged by the new leader.", "advance", ms=1000),
        _s("Broker 0 restarts and registers with the new controller.", "restart", broker=0),
        _s("It catches up and rejoins the ISRs.", "advance", ms=5000),
        _s("Preferred leader election moves partition 0 back to broker 0.", "elect_preferred_leaders"),
        _s("Done.", "advance", ms=1000),
    ),
    expected={m: Expected(lost=(), diverged=False, leader=0, controller=1, isr=(0, 1, 2),
                          logs={b: ("m1", "m2") for b in (0, 1, 2)}, events=("controller_changed", "leader_elected"),
                          note="Metadata survives the controller's broker; leadership moves twice.")
              for m in ("hw", "epoch")},
)


KIP279_DIVERGENCE = Scenario(
    name="kip279-divergence",
    title="KIP-279: a returning replica holds an epoch the leader never saw",
    summary="C leads briefly at epoch 1 and writes m2' that nobody copies; B leads at epoch 2. When C "
            "returns, B answers its OffsetsForLeaderEpoch(1) with the end of epoch 0, and C cuts m2'.",
    config={"brokers": 5, "broker.session.timeout.ms": 3000, "broker.heartbeat.interval.ms": 500,
            "replica.high.watermark.checkpoint.interval.ms": 100},
    steps=(
        _s("Topic t on brokers 1 (A), 3 (C) and 2 (B), in that preference order; min.insync.replicas=1. "
           "Brokers 0 and 4 keep the controller quorum alive while two of the replicas are down.",
           "create_topic", topic="t", partitions=1, assignment=[[1, 3, 2]],
           config={"min.insync.replicas": 1, "flush.messages": 1}),
        _s("A leads at epoch 0.", "advance", ms=1000),
        _s("m1 (acks=all) reaches all three replicas.", "produce", topic="t", acks="all", value="m1"),
        _s("Replicated.", "advance", ms=1000),
        _s("The link A–C is cut: C stops receiving A's data.", "cut_link", a=1, b=3),
        _s("The link B–C is cut too: B will never fetch from C.", "cut_link", a=2, b=3),
        _s("m2 with acks=1: A writes it at offset 1 (epoch 0); B copies it, C cannot.",
           "produce", topic="t", acks=1, value="m2"),
        _s("B has m2.", "advance", ms=100),
        _s("A crashes.", "crash", broker=1),
        _s("The controller fences A and elects C (first in preference order still in the ISR) at epoch 1; "
           "C's epoch cache gets (1, 1).", "advance", ms=5000),
        _s("m2' with acks=1: C writes it at offset 1 with epoch 1. Nobody copies it.",
           "produce", topic="t", acks=1, value="m2'"),
        _s("Acknowledged by C alone.", "advance", ms=100),
        _s("C crashes.", "crash", broker=3),
        _s("The controller elects B at epoch 2 (cache (0, 0), (2, 2)).", "advance", ms=5000),
        _s("m3 with acks=1 lands on B at offset 2, epoch 2.", "produce", topic="t", acks=1, value="m3"),
        _s("Acknowledged.", "advance", ms=100),
        _s("The network is repaired.", "heal_all"),
        _s("C restarts as follower of B. Epoch rule: C asks where epoch 1 ends; B never had epoch 1 and answers "
           "with the largest epoch it knows below it — epoch 0, ending at 2. C's own epoch 0 ends at 1, so C "
           "truncates to 1 (m2' goes) and fetches m2 and m3. HW rule: C truncates to its HW (1) anyway.",
           "restart", broker=3),
        _s("A restarts too and catches up.", "restart", broker=1),
        _s("All three replicas agree.", "advance", ms=3000),
    ),
    expected={
        "hw": Expected(lost=("m2", "m2'"), diverged=False, logs={b: ("m1", "m3") for b in (1, 2, 3)}, leader=2,
                       events=("replica_truncated",),
                       note="The HW rule truncates on every leader change: B cut m2 when it followed C, so m3 "
                            "took offset 1 and both acks=1 writes are gone."),
        "epoch": Expected(lost=("m2'",), diverged=False, logs={b: ("m1", "m2", "m3") for b in (1, 2, 3)},
                          leader=2, events=("epoch_request_answered",),
                          note="m2' was acknowledged (acks=1) by a leader nobody copied, so it is lost, but no "
                               "replica keeps it: a KIP-101-only leader would have answered 'epoch 2 starts at "
                               "2' and C would have kept m2' at offset 1."),
    },
)


SCENARIOS: dict[str, Scenario] = {s.name: s for s in (
    KIP101_DATA_LOSS, KIP101_DIVERGENCE, UNCLEAN_ELECTION_LOSS, ISR_SHRINK_ACKS_ALL, FOLLOWER_SLOW_OUT_OF_ISR,
    CONTROLLER_FAILOVER, KIP279_DIVERGENCE, HW_TRUNCATION_REFUSED)}


def get_scenario(name: str) -> Scenario:
    try:
        return SCENARIOS[name]
    except KeyError:
        raise InvalidRequestError(f"unknown scenario {name!r}; known: {', '.join(sorted(SCENARIOS))}") from None


def run_scenario(scenario: Scenario, *, truncation: str = "epoch", seed: int | None = None, disk_root: str,
                 snapshot_every: int = 5, fetch_protocol: str | None = None, kraft: bool | None = None,
                 controllers: int | None = None) -> dict[str, Any]:
    """Play ``scenario`` under ``truncation`` (and ``fetch_protocol``, see ClusterConfig)
    and return the run summary with the scenario, the step narration and a ``verdict``
    against the expected outcome."""
    from .run import Run, make_config

    if truncation not in scenario.expected:
        raise InvalidRequestError(f"truncation must be one of {', '.join(sorted(scenario.expected))}, "
                                  f"got {truncation!r}")
    run = Run(scenario.seed if seed is None else seed,
              make_config(scenario.config, truncation=truncation, fetch_protocol=fetch_protocol, kraft=kraft,
                          controllers=controllers),
              disk_root, snapshot_every=snapshot_every)
    run.apply_all(scenario.commands())
    summary = run.summary()
    summary["scenario"] = {"name": scenario.name, "title": scenario.title, "summary": scenario.summary,
                           "steps": [s.to_dict() for s in scenario.steps]}
    summary["verdict"] = judge(summary, run.checker.event_counts, scenario.expected[truncation], truncation,
                               fetch_protocol=run.config.fetch_protocol)
    return summary


def judge(summary: dict, event_counts: dict, expected: Expected, truncation: str,
          fetch_protocol: str = "offsets_for_leader_epoch") -> dict[str, Any]:
    """Compare a run summary (and the number of events of each kind the run emitted,
    ``checker.event_counts``) with ``expected``; list every difference in words. With the
    Fetch v12 protocol an expected ``epoch_request_answered`` is not looked for: the leader
    answers inside the fetch (``fetch_diverging``), and only when the logs diverge."""
    mismatches = []
    part = next((p for p in summary["partitions"] if p["topic"] == "t" and p["partition"] == 0), None)
    # Lost = acknowledged and not in the final leader's log (the checker also reports records
    # that were missing from a leader for a while and came back with a later one).
    lost = sorted((a["value"] for p in summary["partitions"] for a in p["acknowledged"] if a["present"] is False),
                  key=str)
    if lost != sorted(expected.lost):
        mismatches.append(f"lost acknowledged records: expected {list(expected.lost)}, got {lost}")
    reported = {f["digest"] for f in summary["findings"] if f["kind"] == "check_acked_record_lost"}
    unreported = [v for v in expected.lost if record_digest(None, v.encode()) not in reported]
    if unreported:
        mismatches.append(f"the checker did not report {unreported} lost")
    diverged = any(f["kind"] == "check_replicas_diverged" for f in summary["findings"])
    if diverged != expected.diverged:
        mismatches.append(f"diverged: expected {expected.diverged}, got {diverged}")
    if expected.logs is not None and part is not None:
        for b, values in sorted(expected.logs.items()):
            r = next((r for r in part["replicas"] if r["broker"] == b), None)
            got = None if r is None or not r["alive"] else [x["value"] for x in r["records"]]
            if got != list(values):
                mismatches.append(f"broker {b} log: expected {list(values)}, got {got}")
    errors = {p["error"] for p in summary["produce"] if p["error"]}
    for e in expected.produce_errors:
        if e not in errors:
            mismatches.append(f"produce error {e} expected, got {sorted(errors)}")
    if expected.isr is not None and part is not None and tuple(part["isr"]) != tuple(expected.isr):
        mismatches.append(f"ISR: expected {list(expected.isr)}, got {part['isr']}")
    if expected.leader is not None and part is not None and part["leader"] != expected.leader:
        mismatches.append(f"leader: expected {expected.leader}, got {part['leader']}")
    ctl = summary["controller"]
    # Which broker ends up active is the hybrid controller's rule; a Raft quorum elects whoever wins.
    if expected.controller is not None and ctl["mode"] == "hybrid" and ctl["active"] != expected.controller:
        mismatches.append(f"controller: expected {expected.controller}, got {ctl['active']}")
    for kind in expected.events:
        if kind == "epoch_request_answered" and fetch_protocol == "diverging_epoch":
            continue
        if not event_counts.get(kind):
            mismatches.append(f"no {kind} event")
    return {"truncation": truncation, "matches": not mismatches, "mismatches": mismatches,
            "expected": expected.to_dict()}


# ---- random fault schedules ---------------------------------------------------------------

# Fast timers: a schedule of ~15 commands covers several failure detections.
FAULT_CONFIG = {
    "brokers": 3, "replica.lag.time.max.ms": 1000, "replica.fetch.wait.max.ms": 500,
    "replica.fetch.backoff.ms": 50, "request.timeout.ms": 500, "broker.session.timeout.ms": 900,
    "broker.heartbeat.interval.ms": 300,
}

FETCH_PROTOCOLS = ("offsets_for_leader_epoch", "diverging_epoch")

def schedule_config(seed: int, *, truncation: str = "epoch", brokers: int = 3,
                    fetch_protocol: str | None = None) -> dict[str, Any]:
    """The cluster config a schedule runs under: :data:`FAULT_CONFIG` with the truncation
    rule, the number of brokers and the fetch protocol (by default alternating with the
    seed, so both ways of finding a divergence are exercised)."""
    protocol = fetch_protocol or FETCH_PROTOCOLS[seed % len(FETCH_PROTOCOLS)]
    return {**FAULT_CONFIG, "brokers": brokers, "truncation": truncation, "fetch.protocol": protocol}


def run_schedule(seed: int, disk_root: str, *, truncation: str = "epoch", acks: int | str = "all",
                 fetch_protocol: str | None = None, overrides: dict | None = None, **kwargs: Any) -> Any:
    """Play :func:`fault_schedule` on a fresh :class:`Run` (config :func:`schedule_config`)
    and run the final check. A command the cluster refuses (a Kafka-named error from
    validation: a ``consume`` with no leader at that moment, say) is skipped — it changed
    nothing and is not in ``run.log``, which therefore replays exactly — and listed in
    ``run.refusals`` as (step, cmd, error name). Anything else a command raises propagates.
    ``overrides`` are config settings on top of the schedule's. Returns the run."""
    from .run import Run, make_config

    config = schedule_config(seed, truncation=truncation, brokers=kwargs.get("brokers", 3),
                             fetch_protocol=fetch_protocol)
    config.update(overrides or {})      # e.g. {"replica.fetch.sessions": True}
    run = Run(seed, make_config(config), disk_root, snapshot_every=10**9)
    run.schedule_config = config
    run.refusals = []
    for i, c in enumerate(fault_schedule(seed, acks=acks, **kwargs)):
        try:
            run.apply(c)
        except KafkaError as exc:
            if getattr(exc, "rolled_back", False):
                raise       # not a refusal: the command failed while it ran
            run.refusals.append((i, c["cmd"], exc.name))
    run.finish()
    return run


def fault_schedule(seed: int, *, acks: int | str = "all", min_isr: int = 2, unclean: bool = False,
                   steps: int = 8, brokers: int = 3, flush: bool = True) -> list[dict]:
    """A seeded random command log: a topic with RF 3 on ``brokers`` brokers, then ``steps``
    actions drawn from: produce, advance, crash, clean shutdown,
    restart, bounce (crash and restart at once or a few ms later, sometimes with a second
    broker crashing right after, KIP-101 style), consume, cut links between brokers (both
    ways or one way), cut the client off a broker, isolate, delays and drop probabilities on
    broker and client links, slow and paused followers, preferred-leader election, heal —
    then a settling tail (heal everything, restart and resume everything, wait) so the final
    check sees a quiet cluster. A ``consume`` may be refused when the partition has no leader
    at that moment (run it with :func:`run_schedule`, which skips refusals). With ``flush``
    every append is fsync'd, so a crash loses nothing from disk and any loss is
    replication's fault."""
    rng = random.Random(seed)
    config: dict[str, Any] = {"min.insync.replicas": min_isr}
    if flush:
        config["flush.messages"] = 1
    if unclean:
        config["unclean.leader.election.enable"] = True
    nodes = list(range(brokers))
    cmds: list[dict] = [{"cmd": "create_topic", "topic": "t", "partitions": 1, "replication_factor": 3,
                         "assignment": [rng.sample(nodes, 3)], "config": config},
                        {"cmd": "advance", "ms": 300}]
    down: set = set()
    paused: set = set()
    slowed: set = set()
    max_down = max(2, (brokers - 1) // 2)
    n = 0
    # (kind, weight): the weights sum to 100.
    table = (("produce", 30), ("advance", 20), ("crash", 5), ("bounce", 7), ("restart", 8), ("consume", 3),
             ("cut_link", 2), ("client_cut", 2), ("isolate", 2), ("link_delay", 3), ("client_delay", 3),
             ("drop", 2), ("client_drop", 2), ("slow_follower", 2), ("pause_follower", 2),
             ("elect_preferred_leaders", 2), ("heal", 5))
    kinds = [k for k, _ in table]
    weights = [w for _, w in table]
    for _ in range(steps):
        kind = rng.choices(kinds, weights)[0]
        live = sorted(set(nodes) - down)
        if kind == "produce":
            # One record, or a batch of two or three (so a follower's log end can fall inside
            # a leader's batch, as in issue 12's seed 286).
            n += 1
            size = rng.choice((1, 1, 2, 3))
            if size == 1:
                cmds.append({"cmd": "produce", "topic": "t", "acks": acks, "value": f"v{n}"})
            else:
                cmds.append({"cmd": "produce", "topic": "t", "acks": acks,
                             "values": [f"v{n}.{i}" for i in range(size)]})
        elif kind == "advance":
            cmds.append({"cmd": "advance", "ms": rng.choice([1, 2, 3, 5, 10, 30, 100, 300, 800])})
        elif kind == "crash" and len(down) < max_down and live:
            b = rng.choice(live)
            cmds.append({"cmd": "crash" if rng.random() < 0.8 else "shutdown", "broker": b})
            down.add(b)
        elif kind == "bounce" and live:
            # A bounce: crash and restart at the same instant (the KIP-101 follower restart) or
            # a few ms later, sometimes with a second broker crashing right after (KIP-101 step 7).
            b = rng.choice(live)
            cmds.append({"cmd": "crash", "broker": b})
            if rng.random() < 0.4:
                cmds.append({"cmd": "advance", "ms": rng.choice([1, 2, 5, 20])})
            cmds.append({"cmd": "restart", "broker": b})
            others = [x for x in live if x != b]
            if others and len(down) < max_down and rng.random() < 0.5:
                c = rng.choice(others)
                cmds.append({"cmd": "crash", "broker": c})
                down.add(c)
        elif kind == "restart" and down:
            b = rng.choice(sorted(down))
            cmds.append({"cmd": "restart", "broker": b})
            down.discard(b)
        elif kind == "consume":
            # May be refused (no leader right now): the harness then drops it from the log.
            cmds.append({"cmd": "consume", "topic": "t", "offset": 0})
        elif kind == "cut_link":
            a, b = rng.sample(nodes, 2)
            cmds.append({"cmd": "cut_link", "a": a, "b": b, "both": rng.random() < 0.6})
        elif kind == "client_cut":
            cmds.append({"cmd": "cut_link", "a": -1, "b": rng.choice(nodes), "both": rng.random() < 0.5})
        elif kind == "isolate":
            cmds.append({"cmd": "isolate", "broker": rng.choice(nodes)})
        elif kind in ("link_delay", "client_delay"):
            a = -1 if kind == "client_delay" else rng.choice(nodes)
            b = rng.choice([x for x in nodes if x != a])
            cmds.append({"cmd": "set_link_delay", "a": a, "b": b, "delay_ms": rng.choice([5, 20, 50, 200, 700]),
                         "both": rng.random() < 0.6})
        elif kind in ("drop", "client_drop"):
            a = -1 if kind == "client_drop" else rng.choice(nodes)
            b = rng.choice([x for x in nodes if x != a])
            cmds.append({"cmd": "set_drop_probability", "a": a, "b": b,
                         "probability": rng.choice([0.1, 0.3, 0.5, 0.9]), "both": rng.random() < 0.6})
        elif kind == "slow_follower":
            b = rng.choice(nodes)
            cmds.append({"cmd": "slow_follower", "broker": b, "delay_ms": rng.choice([50, 300, 1500])})
            slowed.add(b)
        elif kind == "pause_follower":
            b = rng.choice(nodes)
            if b in paused:
                cmds.append({"cmd": "resume_follower", "broker": b})
                paused.discard(b)
            else:
                cmds.append({"cmd": "pause_follower", "broker": b})
                paused.add(b)
        elif kind == "elect_preferred_leaders":
            cmds.append({"cmd": "elect_preferred_leaders"})
        elif kind == "heal":
            if rng.random() < 0.5:
                cmds.append({"cmd": "heal_all"})
            else:
                a, b = rng.sample([-1] + nodes, 2)
                cmds.append({"cmd": "heal_link", "a": a, "b": b, "both": rng.random() < 0.7})
    cmds.append({"cmd": "heal_all"})
    for b in sorted(down):
        cmds.append({"cmd": "restart", "broker": b})
    for b in sorted(paused):
        cmds.append({"cmd": "resume_follower", "broker": b})
    for b in sorted(slowed):
        cmds.append({"cmd": "slow_follower", "broker": b, "delay_ms": 0})
    cmds.append({"cmd": "advance", "ms": 1500})
    return cmds


# ---- the course's replication lessons (8, 9, 11) ------------------------------------------
# Kept in their own block (and registered into SCENARIOS here) so other scenario edits merge.

_RF3_SMALL_TIMERS = {"brokers": 3, "broker.session.timeout.ms": 3000, "broker.heartbeat.interval.ms": 500}

FETCH_LOOP = Scenario(
    name="fetch-loop",
    title="The follower fetch loop: LEO, remote LEO and the high watermark, one network hop at a time",
    summary="RF 3. One record travels from the producer to the leader, to both followers, and back as the "
            "followers' next fetch offsets; the leader's HW moves only when every ISR replica's LEO has passed "
            "the record, and the followers learn the new HW one fetch later.",
    config=_RF3_SMALL_TIMERS,
    steps=(
        _s("Topic t on brokers 0 (leader), 1 and 2, min.insync.replicas=2. Every network hop takes 1 ms here.",
           "create_topic", topic="t", partitions=1, assignment=[[0, 1, 2]], config={"min.insync.replicas": 2}),
        _s("Broker 0 leads at epoch 0. Each follower sends Fetch(offset 0): its LEO. With nothing to return, the "
           "leader parks the fetch for up to replica.fetch.wait.max.ms.", "advance", ms=1000),
        _s("The producer sends m1 with acks=all.", "produce", topic="t", acks="all", value="m1"),
        _s("m1 reaches the leader and is appended at offset 0: the leader's LEO is 1. Its HW stays 0, because the "
           "remote LEOs it holds for brokers 1 and 2 are still 0. The parked fetches wake up and carry m1 out.",
           "advance", ms=1),
        _s("Both followers append m1: LEO 1. A follower's HW is min(its LEO, the HW in the response) = 0.",
           "advance", ms=1),
        _s("Their next Fetch(offset 1) tells the leader both remote LEOs are 1. HW = min(1, 1, 1) = 1: m1 is "
           "committed and acks=all answers the producer. The response carries the HW read before this fetch "
           "moved it, so a follower may still show HW 0.", "advance", ms=1),
        _s("The next responses bring HW 1 to the followers.", "advance", ms=600),
        _s("m2 with acks=all.", "produce", topic="t", acks="all", value="m2"),
        _s("m3 follows straight after.", "produce", topic="t", acks="all", value="m3"),
        _s("Watch the same loop: leader LEO first, then the followers' LEOs, then the leader's HW, then theirs.",
           "advance", ms=3),
        _s("Settled: LEO 3 and HW 3 on every replica.", "advance", ms=600),
        _s("A consumer reads from the leader: only offsets below the HW are visible.", "consume", topic="t", offset=0),
    ),
    expected={m: Expected(lost=(), diverged=False, isr=(0, 1, 2), leader=0,
                          logs={b: ("m1", "m2", "m3") for b in (0, 1, 2)}, events=("fetch_sent", "remote_leo_updated", "high_watermark_changed"),
                          note="The HW is the smallest LEO in the ISR; followers learn it a fetch later.")
              for m in ("hw", "epoch")},
)


ACKS_COMPARED = Scenario(
    name="acks-compared",
    title="acks=0, acks=1 and acks=all on the same fault",
    summary="Both followers stall; the producer sends one record with each acks setting; the leader dies "
            "before the followers fetch. acks=0 never hears back, acks=1 was acknowledged and is lost, acks=all "
            "was never acknowledged, so nothing it was promised is lost.",
    config=_RF3_SMALL_TIMERS,
    steps=(
        _s("Topic t on brokers 0 (leader), 1 and 2, min.insync.replicas=2.",
           "create_topic", topic="t", partitions=1, assignment=[[0, 1, 2]], config={"min.insync.replicas": 2}),
        _s("Broker 0 leads at epoch 0.", "advance", ms=1000),
        _s("m0 with acks=all: replicated everywhere and acknowledged.", "produce", topic="t", acks="all", value="m0"),
        _s("Replicated.", "advance", ms=600),
        _s("Broker 1 stalls (a long GC pause, say): it stops fetching.", "pause_follower", broker=1),
        _s("Broker 2 stalls too. Both are still in the ISR: replica.lag.time.max.ms has not passed.",
           "pause_follower", broker=2),
        _s("Their fetches that were parked at the leader time out.", "advance", ms=600),
        _s("'zero' with acks=0: the producer does not wait for any answer.", "produce", topic="t", acks=0, value="zero"),
        _s("'one' with acks=1: the leader answers as soon as it has appended.", "produce", topic="t", acks=1,
           value="one"),
        _s("'all' with acks=all: the leader answers only when the HW passes it, i.e. when every ISR replica has "
           "it.", "produce", topic="t", acks="all", value="all"),
        _s("The leader has all three (LEO 4); the followers have none of them. 'one' is acknowledged, 'all' "
           "waits, 'zero' got no answer at all.", "advance", ms=100),
        _s("The leader crashes.", "crash", broker=0),
        _s("The followers wake up.", "resume_follower", broker=1),
        _s("So does broker 2.", "resume_follower", broker=2),
        _s("The controller fences broker 0 and elects broker 1 (in the ISR) at epoch 1. Its log ends at m0: the "
           "acknowledged 'one' is gone, and the checker flags it. 'all' is still waiting for an answer.",
           "advance", ms=10000),
        _s("Broker 0 restarts and follows broker 1, cutting its three extra records.", "restart", broker=0),
        _s("All replicas agree on [m0]. The acks=all request for 'all' never got an answer; when "
           "request.timeout.ms (30 s) runs out the producer reports it as failed and can retry it.",
           "advance", ms=20000),
    ),
    expected={m: Expected(lost=("one",), diverged=False, isr=(0, 1, 2), leader=1,
                          logs={b: ("m0",) for b in (0, 1, 2)},
                          note="Only acks=all ties the acknowledgement to replication; acks=1 can lose acknowledged "
                               "writes when the leader dies.")
              for m in ("hw", "epoch")},
)


CLEAN_ELECTION = Scenario(
    name="clean-election",
    title="A clean leader election: the new leader comes from the ISR and nothing committed is lost",
    summary="RF 3. The leader dies; the controller (on broker 0, which stays up) fences it after the session timeout and elects the first "
            "live ISR replica in assignment order at a new epoch; the old leader returns as a follower and "
            "preferred-leader election moves leadership back.",
    config=_RF3_SMALL_TIMERS,
    steps=(
        _s("Topic t on brokers 1, 2, 0 in that order (preferred leader 1), min.insync.replicas=2. Broker 0 is the "
           "active controller.",
           "create_topic", topic="t", partitions=1, assignment=[[1, 2, 0]], config={"min.insync.replicas": 2}),
        _s("Broker 1 leads at epoch 0.", "advance", ms=1000),
        _s("m1 with acks=all.", "produce", topic="t", acks="all", value="m1"),
        _s("m2 with acks=all.", "produce", topic="t", acks="all", value="m2"),
        _s("Both committed on all three replicas.", "advance", ms=1000),
        _s("The leader, broker 1, crashes.", "crash", broker=1),
        _s("After broker.session.timeout.ms the controller fences broker 1, removes it from the ISR and elects "
           "broker 2 — the first replica in assignment order that is alive and in the ISR — at epoch 1.",
           "advance", ms=5000),
        _s("m3 goes to the new leader.", "produce", topic="t", acks="all", value="m3"),
        _s("Committed by brokers 2 and 0 (the ISR is {2, 0}, enough for min.insync.replicas=2).",
           "advance", ms=1000),
        _s("Broker 1 restarts and follows broker 2; it keeps m1 and m2 (both below where epoch 0 ended) and copies "
           "m3.", "restart", broker=1),
        _s("It catches up and rejoins the ISR.", "advance", ms=3000),
        _s("Preferred leader election moves leadership back to broker 1 at epoch 2.", "elect_preferred_leaders"),
        _s("Done: every acknowledged record is on every replica.", "advance", ms=1000),
    ),
    expected={m: Expected(lost=(), diverged=False, isr=(1, 2, 0), leader=1,
                          logs={b: ("m1", "m2", "m3") for b in (0, 1, 2)}, events=("leader_elected",),
                          note="An election from the ISR keeps every committed record.")
              for m in ("hw", "epoch")},
)

SCENARIOS.update({s.name: s for s in (FETCH_LOOP, ACKS_COMPARED, CLEAN_ELECTION)})
SCENARIOS.update({s.name: s for s in GROUP_SCENARIOS})   # lessons 12 and 13: consumer groups
SCENARIOS.update({s.name: s for s in QUORUM_SCENARIOS})  # lesson 17: the controller quorum (KRaft)
