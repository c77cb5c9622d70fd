"""Narration: every engine event as a sentence, in English and Simplified Chinese.

This is the one home of event → words. The command line (``storage-experiment``,
``run``), the web timeline (``kafkaviz/live/frames.py``) and the lessons' step
narration (``kafkaviz/live/kinds.py``) all call it, so the same event reads the same
everywhere. Sentences are built only from the event's own fields: narration says
what the engine did, never what a script expected it to do.

* :func:`describe` -- one event dict (``Envelope.to_dict()`` or ``Event.to_dict()``)
  → one sentence; unknown kinds fall back to their fields.
* :func:`summarize` -- the events of one step → a few sentences (appends, HW moves
  and the like folded), for "what happened in this step".
* :func:`command_label` -- a command (a lesson's ``{"type": ...}`` or a cluster's
  ``{"cmd": ...}``) in a few words.

Adding an event kind: add its sentence to ``_EN`` and ``_ZH`` below.
"""
from __future__ import annotations

from typing import Any, Callable

__all__ = ["describe", "summarize", "command_label", "LANGS", "finding_text", "lookup_steps"]

LANGS = ("en", "zh")
Ev = dict[str, Any]


def _seg(base: Any) -> str:
    return f"{base:020d}" if isinstance(base, int) else "?"


def _s(ms: Any) -> str:
    return f"{ms / 1000:.1f} s" if isinstance(ms, (int, float)) else "?"


def _tp(ev: Ev) -> str:
    return f"{ev.get('topic')}-{ev.get('partition')}"


def _where(ev: Ev, zh: bool) -> str:
    p = ev.get("partition")
    if p is not None and str(ev.get("topic", "")).startswith("__"):
        p = f"{ev['topic']}-{p}"      # an internal topic's partition is named in full
    if zh:
        where = f"分区 {p}" if p is not None else str(ev.get("topic", ""))
        return f"broker {ev['broker']}，{where}" if isinstance(ev.get("broker"), int) else where
    where = f"partition {p}" if p is not None else str(ev.get("topic", ""))
    return f"broker {ev['broker']}, {where}" if isinstance(ev.get("broker"), int) else where


def _b(n: Any, zh: bool = False) -> str:
    if n == -1:
        return "客户端" if zh else "the client"
    return f"broker {n}"


def _offs(ev: Ev, zh: bool) -> str:
    a, b = ev["first_offset"], ev["last_offset"]
    if zh:
        return f"偏移量 {a}" if a == b else f"偏移量 {a}–{b}"
    return f"offset {a}" if a == b else f"offsets {a}–{b}"


_TXN_API = {"init_producer_id": "InitProducerId", "add_partitions": "AddPartitionsToTxn", "end_txn": "EndTxn",
            "add_offsets": "AddOffsetsToTxn", "txn_offset_commit": "TxnOffsetCommit"}


def _parts(parts: Any) -> str:
    out = []
    for p in parts or ():
        out.append(f"{p[0]}-{p[1]}" if isinstance(p, (list, tuple)) and len(p) == 2 else str(p))
    return ", ".join(out)


# ---- storage -----------------------------------------------------------------------------

def _retention_en(ev: Ev) -> str:
    seg, rule, threshold, value = ev.get("segment"), ev.get("rule"), ev.get("threshold"), ev.get("value")
    blocked = ev.get("blocked_by")
    if blocked:
        why = {"high_watermark": "not all of it is below the high watermark",
               "empty_active": "it is the empty active segment"}.get(blocked, blocked)
        verdict = f"keep ({why})"
    else:
        verdict = "delete" if ev.get("deletable") else "keep"
    if rule == "size":
        if seg is None:
            return (f"retention by size: the partition holds {value} bytes, under retention.bytes={threshold} "
                    "→ nothing to delete")
        return (f"retention by size: the partition is {value} bytes over retention.bytes; segment {_seg(seg)} "
                f"holds {threshold} bytes → {verdict}")
    if rule == "time":
        return (f"retention by time: segment {_seg(seg)}'s newest record is {_s(value)} old, retention.ms is "
                f"{_s(threshold)} → {verdict}")
    if rule == "log_start_offset":
        if ev.get("deletable"):
            reason = f"all its offsets are below the log start offset {threshold}"
        elif isinstance(value, int) and isinstance(threshold, int) and value <= threshold:
            reason = "it is the active segment, which this rule never deletes"
        else:
            reason = f"it still holds offsets at or above the log start offset {threshold}"
        return (f"retention by log start offset: segment {_seg(seg)} holds offsets below {value}; "
                f"{reason} → {'delete' if ev.get('deletable') else 'keep'}")
    return f"retention ({rule}): segment {_seg(seg)}, value {value}, limit {threshold} → {verdict}"


def _retention_zh(ev: Ev) -> str:
    seg, rule, threshold, value = ev.get("segment"), ev.get("rule"), ev.get("threshold"), ev.get("value")
    blocked = ev.get("blocked_by")
    if blocked:
        why = {"high_watermark": "它并非全部位于高水位以下", "empty_active": "它是空的活跃段"}.get(blocked, blocked)
        verdict = f"保留（{why}）"
    else:
        verdict = "删除" if ev.get("deletable") else "保留"
    if rule == "size":
        if seg is None:
            return f"按大小保留：分区共 {value} 字节，未超过 retention.bytes={threshold} → 无需删除"
        return f"按大小保留：分区比 retention.bytes 多 {value} 字节；段 {_seg(seg)} 有 {threshold} 字节 → {verdict}"
    if rule == "time":
        return f"按时间保留：段 {_seg(seg)} 最新的消息已有 {_s(value)}，retention.ms 为 {_s(threshold)} → {verdict}"
    if rule == "log_start_offset":
        if ev.get("deletable"):
            reason = f"它的偏移量全部小于日志起始偏移量 {threshold}"
        elif isinstance(value, int) and isinstance(threshold, int) and value <= threshold:
            reason = "它是活跃段，这条规则从不删除活跃段"
        else:
            reason = f"它仍包含不小于日志起始偏移量 {threshold} 的偏移量"
        return (f"按日志起始偏移量保留：段 {_seg(seg)} 的偏移量都小于 {value}；{reason} → "
                f"{'删除' if ev.get('deletable') else '保留'}")
    return f"保留检查（{rule}）：段 {_seg(seg)}，值 {value}，上限 {threshold} → {verdict}"


def _lookup_en(e: Ev) -> str:
    what = f"offset {e['target']}" if e.get("mode") == "offset" else f"timestamp {e['target']}"
    probes = e.get("probes") or []
    scan = e.get("scan") or []
    parts = [f"lookup of {what}: segment {_seg(e.get('segment'))} chosen among {len(e.get('candidates') or [])} "
             f"({e.get('rule')})"]
    if e.get("time_probes"):
        parts.append(f"{len(e['time_probes'])} probe(s) in the time index")
    if probes:
        last = probes[-1]
        parts.append(f"{len(probes)} binary-search probe(s) in the offset index, ending at entry {last[2]} "
                     f"(offset {last[3]} → byte {last[4]})")
    if scan:
        parts.append(f"then scanned {len(scan)} batch(es) from byte {scan[0][0]}")
    if e.get("offset") is None or e.get("offset") == -1:
        parts.append("nothing found")
    else:
        parts.append(f"found offset {e['offset']} at byte {e.get('position')}")
    return "; ".join(parts)


def _lookup_zh(e: Ev) -> str:
    what = f"偏移量 {e['target']}" if e.get("mode") == "offset" else f"时间戳 {e['target']}"
    probes = e.get("probes") or []
    scan = e.get("scan") or []
    parts = [f"查找{what}：在 {len(e.get('candidates') or [])} 个段中选中段 {_seg(e.get('segment'))}（{_why_zh(e.get('rule'))}）"]
    if e.get("time_probes"):
        parts.append(f"在时间索引中探查 {len(e['time_probes'])} 次")
    if probes:
        last = probes[-1]
        parts.append(f"在偏移量索引中二分查找 {len(probes)} 次，停在第 {last[2]} 项（偏移量 {last[3]} → 字节 {last[4]}）")
    if scan:
        parts.append(f"再从字节 {scan[0][0]} 起扫描 {len(scan)} 个批次")
    if e.get("offset") is None or e.get("offset") == -1:
        parts.append("没有找到")
    else:
        parts.append(f"找到偏移量 {e['offset']}，位于字节 {e.get('position')}")
    return "；".join(parts)


def _truncated_en(e: Ev) -> str:
    why = {"hw": "to its high watermark (the pre-0.11 rule)",
           "epoch": "to the point where its log diverges from the leader's (leader epoch)",
           "out_of_range": "because the leader's log ends before its fetch offset",
           "log_start": "because the leader's log starts after its fetch offset"}.get(e["reason"], e["reason"])
    cut = e["from_offset"] - e["to_offset"]
    detail = f" — {e['detail']}" if e.get("detail") else ""
    return (f"broker {e['broker']} truncated {_tp(e)} from offset {e['from_offset']} to {e['to_offset']} "
            f"({cut} record(s) cut) {why}{detail}")


def _truncated_zh(e: Ev) -> str:
    why = {"hw": "截到自己的高水位（0.11 之前的规则）", "epoch": "截到与 leader 日志分叉的位置（leader epoch）",
           "out_of_range": "因为 leader 的日志在它的拉取偏移量之前就结束了",
           "log_start": "因为 leader 的日志从它的拉取偏移量之后才开始"}.get(e["reason"], e["reason"])
    cut = e["from_offset"] - e["to_offset"]
    return f"broker {e['broker']} 把 {_tp(e)} 从偏移量 {e['from_offset']} 截断到 {e['to_offset']}（截掉 {cut} 条），{why}"


