"""Consumer-group scenarios for lessons 12 and 13 (:mod:`engine.cluster.scenarios` registers them).

Lesson 12 plays the same group under each assignor (``group-range``, ``group-roundrobin``,
``group-sticky``): two consumers, a third joins, a fourth joins and finds no partition
(more consumers than partitions: seed 001), one crashes and is removed after its session
timeout, one leaves. Lesson 13 shows where a group resumes after a crash: committing after
processing (at-least-once: duplicates), committing before processing (at-most-once:
losses) and auto-commit.
"""
from __future__ import annotations

from .scenario import Expected, Scenario, step as _s

__all__ = ["GROUP_SCENARIOS", "ASSIGNORS"]

ASSIGNORS = ("range", "roundrobin", "sticky")

# Short group timers so a lesson's steps stay small; the relations Kafka relies on hold
# (heartbeat interval well below the session timeout).
_GROUP_CONFIG = {"brokers": 3, "broker.session.timeout.ms": 3000, "broker.heartbeat.interval.ms": 500}
_TIMERS = dict(session_timeout_ms=6000, heartbeat_interval_ms=1000)
_REPLICATED = _s("The followers copy them and the high watermark passes them: consumers can read them.", "advance",
                 ms=1000)
_COMMIT_LANDS = _s("The coordinator appends the commit to __consumer_offsets; once replicated it answers.", "advance",
                   ms=1000)


def _membership(strategy: str) -> Scenario:
    join = dict(group="billing", topics=["orders"], strategies=[strategy], auto_offset_reset="earliest", **_TIMERS)
    return Scenario(
        name=f"group-{strategy}",
        title=f"One group, three partitions, the {strategy} assignor",
        summary="Consumers join, one more than there are partitions, one crashes and one leaves; each change is "
                "a rebalance: JoinGroup, the leader's assignment, SyncGroup.",
        config=_GROUP_CONFIG,
        steps=(
            _s("Topic orders with three partitions, replication factor 3; __consumer_offsets gets one partition "
               "so one broker coordinates every group.", "configure_groups", offsets_topic_num_partitions=1,
               group_initial_rebalance_delay_ms=0),
            _s("Create the topic.", "create_topic", topic="orders", partitions=3, replication_factor=3),
            *(_s(f"Records for partition {p}.", "produce", topic="orders", partition=p, count=2 + p) for p in range(3)),
            _s("Consumer c1 joins group billing: FindCoordinator, then JoinGroup.", "consumer_join", name="c1",
               **join),
            _s("c1 is alone: it leads the group and takes every partition.", "advance", ms=2000),
            _s(f"c2 joins: a rebalance. The leader computes the {strategy} assignment for both.", "consumer_join",
               name="c2", **join),
            _s("JoinGroup, SyncGroup: generation 2 is stable.", "advance", ms=3000),
            _s("c3 joins: three consumers, three partitions.", "consumer_join", name="c3", **join),
            _s("Each consumer owns one partition.", "advance", ms=3000),
            _s("c4 joins: four consumers for three partitions.", "consumer_join", name="c4", **join),
            _s("One of the four gets nothing: a partition is never shared inside a group.", "advance", ms=3000),
            _s("c2 crashes: no LeaveGroup, so the coordinator only notices when its heartbeats stop.",
               "consumer_crash", name="c2"),
            _s("After session.timeout.ms the coordinator removes c2 and the group rebalances.", "advance",
               ms=9000),
            _s("c1 closes and sends LeaveGroup: the group rebalances at once.", "consumer_leave", name="c1"),
            _s("Two consumers share the three partitions again.", "advance", ms=3000),
        ),
        expected={m: Expected(note="Inside a group each partition has one owner per generation; a consumer more "
                                   "than there are partitions stays idle.") for m in ("hw", "epoch")},
    )


