"""The words the diagram scripts draw come from one catalogue (kafkaviz/lessons/ui.py) and
are translated: every key a script in static/js asks KV.t for exists, its Chinese text
differs from the English one (or is a short technical term that Chinese pages keep), keeps
the same {placeholders}, and has no English word left beside the technical terms; and no
script builds an English sentence of its own (it would reach Chinese pages untranslated)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.utils import translation

from kafkaviz.lessons.ui import ui_strings

JS = Path(__file__).resolve().parents[2] / "static" / "js"

# Kafka's own words, config names, request and file names: Chinese pages keep them in English.
TECH_TERMS = {
    "Kafka", "leader", "follower", "epoch", "broker", "Broker", "acks", "fsync", "sendfile", "socket",
    "Fetch", "produce", "purgatory", "DelayedProduce", "DelayedFetch", "REQUEST_TIMED_OUT", "murmur2",
    "deleted", "index", "timeindex", "txnindex", "consumer_offsets", "fetch#F@O",
    "retention.bytes", "batch.size", "flush.messages", "flush.ms", "index.interval.bytes", "transactional.id",
    "replica.fetch.wait.max.ms", "min.cleanable.dirty.ratio", "cleaner-offset-checkpoint",
    "LeaveGroup", "session.timeout.ms",
}
# Keys whose Chinese text is rightly the English one: nothing in them but technical terms.
SAME_IN_CHINESE = {"broker_n", "hw_broker", "leader", "follower", "epoch", "tl_epoch", "tl_no_seq",
                   "le_sub_leader", "le_sub_follower"}
# Strings in scripts that look like words but are selectors, media queries or style values.
NOT_PROSE = {"#cg-form button[data-cmd]", "#broker-form button[data-needs]", "(prefers-reduced-motion: reduce)", "transform: translate(",
             "#ss-steps li", "px; transform: rotate(",
             "#controls button, form[ws-send] button, form[ws-send] input, form[ws-send] select"}

# A CSS selector that starts at an id ("#pc-file-rows tr"): no sentence starts with "#".
SELECTOR = re.compile(r"#[\w-]+(?:[ >]+[\w.#:-]+)*")

LITERAL = re.compile(r'"((?:[^"\\\n]|\\.)*)"|\'((?:[^\'\\\n]|\\.)*)\'')


def scripts() -> dict[str, str]:
    """Each script's source without its comments."""
    out = {}
    for path in sorted(JS.glob("*.js")):
        src = re.sub(r"/\*.*?\*/", "", path.read_text(encoding="utf-8"), flags=re.S)
        out[path.name] = re.sub(r"(?m)(^|[\s;,{}()])//.*$", r"\1", src)   # "http://" keeps its line
    return out


def used_keys() -> dict[str, str]:
    """key → a script that asks KV.t for it: every string literal in KV.t's first argument
    (a ternary names several), plus the keys scripts keep in tables (STATUS = {..: "pr_acked"})."""
    keys: dict[str, str] = {}
    for name, src in scripts().items():
        for m in re.finditer(r"KV\.t\(([^,{)]*)", src):
            arg = m.group(1)
            for lit in re.finditer(r'"([^"]*)"(\s*\+)?', arg):
                if not lit.group(2):                     # "tl_" + status: a prefix, not a key
                    keys.setdefault(lit.group(1), name)
        tables = [m.group(1) for m in re.finditer(r"\b[A-Z_]+\s*=\s*\{([^}]*)\}", src)]
        for text in tables + re.findall(r"\bkey:\s*(\"[a-z]+_[a-z0-9_]+\")", src):
            for lit in re.finditer(r'"([a-z]+_[a-z0-9_]+)"', text):
                keys.setdefault(lit.group(1), name)
    return keys


@pytest.fixture(scope="module")
def catalogues() -> tuple[dict[str, str], dict[str, str]]:
    with translation.override("en"):
        en = ui_strings()
    with translation.override("zh-hans"):
        zh = ui_strings()
    return en, zh


def test_the_scripts_ask_for_many_keys_and_the_parser_finds_the_ternary_ones():
    keys = used_keys()
    assert len(keys) > 250
    assert {"pc_batch_title_torn", "pc_batch_title", "le_told_title_lost", "pr_acked", "pr_sent", "tl_word_aborted",
            "lc_hw"} <= set(keys)


def test_every_key_the_scripts_use_is_in_the_catalogue(catalogues):
    en, _ = catalogues
    missing = {k: where for k, where in used_keys().items() if k not in en}
    assert not missing


def test_every_key_the_scripts_use_is_translated_into_chinese(catalogues):
    en, zh = catalogues
    untranslated = sorted(k for k in used_keys() if k in en and zh[k] == en[k] and k not in SAME_IN_CHINESE)
    assert not untranslated


def test_the_chinese_strings_keep_every_placeholder(catalogues):
    en, zh = catalogues
    def names(s):
        return sorted(set(re.findall(r"\{(\w+)\}", s)))
    assert not [k for k in en if names(en[k]) != names(zh[k])]


def test_no_english_word_is_left_in_the_chinese_strings(catalogues):
    _, zh = catalogues
    left = {}
    for key, text in zh.items():
        for word in re.findall(r"[A-Za-z][A-Za-z0-9_.#@-]*[A-Za-z0-9]", re.sub(r"\{\w+\}", "", text)):
            if re.search(r"[A-Za-z]{4,}", word) and word not in TECH_TERMS:
                left.setdefault(key, []).append(word)
    assert not left


def test_no_script_writes_an_english_sentence_of_its_own():
    prose = []
    for name, src in scripts().items():
        for m in LITERAL.finditer(src):
            s = m.group(1) if m.group(1) is not None else m.group(2)
            if re.search(r"[A-Za-z]{2,}[,:;.!?]? +[A-Za-z]{2,}", s) and s not in NOT_PROSE \
                    and not re.fullmatch(r"[a-z0-9_ -]+", s) and not SELECTOR.fullmatch(s):
                prose.append((name, s))
    assert not prose
