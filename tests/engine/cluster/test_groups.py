"""Consumers and consumer groups on the replicated cluster: the classic protocol, rebalances
on join/leave/crash/slow heartbeats/poll timeout/partition growth, committed offsets in
``__consumer_offsets`` (Kafka's schemas, compacted, surviving coordinator failover), lag,
delivery semantics, and seeded fault schedules checking group ownership."""
from __future__ import annotations

import random

import pytest

from engine.cluster.cluster import Cluster
from engine.cluster.commands import apply_command
from engine.cluster.config import ClusterConfig
from engine.cluster.consumer import ownership_findings
from engine.disk import Disk
from engine.errors import InvalidRequestError, KafkaError, UnknownTopicOrPartitionError
from engine.group.java import partition_for_group
from engine.group.offsets import OFFSETS_TOPIC, decode_key, decode_value

GROUP_COMMAND_SAMPLES = [
    {"cmd": "configure_groups", "offsets_topic_num_partitions": 3},
    {"cmd": "consumer_join", "name": "c1", "group": "g", "topics": ["t"], "strategies": ["roundrobin"]},
    {"cmd": "consumer_poll", "name": "c1", "max_records": 10},
    {"cmd": "consumer_commit", "name": "c1", "offsets": {"t-0": 3}},
    {"cmd": "consumer_leave", "name": "c1"},
    {"cmd": "consumer_crash", "name": "c1"},
    {"cmd": "consumer_slow_heartbeats", "name": "c1", "delay_ms": 100},
    {"cmd": "add_partitions", "topic": "t", "count": 4},
    {"cmd": "run_cleaner"},
]


def A(cluster, **cmd):
    return apply_command(cluster, cmd)


def make(tmp_path, partitions=6, brokers=3, seed=1, offsets_partitions=3, records=2):
    c = Cluster(Disk(tmp_path / "data"), ClusterConfig(brokers=brokers), seed=seed)
    A(c, cmd="advance", ms=500)
    A(c, cmd="create_topic", topic="t", partitions=partitions)
    A(c, cmd="configure_groups", offsets_topic_num_partitions=offsets_partitions)
    for p in range(partitions):
        for i in range(records):
            A(c, cmd="produce", topic="t", partition=p, values=[f"p{p}-m{i}"])
    A(c, cmd="advance", ms=200)
    return c


def join(c, name, group="g", **kw):
    kw.setdefault("auto_offset_reset", "earliest")
    return A(c, cmd="consumer_join", name=name, group=group, topics=kw.pop("topics", ["t"]), **kw)


def owners(c, group="g"):
    out = {}
    for name, con in sorted(c.groups.consumers.items()):
        if con.alive and con.group == group:
            for tp in con.owned:
                out.setdefault(tp, []).append(name)
    return out


def all_partitions(c, topic="t"):
    return {(topic, p) for p in range(len(c.controller.topics[topic].partitions))}


def coordinator_group(c, group="g"):
    found = c.groups.find_coordinator(group)
    return c.groups.coordinator(*found).groups[group]


def test_coordinator_is_the_leader_of_the_groups_offsets_partition(tmp_path):
    c = make(tmp_path, offsets_partitions=50)
    r = join(c, "c1", group="my-group")
    assert r["offsets_partition"] == partition_for_group("my-group", 50) == 12
    A(c, cmd="advance", ms=4000)
    ev = c.events.of_kind("coordinator_found")[0]
    assert (ev.partition, ev.coordinator) == (12, c.controller.partition(OFFSETS_TOPIC, 12).leader)
    assert c.controller.topic_config(OFFSETS_TOPIC).cleanup_policy == "compact"


def test_join_sync_stable_and_seed_001_extra_members_sit_idle(tmp_path):
    c = make(tmp_path, partitions=3)
    for n in ("a", "b", "c", "d", "e"):
        join(c, n, strategies=["range"])
    A(c, cmd="advance", ms=4000)
    g = coordinator_group(c)
    assert g.state == "Stable" and g.generation == 1 and g.protocol == "range"
    own = owners(c)
    assert set(own) == all_partitions(c) and all(len(v) == 1 for v in own.values())
    idle = [n for n, con in c.groups.consumers.items() if not con.owned]
    assert len(idle) == 2  # seed 001: one partition is read by one member; extra members are idle
    # KIP-394: the first JoinGroup gets MEMBER_ID_REQUIRED and the member id, the second joins
    assert [e.member for e in c.events.of_kind("join_group_sent") if e.consumer == "a"] == ["", "a-1"]
    kinds = [e.kind for e in c.events.of_kind("join_group_sent", "rebalance_started", "join_group_completed",
                                             "sync_group_sent", "sync_group_completed", "partitions_assigned")]
    assert kinds.index("join_group_completed") < kinds.index("sync_group_completed") < kinds.index(
        "partitions_assigned")


def test_the_initial_rebalance_delay_waits_for_more_members(tmp_path):
    c = make(tmp_path)
    join(c, "a")
    A(c, cmd="advance", ms=2000)
    join(c, "b")
    A(c, cmd="advance", ms=2500)  # the delay restarted with b: not done 3 s after a
    assert coordinator_group(c).state == "PreparingRebalance"
    A(c, cmd="advance", ms=1000)
    g = coordinator_group(c)
    assert g.state == "Stable" and g.generation == 1 and len(g.members) == 2


