"""Virtual time from the leader's death (a crash: no EndQuorumEpoch) to a new leader, at
Kafka's default timeouts. Kafka documents the timeouts, not a failover figure:
controller.quorum.fetch.timeout.ms (2000) is the "maximum time without a successful fetch
from the current leader before becoming a candidate"; election.timeout.ms (1000, drawn in
[1000, 2000)) and election.backoff.max.ms (1000) bound the retries after a split vote. With
fetches parked up to 500 ms at the leader, the followers' timers run out 1.5–2 s after the
crash, and one pre-vote and one vote round trip later there is a leader. Links get seeded
delays of 0–9 ms each way, so the followers do not time out in lockstep.
"""
import os
import shutil
import tempfile

import pytest

from engine.kraft.config import QuorumConfig
from engine.kraft.failover import summarise, time_failover


def failovers(seeds, voters):
    base = "/dev/shm" if os.path.isdir("/dev/shm") else None
    out = []
    for seed in seeds:
        d = tempfile.mkdtemp(prefix="kafkaviz-kraft-failover-", dir=base)
        try:
            out.append(time_failover(seed, d, voters))
        finally:
            shutil.rmtree(d, ignore_errors=True)
    return out


@pytest.mark.parametrize("voters", [3, 5])
def test_a_new_leader_follows_the_fetch_timeout(voters):
    cfg = QuorumConfig()
    runs = failovers(range(100), voters)
    elected = summarise([r.elected_ms for r in runs])
    committed = summarise([r.committed_ms for r in runs])
    print(f"{voters} voters: elected {elected}; committing again {committed}")
    assert all(r.new_epoch > r.old_epoch for r in runs)
    lower = cfg.fetch_timeout_ms - cfg.fetch_max_wait_ms
    assert lower <= elected["min_ms"] and elected["median_ms"] <= cfg.fetch_timeout_ms + 100
    # The tail: split votes. The fetch timeout is not randomised, so followers answered by the
    # same leader event time out within the network's jitter of each other; two candidates each
    # vote for themselves and (with three voters, the dead one silent) wait out an election
    # timeout of 1-2 s rather than the short backoff a majority of refusals would start.
    split = [r for r in runs if r.candidacies > 1]
    assert elected["max_ms"] < 2 * cfg.fetch_timeout_ms + 2 * cfg.election_timeout_ms
    print(f"more than one candidacy in {len(split)} of {len(runs)} runs")


@pytest.mark.slow
@pytest.mark.parametrize("voters", [3, 5])
def test_failover_time_over_two_thousand_seeds(voters):
    runs = failovers(range(2000), voters)
    print(f"{voters} voters: elected {summarise([r.elected_ms for r in runs])}; "
          f"committing again {summarise([r.committed_ms for r in runs])}")
