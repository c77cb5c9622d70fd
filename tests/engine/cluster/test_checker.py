"""The checker's rules, on hand-made views (no cluster needed): each rule fires when its
invariant breaks and stays quiet when it holds."""
import pickle

from engine.clock import VirtualClock
from engine.cluster.checker import (AckedRecord, Checker, ConsumedRecord, HwRegressed, PartitionView,
                                    ReplicaView)
from engine.cluster.events import HighWatermarkChanged, LeaderElected, ProduceAcked
from engine.events import EventLog


def replica(broker, digests, hw, alive=True, start=0):
    return ReplicaView(broker, alive, start, start + len(digests), hw,
                       {start + i: d for i, d in enumerate(digests)})


def view(leader, isr, *replicas, epoch=0):
    return {("t", 0): PartitionView("t", 0, leader, epoch, tuple(isr), {r.broker: r for r in replicas})}


def kinds(findings):
    return [f["kind"] for f in findings]


def test_acked_record_present_on_leader_is_fine():
    c = Checker()
    c.note_acked([AckedRecord("t", 0, 1, "m2", -1, 1)])
    assert c.check(view(0, [0, 1], replica(0, ["m1", "m2"], 2), replica(1, ["m1"], 1))) == []


def test_acked_record_missing_from_leader_is_lost():
    c = Checker()
    c.note_acked([AckedRecord("t", 0, 1, "m2", -1, 7)])
    found = c.check(view(1, [1], replica(0, ["m1", "m2"], 2, alive=False), replica(1, ["m1"], 1), epoch=1))
    assert kinds(found) == ["check_acked_record_lost"]
    assert found[0]["offset"] == 1 and found[0]["found"] is None and found[0]["request_id"] == 7


def test_acked_record_replaced_on_leader_is_lost_and_reported_once():
    c = Checker()
    c.note_acked([AckedRecord("t", 0, 1, "m2", 1, None)])
    v = view(1, [1], replica(1, ["m1", "m3"], 2))
    assert kinds(c.check(v)) == ["check_acked_record_lost"]
    assert c.check(v) == []
    assert len(c.findings) == 1


def test_no_leader_means_no_verdict_yet():
    c = Checker()
    c.note_acked([AckedRecord("t", 0, 0, "m1", -1, 1)])
    assert c.check(view(None, [0], replica(0, [], 0))) == []


def test_record_below_log_start_offset_is_retention_not_loss():
    c = Checker()
    c.note_acked([AckedRecord("t", 0, 0, "m1", -1, 1)])
    assert c.check(view(0, [0], replica(0, ["m5"], 6, start=5))) == []


def test_in_sync_replicas_with_different_committed_prefix_diverged():
    c = Checker()
    found = c.check(view(1, [0, 1], replica(0, ["m1", "m2"], 2), replica(1, ["m1", "m3"], 2)))
    assert kinds(found) == ["check_replicas_diverged"]
    assert found[0]["offset"] == 1 and found[0]["brokers"] == [0, 1]


def test_difference_above_a_high_watermark_is_not_divergence():
    c = Checker()
    assert c.check(view(1, [0, 1], replica(0, ["m1", "m2"], 1), replica(1, ["m1", "m3"], 2))) == []


def test_out_of_sync_replica_is_only_compared_in_the_final_check():
    c = Checker()
    v = view(1, [1], replica(0, ["m1", "m2"], 2), replica(1, ["m1", "m3"], 2))
    assert c.check(v) == []
    assert kinds(c.check(v, final=True)) == ["check_replicas_diverged"]


def test_leader_hw_moving_back_within_an_epoch_is_a_regression():
    c = Checker()
    c.check(view(0, [0], replica(0, ["a", "b", "c"], 3)))
    found = c.check(view(0, [0], replica(0, ["a", "b", "c"], 2)))
    assert kinds(found) == ["check_hw_regressed"] and (found[0]["old"], found[0]["new"]) == (3, 2)


def test_new_leader_with_a_lower_hw_is_not_a_regression():
    c = Checker()
    c.check(view(0, [0, 1], replica(0, ["a", "b"], 2), replica(1, ["a", "b"], 1)))
    assert c.check(view(1, [1], replica(0, ["a", "b"], 2, alive=False), replica(1, ["a", "b"], 1), epoch=1)) == []


def test_consumer_handed_a_record_above_hw_is_an_uncommitted_read():
    c = Checker()
    v = view(0, [0], replica(0, ["a", "b"], 1))
    c.note_consumed([ConsumedRecord("t", 0, 1, "b")], v)
    c.check(v)
    assert kinds(c.findings) == ["check_uncommitted_read"]
    assert c.findings[0]["reason"] == "above_hw"


