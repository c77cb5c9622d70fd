"""Runs replay exactly; rewind, snapshot/restore and fork keep the event stream."""
import json

import pytest

from engine.cluster.run import Run, dump_command_log, load_command_log, run_commands
from engine.errors import InvalidRequestError, UnknownTopicOrPartitionError

CONFIG = {"brokers": 3, "broker.session.timeout.ms": 1500, "broker.heartbeat.interval.ms": 300,
          "replica.lag.time.max.ms": 2000}

COMMANDS = [
    {"cmd": "create_topic", "topic": "t", "partitions": 2, "replication_factor": 3,
     "config": {"min.insync.replicas": 2}},
    {"cmd": "advance", "ms": 500},
    {"cmd": "produce", "topic": "t", "values": ["a", "b"]},
    {"cmd": "set_drop_probability", "a": 0, "b": 1, "probability": 0.3},
    {"cmd": "advance", "ms": 300},
    {"cmd": "produce", "topic": "t", "partition": 1, "count": 3, "acks": 1},
    {"cmd": "crash", "broker": 1},
    {"cmd": "advance", "ms": 2500},
    {"cmd": "produce", "topic": "t", "value": "c"},
    {"cmd": "restart", "broker": 1},
    {"cmd": "heal_all"},
    {"cmd": "advance", "ms": 1500},
    {"cmd": "consume", "topic": "t"},
]


def play(root, seed=3, commands=COMMANDS, snapshot_every=4):
    run = Run(seed, CONFIG, str(root), snapshot_every=snapshot_every)
    digests = [run.event_digest()]
    for c in commands:
        run.apply(c)
        digests.append(run.event_digest())
    return run, digests


def test_same_seed_and_commands_give_the_same_event_stream(tmp_path):
    _, a = play(tmp_path / "a")
    _, b = play(tmp_path / "b")
    assert a == b


def test_a_different_seed_gives_a_different_stream(tmp_path):
    _, a = play(tmp_path / "a", seed=3)
    _, b = play(tmp_path / "b", seed=4)
    assert a[-1] != b[-1]


def test_rewind_to_any_step_restores_the_stream_of_that_step(tmp_path):
    run, digests = play(tmp_path / "a")
    for k in (len(COMMANDS), 9, 4, 5, 0, 13, 2):
        run.seek(k)
        assert run.position == k
        assert run.event_digest() == digests[k], k


def test_rewind_then_redo_replays_to_the_same_end(tmp_path):
    run, digests = play(tmp_path / "a")
    run.rewind(3)
    while run.position < len(run.log):
        run.redo()
        assert run.event_digest() == digests[run.position]
    assert run.summary()["event_digest"] == digests[-1]


def test_rewind_restores_file_contents(tmp_path):
    run, _ = play(tmp_path / "a")
    final = run.cluster.disk.capture()
    run.seek(2)
    assert run.cluster.disk.capture() != final
    run.seek(len(COMMANDS))
    assert run.cluster.disk.capture() == final


def test_applying_after_a_rewind_forgets_the_old_future(tmp_path):
    run, _ = play(tmp_path / "a")
    run.seek(5)
    run.apply({"cmd": "advance", "ms": 7})
    assert len(run.log) == 6 and run.log[-1] == {"cmd": "advance", "ms": 7}
    with pytest.raises(InvalidRequestError, match="nothing to redo"):
        run.redo()


def test_a_refused_command_changes_nothing_and_is_not_logged(tmp_path):
    run, digests = play(tmp_path / "a", commands=COMMANDS[:3])
    with pytest.raises(UnknownTopicOrPartitionError):
        run.apply({"cmd": "produce", "topic": "nope"})
    with pytest.raises(InvalidRequestError):
        run.apply({"cmd": "crash", "broker": 9})
    assert run.event_digest() == digests[-1] and len(run.log) == 3


