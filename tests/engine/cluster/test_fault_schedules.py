"""Seeded random fault schedules against the durability promise (VOPR-style).

With RF 3, acks=all, min.insync.replicas=2, epoch truncation and no unclean election,
no acknowledged record may ever be lost and no two replicas may diverge — whatever the
schedule of crashes, clean shutdowns, restarts, cut links, isolations and clock moves.
The same harness must *find* losses when the promise is withdrawn (HW truncation, or
acks=1), which proves the checker can fail.

Every failure prints its seed and its command log as JSONL: save it to a file and replay
it with ``python -m engine run --commands FILE --truncation ... --json``.
"""
import tempfile
import time

import pytest

from engine.cluster.run import Run, dump_command_log, make_config
from engine.cluster.scenarios import FAULT_CONFIG, fault_schedule, run_schedule

SAFE_SEEDS = 1000
CHUNK = 100
UNSAFE_SEEDS = range(200)


def run_one(seed, truncation, acks, root):
    """Run one schedule; return (findings, the command log as applied)."""
    run = run_schedule(seed, root, truncation=truncation, acks=acks)
    return run.checker.findings, run.log


def replay_hint(seed, truncation, commands, findings):
    log = dump_command_log(commands, seed=seed, config=FAULT_CONFIG)
    kinds = sorted({f["kind"] for f in findings})
    return (f"\nseed {seed} (truncation={truncation}) broke the promise: {kinds}\n"
            f"first finding: {findings[0]}\n"
            f"replay: save the lines below as schedule.jsonl, then\n"
            f"  python -m engine run --commands schedule.jsonl --truncation {truncation} --json\n{log}")


@pytest.fixture
def shm_dir():
    # /dev/shm when there is one: these runs write thousands of small files.
    import os
    base = "/dev/shm" if os.path.isdir("/dev/shm") else None
    with tempfile.TemporaryDirectory(prefix="kafkaviz-vopr-", dir=base) as d:
        yield d


@pytest.mark.parametrize("chunk", range(SAFE_SEEDS // CHUNK))
def test_acks_all_min_isr_2_with_epochs_never_loses_an_acknowledged_record(chunk, shm_dir):
    started = time.process_time()
    for seed in range(chunk * CHUNK, (chunk + 1) * CHUNK):
        findings, commands = run_one(seed, "epoch", "all", f"{shm_dir}/s{seed}")
        assert findings == [], replay_hint(seed, "epoch", commands, findings)
    print(f"schedules {chunk * CHUNK}..{(chunk + 1) * CHUNK - 1}: {time.process_time() - started:.2f} s CPU")


def _first_failure(truncation, acks, root):
    for seed in UNSAFE_SEEDS:
        findings, _ = run_one(seed, truncation, acks, f"{root}/s{seed}")
        if any(f["kind"] == "check_acked_record_lost" for f in findings):
            return seed
    return None


def test_the_same_harness_finds_losses_under_hw_truncation(shm_dir):
    seed = _first_failure("hw", "all", shm_dir)
    assert seed is not None, f"no schedule in seeds {UNSAFE_SEEDS} lost an acknowledged record under truncation=hw"


def test_the_same_harness_finds_losses_with_acks_1(shm_dir):
    seed = _first_failure("epoch", 1, shm_dir)
    assert seed is not None, f"no schedule in seeds {UNSAFE_SEEDS} lost an acknowledged record with acks=1"


def test_schedules_are_a_pure_function_of_the_seed():
    assert fault_schedule(7) == fault_schedule(7)
    assert fault_schedule(7) != fault_schedule(8)


def test_a_schedule_replays_to_the_same_event_digest(shm_dir):
    first = run_schedule(35, f"{shm_dir}/r0", truncation="hw")
    again = Run(35, make_config(FAULT_CONFIG, truncation="hw"), f"{shm_dir}/r1", snapshot_every=10**9)
    for c in first.log:       # the log as applied replays without the harness's help
        again.apply(c)
    again.finish()
    assert again.event_digest() == first.event_digest()


def test_schedules_exercise_every_kind_of_fault():
    cmds = {c["cmd"] for seed in range(50) for c in fault_schedule(seed)}
    assert {"produce", "advance", "crash", "shutdown", "restart", "consume", "cut_link", "isolate",
            "heal_all"} <= cmds


# ---- regressions found by wider sweeps ---------------------------------------------------------

# Found by fault_schedule(5750, steps=16) (truncation=epoch, acks=all, min ISR 2). Broker 0 is
# elected at epoch 3 and demoted to follower at epoch 4 before it appends anything, so its
# epoch cache ends with (3, 2) == its LEO. It asks the new leader (broker 1) where epoch 3 ends;
# broker 1 answers (2, 2). Broker 0 knows no epoch 2: the KIP-279 step truncates to its own end
# of epoch 1, min(2, LEO 2) = 2 — a no-op on the log — and must ask again with the epoch cache
# cut back to entries starting below 2 (Kafka's UnifiedLog.truncateTo: "Always truncate epoch
# cache since we may have a conflicting epoch entry at the end of the log from the leader …
# this broker was a leader and inserted the first start offset entry, but then failed to append
# any entries before another leader was elected"). The core instead skips a truncation at or
# above the LEO without touching the cache and starts fetching, so broker 0 keeps v2@1 (epoch 1)
# while the leader has v3@1 (epoch 2), both below HW 2: diverged for good.
# Core files concerned: engine/cluster/replica_fetcher.py (truncate / on_epoch_response) and
# engine/log/log.py (truncate_to at or above the LEO).
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


def test_regression_seed_5750_demoted_leader_with_an_empty_epoch_does_not_diverge(tmp_path):
    from engine.cluster.run import load_command_log, run_commands

    summary = run_commands(load_command_log(SEED_5750), disk_root=str(tmp_path))
    logs = {r["broker"]: [x["value"] for x in r["records"]] for r in summary["partitions"][0]["replicas"]}
    assert logs[0] == logs[1] == logs[2], logs
    assert [f for f in summary["findings"] if f["kind"] == "check_replicas_diverged"] == []


def test_a_schedule_over_five_brokers_runs_on_a_five_broker_cluster(shm_dir):
    run = run_schedule(3, f"{shm_dir}/five", truncation="epoch", acks="all", brokers=5, steps=12)
    assert sorted(run.cluster.brokers) == [0, 1, 2, 3, 4]
    assert run.checker.findings == [], replay_hint(3, "epoch", run.log, run.checker.findings)
