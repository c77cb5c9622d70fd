"""Seeded random fault schedules against the durability promise (VOPR-style).

With RF 3, acks=all, min.insync.replicas=2, epoch truncation (by OffsetsForLeaderEpoch
and by Fetch v12's DivergingEpoch, alternating with the seed) and no unclean election, no
acknowledged record may ever be lost and no two replicas may diverge — whatever the
schedule of crashes, clean shutdowns, restarts, bounces, cut links (both ways, one way,
the client's), isolations, delays and drops on broker and client links, slow and paused
followers, preferred elections and clock moves, over 3 to 7 brokers. The same harness
must *find* losses when the promise is withdrawn (HW truncation, or acks=1), which proves
the checker can fail. Under every rule, a command either is refused by validation with a
Kafka-named error (only a ``consume`` with no leader at that moment, here) or runs to the
end: nothing else may escape a command.

Every failure prints its seed and its command log as JSONL: save it to a file and replay
it with ``python -m engine run --commands FILE --json``.
"""
import os
import tempfile
import time
from pathlib import Path

import pytest

from engine.cluster.run import Run, dump_command_log, load_command_log, make_config, run_commands
from engine.cluster.scenarios import fault_schedule, run_schedule, schedule_config

SAFE_SEEDS = 600
CHUNK = 100
SLOW_SEEDS = 10_000
UNSAFE_SEEDS = range(300)
# The one refusal a schedule may meet: it cannot know whether the partition has a leader.
ALLOWED_REFUSALS = {("consume", "LEADER_NOT_AVAILABLE"), ("consume", "BROKER_NOT_AVAILABLE"),
                    ("consume", "OFFSET_OUT_OF_RANGE")}


def shape(seed):
    """Brokers and steps of a schedule: 3–7 brokers, 8–20 actions, from the seed."""
    return {"brokers": 3 + seed % 5, "steps": 8 + seed % 13}


def run_one(seed, truncation, acks, root):
    return run_schedule(seed, root, truncation=truncation, acks=acks, **shape(seed))


def replay_hint(run, problem):
    log = dump_command_log(run.log, seed=run.seed, config=run.schedule_config)
    first = run.checker.findings[0] if run.checker.findings else None
    return (f"\nseed {run.seed} {shape(run.seed)} broke the promise: {problem}\nfirst finding: {first}\n"
            f"replay: save the lines below as schedule.jsonl, then\n"
            f"  python -m engine run --commands schedule.jsonl --json\n{log}")


def assert_kept_the_promise(run):
    kinds = sorted({f["kind"] for f in run.checker.findings})
    assert run.checker.findings == [], replay_hint(run, kinds)
    refused = {(cmd, err) for _, cmd, err in run.refusals}
    assert refused <= ALLOWED_REFUSALS, replay_hint(run, f"refused {sorted(refused - ALLOWED_REFUSALS)}")
    failed = run.checker.event_counts.get("replica_fetch_failed", 0)
    assert failed == 0, replay_hint(run, f"a fetcher failed {failed} time(s)")


@pytest.fixture
def shm_dir():
    # /dev/shm when there is one: these runs write thousands of small files.
    base = "/dev/shm" if os.path.isdir("/dev/shm") else None
    with tempfile.TemporaryDirectory(prefix="kafkaviz-vopr-", dir=base) as d:
        yield d