def test_a_refused_command_after_a_rewind_keeps_the_redo_list(tmp_path):
    run, _ = play(tmp_path / "a")
    run.seek(4)
    with pytest.raises(InvalidRequestError):
        run.apply({"cmd": "jump", "to_ms": 0 if run.cluster_time_ms else -1})
    assert len(run.log) == len(COMMANDS)


def test_snapshot_restore_continues_with_the_identical_stream(tmp_path):
    from engine.cluster.cluster import Cluster
    from engine.cluster.commands import apply_command

    run, digests = play(tmp_path / "a", commands=COMMANDS[:7])
    blob = run.cluster.snapshot()
    copy = Cluster.restore(blob, tmp_path / "copy")
    assert copy.events.digest() == digests[-1]
    for c in COMMANDS[7:]:
        apply_command(copy, c)
        run.apply(c)
    assert copy.events.digest() == run.event_digest()


def test_fork_shares_history_up_to_the_fork_point_and_diverges_after(tmp_path):
    run, digests = play(tmp_path / "a")
    fork = run.fork(tmp_path / "fork", step=8)
    assert fork.position == 8 and fork.log == run.log[:8]
    assert fork.event_digest() == digests[8]
    assert [e.to_dict() for e in fork.cluster.events.envelopes] == \
           [e.to_dict() for e in run.cluster.events.envelopes[:fork.cluster.events.seq]]
    fork.apply({"cmd": "crash", "broker": 2})
    assert fork.event_digest() != digests[9]
    # The original is untouched by the fork: it still replays to its own end.
    run.seek(len(COMMANDS))
    assert run.event_digest() == digests[-1]


def test_fork_needs_its_own_directory(tmp_path):
    run, _ = play(tmp_path / "a", commands=COMMANDS[:2])
    with pytest.raises(InvalidRequestError, match="own data directory"):
        run.fork(tmp_path / "a")


def test_seek_outside_the_run_is_refused(tmp_path):
    run, _ = play(tmp_path / "a", commands=COMMANDS[:2])
    with pytest.raises(InvalidRequestError, match="outside the run"):
        run.seek(3)


def test_checker_state_travels_with_the_snapshot(tmp_path):
    run, _ = play(tmp_path / "a")
    acked = len(run.checker.acked)
    assert acked > 0
    run.seek(1)
    assert run.checker.acked == []
    run.seek(len(COMMANDS))
    assert len(run.checker.acked) == acked


# ---- command logs and summaries -------------------------------------------------------------

def test_command_log_round_trips_through_jsonl():
    text = dump_command_log(COMMANDS, seed=5, config=CONFIG)
    log = load_command_log(text)
    assert log.seed == 5 and log.config == CONFIG
    assert [c.to_dict() for c in log.commands] == [c.to_dict() for c in load_command_log(
        "\n".join(json.dumps(c) for c in COMMANDS)).commands]


def test_command_log_skips_blank_and_comment_lines():
    log = load_command_log('# a comment\n\n{"cmd": "advance", "ms": 1}\n')
    assert len(log.commands) == 1 and log.seed is None


@pytest.mark.parametrize("text, message", [
    ('{"cmd": "advance", "ms": 1}\nnot json\n', "line 2 is not valid JSON"),
    ('{"cmd": "advance", "ms": -1}\n', "line 1: advance: field 'ms' must be at least 0"),
    ('{"seed": "x"}\n', "line 1: seed must be an integer"),
    ('{"seed": 1, "colour": 2}\n', "line 1: a header takes seed and config"),
])
def test_bad_command_logs_name_the_line(text, message):
    with pytest.raises(InvalidRequestError, match=message):
        load_command_log(text)


