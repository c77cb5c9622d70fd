"""The cluster with a KRaft controller (issue 22): voters, the active controller writing
metadata records, brokers applying what is committed, and the quorum's faults."""
from __future__ import annotations

import pytest

from engine.cluster.cluster import Cluster
from engine.cluster.config import ClusterConfig
from engine.cluster.kraft_controller import metadata_records, parse_voters
from engine.cluster.metadata import (FeatureLevelRecord, MetadataState, PartitionChangeRecord, PartitionRecord,
                                     RegisterBrokerRecord, TopicRecord, UnfenceBrokerRecord, decode_record,
                                     encode_record, ConfigRecord)
from engine.cluster.network import BrokerHeartbeat
from engine.disk import Disk
from engine.errors import BrokerNotAvailableError, InvalidConfigError

SMALL = {"broker.session.timeout.ms": 3000, "broker.heartbeat.interval.ms": 500}


def make(tmp_path, seed=0, **cfg):
    config = ClusterConfig.from_mapping({"brokers": 3, **SMALL, **cfg})
    return Cluster(Disk(str(tmp_path), os_fsync=False), config, seed)


def sent_apis(cluster):
    """Record the api of every message the network carries from now on."""
    seen = []
    send = cluster.network.send

    def spy(src, dst, msg):
        seen.append((src, dst, msg))
        return send(src, dst, msg)
    cluster.network.send = spy
    return seen


def topic(cluster, name="t", rf=3, assignment=None):
    cluster.create_topic(name, 1, rf, {"min.insync.replicas": 2}, assignment=assignment)
    # Committed within ms; a follower parked at the leader learns the new HW on its next answer (<= 500 ms).
    cluster.advance(600)


def leader_log(cluster):
    node = cluster.controller.quorum.nodes[cluster.controller.active]
    return [rec for _, rec in metadata_records(node.log, 0, node.log_end_offset)]


def assert_raft_safe(cluster):
    checker = cluster.controller.quorum.checker
    checker.check_logs()
    checker.check_applied()
    assert checker.violations == []


@pytest.mark.parametrize("cfg, voters, mode", [({"kraft": True}, [0, 1, 2], "combined"),
                                               ({"controllers": 3}, [100, 101, 102], "dedicated")])
def test_a_fresh_cluster_elects_a_controller_and_every_broker_registers_and_is_unfenced(tmp_path, cfg, voters, mode):
    c = make(tmp_path, **cfg)
    ctl = c.controller
    assert ctl.mode == mode and list(ctl.voter_ids) == voters
    assert ctl.active in voters and ctl.epoch >= 1
    assert sorted(ctl.brokers) == [0, 1, 2] and not any(r.fenced for r in ctl.brokers.values())
    # Each node's metadata log lives in its own log directory.
    for b in c.brokers:
        assert c.disk.exists(f"broker-{b}/__cluster_metadata-0/00000000000000000000.log")
        assert c.brokers[b].broker_epoch == ctl.brokers[b].broker_epoch
    if mode == "dedicated":
        for v in voters:
            assert c.disk.exists(f"node-{v}/__cluster_metadata-0/quorum-state")
    kinds = [type(r) for r in leader_log(c)]
    assert kinds[0] is RegisterBrokerRecord or FeatureLevelRecord in kinds
    assert kinds.count(RegisterBrokerRecord) == 3 and kinds.count(UnfenceBrokerRecord) == 3
    assert_raft_safe(c)


def test_topic_creation_travels_as_records_and_no_leader_and_isr_is_sent(tmp_path):
    c = make(tmp_path, kraft=True)
    seen = sent_apis(c)
    c.create_topic("t", 2, 3, {"min.insync.replicas": 2})
    # Not applied anywhere until committed and fetched.
    assert all(("t", 0) not in b.partitions for b in c.brokers.values())
    c.advance(600)
    recs = leader_log(c)
    topic_rec = next(r for r in recs if isinstance(r, TopicRecord))
    assert topic_rec.Name == "t"
    parts = [r for r in recs if isinstance(r, PartitionRecord)]
    assert [p.PartitionId for p in parts] == [0, 1] and all(p.TopicId == topic_rec.TopicId for p in parts)
    assert ConfigRecord(2, "t", "min.insync.replicas", "2") in recs
    for p in parts:
        pm = c.controller.partition("t", p.PartitionId)
        assert (p.Leader, tuple(p.Isr), tuple(p.Replicas)) == (pm.leader, pm.isr, pm.replicas)
        for b in pm.replicas:
            part = c.brokers[b].partitions[("t", p.PartitionId)]
            assert part.role == ("leader" if b == pm.leader else "follower")
    assert "LeaderAndIsr" not in {m.api for _, _, m in seen}
    assert {"Fetch", "FetchResponse"} & {m.api for _, _, m in seen}
    assert_raft_safe(c)