def test_leave_rebalances_at_once_crash_after_the_session_timeout(tmp_path):
    c = make(tmp_path)
    for n in ("a", "b", "c"):
        join(c, n, session_timeout_ms=10000)
    A(c, cmd="advance", ms=4000)
    A(c, cmd="consumer_leave", name="c")
    A(c, cmd="advance", ms=3500)  # the others learn it from their next heartbeat
    assert coordinator_group(c).generation == 2 and set(owners(c)) == all_partitions(c)
    A(c, cmd="consumer_crash", name="b")
    last_heartbeat = coordinator_group(c).members["b-2"].last_heartbeat_ms
    A(c, cmd="advance", ms=last_heartbeat + 10000 - c.now_ms() - 1)
    g = coordinator_group(c)
    assert g.generation == 2 and "b-2" in g.members  # still inside its session
    A(c, cmd="advance", ms=6000)
    g = coordinator_group(c)
    assert "b-2" not in g.members and g.generation == 3 and g.state == "Stable"
    removed = c.events.of_kind("member_removed")
    assert [(e.member, e.reason) for e in removed] == [("c-3", "leave_group"), ("b-2", "session_timeout")]
    assert sorted(owners(c)) == sorted(all_partitions(c)) and set(sum(owners(c).values(), [])) == {"a"}


def test_slow_heartbeats_past_the_session_timeout_remove_the_member(tmp_path):
    c = make(tmp_path)
    join(c, "a", session_timeout_ms=10000)
    join(c, "b", session_timeout_ms=10000)
    A(c, cmd="advance", ms=4000)
    A(c, cmd="consumer_slow_heartbeats", name="b", delay_ms=12000)
    A(c, cmd="advance", ms=20000)
    assert any(e.reason == "session_timeout" for e in c.events.of_kind("member_removed"))
    assert not ownership_findings(c.groups)
    A(c, cmd="consumer_slow_heartbeats", name="b", delay_ms=0)
    A(c, cmd="advance", ms=30000)
    g = coordinator_group(c)
    assert g.state == "Stable" and len(g.members) == 2 and set(owners(c)) == all_partitions(c)


def test_max_poll_interval_makes_a_consumer_leave_and_poll_brings_it_back(tmp_path):
    c = make(tmp_path)
    join(c, "a", max_poll_interval_ms=20000)
    join(c, "b", max_poll_interval_ms=20000)
    A(c, cmd="advance", ms=4000)
    for _ in range(5):
        A(c, cmd="consumer_poll", name="a")
        A(c, cmd="advance", ms=5000)
    stopped = c.events.of_kind("consumer_stopped")
    assert [(e.consumer, e.how) for e in stopped] == [("b", "poll_timeout")]
    assert set(sum(owners(c).values(), [])) == {"a"} and set(owners(c)) == all_partitions(c)
    A(c, cmd="consumer_poll", name="b")  # rejoins
    A(c, cmd="consumer_poll", name="a")
    A(c, cmd="advance", ms=4000)
    assert {n for v in owners(c).values() for n in v} == {"a", "b"}


def test_cooperative_sticky_moves_only_what_must_move_in_two_rebalances(tmp_path):
    c = make(tmp_path)
    join(c, "a", strategies=["cooperative-sticky"])
    join(c, "b", strategies=["cooperative-sticky"])
    A(c, cmd="advance", ms=4000)
    before = {n: list(con.owned) for n, con in c.groups.consumers.items()}
    join(c, "c", strategies=["cooperative-sticky"])
    A(c, cmd="advance", ms=4000)
    g = coordinator_group(c)
    assert g.protocol == "cooperative-sticky" and g.generation == 3  # two rebalances
    after = {n: list(con.owned) for n, con in c.groups.consumers.items()}
    assert all(set(after[n]) <= set(before[n]) for n in ("a", "b"))  # they kept the rest throughout
    assert len(after["c"]) == 2 and set(owners(c)) == all_partitions(c)
    revoked = c.events.of_kind("partitions_revoked")
    assert {e.consumer for e in revoked} == {"a", "b"} and all(len(e.partitions) == 1 for e in revoked)


def test_partition_count_change_rebalances(tmp_path):
    c = make(tmp_path, partitions=2)
    join(c, "a")
    join(c, "b")
    A(c, cmd="advance", ms=4000)
    A(c, cmd="add_partitions", topic="t", count=4)
    A(c, cmd="advance", ms=8000)
    assert set(owners(c)) == all_partitions(c) and len(all_partitions(c)) == 4
    assert any(e.reason == "metadata_changed" for e in c.events.of_kind("rebalance_started"))
    with pytest.raises(InvalidRequestError, match="can only grow"):
        A(c, cmd="add_partitions", topic="t", count=3)


def committed_records(c, group="g"):
    p = partition_for_group(group, c.groups.offsets_partitions)
    leader = c.controller.partition(OFFSETS_TOPIC, p).leader
    log = c.brokers[leader].partitions[(OFFSETS_TOPIC, p)].log
    return [(decode_key(r.key), decode_value(r.value), r.offset) for r in log.records()
            if decode_key(r.key) is not None]  # offset commits only (group metadata records skipped)