def test_run_summary_has_logs_offsets_epochs_leader_isr_acks_and_findings(tmp_path):
    s = run_commands(load_command_log(dump_command_log(COMMANDS, seed=3, config=CONFIG)), disk_root=str(tmp_path))
    assert s["seed"] == 3 and s["truncation"] == "epoch" and s["steps"] == len(COMMANDS)
    p0 = s["partitions"][0]
    assert {"topic", "partition", "leader", "leader_epoch", "isr", "high_watermark", "replicas",
            "acknowledged", "diverged"} <= set(p0)
    r = next(r for r in p0["replicas"] if r["alive"])
    assert {"broker", "role", "leo", "high_watermark", "log_start_offset", "epoch_cache", "records"} <= set(r)
    assert {"offset", "epoch", "digest", "value"} <= set(r["records"][0])
    assert all(a["present"] for a in p0["acknowledged"])
    assert s["ok"] is True and s["findings"] == []
    json.dumps(s)  # plain JSON


def test_command_line_flags_override_the_header(tmp_path):
    log = load_command_log(dump_command_log(COMMANDS[:2], seed=3, config=CONFIG))
    s = run_commands(log, seed=9, truncation="hw", disk_root=str(tmp_path))
    assert s["seed"] == 9 and s["truncation"] == "hw"


def test_incremental_replica_reader_matches_a_full_read(tmp_path):
    from engine.cluster.run import log_entries
    from engine.cluster.scenarios import get_scenario

    sc = get_scenario("kip101-divergence")   # truncations, crashes, restarts
    run = Run(0, {**sc.config, "truncation": "epoch"}, str(tmp_path), snapshot_every=100)
    for c in sc.commands():
        run.apply(c)
        for b, broker in run.cluster.brokers.items():
            for (t, p), part in broker.partitions.items():
                entries, digests = run._reader.read(b, t, p, part.log)
                assert entries == log_entries(part.log)
                assert sorted(digests) == [e[0] for e in entries]


def test_a_command_the_cluster_refuses_after_a_rewind_keeps_the_redo_list(tmp_path):
    run, _ = play(tmp_path / "a")
    run.seek(8)   # broker 1 is down here (crashed at step 7)
    with pytest.raises(Exception):
        run.apply({"cmd": "crash", "broker": 1})
    assert len(run.log) == len(COMMANDS) and run.position == 8
    run.redo()
    assert run.position == 9


def test_queued_commands_are_stepped_through_forwards_and_backwards(tmp_path):
    _, digests = play(tmp_path / "a")
    run = Run(3, CONFIG, str(tmp_path / "b"), snapshot_every=4)
    run.queue(COMMANDS)
    assert run.position == 0 and len(run.log) == len(COMMANDS)
    run.seek(6)
    assert run.event_digest() == digests[6]
    run.redo()
    run.seek(2)
    assert run.event_digest() == digests[2]
    run.seek(len(COMMANDS))
    assert run.event_digest() == digests[-1]


def test_asking_for_a_summary_changes_nothing(tmp_path):
    run, digests = play(tmp_path / "a", commands=COMMANDS[:8])
    findings = list(run.checker.findings)
    run.summary()
    run.summary()
    assert run.event_digest() == digests[-1] and run.checker.findings == findings


def test_a_run_refuses_a_data_directory_that_is_not_empty(tmp_path):
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "x").write_text("left over")
    with pytest.raises(InvalidRequestError, match="not empty"):
        Run(0, CONFIG, str(tmp_path / "old"))


def test_snapshots_are_thinned_but_every_step_stays_reachable(tmp_path):
    _, digests = play(tmp_path / "a")
    run = Run(3, CONFIG, str(tmp_path / "b"), snapshot_every=1, max_snapshots=4)
    for c in COMMANDS:
        run.apply(c)
    assert len(run.snapshot_steps()) <= 4 and 0 in run.snapshot_steps()
    for k in (3, 11, 0, 7):
        run.seek(k)
        assert run.event_digest() == digests[k]


# ---- bounded memory: checkpoints, shared file blocks, the event ring --------------------------

FREE_PLAY = [{"cmd": "produce", "topic": "t", "value": f"f{i}"} if i % 2 else {"cmd": "advance", "ms": 700}
             for i in range(60)]