def test_heartbeats_carry_the_applied_metadata_offset(tmp_path):
    c = make(tmp_path, kraft=True)
    topic(c)
    seen = sent_apis(c)
    c.advance(1000)
    beats = [m for _, _, m in seen if isinstance(m, BrokerHeartbeat)]
    assert beats and all(m.metadata_offset > 0 for m in beats)
    for b in c.brokers:
        assert c.controller.applied_offset(b) == c.controller.committed_offset


def test_the_working_state_is_the_replay_of_the_leaders_log(tmp_path):
    c = make(tmp_path, kraft=True)
    topic(c)
    leader = c.controller.partition("t", 0).leader
    c.produce("t", 0, [b"a"], acks=-1)
    c.crash(leader)
    c.advance(6000)
    c.restart(leader)
    c.advance(6000)
    replay = MetadataState(c.config.log)
    for rec in leader_log(c):
        replay.apply(rec)
    assert replay.signature() == c.controller.image.signature()
    pm = c.controller.partition("t", 0)
    # Every broker acts on exactly what the log says.
    for b in pm.replicas:
        part = c.brokers[b].partitions[("t", 0)]
        assert (part.leader_epoch, part.partition_epoch, part.isr) == (pm.leader_epoch, pm.partition_epoch, pm.isr)
    assert any(isinstance(r, PartitionChangeRecord) for r in leader_log(c))
    assert_raft_safe(c)


def test_the_active_controllers_death_elects_a_new_leader_and_brokers_fetch_from_it(tmp_path):
    c = make(tmp_path, controllers=3)
    topic(c)
    old, epoch = c.controller.active, c.controller.epoch
    c.crash(old)
    died = c.now_ms()
    while c.controller.active is None:
        c.advance(5)
    assert c.controller.active != old and c.controller.epoch > epoch
    assert c.now_ms() - died < 6000
    # Observers find it when their fetch to the dead leader times out (fetch timeout, then a voter names it).
    elected = c.now_ms()
    while any(c.brokers[b].raft.leader_id != c.controller.active for b in c.brokers) and c.now_ms() < elected + 5000:
        c.advance(10)
    for b in c.brokers:
        assert c.brokers[b].raft.leader_id == c.controller.active
        assert c.controller.broker_target(b) == c.controller.active
    # The new controller can change metadata: a second topic.
    topic(c, "u")
    assert all(("u", 0) in c.brokers[b].partitions for b in c.controller.partition("u", 0).replicas)
    assert_raft_safe(c)


def test_a_majority_of_voters_down_freezes_metadata_while_data_still_flows(tmp_path):
    c = make(tmp_path, controllers=3)
    topic(c, assignment=[[0, 1, 2]])
    active = c.controller.active
    for v in [v for v in (100, 101, 102) if v != active][:2]:
        c.crash(v)
    c.advance(4000)                                  # check quorum: the lone leader resigns
    assert c.controller.active is None
    with pytest.raises(BrokerNotAvailableError):
        c.create_topic("u", 1, 3)
    before = c.controller.partition("t", 0)
    frozen = (before.leader, before.leader_epoch, before.isr)
    rid = c.produce("t", 0, [b"still"], acks=-1)
    c.advance(200)
    assert c.produce_results[rid].status == "ok"     # the data path goes on with the leader it has
    c.crash(2)                                       # a follower dies: no one may fence it or shrink the ISR
    c.advance(5000)
    pm = c.controller.partition("t", 0)
    assert (pm.leader, pm.leader_epoch, pm.isr) == frozen
    assert c.brokers[0].partitions[("t", 0)].isr == (0, 1, 2)
    for v in (100, 101, 102):
        if not c.controller.quorum.nodes[v].alive:
            c.restart(v)
    while c.controller.active is None:
        c.advance(10)
    c.advance(6000)                                   # now the session expiry of broker 2 goes through
    assert 2 not in c.controller.partition("t", 0).isr
    assert_raft_safe(c)