_EN: dict[str, Callable[[Ev], str]] = {
    # storage (engine/log/events.py)
    "batch_appended": lambda e: (f"{_where(e, False)}: appended a batch of {e['records']} record(s), "
                                 f"{_offs(e, False)}, {e['size_bytes']} bytes at byte {e['position']} of "
                                 f"{_seg(e['segment'])}.log"),
    "index_entry_written": lambda e: (
        f"{_where(e, False)}: time index entry {e['entries']} in {_seg(e['segment'])}.timeindex: timestamp "
        f"{e['timestamp']} → offset {e['offset']}" if e.get("index") == "time" else
        f"{_where(e, False)}: offset index entry {e['entries']} in {_seg(e['segment'])}.index: offset "
        f"{e['offset']} → byte {e['position']}"),
    "segment_created": lambda e: f"{_where(e, False)}: created segment {_seg(e['segment'])} ({', '.join(e.get('files') or [])})",
    "segment_rolled": lambda e: (f"{_where(e, False)}: rolled a new segment {_seg(e['new_segment'])}.log "
                                 f"(reason: {e['reason']})" + (f" — {e['detail']}" if e.get("detail") else "")),
    "index_trimmed": lambda e: (f"{_where(e, False)}: trimmed {_seg(e['segment'])} {e['index']} index to "
                                f"{e['entries']} entries ({e['from_bytes']} → {e['to_bytes']} bytes)"),
    "retention_check": lambda e: f"{_where(e, False)}: {_retention_en(e)}",
    "segment_deleted": lambda e: (f"{_where(e, False)}: segment {_seg(e['segment'])} renamed to .deleted "
                                  f"({e['reason']}); files removed after {_s(e['delete_after_ms'])}"),
    "file_deleted": lambda e: f"{_where(e, False)}: file {e['file']} removed from disk",
    "log_start_offset_changed": lambda e: f"{_where(e, False)}: log start offset {e['old']} → {e['new']} ({e['reason']})",
    "leader_epoch_assigned": lambda e: (f"{_where(e, False)}: leader epoch {e['epoch']} starts at offset "
                                        f"{e['start_offset']} (leader-epoch-checkpoint)"),
    "log_flushed": lambda e: f"{_where(e, False)}: flushed (fsync) up to offset {e['up_to_offset']}",
    "recovery_started": lambda e: f"{_where(e, False)}: opening the log, recovery from offset {e['recovery_point']}",
    "recovery_finished": lambda e: (f"{_where(e, False)}: log open — start offset {e['log_start_offset']}, end offset "
                                    f"{e['log_end_offset']}, {len(e.get('segments') or [])} segment(s)"),
    "epoch_cache_truncated": lambda e: (f"{_where(e, False)}: leader-epoch cache truncated at the "
                                       f"{'start' if e.get('direction') == 'start' else 'end'} (offset {e['offset']}); "
                                       f"entries now {e.get('entries')}"),
    "recovery_truncated": lambda e: (f"{_where(e, False)}: recovery cut {_seg(e['segment'])}.log from {e['from_bytes']} "
                                     f"to {e['to_bytes']} bytes ({e['reason']})"),
    "index_rebuilt": lambda e: (f"{_where(e, False)}: rebuilt the {e['index']} index of {_seg(e['segment'])} "
                                f"({e['entries']} entries; {e['reason']})"),
    "leftover_removed": lambda e: f"{_where(e, False)}: removed leftover file {e['file']} while opening the log",
    "log_truncated": lambda e: f"{_where(e, False)}: log truncated from offset {e['from_offset']} to {e['to_offset']} ({e['reason']})",
    "log_closed": lambda e: f"{_where(e, False)}: log closed at end offset {e['log_end_offset']}",
    "log_lookup": lambda e: f"{_where(e, False)}: {_lookup_en(e)}",
    # the five lookup events the single log_lookup replaces (kept until it lands)
    "lookup_started": lambda e: f"{_where(e, False)}: looking up {e['mode']} {e['target']}",
    "lookup_segment": lambda e: (f"{_where(e, False)}: chose segment {_seg(e['segment'])} among "
                                 f"{len(e.get('candidates') or [])} ({e['rule']})"),
    "index_probe": lambda e: (f"{_where(e, False)}: {e['index']} index probe: entries {e['low']}–{e['high']}, "
                              f"entry {e['mid']} (offset {e['entry_offset']}) → {e['went']}"),
    "lookup_scan": lambda e: (f"{_where(e, False)}: scanned the batch at byte {e['position']} (offsets "
                              f"{e['base_offset']}–{e['last_offset']})" + (" — match" if e.get("matched") else "")),
    "lookup_finished": lambda e: (f"{_where(e, False)}: lookup of {e['mode']} {e['target']} → "
                                  + ("nothing found" if e["offset"] == -1 else
                                     f"offset {e['offset']} at byte {e.get('position')}")),
    # lessons 1 and 7 (engine/topic.py, engine/page_cache.py)
    "record_partitioned": lambda e: (
        f"producer: {e['value']} " + (f"key {e['key']}: murmur2 = {e['hash']}, positive % {e['partitions']} → partition {e['partition']}"
                                      if e["rule"] == "key" else
                                      f"(no key): the batch on partition {e['switched_from']} was full, switched to partition {e['partition']}"
                                      if e["rule"] == "sticky-switch" else
                                      f"(no key) → sticky partition {e['partition']}" if e["rule"] == "sticky" else
                                      f"→ partition {e['partition']} (chosen by the producer)")),
    "producer_batch_sent": lambda e: (f"producer sent a batch of {e['records']} record(s) ({e['bytes']} bytes) to partition "
                                      f"{e['partition']}: offsets {e['first_offset']}–{e['last_offset']} ({e['reason']})"),
    "simple_consumer_fetched": lambda e: (f"consumer {e['consumer']} fetched partition {e['partition']} from offset {e['fetch_offset']}: "
                                   + (f"offsets {e['offsets'][0]}–{e['offsets'][-1]}" if e["offsets"] else "nothing new")
                                   + f"; next offset {e['next_offset']}"),
    "pages_written_back": lambda e: ("the OS wrote dirty pages back: " + (", ".join(
        f"{f['file']} durable up to byte {f['to']}" for f in e["files"]) or "no whole dirty page")),
    "recovery_checkpoint_written": lambda e: (f"broker {e['broker']} wrote recovery-point-offset-checkpoint: "
                                              f"{_tp(e)} recovery point {e['recovery_point']}"),
    # cluster (engine/cluster/events.py, checker.py)
    "broker_started": lambda e: (f"broker {e['broker']} started" + (" again" if e["restart"] else "")
                                 + (" after a clean shutdown" if e["clean_shutdown"] else "")),
    "broker_crashed": lambda e: (f"broker {e['broker']} crashed" + (" (power loss: un-fsynced bytes lost"
                                 f" in {len(e.get('lost_files') or [])} file(s))" if e["power_loss"] else "")),
    "broker_shutdown": lambda e: f"broker {e['broker']} shut down cleanly",
    "logs_loaded": lambda e: f"broker {e['broker']} opened its logs: " + "; ".join(
        f"{x['topic']}-{x['partition']} LEO {x['leo']}, HW {x['high_watermark']}" for x in e["logs"]),
    "broker_registered": lambda e: (f"controller {e['controller']} registered broker {e['broker']} "
                                    f"(broker epoch {e['broker_epoch']})"),
    "broker_fenced": lambda e: f"controller {e['controller']} fenced broker {e['broker']} ({e['reason'].replace('_', ' ')})",
    "controller_changed": lambda e: (f"broker {e['new']} is the active controller (controller epoch "
                                     f"{e['controller_epoch']}, {e['reason'].replace('_', ' ')})"),
    "topic_created": lambda e: (f"topic {e['topic']} created: " + "; ".join(
        f"partition {p} on brokers {', '.join(map(str, r))}" for p, r in sorted(e["assignment"].items()))),
    "leader_elected": lambda e: (f"controller elected broker {e['chosen']} leader of {_tp(e)} at leader epoch "
                                 f"{e['leader_epoch']} ({e['rule']}); ISR {e['isr']}"),
    "partition_offline": lambda e: f"{_tp(e)} is offline: no replica may lead ({e['reason']})",
    "isr_shrunk": lambda e: f"ISR of {_tp(e)} shrank to {e['isr']} (removed {e['removed']}: {e['reason']})",
    "isr_expanded": lambda e: f"ISR of {_tp(e)} grew to {e['isr']} (added {e['added']})",
    "alter_partition_sent": lambda e: f"broker {e['broker']} asked the controller to set the ISR of {_tp(e)} to {e['proposed_isr']}",
    "alter_partition_rejected": lambda e: f"controller refused broker {e['broker']}'s ISR change ({e['reason']})",
    "became_leader": lambda e: (f"broker {e['broker']} leads {_tp(e)} at epoch {e['leader_epoch']} (LEO {e['leo']}, "
                                f"HW {e['high_watermark']}); epoch cache gets ({e['leader_epoch']}, {e['leo']})"),
    "became_follower": lambda e: (f"broker {e['broker']} follows broker {e['leader']} for {_tp(e)} at epoch "
                                  f"{e['leader_epoch']} (LEO {e['leo']}, HW {e['high_watermark']}); "
                                  + ("it truncates to its high watermark first" if e["truncation"] == "hw"
                                     else "it asks the leader where its epoch ends first")),
    "fetch_sent": lambda e: f"broker {e['broker']} → broker {e['leader']}: Fetch {_tp(e)} from offset {e['fetch_offset']}",
    "fetch_parked": lambda e: (f"broker {e['broker']} parked broker {e['follower']}'s fetch at offset "
                               f"{e['fetch_offset']} (nothing new; waits up to {e['max_wait_ms']} ms)"),
    "fetch_answered": lambda e: (f"broker {e['broker']} → broker {e['follower']}: "
                                 + (f"error {e['error']}" if e["error"] else
                                    (f"records {e['first_offset']}–{e['last_offset']}" if e["records"] else "no records"))
                                 + f", HW {e['high_watermark']}, leader LEO {e['leader_leo']}"),
    "fetch_received": lambda e: (f"broker {e['broker']} took the fetch response: {e['records']} record(s), "
                                 f"leader HW {e['leader_high_watermark']}" + (f", error {e['error']}" if e["error"] else "")),
    "remote_leo_updated": lambda e: f"broker {e['broker']} notes broker {e['follower']}'s LEO {e['old']} → {e['new']}",
    "leo_changed": lambda e: f"broker {e['broker']} ({e['role']}) LEO {e['old']} → {e['new']} ({e['reason']})",
    "high_watermark_changed": lambda e: (f"broker {e['broker']} ({e['role']}) HW {e['old']} → {e['new']} "
                                         f"({e['reason'].replace('_', ' ')})"),
    "epoch_request_sent": lambda e: (f"broker {e['broker']} → broker {e['leader']}: OffsetsForLeaderEpoch — "
                                     f"where does epoch {e['epoch']} end?"),
    "epoch_request_answered": lambda e: (f"broker {e['broker']} → broker {e['follower']}: epoch {e['requested_epoch']} "
                                         f"ends at offset {e['end_offset']}"
                                         + (f" (answered for epoch {e['epoch']})" if e["epoch"] != e["requested_epoch"] else "")),
    "replica_truncated": _truncated_en,
    "fetch_diverging": lambda e: (f"broker {e['broker']} → broker {e['follower']}: its fetch at {e['fetch_offset']} "
                                  f"names epoch {e['last_fetched_epoch']}, which here ends at {e['end_offset']} "
                                  f"(DivergingEpoch {e['epoch']}); no records, truncate first"),
    "replica_fetch_failed": lambda e: (f"broker {e['broker']} stops fetching {e['topic']}-{e['partition']} at "
                                       f"{e['fetch_offset']}: {e['error']} ({e['detail']}); the broker goes on"),
    "produce_received": lambda e: f"broker {e['broker']} got produce request {e['request_id']} ({e['records']} record(s), acks={e['acks']})",
    "produce_appended": lambda e: (f"broker {e['broker']} appended request {e['request_id']} at offset(s) "
                                   f"{e['base_offset']}–{e['last_offset']}, epoch {e['leader_epoch']}"),
    "produce_waiting": lambda e: f"request {e['request_id']} waits until the HW passes offset {e['required_offset'] - 1}",
    "produce_acked": lambda e: (f"the client was told request {e['request_id']} succeeded"
                                + (f" (offset {e['base_offset']})" if e["base_offset"] is not None else "")),
    "produce_failed": lambda e: f"request {e['request_id']} failed: {e['error']}",
    "consumer_read": lambda e: (f"a consumer read {e['records']} record(s) of {_tp(e)} from offset {e['offset']} "
                                f"(HW {e['high_watermark']})"),
    "checkpoint_written": lambda e: f"broker {e['broker']} wrote {e['file']}",
    "link_changed": lambda e: f"link {_b(e['a'])} {'↔' if e['both'] else '→'} {_b(e['b'])}: {e['state']}",
    "message_dropped": lambda e: f"{e['api']} from {_b(e['src'])} to {_b(e['dst'])} dropped ({e['reason'].replace('_', ' ')})",
    "config_changed": lambda e: f"config of {e['scope']} {e['target']} changed: " + ", ".join(
        f"{k}={v}" for k, v in e["changes"].items()),
    "check_acked_record_lost": lambda e: (f"CHECKER: acknowledged record {e.get('value') or e['digest']} at offset "
                                          f"{e['offset']} is not in the leader's log — lost"),
    "check_replicas_diverged": lambda e: (f"CHECKER: brokers {', '.join(map(str, e['brokers']))} hold different "
                                          f"records at offset {e['offset']} — diverged"),
    "check_hw_regressed": lambda e: f"CHECKER: broker {e['broker']}'s HW went back {e['old']} → {e['new']}",
    "check_uncommitted_read": lambda e: f"CHECKER: a consumer read an uncommitted record at offset {e['offset']}",
    # producers, idempotence and transactions
    "producer_created": lambda e: (f"producer {e['name']} created" + (
        f": InitProducerId gave producer id {e['producer_id']}, epoch {e['producer_epoch']}"
        if e["idempotent"] and e["producer_id"] >= 0 else
        (" (idempotent; its producer id comes with init_transactions)" if e["idempotent"] else
         " without idempotence (no producer id, no sequence numbers)"))),
    "produce_retried": lambda e: (f"producer {e['producer']}: attempt {e['attempt']} failed with {e['error']}; "
                                  f"it retries as request {e['request_id']} after {e['backoff_ms']} ms"
                                  + (f" with the same base sequence {e['base_sequence']}" if e["base_sequence"] >= 0
                                     else " (no sequence number: the leader cannot tell it is a retry)")),
    "produce_duplicate": lambda e: (f"broker {e['broker']} recognised request {e['request_id']} as a duplicate "
                                    f"(producer {e['producer_id']}, epoch {e['producer_epoch']}, sequence "
                                    f"{e['base_sequence']}) of {_tp(e)} and answered with the first write's offsets "
                                    f"{e['base_offset']}–{e['last_offset']}, writing nothing"),
    "txn_request": lambda e: (f"producer {e['producer']} → coordinator broker {e['coordinator']}: "
                              f"{_TXN_API.get(e['api'], e['api'])} for {e['transactional_id']}"
                              + (f" ({e['detail']})" if e.get("detail") else "")
                              + ("" if e["error"] == "NONE" else f" → {e['error']}")),
    "txn_state_changed": lambda e: (f"coordinator broker {e['coordinator']}: transaction {e['transactional_id']} "
                                    f"(producer {e['producer_id']}, epoch {e['producer_epoch']}) "
                                    f"{e['old_state']} → {e['new_state']}"
                                    + (f" [{_parts(e['partitions'])}]" if e.get("partitions") else "")
                                    + (f" ({e['reason'].replace('_', ' ')})" if e.get("reason") else "")),
    "txn_marker_written": lambda e: (f"broker {e['broker']} wrote {'a COMMIT' if e['commit'] else 'an ABORT'} marker "
                                     f"for producer {e['producer_id']} at offset {e['offset']} of {_tp(e)}"),
    "txn_loaded": lambda e: (f"broker {e['broker']} leads __transaction_state-{e['txn_partition']} and read back "
                             f"{e['records']} record(s)"
                             + (f"; it finishes {', '.join(e['resumed'])}" if e.get("resumed") else "")),
    # the timing wheel
    "timer_task_added": lambda e: (f"{e['timer']} timer: {e['name']} (due at {e['expiration_ms']} ms) goes into "
                                   f"level {e['level']}, bucket {e['slot']} (expires at {e['bucket_expiration_ms']} ms)"),
    "timer_bucket_queued": lambda e: (f"{e['timer']} timer: level {e['level']} bucket {e['slot']} joins the delay "
                                      f"queue, due at {e['expiration_ms']} ms"),
    "timer_overflow_wheel_created": lambda e: (f"{e['timer']} timer: overflow wheel level {e['level']} created "
                                               f"({e['tick_ms']} ms per bucket, {e['interval_ms']} ms around)"),
    "timer_bucket_expired": lambda e: (f"{e['timer']} timer: the hand reached level {e['level']} bucket {e['slot']} "
                                       f"at {e['expiration_ms']} ms; {e['tasks']} task(s) taken out"),
    "timer_task_cascaded": lambda e: (f"{e['timer']} timer: {e['name']} moves from level {e['from_level']} down to "
                                      f"level {e['to_level']}, bucket {e['slot']}"),
    "timer_task_expired": lambda e: f"{e['timer']} timer: {e['name']} timed out (due at {e['expiration_ms']} ms)",
    "timer_task_cancelled": lambda e: (f"{e['timer']} timer: {e['name']} completed before its timeout and "
                                       f"left the wheel"),
    "run_moved": lambda e: (f"rewound to step {e['step']} (the engine is as it was after that step)"
                            if e["how"] == "back" else f"the run is at step {e['step']}"),
}