def test_checkpoints_share_unchanged_file_blocks(tmp_path):
    """Copy-on-write: a checkpoint adds only the blocks that changed since the others, so
    the block store holds little more than one copy of the data, not one per checkpoint."""
    run = Run(3, CONFIG, str(tmp_path / "a"), snapshot_every=1, max_snapshots=30)
    run.apply_all(COMMANDS + FREE_PLAY)
    cps = [run._snapshots[k] for k in run.snapshot_steps()]
    assert len(cps) == 30
    total = sum(size for cp in cps for size, is_dir, _ in cp.files.values() if not is_dir)
    one_copy = sum(image.size for image in run.cluster.disk.capture().values())
    assert run._store.nbytes < one_copy < total / 10


def test_the_newest_checkpoints_stay_dense_and_step_0_stays(tmp_path):
    run = Run(3, CONFIG, str(tmp_path / "a"), snapshot_every=1, max_snapshots=8)
    run.apply_all(COMMANDS + FREE_PLAY)
    steps = run.snapshot_steps()
    end = len(COMMANDS + FREE_PLAY)
    assert len(steps) == 8 and steps[0] == 0 and steps[-1] == end
    assert end - 1 in steps                                  # one step back restores, no replay
    gaps = [b - a for a, b in zip(steps, steps[1:])]
    assert gaps == sorted(gaps, reverse=True) and gaps[0] > 4 * gaps[-1]   # sparse far back, dense near the end


def test_the_event_ring_is_bounded_and_counts_what_it_dropped(tmp_path):
    whole, digests = play(tmp_path / "whole")
    run = Run(3, CONFIG, str(tmp_path / "ring"), snapshot_every=4, keep_events=40)
    for c in COMMANDS:
        run.apply(c)
    events = run.cluster.events
    assert len(events.envelopes) == 40
    assert run.events_dropped == events.seq - 40 > 0
    assert [e.to_dict() for e in events.envelopes] == [e.to_dict() for e in whole.cluster.events.envelopes[-40:]]
    assert run.event_digest() == digests[-1]                  # the digest covers the whole stream
    kinds = {}
    for e in whole.cluster.events.envelopes:
        kinds[e.event.kind] = kinds.get(e.event.kind, 0) + 1
    assert run.checker.event_counts == kinds                  # counts forget nothing
    # Time travel with a ring: the ring after a seek holds the run's events up to that step.
    run.seek(5)
    assert run.event_digest() == digests[5]
    assert all(e.seq <= events.seq for e in run.cluster.events.envelopes)
    whole.seek(5)
    tail = [e.to_dict() for e in run.cluster.events.envelopes]
    assert tail == [e.to_dict() for e in whole.cluster.events.envelopes[-len(tail):]]
    run.seek(len(COMMANDS))     # forward from a checkpoint past the ring: no hole, the newest events
    assert run.event_digest() == digests[-1]
    seqs = [e.seq for e in run.cluster.events.envelopes]
    assert seqs and seqs == list(range(seqs[0], run.cluster.events.seq + 1))
    assert run.events_dropped == run.cluster.events.seq - len(seqs)


def test_checkpoint_memory_does_not_grow_with_the_run(tmp_path):
    """The design this replaced kept a full pickle (event history included) per step: 30 MiB
    and more for a long lesson. Checkpoints are bounded in number and share file blocks."""
    run = Run(3, CONFIG, str(tmp_path / "a"), snapshot_every=1)
    held = []
    for i, c in enumerate(COMMANDS + FREE_PLAY * 3):
        run.apply(c)
        if i + 1 in (60, len(COMMANDS) + 3 * len(FREE_PLAY)):
            held.append(sum(run._snapshots[k].nbytes for k in run.snapshot_steps()) + run._store.nbytes)
    assert len(run.snapshot_steps()) <= run.max_snapshots
    assert held[1] < 1.8 * held[0] and held[1] < 1_000_000, held
