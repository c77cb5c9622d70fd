"""How long a quorum is without a leader after its leader dies, in virtual time.

One run: elect, let the quorum work (a record every 100 ms) for a seed-chosen while, crash
the leader (no clean shutdown, so no EndQuorumEpoch), and time the first
``leader`` transition of a higher epoch, and the moment that leader's HW first covers its
LeaderChangeMessage (when it can commit metadata again).

What the defaults imply: followers' fetches are parked at the leader for up to
``fetch_max_wait_ms`` (500), so a follower's last answer came 0–500 ms before the crash; its
fetch timer (``controller.quorum.fetch.timeout.ms``, 2000) then fires, it turns prospective and
asks for pre-votes. A voter still in the follower state that has fetched from the dead leader
refuses a pre-vote, so with three voters the election completes once a second follower has
timed out too: about 1.5–2 s plus a few network round trips. The tail is the split vote: two
followers time out within a few ms, grant each other's pre-votes, and both stand as candidates
voting for themselves; the dead leader never answers, so neither sees a majority of
refusals (which would trigger the short backoff) and both wait out an election timeout
(1–2 s, ``controller.quorum.election.timeout.ms``) before trying again.
"""
from __future__ import annotations

import random
import statistics
from dataclasses import dataclass

from .config import QuorumConfig
from .quorum import Quorum

__all__ = ["FailoverTime", "time_failover", "summarise"]


@dataclass(frozen=True)
class FailoverTime:
    seed: int
    voters: int
    old_epoch: int
    new_epoch: int
    elected_ms: int      # crash → a voter becomes leader of a higher epoch
    committed_ms: int    # crash → a leader of a later epoch has committed its LeaderChangeMessage
    candidacies: int     # candidate transitions before the win (> 1: a split vote, or a lost one)


def time_failover(seed: int, root: str, voters: int = 3, config: QuorumConfig | None = None,
                  limit_ms: int = 60_000, max_link_delay_ms: int = 10) -> FailoverTime:
    """Each direction of each link gets its own extra delay in ``[0, max_link_delay_ms)``
    (from the seed): with identical links the followers would time out in lockstep."""
    q = Quorum(root, voters=range(1, voters + 1), seed=seed, config=config, keep_events=None)
    rng = random.Random(f"failover-{seed}")
    if max_link_delay_ms > 0:
        for a in q.voters:
            for b in q.voters:
                if a != b:
                    q.network.set_delay(a, b, rng.randrange(max_link_delay_ms), both=False)
    q.start()
    assert q.run_until(lambda: q.leader() is not None, limit_ms, step_ms=10), f"seed {seed}: no first leader"
    end = q.now_ms() + rng.randrange(1000, 6000)
    while q.now_ms() < end:
        if q.leader() is not None:
            q.append([b"x"])
        q.run(rng.randrange(20, 300))
    q.run(rng.randrange(0, 3000))        # an idle spell: the followers' fetches sit parked
    old = q.leader()
    t0 = q.now_ms()
    q.crash(old.id, power_loss=False)
    seq0 = q.events.seq

    def elected():
        return next((e for e in q.events.envelopes if e.seq > seq0 and e.event.kind == "raft_state_changed"
                     and e.event.state == "leader" and e.event.epoch > old.epoch), None)

    assert q.run_until(lambda: elected() is not None, limit_ms, step_ms=20), f"seed {seed}: no new leader"
    won = elected()

    def hw_moved():
        # The first leader of a later epoch to commit (the first winner may be deposed at once).
        return next((e.time_ms for e in q.events.envelopes if e.seq > seq0 and e.event.kind == "raft_high_watermark_changed"
                     and e.event.epoch > old.epoch and q.checker.leaders.get(e.event.epoch) == e.event.node), None)

    q.run_until(lambda: hw_moved() is not None, limit_ms, step_ms=20)
    committed = hw_moved()
    candidacies = sum(1 for e in q.events.envelopes if seq0 < e.seq <= won.seq
                      and e.event.kind == "raft_state_changed" and e.event.state == "candidate")
    return FailoverTime(seed, voters, old.epoch, won.event.epoch, won.time_ms - t0,
                        (committed - t0) if committed is not None else -1, candidacies)


def summarise(times: list[int]) -> dict:
    s = sorted(times)
    p99 = s[min(len(s) - 1, int(round(0.99 * (len(s) - 1))))]
    return {"runs": len(s), "min_ms": s[0], "median_ms": statistics.median(s), "p99_ms": p99, "max_ms": s[-1]}