def test_commits_are_kafka_schema_records_and_lag_is_hw_minus_committed(tmp_path):
    c = make(tmp_path, records=5)
    join(c, "a", enable_auto_commit=False)
    A(c, cmd="advance", ms=4000)
    got = A(c, cmd="consumer_poll", name="a", max_records=3)
    assert [r["offset"] for r in got["records"]] == [0, 1, 2]
    A(c, cmd="consumer_commit", name="a")
    A(c, cmd="advance", ms=200)
    recs = committed_records(c)
    assert [(k.group, k.topic, k.partition, v.offset) for k, v, _ in recs] == [("g", "t", 0, 3)]
    raw = [r for r in c.brokers[c.controller.partition(OFFSETS_TOPIC, partition_for_group("g", 3)).leader]
           .partitions[(OFFSETS_TOPIC, partition_for_group("g", 3))].log.records() if r.key[:2] == b"\x00\x01"][0]
    assert raw.key[:2] == b"\x00\x01" and raw.value[:2] == b"\x00\x03"  # key v1, value v3
    assert c.groups.lag("g") == {"t-0": {"committed": 3, "high_watermark": 5, "lag": 2}}
    with pytest.raises(InvalidRequestError, match="not a known topic-partition"):
        A(c, cmd="consumer_commit", name="a", offsets={"t-99": 1})


def test_offsets_survive_a_coordinator_failover_and_the_group_resumes_there(tmp_path):
    c = make(tmp_path, partitions=1, records=6)
    join(c, "a", enable_auto_commit=False)
    A(c, cmd="advance", ms=4000)
    A(c, cmd="consumer_poll", name="a", max_records=4)
    A(c, cmd="consumer_commit", name="a")
    A(c, cmd="advance", ms=300)
    old = c.groups.find_coordinator("g")[0]
    A(c, cmd="crash", broker=old)
    A(c, cmd="consumer_crash", name="a")
    A(c, cmd="advance", ms=20000)
    new = c.groups.find_coordinator("g")[0]
    assert new != old
    join(c, "a", enable_auto_commit=False)
    # the new coordinator loaded the group with the crashed process's member (its session
    # restarted at load): the rejoin completes once that session expires
    A(c, cmd="advance", ms=50000)
    got = A(c, cmd="consumer_poll", name="a")
    assert [r["offset"] for r in got["records"]] == [4, 5]
    loaded = [e for e in c.events.of_kind("offsets_loaded") if e.coordinator == new]
    assert loaded and "g" in loaded[-1].groups
    resets = [e for e in c.events.of_kind("position_reset") if e.consumer == "a"]
    assert (resets[-1].offset, resets[-1].source) == (4, "committed")


def test_compaction_keeps_only_the_latest_commit_per_partition(tmp_path):
    c = make(tmp_path, partitions=1, records=1)
    A(c, cmd="set_config", scope="topic", target=OFFSETS_TOPIC,
      changes={"segment.bytes": 400, "min.cleanable.dirty.ratio": 0.01}) if OFFSETS_TOPIC in \
        c.controller.topics else None
    join(c, "a", enable_auto_commit=False)
    A(c, cmd="advance", ms=4000)
    A(c, cmd="set_config", scope="topic", target=OFFSETS_TOPIC,
      changes={"segment.bytes": 400, "min.cleanable.dirty.ratio": 0.01})
    for i in range(30):
        A(c, cmd="consumer_commit", name="a", offsets={"t-0": i})
        A(c, cmd="advance", ms=100)
    before = committed_records(c)
    assert len(before) == 30
    out = A(c, cmd="run_cleaner")
    assert out["cleaned"]
    after = committed_records(c)
    assert len(after) < 30 and after[-1][1].offset == 29
    below = [v.offset for k, v, o in after[:-1]]
    assert len(below) == len(set(below))
    assert c.groups.committed("g") == {("t", 0): 29}


def test_at_least_once_with_a_crash_between_processing_and_commit(tmp_path):
    c = make(tmp_path, partitions=1, records=4)
    join(c, "a", enable_auto_commit=False)
    A(c, cmd="advance", ms=4000)
    first = A(c, cmd="consumer_poll", name="a")["records"]  # processed 0..3 ...
    A(c, cmd="consumer_crash", name="a")                       # ... crash before the commit
    A(c, cmd="advance", ms=50000)
    join(c, "a", enable_auto_commit=False)
    A(c, cmd="advance", ms=4000)
    again = A(c, cmd="consumer_poll", name="a")["records"]
    assert [r["offset"] for r in again] == [r["offset"] for r in first] == [0, 1, 2, 3]  # duplicates


def test_at_most_once_when_committing_before_processing(tmp_path):
    c = make(tmp_path, partitions=1, records=4)
    join(c, "a", enable_auto_commit=False)
    A(c, cmd="advance", ms=4000)
    got = A(c, cmd="consumer_poll", name="a")["records"]
    A(c, cmd="consumer_commit", name="a")  # commit first ...
    A(c, cmd="advance", ms=300)
    A(c, cmd="consumer_crash", name="a")   # ... and die before processing: 0..3 are lost
    A(c, cmd="advance", ms=50000)
    join(c, "a", enable_auto_commit=False)
    A(c, cmd="advance", ms=4000)
    assert A(c, cmd="consumer_poll", name="a")["records"] == [] and len(got) == 4


def test_auto_commit_commits_at_the_next_poll_after_the_interval(tmp_path):
    c = make(tmp_path, partitions=1, records=3)
    join(c, "a", auto_commit_interval_ms=5000)
    A(c, cmd="advance", ms=4000)
    A(c, cmd="consumer_poll", name="a")
    A(c, cmd="advance", ms=6000)
    assert not c.events.of_kind("offset_committed")
    A(c, cmd="consumer_poll", name="a")
    A(c, cmd="advance", ms=300)
    assert [(e.offset, e.partition) for e in c.events.of_kind("offset_committed")] == [(3, 0)]


