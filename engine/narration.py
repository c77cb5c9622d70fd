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
* :func:`command_label` -- an engine command (``{"cmd": ...}``: one broker's storage,
  ``engine/storage_commands.py``, or a cluster's, ``engine/cluster/commands.py``) in a few words.

Adding an event kind: give it a :class:`Sentence` -- one extractor that takes the fields
the sentence needs from the event (the same for every language), and a template per
language (``SENTENCES``); words a sentence adds only when a field says so, and the words
of each item of a list, come from the language's table of clauses (``_CLAUSES``).
Commands are worded the same way (``COMMAND_SENTENCES``); a fault kind's words are its own
declaration's (``Fault.says``, engine/cluster/commands.py). The lookup steps and the folds of
:func:`summarize` pick their values once and take only words (``engine.words.Words``) per language.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import partial
from typing import Any, Callable, Mapping

from .cluster.commands import COMMANDS
from .words import Words

__all__ = ["describe", "summarize", "command_label", "LANGS", "finding_text", "lookup_steps", "Sentence", "SENTENCES",
           "COMMAND_SENTENCES"]

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
    if isinstance(n, int) and n >= 1000:     # a real client's connection (wire/session.py)
        return f"连接 {n}" if zh else f"connection {n}"
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


# ---- storage: one field extractor, a template per language --------------------------------

class _Words:
    """What a template's values need in one language: where an event happened, a range of
    offsets, a reason code glossed. An extractor takes the event's fields once and asks these
    for the few phrases that differ by language."""

    def __init__(self, zh: bool) -> None:
        self.zh = zh

    def where(self, e: Ev) -> str:
        return _where(e, self.zh)

    def offs(self, e: Ev) -> str:
        return _offs(e, self.zh)

    def b(self, node: Any) -> str:
        return _b(node, self.zh)

    def clause(self, name: str, when: Any = True, **values: Any) -> str:
        """Words added only ``when`` a field says so, in this language (``_CLAUSES``)."""
        return _CLAUSES[self.zh][name].format(**values) if when else ""

    def why(self, code: Any) -> Any:
        return _why_zh(code) if self.zh else code

    def join(self, items: Any) -> str:
        return ("，" if self.zh else ", ").join(items)


_WORDS = {"en": _Words(False), "zh": _Words(True)}


@dataclass(frozen=True)
class Sentence:
    """One event kind in words: ``pick`` takes the fields a sentence needs from the event
    (once, for every language; ``form`` names the template when the sentence has several),
    and each language has its own template, a ``str.format`` string or a form -> string map."""

    pick: Callable[[Ev, _Words], dict[str, Any]]
    en: str | Mapping[str, str]
    zh: str | Mapping[str, str]

    def render(self, ev: Ev, lang: str) -> str:
        values = self.pick(ev, _WORDS[lang])
        template = getattr(self, lang)
        if not isinstance(template, str):
            template = template[values["form"]]
        return template.format(**values)


def _where_and(**more: Callable[[Ev, _Words], Any]) -> Callable[[Ev, _Words], dict[str, Any]]:
    """An extractor: where the event happened, plus ``name=lambda e, w: value`` for each field."""
    return lambda e, w: {"where": w.where(e), **{k: f(e, w) for k, f in more.items()}}


def _field(name: str) -> Callable[[Ev, _Words], Any]:
    return lambda e, w: e[name]


def _fields(*names: str) -> dict[str, Callable[[Ev, _Words], Any]]:
    return {n: _field(n) for n in names}


def _retention_pick(e: Ev, w: _Words) -> dict[str, Any]:
    seg, rule, threshold, value = e.get("segment"), e.get("rule"), e.get("threshold"), e.get("value")
    blocked = e.get("blocked_by")
    if blocked:
        verdict = _RETENTION_WORDS[w.zh]["keep_because"].format(
            why=_RETENTION_WORDS[w.zh].get(blocked, blocked))
    else:
        verdict = _RETENTION_WORDS[w.zh]["delete" if e.get("deletable") else "keep"]
    out = {"where": w.where(e), "seg": _seg(seg), "rule": rule, "threshold": threshold, "value": value,
           "verdict": verdict, "value_s": _s(value), "threshold_s": _s(threshold)}
    if rule == "size":
        out["form"] = "size_under" if seg is None else "size"
    elif rule == "time":
        out["form"] = "time"
    elif rule == "log_start_offset":
        out["form"] = "log_start_offset"
        out["lso_verdict"] = _RETENTION_WORDS[w.zh]["delete" if e.get("deletable") else "keep"]
        if e.get("deletable"):
            reason = "below_start"
        elif isinstance(value, int) and isinstance(threshold, int) and value <= threshold:
            reason = "active"
        else:
            reason = "holds_above"
        out["reason"] = _RETENTION_WORDS[w.zh][reason].format(threshold=threshold)
    else:
        out["form"] = "other"
    return out


_RETENTION_WORDS = {
    False: {"keep_because": "keep ({why})", "delete": "delete", "keep": "keep",
            "high_watermark": "not all of it is below the high watermark",
            "empty_active": "it is the empty active segment",
            "below_start": "all its offsets are below the log start offset {threshold}",
            "active": "it is the active segment, which this rule never deletes",
            "holds_above": "it still holds offsets at or above the log start offset {threshold}"},
    True: {"keep_because": "保留（{why}）", "delete": "删除", "keep": "保留",
           "high_watermark": "它并非全部位于高水位以下", "empty_active": "它是空的活跃段",
           "below_start": "它的偏移量全部小于日志起始偏移量 {threshold}",
           "active": "它是活跃段，这条规则从不删除活跃段",
           "holds_above": "它仍包含不小于日志起始偏移量 {threshold} 的偏移量"},
}


def _lookup_pick(e: Ev, w: _Words) -> dict[str, Any]:
    """A lookup's parts, each worded by the language's own table (``_LOOKUP_WORDS``)."""
    words = _LOOKUP_WORDS[w.zh]
    probes, scan = e.get("probes") or [], e.get("scan") or []
    what = words["offset" if e.get("mode") == "offset" else "timestamp"].format(target=e["target"])
    parts = [words["chose"].format(what=what, n=len(e.get("candidates") or []), seg=_seg(e.get("segment")),
                                   rule=w.why(e.get("rule")))]
    if e.get("time_probes"):
        parts.append(words["time_probes"].format(n=len(e["time_probes"])))
    if probes:
        last = probes[-1]
        parts.append(words["probes"].format(n=len(probes), entry=last[2], offset=last[3], byte=last[4]))
    if scan:
        parts.append(words["scan"].format(n=len(scan), byte=scan[0][0]))
    if e.get("offset") is None or e.get("offset") == -1:
        parts.append(words["none"])
    else:
        parts.append(words["found"].format(offset=e["offset"], byte=e.get("position")))
    return {"where": w.where(e), "parts": ("；" if w.zh else "; ").join(parts)}


_LOOKUP_WORDS = {
    False: {"offset": "offset {target}", "timestamp": "timestamp {target}",
            "chose": "lookup of {what}: segment {seg} chosen among {n} ({rule})",
            "time_probes": "{n} probe(s) in the time index",
            "probes": "{n} binary-search probe(s) in the offset index, ending at entry {entry} (offset {offset} → byte {byte})",
            "scan": "then scanned {n} batch(es) from byte {byte}", "none": "nothing found",
            "found": "found offset {offset} at byte {byte}"},
    True: {"offset": "偏移量 {target}", "timestamp": "时间戳 {target}",
           "chose": "查找{what}：在 {n} 个段中选中段 {seg}（{rule}）",
           "time_probes": "在时间索引中探查 {n} 次",
           "probes": "在偏移量索引中二分查找 {n} 次，停在第 {entry} 项（偏移量 {offset} → 字节 {byte}）",
           "scan": "再从字节 {byte} 起扫描 {n} 个批次", "none": "没有找到",
           "found": "找到偏移量 {offset}，位于字节 {byte}"},
}


def _partitioned_pick(e: Ev, w: _Words) -> dict[str, Any]:
    rule = e["rule"]
    form = rule if rule in ("key", "sticky-switch", "sticky") else "chosen"
    out = {"form": form, "value": e["value"], "partition": e["partition"]}
    if form == "key":
        out.update(key=e["key"], hash=e["hash"], partitions=e["partitions"])
    elif form == "sticky-switch":
        out["switched_from"] = e["switched_from"]
    return out


def _fetched_pick(e: Ev, w: _Words) -> dict[str, Any]:
    offsets = e["offsets"]
    return {"form": "got" if offsets else "nothing", "consumer": e["consumer"], "partition": e["partition"],
            "fetch_offset": e["fetch_offset"], "next_offset": e["next_offset"],
            "first": offsets[0] if offsets else None, "last": offsets[-1] if offsets else None}


def _written_back_pick(e: Ev, w: _Words) -> dict[str, Any]:
    files = w.join(w.clause("written_back", file=f["file"], to=f["to"]) for f in e["files"])
    return {"form": "some" if files else "none", "files": files}


# Storage (engine/log/events.py) and lessons 1 and 7 (engine/topic.py, engine/page_cache.py).
STORAGE_SENTENCES: dict[str, Sentence] = {
    "batch_appended": Sentence(
        _where_and(offs=lambda e, w: w.offs(e), **_fields("records", "size_bytes", "position"),
                   seg=lambda e, w: _seg(e["segment"])),
        en="{where}: appended a batch of {records} record(s), {offs}, {size_bytes} bytes at byte {position} of {seg}.log",
        zh="{where}：追加一个批次，{records} 条消息，{offs}，{size_bytes} 字节，位于 {seg}.log 的字节 {position}"),
    "index_entry_written": Sentence(
        lambda e, w: {"where": w.where(e), "form": "time" if e.get("index") == "time" else "offset",
                      "seg": _seg(e["segment"]), "entries": e["entries"], "offset": e["offset"],
                      "timestamp": e["timestamp"] if e.get("index") == "time" else None,
                      "position": None if e.get("index") == "time" else e["position"]},
        en={"time": "{where}: time index entry {entries} in {seg}.timeindex: timestamp {timestamp} → offset {offset}",
            "offset": "{where}: offset index entry {entries} in {seg}.index: offset {offset} → byte {position}"},
        zh={"time": "{where}：{seg}.timeindex 第 {entries} 项：时间戳 {timestamp} → 偏移量 {offset}",
            "offset": "{where}：{seg}.index 第 {entries} 项：偏移量 {offset} → 字节 {position}"}),
    "segment_created": Sentence(
        _where_and(seg=lambda e, w: _seg(e["segment"]), files=lambda e, w: ", ".join(e.get("files") or [])),
        en="{where}: created segment {seg} ({files})",
        zh="{where}：创建段 {seg}（{files}）"),
    "segment_rolled": Sentence(
        _where_and(seg=lambda e, w: _seg(e["new_segment"]), reason=lambda e, w: w.why(e["reason"]),
                   detail=lambda e, w: f" — {e['detail']}" if e.get("detail") else ""),
        en="{where}: rolled a new segment {seg}.log (reason: {reason}){detail}",
        zh="{where}：滚动出新段 {seg}.log（原因：{reason}）"),
    "index_trimmed": Sentence(
        _where_and(seg=lambda e, w: _seg(e["segment"]), **_fields("index", "entries", "from_bytes", "to_bytes")),
        en="{where}: trimmed {seg} {index} index to {entries} entries ({from_bytes} → {to_bytes} bytes)",
        zh="{where}：把段 {seg} 的 {index} 索引裁剪到 {entries} 项（{from_bytes} → {to_bytes} 字节）"),
    "retention_check": Sentence(
        _retention_pick,
        en={"size_under": "{where}: retention by size: the partition holds {value} bytes, under "
                          "retention.bytes={threshold} → nothing to delete",
            "size": "{where}: retention by size: the partition is {value} bytes over retention.bytes; segment {seg} "
                    "holds {threshold} bytes → {verdict}",
            "time": "{where}: retention by time: segment {seg}'s newest record is {value_s} old, retention.ms is "
                    "{threshold_s} → {verdict}",
            "log_start_offset": "{where}: retention by log start offset: segment {seg} holds offsets below {value}; "
                                "{reason} → {lso_verdict}",
            "other": "{where}: retention ({rule}): segment {seg}, value {value}, limit {threshold} → {verdict}"},
        zh={"size_under": "{where}：按大小保留：分区共 {value} 字节，未超过 retention.bytes={threshold} → 无需删除",
            "size": "{where}：按大小保留：分区比 retention.bytes 多 {value} 字节；段 {seg} 有 {threshold} 字节 → {verdict}",
            "time": "{where}：按时间保留：段 {seg} 最新的消息已有 {value_s}，retention.ms 为 {threshold_s} → {verdict}",
            "log_start_offset": "{where}：按日志起始偏移量保留：段 {seg} 的偏移量都小于 {value}；{reason} → {lso_verdict}",
            "other": "{where}：保留检查（{rule}）：段 {seg}，值 {value}，上限 {threshold} → {verdict}"}),
    "segment_deleted": Sentence(
        _where_and(seg=lambda e, w: _seg(e["segment"]), reason=lambda e, w: w.why(e["reason"]),
                   after=lambda e, w: _s(e["delete_after_ms"])),
        en="{where}: segment {seg} renamed to .deleted ({reason}); files removed after {after}",
        zh="{where}：段 {seg} 改名为 .deleted（{reason}），{after} 后删除文件"),
    "file_deleted": Sentence(
        _where_and(**_fields("file")),
        en="{where}: file {file} removed from disk",
        zh="{where}：文件 {file} 已从磁盘删除"),
    "log_start_offset_changed": Sentence(
        _where_and(**_fields("old", "new"), reason=lambda e, w: w.why(e["reason"])),
        en="{where}: log start offset {old} → {new} ({reason})",
        zh="{where}：日志起始偏移量 {old} → {new}（{reason}）"),
    "leader_epoch_assigned": Sentence(
        _where_and(**_fields("epoch", "start_offset")),
        en="{where}: leader epoch {epoch} starts at offset {start_offset} (leader-epoch-checkpoint)",
        zh="{where}：leader epoch {epoch} 从偏移量 {start_offset} 开始（leader-epoch-checkpoint）"),
    "log_flushed": Sentence(
        _where_and(**_fields("up_to_offset")),
        en="{where}: flushed (fsync) up to offset {up_to_offset}",
        zh="{where}：刷盘（fsync）到偏移量 {up_to_offset}"),
    "recovery_started": Sentence(
        _where_and(**_fields("recovery_point")),
        en="{where}: opening the log, recovery from offset {recovery_point}",
        zh="{where}：打开日志，从偏移量 {recovery_point} 开始恢复"),
    "recovery_finished": Sentence(
        _where_and(**_fields("log_start_offset", "log_end_offset"), segments=lambda e, w: len(e.get("segments") or [])),
        en="{where}: log open — start offset {log_start_offset}, end offset {log_end_offset}, {segments} segment(s)",
        zh="{where}：日志已打开——起始偏移量 {log_start_offset}，末端偏移量 {log_end_offset}，{segments} 个段"),
    "epoch_cache_truncated": Sentence(
        lambda e, w: {"where": w.where(e), "form": "start" if e.get("direction") == "start" else "end",
                      "offset": e["offset"], "entries": e.get("entries")},
        en={"start": "{where}: leader-epoch cache truncated at the start (offset {offset}); entries now {entries}",
            "end": "{where}: leader-epoch cache truncated at the end (offset {offset}); entries now {entries}"},
        zh={"start": "{where}：leader-epoch 缓存从头部截断（偏移量 {offset}）；现在的条目 {entries}",
            "end": "{where}：leader-epoch 缓存从尾部截断（偏移量 {offset}）；现在的条目 {entries}"}),
    "recovery_truncated": Sentence(
        _where_and(seg=lambda e, w: _seg(e["segment"]), **_fields("from_bytes", "to_bytes"),
                   reason=lambda e, w: w.why(e["reason"])),
        en="{where}: recovery cut {seg}.log from {from_bytes} to {to_bytes} bytes ({reason})",
        zh="{where}：恢复时把 {seg}.log 从 {from_bytes} 字节截到 {to_bytes} 字节（{reason}）"),
    "index_rebuilt": Sentence(
        _where_and(seg=lambda e, w: _seg(e["segment"]), entries=_field("entries"),
                   index=lambda e, w: _INDEX_ZH.get(e["index"], e["index"] + " ") if w.zh else e["index"],
                   reason=lambda e, w: w.why(e["reason"])),
        en="{where}: rebuilt the {index} index of {seg} ({entries} entries; {reason})",
        zh="{where}：重建段 {seg} 的{index}索引（{entries} 项；{reason}）"),
    "leftover_removed": Sentence(
        _where_and(**_fields("file")),
        en="{where}: removed leftover file {file} while opening the log",
        zh="{where}：打开日志时删除残留文件 {file}"),
    "log_truncated": Sentence(
        _where_and(**_fields("from_offset", "to_offset"), reason=lambda e, w: w.why(e["reason"])),
        en="{where}: log truncated from offset {from_offset} to {to_offset} ({reason})",
        zh="{where}：日志从偏移量 {from_offset} 截断到 {to_offset}（{reason}）"),
    "log_closed": Sentence(
        _where_and(**_fields("log_end_offset")),
        en="{where}: log closed at end offset {log_end_offset}",
        zh="{where}：日志关闭，末端偏移量 {log_end_offset}"),
    "log_lookup": Sentence(_lookup_pick, en="{where}: {parts}", zh="{where}：{parts}"),
    # the five lookup events the single log_lookup replaces (kept until it lands)
    "lookup_started": Sentence(
        _where_and(**_fields("mode", "target")),
        en="{where}: looking up {mode} {target}",
        zh="{where}：开始查找 {mode} {target}"),
    "lookup_segment": Sentence(
        _where_and(seg=lambda e, w: _seg(e["segment"]), n=lambda e, w: len(e.get("candidates") or []),
                   rule=lambda e, w: w.why(e["rule"])),
        en="{where}: chose segment {seg} among {n} ({rule})",
        zh="{where}：在 {n} 个段中选中段 {seg}（{rule}）"),
    "index_probe": Sentence(
        _where_and(**_fields("index", "low", "high", "mid", "entry_offset", "went")),
        en="{where}: {index} index probe: entries {low}–{high}, entry {mid} (offset {entry_offset}) → {went}",
        zh="{where}：{index} 索引探查：第 {low}–{high} 项，取第 {mid} 项（偏移量 {entry_offset}）→ {went}"),
    "lookup_scan": Sentence(
        lambda e, w: {"where": w.where(e), "form": "match" if e.get("matched") else "scan",
                      **{k: e[k] for k in ("position", "base_offset", "last_offset")}},
        en={"scan": "{where}: scanned the batch at byte {position} (offsets {base_offset}–{last_offset})",
            "match": "{where}: scanned the batch at byte {position} (offsets {base_offset}–{last_offset}) — match"},
        zh={"scan": "{where}：扫描字节 {position} 处的批次（偏移量 {base_offset}–{last_offset}）",
            "match": "{where}：扫描字节 {position} 处的批次（偏移量 {base_offset}–{last_offset}）——命中"}),
    "lookup_finished": Sentence(
        lambda e, w: {"where": w.where(e), "form": "none" if e["offset"] == -1 else "found", "mode": e["mode"],
                      "target": e["target"], "offset": e["offset"], "position": e.get("position")},
        en={"none": "{where}: lookup of {mode} {target} → nothing found",
            "found": "{where}: lookup of {mode} {target} → offset {offset} at byte {position}"},
        zh={"none": "{where}：查找 {mode} {target} → 没有找到",
            "found": "{where}：查找 {mode} {target} → 偏移量 {offset}，字节 {position}"}),
    "record_partitioned": Sentence(
        _partitioned_pick,
        en={"key": "producer: {value} key {key}: murmur2 = {hash}, positive % {partitions} → partition {partition}",
            "sticky-switch": "producer: {value} (no key): the batch on partition {switched_from} was full, switched "
                             "to partition {partition}",
            "sticky": "producer: {value} (no key) → sticky partition {partition}",
            "chosen": "producer: {value} → partition {partition} (chosen by the producer)"},
        zh={"key": "生产者：{value} 键 {key}：murmur2 = {hash}，取正后 % {partitions} → 分区 {partition}",
            "sticky-switch": "生产者：{value} （无键）：分区 {switched_from} 上的批次已满，换到分区 {partition}",
            "sticky": "生产者：{value} （无键）→ 粘性分区 {partition}",
            "chosen": "生产者：{value} → 分区 {partition}（生产者指定）"}),
    "producer_batch_sent": Sentence(
        lambda e, w: {**{k: e[k] for k in ("records", "bytes", "partition", "first_offset", "last_offset")},
                      "reason": w.why(e["reason"])},
        en="producer sent a batch of {records} record(s) ({bytes} bytes) to partition {partition}: offsets "
           "{first_offset}–{last_offset} ({reason})",
        zh="生产者向分区 {partition} 发送一个批次，{records} 条消息（{bytes} 字节）：偏移量 {first_offset}–{last_offset}"
           "（{reason}）"),
    "simple_consumer_fetched": Sentence(
        _fetched_pick,
        en={"got": "consumer {consumer} fetched partition {partition} from offset {fetch_offset}: offsets "
                   "{first}–{last}; next offset {next_offset}",
            "nothing": "consumer {consumer} fetched partition {partition} from offset {fetch_offset}: nothing new; "
                       "next offset {next_offset}"},
        zh={"got": "消费者 {consumer} 从偏移量 {fetch_offset} 拉取分区 {partition}：偏移量 {first}–{last}；"
                   "下一个偏移量 {next_offset}",
            "nothing": "消费者 {consumer} 从偏移量 {fetch_offset} 拉取分区 {partition}：没有新消息；下一个偏移量 {next_offset}"}),
    "pages_written_back": Sentence(
        _written_back_pick,
        en={"some": "the OS wrote dirty pages back: {files}", "none": "the OS wrote dirty pages back: no whole dirty page"},
        zh={"some": "操作系统把脏页写回磁盘：{files}", "none": "操作系统把脏页写回磁盘：没有完整的脏页"}),
    "recovery_checkpoint_written": Sentence(
        lambda e, w: {"broker": e["broker"], "tp": _tp(e), "recovery_point": e["recovery_point"]},
        en="broker {broker} wrote recovery-point-offset-checkpoint: {tp} recovery point {recovery_point}",
        zh="broker {broker} 写入 recovery-point-offset-checkpoint：{tp} 恢复点 {recovery_point}"),
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
    "lost_quorum": "失去多数派", "raft_election": "Raft 选举", "controlled_shutdown": "受控关闭", "clean": "从 ISR 中干净选举",
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

def _cleaned_pick(e: Ev, w: _Words) -> dict[str, Any]:
    """segments_cleaned: the counts, and the optional clauses each language words its own way."""
    words = _CLEANED_WORDS[w.zh]
    extra = ""
    if e.get("keyless_removed"):
        extra += words["keyless"].format(n=e["keyless_removed"])
    if e.get("aborted_removed"):
        extra += words["aborted"].format(n=e["aborted_removed"])
    if isinstance(e.get("delete_horizon_ms"), int) and e.get("tombstones_kept"):
        extra += words["horizon"].format(t=_s(e["delete_horizon_ms"]))
    if e.get("markers_kept") or e.get("markers_removed"):
        extra += words["markers"].format(kept=e.get("markers_kept", 0), removed=e.get("markers_removed", 0))
    if isinstance(e.get("marker_horizon_ms"), int):
        extra += words["marker_horizon"].format(t=_s(e["marker_horizon_ms"]))
    return {"where": w.where(e), "sources": ", ".join(_seg(s) for s in e.get("sources") or []),
            "seg": _seg(e["segment"]), "extra": extra,
            **{k: e[k] for k in ("records_before", "records_after", "bytes_before", "bytes_after", "superseded",
                                 "tombstones_kept", "tombstones_removed")}}


_CLEANED_WORDS = {
    False: {"keyless": ", {n} keyless record(s) dropped", "aborted": ", {n} record(s) of aborted transactions dropped",
            "horizon": "; tombstones kept until {t} (delete.retention.ms)",
            "markers": "; transaction markers: {kept} kept, {removed} removed",
            "marker_horizon": " (markers with nothing left of their transaction kept until {t})"},
    True: {"keyless": "，丢弃无键消息 {n} 条", "aborted": "，丢弃已中止事务的消息 {n} 条",
           "horizon": "；墓碑保留到 {t}（delete.retention.ms）", "markers": "；事务标记保留 {kept} 个，删除 {removed} 个",
           "marker_horizon": "（事务已无消息的标记保留到 {t}）"},
}

# The log cleaner (engine/log/cleaner_events.py): lesson 6.
CLEANER_SENTENCES: dict[str, Sentence] = {
    "cleaner_check": Sentence(
        lambda e, w: {"where": w.where(e), "form": "chosen" if e["chosen"] else "not_now", "ratio": _ratio(e),
                      "total": e["clean_bytes"] + e["dirty_bytes"], "reason": w.why(e["reason"]),
                      **{k: e[k] for k in ("dirty_bytes", "min_cleanable_ratio", "first_dirty_offset",
                                           "first_uncleanable_offset")}},
        en={form: "{where}: cleaner check — {dirty_bytes} dirty of {total} bytes, dirty ratio {ratio} vs "
                  "min.cleanable.dirty.ratio {min_cleanable_ratio} (offsets {first_dirty_offset}–"
                  "{first_uncleanable_offset} cleanable) → " + verdict + ": {reason}"
            for form, verdict in (("chosen", "clean it"), ("not_now", "not now"))},
        zh={form: "{where}：清理检查——{total} 字节中有 {dirty_bytes} 字节是脏的，脏比例 {ratio}，"
                  "min.cleanable.dirty.ratio 为 {min_cleanable_ratio}（可清理偏移量 {first_dirty_offset}–"
                  "{first_uncleanable_offset}）→ " + verdict + "：{reason}"
            for form, verdict in (("chosen", "清理它"), ("not_now", "暂不清理"))}),
    "offset_map_filled": Sentence(
        lambda e, w: {"where": w.where(e), "seg": _seg(e["segment"]), "form": "full" if e.get("full") else "room",
                      **{k: e[k] for k in ("keys_put", "records", "map_entries", "map_capacity", "latest_offset")}},
        en={form: "{where}: offset map took {keys_put} key(s) from the {records} record(s) of segment {seg}; the map "
                  "holds {map_entries} of {map_capacity} entries, latest offset {latest_offset}" + tail
            for form, tail in (("room", ""), ("full", " — map full, the pass stops here"))},
        zh={form: "{where}：偏移量映射从段 {seg} 的 {records} 条消息中放入 {keys_put} 个键；映射共 "
                  "{map_entries}/{map_capacity} 项，最新偏移量 {latest_offset}" + tail
            for form, tail in (("room", ""), ("full", "——映射已满，本轮到此为止"))}),
    "segments_cleaned": Sentence(
        _cleaned_pick,
        en="{where}: segments {sources} rewritten into {seg}.log.cleaned: {records_before} → {records_after} "
           "record(s), {bytes_before} → {bytes_after} bytes; {superseded} older value(s) dropped, {tombstones_kept} "
           "tombstone(s) kept, {tombstones_removed} removed{extra}",
        zh="{where}：段 {sources} 重写为 {seg}.log.cleaned：{records_before} → {records_after} 条，{bytes_before} → "
           "{bytes_after} 字节；丢弃旧值 {superseded} 条，保留墓碑 {tombstones_kept} 条，删除墓碑 {tombstones_removed} "
           "条{extra}"),
    "cleaner_swap_step": Sentence(
        _where_and(step=lambda e, w: (_SWAP_ZH if w.zh else _SWAP_EN).get(e["step"], e["step"]),
                   seg=lambda e, w: _seg(e["segment"]), files=lambda e, w: ", ".join(e.get("files") or [])),
        en="{where}: cleaner {step} (segment {seg}: {files})",
        zh="{where}：清理器{step}（段 {seg}：{files}）"),
    "cleaner_point_moved": Sentence(
        _where_and(**_fields("old_offset", "new_offset")),
        en="{where}: cleaner point (first dirty offset) {old_offset} → {new_offset} in cleaner-offset-checkpoint",
        zh="{where}：清理点（第一个脏偏移量）{old_offset} → {new_offset}，记在 cleaner-offset-checkpoint"),
    "cleaner_pass_finished": Sentence(
        _where_and(**_fields("first_dirty_offset", "end_offset", "bytes_before", "bytes_after"),
                   before=lambda e, w: len(e.get("segments_before") or []),
                   after=lambda e, w: len(e.get("segments_after") or [])),
        en="{where}: cleaning pass over offsets {first_dirty_offset}–{end_offset} done: {before} → {after} segment(s), "
           "{bytes_before} → {bytes_after} bytes",
        zh="{where}：偏移量 {first_dirty_offset}–{end_offset} 的清理完成：{before} → {after} 个段，"
           "{bytes_before} → {bytes_after} 字节"),
    "swap_completed": Sentence(
        lambda e, w: {"where": w.where(e), "seg": _seg(e["segment"]), "form": "some" if e.get("replaced") else "none",
                      "replaced": ", ".join(_seg(s) for s in e.get("replaced") or [])},
        en={"some": "{where}: recovery finished an interrupted swap: {seg}.swap in place of {replaced}",
            "none": "{where}: recovery finished an interrupted swap: {seg}.swap in place of nothing"},
        zh={"some": "{where}：恢复时完成了被中断的交换：{seg}.swap 取代 {replaced}",
            "none": "{where}：恢复时完成了被中断的交换：{seg}.swap 取代 （无）"}),
}



# Offsets committed inside a transaction (engine/cluster/txn_offsets.py).
def _txn_offsets_done_pick(e: Ev, w: _Words) -> dict[str, Any]:
    offs = e.get("offsets") or []
    return {"group": e["group"], "producer_id": e["producer_id"], "where": f"__consumer_offsets-{e['offsets_partition']}",
            "form": "unchanged" if e["commit"] and not offs else "commit" if e["commit"] else "abort",
            "each": w.clause("list").join(w.clause("txn_offset", t=o[0], p=o[1], offset=o[2]) for o in offs)}


def _txn_superseded_pick(e: Ev, w: _Words) -> dict[str, Any]:
    return {"group": e["group"], "offsets_partition": e["offsets_partition"], "each": w.clause("items").join(
        w.clause("superseded", t=o[0], p=o[1], pending=o[2], pending_at=o[3], committed=o[4], committed_at=o[5],
                 producer_id=e["producer_id"]) for o in e.get("offsets") or [])}


_TRUNCATION_WHY = {
    False: {"hw": "to its high watermark (the pre-0.11 rule)",
            "epoch": "to the point where its log diverges from the leader's (leader epoch)",
            "out_of_range": "because the leader's log ends before its fetch offset",
            "log_start": "because the leader's log starts after its fetch offset"},
    True: {"hw": "截到自己的高水位（0.11 之前的规则）", "epoch": "截到与 leader 日志分叉的位置（leader epoch）",
           "out_of_range": "因为 leader 的日志在它的拉取偏移量之前就结束了",
           "log_start": "因为 leader 的日志从它的拉取偏移量之后才开始"},
}

# Follower truncation and offsets committed inside a transaction (engine/cluster/txn_offsets.py).
LIST_SENTENCES: dict[str, Sentence] = {
    "replica_truncated": Sentence(
        lambda e, w: {"broker": e["broker"], "tp": _tp(e), "from_offset": e["from_offset"], "to_offset": e["to_offset"],
                      "cut": e["from_offset"] - e["to_offset"],
                      "why": _TRUNCATION_WHY[w.zh].get(e["reason"], e["reason"]),
                      "detail": w.clause("dash_detail", e.get("detail"), detail=e.get("detail"))},
        en="broker {broker} truncated {tp} from offset {from_offset} to {to_offset} ({cut} record(s) cut) {why}{detail}",
        zh="broker {broker} 把 {tp} 从偏移量 {from_offset} 截断到 {to_offset}（截掉 {cut} 条），{why}"),
    "txn_offsets_completed": Sentence(
        _txn_offsets_done_pick,
        en={"unchanged": "group {group}: the COMMIT marker of producer {producer_id} in {where} changed no committed "
                         "offset (a later commit record in the log wins)",
            "commit": "group {group}: the COMMIT marker of producer {producer_id} in {where} made the pending offsets "
                      "committed — committed offset {each}",
            "abort": "group {group}: the ABORT marker of producer {producer_id} in {where} discarded the pending offsets "
                     "({each}); the committed offsets stay as they were"},
        zh={"unchanged": "消费组 {group}：{where} 中生产者 {producer_id} 的 COMMIT 标记没有改变已提交偏移量"
                         "（日志中更靠后的提交记录优先）",
            "commit": "消费组 {group}：{where} 中生产者 {producer_id} 的 COMMIT 标记让待定偏移量成为已提交偏移量（{each}）",
            "abort": "消费组 {group}：{where} 中生产者 {producer_id} 的 ABORT 标记丢弃了待定偏移量（{each}），已提交的偏移量不变"}),
    "txn_offsets_superseded": Sentence(
        _txn_superseded_pick,
        en="group {group}: in __consumer_offsets-{offsets_partition} {each}: the commit record later in the log wins",
        zh="消费组 {group}：__consumer_offsets-{offsets_partition} 中{each}：日志中更靠后的提交记录优先"),
}


# Cluster, group and transaction kinds whose sentences are one template each. The extractor
# takes every field once; where a language words a value its own way it asks ``w``.
PLAIN_SENTENCES: dict[str, Sentence] = {
    'broker_shutdown': Sentence(
        lambda e, w: {'broker': e['broker']},
        en='broker {broker} shut down cleanly',
        zh='broker {broker} 正常关闭'),
    'broker_registered': Sentence(
        lambda e, w: {'controller': e['controller'], 'broker': e['broker'], 'broker_epoch': e['broker_epoch']},
        en='controller {controller} registered broker {broker} (broker epoch {broker_epoch})',
        zh='控制器 {controller} 登记了 broker {broker}（broker epoch {broker_epoch}）'),
    'broker_fenced': Sentence(
        lambda e, w: {'controller': e['controller'], 'broker': e['broker'], 'reason_words': e['reason'].replace('_', ' '), 'reason': w.why(e['reason'])},
        en='controller {controller} fenced broker {broker} ({reason_words})',
        zh='控制器 {controller} 隔离了 broker {broker}（{reason}）'),
    'metadata_applied': Sentence(
        lambda e, w: {'node': e['node'], 'to': e['to_offset'], 'n': len(e['records']),
                      'kinds': w.join(e['records']) if e['records'] else ('只有控制记录' if w.zh else 'control records only')},
        en='node {node} applied {n} committed metadata record(s) up to offset {to} ({kinds})',
        zh='节点 {node} 应用了 {n} 条已提交的元数据记录，直到偏移量 {to}（{kinds}）'),
    'producer_id_block_received': Sentence(
        lambda e, w: {'broker': e['broker'], 'first': e['first'], 'last': e['first'] + e['size'] - 1,
                      'controller': e['controller']},
        en='broker {broker} got producer ids {first}–{last} from controller {controller} (a committed ProducerIdsRecord); '
           'its InitProducerId answers come from this block',
        zh='broker {broker} 从控制器 {controller} 得到生产者 ID {first}–{last}（已提交的 ProducerIdsRecord）；'
           '它回答 InitProducerId 时从这一块中分配'),
    'controller_changed': Sentence(
        lambda e, w: {'new': e['new'], 'controller_epoch': e['controller_epoch'], 'reason_words': e['reason'].replace('_', ' '), 'reason': w.why(e['reason'])},
        en='broker {new} is the active controller (controller epoch {controller_epoch}, {reason_words})',
        zh='broker {new} 成为活跃控制器（控制器 epoch {controller_epoch}，{reason}）'),
    'leader_elected': Sentence(
        lambda e, w: {'chosen': e['chosen'], 'tp': _tp(e), 'leader_epoch': e['leader_epoch'], 'isr': e['isr'], 'rule': w.why(e['rule'])},
        en='controller elected broker {chosen} leader of {tp} at leader epoch {leader_epoch} ({rule}); ISR {isr}',
        zh='控制器选举 broker {chosen} 为 {tp} 的 leader，leader epoch {leader_epoch}（{rule}）；ISR {isr}'),
    'partition_offline': Sentence(
        lambda e, w: {'tp': _tp(e), 'reason': w.why(e['reason'])},
        en='{tp} is offline: no replica may lead ({reason})',
        zh='{tp} 离线：没有副本可以当 leader（{reason}）'),
    'isr_shrunk': Sentence(
        lambda e, w: {'tp': _tp(e), 'isr': e['isr'], 'removed': e['removed'], 'reason': w.why(e['reason'])},
        en='ISR of {tp} shrank to {isr} (removed {removed}: {reason})',
        zh='{tp} 的 ISR 缩小为 {isr}（移除 {removed}：{reason}）'),
    'isr_expanded': Sentence(
        lambda e, w: {'tp': _tp(e), 'isr': e['isr'], 'added': e['added']},
        en='ISR of {tp} grew to {isr} (added {added})',
        zh='{tp} 的 ISR 扩大为 {isr}（加入 {added}）'),
    'alter_partition_sent': Sentence(
        lambda e, w: {'broker': e['broker'], 'tp': _tp(e), 'proposed_isr': e['proposed_isr']},
        en='broker {broker} asked the controller to set the ISR of {tp} to {proposed_isr}',
        zh='broker {broker} 请求控制器把 {tp} 的 ISR 设为 {proposed_isr}'),
    'alter_partition_rejected': Sentence(
        lambda e, w: {'broker': e['broker'], 'reason': w.why(e['reason'])},
        en="controller refused broker {broker}'s ISR change ({reason})",
        zh='控制器拒绝了 broker {broker} 的 ISR 变更（{reason}）'),
    'became_leader': Sentence(
        lambda e, w: {'broker': e['broker'], 'tp': _tp(e), 'leader_epoch': e['leader_epoch'], 'leo': e['leo'], 'high_watermark': e['high_watermark']},
        en='broker {broker} leads {tp} at epoch {leader_epoch} (LEO {leo}, HW {high_watermark}); epoch cache gets ({leader_epoch}, {leo})',
        zh='broker {broker} 成为 {tp} 的 leader，epoch {leader_epoch}（LEO {leo}，HW {high_watermark}）；epoch 缓存加入 ({leader_epoch}, {leo})'),
    'fetch_sent': Sentence(
        lambda e, w: {'broker': e['broker'], 'leader': e['leader'], 'tp': _tp(e), 'fetch_offset': e['fetch_offset']},
        en='broker {broker} → broker {leader}: Fetch {tp} from offset {fetch_offset}',
        zh='broker {broker} → broker {leader}：Fetch {tp}，从偏移量 {fetch_offset} 开始'),
    'fetch_parked': Sentence(
        lambda e, w: {'broker': e['broker'], 'follower': e['follower'], 'fetch_offset': e['fetch_offset'], 'max_wait_ms': e['max_wait_ms']},
        en="broker {broker} parked broker {follower}'s fetch at offset {fetch_offset} (nothing new; waits up to {max_wait_ms} ms)",
        zh='broker {broker} 暂存 broker {follower} 在偏移量 {fetch_offset} 的拉取（暂无新数据，最多等 {max_wait_ms} 毫秒）'),
    'remote_leo_updated': Sentence(
        lambda e, w: {'broker': e['broker'], 'follower': e['follower'], 'old': e['old'], 'new': e['new']},
        en="broker {broker} notes broker {follower}'s LEO {old} → {new}",
        zh='broker {broker} 记下 broker {follower} 的 LEO {old} → {new}'),
    'leo_changed': Sentence(
        lambda e, w: {'broker': e['broker'], 'role': e['role'], 'old': e['old'], 'new': e['new'], 'reason': w.why(e['reason'])},
        en='broker {broker} ({role}) LEO {old} → {new} ({reason})',
        zh='broker {broker}（{role}）LEO {old} → {new}（{reason}）'),
    'high_watermark_changed': Sentence(
        lambda e, w: {'broker': e['broker'], 'role': e['role'], 'old': e['old'], 'new': e['new'], 'reason_words': e['reason'].replace('_', ' '), 'reason': w.why(e['reason'])},
        en='broker {broker} ({role}) HW {old} → {new} ({reason_words})',
        zh='broker {broker}（{role}）HW {old} → {new}（{reason}）'),
    'epoch_request_sent': Sentence(
        lambda e, w: {'broker': e['broker'], 'leader': e['leader'], 'epoch': e['epoch']},
        en='broker {broker} → broker {leader}: OffsetsForLeaderEpoch — where does epoch {epoch} end?',
        zh='broker {broker} → broker {leader}：OffsetsForLeaderEpoch——epoch {epoch} 在哪里结束？'),
    'fetch_diverging': Sentence(
        lambda e, w: {'broker': e['broker'], 'follower': e['follower'], 'fetch_offset': e['fetch_offset'], 'last_fetched_epoch': e['last_fetched_epoch'], 'end_offset': e['end_offset'], 'epoch': e['epoch']},
        en='broker {broker} → broker {follower}: its fetch at {fetch_offset} names epoch {last_fetched_epoch}, which here ends at {end_offset} (DivergingEpoch {epoch}); no records, truncate first',
        zh='broker {broker} → broker {follower}：偏移量 {fetch_offset} 处的拉取声明 epoch {last_fetched_epoch}，它在这里结束于 {end_offset}（DivergingEpoch {epoch}）；不发送记录，先截断'),
    'replica_fetch_failed': Sentence(
        lambda e, w: {'broker': e['broker'], 'topic': e['topic'], 'partition': e['partition'], 'fetch_offset': e['fetch_offset'], 'error': e['error'], 'detail': e['detail']},
        en='broker {broker} stops fetching {topic}-{partition} at {fetch_offset}: {error} ({detail}); the broker goes on',
        zh='broker {broker} 停止拉取 {topic}-{partition}（偏移量 {fetch_offset}）：{error}（{detail}）；broker 照常运行'),
    'produce_received': Sentence(
        lambda e, w: {'broker': e['broker'], 'request_id': e['request_id'], 'records': e['records'], 'acks': e['acks']},
        en='broker {broker} got produce request {request_id} ({records} record(s), acks={acks})',
        zh='broker {broker} 收到生产请求 {request_id}（{records} 条消息，acks={acks}）'),
    'produce_appended': Sentence(
        lambda e, w: {'broker': e['broker'], 'request_id': e['request_id'], 'base_offset': e['base_offset'], 'last_offset': e['last_offset'], 'leader_epoch': e['leader_epoch']},
        en='broker {broker} appended request {request_id} at offset(s) {base_offset}–{last_offset}, epoch {leader_epoch}',
        zh='broker {broker} 把请求 {request_id} 写到偏移量 {base_offset}–{last_offset}，epoch {leader_epoch}'),
    'produce_waiting': Sentence(
        lambda e, w: {'request_id': e['request_id'], 'last_offset': e['required_offset'] - 1},
        en='request {request_id} waits until the HW passes offset {last_offset}',
        zh='请求 {request_id} 等待 HW 越过偏移量 {last_offset}'),
    'produce_failed': Sentence(
        lambda e, w: {'request_id': e['request_id'], 'error': e['error']},
        en='request {request_id} failed: {error}',
        zh='请求 {request_id} 失败：{error}'),
    'consumer_read': Sentence(
        lambda e, w: {'records': e['records'], 'tp': _tp(e), 'offset': e['offset'], 'high_watermark': e['high_watermark']},
        en='a consumer read {records} record(s) of {tp} from offset {offset} (HW {high_watermark})',
        zh='消费者从偏移量 {offset} 读取 {tp} 的 {records} 条消息（HW {high_watermark}）'),
    'checkpoint_written': Sentence(
        lambda e, w: {'broker': e['broker'], 'file': e['file']},
        en='broker {broker} wrote {file}',
        zh='broker {broker} 写入 {file}'),
    'link_changed': Sentence(
        lambda e, w: {'a': w.b(e['a']), 'arrow': '↔' if e['both'] else '→', 'b': w.b(e['b']),
                      'state': {'cut': '切断', 'healed': '已修复', 'delay': '延迟', 'drop': '丢包'}.get(e['state'], e['state'])
                      if w.zh else e['state']},
        en='link {a} {arrow} {b}: {state}',
        zh='链路 {a} {arrow} {b}：{state}'),
    'client_connected': Sentence(
        lambda e, w: {'node': e['node'], 'broker': w.b(e['broker'])},
        en='a client connected to {broker} (connection {node})',
        zh='一个客户端连接到 {broker}（连接 {node}）'),
    'client_disconnected': Sentence(
        lambda e, w: {'node': e['node'], 'broker': w.b(e['broker'])},
        en='connection {node} to {broker} closed',
        zh='连接 {node}（到 {broker}）已关闭'),
    'client_request': Sentence(
        lambda e, w: {'node': e['node'], 'broker': w.b(e['broker']), 'api': e['api'], 'v': e['version'],
                      'corr': e['correlation_id']},
        en='connection {node} sent {api} v{v} (correlation id {corr}) to {broker}',
        zh='连接 {node} 向 {broker} 发送 {api} v{v}（correlation id {corr}）'),
    'client_response': Sentence(
        lambda e, w: {'node': e['node'], 'broker': w.b(e['broker']), 'api': e['api'], 'v': e['version'],
                      'corr': e['correlation_id'], 'error': e['error']},
        en='{broker} answered {api} v{v} (correlation id {corr}) of connection {node}: {error}',
        zh='{broker} 回复连接 {node} 的 {api} v{v}（correlation id {corr}）：{error}'),
    'message_dropped': Sentence(
        lambda e, w: {'api': e['api'], 'src': w.b(e['src']), 'dst': w.b(e['dst']), 'reason_words': e['reason'].replace('_', ' '), 'reason': w.why(e['reason'])},
        en='{api} from {src} to {dst} dropped ({reason_words})',
        zh='{src} 发往 {dst} 的 {api} 被丢弃（{reason}）'),
    'check_acked_record_lost': Sentence(
        lambda e, w: {'record': e.get('value') or e['digest'], 'offset': e['offset']},
        en="CHECKER: acknowledged record {record} at offset {offset} is not in the leader's log — lost",
        zh='检查器：已确认的消息 {record}（偏移量 {offset}）不在 leader 的日志里——丢失'),
    'check_replicas_diverged': Sentence(
        lambda e, w: {'brokers': ', '.join(map(str, e['brokers'])), 'offset': e['offset']},
        en='CHECKER: brokers {brokers} hold different records at offset {offset} — diverged',
        zh='检查器：broker {brokers} 在偏移量 {offset} 上的消息不同——不一致'),
    'check_hw_regressed': Sentence(
        lambda e, w: {'broker': e['broker'], 'old': e['old'], 'new': e['new']},
        en="CHECKER: broker {broker}'s HW went back {old} → {new}",
        zh='检查器：broker {broker} 的 HW 倒退了 {old} → {new}'),
    'check_uncommitted_read': Sentence(
        lambda e, w: {'offset': e['offset']},
        en='CHECKER: a consumer read an uncommitted record at offset {offset}',
        zh='检查器：消费者在偏移量 {offset} 读到了未提交的消息'),
    'produce_duplicate': Sentence(
        lambda e, w: {'broker': e['broker'], 'request_id': e['request_id'], 'producer_id': e['producer_id'], 'producer_epoch': e['producer_epoch'], 'base_sequence': e['base_sequence'], 'tp': _tp(e), 'base_offset': e['base_offset'], 'last_offset': e['last_offset']},
        en="broker {broker} recognised request {request_id} as a duplicate (producer {producer_id}, epoch {producer_epoch}, sequence {base_sequence}) of {tp} and answered with the first write's offsets {base_offset}–{last_offset}, writing nothing",
        zh='broker {broker} 认出请求 {request_id} 是重复批次（生产者 {producer_id}，epoch {producer_epoch}，序列号 {base_sequence}），用第一次写入的偏移量 {base_offset}–{last_offset} 应答 {tp}，不再写入'),
    'txn_marker_written': Sentence(
        lambda e, w: {'broker': e['broker'], 'form': 'commit' if e['commit'] else 'abort',
                      'producer_id': e['producer_id'], 'offset': e['offset'], 'tp': _tp(e)},
        en={'commit': 'broker {broker} wrote a COMMIT marker for producer {producer_id} at offset {offset} of {tp}',
            'abort': 'broker {broker} wrote an ABORT marker for producer {producer_id} at offset {offset} of {tp}'},
        zh={'commit': 'broker {broker} 在 {tp} 的偏移量 {offset} 写入生产者 {producer_id} 的 COMMIT 标记',
            'abort': 'broker {broker} 在 {tp} 的偏移量 {offset} 写入生产者 {producer_id} 的 ABORT 标记'}),
    'timer_task_added': Sentence(
        lambda e, w: {'timer': e['timer'], 'name': e['name'], 'expiration_ms': e['expiration_ms'], 'level': e['level'], 'slot': e['slot'], 'bucket_expiration_ms': e['bucket_expiration_ms']},
        en='{timer} timer: {name} (due at {expiration_ms} ms) goes into level {level}, bucket {slot} (expires at {bucket_expiration_ms} ms)',
        zh='{timer} 定时器：{name}（{expiration_ms} ms 到期）放入第 {level} 层第 {slot} 个桶（桶在 {bucket_expiration_ms} ms 到期）'),
    'timer_bucket_queued': Sentence(
        lambda e, w: {'timer': e['timer'], 'level': e['level'], 'slot': e['slot'], 'expiration_ms': e['expiration_ms']},
        en='{timer} timer: level {level} bucket {slot} joins the delay queue, due at {expiration_ms} ms',
        zh='{timer} 定时器：第 {level} 层第 {slot} 个桶进入延迟队列，{expiration_ms} ms 到期'),
    'timer_overflow_wheel_created': Sentence(
        lambda e, w: {'timer': e['timer'], 'level': e['level'], 'tick_ms': e['tick_ms'], 'interval_ms': e['interval_ms']},
        en='{timer} timer: overflow wheel level {level} created ({tick_ms} ms per bucket, {interval_ms} ms around)',
        zh='{timer} 定时器：创建第 {level} 层溢出时间轮（每格 {tick_ms} 毫秒，一圈 {interval_ms} 毫秒）'),
    'timer_bucket_expired': Sentence(
        lambda e, w: {'timer': e['timer'], 'level': e['level'], 'slot': e['slot'], 'expiration_ms': e['expiration_ms'], 'tasks': e['tasks']},
        en='{timer} timer: the hand reached level {level} bucket {slot} at {expiration_ms} ms; {tasks} task(s) taken out',
        zh='{timer} 定时器：指针在 {expiration_ms} ms 走到第 {level} 层第 {slot} 个桶，取出 {tasks} 个任务'),
    'timer_task_cascaded': Sentence(
        lambda e, w: {'timer': e['timer'], 'name': e['name'], 'from_level': e['from_level'], 'to_level': e['to_level'], 'slot': e['slot']},
        en='{timer} timer: {name} moves from level {from_level} down to level {to_level}, bucket {slot}',
        zh='{timer} 定时器：{name} 从第 {from_level} 层降到第 {to_level} 层第 {slot} 个桶'),
    'timer_task_expired': Sentence(
        lambda e, w: {'timer': e['timer'], 'name': e['name'], 'expiration_ms': e['expiration_ms']},
        en='{timer} timer: {name} timed out (due at {expiration_ms} ms)',
        zh='{timer} 定时器：{name} 超时（{expiration_ms} ms 到期）'),
    'timer_task_cancelled': Sentence(
        lambda e, w: {'timer': e['timer'], 'name': e['name']},
        en='{timer} timer: {name} completed before its timeout and left the wheel',
        zh='{timer} 定时器：{name} 在超时前完成，离开时间轮'),
    'coordinator_found': Sentence(
        lambda e, w: {'consumer': e['consumer'], 'group': e['group'], 'coordinator': e['coordinator'], 'partition': e['partition']},
        en='{consumer}: FindCoordinator for group {group} → broker {coordinator} (leader of __consumer_offsets-{partition})',
        zh='{consumer}：FindCoordinator，消费组 {group} 的协调者是 broker {coordinator}（__consumer_offsets-{partition} 的 leader）'),
    'sync_group_completed': Sentence(
        lambda e, w: {'group': e['group'], 'generation': e['generation'],
                      'assignment': _assignment(e.get('assignment'), w.zh)},
        en='group {group}: SyncGroup done, generation {generation} is Stable — {assignment}',
        zh='消费组 {group}：SyncGroup 完成，第 {generation} 代进入 Stable——{assignment}'),
    'member_removed': Sentence(
        lambda e, w: {'group': e['group'], 'member': e['member'],
                      'why': (_REMOVED_WHY_ZH if w.zh else _REMOVED_WHY_EN).get(e['reason'], e['reason'])},
        en='group {group}: member {member} removed — {why}',
        zh='消费组 {group}：移除成员 {member}——{why}'),
    'group_state_changed': Sentence(
        lambda e, w: {'group': e['group'], 'old_state': e['old_state'], 'new_state': e['new_state'], 'generation': e['generation']},
        en='group {group}: {old_state} → {new_state} (generation {generation})',
        zh='消费组 {group}：{old_state} → {new_state}（第 {generation} 代）'),
    'offset_commit_sent': Sentence(
        lambda e, w: {'member': e['member'], 'form': 'auto' if e.get('auto') else 'manual',
                      'offsets': _commit_offsets(e.get('offsets')), 'generation': e['generation']},
        en={'auto': '{member}: auto-OffsetCommit {offsets} (generation {generation})',
            'manual': '{member}: OffsetCommit {offsets} (generation {generation})'},
        zh={'auto': '{member}：自动提交偏移量 {offsets}（第 {generation} 代）',
            'manual': '{member}：提交偏移量 {offsets}（第 {generation} 代）'}),
    'offset_commit_failed': Sentence(
        lambda e, w: {'member': e['member'], 'offsets': _commit_offsets(e.get('offsets')), 'error': e['error']},
        en='{member}: OffsetCommit {offsets} failed with {error}',
        zh='{member}：提交偏移量 {offsets} 失败：{error}'),
    'offsets_loaded': Sentence(
        lambda e, w: {'coordinator': e['coordinator'], 'offsets_partition': e['offsets_partition'], 'records': e['records'], 'groups': ', '.join(map(str, e.get('groups') or [])) or ('（暂无消费组）' if w.zh else 'no groups yet')},
        en='broker {coordinator} loaded __consumer_offsets-{offsets_partition} ({records} record(s)) and now coordinates {groups}',
        zh='broker {coordinator} 加载了 __consumer_offsets-{offsets_partition}（{records} 条记录），现在协调 {groups}'),
    'consumer_fetched': Sentence(
        lambda e, w: {'consumer': e['consumer'], 'records': e['records'], 'tp': _tp(e), 'offset': e['offset'], 'next_offset': e['next_offset'], 'high_watermark': e['high_watermark']},
        en='{consumer}: read {records} record(s) of {tp} from offset {offset}, next {next_offset} (high watermark {high_watermark})',
        zh='{consumer}：从 {tp} 的偏移量 {offset} 读到 {records} 条，下一个 {next_offset}（高水位 {high_watermark}）'),
    'position_reset': Sentence(
        lambda e, w: {'consumer': e['consumer'], 'tp': _tp(e), 'offset': e['offset'], 'source': (_SOURCE_ZH if w.zh else _SOURCE_EN).get(e['source'], e['source'])},
        en='{consumer}: starts {tp} at offset {offset} ({source})',
        zh='{consumer}：从偏移量 {offset} 开始读 {tp}（{source}）'),
    'partitions_revoked': Sentence(
        lambda e, w: {'consumer': e['consumer'], 'generation': e['generation'],
                      'partitions': (_parts_zh if w.zh else _parts)(e.get('partitions'))},
        en='{consumer}: revoked {partitions} (generation {generation})',
        zh='{consumer}：被收回 {partitions}（第 {generation} 代）'),
    'consumer_stopped': Sentence(
        lambda e, w: {'consumer': e['consumer'], 'how': (_STOP_ZH if w.zh else _STOP_EN).get(e['how'], e['how'])},
        en='{consumer} {how}',
        zh='{consumer} {how}'),
    'partitions_added': Sentence(
        lambda e, w: {'topic': e['topic'], 'old_count': e['old_count'], 'new_count': e['new_count']},
        en='topic {topic}: partitions {old_count} → {new_count}',
        zh='主题 {topic}：分区数 {old_count} → {new_count}'),
    'txn_offsets_written': Sentence(
        lambda e, w: {'coordinator': e['coordinator'], 'offsets': _commit_offsets(e.get('offsets')), 'group': e['group'], 'offsets_partition': e['offsets_partition'], 'producer_id': e['producer_id'], 'producer_epoch': e['producer_epoch']},
        en='group coordinator broker {coordinator} wrote {offsets} for group {group} into __consumer_offsets-{offsets_partition} as a transactional batch of producer {producer_id} (epoch {producer_epoch}): pending until the transaction ends',
        zh='消费组协调者 broker {coordinator} 把消费组 {group} 的 {offsets} 作为生产者 {producer_id}（epoch {producer_epoch}）的事务批次写入 __consumer_offsets-{offsets_partition}：事务结束前处于待定状态'),
}


# Words a sentence adds only when a field says so ("again", "after a clean shutdown"): each
# language's own, looked up by ``w.clause(name, when, **values)``.
_CLAUSES = {
    False: {"again": " again", "after_clean": " after a clean shutdown",
            "power_loss": " (power loss: un-fsynced bytes lost in {n} file(s))",
            "truncates_hw": "it truncates to its high watermark first",
            "asks_epoch": "it asks the leader where its epoch ends first",
            "fetch_error": "error {error}", "fetch_records": "records {first}–{last}", "fetch_none": "no records",
            "error": ", error {error}", "answered_for": " (answered for epoch {epoch})", "at_offset": " (offset {offset})",
            "detail": " ({detail})", "txn_error": " → {error}", "partitions": " [{partitions}]",
            "reason": " ({reason})", "resumed": "; it finishes {resumed}", "dash_detail": " — {detail}",
            "owns": "; owns {owned}", "member": " ({member})", "removed": "; removed {removed}",
            "rejoin": " (rejoin)", "record_at": " at offset {offset})", "record_end": ")",
            "idle": " — idle, no partition for it", "pending": "; still pending: {pending}",
            "no_members": "none", "with_assignment": " with the leader's assignment {assignment}",
            "follower_empty": " (follower, empty)", "list": ", ", "items": "; ",
            "txn_offset": "{offset} for {t}-{p}",
            "superseded": "{t}-{p} keeps committed offset {committed} (record at {committed_at}), not producer "
                          "{producer_id}'s {pending} (record at {pending_at})",
            "log_of": "{t}-{p} LEO {leo}, HW {hw}", "placed": "partition {p} on brokers {r}",
            "written_back": "{file} durable up to byte {to}",
            "key_none": " without a key", "key_fixed": " with key {key}", "key_cycle": " with keys in turn",
            "records": "{n} records", "a_record": "a record"},
    True: {"again": "重新", "after_clean": "（上次是正常关闭）",
           "power_loss": "（断电：{n} 个文件中未刷盘的字节丢失）",
           "truncates_hw": "它先截断到自己的高水位", "asks_epoch": "它先问 leader 自己的 epoch 在哪里结束",
           "fetch_error": "错误 {error}", "fetch_records": "消息 {first}–{last}", "fetch_none": "没有消息",
           "error": "，错误 {error}", "answered_for": "（按 epoch {epoch} 回答）", "at_offset": "（偏移量 {offset}）",
           "detail": "（{detail}）", "txn_error": " → {error}", "partitions": " [{partitions}]",
           "reason": "", "resumed": "；继续完成 {resumed}", "dash_detail": "——{detail}",
           "owns": "；持有 {owned}", "member": "（{member}）", "removed": "；移除 {removed}",
           "rejoin": "（需重新加入）", "record_at": " 的偏移量 {offset}）", "record_end": "）",
           "idle": "——空闲，没有分区给它", "pending": "；仍待定：{pending}",
           "no_members": "无", "with_assignment": "，带上 leader 的分配 {assignment}",
           "follower_empty": "（跟随者，不带分配）", "list": "，", "items": "；",
           "txn_offset": "{t}-{p} 为 {offset}",
           "superseded": "{t}-{p} 保留已提交偏移量 {committed}（记录位于 {committed_at}），而不是生产者 {producer_id} 的 "
                         "{pending}（记录位于 {pending_at}）",
           "log_of": "{t}-{p} LEO {leo}，HW {hw}", "placed": "分区 {p} 在 broker {r} 上",
           "written_back": "{file} 持久化到第 {to} 字节",
           "key_none": "（无键）", "key_fixed": "（键 {key}）", "key_cycle": "（键轮流）",
           "records": "{n} 条消息", "a_record": "一条消息"},
}


def _fetch_answer(e: Ev, w: _Words) -> str:
    if e["error"]:
        return w.clause("fetch_error", error=e["error"])
    if e["records"]:
        return w.clause("fetch_records", first=e["first_offset"], last=e["last_offset"])
    return w.clause("fetch_none")


def _producer_created_form(e: Ev) -> str:
    if e["idempotent"] and e["producer_id"] >= 0:
        return "with_id"
    return "idempotent" if e["idempotent"] else "plain"


# Kinds whose sentences add clauses when a field says so.
CLAUSE_SENTENCES: dict[str, Sentence] = {
    "broker_started": Sentence(
        lambda e, w: {"broker": e["broker"], "again": w.clause("again", e["restart"]),
                      "clean": w.clause("after_clean", e["clean_shutdown"])},
        en="broker {broker} started{again}{clean}",
        zh="broker {broker} {again}启动{clean}"),
    "broker_crashed": Sentence(
        lambda e, w: {"broker": e["broker"],
                      "lost": w.clause("power_loss", e["power_loss"], n=len(e.get("lost_files") or []))},
        en="broker {broker} crashed{lost}",
        zh="broker {broker} 崩溃{lost}"),
    "logs_loaded": Sentence(
        lambda e, w: {"broker": e["broker"], "logs": w.clause("items").join(
            w.clause("log_of", t=x["topic"], p=x["partition"], leo=x["leo"], hw=x["high_watermark"])
            for x in e["logs"])},
        en="broker {broker} opened its logs: {logs}",
        zh="broker {broker} 打开日志：{logs}"),
    "topic_created": Sentence(
        lambda e, w: {"topic": e["topic"], "partitions": w.clause("items").join(
            w.clause("placed", p=p, r=", ".join(map(str, r))) for p, r in sorted(e["assignment"].items()))},
        en="topic {topic} created: {partitions}",
        zh="创建主题 {topic}：{partitions}"),
    "became_follower": Sentence(
        lambda e, w: {**{k: e[k] for k in ("broker", "leader", "leader_epoch", "leo", "high_watermark")},
                      "tp": _tp(e), "first": w.clause("truncates_hw" if e["truncation"] == "hw" else "asks_epoch")},
        en="broker {broker} follows broker {leader} for {tp} at epoch {leader_epoch} (LEO {leo}, HW "
           "{high_watermark}); {first}",
        zh="broker {broker} 以 epoch {leader_epoch} 跟随 broker {leader}（{tp}，LEO {leo}，HW {high_watermark}）；{first}"),
    "fetch_answered": Sentence(
        lambda e, w: {"broker": e["broker"], "follower": e["follower"], "answer": _fetch_answer(e, w),
                      "high_watermark": e["high_watermark"], "leader_leo": e["leader_leo"]},
        en="broker {broker} → broker {follower}: {answer}, HW {high_watermark}, leader LEO {leader_leo}",
        zh="broker {broker} → broker {follower}：{answer}，HW {high_watermark}，leader LEO {leader_leo}"),
    "fetch_received": Sentence(
        lambda e, w: {"broker": e["broker"], "records": e["records"], "hw": e["leader_high_watermark"],
                      "error": w.clause("error", e["error"], error=e["error"])},
        en="broker {broker} took the fetch response: {records} record(s), leader HW {hw}{error}",
        zh="broker {broker} 收到拉取响应：{records} 条消息，leader HW {hw}{error}"),
    "epoch_request_answered": Sentence(
        lambda e, w: {**{k: e[k] for k in ("broker", "follower", "requested_epoch", "end_offset")},
                      "answered": w.clause("answered_for", e["epoch"] != e["requested_epoch"], epoch=e["epoch"])},
        en="broker {broker} → broker {follower}: epoch {requested_epoch} ends at offset {end_offset}{answered}",
        zh="broker {broker} → broker {follower}：epoch {requested_epoch} 结束于偏移量 {end_offset}{answered}"),
    "produce_acked": Sentence(
        lambda e, w: {"request_id": e["request_id"],
                      "offset": w.clause("at_offset", e["base_offset"] is not None, offset=e["base_offset"])},
        en="the client was told request {request_id} succeeded{offset}",
        zh="客户端收到请求 {request_id} 成功的确认{offset}"),
    "config_changed": Sentence(
        lambda e, w: {"scope": e["scope"], "target": e["target"],
                      "changes": w.clause("list").join(f"{k}={v}" for k, v in e["changes"].items())},
        en="config of {scope} {target} changed: {changes}",
        zh="{scope} {target} 的配置已修改：{changes}"),
    "producer_created": Sentence(
        lambda e, w: {"form": _producer_created_form(e), "name": e["name"], "producer_id": e["producer_id"],
                      "producer_epoch": e["producer_epoch"]},
        en={"with_id": "producer {name} created: InitProducerId gave producer id {producer_id}, epoch {producer_epoch}",
            "idempotent": "producer {name} created (idempotent; its producer id comes with init_transactions)",
            "plain": "producer {name} created without idempotence (no producer id, no sequence numbers)"},
        zh={"with_id": "创建生产者 {name}：InitProducerId 分配生产者 id {producer_id}，epoch {producer_epoch}",
            "idempotent": "创建生产者 {name}（幂等；生产者 id 由 init_transactions 获得）",
            "plain": "创建生产者 {name}，未开启幂等（没有生产者 id 和序列号）"}),
    "produce_retried": Sentence(
        lambda e, w: {**{k: e[k] for k in ("producer", "attempt", "error", "request_id", "backoff_ms", "base_sequence")},
                      "form": "same_sequence" if e["base_sequence"] >= 0 else "no_sequence"},
        en={"same_sequence": "producer {producer}: attempt {attempt} failed with {error}; it retries as request "
                             "{request_id} after {backoff_ms} ms with the same base sequence {base_sequence}",
            "no_sequence": "producer {producer}: attempt {attempt} failed with {error}; it retries as request "
                           "{request_id} after {backoff_ms} ms (no sequence number: the leader cannot tell it is a retry)"},
        zh={"same_sequence": "生产者 {producer}：第 {attempt} 次发送失败（{error}），{backoff_ms} 毫秒后以请求 {request_id} "
                             "重试，基础序列号仍为 {base_sequence}",
            "no_sequence": "生产者 {producer}：第 {attempt} 次发送失败（{error}），{backoff_ms} 毫秒后以请求 {request_id} "
                           "重试（没有序列号：leader 无法识别这是重试）"}),
    "txn_request": Sentence(
        lambda e, w: {"producer": e["producer"], "coordinator": e["coordinator"], "tid": e["transactional_id"],
                      "api": e["api"] if w.zh else _TXN_API.get(e["api"], e["api"]),
                      "detail": w.clause("detail", e.get("detail"), detail=e.get("detail")),
                      "error": w.clause("txn_error", e["error"] != "NONE", error=e["error"])},
        en="producer {producer} → coordinator broker {coordinator}: {api} for {tid}{detail}{error}",
        zh="生产者 {producer} → 协调者 broker {coordinator}：{api}（{tid}）{detail}{error}"),
    "txn_state_changed": Sentence(
        lambda e, w: {**{k: e[k] for k in ("coordinator", "transactional_id", "producer_id", "producer_epoch",
                                           "old_state", "new_state")},
                      "partitions": w.clause("partitions", e.get("partitions"),
                                             partitions=_parts(e.get("partitions"))),
                      "reason": w.clause("reason", e.get("reason"),
                                         reason=str(e.get("reason") or "").replace("_", " "))},
        en="coordinator broker {coordinator}: transaction {transactional_id} (producer {producer_id}, epoch "
           "{producer_epoch}) {old_state} → {new_state}{partitions}{reason}",
        zh="协调者 broker {coordinator}：事务 {transactional_id}（生产者 {producer_id}，epoch {producer_epoch}）"
           "{old_state} → {new_state}{partitions}{reason}"),
    "txn_loaded": Sentence(
        lambda e, w: {"broker": e["broker"], "txn_partition": e["txn_partition"], "records": e["records"],
                      "resumed": w.clause("resumed", e.get("resumed"), resumed=", ".join(e.get("resumed") or []))},
        en="broker {broker} leads __transaction_state-{txn_partition} and read back {records} record(s){resumed}",
        zh="broker {broker} 成为 __transaction_state-{txn_partition} 的 leader，读回 {records} 条记录{resumed}"),
    "run_moved": Sentence(
        lambda e, w: {"form": "back" if e["how"] == "back" else "at", "step": e["step"]},
        en={"back": "rewound to step {step} (the engine is as it was after that step)", "at": "the run is at step {step}"},
        zh={"back": "回到第 {step} 步（引擎恢复到那一步之后的状态）", "at": "运行到第 {step} 步"}),
    "group_request_failed": Sentence(
        lambda e, w: {**{k: e[k] for k in ("consumer", "api", "group", "error")},
                      "detail": w.clause("dash_detail", e.get("detail"), detail=e.get("detail"))},
        en="{consumer}: {api} to group {group} failed with {error}{detail}",
        zh="{consumer}：发往消费组 {group} 的 {api} 失败：{error}{detail}"),
    "join_group_sent": Sentence(
        lambda e, w: {"consumer": e["consumer"], "coordinator": _coord(e, w.zh), "group": e["group"],
                      "protocols": ", ".join(map(str, e.get("protocols") or [])) or "-",
                      "owns": w.clause("owns", e.get("owned"),
                                       owned=(_parts_zh if w.zh else _parts)(e.get("owned")))},
        en="{consumer} → {coordinator}: JoinGroup {group} ({protocols}{owns})",
        zh="{consumer} → {coordinator}：JoinGroup {group}（{protocols}{owns}）"),
    "rebalance_started": Sentence(
        lambda e, w: {"group": e["group"], "generation": e["generation"],
                      "why": (_REBALANCE_WHY_ZH if w.zh else _REBALANCE_WHY_EN).get(e["reason"], e["reason"]),
                      "member": w.clause("member", e.get("member"), member=e.get("member"))},
        en="group {group}: rebalance (PreparingRebalance) after generation {generation} — {why}{member}",
        zh="消费组 {group}：在第 {generation} 代之后开始再均衡（PreparingRebalance）——{why}{member}"),
    "join_group_completed": Sentence(
        lambda e, w: {**{k: e[k] for k in ("group", "generation", "protocol", "leader")},
                      "members": ", ".join(map(str, e.get("members") or [])) or w.clause("no_members"),
                      "removed": w.clause("removed", e.get("removed"),
                                          removed=", ".join(map(str, e.get("removed") or [])))},
        en="group {group}: JoinGroup done — generation {generation}, protocol {protocol}, leader {leader}, members "
           "{members}{removed}",
        zh="消费组 {group}：JoinGroup 完成——第 {generation} 代，协议 {protocol}，leader {leader}，成员 {members}{removed}"),
    "sync_group_sent": Sentence(
        lambda e, w: {"member": e["member"], "generation": e["generation"],
                      "assignment": w.clause("with_assignment", assignment=_assignment(e.get("assignment"), w.zh))
                      if e.get("leader") else w.clause("follower_empty")},
        en="{member}: SyncGroup generation {generation}{assignment}",
        zh="{member}：SyncGroup 第 {generation} 代{assignment}"),
    "heartbeat_answered": Sentence(
        lambda e, w: {"member": e["member"], "generation": e["generation"], "error": e["error"],
                      "rejoin": w.clause("rejoin", e.get("error") == "REBALANCE_IN_PROGRESS")},
        en="{member}: heartbeat, generation {generation} → {error}{rejoin}",
        zh="{member}：心跳，第 {generation} 代 → {error}{rejoin}"),
    "offset_committed": Sentence(
        lambda e, w: {"group": e["group"], "offset": e["offset"], "tp": _tp(e),
                      "offsets_partition": e["offsets_partition"],
                      "end": w.clause("record_at", offset=e["record_offset"]) if e.get("record_offset") is not None
                      else w.clause("record_end")},
        en="group {group}: committed offset {offset} for {tp} (record in __consumer_offsets-{offsets_partition}{end}",
        zh="消费组 {group}：{tp} 提交的偏移量为 {offset}（记录写入 __consumer_offsets-{offsets_partition}{end}"),
    "partitions_assigned": Sentence(
        lambda e, w: {"consumer": e["consumer"], "generation": e["generation"],
                      "partitions": (_parts_zh if w.zh else _parts)(e.get("partitions")),
                      "idle": w.clause("idle", not e.get("partitions"))},
        en="{consumer}: assigned {partitions} (generation {generation}){idle}",
        zh="{consumer}：分到 {partitions}（第 {generation} 代）{idle}"),
    "txn_offsets_loaded": Sentence(
        lambda e, w: {"coordinator": e["coordinator"], "offsets_partition": e["offsets_partition"],
                      "committed": e["committed"],
                      "pending": w.clause("pending", e.get("pending"),
                                          pending=w.clause("list").join(e.get("pending") or []))},
        en="broker {coordinator} replayed the transactional offsets of __consumer_offsets-{offsets_partition}: "
           "{committed} committed by a COMMIT marker{pending}",
        zh="broker {coordinator} 重放了 __consumer_offsets-{offsets_partition} 中的事务偏移量：{committed} 个由 COMMIT "
           "标记提交{pending}"),
}


def _raft_node(e: Ev, zh: bool = False) -> str:
    return f"节点 {e['node']}" if zh else f"node {e['node']}"


def _leader_or_none(leader: int, zh: bool) -> str:
    if leader is None or leader < 0:
        return "无 leader" if zh else "no leader"
    return f"leader {leader}"


# Why a quorum node changed state or refused a vote (engine/kraft/node.py writes these in
# English): the same reason in Chinese, a nested one ("pre-vote lost (election timeout)") said
# whole. Anything not listed is shown as the engine wrote it.
_RAFT_REASONS_ZH: tuple[tuple[str, str], ...] = (
    (r"started with no quorum-state", "启动时没有 quorum-state"),
    (r"restarted; quorum-state names the leader", "重启；quorum-state 记着 leader"),
    (r"restarted", "重启"),
    (r"restarted as the epoch's leader", "以本 epoch 的 leader 身份重启"),
    (r"won the election with votes from \[(.*)\]", "凭 [\\1] 的选票赢得选举"),
    (r"epoch (-?\d+) < (-?\d+)", "epoch \\1 < \\2"),
    (r"election timeout after resigning", "辞任后选举超时"),
    (r"election timeout", "选举超时"),
    (r"backoff over", "退避结束"),
    (r"no fetch answered by leader (-?\d+) in (\d+) ms", "leader \\1 在 \\2 毫秒内没有回答拉取"),
    (r"fetch timeout: looking for the leader again", "拉取超时：重新寻找 leader"),
    (r"a majority of pre-votes", "得到多数预投票"),
    (r"pre-vote lost \((.*)\); back to the last leader", "预投票失败（{0}）；回到上一个 leader"),
    (r"pre-vote lost \((.*)\)", "预投票失败（{0}）"),
    (r"pre-vote refused by \[(.*)\]", "被 [\\1] 拒绝预投票"),
    (r"graceful shutdown", "正常关闭"),
    (r"vote request from (-?\d+) at a higher epoch", "收到 \\1 在更高 epoch 的投票请求"),
    (r"vote answer from (-?\d+)", "来自 \\1 的投票应答"),
    (r"fetch answer from (-?\d+): (\w+)", "来自 \\1 的拉取应答：\\2"),
    (r"(\w+) answer from (-?\d+): (\w+)", "来自 \\2 的 \\1 应答：\\3"),
    (r"(\w+) answer from (-?\d+)", "来自 \\2 的 \\1 应答"),
    (r"fetch answered by leader (-?\d+)", "leader \\1 回答了拉取"),
    (r"check quorum: only \[(.*)\] fetched in (\d+) ms, a majority is (\d+)",
     "check quorum：\\2 毫秒内只有 [\\1] 来拉取，多数是 \\3"),
    (r"log not up to date", "日志不够新"),
    (r"already leader in this epoch", "本 epoch 已是 leader"),
    (r"resigned from this epoch", "已辞任本 epoch"),
    (r"already following leader (-?\d+)", "已在跟随 leader \\1"),
    (r"leader (-?\d+) answered my fetches", "leader \\1 回答了我的拉取"),
    (r"voted for myself", "已投给自己"),
    (r"voted for (-?\d+)", "已投给 \\1"),
    (r"leader (-?\d+) is known", "已知 leader \\1"),
    (r"(\w+) from (-?\d+)", "收到 \\2 的 \\1"),
)


def _raft_reason(reason: str, zh: bool) -> str:
    if not zh or not reason:
        return reason
    for pattern, said in _RAFT_REASONS_ZH:
        m = re.fullmatch(pattern, reason)
        if m:
            if "{0}" in said:                     # a reason inside a reason
                return said.format(_raft_reason(m.group(1), zh))
            return m.expand(said)
    return reason


# The KRaft quorum (engine/kraft/events.py): elections, the metadata log's fetches and its HW.
RAFT_SENTENCES: dict[str, Sentence] = {
    "raft_node_started": Sentence(
        lambda e, w: {"node": _raft_node(e, w.zh), "form": "voter" if e["voter"] else "observer",
                      "leo": e["log_end_offset"]},
        en={"voter": "{node} started as a voter; its metadata log ends at offset {leo}",
            "observer": "{node} started as an observer (fetches the metadata log, never votes); its log ends at "
                        "offset {leo}"},
        zh={"voter": "{node} 以投票者身份启动；元数据日志末端偏移量 {leo}",
            "observer": "{node} 以观察者身份启动（只拉取元数据日志，不投票）；日志末端偏移量 {leo}"}),
    "raft_node_stopped": Sentence(
        lambda e, w: {"node": _raft_node(e, w.zh), "how": {"crash": "崩溃", "shutdown": "正常关闭"}.get(e["how"], e["how"])
                      if w.zh else e["how"],
                      "form": "power" if e["power_loss"] else "plain", "lost": len(e.get("lost_files") or [])},
        en={"power": "{node} stopped ({how}) with a power loss: what was not flushed is gone ({lost} file(s))",
            "plain": "{node} stopped ({how})"},
        zh={"power": "{node} 停止（{how}），且断电：未刷盘的数据丢失（{lost} 个文件）",
            "plain": "{node} 停止（{how}）"}),
    "raft_state_changed": Sentence(
        lambda e, w: {"node": _raft_node(e, w.zh), **{k: e[k] for k in ("old_state", "state", "old_epoch", "epoch")},
                      "reason": _raft_reason(e["reason"], w.zh), "leader": _leader_or_none(e["leader"], w.zh)},
        en="{node}: {old_state} → {state}, epoch {old_epoch} → {epoch}, {leader} ({reason})",
        zh="{node}：{old_state} → {state}，epoch {old_epoch} → {epoch}，{leader}（{reason}）"),
    "raft_quorum_state_written": Sentence(
        lambda e, w: {"node": _raft_node(e, w.zh), "epoch": e["leader_epoch"],
                      "leader": _leader_or_none(e["leader_id"], w.zh), "voted": e["voted_id"],
                      "form": "durable" if e["durable"] else "cached"},
        en={"durable": "{node} wrote quorum-state (epoch {epoch}, {leader}, voted for {voted}) and fsync'd it",
            "cached": "{node} wrote quorum-state (epoch {epoch}, {leader}, voted for {voted}) without fsync"},
        zh={"durable": "{node} 写入 quorum-state（epoch {epoch}，{leader}，投票给 {voted}）并 fsync",
            "cached": "{node} 写入 quorum-state（epoch {epoch}，{leader}，投票给 {voted}），未 fsync"}),
    "raft_vote_sent": Sentence(
        lambda e, w: {"node": _raft_node(e, w.zh), **{k: e[k] for k in ("to", "epoch", "last_offset_epoch", "last_offset")},
                      "form": "pre" if e["pre_vote"] else "vote"},
        en={"pre": "{node} → node {to}: pre-vote for epoch {epoch} (last offset {last_offset} at epoch "
                   "{last_offset_epoch}); no epoch is bumped yet",
            "vote": "{node} → node {to}: vote for me in epoch {epoch} (last offset {last_offset} at epoch "
                    "{last_offset_epoch})"},
        zh={"pre": "{node} → 节点 {to}：epoch {epoch} 的预投票请求（最后偏移量 {last_offset}，epoch "
                   "{last_offset_epoch}）；此时还不增加 epoch",
            "vote": "{node} → 节点 {to}：请求在 epoch {epoch} 投票给我（最后偏移量 {last_offset}，epoch "
                    "{last_offset_epoch}）"}),
    "raft_vote_answered": Sentence(
        lambda e, w: {"node": _raft_node(e, w.zh), "to": e["to"], "epoch": e["epoch"], "reason": _raft_reason(e["reason"], w.zh),
                      "form": ("pre_" if e["pre_vote"] else "") + ("yes" if e["granted"] else "no")},
        en={"yes": "{node} → node {to}: vote granted for epoch {epoch}",
            "no": "{node} → node {to}: vote refused for epoch {epoch} ({reason})",
            "pre_yes": "{node} → node {to}: pre-vote granted for epoch {epoch}",
            "pre_no": "{node} → node {to}: pre-vote refused for epoch {epoch} ({reason})"},
        zh={"yes": "{node} → 节点 {to}：同意在 epoch {epoch} 投票",
            "no": "{node} → 节点 {to}：拒绝在 epoch {epoch} 投票（{reason}）",
            "pre_yes": "{node} → 节点 {to}：同意 epoch {epoch} 的预投票",
            "pre_no": "{node} → 节点 {to}：拒绝 epoch {epoch} 的预投票（{reason}）"}),
    "raft_begin_epoch_sent": Sentence(
        lambda e, w: {"node": _raft_node(e, w.zh), "to": e["to"], "epoch": e["epoch"]},
        en="{node} → node {to}: BeginQuorumEpoch, I lead epoch {epoch}",
        zh="{node} → 节点 {to}：BeginQuorumEpoch，我是 epoch {epoch} 的 leader"),
    "raft_end_epoch_sent": Sentence(
        lambda e, w: {"node": _raft_node(e, w.zh), "to": e["to"], "epoch": e["epoch"],
                      "next": ", ".join(str(n) for n in (e.get("preferred_successors") or [])) or "-"},
        en="{node} → node {to}: EndQuorumEpoch, I resign epoch {epoch} (preferred successors: {next})",
        zh="{node} → 节点 {to}：EndQuorumEpoch，我辞去 epoch {epoch} 的 leader（优先继任者：{next}）"),
    "raft_fetch_sent": Sentence(
        lambda e, w: {"node": _raft_node(e, w.zh), **{k: e[k] for k in ("to", "epoch", "fetch_offset",
                                                                   "last_fetched_epoch")}},
        en="{node} → node {to}: Fetch the metadata log from offset {fetch_offset} (epoch {epoch}, last fetched "
           "epoch {last_fetched_epoch})",
        zh="{node} → 节点 {to}：从偏移量 {fetch_offset} 拉取元数据日志（epoch {epoch}，最后拉取的 epoch "
           "{last_fetched_epoch}）"),
    "raft_fetch_answered": Sentence(
        lambda e, w: {"node": _raft_node(e, w.zh), **{k: e[k] for k in ("to", "epoch", "error", "records",
                                                                   "high_watermark", "diverging_epoch",
                                                                   "diverging_end_offset")},
                      "snapshot_end_offset": e.get("snapshot_end_offset", -1),
                      "snapshot_epoch": e.get("snapshot_epoch", -1),
                      "form": "error" if e["error"] else (
                          "snapshot" if e.get("snapshot_end_offset", -1) >= 0 else
                          ("diverging" if e["diverging_epoch"] is not None
                           and e["diverging_epoch"] >= 0 and not e["records"]
                           and e["diverging_end_offset"] is not None
                           and e["diverging_end_offset"] >= 0 else "records"))},
        en={"error": "{node} → node {to}: Fetch refused: {error} (epoch {epoch})",
            "snapshot": "{node} → node {to}: that offset is below my log start; fetch snapshot "
                        "{snapshot_end_offset}-{snapshot_epoch} first",
            "diverging": "{node} → node {to}: your log diverges; epoch {diverging_epoch} ends at offset "
                         "{diverging_end_offset}, truncate there",
            "records": "{node} → node {to}: {records} record(s), metadata HW {high_watermark}"},
        zh={"error": "{node} → 节点 {to}：拒绝 Fetch：{error}（epoch {epoch}）",
            "snapshot": "{node} → 节点 {to}：该偏移量低于我的日志起始偏移量；请先拉取快照 "
                        "{snapshot_end_offset}-{snapshot_epoch}",
            "diverging": "{node} → 节点 {to}：你的日志已分叉；epoch {diverging_epoch} 止于偏移量 "
                         "{diverging_end_offset}，截断到那里",
            "records": "{node} → 节点 {to}：{records} 条记录，元数据 HW {high_watermark}"}),
    "raft_appended": Sentence(
        lambda e, w: {"node": _raft_node(e, w.zh), **{k: e[k] for k in ("role", "epoch", "base_offset", "last_offset")},
                      "form": "control" if e["control"] else "data"},
        en={"control": "{node} ({role}) appended a LeaderChangeMessage at offset {base_offset}, epoch {epoch}",
            "data": "{node} ({role}) appended metadata offsets {base_offset}–{last_offset} at epoch {epoch}"},
        zh={"control": "{node}（{role}）在偏移量 {base_offset} 追加 LeaderChangeMessage，epoch {epoch}",
            "data": "{node}（{role}）在 epoch {epoch} 追加元数据偏移量 {base_offset}–{last_offset}"}),
    "raft_truncated": Sentence(
        lambda e, w: {"node": _raft_node(e, w.zh), **{k: e[k] for k in ("old_leo", "new_leo", "diverging_epoch")}},
        en="{node} truncated its metadata log from {old_leo} to {new_leo}: those records were never committed "
           "(diverging epoch {diverging_epoch})",
        zh="{node} 把元数据日志从 {old_leo} 截断到 {new_leo}：这些记录从未提交（分叉的 epoch {diverging_epoch}）"),
    "raft_high_watermark_changed": Sentence(
        lambda e, w: {"node": _raft_node(e, w.zh), **{k: e[k] for k in ("epoch", "old", "new")}},
        en="{node}: metadata HW {old} → {new} (epoch {epoch}): a majority of voters has everything below {new}",
        zh="{node}：元数据 HW {old} → {new}（epoch {epoch}）：多数投票者已拥有 {new} 之前的全部记录"),
    "raft_snapshot_written": Sentence(
        lambda e, w: {"node": _raft_node(e, w.zh), **{k: e[k] for k in ("name", "end_offset", "records", "size")},
                      "form": e["how"] if e["how"] in ("fetched", "interval", "bootstrap") else "created"},
        en={"created": "{node} wrote snapshot {name}: its state below the committed offset {end_offset} "
                       "({records} record(s), {size} bytes)",
            "interval": "{node} wrote snapshot {name}: metadata.log.max.snapshot.interval.ms has passed since its "
                        "last one, so it saved its state below the committed offset {end_offset} "
                        "({records} record(s), {size} bytes)",
            "bootstrap": "{node} was formatted with the bootstrap snapshot {name}: KRaftVersionRecord and "
                         "VotersRecord name the initial voters ({size} bytes)",
            "fetched": "{node} downloaded snapshot {name} from the leader ({records} record(s), {size} bytes)"},
        zh={"created": "{node} 写入快照 {name}：已提交偏移量 {end_offset} 之前的状态（{records} 条记录，{size} 字节）",
            "interval": "{node} 写入快照 {name}：距上次快照已过 metadata.log.max.snapshot.interval.ms，"
                        "于是保存已提交偏移量 {end_offset} 之前的状态（{records} 条记录，{size} 字节）",
            "bootstrap": "{node} 格式化时写入引导快照 {name}：KRaftVersionRecord 和 VotersRecord 记下初始投票者"
                         "（{size} 字节）",
            "fetched": "{node} 从 leader 下载了快照 {name}（{records} 条记录，{size} 字节）"}),
    "raft_snapshot_deleted": Sentence(
        lambda e, w: {"node": _raft_node(e, w.zh), "name": e["name"], "reason": e["reason"]},
        en="{node} deleted the older snapshot {name} ({reason})",
        zh="{node} 删除了较旧的快照 {name}（{reason}）"),
    "raft_snapshot_fetch_sent": Sentence(
        lambda e, w: {"node": _raft_node(e, w.zh), **{k: e[k] for k in ("to", "end_offset", "snapshot_epoch", "position")}},
        en="{node} → node {to}: FetchSnapshot {end_offset}-{snapshot_epoch} from byte {position}",
        zh="{node} → 节点 {to}：FetchSnapshot {end_offset}-{snapshot_epoch}，从第 {position} 字节开始"),
    "raft_snapshot_fetch_answered": Sentence(
        lambda e, w: {"node": _raft_node(e, w.zh), **{k: e[k] for k in ("to", "error", "end_offset", "snapshot_epoch",
                                                                   "position", "bytes", "size")},
                      "form": "error" if e["error"] else "bytes"},
        en={"error": "{node} → node {to}: FetchSnapshot {end_offset}-{snapshot_epoch} refused: {error}",
            "bytes": "{node} → node {to}: snapshot {end_offset}-{snapshot_epoch}, {bytes} bytes from byte "
                     "{position} of {size}"},
        zh={"error": "{node} → 节点 {to}：拒绝 FetchSnapshot {end_offset}-{snapshot_epoch}：{error}",
            "bytes": "{node} → 节点 {to}：快照 {end_offset}-{snapshot_epoch}，从第 {position} 字节起 {bytes} 字节"
                     "（共 {size} 字节）"}),
    "raft_snapshot_loaded": Sentence(
        lambda e, w: {"node": _raft_node(e, w.zh), **{k: e[k] for k in ("end_offset", "epoch", "old_leo")}},
        en="{node} replaced its metadata log with the snapshot: the log now starts empty at offset {end_offset} "
           "(it ended at {old_leo})",
        zh="{node} 用快照替换了元数据日志：日志现在从偏移量 {end_offset} 开始且为空（之前止于 {old_leo}）"),
    "raft_violation": Sentence(
        lambda e, w: {"node": _raft_node(e, w.zh), **{k: e[k] for k in ("rule", "epoch", "detail")}},
        en="Raft safety rule broken on {node} at epoch {epoch}: {rule} ({detail})",
        zh="{node} 在 epoch {epoch} 违反 Raft 安全规则：{rule}（{detail}）"),
}


# The kinds written as one extractor and a template per language.
SENTENCES: dict[str, Sentence] = {**STORAGE_SENTENCES, **CLEANER_SENTENCES, **PLAIN_SENTENCES,
                                  **CLAUSE_SENTENCES, **LIST_SENTENCES, **RAFT_SENTENCES}

# Each language's table: event kind -> its sentence in that language.
_TABLES: dict[str, dict[str, Callable[[Ev], str]]] = {
    lang: {kind: partial(sentence.render, lang=lang) for kind, sentence in SENTENCES.items()} for lang in LANGS}
_EN = _TABLES["en"]


def describe(ev: Ev, lang: str = "en") -> str:
    """One readable sentence for an event dict. Unknown kinds fall back to their fields;
    a sentence missing in ``lang`` falls back to English."""
    kind = ev.get("kind")
    for table in (_TABLES.get(lang, _EN), _EN):
        fn = table.get(kind)
        if fn is not None:
            try:
                return fn(ev)
            except (KeyError, TypeError, ValueError, AttributeError):
                break  # a field renamed or retyped in the engine: the generic text below still says what happened
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


# The sentences summarize folds several events into: words only, the values picked once.
_FOLDS = {
    "appended": Words("{where}: appended {n} batch(es), offsets {first}–{last}, {size} bytes",
                      "{where}：追加 {n} 个批次，偏移量 {first}–{last}，共 {size} 字节"),
    "removed": Words("{where}: removed {n} .deleted file(s) from disk", "{where}：从磁盘删除了 {n} 个 .deleted 文件"),
    "more": Words("… and {more} more (see the timeline)", "……还有 {more} 件事（见时间线）"),
}


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
        out.append((first["_i"], _FOLDS["appended"].in_(lang).format(
            where=_where(first, zh), n=len(evs), first=first["first_offset"], last=lastev["last_offset"], size=size)))
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
        idx = max(i for i, e in enumerate(events) if e.get("kind") == "file_deleted" and e.get("partition") == partition)
        out.append((idx, _FOLDS["removed"].in_(lang).format(where=_where({"broker": broker, "partition": partition}, zh), n=n)))
    out.sort(key=lambda x: x[0])
    lines = [t for _, t in out]
    if len(lines) > limit:
        more = len(lines) - limit + 1
        lines = lines[:limit - 1] + [_FOLDS["more"].in_(lang).format(more=more)]
    return lines


# ---- commands ------------------------------------------------------------------------------
# A command in a few words, the way an event is: one extractor per command (the fields its
# words need, the same for every language) and a template per language. A fault kind's words
# are its declaration's (``Fault.says`` in engine/cluster/commands.py), filled the same way.

def _name(c: Any) -> str:
    return str(c).replace("_", " ")


def _cmd_fields(cmd: Ev, w: _Words) -> dict[str, Any]:
    """Every field of the command as it is: the templates name the ones they need."""
    return dict(cmd)


def _fault_fields(cmd: Ev, w: _Words) -> dict[str, Any]:
    """A fault's fields for its ``says``: a node (``broker``, a link's ``a`` and ``b``) as
    "broker 1" / "the client", and ``arrow``: ↔ for both directions of a link, → for one."""
    return {**cmd, **{k: w.b(cmd[k]) for k in ("broker", "a", "b") if k in cmd},
            "arrow": "↔" if cmd.get("both", True) else "→"}


def _produce_pick(cmd: Ev, w: _Words) -> dict[str, Any]:
    if "key_mode" in cmd:                       # lesson 1's producer
        mode = cmd.get("key_mode", "none")
        return {"form": "keyed", "n": cmd.get("count", 1), "key": cmd.get("key"),
                "how": w.clause("key_" + mode, key=cmd.get("key")) if mode in ("none", "fixed", "cycle") else ""}
    if cmd.get("value_size") is not None:       # the storage lessons' form (or a sized engine produce)
        return {"form": "sized", "n": cmd.get("count", 1), "size": cmd["value_size"], "p": cmd.get("partition", 0)}
    count = cmd.get("count") or 1
    what = (cmd.get("value") or ", ".join(cmd.get("values") or []) or
            (w.clause("records", n=count) if count > 1 else w.clause("a_record")))
    if cmd.get("producer"):
        return {"form": "producer", "what": what, "producer": cmd["producer"], "p": cmd.get("partition", 0)}
    acks = {-1: "all", "all": "all", "-1": "all"}.get(cmd.get("acks"), cmd.get("acks"))
    return {"form": "plain" if acks is None else "acks", "what": what, "acks": acks}


def _consume_pick(cmd: Ev, w: _Words) -> dict[str, Any]:
    return {"form": "isolation" if cmd.get("isolation") else "plain", "iso": cmd.get("isolation"),
            "p": cmd.get("partition", 0), "offset": cmd.get("offset", 0)}


def _producer_pick(cmd: Ev, w: _Words) -> dict[str, Any]:
    kind = ("transactional.id=" + cmd["transactional_id"] if cmd.get("transactional_id") else
            ("idempotent" if cmd.get("idempotent", True) else "enable.idempotence=false"))
    return {"name": cmd.get("name"), "kind": kind}


def _create_topic_pick(cmd: Ev, w: _Words) -> dict[str, Any]:
    assignment = cmd.get("assignment") or []
    on = ", ".join(map(str, assignment[0])) if assignment else ""
    return {"topic": cmd.get("topic"), "on": on, "form": "on" if on else "plain"}


def _named(*keys: str, **defaults: Any) -> Callable[[Ev, _Words], dict[str, Any]]:
    """An extractor of these fields (absent: their default, else None)."""
    return lambda cmd, w: {k: cmd.get(k, defaults.get(k)) for k in keys}


_TXN_VERBS_ZH = {"init_transactions": "初始化事务", "begin_transaction": "开始事务", "commit_transaction": "提交事务",
                 "abort_transaction": "中止事务"}

COMMAND_SENTENCES: dict[str, Sentence] = {
    # one broker's storage commands (engine/storage_commands.py)
    "lookup_offset": Sentence(_cmd_fields, "look up offset {offset}", "查找偏移量 {offset}"),
    "lookup_time": Sentence(_cmd_fields, "look up timestamp {timestamp}", "查找时间戳 {timestamp}"),
    "set_index_interval": Sentence(_cmd_fields, "set index.interval.bytes = {bytes}", "设置 index.interval.bytes = {bytes}"),
    "select_segment": Sentence(_cmd_fields, "show segment {segment}", "显示段 {segment}"),
    "delete_records": Sentence(_cmd_fields, "DeleteRecords before offset {offset}", "DeleteRecords：删除偏移量 {offset} 之前的消息"),
    "set_retention": Sentence(_cmd_fields, "set retention.bytes = {retention_bytes}, retention.ms = {retention_ms}",
                              "设置 retention.bytes = {retention_bytes}，retention.ms = {retention_ms}"),
    "poll": Sentence(_cmd_fields, "consumer {consumer} polls", "消费者 {consumer} 拉取一次"),
    "rewind": Sentence(_cmd_fields, "rewind consumer {consumer}", "消费者 {consumer} 回到开头"),
    "flush": Sentence(_cmd_fields, "fsync now", "立即 fsync"),
    "writeback": Sentence(_cmd_fields, "the OS writes dirty pages back", "操作系统写回脏页"),
    "set_flush": Sentence(_cmd_fields, "set flush.messages = {flush_messages}, flush.ms = {flush_ms} (0 = never)",
                          "设置 flush.messages = {flush_messages}，flush.ms = {flush_ms}（0 = 从不）"),
    "fetch": Sentence(_cmd_fields, "consumer fetch from offset {offset}", "消费者从偏移量 {offset} 拉取"),
    "put": Sentence(_cmd_fields, "put {key}={value}", "写入 {key}={value}"),
    "delete": Sentence(_cmd_fields, "delete {key} (a tombstone)", "删除 {key}（墓碑）"),
    "clean": Sentence(_cmd_fields, "run the cleaner once", "立即运行一次清理"),
    "lookup": Sentence(_named("offset", "partition", partition=0), "look up offset {offset} in partition {partition}",
                       "在分区 {partition} 查找偏移量 {offset}"),
    # produce, in every vocabulary's form
    "produce": Sentence(_produce_pick,
                        en={"keyed": "produce {n} message(s){how}", "sized": "produce {n} message(s) of {size} bytes to partition {p}",
                            "producer": "{producer} produces {what} to partition {p}", "plain": "produce {what}",
                            "acks": "produce {what} (acks={acks})"},
                        zh={"keyed": "发送 {n} 条消息{how}", "sized": "向分区 {p} 发送 {n} 条 {size} 字节的消息",
                            "producer": "生产者 {producer} 向分区 {p} 发送 {what}", "plain": "发送 {what}",
                            "acks": "发送 {what}（acks={acks}）"}),
    # the replicated cluster's (engine/cluster/commands.py)
    "advance": Sentence(_named("ms"), "advance the clock {ms} ms", "时钟前进 {ms} 毫秒"),
    "consumer_join": Sentence(_named("name", "group"), "{name} joins group {group}", "{name} 加入消费组 {group}"),
    "consumer_poll": Sentence(_named("name"), "{name} polls", "{name} 拉取一次"),
    "consumer_commit": Sentence(_named("name"), "{name} commits", "{name} 提交偏移量"),
    "consumer_leave": Sentence(_named("name"), "{name} leaves the group", "{name} 离开消费组"),
    "consumer_crash": Sentence(_named("name"), "{name} crashes", "{name} 崩溃"),
    "configure_groups": Sentence(_named("offsets_topic_num_partitions", offsets_topic_num_partitions=50),
                                 "set up __consumer_offsets ({offsets_topic_num_partitions} partition(s))",
                                 "设置 __consumer_offsets（{offsets_topic_num_partitions} 个分区）"),
    "consume": Sentence(_consume_pick,
                        en={"isolation": "consume partition {p} from offset {offset} ({iso})",
                            "plain": "consume from offset {offset}"},
                        zh={"isolation": "以 {iso} 从分区 {p} 偏移量 {offset} 开始消费", "plain": "从偏移量 {offset} 开始消费"}),
    "create_producer": Sentence(_producer_pick, "create producer {name} ({kind})", "创建生产者 {name}（{kind}）"),
    **{c: Sentence(_named("name"), f"{{name}}: {_name(c)}", f"{{name}}：{verb}") for c, verb in _TXN_VERBS_ZH.items()},
    "send_offsets_to_transaction": Sentence(_named(), "send offsets to transaction", "把消费位置发送给事务"),
    "configure_transactions": Sentence(_named("transaction_state_log_num_partitions", transaction_state_log_num_partitions=50),
                                       "set up __transaction_state ({transaction_state_log_num_partitions} partition(s))",
                                       "设置 __transaction_state（{transaction_state_log_num_partitions} 个分区）"),
    "elect_preferred_leaders": Sentence(_named(), "elect preferred leaders", "选举首选 leader"),
    "replay_to": Sentence(_named("mark"), "replay the recorded session to “{mark}”", "重放记录的会话，直到“{mark}”"),
    "heal_all": Sentence(_named(), "heal all links", "修复所有链路"),
    "create_topic": Sentence(_create_topic_pick, en={"plain": "create topic {topic}", "on": "create topic {topic} on brokers {on}"},
                             zh={"plain": "创建主题 {topic}", "on": "创建主题 {topic}（broker {on}）"}),
    "set_config": Sentence(lambda cmd, w: {"changes": ", ".join(f"{k}={v}" for k, v in (cmd.get("changes") or {}).items()),
                                           "scope": cmd.get("scope"), "target": cmd.get("target")},
                           "set {changes} on {scope} {target}", "在 {scope} {target} 上设置 {changes}"),
}

# One broker's own crash and restart (lesson 7: no broker field; the cluster's are fault kinds).
_ONE_BROKER = {
    "crash": Sentence(lambda cmd, w: {"form": "power" if cmd.get("power_loss", True) else "kill"},
                      en={"power": "cut the power", "kill": "kill the broker process"},
                      zh={"power": "断电", "kill": "杀掉 broker 进程"}),
    "restart": Sentence(_named(), "restart the broker", "重启 broker"),
}
# A command on one broker and nothing else that declares no words: "stall broker 1".
_ON_A_BROKER = Sentence(lambda cmd, w: {"verb": _name(cmd.get("cmd") or cmd.get("type")), "broker": w.b(cmd["broker"])},
                        "{verb} {broker}", "{broker}：{verb}")


_STORAGE_FIRST = {"lookup_offset", "lookup_time", "set_index_interval", "select_segment", "delete_records",
                  "set_retention", "poll", "rewind", "flush", "writeback", "set_flush", "fetch", "put", "delete", "clean"}


def _command_sentence(c: Any, cmd: Ev) -> Sentence | None:
    """The sentence of ``cmd``: one broker's own commands first, then a fault's declared
    words, then a bare "<cmd> broker N", then the vocabulary's table."""
    if c in _ONE_BROKER and "broker" not in cmd:
        return _ONE_BROKER[c]
    if c in _STORAGE_FIRST or (c == "produce" and "key_mode" in cmd):
        return COMMAND_SENTENCES[c]
    declared = COMMANDS.get(c) if isinstance(c, str) else None
    if declared is not None and declared.fault is not None and declared.fault.says is not None:
        return Sentence(_fault_fields, declared.fault.says.en, declared.fault.says.zh)
    if "broker" in cmd and set(cmd) <= {"cmd", "type", "broker"}:
        return _ON_A_BROKER
    return COMMAND_SENTENCES.get(c) if isinstance(c, str) else None


def command_label(cmd: dict[str, Any], lang: str = "en") -> str:
    """A command in a few words: one broker's storage commands (engine/storage_commands.py)
    and the replicated cluster's (engine/cluster/commands.py). A command saved before the
    envelope became ``cmd`` may still name itself with ``type``."""
    c = cmd.get("cmd") or cmd.get("type")
    sentence = _command_sentence(c, cmd)
    if sentence is None:
        return _name(c)
    try:
        return sentence.render(cmd, lang if lang in LANGS else "en")
    except (KeyError, IndexError, TypeError, ValueError):
        return _name(c)       # a field the words need is missing: the command's name still says what it was


# ---- a lookup, step by step (the inside-a-segment diagram replays these) --------------------
# The steps are worked out once from the event; each language has only its words (a template
# per step, filled with the same values).

_LOOKUP_STEP_WORDS: dict[str, Words] = {
    "pick_segment": Words("Pick the segment: the largest base offset ≤ {target} among the file names {cands} is {seg}{file}.",
                          "选段：文件名的基准偏移量 {cands} 中 ≤ {target} 的最大者是 {seg}{file}。"),
    "pick_file": Words(" → {name}.log", " → {name}.log"),
    "none": Words("none", "无"),
    "no_segment": Words("Step 1: no segment's largest timestamp is ≥ {target}: every record is older. Answer: -1.",
                        "第 1 步：没有哪个段的最大时间戳 ≥ {target}：所有消息都更早。答案：-1。"),
    "first_segment": Words("Step 1: walk the segments oldest first; the first whose largest timestamp is ≥ {target} is {name}.",
                           "第 1 步：从最旧的段开始，第一个最大时间戳 ≥ {target} 的段是 {name}。"),
    "tprobe": Words("Step 2, .timeindex probe {n}: entries {lo}–{hi}, middle #{mid} = ({ts} → offset {off}): {went}.",
                    "第 2 步，.timeindex 探查 {n}：索引项 {lo}–{hi}，中间 #{mid} = ({ts} → 偏移量 {off})：{went}。"),
    "tfloor": Words("The .timeindex floor (the largest entry with timestamp ≤ {target}) gives offset {start} to start from.",
                    ".timeindex 的 floor（时间戳 ≤ {target} 的最大索引项）给出起始偏移量 {start}。"),
    "tfloor_none": Words("No .timeindex entry is ≤ {target}: start from the segment's base offset {seg}.",
                         "没有时间戳 ≤ {target} 的索引项：从段的基准偏移量 {seg} 开始。"),
    "step3": Words("Step 3, ", "第 3 步，"),
    "step4": Words("Step 4, ", "第 4 步，"),
    "probe": Words("{head}.index probe {n}: entries {lo}–{hi}, middle #{mid} = (offset {off} → position {pos}): {went}.",
                   "{head}.index 探查 {n}：索引项 {lo}–{hi}，中间 #{mid} = (偏移量 {off} → 位置 {pos})：{went}。"),
    "probe_none": Words("The .index has no entry ≤ {tgt}: start at position 0.", ".index 里没有 ≤ {tgt} 的索引项：从位置 0 开始。"),
    "offs_range": Words("offsets {base}–{last}", "偏移量 {base}–{last}"),
    "offs_one": Words("offset {base}", "偏移量 {base}"),
    "scan_ts": Words(", largest timestamp {max_ts}", "，最大时间戳 {max_ts}"),
    "scan": Words("{head}scan batch {n} at position {pos} ({offs}{ts}): {verdict}",
                  "{head}扫描批次 {n}（位置 {pos}，{offs}{ts}）：{verdict}"),
    "scan_hit": Words("it holds the answer.", "答案就在这个批次里。"),
    "scan_miss": Words("not yet, next batch.", "还不是，看下一个批次。"),
    "answer": Words("Answer: offset {off}{ts}, read from position {pos} of {name}.log.",
                    "答案：偏移量 {off}{ts}，从 {name}.log 的位置 {pos} 读取。"),
    "answer_ts": Words(" (timestamp {ts})", "（时间戳 {ts}）"),
    "answer_none": Words("Answer: none (offset -1).", "答案：没有（偏移量 -1）。"),
    "went_left": Words("{key} > {target}, go left", "{key} > {target}，向左"),
    "went_right": Words("{key} < {target}, remember it and go right", "{key} < {target}，记下它，向右"),
    "went_found": Words("{key} = {target}, found: stop", "{key} = {target}，找到，停止"),
}


def lookup_steps(ev: Ev, lang: str = "en") -> list[dict[str, Any]]:
    """A ``log_lookup`` event as the steps the broker took, in order: ``{"kind", "text"}`` plus
    ``probe`` (an index probe: low, high, mid, key, value, went) or ``scan`` (a batch walked:
    position, base offset, last offset, max timestamp, matched). Kinds: "segment", "tprobe",
    "tfloor", "probe", "probe-none", "scan", "answer"."""

    def say(step: str, **values: Any) -> str:
        return _LOOKUP_STEP_WORDS[step].in_(lang).format(**values)

    def went(key: Any, target: Any, how: str) -> str:
        return say({"left": "went_left", "right": "went_right"}.get(how, "went_found"), key=key, target=target)

    seg, target, mode = ev.get("segment"), ev.get("target"), ev.get("mode")
    cands = ev.get("candidates") or []
    name = _seg(seg) if seg is not None else None
    steps: list[dict[str, Any]] = []
    if mode == "offset":
        text = say("pick_segment", target=target, cands=cands, seg=seg if seg is not None else say("none"),
                   file=say("pick_file", name=name) if name else "")
    elif seg is None:
        text = say("no_segment", target=target)
    else:
        text = say("first_segment", target=target, name=name)
    steps.append({"kind": "segment", "text": text})
    for i, p in enumerate(ev.get("time_probes") or []):
        lo, hi, mid, ts, off, how = p
        steps.append({"kind": "tprobe", "probe": p, "text": say("tprobe", n=i + 1, lo=lo, hi=hi, mid=mid, ts=ts, off=off,
                                                                went=went(ts, target, how))})
    if mode == "timestamp" and seg is not None:
        if ev.get("time_probes") and any(p[5] != "left" for p in ev["time_probes"]):
            start = [p[4] for p in ev["time_probes"] if p[5] != "left"][-1]
            text = say("tfloor", target=target, start=start)
        else:
            text = say("tfloor_none", target=target, seg=seg)
        steps.append({"kind": "tfloor", "text": text})
    if mode == "offset":
        tgt = target
    else:       # step 3 looks up the offset the .timeindex floor gave (the segment's base if none)
        floors = [p[4] for p in ev.get("time_probes") or [] if p[5] != "left"]
        tgt = floors[-1] if floors else seg
    for i, p in enumerate(ev.get("probes") or []):
        lo, hi, mid, off, pos, how = p
        head = say("step3") if mode == "timestamp" else ""
        steps.append({"kind": "probe", "probe": p, "text": say("probe", head=head, n=i + 1, lo=lo, hi=hi, mid=mid, off=off,
                                                               pos=pos, went=went(off, tgt, how))})
    if seg is not None and not ev.get("probes"):
        steps.append({"kind": "probe-none", "text": say("probe_none", tgt=tgt)})
    for i, s in enumerate(ev.get("scan") or []):
        pos, base, last, max_ts, hit = s
        steps.append({"kind": "scan", "scan": s, "text": say(
            "scan", head=say("step4") if mode == "timestamp" else "", n=i + 1, pos=pos,
            offs=say("offs_range" if base != last else "offs_one", base=base, last=last),
            ts=say("scan_ts", max_ts=max_ts) if mode == "timestamp" else "",
            verdict=say("scan_hit" if hit else "scan_miss"))})
    off, pos, ts = ev.get("offset"), ev.get("position"), ev.get("timestamp")
    if off is not None and off >= 0 and pos is not None:
        text = say("answer", off=off, ts=say("answer_ts", ts=ts) if ts is not None else "", pos=pos, name=name)
    else:
        text = say("answer_none")
    steps.append({"kind": "answer", "text": text})
    return steps