# The engine's reason and rule codes (event fields) in Chinese; a code missing here is
# shown as it is. The English table prints the codes themselves (they read as English).
_WHY_ZH = {
    # segment rolls, deletes and the log start offset
    "size": "段大小会超过 segment.bytes", "time": "段存在超过 segment.ms", "index_full": "索引已满",
    "offset_overflow": "相对偏移量会超出 32 位", "manual": "手动", "retention": "全部过期，先滚出一个空的活跃段",
    "retention:size": "按大小保留", "retention:time": "按时间保留",
    "retention:log_start_offset": "按日志起始偏移量保留", "cleaner": "日志清理", "delete_records": "DeleteRecords 请求",
    "unflushed: at or after the recovery point": "未刷盘：位于恢复点或之后",
    "dirty ratio above min.cleanable.dirty.ratio": "脏比例高于 min.cleanable.dirty.ratio",
    # lookups
    "largest base offset <= target": "基准偏移量不大于目标的最大段",
    "largest base offset <= target, then the next segment (nothing at or after it there)":
        "基准偏移量不大于目标的最大段，再往后一段（那里没有不小于目标的偏移量）",
    "first segment with largest timestamp >= target": "第一个最大时间戳不小于目标的段",
    "first segment with largest timestamp >= target, then the next segment (nothing at or after the log start "
    "offset there)": "第一个最大时间戳不小于目标的段，再往后一段（那里没有不小于日志起始偏移量的数据）",
    # replication
    "hw": "截到高水位", "out_of_range": "偏移量越界", "truncate": "截断", "append": "追加", "txn_marker": "事务标记",
    "isr_leo": "ISR 中所有副本的 LEO 都已到达", "leader_hw": "跟随 leader 的高水位", "caught_up": "已追上",
    "lagging": "落后超过 replica.lag.time.max.ms", "session_timeout": "会话超时", "startup": "启动",
    "lost_quorum": "失去多数派", "controlled_shutdown": "受控关闭", "clean": "从 ISR 中干净选举",
    "unclean": "非干净选举：可能丢失已确认的消息", "initial": "初次选举", "preferred": "首选副本",
    "fenced_leader_epoch": "leader epoch 已过期", "invalid_update_version": "分区版本已过期",
    "ineligible_replica": "副本不符合条件", "metadata_changed": "元数据已变",
    "no live replica in the ISR": "ISR 中没有存活的副本",
    "no live replica in the ISR and unclean.leader.election.enable=false":
        "ISR 中没有存活的副本，且 unclean.leader.election.enable=false",
    "destination_down": "目标已宕机", "link_cut": "链路被切断", "source_crashed": "发送方已崩溃",
    # producers
    "batch.size reached": "达到 batch.size", "linger.ms (flush)": "linger.ms 到期（flush）",
}


# An index's kind ("offset", "time") in Chinese, with the space the English form needs.
_INDEX_ZH = {"offset": "偏移量", "time": "时间"}


def _why_zh(code: Any) -> str:
    return _WHY_ZH.get(code, str(code)) if code is not None else ""