def test_auto_offset_reset_latest_starts_at_the_high_watermark(tmp_path):
    c = make(tmp_path, partitions=1, records=3)
    join(c, "a", auto_offset_reset="latest")
    A(c, cmd="advance", ms=4000)
    assert A(c, cmd="consumer_poll", name="a")["records"] == []
    A(c, cmd="produce", topic="t", values=["new"])
    A(c, cmd="advance", ms=300)
    assert [r["value"] for r in A(c, cmd="consumer_poll", name="a")["records"]] == ["new"]


@pytest.mark.parametrize("cmd, error, message", [
    ({"cmd": "consumer_poll", "name": "ghost"}, InvalidRequestError, "unknown consumer 'ghost'"),
    ({"cmd": "consumer_join", "name": "x", "group": "g", "topics": ["nope"]}, UnknownTopicOrPartitionError,
     "unknown topic 'nope'"),
    ({"cmd": "consumer_join", "name": "x", "group": "g", "topics": ["t"], "strategies": ["fair"]},
     InvalidRequestError, "unknown assignment strategy 'fair'"),
    ({"cmd": "consumer_join", "name": "x", "group": "g", "topics": ["t"], "heartbeat_interval_ms": 50000},
     InvalidRequestError, "must be lower than session.timeout.ms"),
    ({"cmd": "consumer_join", "name": "x", "group": "g", "topics": ["t"], "auto_offset_reset": "middle"},
     InvalidRequestError, "must be one of"),
    ({"cmd": "configure_groups"}, InvalidRequestError, "already in use"),
])
def test_bad_group_commands_are_refused_and_change_nothing(tmp_path, cmd, error, message):
    c = make(tmp_path)
    join(c, "a")
    A(c, cmd="advance", ms=4000)
    digest_before = c.groups.state()
    with pytest.raises(error, match=message):
        apply_command(c, cmd)
    assert c.groups.state() == digest_before


def test_invalid_session_timeout_is_refused_by_the_coordinator(tmp_path):
    c = make(tmp_path)
    join(c, "a", session_timeout_ms=1000, heartbeat_interval_ms=500)
    A(c, cmd="advance", ms=4000)
    assert c.groups.consumers["a"].status == "error:INVALID_SESSION_TIMEOUT"


def test_same_seed_same_commands_same_event_stream(tmp_path):
    digests = []
    for i in range(2):
        c = make(tmp_path / str(i), seed=7)
        join(c, "a")
        join(c, "b", strategies=["cooperative-sticky", "range"])
        A(c, cmd="advance", ms=5000)
        A(c, cmd="consumer_poll", name="a")
        A(c, cmd="consumer_crash", name="b")
        A(c, cmd="advance", ms=50000)
        digests.append(c.events.digest())
    assert digests[0] == digests[1]


# ---- seeded fault schedules ---------------------------------------------------------------------

def run_schedule(tmp_path, seed, steps=25, network=False):
    """``network``: also drop and delay the client's traffic to and from the brokers (the
    group requests and their answers go through the network and time out)."""
    rnd = random.Random(seed)
    strategy = rnd.choice([["range"], ["roundrobin"], ["sticky"], ["cooperative-sticky"]])
    c = make(tmp_path, partitions=rnd.randint(2, 7), seed=seed, records=1)
    names = ["a", "b", "c", "d"]
    for n in names[:2]:
        join(c, n, strategies=strategy, session_timeout_ms=10000, heartbeat_interval_ms=3000,
             max_poll_interval_ms=60000)
    findings = []
    for _ in range(steps):
        op = rnd.choice(["join", "leave", "crash", "slow", "poll", "advance", "advance", "broker", "commit"]
                        + (["drop", "delay", "heal"] if network else []))
        n = rnd.choice(names)
        con = c.groups.consumers.get(n)
        try:
            if op == "join" and (con is None or not con.alive):
                join(c, n, strategies=strategy, session_timeout_ms=10000, heartbeat_interval_ms=3000,
                     max_poll_interval_ms=60000)
            elif op == "leave" and con is not None and con.alive:
                A(c, cmd="consumer_leave", name=n)
            elif op == "crash" and con is not None and con.alive:
                A(c, cmd="consumer_crash", name=n)
            elif op == "slow" and con is not None:
                A(c, cmd="consumer_slow_heartbeats", name=n, delay_ms=rnd.choice([0, 0, 4000, 12000]))
            elif op == "poll" and con is not None and con.alive:
                A(c, cmd="consumer_poll", name=n)
            elif op == "commit" and con is not None and con.alive:
                A(c, cmd="consumer_commit", name=n)
            elif op == "drop":
                A(c, cmd="set_drop_probability", a=-1, b=rnd.randrange(3), probability=rnd.choice([0.2, 0.5, 1.0]),
                  both=rnd.choice([True, False]))
            elif op == "delay":
                A(c, cmd="set_link_delay", a=rnd.randrange(3), b=-1, delay_ms=rnd.choice([50, 2000, 40000]),
                  both=rnd.choice([True, False]))
            elif op == "heal":
                A(c, cmd="heal_all")
            elif op == "broker":
                b = rnd.randrange(3)
                A(c, cmd="crash" if c.brokers[b].alive else "restart", broker=b)
        except KafkaError:
            pass
        for _ in range(rnd.randint(1, 8)):
            A(c, cmd="advance", ms=rnd.choice([100, 500, 1500, 3000]))
            findings += ownership_findings(c.groups)
    # quiesce: links healed, brokers back, heartbeats normal, every live consumer polling
    if network:
        A(c, cmd="heal_all")
    for b in range(3):
        if not c.brokers[b].alive:
            A(c, cmd="restart", broker=b)
    for n, con in c.groups.consumers.items():
        con.heartbeat_delay_ms = 0
    if not any(con.alive for con in c.groups.consumers.values()):
        join(c, "a", strategies=strategy, session_timeout_ms=10000, heartbeat_interval_ms=3000,
             max_poll_interval_ms=60000)
    for _ in range(70 if network else 30):   # a lost JoinGroup is retried after max.poll.interval.ms + 5 s
        for n, con in sorted(c.groups.consumers.items()):
            if con.alive:
                A(c, cmd="consumer_poll", name=n)
        A(c, cmd="advance", ms=2000)
        findings += ownership_findings(c.groups)
    return c, findings


