"""The KRaft lesson's scenario (lesson 17, "The controller quorum"): three dedicated controller
nodes (100, 101, 102) keep ``__cluster_metadata`` by Raft and three brokers (0, 1, 2) fetch it as
observers. Kept in a module of its own, registered into ``SCENARIOS`` by
:mod:`engine.cluster.scenarios`, so other scenario edits merge.

Dedicated mode, not combined, because it keeps the two quorums apart on the picture: killing
controllers kills no partition replica, so "metadata frozen while data flows" is what a learner
sees and nothing else (in combined mode the same crash would also take a broker's replicas).
"""
from __future__ import annotations

from .scenario import Expected, Scenario, step

__all__ = ["CONTROLLER_QUORUM", "QUORUM_SCENARIOS"]

_s = step

_CONFIG = {"brokers": 3, "controllers": 3, "broker.session.timeout.ms": 3000, "broker.heartbeat.interval.ms": 500,
           "replica.high.watermark.checkpoint.interval.ms": 100,
           # Followers' idle fetches parked 3 s rather than 0.5 s: the data path stays quiet while
           # the quorum's messages travel on the picture (a fetch still returns at once on an append).
           "replica.fetch.wait.max.ms": 3000, "replica.lag.time.max.ms": 10000,
           # Snapshots within the lesson's minute: by time (20 s since a node's last one, at its next
           # applied record) rather than by 20 MiB, and no retention, so the log cleaner (every 60 s)
           # moves the log start to the newest snapshot.
           "metadata.log.max.snapshot.interval.ms": 20000, "metadata.max.retention.bytes": 0}

CONTROLLER_QUORUM = Scenario(
    name="controller-quorum",
    title="The controller quorum: metadata as a Raft log that brokers fetch",
    summary="Three controllers elect a leader; a topic is created as records in __cluster_metadata and the brokers "
            "fetch and apply them. The active controller dies and an election at a higher epoch replaces it; then "
            "a majority of controllers dies and metadata freezes while produce goes on; a controller returns and "
            "metadata moves again.",
    config=_CONFIG,
    steps=(
        _s("Create topic t (RF 3, min.insync.replicas 2): the active controller appends TopicRecord, ConfigRecord "
           "and PartitionRecord to the metadata log.",
           "create_topic", topic="t", partitions=1, assignment=[[0, 1, 2]], config={"min.insync.replicas": 2}),
        _s("The records commit on a majority of controllers; the brokers fetch them, apply them, and broker 0 "
           "starts leading t-0.", "advance", ms=1000),
        _s("m1 with acks=all.", "produce", topic="t", partition=0, acks="all", value="m1"),
        _s("Acknowledged.", "advance", ms=1000),
        _s("The active controller crashes.", "crash", broker=101),
        _s("The other controllers' fetches time out; they run pre-vote, then a vote at a higher epoch; the winner "
           "sends BeginQuorumEpoch and the brokers fetch from it.", "advance", ms=4000),
        _s("A second controller, a follower, crashes: the leader is one of three voters.", "crash", broker=102),
        _s("The leader cannot reach a majority of voters and resigns (check quorum): there is no active controller.",
           "advance", ms=4000),
        _s("m2 with acks=all.", "produce", topic="t", partition=0, acks="all", value="m2"),
        _s("Acknowledged: the data path does not need the controller.", "advance", ms=1000),
        _s("Broker 0, the leader of t-0, crashes.", "crash", broker=0),
        _s("Nobody elects a new leader: there is no controller to write the PartitionChangeRecord.",
           "advance", ms=5000),
        _s("Controller 101 restarts.", "restart", broker=101),
        _s("Two of three voters: an election, a higher epoch; the new controller fences broker 0 and elects a new "
           "leader for t-0.", "advance", ms=6000),
        _s("m3 with acks=all to the new leader.", "produce", topic="t", partition=0, acks="all", value="m3"),
        _s("Acknowledged.", "advance", ms=1000),
        _s("A minute passes. Each running node has written a snapshot of its metadata, "
           "<offset>-<epoch>.checkpoint; the log cleaner moves each log's start to its snapshot and deletes what "
           "is before it.", "advance", ms=60000),
        _s("Controller 102 restarts.", "restart", broker=102),
        _s("Broker 0 restarts too.", "restart", broker=0),
        _s("They fetch from the leader, below its log start: each downloads its snapshot with FetchSnapshot and "
           "fetches the rest of the metadata log.", "advance", ms=500),
        _s("Broker 0 registers again, is unfenced and catches up with the partition.", "advance", ms=7500),
    ),
    expected={m: Expected(lost=(), diverged=False, isr=(0, 1, 2), logs={b: ("m1", "m2", "m3") for b in (0, 1, 2)},
                          events=("controller_changed", "metadata_applied", "raft_vote_sent", "raft_begin_epoch_sent"),
                          note="Metadata is a replicated log: a majority of controllers must be up to change it, "
                               "not to move data.")
              for m in ("hw", "epoch")},
    seed=17,
)

QUORUM_SCENARIOS = (CONTROLLER_QUORUM,)