@pytest.mark.parametrize("chunk", range(SAFE_SEEDS // CHUNK))
def test_acks_all_min_isr_2_with_epochs_never_loses_an_acknowledged_record(chunk, shm_dir):
    started = time.process_time()
    for seed in range(chunk * CHUNK, (chunk + 1) * CHUNK):
        assert_kept_the_promise(run_one(seed, "epoch", "all", f"{shm_dir}/s{seed}"))
    print(f"schedules {chunk * CHUNK}..{(chunk + 1) * CHUNK - 1}: {time.process_time() - started:.2f} s CPU")


@pytest.mark.slow
def test_ten_thousand_schedules_never_lose_an_acknowledged_record(shm_dir):
    import shutil
    for seed in range(SAFE_SEEDS, SAFE_SEEDS + SLOW_SEEDS):
        root = f"{shm_dir}/s{seed}"
        assert_kept_the_promise(run_one(seed, "epoch", "all", root))
        shutil.rmtree(root, ignore_errors=True)


def _first_loss(truncation, acks, root):
    """The first seed whose schedule loses an acknowledged record; every schedule on the way
    must run without anything but an allowed refusal."""
    for seed in UNSAFE_SEEDS:
        run = run_one(seed, truncation, acks, f"{root}/s{seed}")
        refused = {(cmd, err) for _, cmd, err in run.refusals}
        assert refused <= ALLOWED_REFUSALS, replay_hint(run, f"refused {sorted(refused - ALLOWED_REFUSALS)}")
        if any(f["kind"] == "check_acked_record_lost" for f in run.checker.findings):
            return seed
    return None


def test_the_same_harness_finds_losses_under_hw_truncation(shm_dir):
    seed = _first_loss("hw", "all", shm_dir)
    assert seed is not None, f"no schedule in seeds {UNSAFE_SEEDS} lost an acknowledged record under truncation=hw"


def test_the_same_harness_finds_losses_with_acks_1(shm_dir):
    seed = _first_loss("epoch", 1, shm_dir)
    assert seed is not None, f"no schedule in seeds {UNSAFE_SEEDS} lost an acknowledged record with acks=1"


def test_schedules_are_a_pure_function_of_the_seed():
    assert fault_schedule(7) == fault_schedule(7)
    assert fault_schedule(7) != fault_schedule(8)
    assert schedule_config(7) != schedule_config(8)   # the fetch protocol alternates


def test_a_schedule_replays_to_the_same_event_digest(shm_dir):
    first = run_schedule(35, f"{shm_dir}/r0", truncation="hw", brokers=5, steps=14)
    again = Run(35, make_config(first.schedule_config), f"{shm_dir}/r1", snapshot_every=10**9)
    for c in first.log:       # the log as applied replays without the harness's help
        again.apply(c)
    again.finish()
    assert again.event_digest() == first.event_digest()


def test_schedules_exercise_every_kind_of_fault():
    seen = set()
    for seed in range(300):
        cmds = fault_schedule(seed, **shape(seed))
        for i, c in enumerate(cmds):
            kind = c["cmd"]
            if kind in ("cut_link", "set_link_delay", "set_drop_probability", "heal_link"):
                kind += "/client" if -1 in (c["a"], c["b"]) else "/brokers"
                kind += "/both" if c["both"] else "/one-way"
            elif kind == "produce":
                kind += "/batch" if c.get("values") else "/one"
            elif kind == "crash" and i + 1 < len(cmds) and cmds[i + 1] == {"cmd": "restart", "broker": c["broker"]}:
                kind = "bounce"
            elif kind == "crash" and i + 2 < len(cmds) and cmds[i + 1]["cmd"] == "advance" \
                    and cmds[i + 2] == {"cmd": "restart", "broker": c["broker"]}:
                kind = "bounce/after-ms"
            seen.add(kind)
    expected = {"produce/one", "produce/batch", "advance", "crash", "shutdown", "restart", "bounce",
                "bounce/after-ms", "consume", "isolate", "heal_all", "slow_follower", "pause_follower",
                "resume_follower", "elect_preferred_leaders"}
    for cmd in ("cut_link", "set_link_delay", "set_drop_probability", "heal_link"):
        for who in ("client", "brokers"):
            for way in ("both", "one-way"):
                expected.add(f"{cmd}/{who}/{way}")
    assert expected <= seen, sorted(expected - seen)
    assert {shape(s)["brokers"] for s in range(10)} == {3, 4, 5, 6, 7}


def test_a_schedule_over_seven_brokers_runs_on_a_seven_broker_cluster(shm_dir):
    run = run_schedule(3, f"{shm_dir}/seven", truncation="epoch", acks="all", brokers=7, steps=12)
    assert sorted(run.cluster.brokers) == list(range(7))
    assert_kept_the_promise(run)


# ---- regressions found by wider sweeps ---------------------------------------------------------

# Found by fault_schedule(5750, steps=16) (truncation=epoch, acks=all, min ISR 2). Broker 0 is
# elected at epoch 3 and demoted to follower at epoch 4 before it appends anything, so its
# epoch cache ends with (3, 2) == its LEO. It asks the new leader (broker 1) where epoch 3 ends;
# broker 1 answers (2, 2). Broker 0 knows no epoch 2: the KIP-279 step truncates to its own end
# of epoch 1, min(2, LEO 2) = 2 — a no-op on the log — and must ask again with the epoch cache
# cut back to entries starting below 2 (Kafka's UnifiedLog.truncateTo: "Always truncate epoch
# cache since we may have a conflicting epoch entry at the end of the log from the leader …
# this broker was a leader and inserted the first start offset entry, but then failed to append
# any entries before another leader was elected"). The core instead skipped a truncation at or
# above the LEO without touching the cache and started fetching, so broker 0 kept v2@1 (epoch 1)
# while the leader had v3@1 (epoch 2), both below HW 2: diverged for good.
SEED_5750 = """\
{"seed": 5750, "config": {"broker.heartbeat.interval.ms": 300, "broker.session.timeout.ms": 900, "brokers": 3, "replica.fetch.backoff.ms": 50, "replica.fetch.wait.max.ms": 500, "replica.lag.time.max.ms": 1000, "request.timeout.ms": 500}}
{"cmd": "create_topic", "topic": "t", "replication_factor": 3, "assignment": [[2, 0, 1]], "config": {"flush.messages": 1, "min.insync.replicas": 2}}
{"cmd": "advance", "ms": 300}
{"cmd": "produce", "topic": "t", "value": "v1"}
{"cmd": "advance", "ms": 300}
{"cmd": "crash", "broker": 0}
{"cmd": "restart", "broker": 0}
{"cmd": "consume", "topic": "t"}
{"cmd": "shutdown", "broker": 2}
{"cmd": "produce", "topic": "t", "value": "v2"}
{"cmd": "isolate", "broker": 1}
{"cmd": "heal_all"}
{"cmd": "cut_link", "a": 0, "b": 2}
{"cmd": "advance", "ms": 3}
{"cmd": "crash", "broker": 0}
{"cmd": "produce", "topic": "t", "value": "v3"}
{"cmd": "advance", "ms": 300}
{"cmd": "advance", "ms": 2}
{"cmd": "crash", "broker": 1}
{"cmd": "restart", "broker": 1}
{"cmd": "isolate", "broker": 1}
{"cmd": "heal_all"}
{"cmd": "restart", "broker": 0}
{"cmd": "restart", "broker": 2}
{"cmd": "advance", "ms": 1500}
"""


@pytest.mark.parametrize("protocol", ["offsets_for_leader_epoch", "diverging_epoch"])
def test_regression_seed_5750_demoted_leader_with_an_empty_epoch_does_not_diverge(tmp_path, protocol):
    summary = run_commands(load_command_log(SEED_5750), disk_root=str(tmp_path),
                           config={"fetch.protocol": protocol})
    logs = {r["broker"]: [x["value"] for x in r["records"]] for r in summary["partitions"][0]["replicas"]}
    assert logs[0] == logs[1] == logs[2], logs
    assert [f for f in summary["findings"] if f["kind"] == "check_replicas_diverged"] == []


def test_regression_seed_1465_hw_follower_inside_a_leader_batch(tmp_path):
    """fault_schedule(1465, brokers=3, steps=30) under truncation=hw, found by the client-link
    delays and record batches added for issue 12: its last ``advance`` raised INVALID_REQUEST
    ("follower append starts at offset 0, below the log end offset 1") out of the follower's
    fetch. Now the follower marks that partition failed and the schedule completes."""
    text = (Path(__file__).parent / "schedules" / "seed-1465-hw.jsonl").read_text()
    log = load_command_log(text)
    run = Run(log.seed, make_config(log.config), str(tmp_path / "r"), snapshot_every=10**9, keep_events=None)
    for c in log.commands:
        run.apply(c)
    assert [(e.broker, e.error) for e in run.cluster.events.of_kind("replica_fetch_failed")] == \
           [(0, "UNEXPECTED_APPEND_OFFSET")]
    assert all(b.alive for b in run.cluster.brokers.values())