def _commits(name: str, title: str, summary: str, auto: bool, commit_first: bool, note: str) -> Scenario:
    join = dict(group="billing", topics=["orders"], auto_offset_reset="earliest", enable_auto_commit=auto,
                auto_commit_interval_ms=5000, **_TIMERS)
    if auto:
        work = (
            _s("c1 polls records 0–9 and processes them.", "consumer_poll", name="c1"),
            _s("Five seconds pass (auto.commit.interval.ms).", "advance", ms=5000),
            _s("This poll auto-commits offset 10 first (what the previous poll returned), then returns nothing new.",
               "consumer_poll", name="c1"),
            _COMMIT_LANDS,
            _s("Five more records arrive.", "produce", topic="orders", count=5),
            _REPLICATED,
            _s("c1 polls and processes 10–14. The auto-commit of 15 is due only at its next poll, 5 s from "
               "the last commit.", "consumer_poll", name="c1"),
        )
    elif commit_first:
        work = (
            _s("c1 polls records 0–9.", "consumer_poll", name="c1"),
            _s("It commits at once, before processing them (at-most-once).", "consumer_commit", name="c1"),
            _COMMIT_LANDS,
            _s("Five more records arrive.", "produce", topic="orders", count=5),
            _REPLICATED,
            _s("c1 polls 10–14.", "consumer_poll", name="c1"),
            _s("It commits 15 before it processes them.", "consumer_commit", name="c1"),
            _COMMIT_LANDS,
        )
    else:
        work = (
            _s("c1 polls records 0–9.", "consumer_poll", name="c1"),
            _s("It processes them, then commits offset 10 (at-least-once).", "consumer_commit", name="c1"),
            _COMMIT_LANDS,
            _s("Five more records arrive.", "produce", topic="orders", count=5),
            _REPLICATED,
            _s("c1 polls 10–14 and starts processing them; it has not committed yet.", "consumer_poll", name="c1"),
        )
    return Scenario(
        name=name, title=title, summary=summary, config=_GROUP_CONFIG,
        steps=(
            _s("One partition, replication factor 3; __consumer_offsets with one partition.", "configure_groups",
               offsets_topic_num_partitions=1, group_initial_rebalance_delay_ms=0),
            _s("Create topic orders.", "create_topic", topic="orders", partitions=1, replication_factor=3),
            _s("Ten records.", "produce", topic="orders", count=10),
            _REPLICATED,
            _s("Consumer c1 joins group billing.", "consumer_join", name="c1", **join),
            _s("It owns orders-0; nothing is committed yet, so auto.offset.reset=earliest starts it at 0.",
               "advance", ms=1000),
            *work,
            _s("c1 crashes before its next commit.", "consumer_crash", name="c1"),
            _s("The coordinator removes it after session.timeout.ms.", "advance", ms=7000),
            _s("c1 is restarted as a new member of the group.", "consumer_join", name="c1", group="billing"),
            _s("It owns orders-0 again and starts at the group's committed offset.", "advance", ms=1000),
            _s("Its first poll shows where the group resumed.", "consumer_poll", name="c1"),
            _s("It commits.", "consumer_commit", name="c1"),
            _COMMIT_LANDS,
        ),
        expected={m: Expected(note=note) for m in ("hw", "epoch")},
    )


GROUP_SCENARIOS = tuple(_membership(s) for s in ASSIGNORS) + (
    _commits("commit-after-processing", "Commit after processing: at-least-once, duplicates after a crash",
             "Process, then commit: a crash between the two re-delivers what was processed but not committed.",
             auto=False, commit_first=False,
             note="The restarted consumer resumes at the committed offset 10: records 10-14 are processed twice."),
    _commits("commit-before-processing", "Commit before processing: at-most-once, losses after a crash",
             "Commit, then process: a crash between the two skips what was committed but not processed.",
             auto=False, commit_first=True,
             note="The restarted consumer resumes at 15: records 10-14 were never processed."),
    _commits("auto-commit", "Auto-commit: the next poll commits the previous poll's records",
             "enable.auto.commit commits at a poll, every auto.commit.interval.ms: a crash in between re-delivers "
             "everything since the last auto-commit.", auto=True, commit_first=False,
             note="The restarted consumer resumes at the last auto-committed offset 10: 10-14 come again."),
)