@pytest.mark.parametrize("seed", [*range(12), *(pytest.param(s, marks=pytest.mark.slow) for s in range(12, 200))])
def test_schedules_never_share_a_partition_within_a_generation_and_converge(tmp_path, seed):
    check_schedule(*run_schedule(tmp_path, seed))


@pytest.mark.parametrize("seed", [*range(6), *(pytest.param(s, marks=pytest.mark.slow) for s in range(6, 100))])
def test_schedules_with_dropped_and_delayed_group_requests_still_converge(tmp_path, seed):
    c, findings = run_schedule(tmp_path, seed, network=True)
    check_schedule(c, findings)


def check_schedule(c, findings):
    assert findings == []
    g = coordinator_group(c)
    live = {n for n, con in c.groups.consumers.items() if con.alive}
    assert g.state == "Stable" and {m.client for m in g.members.values()} == live
    own = owners(c)
    assert set(own) == all_partitions(c) and all(len(v) == 1 for v in own.values())
    gens = {c.groups.consumers[n].owned_generation for n in live if c.groups.consumers[n].owned}
    assert gens == {g.generation}


def test_a_snapshot_with_groups_restores_and_carries_on_identically(tmp_path):
    c = make(tmp_path)
    join(c, "a")
    join(c, "b", strategies=["cooperative-sticky"])
    A(c, cmd="advance", ms=2000)
    blob = c.snapshot()
    copy = Cluster.restore(blob, tmp_path / "copy")
    for cl in (c, copy):
        A(cl, cmd="advance", ms=3000)
        A(cl, cmd="consumer_poll", name="a")
        A(cl, cmd="consumer_crash", name="b")
        A(cl, cmd="advance", ms=50000)
    assert c.events.digest() == copy.events.digest()
    assert c.groups.state() == copy.groups.state()


def test_run_log_with_group_commands_replays(tmp_path):
    from engine.cluster.run import Run
    cmds = [{"cmd": "create_topic", "topic": "t", "partitions": 2}, {"cmd": "advance", "ms": 500},
            {"cmd": "configure_groups", "offsets_topic_num_partitions": 2},
            {"cmd": "consumer_join", "name": "a", "group": "g", "topics": ["t"]}, {"cmd": "advance", "ms": 4000},
            {"cmd": "consumer_poll", "name": "a"}]
    digests = []
    for i in range(2):
        run = Run(seed=3, disk_root=str(tmp_path / f"r{i}"))
        for cmd in cmds:
            run.apply(cmd)
        digests.append(run.cluster.events.digest())
    assert digests[0] == digests[1]


def test_seed_003_protocol_by_vote_and_the_first_member_to_join_leads(tmp_path):
    # seed 003 "rebalance phases": candidates every member supports, the most votes win; the
    # first member to join becomes the leader and computes the assignment.
    c = make(tmp_path)
    join(c, "z", strategies=["roundrobin", "range"])
    join(c, "a", strategies=["range", "roundrobin"])
    join(c, "m", strategies=["range", "sticky", "roundrobin"])
    A(c, cmd="advance", ms=4000)
    g = coordinator_group(c)
    assert g.protocol == "range" and g.leader == "z-1"
    sync = [e for e in c.events.of_kind("sync_group_sent") if e.leader]
    assert [e.member for e in sync] == ["z-1"] and set(sync[0].assignment) == {"z-1", "a-2", "m-3"}
    with pytest.raises(InvalidRequestError, match="unknown assignment strategy"):
        join(c, "q", strategies=["nope"])


def test_seed_003_a_coordinator_change_no_longer_rebalances_a_stable_group(tmp_path):
    # seed 003 "rebalance triggers" #4 lists a coordinator change. Kafka writes a GroupMetadata
    # record after each rebalance, so the new coordinator loads the group: same generation,
    # same owners, members keep heartbeating.
    c = make(tmp_path)
    join(c, "a")
    join(c, "b")
    A(c, cmd="advance", ms=4000)
    gen = coordinator_group(c).generation
    before = owners(c)
    old = c.groups.find_coordinator("g")[0]
    A(c, cmd="crash", broker=old)
    A(c, cmd="advance", ms=30000)
    new = c.groups.find_coordinator("g")[0]
    g = coordinator_group(c)
    assert new != old and g.state == "Stable" and len(g.members) == 2
    assert g.generation == gen and owners(c) == before
    assert not [e for e in c.events.of_kind("rebalance_started") if e.coordinator == new]
    hb = [e for e in c.events.of_kind("heartbeat_answered") if e.generation == gen]
    assert hb and hb[-1].error == "NONE"