def test_a_partitioned_controller_resigns_by_check_quorum(tmp_path):
    c = make(tmp_path, controllers=3)
    old = c.controller.active
    c.isolate(old)
    c.advance(3100)                                  # fetch timeout 2000 * 1.5
    assert c.controller.quorum.nodes[old].state != "leader"
    # The others elect a leader one fetch timeout after their last answer, plus an election
    # timeout (1-2 s) when their first votes split.
    c.advance(2000)
    assert c.controller.active is not None and c.controller.active != old
    reasons = [e.event.reason for e in c.events.envelopes
               if e.event.kind == "raft_state_changed" and e.event.node == old and e.event.state == "resigned"]
    assert reasons and "check quorum" in reasons[0]
    assert_raft_safe(c)


def test_a_broker_cut_off_from_the_quorum_is_a_zombie_leader_through_metadata_lag(tmp_path):
    c = make(tmp_path, controllers=3)
    topic(c, assignment=[[0, 1, 2]])
    for v in (100, 101, 102):
        c.cut_link(0, v)
    c.advance(6000)                                 # fenced, and broker 1 elected, by the controller
    pm = c.controller.partition("t", 0)
    assert pm.leader == 1
    zombie = c.brokers[0].partitions[("t", 0)]
    assert zombie.role == "leader" and zombie.leader_epoch < pm.leader_epoch   # it never heard
    assert c.controller.applied_offset(0) < c.controller.committed_offset
    # A client with stale metadata writes to the zombie with acks=1: acknowledged, then lost.
    rid = c.produce("t", 0, [b"zombie"], acks=1, broker=0)
    c.advance(50)
    assert c.produce_results[rid].status == "ok"
    c.heal_all()
    c.advance(3000)
    part = c.brokers[0].partitions[("t", 0)]
    assert part.role == "follower" and part.leader_epoch == c.controller.partition("t", 0).leader_epoch
    assert c.controller.applied_offset(0) == c.controller.committed_offset
    assert b"zombie" not in [v for _, v, _ in c.log_values(0, "t", 0)]    # truncated away
    assert_raft_safe(c)


def test_combined_mode_voters_come_from_controller_quorum_voters(tmp_path):
    c = make(tmp_path, brokers=5, kraft=True, **{"controller.quorum.voters": "1@broker-1:9093,3@broker-3:9093,4@x:1"})
    assert c.controller.voter_ids == (1, 3, 4)
    assert [b for b in c.brokers if c.brokers[b].raft.voter] == [1, 3, 4]
    assert parse_voters("0, 2") == [0, 2]
    with pytest.raises(InvalidConfigError):
        make(tmp_path / "bad", kraft=True, **{"controller.quorum.voters": "7@x:1"})
    with pytest.raises(InvalidConfigError):
        parse_voters("a@b")


def test_records_survive_their_byte_seam_as_kafkas_api_message_and_version():
    from engine.kraft import metadata as kmeta
    tid = "5pTiLd2lTuyzRbL7F0Rw4A"
    for rec in (TopicRecord("t", tid), PartitionRecord(0, tid, (1, 2), (1,), 1, 0, 0),
                PartitionChangeRecord(0, tid, None, 2), PartitionChangeRecord(1, tid, (0, 2)),
                RegisterBrokerRecord(1, 7, 5), FeatureLevelRecord("metadata.version", 25),
                ConfigRecord(2, "t", "x", None), UnfenceBrokerRecord(3, 9)):
        raw = encode_record(rec)
        assert raw[0] == 1 and raw[1] == rec.API_KEY          # frame version 1, then the apiKey
        assert decode_record(raw) == rec
        assert kmeta.record_type_name(kmeta.decode(raw)).replace("_", "") == type(rec).__name__.upper()


