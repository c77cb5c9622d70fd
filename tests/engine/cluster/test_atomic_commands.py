"""A command either happens (and is recorded) or changes nothing.

Refusals come from validation, before anything is touched; if applying a validated
command fails anyway, the run puts itself back (nearest snapshot + replay). Either way a
refused command leaves the run's state digest — clock, event stream, cluster state, files,
checker — exactly as it was, and is not in the run's log.
"""
from __future__ import annotations

import json

import pytest

from engine.cluster.cli import main
from engine.cluster.replica_fetcher import ReplicaFetcher
from engine.cluster.run import Run, load_command_log, run_commands
from engine.errors import KafkaError

CONFIG = {"brokers": 3, "broker.session.timeout.ms": 900, "broker.heartbeat.interval.ms": 300,
          "replica.lag.time.max.ms": 1000, "request.timeout.ms": 500, "replica.fetch.backoff.ms": 50}

SETUP = [
    {"cmd": "create_topic", "topic": "t", "replication_factor": 3, "assignment": [[0, 1, 2]],
     "config": {"min.insync.replicas": 2}},
    {"cmd": "advance", "ms": 300},
    {"cmd": "produce", "topic": "t", "values": ["a", "b"]},
    {"cmd": "advance", "ms": 50},
    {"cmd": "crash", "broker": 2},
    {"cmd": "advance", "ms": 7},
]

REFUSED = [
    ({"cmd": "crash", "broker": 2}, "BROKER_NOT_AVAILABLE"),
    ({"cmd": "restart", "broker": 0}, "INVALID_REQUEST"),
    ({"cmd": "jump", "to_ms": 1}, "INVALID_REQUEST"),
    ({"cmd": "produce", "topic": "nope", "value": "x"}, "UNKNOWN_TOPIC_OR_PARTITION"),
    ({"cmd": "consume", "topic": "t", "offset": 99}, "OFFSET_OUT_OF_RANGE"),
    ({"cmd": "set_config", "scope": "cluster", "changes": {"replica.lag.time.max.ms": -5}}, "INVALID_CONFIG"),
    ({"cmd": "set_config", "scope": "topic", "target": "t", "changes": {"segment.bytes": 1}}, "INVALID_CONFIG"),
    ({"cmd": "set_config", "scope": "broker", "target": 1, "changes": {"no.such.config": 1}}, "INVALID_CONFIG"),
    ({"cmd": "create_topic", "topic": "u", "config": {"min.insync.replicas": 0}}, "INVALID_CONFIG"),
    ({"cmd": "create_topic", "topic": "t"}, "INVALID_REQUEST"),
    ({"cmd": "advance", "ms": -1}, "INVALID_REQUEST"),
]


def setup_run(root, **kwargs) -> Run:
    run = Run(5, CONFIG, str(root), **kwargs)
    run.apply_all(SETUP)
    return run


@pytest.mark.parametrize("cmd,name", REFUSED, ids=[c["cmd"] + "-" + n for c, n in REFUSED])
def test_a_refused_command_leaves_the_state_digest_unchanged(tmp_path, cmd, name):
    run = setup_run(tmp_path / "r")
    before, seq, now, log = run.state_digest(), run.cluster.events.seq, run.cluster_time_ms, list(run.log)
    with pytest.raises(KafkaError) as err:
        run.apply(cmd)
    assert err.value.name == name
    assert run.state_digest() == before
    assert (run.cluster.events.seq, run.cluster_time_ms, run.log) == (seq, now, log)


def test_a_consume_refused_for_want_of_a_leader_changes_nothing(tmp_path):
    run = Run(1, CONFIG, str(tmp_path / "r"))
    run.apply_all([{"cmd": "create_topic", "topic": "t", "replication_factor": 1, "assignment": [[1]]},
                   {"cmd": "advance", "ms": 300}, {"cmd": "crash", "broker": 1}, {"cmd": "advance", "ms": 2000}])
    before = run.state_digest()
    with pytest.raises(KafkaError) as err:
        run.apply({"cmd": "consume", "topic": "t"})
    assert err.value.name in ("LEADER_NOT_AVAILABLE", "BROKER_NOT_AVAILABLE")
    assert run.state_digest() == before


@pytest.mark.parametrize("snapshot_every", [1, 4, 10**9])
def test_a_command_that_fails_half_way_is_rolled_back(tmp_path, monkeypatch, snapshot_every):
    """An engine failure in the middle of an ``advance`` (after the clock moved and events
    were emitted) must not leave the run between two states."""
    run = setup_run(tmp_path / "r", snapshot_every=snapshot_every)
    run.apply({"cmd": "produce", "topic": "t", "value": "c"})
    before, seq, now = run.state_digest(), run.cluster.events.seq, run.cluster_time_ms
    calls = []
    original = ReplicaFetcher.on_fetch_response

    def broken(self, resp):
        calls.append(resp)
        if len(calls) == 2:
            raise RuntimeError("injected fault in the fetcher")
        return original(self, resp)

    monkeypatch.setattr(ReplicaFetcher, "on_fetch_response", broken)
    with pytest.raises(RuntimeError):
        run.apply({"cmd": "advance", "ms": 1400})
    assert len(calls) >= 2                       # it did run part of the way (replay calls it too)
    monkeypatch.setattr(ReplicaFetcher, "on_fetch_response", original)
    assert (run.cluster.events.seq, run.cluster_time_ms) == (seq, now)
    assert run.state_digest() == before
    assert len(run.log) == len(SETUP) + 1
    # And the run goes on exactly as one that never saw the failure.
    run.apply({"cmd": "advance", "ms": 1400})
    clean = setup_run(tmp_path / "clean", snapshot_every=snapshot_every)
    clean.apply_all([{"cmd": "produce", "topic": "t", "value": "c"}, {"cmd": "advance", "ms": 1400}])
    assert run.state_digest() != before
    assert run.event_digest() == clean.event_digest()


