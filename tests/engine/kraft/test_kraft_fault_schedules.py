"""Seeded random fault schedules against Raft's safety rules (the VOPR habit).

3 or 5 voters (from the seed), 12–30 actions: crashes with and without power loss, crashes
and clean shutdowns of the leader, restarts, cuts both ways and one way, the leader isolated,
partitions, delays and drops, bursts of appends over a leader appending all the time. No
schedule may break a safety rule, and after healing every one must elect a leader and commit
a last append on every voter. With the metadata log unflushed, or quorum-state not fsync'd,
the same harness must find violations: the checker can fail.

A failure prints its seed and the actions as they ran; replay with
``engine.kraft.schedules.run_schedule(seed, ROOT)``.
"""
import os
import shutil
import tempfile
import time

import pytest

from engine.kraft.config import QuorumConfig
from engine.kraft.schedules import run_schedule

SAFE_SEEDS = 600
CHUNK = 100
SLOW_SEEDS = 10_000
UNSAFE_SEEDS = range(60)


def run(seed, root, config=None):
    d = tempfile.mkdtemp(prefix=f"s{seed}-", dir=root)
    try:
        return run_schedule(seed, d, config=config)
    finally:
        shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def shm():
    base = "/dev/shm" if os.path.isdir("/dev/shm") else None
    with tempfile.TemporaryDirectory(prefix="kafkaviz-kraft-vopr-", dir=base) as d:
        yield d


@pytest.mark.parametrize("chunk", range(SAFE_SEEDS // CHUNK))
def test_no_schedule_breaks_a_raft_safety_rule_and_every_one_settles(chunk, shm):
    started = time.process_time()
    committed = 0
    for seed in range(chunk * CHUNK, (chunk + 1) * CHUNK):
        r = run(seed, shm)
        assert r.ok, r.replay_hint()
        committed += r.committed
    print(f"schedules {chunk * CHUNK}..{(chunk + 1) * CHUNK - 1}: {committed} records committed, "
          f"{time.process_time() - started:.2f} s CPU")


@pytest.mark.slow
def test_ten_thousand_schedules_break_no_raft_safety_rule(shm):
    failed = []
    for seed in range(SLOW_SEEDS):
        r = run(seed, shm)
        if not r.ok:
            failed.append(r.replay_hint())
    assert not failed, f"{len(failed)} of {SLOW_SEEDS} schedules failed; first:\n{failed[0]}"


@pytest.mark.parametrize("unsafe, rules", [
    (QuorumConfig(flush_metadata_log=False), {"committed_lost", "below_hw_differs", "log_matching"}),
    (QuorumConfig(fsync_quorum_state=False), {"epoch_went_back", "two_leaders_in_epoch"}),
], ids=["metadata-log-unflushed", "quorum-state-not-fsynced"])
def test_the_checker_finds_violations_when_a_durability_step_is_skipped(unsafe, rules, shm):
    found = set()
    for seed in UNSAFE_SEEDS:
        found |= {v["rule"] for v in run(seed, shm, unsafe).violations}
    assert found & rules, f"no violation found in {len(UNSAFE_SEEDS)} unsafe schedules (found {found})"


@pytest.mark.parametrize("seed", [0, 7])
def test_a_schedule_replays_exactly_from_its_seed(seed, shm):
    a, b = run(seed, shm), run(seed, shm)
    assert a.digest == b.digest and a.applied == b.applied and a.committed == b.committed