_ZH: dict[str, Callable[[Ev], str]] = {
    "batch_appended": lambda e: (f"{_where(e, True)}：追加一个批次，{e['records']} 条消息，{_offs(e, True)}，"
                                 f"{e['size_bytes']} 字节，位于 {_seg(e['segment'])}.log 的字节 {e['position']}"),
    "index_entry_written": lambda e: (
        f"{_where(e, True)}：{_seg(e['segment'])}.timeindex 第 {e['entries']} 项：时间戳 {e['timestamp']} → 偏移量 {e['offset']}"
        if e.get("index") == "time" else
        f"{_where(e, True)}：{_seg(e['segment'])}.index 第 {e['entries']} 项：偏移量 {e['offset']} → 字节 {e['position']}"),
    "segment_created": lambda e: f"{_where(e, True)}：创建段 {_seg(e['segment'])}（{', '.join(e.get('files') or [])}）",
    "segment_rolled": lambda e: f"{_where(e, True)}：滚动出新段 {_seg(e['new_segment'])}.log（原因：{_why_zh(e['reason'])}）",
    "index_trimmed": lambda e: (f"{_where(e, True)}：把段 {_seg(e['segment'])} 的 {e['index']} 索引裁剪到 {e['entries']} 项"
                                f"（{e['from_bytes']} → {e['to_bytes']} 字节）"),
    "retention_check": lambda e: f"{_where(e, True)}：{_retention_zh(e)}",
    "segment_deleted": lambda e: (f"{_where(e, True)}：段 {_seg(e['segment'])} 改名为 .deleted（{_why_zh(e['reason'])}），"
                                  f"{_s(e['delete_after_ms'])} 后删除文件"),
    "file_deleted": lambda e: f"{_where(e, True)}：文件 {e['file']} 已从磁盘删除",
    "log_start_offset_changed": lambda e: f"{_where(e, True)}：日志起始偏移量 {e['old']} → {e['new']}（{_why_zh(e['reason'])}）",
    "leader_epoch_assigned": lambda e: f"{_where(e, True)}：leader epoch {e['epoch']} 从偏移量 {e['start_offset']} 开始（leader-epoch-checkpoint）",
    "log_flushed": lambda e: f"{_where(e, True)}：刷盘（fsync）到偏移量 {e['up_to_offset']}",
    "recovery_started": lambda e: f"{_where(e, True)}：打开日志，从偏移量 {e['recovery_point']} 开始恢复",
    "recovery_finished": lambda e: (f"{_where(e, True)}：日志已打开——起始偏移量 {e['log_start_offset']}，末端偏移量 "
                                    f"{e['log_end_offset']}，{len(e.get('segments') or [])} 个段"),
    "epoch_cache_truncated": lambda e: (f"{_where(e, True)}：leader-epoch 缓存从{'头部' if e.get('direction') == 'start' else '尾部'}"
                                       f"截断（偏移量 {e['offset']}）；现在的条目 {e.get('entries')}"),
    "recovery_truncated": lambda e: (f"{_where(e, True)}：恢复时把 {_seg(e['segment'])}.log 从 {e['from_bytes']} 字节截到 "
                                     f"{e['to_bytes']} 字节（{_why_zh(e['reason'])}）"),
    "index_rebuilt": lambda e: (f"{_where(e, True)}：重建段 {_seg(e['segment'])} 的"
                                f"{_INDEX_ZH.get(e['index'], e['index'] + ' ')}索引（{e['entries']} 项；{_why_zh(e['reason'])}）"),
    "leftover_removed": lambda e: f"{_where(e, True)}：打开日志时删除残留文件 {e['file']}",
    "log_truncated": lambda e: f"{_where(e, True)}：日志从偏移量 {e['from_offset']} 截断到 {e['to_offset']}（{_why_zh(e['reason'])}）",
    "log_closed": lambda e: f"{_where(e, True)}：日志关闭，末端偏移量 {e['log_end_offset']}",
    "log_lookup": lambda e: f"{_where(e, True)}：{_lookup_zh(e)}",
    "lookup_started": lambda e: f"{_where(e, True)}：开始查找 {e['mode']} {e['target']}",
    "lookup_segment": lambda e: f"{_where(e, True)}：在 {len(e.get('candidates') or [])} 个段中选中段 {_seg(e['segment'])}（{_why_zh(e['rule'])}）",
    "index_probe": lambda e: (f"{_where(e, True)}：{e['index']} 索引探查：第 {e['low']}–{e['high']} 项，取第 {e['mid']} 项"
                              f"（偏移量 {e['entry_offset']}）→ {e['went']}"),
    "lookup_scan": lambda e: (f"{_where(e, True)}：扫描字节 {e['position']} 处的批次（偏移量 {e['base_offset']}–{e['last_offset']}）"
                              + ("——命中" if e.get("matched") else "")),
    "lookup_finished": lambda e: (f"{_where(e, True)}：查找 {e['mode']} {e['target']} → "
                                  + ("没有找到" if e["offset"] == -1 else f"偏移量 {e['offset']}，字节 {e.get('position')}")),
    # 第 1、7 课
    "record_partitioned": lambda e: (
        f"生产者：{e['value']} " + (f"键 {e['key']}：murmur2 = {e['hash']}，取正后 % {e['partitions']} → 分区 {e['partition']}"
                                     if e["rule"] == "key" else
                                     f"（无键）：分区 {e['switched_from']} 上的批次已满，换到分区 {e['partition']}"
                                     if e["rule"] == "sticky-switch" else
                                     f"（无键）→ 粘性分区 {e['partition']}" if e["rule"] == "sticky" else
                                     f"→ 分区 {e['partition']}（生产者指定）")),
    "producer_batch_sent": lambda e: (f"生产者向分区 {e['partition']} 发送一个批次，{e['records']} 条消息（{e['bytes']} 字节）："
                                      f"偏移量 {e['first_offset']}–{e['last_offset']}（{_why_zh(e['reason'])}）"),
    "simple_consumer_fetched": lambda e: (f"消费者 {e['consumer']} 从偏移量 {e['fetch_offset']} 拉取分区 {e['partition']}："
                                   + (f"偏移量 {e['offsets'][0]}–{e['offsets'][-1]}" if e["offsets"] else "没有新消息")
                                   + f"；下一个偏移量 {e['next_offset']}"),
    "pages_written_back": lambda e: ("操作系统把脏页写回磁盘：" + ("，".join(
        f"{f['file']} 持久化到第 {f['to']} 字节" for f in e["files"]) or "没有完整的脏页")),
    "recovery_checkpoint_written": lambda e: (f"broker {e['broker']} 写入 recovery-point-offset-checkpoint："
                                              f"{_tp(e)} 恢复点 {e['recovery_point']}"),
    "broker_started": lambda e: (f"broker {e['broker']} " + ("重新" if e["restart"] else "") + "启动"
                                 + ("（上次是正常关闭）" if e["clean_shutdown"] else "")),
    "broker_crashed": lambda e: (f"broker {e['broker']} 崩溃" + (f"（断电：{len(e.get('lost_files') or [])} 个文件中未刷盘的字节丢失）"
                                                              if e["power_loss"] else "")),
    "broker_shutdown": lambda e: f"broker {e['broker']} 正常关闭",
    "logs_loaded": lambda e: f"broker {e['broker']} 打开日志：" + "；".join(
        f"{x['topic']}-{x['partition']} LEO {x['leo']}，HW {x['high_watermark']}" for x in e["logs"]),
    "broker_registered": lambda e: f"控制器 {e['controller']} 登记了 broker {e['broker']}（broker epoch {e['broker_epoch']}）",
    "broker_fenced": lambda e: f"控制器 {e['controller']} 隔离了 broker {e['broker']}（{_why_zh(e['reason'])}）",
    "controller_changed": lambda e: f"broker {e['new']} 成为活跃控制器（控制器 epoch {e['controller_epoch']}，{_why_zh(e['reason'])}）",
    "topic_created": lambda e: (f"创建主题 {e['topic']}：" + "；".join(
        f"分区 {p} 在 broker {', '.join(map(str, r))} 上" for p, r in sorted(e["assignment"].items()))),
    "leader_elected": lambda e: (f"控制器选举 broker {e['chosen']} 为 {_tp(e)} 的 leader，leader epoch {e['leader_epoch']}"
                                 f"（{_why_zh(e['rule'])}）；ISR {e['isr']}"),
    "partition_offline": lambda e: f"{_tp(e)} 离线：没有副本可以当 leader（{_why_zh(e['reason'])}）",
    "isr_shrunk": lambda e: f"{_tp(e)} 的 ISR 缩小为 {e['isr']}（移除 {e['removed']}：{_why_zh(e['reason'])}）",
    "isr_expanded": lambda e: f"{_tp(e)} 的 ISR 扩大为 {e['isr']}（加入 {e['added']}）",
    "alter_partition_sent": lambda e: f"broker {e['broker']} 请求控制器把 {_tp(e)} 的 ISR 设为 {e['proposed_isr']}",
    "alter_partition_rejected": lambda e: f"控制器拒绝了 broker {e['broker']} 的 ISR 变更（{_why_zh(e['reason'])}）",
    "became_leader": lambda e: (f"broker {e['broker']} 成为 {_tp(e)} 的 leader，epoch {e['leader_epoch']}（LEO {e['leo']}，"
                                f"HW {e['high_watermark']}）；epoch 缓存加入 ({e['leader_epoch']}, {e['leo']})"),
    "became_follower": lambda e: (f"broker {e['broker']} 以 epoch {e['leader_epoch']} 跟随 broker {e['leader']}（{_tp(e)}，"
                                  f"LEO {e['leo']}，HW {e['high_watermark']}）；"
                                  + ("它先截断到自己的高水位" if e["truncation"] == "hw" else "它先问 leader 自己的 epoch 在哪里结束")),
    "fetch_sent": lambda e: f"broker {e['broker']} → broker {e['leader']}：Fetch {_tp(e)}，从偏移量 {e['fetch_offset']} 开始",
    "fetch_parked": lambda e: f"broker {e['broker']} 暂存 broker {e['follower']} 在偏移量 {e['fetch_offset']} 的拉取（暂无新数据，最多等 {e['max_wait_ms']} 毫秒）",
    "fetch_answered": lambda e: (f"broker {e['broker']} → broker {e['follower']}："
                                 + (f"错误 {e['error']}" if e["error"] else
                                    (f"消息 {e['first_offset']}–{e['last_offset']}" if e["records"] else "没有消息"))
                                 + f"，HW {e['high_watermark']}，leader LEO {e['leader_leo']}"),
    "fetch_received": lambda e: (f"broker {e['broker']} 收到拉取响应：{e['records']} 条消息，leader HW {e['leader_high_watermark']}"
                                 + (f"，错误 {e['error']}" if e["error"] else "")),
    "remote_leo_updated": lambda e: f"broker {e['broker']} 记下 broker {e['follower']} 的 LEO {e['old']} → {e['new']}",
    "leo_changed": lambda e: f"broker {e['broker']}（{e['role']}）LEO {e['old']} → {e['new']}（{_why_zh(e['reason'])}）",
    "high_watermark_changed": lambda e: f"broker {e['broker']}（{e['role']}）HW {e['old']} → {e['new']}（{_why_zh(e['reason'])}）",
    "epoch_request_sent": lambda e: f"broker {e['broker']} → broker {e['leader']}：OffsetsForLeaderEpoch——epoch {e['epoch']} 在哪里结束？",
    "epoch_request_answered": lambda e: (f"broker {e['broker']} → broker {e['follower']}：epoch {e['requested_epoch']} 结束于偏移量 "
                                         f"{e['end_offset']}" + (f"（按 epoch {e['epoch']} 回答）" if e["epoch"] != e["requested_epoch"] else "")),
    "replica_truncated": _truncated_zh,
    "fetch_diverging": lambda e: (f"broker {e['broker']} → broker {e['follower']}：偏移量 {e['fetch_offset']} 处的拉取"
                                  f"声明 epoch {e['last_fetched_epoch']}，它在这里结束于 {e['end_offset']}"
                                  f"（DivergingEpoch {e['epoch']}）；不发送记录，先截断"),
    "replica_fetch_failed": lambda e: (f"broker {e['broker']} 停止拉取 {e['topic']}-{e['partition']}（偏移量 "
                                       f"{e['fetch_offset']}）：{e['error']}（{e['detail']}）；broker 照常运行"),
    "produce_received": lambda e: f"broker {e['broker']} 收到生产请求 {e['request_id']}（{e['records']} 条消息，acks={e['acks']}）",
    "produce_appended": lambda e: f"broker {e['broker']} 把请求 {e['request_id']} 写到偏移量 {e['base_offset']}–{e['last_offset']}，epoch {e['leader_epoch']}",
    "produce_waiting": lambda e: f"请求 {e['request_id']} 等待 HW 越过偏移量 {e['required_offset'] - 1}",
    "produce_acked": lambda e: (f"客户端收到请求 {e['request_id']} 成功的确认"
                                + (f"（偏移量 {e['base_offset']}）" if e["base_offset"] is not None else "")),
    "produce_failed": lambda e: f"请求 {e['request_id']} 失败：{e['error']}",
    "consumer_read": lambda e: f"消费者从偏移量 {e['offset']} 读取 {_tp(e)} 的 {e['records']} 条消息（HW {e['high_watermark']}）",
    "checkpoint_written": lambda e: f"broker {e['broker']} 写入 {e['file']}",
    "link_changed": lambda e: f"链路 {_b(e['a'], True)} {'↔' if e['both'] else '→'} {_b(e['b'], True)}：{e['state']}",
    "message_dropped": lambda e: f"{_b(e['src'], True)} 发往 {_b(e['dst'], True)} 的 {e['api']} 被丢弃（{_why_zh(e['reason'])}）",
    "config_changed": lambda e: f"{e['scope']} {e['target']} 的配置已修改：" + "，".join(f"{k}={v}" for k, v in e["changes"].items()),
    "check_acked_record_lost": lambda e: f"检查器：已确认的消息 {e.get('value') or e['digest']}（偏移量 {e['offset']}）不在 leader 的日志里——丢失",
    "check_replicas_diverged": lambda e: f"检查器：broker {', '.join(map(str, e['brokers']))} 在偏移量 {e['offset']} 上的消息不同——不一致",
    "check_hw_regressed": lambda e: f"检查器：broker {e['broker']} 的 HW 倒退了 {e['old']} → {e['new']}",
    "check_uncommitted_read": lambda e: f"检查器：消费者在偏移量 {e['offset']} 读到了未提交的消息",
    "producer_created": lambda e: (f"创建生产者 {e['name']}" + (
        f"：InitProducerId 分配生产者 id {e['producer_id']}，epoch {e['producer_epoch']}"
        if e["idempotent"] and e["producer_id"] >= 0 else
        ("（幂等；生产者 id 由 init_transactions 获得）" if e["idempotent"] else "，未开启幂等（没有生产者 id 和序列号）"))),
    "produce_retried": lambda e: (f"生产者 {e['producer']}：第 {e['attempt']} 次发送失败（{e['error']}），"
                                  f"{e['backoff_ms']} 毫秒后以请求 {e['request_id']} 重试"
                                  + (f"，基础序列号仍为 {e['base_sequence']}" if e["base_sequence"] >= 0
                                     else "（没有序列号：leader 无法识别这是重试）")),
    "produce_duplicate": lambda e: (f"broker {e['broker']} 认出请求 {e['request_id']} 是重复批次（生产者 "
                                    f"{e['producer_id']}，epoch {e['producer_epoch']}，序列号 {e['base_sequence']}），"
                                    f"用第一次写入的偏移量 {e['base_offset']}–{e['last_offset']} 应答 {_tp(e)}，不再写入"),
    "txn_request": lambda e: (f"生产者 {e['producer']} → 协调者 broker {e['coordinator']}：{e['api']}（{e['transactional_id']}）"
                              + (f"（{e['detail']}）" if e.get("detail") else "")
                              + ("" if e["error"] == "NONE" else f" → {e['error']}")),
    "txn_state_changed": lambda e: (f"协调者 broker {e['coordinator']}：事务 {e['transactional_id']}（生产者 "
                                    f"{e['producer_id']}，epoch {e['producer_epoch']}）{e['old_state']} → {e['new_state']}"
                                    + (f" [{_parts(e['partitions'])}]" if e.get("partitions") else "")),
    "txn_marker_written": lambda e: (f"broker {e['broker']} 在 {_tp(e)} 的偏移量 {e['offset']} 写入生产者 "
                                     f"{e['producer_id']} 的 {'COMMIT' if e['commit'] else 'ABORT'} 标记"),
    "txn_loaded": lambda e: (f"broker {e['broker']} 成为 __transaction_state-{e['txn_partition']} 的 leader，读回 "
                             f"{e['records']} 条记录" + (f"；继续完成 {', '.join(e['resumed'])}" if e.get("resumed") else "")),
    "timer_task_added": lambda e: (f"{e['timer']} 定时器：{e['name']}（{e['expiration_ms']} ms 到期）放入第 {e['level']} 层"
                                   f"第 {e['slot']} 个桶（桶在 {e['bucket_expiration_ms']} ms 到期）"),
    "timer_bucket_queued": lambda e: (f"{e['timer']} 定时器：第 {e['level']} 层第 {e['slot']} 个桶进入延迟队列，"
                                      f"{e['expiration_ms']} ms 到期"),
    "timer_overflow_wheel_created": lambda e: (f"{e['timer']} 定时器：创建第 {e['level']} 层溢出时间轮（每格 "
                                               f"{e['tick_ms']} 毫秒，一圈 {e['interval_ms']} 毫秒）"),
    "timer_bucket_expired": lambda e: (f"{e['timer']} 定时器：指针在 {e['expiration_ms']} ms 走到第 {e['level']} 层"
                                       f"第 {e['slot']} 个桶，取出 {e['tasks']} 个任务"),
    "timer_task_cascaded": lambda e: (f"{e['timer']} 定时器：{e['name']} 从第 {e['from_level']} 层降到第 "
                                      f"{e['to_level']} 层第 {e['slot']} 个桶"),
    "timer_task_expired": lambda e: f"{e['timer']} 定时器：{e['name']} 超时（{e['expiration_ms']} ms 到期）",
    "timer_task_cancelled": lambda e: f"{e['timer']} 定时器：{e['name']} 在超时前完成，离开时间轮",
    "run_moved": lambda e: (f"回到第 {e['step']} 步（引擎恢复到那一步之后的状态）" if e["how"] == "back"
                            else f"运行到第 {e['step']} 步"),
}