def test_failover_mid_rebalance_completes_with_a_new_generation(tmp_path):
    c = make(tmp_path)
    join(c, "a")
    A(c, cmd="advance", ms=4000)
    gen = coordinator_group(c).generation
    join(c, "b")  # a rebalance starts; the coordinator dies inside it
    A(c, cmd="advance", ms=5)
    old = c.groups.find_coordinator("g")[0]
    A(c, cmd="crash", broker=old)
    findings = []
    for _ in range(40):
        A(c, cmd="advance", ms=2000)
        findings += ownership_findings(c.groups)
    g = coordinator_group(c)
    assert findings == [] and g.state == "Stable" and g.generation > gen
    own = owners(c)
    assert set(own) == all_partitions(c) and all(len(v) == 1 for v in own.values())
    assert {n for v in own.values() for n in v} == {"a", "b"}


def test_seed_003_auto_commit_before_rejoining_so_the_next_owner_resumes_there(tmp_path):
    # seed 003 "join group": with enable.auto.commit a rejoining consumer commits its offsets
    # before sending JoinGroup.
    c = make(tmp_path, partitions=2, records=3)
    join(c, "a", strategies=["range"])
    A(c, cmd="advance", ms=4000)
    A(c, cmd="consumer_poll", name="a")  # reads 3 records of each partition
    join(c, "b", strategies=["range"])
    A(c, cmd="advance", ms=8000)
    sent = [e for e in c.events.of_kind("offset_commit_sent") if e.member == "a-1"]
    assert sent and sent[0].auto and sorted(map(tuple, sent[0].offsets)) == [("t", 0, 3), ("t", 1, 3)]
    rejoin = [e for e in c.events.of_kind("join_group_sent") if e.consumer == "a" and e.member == "a-1"][-1]
    seqs = {id(ev): env.seq for env in c.events.envelopes for ev in [env.event]}
    assert seqs[id(sent[0])] < seqs[id(rejoin)]
    assert A(c, cmd="consumer_poll", name="b")["records"] == []  # b starts at 3: nothing read twice
    assert c.groups.lag("g") == {"t-0": {"committed": 3, "high_watermark": 3, "lag": 0},
                                 "t-1": {"committed": 3, "high_watermark": 3, "lag": 0}}


def test_compaction_keeps_only_the_latest_group_metadata_record(tmp_path):
    from engine.group.metadata import decode_group_key, decode_group_value
    c = make(tmp_path, partitions=2, records=1)
    join(c, "a", enable_auto_commit=False)
    A(c, cmd="advance", ms=4000)
    A(c, cmd="set_config", scope="topic", target=OFFSETS_TOPIC,
      changes={"segment.bytes": 1024, "min.cleanable.dirty.ratio": 0.01,
               "min.compaction.lag.ms": 10**9})  # the periodic cleaner waits
    for n in ["b", "d", "e"]:  # three more rebalances, three more records
        join(c, n, enable_auto_commit=False)
        A(c, cmd="advance", ms=8000)
    p = partition_for_group("g", 3)

    def group_records():
        log = c.brokers[c.controller.partition(OFFSETS_TOPIC, p).leader].partitions[(OFFSETS_TOPIC, p)].log
        return [decode_group_value(r.value) for r in log.records() if decode_group_key(r.key) == "g"]

    before = group_records()
    assert len(before) >= 4 and before[-1].generation == coordinator_group(c).generation
    A(c, cmd="set_config", scope="topic", target=OFFSETS_TOPIC, changes={"min.compaction.lag.ms": 0})
    A(c, cmd="run_cleaner")
    after = group_records()
    assert len(after) < len(before) and after[-1] == before[-1]
    assert {m.member_id for m in after[-1].members} == set(coordinator_group(c).members)


# ---- group requests through the network, with the client's request timeout ------------------------

def coordinator_id(c, group="g"):
    return c.groups.find_coordinator(group)[0]


def timeouts(c, api):
    return [e for e in c.events.of_kind("group_request_failed") if e.api == api and e.error == "REQUEST_TIMED_OUT"]


def test_a_lost_join_group_times_out_after_the_rebalance_timeout_plus_5_s_and_is_retried(tmp_path):
    c = make(tmp_path, partitions=2)
    c.groups.ensure_offsets_topic()          # as the first consumer_join does
    A(c, cmd="advance", ms=1000)             # the offsets partitions have their leaders
    coord = coordinator_id(c)
    A(c, cmd="set_drop_probability", a=-1, b=coord, probability=1.0, both=False)
    join(c, "a", session_timeout_ms=10000, heartbeat_interval_ms=3000, max_poll_interval_ms=40000)
    A(c, cmd="advance", ms=1000)
    assert [e.reason for e in c.events.of_kind("message_dropped") if e.api == "JoinGroup"] == ["random_drop"]
    A(c, cmd="heal_all")
    A(c, cmd="advance", ms=42000)            # past request.timeout.ms (30 s), not yet 40 s + 5 s
    assert c.groups.consumers["a"].status == "joining" and not timeouts(c, "join")
    A(c, cmd="advance", ms=3000)
    assert len(timeouts(c, "join")) == 1
    A(c, cmd="consumer_poll", name="a")
    A(c, cmd="advance", ms=5000)
    assert c.groups.consumers["a"].status == "stable"
    assert set(owners(c)) == all_partitions(c)


