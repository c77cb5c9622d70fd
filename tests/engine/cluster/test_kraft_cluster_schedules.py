"""Seeded fault schedules on a KRaft cluster, with controller faults (issue 22).

Even seeds run combined mode (brokers 0-2 are the voters), odd seeds dedicated mode
(controllers 100-102). Under RF 3, acks=all, min.insync.replicas=2 and epoch truncation: no
acknowledged record lost, no divergence, and none of Raft's rules broken (one leader per
epoch, committed metadata never lost or changed, every node's log and every broker's applied
metadata a prefix of the committed log). The same harness must still find losses under
``truncation=hw`` and with acks=1.
"""
import os
import tempfile
import time

import pytest

from engine.cluster.kraft_schedules import kraft_fault_schedule, run_kraft_schedule
from engine.cluster.run import Run, make_config

SAFE_SEEDS = 600
CHUNK = 100
SLOW_SEEDS = 10_000
UNSAFE_SEEDS = range(600)
ALLOWED_REFUSALS = {("consume", "LEADER_NOT_AVAILABLE"), ("consume", "BROKER_NOT_AVAILABLE"),
                    ("consume", "OFFSET_OUT_OF_RANGE")}


def shape(seed):
    return {"brokers": 3 + seed % 5, "steps": 8 + seed % 13}


def run_one(seed, root, truncation="epoch", acks="all"):
    return run_kraft_schedule(seed, root, truncation=truncation, acks=acks, **shape(seed))


def assert_safe(run):
    hint = f"seed {run.seed} {shape(run.seed)} ({run.schedule_config.get('controllers', 0)} dedicated controllers)"
    assert run.raft_violations == [], f"{hint}: {run.raft_violations[:3]}"
    assert run.checker.findings == [], f"{hint}: {run.checker.findings[:3]}"
    refused = {(cmd, err) for _, cmd, err in run.refusals}
    assert refused <= ALLOWED_REFUSALS, f"{hint}: refused {sorted(refused - ALLOWED_REFUSALS)}"
    assert run.checker.event_counts.get("replica_fetch_failed", 0) == 0, hint
    # The tail heals everything: a leader, and every running node has applied all that is committed.
    ctl = run.cluster.controller
    assert ctl.active is not None, f"{hint}: no active controller after the settle"


@pytest.fixture
def shm_dir():
    base = "/dev/shm" if os.path.isdir("/dev/shm") else None
    with tempfile.TemporaryDirectory(prefix="kafkaviz-kraft-", dir=base) as d:
        yield d


@pytest.mark.parametrize("chunk", range(SAFE_SEEDS // CHUNK))
def test_controller_faults_never_break_raft_or_lose_an_acknowledged_record(chunk, shm_dir):
    started = time.process_time()
    for seed in range(chunk * CHUNK, (chunk + 1) * CHUNK):
        assert_safe(run_one(seed, f"{shm_dir}/s{seed}"))
    print(f"kraft schedules {chunk * CHUNK}..{(chunk + 1) * CHUNK - 1}: {time.process_time() - started:.2f} s CPU, "
          f"load {os.getloadavg()}")


@pytest.mark.slow
def test_ten_thousand_schedules_with_controller_faults(shm_dir):
    import shutil
    for seed in range(SAFE_SEEDS, SAFE_SEEDS + SLOW_SEEDS):
        root = f"{shm_dir}/s{seed}"
        assert_safe(run_one(seed, root))
        shutil.rmtree(root, ignore_errors=True)


def _first_loss(root, truncation, acks):
    for seed in UNSAFE_SEEDS:
        run = run_one(seed, f"{root}/s{seed}", truncation, acks)
        assert run.raft_violations == []          # the metadata quorum is safe whatever the data path does
        if any(f["kind"] == "check_acked_record_lost" for f in run.checker.findings):
            return seed
    return None


def test_the_same_harness_still_finds_losses_under_hw_truncation(shm_dir):
    assert _first_loss(shm_dir, "hw", "all") is not None


def test_the_same_harness_still_finds_losses_with_acks_1(shm_dir):
    assert _first_loss(shm_dir, "epoch", 1) is not None


def test_schedules_fault_the_controllers():
    seen = set()
    for seed in range(200):
        for c in kraft_fault_schedule(seed, **shape(seed)):
            node = c.get("broker", c.get("a"))
            if isinstance(node, int) and node >= 100:
                seen.add(c["cmd"])
    assert {"crash", "shutdown", "restart", "isolate", "cut_link"} <= seen
    assert kraft_fault_schedule(9, **shape(9)) == kraft_fault_schedule(9, **shape(9))


def test_a_kraft_schedule_replays_to_the_same_event_digest(shm_dir):
    first = run_one(13, f"{shm_dir}/r0")
    again = Run(13, make_config(first.schedule_config), f"{shm_dir}/r1", snapshot_every=10**9)
    for c in first.log:
        again.apply(c)
    again.finish()
    assert again.event_digest() == first.event_digest()