# ---- the log cleaner and consumer groups (engine/log/cleaner_events.py, engine/group/events.py) ----

def _parts(ps: Any) -> str:
    """Partitions as ``t-0, t-1`` (``[topic, partition]`` pairs), or "none"."""
    ps = list(ps or [])
    return ", ".join(f"{p[0]}-{p[1]}" if isinstance(p, (list, tuple)) and len(p) == 2 else str(p)
                     for p in ps) or "none"


def _parts_zh(ps: Any) -> str:
    text = _parts(ps)
    return "无" if text == "none" else text


def _assignment(a: Any, zh: bool) -> str:
    if not isinstance(a, dict) or not a:
        return "（无）" if zh else "(none)"
    sep = "；" if zh else "; "
    return sep.join(f"{m} ← {_parts_zh(p) if zh else _parts(p)}" for m, p in sorted(a.items()))


def _coord(e: Ev, zh: bool) -> str:
    """The coordinator a request goes to; -1 while FindCoordinator has not answered yet."""
    c = e.get("coordinator")
    if isinstance(c, int) and c >= 0:
        return f"broker {c}"
    return "协调者（尚未找到）" if zh else "the coordinator (not found yet)"


def _ratio(e: Ev) -> str:
    return f"{e['ratio']:.2f}" if isinstance(e.get("ratio"), (int, float)) else "?"


def _commit_offsets(offs: Any) -> str:
    out = []
    for o in offs or []:
        if isinstance(o, (list, tuple)) and len(o) >= 3:
            out.append(f"{o[0]}-{o[1]}@{o[2]}")
        else:
            out.append(str(o))
    return ", ".join(out) or "-"


_REBALANCE_WHY_EN = {"member_joined": "a member joined", "member_left": "a member left (LeaveGroup)",
                     "session_timeout": "a member's session timed out (no heartbeat)",
                     "poll_timeout": "a member exceeded max.poll.interval.ms",
                     "metadata_changed": "the subscribed topics' partition count changed",
                     "rejoin": "a member rejoined"}
_REBALANCE_WHY_ZH = {"member_joined": "有成员加入", "member_left": "有成员离开（LeaveGroup）",
                     "session_timeout": "有成员会话超时（没有心跳）", "poll_timeout": "有成员超过 max.poll.interval.ms",
                     "metadata_changed": "订阅主题的分区数变了", "rejoin": "有成员重新加入"}
_REMOVED_WHY_EN = {"leave_group": "it sent LeaveGroup", "session_timeout": "its session timed out",
                   "rebalance_timeout": "it did not rejoin within the rebalance timeout"}
_REMOVED_WHY_ZH = {"leave_group": "它发送了 LeaveGroup", "session_timeout": "它的会话超时",
                   "rebalance_timeout": "它没有在再均衡超时内重新加入"}
_STOP_EN = {"crash": "crashed (no LeaveGroup: the coordinator waits for session.timeout.ms)",
            "close": "closed and sent LeaveGroup", "poll_timeout": "stopped polling for longer than max.poll.interval.ms"}
_STOP_ZH = {"crash": "崩溃了（没有 LeaveGroup：协调者要等 session.timeout.ms）", "close": "关闭并发送了 LeaveGroup",
            "poll_timeout": "超过 max.poll.interval.ms 没有 poll"}
_SOURCE_EN = {"committed": "its group's committed offset", "earliest": "auto.offset.reset=earliest",
              "latest": "auto.offset.reset=latest"}
_SOURCE_ZH = {"committed": "消费组已提交的偏移量", "earliest": "auto.offset.reset=earliest",
              "latest": "auto.offset.reset=latest"}
_SWAP_EN = {"cleaned": "wrote and fsync'd the .cleaned files", "swap": "renamed the .cleaned files to .swap",
            "old_deleted": "renamed a replaced segment to .deleted", "swapped": "renamed the .swap files into place"}
_SWAP_ZH = {"cleaned": "写入并 fsync 了 .cleaned 文件", "swap": "把 .cleaned 文件改名为 .swap",
            "old_deleted": "把被替换的段改名为 .deleted", "swapped": "把 .swap 文件改名就位"}

_EN.update({
    "cleaner_check": lambda e: (
        f"{_where(e, False)}: cleaner check — {e['dirty_bytes']} dirty of {e['clean_bytes'] + e['dirty_bytes']} bytes, "
        f"dirty ratio {_ratio(e)} vs min.cleanable.dirty.ratio {e['min_cleanable_ratio']} (offsets "
        f"{e['first_dirty_offset']}–{e['first_uncleanable_offset']} cleanable) → "
        f"{'clean it' if e['chosen'] else 'not now'}: {_why_zh(e['reason'])}"),
    "offset_map_filled": lambda e: (
        f"{_where(e, False)}: offset map took {e['keys_put']} key(s) from the {e['records']} record(s) of segment "
        f"{_seg(e['segment'])}; the map holds {e['map_entries']} of {e['map_capacity']} entries, latest offset "
        f"{e['latest_offset']}" + (" — map full, the pass stops here" if e.get("full") else "")),
    "segments_cleaned": lambda e: (
        f"{_where(e, False)}: segments {', '.join(_seg(s) for s in e.get('sources') or [])} rewritten into "
        f"{_seg(e['segment'])}.log.cleaned: {e['records_before']} → {e['records_after']} record(s), "
        f"{e['bytes_before']} → {e['bytes_after']} bytes; {e['superseded']} older value(s) dropped, "
        f"{e['tombstones_kept']} tombstone(s) kept, {e['tombstones_removed']} removed"
        + (f", {e['keyless_removed']} keyless record(s) dropped" if e.get("keyless_removed") else "")
        + (f", {e['aborted_removed']} record(s) of aborted transactions dropped" if e.get("aborted_removed") else "")
        + (f"; tombstones kept until {_s(e['delete_horizon_ms'])} (delete.retention.ms)"
           if isinstance(e.get("delete_horizon_ms"), int) and e.get("tombstones_kept") else "")
        + (f"; transaction markers: {e.get('markers_kept', 0)} kept, {e.get('markers_removed', 0)} removed"
           if e.get("markers_kept") or e.get("markers_removed") else "")
        + (f" (markers with nothing left of their transaction kept until {_s(e['marker_horizon_ms'])})"
           if isinstance(e.get("marker_horizon_ms"), int) else "")),
    "cleaner_swap_step": lambda e: (f"{_where(e, False)}: cleaner {_SWAP_EN.get(e['step'], e['step'])} "
                                    f"(segment {_seg(e['segment'])}: {', '.join(e.get('files') or [])})"),
    "cleaner_point_moved": lambda e: (f"{_where(e, False)}: cleaner point (first dirty offset) {e['old_offset']} → "
                                      f"{e['new_offset']} in cleaner-offset-checkpoint"),
    "cleaner_pass_finished": lambda e: (
        f"{_where(e, False)}: cleaning pass over offsets {e['first_dirty_offset']}–{e['end_offset']} done: "
        f"{len(e.get('segments_before') or [])} → {len(e.get('segments_after') or [])} segment(s), "
        f"{e['bytes_before']} → {e['bytes_after']} bytes"),
    "swap_completed": lambda e: (f"{_where(e, False)}: recovery finished an interrupted swap: "
                                 f"{_seg(e['segment'])}.swap in place of "
                                 f"{', '.join(_seg(s) for s in e.get('replaced') or []) or 'nothing'}"),
    "coordinator_found": lambda e: (f"{e['consumer']}: FindCoordinator for group {e['group']} → broker "
                                    f"{e['coordinator']} (leader of __consumer_offsets-{e['partition']})"),
    "group_request_failed": lambda e: (f"{e['consumer']}: {e['api']} to group {e['group']} failed with {e['error']}"
                                       + (f" — {e['detail']}" if e.get("detail") else "")),
    "join_group_sent": lambda e: (f"{e['consumer']} → {_coord(e, False)}: JoinGroup {e['group']} "
                                  f"({', '.join(map(str, e.get('protocols') or [])) or '-'}"
                                  + (f"; owns {_parts(e.get('owned'))}" if e.get("owned") else "") + ")"),
    "rebalance_started": lambda e: (f"group {e['group']}: rebalance (PreparingRebalance) after generation "
                                    f"{e['generation']} — {_REBALANCE_WHY_EN.get(e['reason'], e['reason'])}"
                                    + (f" ({e['member']})" if e.get("member") else "")),
    "join_group_completed": lambda e: (
        f"group {e['group']}: JoinGroup done — generation {e['generation']}, protocol {e['protocol']}, leader "
        f"{e['leader']}, members {', '.join(map(str, e.get('members') or [])) or 'none'}"
        + (f"; removed {', '.join(map(str, e['removed']))}" if e.get("removed") else "")),
    "sync_group_sent": lambda e: (f"{e['member']}: SyncGroup generation {e['generation']}"
                                  + (f" with the leader's assignment {_assignment(e.get('assignment'), False)}"
                                     if e.get("leader") else " (follower, empty)")),
    "sync_group_completed": lambda e: (f"group {e['group']}: SyncGroup done, generation {e['generation']} is "
                                       f"Stable — {_assignment(e.get('assignment'), False)}"),
    "heartbeat_answered": lambda e: (f"{e['member']}: heartbeat, generation {e['generation']} → {e['error']}"
                                     + (" (rejoin)" if e.get("error") == "REBALANCE_IN_PROGRESS" else "")),
    "member_removed": lambda e: (f"group {e['group']}: member {e['member']} removed — "
                                 f"{_REMOVED_WHY_EN.get(e['reason'], e['reason'])}"),
    "group_state_changed": lambda e: (f"group {e['group']}: {e['old_state']} → {e['new_state']} "
                                      f"(generation {e['generation']})"),
    "offset_commit_sent": lambda e: (f"{e['member']}: {'auto-' if e.get('auto') else ''}OffsetCommit "
                                     f"{_commit_offsets(e.get('offsets'))} (generation {e['generation']})"),
    "offset_committed": lambda e: (f"group {e['group']}: committed offset {e['offset']} for {_tp(e)} "
                                   f"(record in __consumer_offsets-{e['offsets_partition']}"
                                   + (f" at offset {e['record_offset']})" if e.get("record_offset") is not None
                                      else ")")),
    "offset_commit_failed": lambda e: (f"{e['member']}: OffsetCommit {_commit_offsets(e.get('offsets'))} failed "
                                       f"with {e['error']}"),
    "offsets_loaded": lambda e: (f"broker {e['coordinator']} loaded __consumer_offsets-{e['offsets_partition']} "
                                 f"({e['records']} record(s)) and now coordinates "
                                 f"{', '.join(map(str, e.get('groups') or [])) or 'no groups yet'}"),
    "consumer_fetched": lambda e: (f"{e['consumer']}: read {e['records']} record(s) of {_tp(e)} from offset "
                                   f"{e['offset']}, next {e['next_offset']} (high watermark {e['high_watermark']})"),
    "position_reset": lambda e: (f"{e['consumer']}: starts {_tp(e)} at offset {e['offset']} "
                                 f"({_SOURCE_EN.get(e['source'], e['source'])})"),
    "partitions_revoked": lambda e: (f"{e['consumer']}: revoked {_parts(e.get('partitions'))} "
                                     f"(generation {e['generation']})"),
    "partitions_assigned": lambda e: (f"{e['consumer']}: assigned {_parts(e.get('partitions'))} "
                                      f"(generation {e['generation']})"
                                      + ("" if e.get("partitions") else " — idle, no partition for it")),
    "consumer_stopped": lambda e: f"{e['consumer']} {_STOP_EN.get(e['how'], e['how'])}",
    "partitions_added": lambda e: f"topic {e['topic']}: partitions {e['old_count']} → {e['new_count']}",
})

