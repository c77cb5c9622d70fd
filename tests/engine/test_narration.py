"""engine/narration.py: every engine event kind has a sentence in English and Chinese,
built from the event's own fields, and a step's events fold into a short summary."""
from __future__ import annotations

import dataclasses
import re

import pytest

import engine.cluster.checker  # noqa: F401  (registers the checker's events)
import engine.cluster.events  # noqa: F401
import engine.log.events  # noqa: F401
import engine.log.cleaner_events  # noqa: F401
import engine.group.events  # noqa: F401
import engine.cluster.txn_offsets  # noqa: F401  (transactional offsets)
import engine.topic  # noqa: F401  (lesson 1's events share the one registry: a clash of names fails here)
import engine.kraft.events  # noqa: F401  (the KRaft quorum: every kind is narrated, whichever tests ran first)
from engine import narration
from engine.events import EVENT_TYPES

SAMPLE = {"int": 1, "str": "x", "bool": False, "list": [], "dict": {}, "float": 0.5}


def sample(cls) -> dict:
    out = {"kind": cls.kind}
    for f in dataclasses.fields(cls):
        t = str(f.type).split("|")[0].strip()
        out[f.name] = SAMPLE.get(t, 1 if "int" in t else None)
    return out


ENGINE_KINDS = sorted(k for k, cls in EVENT_TYPES.items() if cls.__module__.startswith("engine."))


@pytest.mark.parametrize("kind", ENGINE_KINDS)
@pytest.mark.parametrize("lang", narration.LANGS)
def test_every_engine_event_has_its_own_sentence(kind, lang):
    table = narration._TABLES[lang]
    assert kind in table, f"no {lang} sentence for {kind}"
    text = table[kind](sample(EVENT_TYPES[kind]))
    assert isinstance(text, str) and text


def test_retention_by_log_start_offset_never_reads_as_a_contradiction():
    ev = {"kind": "retention_check", "partition": 0, "rule": "log_start_offset", "segment": 20, "threshold": 20,
          "value": 20, "deletable": False, "blocked_by": None}
    text = narration.describe(ev)
    assert "active segment" in text and text.endswith("→ keep")
    ev.update(segment=0, value=20, threshold=25, deletable=True)
    assert "all its offsets are below the log start offset 25" in narration.describe(ev)


def test_log_lookup_is_narrated_from_its_probes_and_scan():
    ev = {"kind": "log_lookup", "broker": None, "topic": "t", "partition": 0, "mode": "offset", "target": 1234,
          "candidates": [0, 1000, 2000], "segment": 1000, "rule": "floor", "time_probes": [],
          "probes": [[0, 9, 4, 1120, 4000, "right"], [5, 9, 7, 1200, 7000, "hit"]],
          "scan": [[7000, 1200, 1230, 0, False], [7400, 1231, 1240, 0, True]], "offset": 1234, "position": 7400,
          "timestamp": None}
    en, zh = narration.describe(ev), narration.describe(ev, "zh")
    assert "lookup of offset 1234" in en and "2 binary-search probe(s)" in en and "scanned 2 batch(es)" in en
    assert "found offset 1234 at byte 7400" in en
    assert "查找偏移量 1234" in zh and "二分查找 2 次" in zh


def test_a_step_summary_folds_appends_and_keeps_what_matters():
    events = [{"kind": "batch_appended", "broker": None, "topic": "o", "partition": 0, "segment": 0,
               "first_offset": i, "last_offset": i, "position": i * 100, "size_bytes": 100, "records": 1,
               "max_timestamp": 0, "leader_epoch": 0} for i in range(5)]
    events.append({"kind": "segment_rolled", "broker": None, "topic": "o", "partition": 0, "old_segment": 0,
                   "new_segment": 5, "reason": "size", "detail": ""})
    lines = narration.summarize(events)
    assert lines[0] == "partition 0: appended 5 batch(es), offsets 0–4, 500 bytes"
    assert "rolled a new segment 00000000000000000005.log" in lines[1]
    assert narration.summarize(events, "zh")[0].startswith("分区 0：追加 5 个批次")


def test_unknown_kinds_fall_back_to_their_fields():
    assert narration.describe({"kind": "brand_new", "partition": 1, "x": 2}) == "partition 1: brand new x=2"


# Events whose Chinese sentence names the engine's reason or rule code, and the codes the
# engine emits for them (engine/log, engine/cluster, engine/producer).
REASONED = {
    ("segment_rolled", "reason"): ["size", "time", "index_full", "offset_overflow", "retention"],
    ("segment_deleted", "reason"): ["retention:size", "retention:time", "retention:log_start_offset", "cleaner"],
    ("log_start_offset_changed", "reason"): ["retention:size", "delete_records"],
    ("log_truncated", "reason"): ["hw", "out_of_range"],
    ("controller_changed", "reason"): ["startup", "session_timeout", "lost_quorum", "controlled_shutdown"],
    ("leader_elected", "rule"): ["clean", "unclean", "initial", "preferred"],
    ("isr_shrunk", "reason"): ["lagging", "session_timeout"],
    ("leo_changed", "reason"): ["append", "truncate", "txn_marker"],
    ("high_watermark_changed", "reason"): ["isr_leo", "leader_hw", "truncate"],
    ("message_dropped", "reason"): ["destination_down", "link_cut", "source_crashed"],
    ("producer_batch_sent", "reason"): ["batch.size reached", "linger.ms (flush)"],
    ("partition_offline", "reason"): ["no live replica in the ISR"],
}