def test_consumed_record_later_replaced_below_hw_is_an_uncommitted_read():
    c = Checker()
    c.note_consumed([ConsumedRecord("t", 0, 1, "m2")], view(0, [0], replica(0, ["m1", "m2"], 2)))
    found = c.check(view(1, [1], replica(1, ["m1", "m3"], 2), epoch=1))
    assert kinds(found) == ["check_uncommitted_read"] and found[0]["reason"] == "replaced"


def test_consumed_committed_record_that_stays_is_fine():
    c = Checker()
    v = view(0, [0], replica(0, ["m1", "m2"], 2))
    c.note_consumed([ConsumedRecord("t", 0, 0, "m1"), ConsumedRecord("t", 0, 1, "m2")], v)
    assert c.check(v) == []


def _log():
    return EventLog(VirtualClock())


def test_acks_from_events_become_acknowledged_records_at_their_offsets():
    events = _log()
    c = Checker()
    c.attach(events)
    c.expect_produce(5, "t", 0, -1, ["x", "y"])
    events.emit(ProduceAcked(5, 0, "t", 0, -1, 3, 4, digests=["-", "-"]))
    assert [(a.offset, a.digest) for a in c.acked] == [(3, "x"), (4, "y")]


def test_an_ack_seen_before_the_request_is_registered_is_kept():
    events = _log()
    c = Checker()
    c.attach(events)
    events.emit(ProduceAcked(9, 0, "t", 0, 1, 0, 0, digests=["-"]))
    c.expect_produce(9, "t", 0, 1, ["z"])
    assert [(a.offset, a.digest, a.acks) for a in c.acked] == [(0, "z", 1)]


def test_leader_hw_decrease_event_is_reported_as_regression_event():
    events = _log()
    c = Checker()
    c.attach(events)
    events.emit(LeaderElected("t", 0, None, 0, "initial", [], 0, 0, [0], 0))
    events.emit(HighWatermarkChanged(0, "t", 0, 5, 3, "leader", "isr_leo", {}))
    found = c.check({})
    assert kinds(found) == ["check_hw_regressed"]
    assert [e.kind for e in events.of_kind("check_hw_regressed")] == ["check_hw_regressed"]
    assert isinstance(events.of_kind("check_hw_regressed")[0], HwRegressed)


def test_findings_are_emitted_into_the_attached_event_log():
    events = _log()
    c = Checker()
    c.attach(events)
    c.note_acked([AckedRecord("t", 0, 0, "m1", -1, 1)])
    c.check(view(0, [0], replica(0, [], 0)))
    assert len(events.of_kind("check_acked_record_lost")) == 1


def test_checker_pickles_without_its_event_log_and_keeps_its_memory():
    events = _log()
    c = Checker()
    c.attach(events)
    c.note_acked([AckedRecord("t", 0, 0, "m1", -1, 1)])
    c.check(view(0, [0], replica(0, [], 0)))
    c2 = pickle.loads(pickle.dumps(c))
    assert c2._events is None and c2.findings == c.findings
    assert c2.check(view(0, [0], replica(0, [], 0))) == []  # already reported


def test_summary_counts_findings_by_kind():
    c = Checker()
    c.note_acked([AckedRecord("t", 0, 0, "m1", -1, 1)])
    c.check(view(0, [0], replica(0, ["other"], 1)))
    s = c.summary()
    assert s["ok"] is False and s["counts"]["check_acked_record_lost"] == 1 and s["acknowledged_records"] == 1


def test_records_appended_to_the_same_view_are_still_checked():
    # The checker skips what it verified against the very same record dict; a record acked
    # later must still be looked up when the dict has grown.
    c = Checker()
    records = {0: "m1"}
    leader = ReplicaView(0, True, 0, 1, 1, records)
    v = {("t", 0): PartitionView("t", 0, 0, 0, (0,), {0: leader})}
    c.note_acked([AckedRecord("t", 0, 0, "m1", -1, 1)])
    assert c.check(v) == []
    records[1] = "m2"
    c.note_acked([AckedRecord("t", 0, 1, "other", -1, 2)])
    assert kinds(c.check(v)) == ["check_acked_record_lost"]


def test_a_new_record_dict_is_checked_from_the_start():
    c = Checker()
    c.note_acked([AckedRecord("t", 0, 0, "m1", -1, 1)])
    assert c.check(view(0, [0], replica(0, ["m1"], 1))) == []
    assert kinds(c.check(view(0, [0], replica(0, ["x"], 1)))) == ["check_acked_record_lost"]


def test_a_follower_still_reconciling_is_not_compared_even_in_the_final_check():
    c = Checker()
    a = ReplicaView(0, True, 0, 2, 2, {0: "m1", 1: "m2"}, "follower", 1, 2, settled=False)
    v = view(1, [1], a, replica(1, ["m1", "m3"], 2))
    assert c.check(v, final=True) == []
