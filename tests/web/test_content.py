"""Lesson files: every one loads, in every language, and its facts make sense, so a
typo fails the suite rather than a learner's page."""
from __future__ import annotations

import re
import tomllib

import pytest

from kafkaviz.lessons.catalogue import ORDER, get_lesson
from kafkaviz.lessons.content import CONTENT_DIR, LANGUAGES, ContentError, content_slugs, load_content, render_markup
from kafkaviz.lessons.checks import validate_check
from kafkaviz.live.kinds import SANDBOX_KINDS, get_kind
from kafkaviz.live.validation import validate_command

SLUGS = sorted(content_slugs())


def test_lessons_two_and_ten_are_data():
    assert {"segments", "leader-epoch"} <= set(SLUGS)


@pytest.mark.parametrize("slug", SLUGS)
def test_every_lesson_file_loads_and_matches_the_catalogue(slug):
    entry = get_lesson(slug)
    assert entry is not None, f"{slug} is not in catalogue.py"
    content = load_content(slug)
    assert content.number == (ORDER.index(slug) + 1 if slug in ORDER else 0), "number = place in catalogue.ORDER"
    assert content.kind is None or content.kind in SANDBOX_KINDS
    assert 2 <= len(content.quiz) <= 5
    for q in content.quiz:
        assert 0 <= q.answer < len(q.choices)
    for t in content.tasks:
        validate_check(t.check, t.id)
    # Sources are named by title for learners; seed ids never reach the page text.
    for s in content.sources:
        assert s.title and "seed" not in s.title.lower()


@pytest.mark.parametrize("slug", SLUGS)
def test_guided_steps_are_commands_the_kind_accepts(slug):
    content = load_content(slug)
    if content.kind is None:
        return
    specs = get_kind(content.kind).command_specs(content.scenario)
    for step in content.steps:
        for cmd in step.do:
            validate_command(specs, cmd)   # raises CommandError naming the field


@pytest.mark.parametrize("slug", SLUGS)
def test_translations_only_key_ids_that_exist(slug):
    base = tomllib.loads((CONTENT_DIR / f"{slug}.en.toml").read_text())
    ids = {section: {x["id"] for x in base.get(section, [])} for section in ("steps", "tasks", "quiz")}
    for lang in LANGUAGES:
        path = CONTENT_DIR / f"{slug}.{lang}.toml"
        if lang == "en" or not path.exists():
            continue
        over = tomllib.loads(path.read_text())
        for section, known in ids.items():
            assert set(over.get(section, {})) <= known, f"{path.name}: unknown {section} ids"
        translated = load_content(slug, lang)
        assert translated.lang == lang and translated.title != load_content(slug).title


def test_markup_escapes_html_and_keeps_only_site_links():
    html = str(render_markup("a <script>x</script> **b** `c` [ok](/lessons/x/) [no](http://evil.example/)"))
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert "<strong>b</strong>" in html and "<code>c</code>" in html
    assert '<a href="/lessons/x/">ok</a>' in html and 'href="http' not in html


def test_a_quiz_answer_out_of_range_is_refused(tmp_path, monkeypatch):
    import kafkaviz.lessons.content as content_mod

    (tmp_path / "bad.en.toml").write_text(
        'number = 99\ntitle = "t"\nsummary = "s"\nexplanation = "e"\n'
        '[[quiz]]\nid = "a"\nquestion = "q"\nchoices = ["x", "y"]\nanswer = 2\nexplain = "e"\n'
        '[[quiz]]\nid = "b"\nquestion = "q"\nchoices = ["x", "y"]\nanswer = 0\nexplain = "e"\n')
    monkeypatch.setattr(content_mod, "CONTENT_DIR", tmp_path)
    content_mod.load_content.cache_clear()
    try:
        with pytest.raises(ContentError, match="answer 2"):
            content_mod.load_content("bad")
    finally:
        content_mod.load_content.cache_clear()


@pytest.mark.parametrize("slug", SLUGS)
def test_scenario_notes_point_at_steps_that_exist(slug):
    from engine.cluster.scenarios import get_scenario
    from kafkaviz.live.replication import script_ends, shape_scenario

    content = load_content(slug)
    # "custom" is the cluster a learner shapes in the sandbox: its steps are the same for any shape.
    shaped = shape_scenario({"brokers": 3, "partitions": 1, "replication_factor": 2, "min_insync_replicas": 1,
                             "unclean": False}, "t", 1)
    for key in content.notes:
        name, step, *rule = key.split(":")
        assert rule in ([], ["hw"], ["epoch"]), key
        assert name in content.scenario.get("choices", ()) or (name == "custom" and slug == "sandbox"), key
        scenario = shaped if name == "custom" else get_scenario(name)
        # Notes count lesson steps, which merge a command that waits for the clock into the next.
        assert 1 <= int(step) <= len(script_ends(scenario.commands())), key
    for lang in LANGUAGES:
        path = CONTENT_DIR / f"{slug}.{lang}.toml"
        if lang != "en" and path.exists():
            assert set(tomllib.loads(path.read_text()).get("notes", {})) <= set(content.notes), path.name