@pytest.mark.parametrize("kind, field", sorted(REASONED))
def test_chinese_sentences_say_the_engine_reason_in_chinese(kind, field):
    for code in REASONED[(kind, field)]:
        ev = {**sample(EVENT_TYPES[kind]), field: code}
        zh, en = narration.describe(ev, "zh"), narration.describe(ev, "en")
        assert narration._WHY_ZH[code] in zh, zh
        assert code not in zh.replace("retention.bytes", ""), zh
        assert code in en or code.replace("_", " ") in en, en


@pytest.mark.parametrize("cmd, en, zh", [
    ({"cmd": "produce", "topic": "orders", "count": 10, "acks": "all", "value_size": None}, "produce 10 records (acks=all)",
     "发送 10 条消息（acks=all）"),
    ({"type": "produce", "producer": "safe", "value": "m2", "partition": 0}, "safe produces m2 to partition 0",
     "生产者 safe 向分区 0 发送 m2"),
    ({"type": "produce", "value": "m1", "timeout_ms": 1500}, "produce m1", "发送 m1"),
    ({"cmd": "consumer_join", "name": "c2", "group": "billing"}, "c2 joins group billing", "c2 加入消费组 billing"),
    ({"cmd": "consumer_commit", "name": "c1"}, "c1 commits", "c1 提交偏移量"),
    ({"cmd": "configure_groups", "offsets_topic_num_partitions": 1}, "set up __consumer_offsets (1 partition(s))",
     "设置 __consumer_offsets（1 个分区）"),
    ({"type": "delete", "key": "pear"}, "delete pear (a tombstone)", "删除 pear（墓碑）"),
])
def test_a_command_label_names_what_the_command_does(cmd, en, zh):
    # The step list and a learner's own step show these; "None bytes" or a bare "consumer join" said nothing.
    assert narration.command_label(cmd) == en and narration.command_label(cmd, "zh") == zh


# ---- one extractor, a template per language ------------------------------------------------

@pytest.mark.parametrize("kind", sorted(narration.SENTENCES))
def test_a_sentence_has_a_template_for_every_language_and_form(kind):
    """One extractor per kind, and each language's template (or one per form) beside it."""
    sentence = narration.SENTENCES[kind]
    en, zh = sentence.en, sentence.zh
    assert type(en) is type(zh), kind
    if not isinstance(en, str):
        assert set(en) == set(zh), f"{kind}: a form worded in one language only"


@pytest.mark.parametrize("kind", sorted(set(narration.SENTENCES) & set(EVENT_TYPES)))
def test_a_sentences_languages_read_the_same_fields(kind):
    """One extractor: the table of each language calls the same one, so both sentences
    come from the same values (a field renamed in the engine breaks both at once)."""
    ev = sample(EVENT_TYPES[kind])
    values = narration.SENTENCES[kind].pick(ev, narration._WORDS["en"])
    assert set(values) == set(narration.SENTENCES[kind].pick(ev, narration._WORDS["zh"]))
    assert narration.describe(ev, "en") == narration.SENTENCES[kind].render(ev, "en")
    assert narration.describe(ev, "zh") == narration.SENTENCES[kind].render(ev, "zh")


def test_the_cleaners_reason_reads_in_the_sentences_own_language():
    """The English table once glossed the reason with the Chinese one: one extractor per kind
    asks the language for its words."""
    ev = {"kind": "cleaner_check", "partition": 0, "clean_bytes": 0, "dirty_bytes": 371, "ratio": 1.0,
          "min_cleanable_ratio": 0.5, "first_dirty_offset": 0, "first_uncleanable_offset": 5, "chosen": True,
          "reason": "dirty ratio above min.cleanable.dirty.ratio"}
    assert narration.describe(ev).endswith("clean it: dirty ratio above min.cleanable.dirty.ratio")
    assert narration.describe(ev, "zh").endswith("清理它：脏比例高于 min.cleanable.dirty.ratio")


def test_every_kind_is_one_sentence():
    """No kind is worded by a function of its own per language any more."""
    assert set(narration._TABLES["en"]) == set(narration._TABLES["zh"]) == set(narration.SENTENCES)


# ---- commands, lookups and folds: the values picked once, each language only words ---------

@pytest.mark.parametrize("name", sorted(narration.COMMAND_SENTENCES))
def test_a_commands_words_have_every_form_in_both_languages(name):
    sentence = narration.COMMAND_SENTENCES[name]
    assert type(sentence.en) is type(sentence.zh), name
    pairs = [(sentence.en, sentence.zh)] if isinstance(sentence.en, str) else \
        [(sentence.en[f], sentence.zh[f]) for f in sentence.en]
    if not isinstance(sentence.en, str):
        assert set(sentence.en) == set(sentence.zh), name
    for en, zh in pairs:     # the same values fill both: the same fields named
        assert set(re.findall(r"\{(\w+)\}", en)) == set(re.findall(r"\{(\w+)\}", zh)), (name, en, zh)


@pytest.mark.parametrize("table", ["_LOOKUP_STEP_WORDS", "_FOLDS"])
def test_the_lookup_steps_and_folds_are_words_with_the_same_fields(table):
    for key, words in getattr(narration, table).items():
        assert set(re.findall(r"\{(\w+)\}", words.en)) == set(re.findall(r"\{(\w+)\}", words.zh)), (table, key)


@pytest.mark.parametrize("fn", ["command_label", "lookup_steps", "summarize"])
def test_no_function_picks_fields_once_per_language(fn):
    """Narration written twice was an ``if zh: f"..." else: f"..."`` per sentence, each picking
    the fields again; now the code picks them once and asks a language only for its words."""
    import inspect

    source = inspect.getsource(getattr(narration, fn))
    assert not re.search(r'if zh\b|zh else|if lang == "zh"', source), fn