def test_a_late_answer_is_dropped_and_the_commit_still_happened(tmp_path):
    c = make(tmp_path, partitions=1)
    join(c, "a")
    A(c, cmd="advance", ms=4000)
    A(c, cmd="consumer_poll", name="a")
    A(c, cmd="set_link_delay", a=-1, b=coordinator_id(c), delay_ms=35000, both=False)
    A(c, cmd="consumer_commit", name="a", offsets={"t-0": 1})
    A(c, cmd="heal_all")                     # only the OffsetCommit already on its way is slow
    con = c.groups.consumers["a"]
    A(c, cmd="advance", ms=31000)            # request.timeout.ms = 30 s
    assert con.commit_log[-1]["error"] == "REQUEST_TIMED_OUT" and timeouts(c, "commit")
    before = list(con.commit_log)
    A(c, cmd="advance", ms=5000)             # the request lands after 35 s; its answer finds no one waiting
    assert con.commit_log == before
    assert c.groups.committed("g")[("t", 0)] == 1    # the coordinator did commit it
    assert con.status == "stable" and con.owned == [("t", 0)]


def test_a_group_request_is_lost_when_the_link_is_cut_in_flight(tmp_path):
    c = make(tmp_path, partitions=1)
    join(c, "a")
    A(c, cmd="advance", ms=4000)
    coord = coordinator_id(c)
    A(c, cmd="set_link_delay", a=-1, b=coord, delay_ms=500, both=False)
    A(c, cmd="consumer_commit", name="a", offsets={"t-0": 1})
    A(c, cmd="advance", ms=100)
    A(c, cmd="cut_link", a=-1, b=coord)
    A(c, cmd="advance", ms=1000)
    assert any(e.api == "OffsetCommit" and e.reason == "link_cut" and "in flight" in e.detail
               for e in c.events.of_kind("message_dropped"))
    assert ("t", 0) not in (c.groups.committed("g") or {})


def test_a_dropped_heartbeat_answer_times_out_but_the_member_stays(tmp_path):
    c = make(tmp_path, partitions=2)
    join(c, "a", session_timeout_ms=45000, heartbeat_interval_ms=3000)
    A(c, cmd="advance", ms=4000)
    gen = c.groups.consumers["a"].generation
    A(c, cmd="set_drop_probability", a=coordinator_id(c), b=-1, probability=1.0, both=False)
    A(c, cmd="advance", ms=40000)            # the coordinator hears every heartbeat; the answers are lost
    assert timeouts(c, "heartbeat")
    assert any(e.api == "HeartbeatResponse" for e in c.events.of_kind("message_dropped"))
    A(c, cmd="heal_all")
    A(c, cmd="advance", ms=5000)
    con = c.groups.consumers["a"]
    assert con.status == "stable" and con.generation == gen and set(con.owned) == all_partitions(c)


def test_offset_fetch_travels_through_the_network_and_a_lost_answer_is_asked_again_after_the_timeout(tmp_path):
    c = make(tmp_path, partitions=1, records=3)
    join(c, "a", enable_auto_commit=False)
    A(c, cmd="advance", ms=4000)
    assert len(A(c, cmd="consumer_poll", name="a")["records"]) == 3
    A(c, cmd="consumer_commit", name="a", offsets={"t-0": 1})
    A(c, cmd="advance", ms=500)
    A(c, cmd="consumer_leave", name="a")
    A(c, cmd="advance", ms=500)
    A(c, cmd="consumer_poll", name="a")      # joins again: no position, so it asks for the committed offset
    con = c.groups.consumers["a"]
    while con.status != "stable":
        A(c, cmd="advance", ms=1)
    coord = coordinator_id(c)
    # The assignment came; its OffsetFetch is on the way. Its answer is lost.
    A(c, cmd="set_drop_probability", a=coord, b=-1, probability=1.0, both=False)
    A(c, cmd="advance", ms=10)
    A(c, cmd="heal_all")
    assert [e.api for e in c.events.of_kind("message_dropped")] == ["OffsetFetchResponse"]
    resets = len(c.events.of_kind("position_reset"))
    assert A(c, cmd="consumer_poll", name="a")["records"] == []      # no position without an answer
    A(c, cmd="advance", ms=30000)                                      # request.timeout.ms
    assert [e.api for e in timeouts(c, "offset_fetch")] == ["offset_fetch"]
    assert A(c, cmd="consumer_poll", name="a")["records"] == []      # asks again
    A(c, cmd="advance", ms=10)
    got = A(c, cmd="consumer_poll", name="a")["records"]
    assert [r["offset"] for r in got] == [1, 2]
    assert [(e.offset, e.source) for e in c.events.of_kind("position_reset")[resets:]] == [(1, "committed")]


def test_offset_fetch_to_an_unreachable_coordinator_fails_and_the_poll_asks_again(tmp_path):
    c = make(tmp_path, partitions=1, records=2)
    join(c, "a")
    con = c.groups.consumers["a"]
    while con.status != "stable":
        A(c, cmd="advance", ms=1)
    A(c, cmd="cut_link", a=-1, b=coordinator_id(c))      # before the OffsetFetch arrives
    A(c, cmd="advance", ms=200)
    assert "OffsetFetch" in [e.api for e in c.events.of_kind("message_dropped")]
    assert A(c, cmd="consumer_poll", name="a")["records"] == []
    A(c, cmd="heal_all")
    A(c, cmd="advance", ms=31000)
    A(c, cmd="consumer_poll", name="a")
    A(c, cmd="advance", ms=10)
    assert [r["offset"] for r in A(c, cmd="consumer_poll", name="a")["records"]] == [0, 1]