def test_the_metadata_log_decodes_with_kafkas_generated_records(tmp_path):
    """Every data record in a voter's log decodes with the generated reader and equals what
    the controller applied (its replay is the controller's state)."""
    from engine.kraft import metadata as kmeta
    from engine.records import iter_batches
    c = make(tmp_path, kraft=True)
    topic(c)
    node = c.controller.quorum.nodes[c.controller.active]
    info = node.log.read(0, 1 << 30, trace=False)
    decoded = []
    for _, batch in iter_batches(info.records):        # CRCs checked
        if not batch.is_control:
            decoded += [kmeta.decode(r.value) for r in batch.records]
    assert [type(m).__name__ for m in decoded] == [type(r).__name__ for r in leader_log(c)]
    topic_msg = next(m for m in decoded if type(m).__name__ == "TopicRecord")
    assert topic_msg.name == "t" and topic_msg.topic_id == c.controller.image.topic_id("t")


def test_the_same_seed_replays_the_same_kraft_cluster(tmp_path):
    digests = []
    for i in range(2):
        c = make(tmp_path / str(i), seed=5, controllers=3)
        topic(c)
        c.crash(c.controller.active)
        c.advance(5000)
        digests.append(c.events.digest())
    assert digests[0] == digests[1]


@pytest.mark.parametrize("mode", ["combined", "dedicated"])
def test_failover_at_kafkas_default_timeouts(tmp_path, mode):
    """Crash the active controller (defaults: fetch timeout 2000 ms, election timeout 1000 ms):
    a new leader within about a fetch timeout plus an election or two, and every live broker
    fetching from it (and applying a new topic) soon after."""
    from engine.cluster.kraft_schedules import time_controller_failover
    for seed in range(6):
        r = time_controller_failover(seed, str(tmp_path / str(seed)), mode)
        assert r["new"] != r["old"] and r["new_epoch"] > r["old_epoch"], r
        assert 1000 <= r["elected_ms"] <= 8000, r
        assert r["brokers_follow_ms"] <= r["elected_ms"] + 4000, r
        assert r["new_topic_applied_ms"] <= r["brokers_follow_ms"] + 1000, r


@pytest.mark.parametrize("cfg", [{"kraft": True}, {"controllers": 3}])
def test_a_kraft_run_rewinds_and_redoes_to_the_same_streams(tmp_path, cfg):
    from engine.cluster.run import Run
    from tests.engine.cluster.test_run_replay import COMMANDS, CONFIG
    commands = COMMANDS + [{"cmd": "crash", "broker": 100 if cfg.get("controllers") else 0},
                           {"cmd": "advance", "ms": 4000}, {"cmd": "produce", "topic": "t", "value": "d"},
                           {"cmd": "advance", "ms": 500}]
    run = Run(3, {**CONFIG, **cfg}, str(tmp_path / "a"), snapshot_every=4)
    digests = [run.event_digest()]
    for c in commands:
        run.apply(c)
        digests.append(run.event_digest())
    for k in (len(commands), 9, 4, 0, 15, 2):
        run.seek(k)
        assert run.event_digest() == digests[k], k
    run.seek(len(commands))
    assert run.summary()["event_digest"] == digests[-1]
    assert run.summary()["controller"]["mode"] == ("dedicated" if cfg.get("controllers") else "combined")


@pytest.mark.parametrize("flags, mode, voters", [([], "hybrid", []), (["--kraft"], "combined", [0, 1, 2]),
                                                 (["--controllers", "3"], "dedicated", [100, 101, 102])])
def test_run_json_has_a_controller_object(tmp_path, capsys, flags, mode, voters):
    import json
    from engine.cluster.cli import main
    log = tmp_path / "c.jsonl"
    log.write_text('{"cmd": "create_topic", "topic": "t", "partitions": 1, "replication_factor": 3}\n'
                   '{"cmd": "advance", "ms": 1000}\n{"cmd": "crash", "broker": 2}\n{"cmd": "advance", "ms": 500}\n')
    assert main(["run", "--commands", str(log), "--json", *flags]) == 0
    ctl = json.loads(capsys.readouterr().out)["controller"]
    assert ctl["mode"] == mode and ctl["voters"] == voters
    assert set(ctl) == {"mode", "active", "epoch", "voters", "metadata_high_watermark", "applied_offsets"}
    if mode == "hybrid":
        assert ctl["active"] == 0 and ctl["metadata_high_watermark"] is None
    else:
        assert ctl["active"] in voters and ctl["epoch"] >= 1 and ctl["metadata_high_watermark"] > 0
        assert ctl["applied_offsets"]["2"] is None            # crashed: its applied state is gone
        assert all(o is None or 0 < o <= ctl["metadata_high_watermark"] for o in ctl["applied_offsets"].values())