def test_a_redo_that_fails_is_rolled_back_and_stays_redoable(tmp_path, monkeypatch):
    run = setup_run(tmp_path / "r", snapshot_every=3)
    run.apply({"cmd": "advance", "ms": 1400})
    end = run.event_digest()
    run.seek(len(SETUP))
    before = run.state_digest()
    monkeypatch.setattr(ReplicaFetcher, "on_fetch_response", lambda self, resp: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        run.redo()
    monkeypatch.undo()
    assert run.state_digest() == before
    run.redo()
    assert run.event_digest() == end


# ---- the schedule of issue 12: a follower's log end inside a leader's batch -----------------

# Under hw truncation broker 2 comes back holding s286.p1.0 at offset 0 (epoch 0, its HW 1)
# while the leader, broker 1, has lost it (hw truncation) and holds a two-record batch
# s286.p3.0/p3.1 at offsets 0..1 (epoch 2). Broker 2 fetches at 1; the leader answers from the
# start of the batch holding offset 1, i.e. from 0. The follower's append used to raise
# INVALID_REQUEST out of the `advance`, after the clock had moved and events were emitted,
# without the command being recorded. As Kafka's fetcher does, the follower now marks the
# partition failed (the logs disagree below the fetch offset) and the broker goes on.
SEED_286 = """\
{"seed": 286, "config": {"replica.lag.time.max.ms": 3000, "replica.fetch.wait.max.ms": 500, "replica.fetch.backoff.ms": 50, "request.timeout.ms": 1500, "broker.session.timeout.ms": 900, "broker.heartbeat.interval.ms": 300, "brokers": 3, "initial.controller": 1, "truncation": "hw"}}
{"cmd": "create_topic", "topic": "t", "partitions": 1, "replication_factor": 3, "assignment": [[1, 2, 0]], "config": {"min.insync.replicas": 2, "flush.messages": 1}}
{"cmd": "produce", "topic": "t", "acks": "all", "values": ["s286.p1.0"]}
{"cmd": "advance", "ms": 1500}
{"cmd": "crash", "broker": 1}
{"cmd": "restart", "broker": 1}
{"cmd": "set_link_delay", "a": 1, "b": -1, "delay_ms": 50, "both": true}
{"cmd": "produce", "topic": "t", "acks": "all", "values": ["s286.p3.0", "s286.p3.1"]}
{"cmd": "advance", "ms": 2}
{"cmd": "shutdown", "broker": 2}
{"cmd": "advance", "ms": 60}
{"cmd": "heal_all"}
{"cmd": "restart", "broker": 2}
{"cmd": "advance", "ms": 1000}
"""


def test_regression_seed_286_follower_log_end_inside_a_leader_batch(tmp_path, capsys):
    log = load_command_log(SEED_286)
    run = Run(log.seed, log.config, str(tmp_path / "r"), keep_events=None)
    for c in log.commands:
        run.apply(c)
    assert run.position == len(log.commands)
    failed = run.cluster.events.of_kind("replica_fetch_failed")
    assert ("UNEXPECTED_APPEND_OFFSET", 2) in [(e.error, e.broker) for e in failed]
    assert run.cluster.brokers[2].alive
    assert run.cluster.replica(2, "t", 0).fetcher.state_name == "failed"
    # Under hw truncation the acknowledged s286.p1.0 is lost: the checker says so.
    assert any(f["kind"] == "check_acked_record_lost" for f in run.checker.findings)
    # The CLI path (python -m engine run --commands FILE) completes too, and replays exactly.
    summary = run_commands(log, disk_root=str(tmp_path / "cli"))
    assert summary["steps"] == len(log.commands)
    assert summary["event_digest"] == run.event_digest()
    path = tmp_path / "seed-286.jsonl"
    path.write_text(SEED_286)
    assert main(["run", "--commands", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["event_digest"] == run.event_digest()


def test_a_follower_with_an_empty_log_inside_a_leader_batch_starts_over_at_the_batch(tmp_path):
    """Kafka's UnexpectedAppendOffsetException case: the follower's log is empty and starts
    inside the leader's first batch (the leader's log start moved into it): it restarts its
    log at the batch's base offset and appends."""
    run = Run(3, CONFIG, str(tmp_path / "r"))
    run.apply_all([{"cmd": "create_topic", "topic": "t", "replication_factor": 2, "assignment": [[0, 1]],
                    "config": {"min.insync.replicas": 1}},
                   {"cmd": "advance", "ms": 300},
                   {"cmd": "produce", "topic": "t", "values": ["a", "b", "c"]},
                   {"cmd": "advance", "ms": 300}])
    part = run.cluster.replica(1, "t", 0)
    part.fetcher.stop()
    part.log.truncate_fully_and_start_at(1)      # empty, starting inside batch 0..2
    part.fetcher.become_follower(0, part.leader_epoch)
    run.apply({"cmd": "advance", "ms": 300})
    assert [v for _, v, _ in run.cluster.log_values(1, "t", 0)] == [b"a", b"b", b"c"]
    assert not run.cluster.events.of_kind("replica_fetch_failed")