def test_the_coordinators_own_appends_are_local_so_client_link_faults_do_not_touch_them(tmp_path):
    # Kafka's coordinator appends to its own partition locally; only the request and its answer
    # cross the client's link.
    c = make(tmp_path, partitions=1)
    join(c, "a", enable_auto_commit=False)
    A(c, cmd="advance", ms=4000)
    coord = coordinator_id(c)
    A(c, cmd="consumer_commit", name="a", offsets={"t-0": 1})
    A(c, cmd="advance", ms=1)                # the OffsetCommit reached the coordinator, which appends
    A(c, cmd="cut_link", a=-1, b=coord)
    A(c, cmd="set_link_delay", a=-1, b=(coord + 1) % 3, delay_ms=5000)
    A(c, cmd="advance", ms=50)
    assert c.groups.committed("g") == {("t", 0): 1}
    assert [e.offset for e in c.events.of_kind("offset_committed")] == [1]
    assert [e.api for e in c.events.of_kind("message_dropped")] == ["OffsetCommitResponse"]
    acked = [e for e in c.events.of_kind("produce_acked") if e.topic == OFFSETS_TOPIC]
    assert acked and acked[-1].broker == coord


def test_a_group_record_too_large_for_the_segment_fails_the_rebalance_with_unknown_server_error(tmp_path):
    # Kafka: the append fails (record too large for segment.bytes); storeGroup answers SyncGroup
    # UNKNOWN_SERVER_ERROR, which the Java consumer's poll throws instead of retrying.
    c = Cluster(Disk(tmp_path / "d"), ClusterConfig.from_mapping({"brokers": 3, "segment.bytes": 120}), seed=1)
    A(c, cmd="advance", ms=500)
    A(c, cmd="create_topic", topic="t", partitions=2)
    A(c, cmd="configure_groups", offsets_topic_num_partitions=1)
    join(c, "a")
    join(c, "b")
    A(c, cmd="advance", ms=20000)
    too_large = [e for e in c.events.of_kind("produce_failed") if e.topic == OFFSETS_TOPIC]
    assert [e.error for e in too_large] == ["RECORD_LIST_TOO_LARGE"]     # bigger than a whole segment
    assert len(c.events.of_kind("join_group_completed")) == 1          # no endless rebalancing
    failed = [(e.consumer, e.api, e.error) for e in c.events.of_kind("group_request_failed")]
    assert sorted(failed) == [("a", "sync", "UNKNOWN_SERVER_ERROR"), ("b", "sync", "UNKNOWN_SERVER_ERROR")]
    assert {n: con.status for n, con in c.groups.consumers.items()} == \
        {"a": "error:UNKNOWN_SERVER_ERROR", "b": "error:UNKNOWN_SERVER_ERROR"}
    assert owners(c) == {}
    # The next poll joins again; b, which does not poll, is removed at its session timeout; a's
    # record still does not fit, so that rebalance fails the same way, once. Then a's session
    # ends too and the group is Empty (its small record fits).
    A(c, cmd="consumer_poll", name="a")
    A(c, cmd="advance", ms=100_000)
    assert c.groups.consumers["a"].status == "error:UNKNOWN_SERVER_ERROR"
    assert [e.members for e in c.events.of_kind("join_group_completed")] == [["a-1", "b-2"], ["a-1"], []]
    assert len(c.events.of_kind("group_request_failed")) == 3
    assert c.groups.state()["groups"]["g"]["state"] == "Empty"


@pytest.mark.parametrize("append_error,answer", [
    (None, None), ("UNKNOWN_TOPIC_OR_PARTITION", "COORDINATOR_NOT_AVAILABLE"),
    ("NOT_ENOUGH_REPLICAS", "COORDINATOR_NOT_AVAILABLE"),
    ("NOT_ENOUGH_REPLICAS_AFTER_APPEND", "COORDINATOR_NOT_AVAILABLE"),
    ("NOT_LEADER_OR_FOLLOWER", "NOT_COORDINATOR"), ("KAFKA_STORAGE_ERROR", "NOT_COORDINATOR"),
    ("REQUEST_TIMED_OUT", "REBALANCE_IN_PROGRESS"), ("MESSAGE_TOO_LARGE", "UNKNOWN_SERVER_ERROR"),
    ("RECORD_LIST_TOO_LARGE", "UNKNOWN_SERVER_ERROR"), ("INVALID_FETCH_SIZE", "UNKNOWN_SERVER_ERROR"),
    ("CORRUPT_MESSAGE", "CORRUPT_MESSAGE")])
def test_a_failed_group_record_append_is_answered_as_kafkas_store_group(append_error, answer):
    from engine.group.coordinator import store_error
    assert store_error(append_error) == answer


def test_an_offset_fetch_answer_for_an_older_generation_is_not_used(tmp_path):
    c = make(tmp_path, partitions=1, records=3)
    join(c, "a", enable_auto_commit=False)
    con = c.groups.consumers["a"]
    while con.status != "stable":
        A(c, cmd="advance", ms=1)
    con.fetched.clear()
    con.positions.clear()
    con._fetch_committed()                   # asked in this generation ...
    con.generation += 1                      # ... answered after the next assignment (as if)
    A(c, cmd="advance", ms=10)
    assert con.fetched == {}
    con.generation -= 1
    A(c, cmd="consumer_poll", name="a")      # asks again
    A(c, cmd="advance", ms=10)
    assert con.fetched == {("t", 0): None}