# Lessons whose faults take two of brokers 0-2, or the active controller with a partition leader: in
# combined mode the controller quorum goes with them (docs/kraft.md, "The lessons under KRaft").
COMBINED_DIFFERS = {"isr-shrink-acks-all", "kip279-divergence", "unclean-election-loss"}


def _scenario_cases():
    from engine.cluster.scenarios import SCENARIOS
    return [(name, t) for name, sc in sorted(SCENARIOS.items()) for t in sorted(sc.expected)]


@pytest.mark.parametrize("name, truncation", _scenario_cases())
def test_every_lesson_verdict_holds_with_dedicated_controllers(tmp_path, name, truncation):
    from engine.cluster.scenarios import SCENARIOS, run_scenario
    out = run_scenario(SCENARIOS[name], truncation=truncation, disk_root=str(tmp_path), controllers=3)
    assert out["verdict"]["matches"], out["verdict"]["mismatches"]
    assert out["controller"]["mode"] == "dedicated"


@pytest.mark.parametrize("name, truncation", [c for c in _scenario_cases() if c[0] not in COMBINED_DIFFERS])
def test_lesson_verdicts_hold_in_combined_mode(tmp_path, name, truncation):
    from engine.cluster.scenarios import SCENARIOS, run_scenario
    out = run_scenario(SCENARIOS[name], truncation=truncation, disk_root=str(tmp_path), kraft=True)
    assert out["verdict"]["matches"], out["verdict"]["mismatches"]


def test_the_metadata_log_start_is_not_in_the_brokers_log_start_checkpoint(tmp_path):
    """Kafka's metadata log is not a log manager's log: a combined node's metadata log lives in its
    broker's directory, but its start comes from its own segments and snapshots, and the broker's
    log-start-offset-checkpoint never names it (so neither writer can erase the other)."""
    from engine.cluster.broker import LOG_START_CHECKPOINT
    from engine.kraft.node import METADATA_TOPIC
    c = make(tmp_path, kraft=True)
    topic(c)
    node = c.controller.quorum.nodes[0]
    broker = c.brokers[0]
    assert node.root == "broker-0"
    broker.checkpoint(LOG_START_CHECKPOINT).write([("t", 0, 5)])
    broker.checkpoint_log_starts()
    assert all(e[0] != METADATA_TOPIC for e in broker.checkpoint(LOG_START_CHECKPOINT).read())
    c.crash(0)
    c.restart(0)
    c.advance(3000)
    assert node.alive and node.log.log_start_offset == node.log.segments[0].base_offset == 0
    assert all(e[0] != METADATA_TOPIC for e in broker.checkpoint(LOG_START_CHECKPOINT).read())


@pytest.mark.parametrize("change, error", [({"leader_epoch": 99}, "FENCED_LEADER_EPOCH"),
                                           ({"partition_epoch": 99}, "INVALID_UPDATE_VERSION")])
def test_a_refused_alter_partition_is_answered_at_once_and_changes_nothing(tmp_path, change, error):
    from engine.cluster.network import AlterPartitionRequest
    c = make(tmp_path, kraft=True)
    topic(c)
    ctl = c.controller
    pm = ctl.partition("t", 0)
    before = (pm.isr, pm.partition_epoch, ctl.committed_offset)
    seen = sent_apis(c)
    req = AlterPartitionRequest(**{"broker": pm.leader, "topic": "t", "partition": 0, "leader_epoch": pm.leader_epoch,
                                   "partition_epoch": pm.partition_epoch, "new_isr": (pm.leader,),
                                   "reason": "test", "lag_ms": (), **change})
    ctl.on_alter_partition(req)
    answers = [(dst, m.error) for _, dst, m in seen if getattr(m, "api", "") == "AlterPartitionResponse"]
    assert answers == [(pm.leader, error)]
    assert (pm.isr, pm.partition_epoch, ctl.committed_offset) == before