_ZH.update({
    "cleaner_check": lambda e: (
        f"{_where(e, True)}：清理检查——{e['clean_bytes'] + e['dirty_bytes']} 字节中有 {e['dirty_bytes']} 字节是脏的，"
        f"脏比例 {_ratio(e)}，min.cleanable.dirty.ratio 为 {e['min_cleanable_ratio']}（可清理偏移量 "
        f"{e['first_dirty_offset']}–{e['first_uncleanable_offset']}）→ {'清理它' if e['chosen'] else '暂不清理'}：{_why_zh(e['reason'])}"),
    "offset_map_filled": lambda e: (
        f"{_where(e, True)}：偏移量映射从段 {_seg(e['segment'])} 的 {e['records']} 条消息中放入 {e['keys_put']} 个键；"
        f"映射共 {e['map_entries']}/{e['map_capacity']} 项，最新偏移量 {e['latest_offset']}"
        + ("——映射已满，本轮到此为止" if e.get("full") else "")),
    "segments_cleaned": lambda e: (
        f"{_where(e, True)}：段 {', '.join(_seg(s) for s in e.get('sources') or [])} 重写为 "
        f"{_seg(e['segment'])}.log.cleaned：{e['records_before']} → {e['records_after']} 条，"
        f"{e['bytes_before']} → {e['bytes_after']} 字节；丢弃旧值 {e['superseded']} 条，保留墓碑 {e['tombstones_kept']} 条，"
        f"删除墓碑 {e['tombstones_removed']} 条"
        + (f"，丢弃无键消息 {e['keyless_removed']} 条" if e.get("keyless_removed") else "")
        + (f"，丢弃已中止事务的消息 {e['aborted_removed']} 条" if e.get("aborted_removed") else "")
        + (f"；墓碑保留到 {_s(e['delete_horizon_ms'])}（delete.retention.ms）"
           if isinstance(e.get("delete_horizon_ms"), int) and e.get("tombstones_kept") else "")
        + (f"；事务标记保留 {e.get('markers_kept', 0)} 个，删除 {e.get('markers_removed', 0)} 个"
           if e.get("markers_kept") or e.get("markers_removed") else "")
        + (f"（事务已无消息的标记保留到 {_s(e['marker_horizon_ms'])}）"
           if isinstance(e.get("marker_horizon_ms"), int) else "")),
    "cleaner_swap_step": lambda e: (f"{_where(e, True)}：清理器{_SWAP_ZH.get(e['step'], e['step'])}"
                                    f"（段 {_seg(e['segment'])}：{', '.join(e.get('files') or [])}）"),
    "cleaner_point_moved": lambda e: (f"{_where(e, True)}：清理点（第一个脏偏移量）{e['old_offset']} → "
                                      f"{e['new_offset']}，记在 cleaner-offset-checkpoint"),
    "cleaner_pass_finished": lambda e: (
        f"{_where(e, True)}：偏移量 {e['first_dirty_offset']}–{e['end_offset']} 的清理完成："
        f"{len(e.get('segments_before') or [])} → {len(e.get('segments_after') or [])} 个段，"
        f"{e['bytes_before']} → {e['bytes_after']} 字节"),
    "swap_completed": lambda e: (f"{_where(e, True)}：恢复时完成了被中断的交换：{_seg(e['segment'])}.swap 取代 "
                                 f"{', '.join(_seg(s) for s in e.get('replaced') or []) or '（无）'}"),
    "coordinator_found": lambda e: (f"{e['consumer']}：FindCoordinator，消费组 {e['group']} 的协调者是 broker "
                                    f"{e['coordinator']}（__consumer_offsets-{e['partition']} 的 leader）"),
    "group_request_failed": lambda e: (f"{e['consumer']}：发往消费组 {e['group']} 的 {e['api']} 失败：{e['error']}"
                                       + (f"——{e['detail']}" if e.get("detail") else "")),
    "join_group_sent": lambda e: (f"{e['consumer']} → {_coord(e, True)}：JoinGroup {e['group']}"
                                  f"（{', '.join(map(str, e.get('protocols') or [])) or '-'}"
                                  + (f"；持有 {_parts_zh(e.get('owned'))}" if e.get("owned") else "") + "）"),
    "rebalance_started": lambda e: (f"消费组 {e['group']}：在第 {e['generation']} 代之后开始再均衡（PreparingRebalance）——"
                                    f"{_REBALANCE_WHY_ZH.get(e['reason'], e['reason'])}"
                                    + (f"（{e['member']}）" if e.get("member") else "")),
    "join_group_completed": lambda e: (
        f"消费组 {e['group']}：JoinGroup 完成——第 {e['generation']} 代，协议 {e['protocol']}，leader "
        f"{e['leader']}，成员 {', '.join(map(str, e.get('members') or [])) or '无'}"
        + (f"；移除 {', '.join(map(str, e['removed']))}" if e.get("removed") else "")),
    "sync_group_sent": lambda e: (f"{e['member']}：SyncGroup 第 {e['generation']} 代"
                                  + (f"，带上 leader 的分配 {_assignment(e.get('assignment'), True)}"
                                     if e.get("leader") else "（跟随者，不带分配）")),
    "sync_group_completed": lambda e: (f"消费组 {e['group']}：SyncGroup 完成，第 {e['generation']} 代进入 Stable——"
                                       f"{_assignment(e.get('assignment'), True)}"),
    "heartbeat_answered": lambda e: (f"{e['member']}：心跳，第 {e['generation']} 代 → {e['error']}"
                                     + ("（需重新加入）" if e.get("error") == "REBALANCE_IN_PROGRESS" else "")),
    "member_removed": lambda e: (f"消费组 {e['group']}：移除成员 {e['member']}——"
                                 f"{_REMOVED_WHY_ZH.get(e['reason'], e['reason'])}"),
    "group_state_changed": lambda e: (f"消费组 {e['group']}：{e['old_state']} → {e['new_state']}"
                                      f"（第 {e['generation']} 代）"),
    "offset_commit_sent": lambda e: (f"{e['member']}：{'自动' if e.get('auto') else ''}提交偏移量 "
                                     f"{_commit_offsets(e.get('offsets'))}（第 {e['generation']} 代）"),
    "offset_committed": lambda e: (f"消费组 {e['group']}：{_tp(e)} 提交的偏移量为 {e['offset']}"
                                   f"（记录写入 __consumer_offsets-{e['offsets_partition']}"
                                   + (f" 的偏移量 {e['record_offset']}）" if e.get("record_offset") is not None
                                      else "）")),
    "offset_commit_failed": lambda e: (f"{e['member']}：提交偏移量 {_commit_offsets(e.get('offsets'))} 失败：{e['error']}"),
    "offsets_loaded": lambda e: (f"broker {e['coordinator']} 加载了 __consumer_offsets-{e['offsets_partition']}"
                                 f"（{e['records']} 条记录），现在协调 "
                                 f"{', '.join(map(str, e.get('groups') or [])) or '（暂无消费组）'}"),
    "consumer_fetched": lambda e: (f"{e['consumer']}：从 {_tp(e)} 的偏移量 {e['offset']} 读到 {e['records']} 条，"
                                   f"下一个 {e['next_offset']}（高水位 {e['high_watermark']}）"),
    "position_reset": lambda e: (f"{e['consumer']}：从偏移量 {e['offset']} 开始读 {_tp(e)}"
                                 f"（{_SOURCE_ZH.get(e['source'], e['source'])}）"),
    "partitions_revoked": lambda e: (f"{e['consumer']}：被收回 {_parts_zh(e.get('partitions'))}"
                                     f"（第 {e['generation']} 代）"),
    "partitions_assigned": lambda e: (f"{e['consumer']}：分到 {_parts_zh(e.get('partitions'))}"
                                      f"（第 {e['generation']} 代）"
                                      + ("" if e.get("partitions") else "——空闲，没有分区给它")),
    "consumer_stopped": lambda e: f"{e['consumer']} {_STOP_ZH.get(e['how'], e['how'])}",
    "partitions_added": lambda e: f"主题 {e['topic']}：分区数 {e['old_count']} → {e['new_count']}",
})

