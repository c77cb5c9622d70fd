"""Sentences of the producer, transaction and timing-wheel events (lessons 14 and 15), taken
from events a real cluster emitted: each says what the engine did with the event's own
numbers, in English and Chinese."""
from __future__ import annotations

from engine import narration
from engine.cluster.run import Run


def events_of(run: Run, kind: str) -> list[dict]:
    return [e.to_dict() for e in run.cluster.events.envelopes if e.to_dict()["kind"] == kind]


def test_duplicate_and_retry_sentences_carry_the_sequence_and_the_first_offsets(tmp_path):
    run = Run(3, {"brokers": 3, "request.timeout.ms": 2000}, str(tmp_path / "r"))
    for cmd in ({"cmd": "create_topic", "topic": "t", "assignment": [[0, 1, 2]]}, {"cmd": "advance", "ms": 50},
                {"cmd": "create_producer", "name": "safe"}, {"cmd": "cut_link", "a": 0, "b": -1, "both": False},
                {"cmd": "produce", "topic": "t", "value": "m", "producer": "safe"}, {"cmd": "advance", "ms": 1500},
                {"cmd": "heal_link", "a": 0, "b": -1, "both": False}, {"cmd": "advance", "ms": 1500}):
        run.apply(cmd)
    retried, dup = events_of(run, "produce_retried")[0], events_of(run, "produce_duplicate")[0]
    assert narration.describe(retried).endswith("with the same base sequence 0")
    text = narration.describe(dup)
    assert f"first write's offsets {dup['base_offset']}–{dup['last_offset']}" in text and "writing nothing" in text
    assert "重复批次" in narration.describe(dup, "zh")


def test_markers_and_timer_cascades_are_told_with_their_numbers(tmp_path):
    run = Run(5, {"brokers": 3, "timer.events": True}, str(tmp_path / "r"))
    for cmd in ({"cmd": "create_topic", "topic": "t", "assignment": [[0, 1, 2]]},
                {"cmd": "configure_transactions", "transaction_state_log_num_partitions": 1},
                {"cmd": "advance", "ms": 50}, {"cmd": "create_producer", "name": "p", "transactional_id": "x"},
                {"cmd": "init_transactions", "name": "p"}, {"cmd": "advance", "ms": 500},
                {"cmd": "begin_transaction", "name": "p"}, {"cmd": "produce", "topic": "t", "value": "a", "producer": "p"},
                {"cmd": "advance", "ms": 500}, {"cmd": "abort_transaction", "name": "p"}, {"cmd": "advance", "ms": 500},
                {"cmd": "pause_follower", "broker": 1}, {"cmd": "pause_follower", "broker": 2},
                {"cmd": "produce", "topic": "t", "value": "w", "timeout_ms": 1000}, {"cmd": "advance", "ms": 1500}):
        run.apply(cmd)
    marker = [e for e in events_of(run, "txn_marker_written") if e["topic"] == "t"][0]
    assert narration.describe(marker) == (f"broker {marker['broker']} wrote an ABORT marker for producer "
                                          f"{marker['producer_id']} at offset {marker['offset']} of t-0")
    cascade = events_of(run, "timer_task_cascaded")[-1]
    assert f"from level {cascade['from_level']} down to level {cascade['to_level']}" in narration.describe(cascade)
    expired = events_of(run, "timer_task_expired")[-1]
    assert f"timed out (due at {expired['expiration_ms']} ms)" in narration.describe(expired)
    # An internal topic's partition is named in full, so it is not mistaken for the lesson's.
    appended = [e for e in events_of(run, "batch_appended") if e["topic"] == "__transaction_state"][0]
    assert "__transaction_state-0" in narration.describe(appended)