TRANSLATED = [(slug, lang) for slug in SLUGS for lang in LANGUAGES
              if lang != "en" and (CONTENT_DIR / f"{slug}.{lang}.toml").exists()]


def test_the_storage_lessons_read_in_chinese():
    assert {"time-index", "retention", "flush-and-page-cache"} <= {slug for slug, lang in TRANSLATED if lang == "zh"}


def _texts(slug: str, lang: str) -> dict[str, str]:
    """Every text a learner reads in a lesson, keyed by where it is; one string per choice."""
    c = load_content(slug, lang)
    out = {"title": c.title, "summary": c.summary, "explanation": c.explanation,
           **{f"text.{k}": v for k, v in c.text.items()}, **{f"notes.{k}": v for k, v in c.notes.items()}}
    for s in c.steps:
        out[f"steps.{s.id}"] = s.say
    for t in c.tasks:
        out[f"tasks.{t.id}"], out[f"tasks.{t.id}.hint"] = t.text, t.hint
    for q in c.quiz:
        out[f"quiz.{q.id}.question"], out[f"quiz.{q.id}.explain"] = q.question, q.explain
        out.update({f"quiz.{q.id}.choices[{i}]": choice for i, choice in enumerate(q.choices)})
    return out


@pytest.mark.parametrize("slug, lang", TRANSLATED)
def test_a_translation_leaves_no_text_in_english(slug, lang):
    # A key a translation forgets falls back to English on the page: a Chinese learner would
    # meet an English step or quiz choice in the middle of the lesson.
    en, translated = _texts(slug, "en"), _texts(slug, lang)
    assert translated.keys() == en.keys()
    prose = re.compile(r"[A-Za-z]{2,}\s+[A-Za-z]{2,}")     # a number or a config name may stay as it is
    assert not [k for k, v in translated.items() if v == en[k] and prose.search(v)]


def _numbers(text: str) -> set[str]:
    return set(re.findall(r"\d+", re.sub(r"(?<=\d),(?=\d{3})", "", text)))   # 3,400 = 3400


@pytest.mark.parametrize("slug, lang", TRANSLATED)
def test_a_translation_keeps_the_facts_it_words(slug, lang):
    # Config names, file names and commands (code spans) and links of the explanation, and the
    # numbers of steps, tasks and quiz (offsets, bytes, timestamps the engine will show) survive.
    en, translated = _texts(slug, "en"), _texts(slug, lang)
    codes = re.compile(r"`([^`\s]+)`")
    assert set(codes.findall(en["explanation"])) <= set(codes.findall(translated["explanation"]))
    links = re.compile(r"\]\((/[^)\s]*)\)")
    assert links.findall(en["explanation"]) == links.findall(translated["explanation"])
    for key, text in en.items():
        if key.split(".")[0] in ("steps", "tasks", "quiz"):
            assert _numbers(text) <= _numbers(translated[key]), key


@pytest.mark.parametrize("slug, lang", TRANSLATED)
def test_a_translation_covers_every_text_of_its_lesson(slug, lang):
    # A missing key falls back to English at run time; a committed translation has none
    # missing, so a Chinese page never switches to English in the middle of a lesson.
    base = tomllib.loads((CONTENT_DIR / f"{slug}.en.toml").read_text())
    over = tomllib.loads((CONTENT_DIR / f"{slug}.{lang}.toml").read_text())
    missing = [k for k in ("title", "summary", "explanation") if k in base and k not in over]
    for section, keys in (("steps", ("say",)), ("tasks", ("text", "hint")), ("quiz", ("question", "choices", "explain"))):
        for item in base.get(section, []):
            have = over.get(section, {}).get(item["id"], {})
            missing += [f"{section}.{item['id']}.{k}" for k in keys if k in item and k not in have]
    missing += [f"text.{k}" for k in base.get("text", {}) if k not in over.get("text", {})]
    notes = {f"{n['scenario']}:{n['step']}" + (f":{n['rule']}" if n.get("rule") else "") for n in base.get("notes", [])}
    missing += [f"notes.{k}" for k in sorted(notes) if k not in over.get("notes", {})]
    assert not missing, f"{slug}.{lang}.toml lacks {missing}"