# Offsets committed inside a transaction (engine/cluster/txn_offsets.py).
def _txn_offsets_done(e: Ev, zh: bool) -> str:
    offs = e.get("offsets") or []
    each = ", ".join(f"{o[2]} for {o[0]}-{o[1]}" for o in offs)
    each_zh = "，".join(f"{o[0]}-{o[1]} 为 {o[2]}" for o in offs)
    where = f"__consumer_offsets-{e['offsets_partition']}"
    if e["commit"] and not offs:
        return (f"消费组 {e['group']}：{where} 中生产者 {e['producer_id']} 的 COMMIT 标记没有改变已提交偏移量"
                f"（日志中更靠后的提交记录优先）" if zh else
                f"group {e['group']}: the COMMIT marker of producer {e['producer_id']} in {where} changed no committed "
                f"offset (a later commit record in the log wins)")
    if zh:
        return (f"消费组 {e['group']}：{where} 中生产者 {e['producer_id']} 的 COMMIT 标记让待定偏移量成为已提交偏移量（{each_zh}）"
                if e["commit"] else
                f"消费组 {e['group']}：{where} 中生产者 {e['producer_id']} 的 ABORT 标记丢弃了待定偏移量（{each_zh}），"
                f"已提交的偏移量不变")
    return (f"group {e['group']}: the COMMIT marker of producer {e['producer_id']} in {where} made the pending "
            f"offsets committed — committed offset {each}" if e["commit"] else
            f"group {e['group']}: the ABORT marker of producer {e['producer_id']} in {where} discarded the pending "
            f"offsets ({each}); the committed offsets stay as they were")


_EN.update({
    "txn_offsets_written": lambda e: (f"group coordinator broker {e['coordinator']} wrote "
                                      f"{_commit_offsets(e.get('offsets'))} for group {e['group']} into "
                                      f"__consumer_offsets-{e['offsets_partition']} as a transactional batch of "
                                      f"producer {e['producer_id']} (epoch {e['producer_epoch']}): pending until "
                                      f"the transaction ends"),
    "txn_offsets_completed": lambda e: _txn_offsets_done(e, False),
    "txn_offsets_superseded": lambda e: (
        f"group {e['group']}: in __consumer_offsets-{e['offsets_partition']} "
        + "; ".join(f"{o[0]}-{o[1]} keeps committed offset {o[4]} (record at {o[5]}), not producer "
                    f"{e['producer_id']}'s {o[2]} (record at {o[3]})" for o in e.get("offsets") or [])
        + ": the commit record later in the log wins"),
    "txn_offsets_loaded": lambda e: (f"broker {e['coordinator']} replayed the transactional offsets of "
                                     f"__consumer_offsets-{e['offsets_partition']}: {e['committed']} committed by "
                                     f"a COMMIT marker"
                                     + (f"; still pending: {', '.join(e['pending'])}" if e.get("pending") else "")),
})
_ZH.update({
    "txn_offsets_written": lambda e: (f"消费组协调者 broker {e['coordinator']} 把消费组 {e['group']} 的 "
                                      f"{_commit_offsets(e.get('offsets'))} 作为生产者 {e['producer_id']}"
                                      f"（epoch {e['producer_epoch']}）的事务批次写入 "
                                      f"__consumer_offsets-{e['offsets_partition']}：事务结束前处于待定状态"),
    "txn_offsets_completed": lambda e: _txn_offsets_done(e, True),
    "txn_offsets_superseded": lambda e: (
        f"消费组 {e['group']}：__consumer_offsets-{e['offsets_partition']} 中"
        + "；".join(f"{o[0]}-{o[1]} 保留已提交偏移量 {o[4]}（记录位于 {o[5]}），而不是生产者 {e['producer_id']} 的 "
                   f"{o[2]}（记录位于 {o[3]}）" for o in e.get("offsets") or [])
        + "：日志中更靠后的提交记录优先"),
    "txn_offsets_loaded": lambda e: (f"broker {e['coordinator']} 重放了 __consumer_offsets-{e['offsets_partition']} "
                                     f"中的事务偏移量：{e['committed']} 个由 COMMIT 标记提交"
                                     + (f"；仍待定：{'，'.join(e['pending'])}" if e.get("pending") else "")),
})

_TABLES = {"en": _EN, "zh": _ZH}


def describe(ev: Ev, lang: str = "en") -> str:
    """One readable sentence for an event dict. Unknown kinds fall back to their fields;
    a sentence missing in ``lang`` falls back to English."""
    kind = ev.get("kind")
    for table in (_TABLES.get(lang, _EN), _EN):
        fn = table.get(kind)
        if fn is not None:
            try:
                return fn(ev)
            except (KeyError, TypeError, ValueError):
                break  # a field renamed in the engine: the generic text below still says what happened
    fields = ", ".join(f"{k}={v}" for k, v in ev.items()
                       if k not in ("kind", "seq", "time_ms", "broker", "topic", "partition"))
    return f"{_where(ev, lang == 'zh')}: {str(kind).replace('_', ' ')} {fields}".rstrip()


def finding_text(finding: Ev, lang: str = "en") -> str:
    """A checker finding as a sentence, without the timeline's "CHECKER:" prefix."""
    text = describe(finding, lang)
    for prefix in ("CHECKER: ", "检查器："):
        text = text.removeprefix(prefix)
    return text[:1].upper() + text[1:]


# ---- a step's events, folded --------------------------------------------------------------

# Chatter of every fetch round: the timeline has each one; a step's summary leaves them out.
_QUIET = {"fetch_sent", "fetch_parked", "fetch_answered", "fetch_received", "remote_leo_updated",
          "checkpoint_written", "broker_registered", "alter_partition_sent", "produce_received",
          "index_entry_written", "recovery_started", "recovery_finished", "segment_created", "index_trimmed",
          "leader_epoch_assigned", "log_flushed", "epoch_request_sent", "run_moved", "log_closed",
          "lookup_started", "lookup_segment", "index_probe", "lookup_scan", "heartbeat_answered"}
# Kinds where only the last value per broker/partition matters within a step.
_LAST = {"leo_changed", "high_watermark_changed"}


def summarize(events: list[Ev], lang: str = "en", limit: int = 10) -> list[str]:
    """The events of one step in a few sentences: appends folded per partition, LEO/HW
    moves folded to their net change per replica, fetch chatter left to the timeline."""
    zh = lang == "zh"
    out: list[tuple[int, str]] = []
    appends: dict[tuple, list[Ev]] = {}
    last: dict[tuple, tuple[Ev, Any]] = {}
    retained: dict[tuple, int] = {}
    for i, ev in enumerate(events):
        k = ev.get("kind")
        if k in _QUIET:
            continue
        if k == "batch_appended":
            appends.setdefault((ev.get("broker"), ev.get("topic"), ev.get("partition")), []).append({**ev, "_i": i})
            continue
        if k in _LAST:
            key = (k, ev.get("broker"), ev.get("topic"), ev.get("partition"))
            first_old = last[key][1] if key in last else ev.get("old")
            last[key] = ({**ev, "old": first_old, "_i": i}, first_old)
            continue
        if k == "retention_check" and not ev.get("deletable") and not ev.get("blocked_by"):
            # A rule's last "keep" says why nothing went (one line, not one per pass); the
            # log-start-offset rule's and an under-the-limit size check's keeps are routine.
            if ev.get("rule") == "time" or (ev.get("rule") == "size" and ev.get("segment") is not None):
                retained[(ev.get("broker"), ev.get("partition"), ev.get("rule"))] = i
            continue
        if k == "file_deleted":
            continue              # folded below
        out.append((i, describe(ev, lang)))
    for (broker, topic, partition), evs in appends.items():
        first, lastev = evs[0], evs[-1]
        size = sum(e.get("size_bytes", 0) for e in evs)
        w = _where(first, zh)
        if zh:
            text = f"{w}：追加 {len(evs)} 个批次，偏移量 {first['first_offset']}–{lastev['last_offset']}，共 {size} 字节"
        else:
            text = (f"{w}: appended {len(evs)} batch(es), offsets {first['first_offset']}–{lastev['last_offset']}, "
                    f"{size} bytes")
        out.append((first["_i"], text))
    for ev, first_old in last.values():
        if ev.get("old") != ev.get("new"):
            out.append((ev["_i"], describe(ev, lang)))
    for key, i in retained.items():
        if not any(e.get("kind") in ("segment_deleted",) and e.get("partition") == key[1] for e in events):
            out.append((i, describe(events[i], lang)))
    removed: dict[tuple, int] = {}
    for ev in events:
        if ev.get("kind") == "file_deleted":
            key = (ev.get("broker"), ev.get("partition"))
            removed[key] = removed.get(key, 0) + 1
    for (broker, partition), n in removed.items():
        w = _where({"broker": broker, "partition": partition}, zh)
        idx = max(i for i, e in enumerate(events) if e.get("kind") == "file_deleted" and e.get("partition") == partition)
        out.append((idx, f"{w}：从磁盘删除了 {n} 个 .deleted 文件" if zh else f"{w}: removed {n} .deleted file(s) from disk"))
    out.sort(key=lambda x: x[0])
    lines = [t for _, t in out]
    if len(lines) > limit:
        more = len(lines) - limit + 1
        lines = lines[:limit - 1] + [f"……还有 {more} 件事（见时间线）" if zh else f"… and {more} more (see the timeline)"]
    return lines


# ---- commands ------------------------------------------------------------------------------

