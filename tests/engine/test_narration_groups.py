"""Sentences for the cleaner's and the consumer group's events say what the fields mean:
the dirty ratio against its threshold, swap steps by name, a rebalance's reason, a
coordinator not found yet, an idle member (seed 001), where a consumer starts."""
from __future__ import annotations

from engine import narration


def test_cleaner_check_compares_the_ratio_with_its_threshold():
    ev = {"kind": "cleaner_check", "partition": 0, "first_dirty_offset": 5, "first_uncleanable_offset": 10,
          "clean_bytes": 222, "dirty_bytes": 368, "ratio": 0.6237, "min_cleanable_ratio": 0.5,
          "max_compaction_lag_exceeded": False, "chosen": True, "reason": "dirty ratio above min.cleanable.dirty.ratio"}
    en = narration.describe(ev)
    assert "368 dirty of 590 bytes" in en and "0.62 vs min.cleanable.dirty.ratio 0.5" in en and "clean it" in en
    assert "脏比例 0.62" in narration.describe(ev, "zh")


def test_swap_steps_and_tombstone_horizon_are_named():
    swap = {"kind": "cleaner_swap_step", "partition": 0, "segment": 5, "step": "swap", "files": ["x.log.swap"]}
    assert "renamed the .cleaned files to .swap" in narration.describe(swap)
    cleaned = {"kind": "segments_cleaned", "partition": 0, "segment": 5, "sources": [5], "bytes_before": 368,
               "bytes_after": 222, "records_before": 5, "records_after": 3, "superseded": 2, "tombstones_kept": 1,
               "tombstones_removed": 0, "keyless_removed": 0, "delete_horizon_ms": 11100}
    text = narration.describe(cleaned)
    assert "2 older value(s) dropped" in text and "kept until 11.1 s (delete.retention.ms)" in text


def test_group_protocol_sentences():
    join = {"kind": "join_group_sent", "group": "g", "consumer": "c1", "member": "", "coordinator": -1,
            "protocols": ["range"], "owned": []}
    assert "the coordinator (not found yet)" in narration.describe(join)
    reb = {"kind": "rebalance_started", "group": "g", "coordinator": 0, "generation": 2, "reason": "session_timeout",
           "member": "c2-2"}
    assert "session timed out" in narration.describe(reb) and "会话超时" in narration.describe(reb, "zh")
    idle = {"kind": "partitions_assigned", "group": "g", "consumer": "c4", "member": "c4-4", "generation": 4,
            "partitions": [], "owned": []}
    assert "idle, no partition for it" in narration.describe(idle)
    start = {"kind": "position_reset", "group": "g", "consumer": "c1", "topic": "t", "partition": 0, "offset": 10,
             "source": "committed"}
    assert narration.describe(start) == "c1: starts t-0 at offset 10 (its group's committed offset)"


def test_a_pass_over_transactions_names_aborted_records_and_markers():
    cleaned = {"kind": "segments_cleaned", "partition": 0, "segment": 0, "sources": [0], "bytes_before": 500,
               "bytes_after": 200, "records_before": 4, "records_after": 2, "superseded": 1, "tombstones_kept": 0,
               "tombstones_removed": 0, "keyless_removed": 0, "delete_horizon_ms": None, "aborted_removed": 1,
               "markers_kept": 2, "markers_removed": 1, "marker_horizon_ms": 12000}
    text = narration.describe(cleaned)
    assert "1 record(s) of aborted transactions dropped" in text
    assert "transaction markers: 2 kept, 1 removed" in text and "kept until 12.0 s" in text
    zh = narration.describe(cleaned, "zh")
    assert "丢弃已中止事务的消息 1 条" in zh and "事务标记保留 2 个，删除 1 个" in zh
