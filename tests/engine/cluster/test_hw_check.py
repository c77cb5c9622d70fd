"""The leader's HW check (Partition.maybe_increment_hw) stops at the first counted follower at or
below the HW and asks the min-ISR guard only when the HW could move. Held here to the rule as
written before that shortcut: the minimum LEO over the maximal ISR and the eligible followers
caught up within replica.lag.time.max.ms, guarded by min.insync.replicas (KAFKA-15583), on
random leader states: the same answer, the same new HW and the same event."""
from __future__ import annotations

import tempfile

from hypothesis import given, settings, strategies as st

from engine.cluster.cluster import Cluster
from engine.cluster.config import ClusterConfig
from engine.cluster.partition import PendingIsr
from engine.disk import Disk

LEO = 40


def reference(p) -> tuple[bool, int, dict | None]:
    """(moved, HW after, isr_leos of the event) by the rule as written before the shortcut."""
    log = p.log
    if p.role != "leader":
        return False, log.high_watermark, None
    if p.cfg.hw_min_isr_guard and len(p.isr) < p.effective_min_isr():
        return False, log.high_watermark, None
    leo, hw = log._log_end_offset, log.high_watermark
    if leo <= hw:
        return False, hw, None
    now = p.now()
    maximal = p.maximal_isr()
    eligible = p.broker.cluster.controller.is_eligible
    lag_max = p.cfg.replica_lag_time_max_ms
    candidate, counted = leo, []
    for rid in sorted(p.remotes):
        r = p.remotes[rid]
        if rid in maximal or (eligible(rid) and r.leo >= 0 and (r.leo == leo or now - r.last_caught_up_ms <= lag_max)):
            counted.append(rid)
            candidate = min(candidate, r.leo)
    if candidate <= hw:
        return False, hw, None
    leos = {str(p.broker.id): leo}
    for rid in counted:
        leos[str(rid)] = p.remotes[rid].leo
    return True, candidate, leos


def leader_partition(root: str):
    c = Cluster(Disk(root), ClusterConfig(brokers=4), seed=1)
    c.create_topic("t", 1, 4, {"min.insync.replicas": 2}, assignment=[[0, 1, 2, 3]])
    c.advance(100)
    for _ in range(4):
        c.produce("t", 0, [b"v"] * 10, acks=1)
        c.advance(5)
    c.advance(2000)
    c.brokers[0].alive = False          # nothing else runs while the test sets its state
    return c, c.replica(0, "t", 0)


follower = st.tuples(st.integers(-1, LEO), st.integers(0, 40_000), st.booleans())


@settings(max_examples=150, deadline=None)
@given(hw=st.integers(0, LEO), isr=st.sets(st.sampled_from([1, 2, 3])),
       remotes=st.tuples(follower, follower, follower), pending=st.one_of(
           st.none(), st.tuples(st.sets(st.sampled_from([0, 1, 2, 3])), st.booleans())),
       min_isr=st.integers(1, 4), guard=st.booleans(), now_lag=st.integers(0, 40_000))
def test_the_hw_check_gives_the_rule_s_answer_and_event(hw, isr, remotes, pending, min_isr, guard, now_lag):
    with tempfile.TemporaryDirectory() as root:
        c, p = leader_partition(root)
        assert p.role == "leader" and p.log._log_end_offset == LEO
        p.isr = tuple(sorted({0} | isr))
        p.pending_isr = None if pending is None else PendingIsr(tuple(sorted(pending[0])), 0, pending[1])
        p.log.high_watermark = hw
        now = c.now_ms()
        fenced = set()
        for rid, (leo, ago, eligible) in zip((1, 2, 3), remotes):
            r = p.remotes[rid]
            r.leo, r.last_caught_up_ms = leo, now - ago
            if not eligible:
                fenced.add(rid)
        controller = c.controller
        real_eligible = controller.is_eligible
        controller.is_eligible = lambda b: b not in fenced and real_eligible(b)
        c.config = c.config.replace(hw_min_isr_guard=guard)
        controller.topics["t"].config = controller.topics["t"].config.replace(min_insync_replicas=min_isr)
        expected = reference(p)
        seq = c.events.seq
        moved = p.maybe_increment_hw("test")
        events = [e.event for e in c.events.since(seq) if e.event.kind == "high_watermark_changed"]
        assert (moved, p.log.high_watermark) == expected[:2]
        assert [e.isr_leos for e in events] == ([expected[2]] if expected[0] else [])
        c.disk.close_all()