def command_label(cmd: dict[str, Any], lang: str = "en") -> str:
    """A command in a few words. Understands a lesson sandbox's commands (``type``) and
    the replicated cluster's (``cmd``, engine/cluster/commands.py)."""
    zh = lang == "zh"
    c = cmd.get("cmd") or cmd.get("type")
    if c == "crash" and "broker" not in cmd:      # lesson 7's one broker
        if zh:
            return "断电" if cmd.get("power_loss", True) else "杀掉 broker 进程"
        return "cut the power" if cmd.get("power_loss", True) else "kill the broker process"
    if c == "restart" and "broker" not in cmd:
        return "重启 broker" if zh else "restart the broker"
    if c == "produce" and "key_mode" in cmd:      # lesson 1's producer
        n, mode, key = cmd.get("count", 1), cmd.get("key_mode", "none"), cmd.get("key")
        if zh:
            return f"发送 {n} 条消息" + {"none": "（无键）", "fixed": f"（键 {key}）", "cycle": "（键轮流）"}.get(mode, "")
        return f"produce {n} message(s)" + {"none": " without a key", "fixed": f" with key {key}",
                                             "cycle": " with keys in turn"}.get(mode, "")
    simple = {
        "lookup_offset": ("查找偏移量 {offset}", "look up offset {offset}"),
        "lookup_time": ("查找时间戳 {timestamp}", "look up timestamp {timestamp}"),
        "set_index_interval": ("设置 index.interval.bytes = {bytes}", "set index.interval.bytes = {bytes}"),
        "select_segment": ("显示段 {segment}", "show segment {segment}"),
        "delete_records": ("DeleteRecords：删除偏移量 {offset} 之前的消息", "DeleteRecords before offset {offset}"),
        "set_retention": ("设置 retention.bytes = {retention_bytes}，retention.ms = {retention_ms}",
                          "set retention.bytes = {retention_bytes}, retention.ms = {retention_ms}"),
        "poll": ("消费者 {consumer} 拉取一次", "consumer {consumer} polls"),
        "rewind": ("消费者 {consumer} 回到开头", "rewind consumer {consumer}"),
        "flush": ("立即 fsync", "fsync now"),
        "writeback": ("操作系统写回脏页", "the OS writes dirty pages back"),
        "set_flush": ("设置 flush.messages = {flush_messages}，flush.ms = {flush_ms}（0 = 从不）",
                      "set flush.messages = {flush_messages}, flush.ms = {flush_ms} (0 = never)"),
        "fetch": ("消费者从偏移量 {offset} 拉取", "consumer fetch from offset {offset}"),
        "put": ("写入 {key}={value}", "put {key}={value}"),
        "delete": ("删除 {key}（墓碑）", "delete {key} (a tombstone)"),
        "clean": ("立即运行一次清理", "run the cleaner once"),
    }
    if c in simple:
        try:
            return simple[c][0 if zh else 1].format(**cmd)
        except (KeyError, IndexError):
            return str(c).replace("_", " ")
    if c in ("crash", "restart", "shutdown", "isolate", "pause_follower", "resume_follower"):
        if zh:
            verb = {"crash": "让 broker {b} 崩溃", "restart": "重启 broker {b}", "shutdown": "正常关闭 broker {b}",
                    "isolate": "隔离 broker {b}", "pause_follower": "暂停 broker {b} 的拉取",
                    "resume_follower": "恢复 broker {b} 的拉取"}[c]
            return verb.format(b=cmd.get("broker"))
        return f"{c.replace('_', ' ')} broker {cmd.get('broker')}"
    if c == "advance":
        if "seconds" in cmd:
            return f"时钟前进 {cmd['seconds']} 秒" if zh else f"jump the clock {cmd['seconds']} s"
        return f"时钟前进 {cmd.get('ms')} 毫秒" if zh else f"advance the clock {cmd.get('ms')} ms"
    if c == "produce":
        if cmd.get("value_size") is not None:   # the storage lessons' form (or a sized engine produce)
            n, size, p = cmd.get("count", 1), cmd.get("value_size"), cmd.get("partition", 0)
            return (f"向分区 {p} 发送 {n} 条 {size} 字节的消息" if zh else
                    f"produce {n} message(s) of {size} bytes to partition {p}")
        acks = {-1: "all", "all": "all", "-1": "all"}.get(cmd.get("acks"), cmd.get("acks"))
        count = cmd.get("count") or 1
        what = (cmd.get("value") or ", ".join(cmd.get("values") or []) or
                ((f"{count} 条消息" if zh else f"{count} records") if count > 1 else ("一条消息" if zh else "a record")))
        if cmd.get("producer"):
            p = cmd.get("partition", 0)
            return (f"生产者 {cmd['producer']} 向分区 {p} 发送 {what}" if zh else
                    f"{cmd['producer']} produces {what} to partition {p}")
        if acks is None:
            return f"发送 {what}" if zh else f"produce {what}"
        return f"发送 {what}（acks={acks}）" if zh else f"produce {what} (acks={acks})"
    if c in ("consumer_join", "consumer_poll", "consumer_commit", "consumer_leave", "consumer_crash"):
        name, group = cmd.get("name"), cmd.get("group")
        if zh:
            return {"consumer_join": f"{name} 加入消费组 {group}", "consumer_poll": f"{name} 拉取一次",
                    "consumer_commit": f"{name} 提交偏移量", "consumer_leave": f"{name} 离开消费组",
                    "consumer_crash": f"{name} 崩溃"}[c]
        return {"consumer_join": f"{name} joins group {group}", "consumer_poll": f"{name} polls",
                "consumer_commit": f"{name} commits", "consumer_leave": f"{name} leaves the group",
                "consumer_crash": f"{name} crashes"}[c]
    if c == "configure_groups":
        n = cmd.get("offsets_topic_num_partitions", 50)
        return f"设置 __consumer_offsets（{n} 个分区）" if zh else f"set up __consumer_offsets ({n} partition(s))"
    if c == "consume":
        iso = cmd.get("isolation")
        if iso:
            return (f"以 {iso} 从分区 {cmd.get('partition', 0)} 偏移量 {cmd.get('offset', 0)} 开始消费" if zh else
                    f"consume partition {cmd.get('partition', 0)} from offset {cmd.get('offset', 0)} ({iso})")
        return f"从偏移量 {cmd.get('offset', 0)} 开始消费" if zh else f"consume from offset {cmd.get('offset', 0)}"
    if c == "create_producer":
        kind = ("transactional.id=" + cmd["transactional_id"] if cmd.get("transactional_id") else
                ("idempotent" if cmd.get("idempotent", True) else "enable.idempotence=false"))
        return f"创建生产者 {cmd.get('name')}（{kind}）" if zh else f"create producer {cmd.get('name')} ({kind})"
    if c in ("init_transactions", "begin_transaction", "commit_transaction", "abort_transaction"):
        return f"{cmd.get('name')}：{c}" if zh else f"{cmd.get('name')}: {c.replace('_', ' ')}"
    if c == "create_topic":
        assignment = cmd.get("assignment") or []
        on = ", ".join(map(str, assignment[0])) if assignment else ""
        if zh:
            return f"创建主题 {cmd.get('topic')}" + (f"（broker {on}）" if on else "")
        return f"create topic {cmd.get('topic')}" + (f" on brokers {on}" if on else "")
    if c == "set_config":
        changes = ", ".join(f"{k}={v}" for k, v in (cmd.get("changes") or {}).items())
        return (f"在 {cmd.get('scope')} {cmd.get('target')} 上设置 {changes}" if zh else
                f"set {changes} on {cmd.get('scope')} {cmd.get('target')}")
    if c in ("cut_link", "heal_link"):
        arrow = "↔" if cmd.get("both", True) else "→"
        verb = {"cut_link": ("切断链路", "cut link"), "heal_link": ("修复链路", "heal link")}[c][0 if zh else 1]
        return f"{verb} {_b(cmd.get('a'), zh)} {arrow} {_b(cmd.get('b'), zh)}"
    if c == "slow_follower":
        return (f"让 broker {cmd.get('broker')} 每次拉取前等待 {cmd.get('delay_ms')} 毫秒" if zh else
                f"slow broker {cmd.get('broker')}'s fetches by {cmd.get('delay_ms')} ms")
    if c == "lookup":
        return (f"在分区 {cmd.get('partition', 0)} 查找偏移量 {cmd.get('offset')}" if zh else
                f"look up offset {cmd.get('offset')} in partition {cmd.get('partition', 0)}")
    return str(c).replace("_", " ")


# ---- a lookup, step by step (the inside-a-segment diagram replays these) --------------------

def _went(key: Any, target: Any, went: str, zh: bool) -> str:
    if went == "left":
        return f"{key} > {target}，向左" if zh else f"{key} > {target}, go left"
    if went == "right":
        return f"{key} < {target}，记下它，向右" if zh else f"{key} < {target}, remember it and go right"
    return f"{key} = {target}，找到，停止" if zh else f"{key} = {target}, found: stop"


def lookup_steps(ev: Ev, lang: str = "en") -> list[dict[str, Any]]:
    """A ``log_lookup`` event as the steps the broker took, in order: ``{"kind", "text"}`` plus
    ``probe`` (an index probe: low, high, mid, key, value, went) or ``scan`` (a batch walked:
    position, base offset, last offset, max timestamp, matched). Kinds: "segment", "tprobe",
    "tfloor", "probe", "probe-none", "scan", "answer"."""
    zh = lang == "zh"
    seg, target, mode = ev.get("segment"), ev.get("target"), ev.get("mode")
    cands = ev.get("candidates") or []
    name = _seg(seg) if seg is not None else None
    steps: list[dict[str, Any]] = []
    if mode == "offset":
        if zh:
            text = (f"选段：文件名的基准偏移量 {cands} 中 ≤ {target} 的最大者是 "
                    f"{seg if seg is not None else '无'}" + (f" → {name}.log。" if name else "。"))
        else:
            text = (f"Pick the segment: the largest base offset ≤ {target} among the file names {cands} is "
                    f"{seg if seg is not None else 'none'}" + (f" → {name}.log." if name else "."))
    elif seg is None:
        text = (f"第 1 步：没有哪个段的最大时间戳 ≥ {target}：所有消息都更早。答案：-1。" if zh else
                f"Step 1: no segment's largest timestamp is ≥ {target}: every record is older. Answer: -1.")
    else:
        text = (f"第 1 步：从最旧的段开始，第一个最大时间戳 ≥ {target} 的段是 {name}。" if zh else
                f"Step 1: walk the segments oldest first; the first whose largest timestamp is ≥ {target} is {name}.")
    steps.append({"kind": "segment", "text": text})
    for i, p in enumerate(ev.get("time_probes") or []):
        lo, hi, mid, ts, off, went = p
        text = (f"第 2 步，.timeindex 探查 {i + 1}：索引项 {lo}–{hi}，中间 #{mid} = ({ts} → 偏移量 {off})：" if zh else
                f"Step 2, .timeindex probe {i + 1}: entries {lo}–{hi}, middle #{mid} = ({ts} → offset {off}): ")
        steps.append({"kind": "tprobe", "probe": p, "text": text + _went(ts, target, went, zh) + ("。" if zh else ".")})
    if mode == "timestamp" and seg is not None:
        if ev.get("time_probes") and any(p[5] != "left" for p in ev["time_probes"]):
            start = [p[4] for p in ev["time_probes"] if p[5] != "left"][-1]
            text = (f".timeindex 的 floor（时间戳 ≤ {target} 的最大索引项）给出起始偏移量 {start}。" if zh else
                    f"The .timeindex floor (the largest entry with timestamp ≤ {target}) gives offset {start} to start from.")
        else:
            text = (f"没有时间戳 ≤ {target} 的索引项：从段的基准偏移量 {seg} 开始。" if zh else
                    f"No .timeindex entry is ≤ {target}: start from the segment's base offset {seg}.")
        steps.append({"kind": "tfloor", "text": text})
    if mode == "offset":
        tgt = target
    else:       # step 3 looks up the offset the .timeindex floor gave (the segment's base if none)
        floors = [p[4] for p in ev.get("time_probes") or [] if p[5] != "left"]
        tgt = floors[-1] if floors else seg
    for i, p in enumerate(ev.get("probes") or []):
        lo, hi, mid, off, pos, went = p
        head = ("第 3 步，" if zh else "Step 3, ") if mode == "timestamp" else ""
        text = (f"{head}.index 探查 {i + 1}：索引项 {lo}–{hi}，中间 #{mid} = (偏移量 {off} → 位置 {pos})：" if zh else
                f"{head}.index probe {i + 1}: entries {lo}–{hi}, middle #{mid} = (offset {off} → position {pos}): ")
        steps.append({"kind": "probe", "probe": p, "text": text + _went(off, tgt, went, zh) + ("。" if zh else ".")})
    if seg is not None and not ev.get("probes"):
        steps.append({"kind": "probe-none", "text": (f".index 里没有 ≤ {tgt} 的索引项：从位置 0 开始。" if zh else
                                                     f"The .index has no entry ≤ {tgt}: start at position 0.")})
    for i, s in enumerate(ev.get("scan") or []):
        pos, base, last, max_ts, hit = s
        head = ("第 4 步，" if zh else "Step 4, ") if mode == "timestamp" else ""
        offs = (f"偏移量 {base}–{last}" if zh else f"offsets {base}–{last}") if base != last else \
            (f"偏移量 {base}" if zh else f"offset {base}")
        ts = ((f"，最大时间戳 {max_ts}" if zh else f", largest timestamp {max_ts}") if mode == "timestamp" else "")
        if zh:
            text = f"{head}扫描批次 {i + 1}（位置 {pos}，{offs}{ts}）：" + ("答案就在这个批次里。" if hit else "还不是，看下一个批次。")
        else:
            text = f"{head}scan batch {i + 1} at position {pos} ({offs}{ts}): " + ("it holds the answer." if hit else "not yet, next batch.")
        steps.append({"kind": "scan", "scan": s, "text": text})
    off, pos, ts = ev.get("offset"), ev.get("position"), ev.get("timestamp")
    if off is not None and off >= 0 and pos is not None:
        if zh:
            text = f"答案：偏移量 {off}" + (f"（时间戳 {ts}）" if ts is not None else "") + f"，从 {name}.log 的位置 {pos} 读取。"
        else:
            text = f"Answer: offset {off}" + (f" (timestamp {ts})" if ts is not None else "") + f", read from position {pos} of {name}.log."
    else:
        text = "答案：没有（偏移量 -1）。" if zh else "Answer: none (offset -1)."
    steps.append({"kind": "answer", "text": text})
    return steps
